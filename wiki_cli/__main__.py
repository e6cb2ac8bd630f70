"""``python -m wiki_cli`` runs the ``wiki`` command (Ctrl-C while starting: ``interrupted``,
exit 130, as :func:`wiki_cli.app.main` does once it is imported)."""

try:
    from wiki_cli.app import main
except KeyboardInterrupt:
    import sys

    sys.stderr.write("interrupted\n")
    sys.exit(130)

main()
