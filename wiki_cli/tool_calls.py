"""Running one tool call (MCP or ``wiki serve``'s REST routes) the way every call runs:
serialised per repository, one ``[llm]`` deadline, only this call's notices, secrets
masked, and failures as one :class:`ToolFailure` the adapter turns into its own error."""

from __future__ import annotations

import logging
from typing import Any

from indexes.backend import as_index_error
from indexes.errors import IndexesError
from wiki.errors import WikiError
from wiki.store.storage import collect_notices, storage_error
from wiki_cli.inert import masked_values
from wiki_cli.mcp_arguments import not_unicode

log = logging.getLogger("wiki.mcp")


class ToolFailure(Exception):
    """A call that did not return a result: the domain ``error`` (or, when ``internal``, a
    bug) and the notices gathered before it."""

    def __init__(self, error: Exception, notices: list[str], internal: bool = False) -> None:
        super().__init__(str(error))
        self.error, self.notices, self.internal = error, notices, internal


def run_tool(tools, method, kwargs: dict[str, Any]) -> Any:
    """``method(**kwargs)`` as every tool call runs: under the tools' lock, the command's
    ``[llm]`` deadline and embedder, with only this call's notices (under ``notices``) and
    the secrets in every string of the result masked (``[REDACTED:<kind>]``, as the CLI
    does). Raises :class:`ToolFailure` for a domain error, an index database that failed
    (:func:`indexes.backend.as_index_error`, as the CLI maps it), a storage fault or a bug (logged
    with its traceback). Shared by the MCP tools and ``wiki serve``'s REST routes."""
    from wiki.answering.embed_settings import using
    from wiki.llm.usage import command_scope

    # the notices are collected in this call's context (a context variable set here, in
    # the worker thread running the call), so calls on other repositories running at the
    # same time never take them nor add to them (docs/decisions.md, "Per-call state")
    with collect_notices() as notices, tools.lock, command_scope(), using(tools.spec):
        bad = not_unicode(kwargs)
        if bad is not None:
            raise ToolFailure(bad, [])
        try:
            result = masked_values(method(**kwargs))
        except (WikiError, IndexesError) as error:
            raise ToolFailure(error, list(notices)) from error
        except Exception as error:  # noqa: BLE001 - the caller gets one line, not "Error executing tool"
            database = as_index_error(error)
            if database is not None:  # the index database broke off, as the CLI says it
                raise ToolFailure(database, list(notices)) from error
            storage = storage_error(error, getattr(error, "filename", None) or "a file",
                                    anywhere=True)
            if storage is not None:
                raise ToolFailure(storage, list(notices)) from error
            log.exception("internal error in tool %s", getattr(method, "__name__", method))
            raise ToolFailure(error, list(notices), internal=True) from error
        for notice in notices:
            log.warning("%s", notice)
        if notices and isinstance(result, dict):
            result = {**result, "notices": list(notices)}
        return result
