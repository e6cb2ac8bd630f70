"""Retrieval over any engine: filters, query parsing, the legs' shared logic, fusion,
re-scoring, routing, coverage and token counts; pure Python over what an engine returns."""
