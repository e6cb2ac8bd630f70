"""Routing a question to its category folder(s) inside a search.

:func:`decide` scores the category folders by embeddings (:mod:`indexes.retrieval.routing`) and,
when several folders fall within the margin and a model is configured, lets the model
pick one of them (:meth:`wiki.llm.client.LLMClient.choose`, one JSON-constrained call
shown each folder's name and its entries nearest the question). :func:`apply` then scopes
the search: ``filter`` restricts every leg to the routed folders (through
:class:`indexes.retrieval.filters.Filters`, before ranking); ``boost`` adds a ``route`` leg (the
other legs' hits in a routed folder, scored by the folder's score) to the fusion.
Measured on the handbook dev questions: evals/results/routing.md.
"""

from __future__ import annotations

from dataclasses import replace

from indexes.retrieval.filters import Filters
from indexes.retrieval.routing import Route, route, route_leg, scoped
from indexes.sqlite.engine import SearchIndex

TIE_BREAK_ASK = "Which section of the wiki most likely holds the answer to the question?"
TIE_BREAK_TITLES = 3
"""Entry titles shown per folder in the tie-break prompt (its nearest to the question)."""


def decide(index: SearchIndex, question: str, query_vector, model: str, *,
           filters: Filters | None = None, margin: float | None = None,
           client=None) -> Route:
    """Route ``question`` (its unit ``query_vector`` from embedding ``model``) to category
    folders among the entries ``filters`` allow. With ``client`` (an
    :class:`~wiki.llm.client.LLMClient`) an ambiguous route is tie-broken by the model;
    a failed or refused call keeps the embedding route and says why in ``note``."""
    from indexes.retrieval import routing

    matrix = index.vectors.matrix(model, len(query_vector))
    found = route(index, matrix, query_vector, filters=filters,
                  margin=routing.MARGIN if margin is None else margin)
    if found.ambiguous and client is not None:
        found = tie_break(client, question, found, index)
    return found


def tie_break(client, question: str, found: Route, index: SearchIndex) -> Route:
    """``found`` narrowed to the one folder the model picks (``by="llm"``), or unchanged
    with a ``note`` when the call fails or the budget refuses it. One call, cached like
    every call of the client."""
    from wiki.llm.errors import BudgetExceededError, LLMCallError
    from wiki.llm.usage import Limits

    keys = [k for f in found.folders for k in found.nearest.get(f, [])[:TIE_BREAK_TITLES]]
    titles = index.docs.titles(keys) if keys else {}
    options = [f"Section {folder.rpartition('/')[2].replace('-', ' ')}: pages such as "
               + "; ".join(titles[k] for k in found.nearest.get(folder, [])[:TIE_BREAK_TITLES]
                           if k in titles)
               for folder in found.folders]
    try:
        with client.budget(Limits(calls=1)):
            picked = client.choose(question, options, ask=TIE_BREAK_ASK)
    except (BudgetExceededError, LLMCallError) as exc:
        return replace(found, note=f"tie-break skipped: {exc}")
    return replace(found, folders=[found.folders[picked]], by="llm")


def apply(found: Route, mode: str, filters: Filters) -> Filters:
    """The filters for the legs: scoped to the routed folders in ``filter`` mode (when
    anything was routed), else unchanged."""
    return scoped(filters, found.folders) if mode == "filter" and found.folders else filters


def boost(legs: dict, found: Route, mode: str) -> dict:
    """``legs`` with the ``route`` leg added in ``boost`` mode (when it has hits)."""
    if mode != "boost" or not found.folders:
        return legs
    extra = route_leg(legs, found)
    return {**legs, "route": extra} if extra else legs
