"""Knowledge kept in entries: facts, relations, lifetimes, outcome feedback, hand authoring,
distillation and the placement of distilled drafts."""
