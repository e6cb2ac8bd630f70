"""``python -m wiki_cli`` runs the ``wiki`` command."""

from wiki_cli.app import main

main()
