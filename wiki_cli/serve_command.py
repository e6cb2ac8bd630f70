"""``wiki serve``: the wiki of one or more repositories over HTTP, for a team and its
agents (docs/serve.md); ``wiki serve token`` makes a token and its config lines."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

import typer

from wiki_cli.common import JsonOption, app
from wiki_cli.errors import report
from wiki_cli.render import out, print_json

serve_app = typer.Typer(invoke_without_command=True,
                        help="Serve wikis over HTTP: MCP and REST, with tokens (docs/serve.md).")
app.add_typer(serve_app, name="serve")

ConfigOption = Annotated[Path | None, typer.Option(
    "--config", envvar="WIKI_SERVE_CONFIG",
    help="The server's TOML file: repositories, token hashes, limits (docs/serve.md).")]


@serve_app.callback()
def serve(
    ctx: typer.Context,
    config: ConfigOption = None,
    host: Annotated[str | None, typer.Option(
        help="Address to listen on (default: the file's, else 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(
        help="Port to listen on (default: the file's, else 8765).")] = None,
    workers: Annotated[int | None, typer.Option(
        min=1, max=64, help="Server processes on the port, e.g. one per core (default: "
                            "the file's, else 1).")] = None,
) -> None:
    """Serve the configured repositories: the MCP tools over streamable HTTP at
    /v1/repos/NAME/mcp and the same JSON as --json under /v1/repos/NAME/... Tokens can
    read or propose, never approve. Runs until Ctrl-C or SIGTERM."""
    if ctx.invoked_subcommand is not None:
        return
    from dataclasses import replace

    from wiki.errors import UsageError
    from wiki.serve.config import load_config
    from wiki_cli.serve_http import check_repositories, run

    if config is None:
        raise UsageError("wiki serve needs --config FILE (or WIKI_SERVE_CONFIG); "
                         "docs/serve.md has an example")
    settings = load_config(config)
    settings = replace(settings, host=host or settings.host,
                       port=settings.port if port is None else port,
                       workers=workers or settings.workers)
    check_repositories(settings)
    if not settings.tokens:
        report(f"warning: {config} has no [[tokens]]: every request will be refused (401); "
               "make one with `wiki serve token NAME --repo REPO`")
    if not _loopback(settings.host):
        report(f"warning: listening on {settings.host}, beyond this machine: put TLS in "
               "front (a reverse proxy) so tokens do not cross the network in clear")
    count = len(settings.repos)
    processes = f", {settings.workers} worker processes" if settings.workers > 1 else ""
    report(f"wiki serve: {count} {'repository' if count == 1 else 'repositories'} on "
           f"http://{settings.host}:{settings.port}{processes} (Ctrl-C stops)")
    run(settings)


@serve_app.command("token")
def token(
    name: Annotated[str, typer.Argument(help="Who will hold it (a person, a bot), for logs.")],
    repo: Annotated[list[str], typer.Option(
        "--repo", help="A repository it may use (repeat; '*' for all).")],
    rights: Annotated[str, typer.Option(help="read, or propose (read and open proposals).")]
    = "read",
    author: Annotated[str | None, typer.Option(
        help="'Name <email>' its proposals are written by (needed for propose).")] = None,
    json_output: JsonOption = False,
) -> None:
    """Make a new token: prints the token (give it to its holder; it is not stored) and,
    on stderr, the [[tokens]] lines to add to the config file (they hold its hash)."""
    from wiki.errors import UsageError
    from wiki.serve.config import PROPOSE, RIGHTS, new_token, parse_identity, token_hash

    if rights not in RIGHTS:
        raise UsageError(f"--rights {rights!r}: give one of {', '.join(RIGHTS)} (nothing can "
                         "approve over HTTP)")
    if rights == PROPOSE and author is None:
        raise UsageError("--rights propose needs --author 'Name <email>'")
    if author is not None:
        parse_identity(author, "--author")
    secret = new_token()
    lines = ["[[tokens]]", f"name = {_toml(name)}", f"hash = {_toml(token_hash(secret))}",
             f"repos = [{', '.join(_toml(r) for r in repo)}]", f"rights = {_toml(rights)}"]
    if author is not None:
        lines.append(f"author = {_toml(author)}")
    if json_output:
        print_json({"token": secret, "hash": token_hash(secret), "config": "\n".join(lines)})
        return
    out.print(secret, highlight=False, markup=False)
    report("# add to the server's config file (it keeps only the hash):\n" + "\n".join(lines))


def _toml(text: str) -> str:
    """``text`` as a TOML basic string (JSON's escaping is valid TOML)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

