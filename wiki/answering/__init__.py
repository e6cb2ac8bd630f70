"""Answering: search (legs, fusion, routing, re-scoring), ask (the extractive answer, budget,
revalidation; the model-written answer is wiki.llm.answer) and the evidence-gap log."""
