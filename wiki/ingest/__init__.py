"""Ingest: sources compiled into entries without a model, with their fingerprints."""
