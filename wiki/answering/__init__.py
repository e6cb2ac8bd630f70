"""Answering: search (legs, fusion, routing, re-scoring), ask (the extractive answer, budget,
revalidation, synthesis) and the evidence-gap log."""
