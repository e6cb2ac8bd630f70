"""Knowledge kept in entries: facts, relations, outcome feedback, hand authoring,
distillation and the placement of distilled drafts."""
