"""Search engines over plain documents: FTS5/BM25, trigram substrings, confidence.

This package knows nothing of git or frontmatter. It never prints and never exits; it
raises subclasses of :class:`indexes.errors.IndexesError`.
"""
