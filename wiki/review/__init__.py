"""Review: proposals, their diff and review check, the approval policy, rebase, sync and history."""
