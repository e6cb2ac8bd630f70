"""The branch store: the wiki branch read and written from git objects, its entries and
frontmatter, the index.md tree, the workspace, and the derived search database kept in step."""
