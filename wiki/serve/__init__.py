"""``wiki serve``'s library side: the server's configuration (repositories, hashed tokens and
their rights, limits) and fetching each wiki branch from its remote. The HTTP layer is an
adapter in ``wiki_cli/serve_http.py``."""
