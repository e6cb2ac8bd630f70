"""The wiki domain: entries, the branch store, index.md tree, ingest, proposals, search, ask.

Never prints and never exits; raises subclasses of :class:`wiki.errors.WikiError`.
"""
