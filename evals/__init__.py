"""Evaluation harness and benchmarks for the wiki (see evals/README.md)."""
