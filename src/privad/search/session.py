"""A search charged to a privacy ledger: the budget policy of one search run.

:func:`ledger_search` runs :func:`~privad.search.loop.search` (Algorithm 1) against a local
or a remote oracle with the accounting a deployment needs, and says why it stopped:

* With a ledger file, or under an (ε, δ) budget (``delta``: a ledger always keeps that
  account, in memory when no file is given), the scope's budget is created with total
  ``budget`` (and ``delta``) if it has none; an existing budget is never changed.
* A *local* oracle (given as a factory) records every answer in that ledger itself, and the
  search stops before the ledger would refuse one (reason ``oracle-budget``); without a
  ledger the oracle keeps its own in-memory one, whose total is reported.
* A *remote* oracle charges its own server-side ledger; the searcher's ledger, if any, is
  charged on this side too (a refused spend halts the search). :func:`remote_query_cap`
  checks the server's ε and kind against the ones asked for and caps the queries at what
  the server's budget has left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from privad.accounting import ANOMALY_RESTRICTED_DP, Ledger, NoBudgetError
from privad.accounting.exact import to_fraction
from privad.errors import BudgetExceededError, ParameterError
from privad.noise import RandomnessLike
from privad.search.halting import HaltingRule
from privad.search.loop import DEFAULT_MAX_QUERIES, SearchResult, search
from privad.search.oracles import Oracle

__all__ = ["LedgerSearch", "ledger_search", "remote_query_cap"]


@dataclass(frozen=True)
class LedgerSearch:
    """What :func:`ledger_search` returns: the result, the oracle and the account.

    Attributes
    ----------
    result:
        The :class:`~privad.search.loop.SearchResult` (released answers only).
    oracle:
        The oracle that answered.
    scope:
        The ledger scope the answers were charged to.
    account:
        The scope's budget after the search (a :class:`~privad.accounting.Budget`), or None
        when no ledger was kept on this side.
    recorded:
        ε recorded by a local oracle in its own in-memory ledger (no ledger given), else None.
    halted:
        Why the search stopped, one phrase per rule that fired.
    notes:
        What was created on the way (a new budget).
    """

    result: SearchResult
    oracle: Oracle
    scope: str
    account: Any
    recorded: float | None
    halted: tuple[str, ...]
    notes: tuple[str, ...]


def remote_query_cap(
    oracle: Any, *, epsilon: float | None = None, kind: str | None = None
) -> int | None:
    """Check a remote oracle against what was asked and cap the queries at its budget.

    Parameters
    ----------
    oracle:
        A remote oracle (:class:`privad.services.remote_oracle.RemoteOracle`): its ``epsilon``,
        ``description`` (with ``kind``) and ``last_budget`` (with ``queries_left``).
    epsilon, kind:
        ε per query and the oracle kind the caller expects, or None (take the server's).

    Returns
    -------
    int or None
        The queries the server's budget has left when that is below
        :data:`~privad.search.loop.DEFAULT_MAX_QUERIES`, else None.

    Raises
    ------
    ParameterError
        If the server's ε or kind differs from the one asked for.
    BudgetExceededError
        If the server's budget has no query left.
    """
    if epsilon is not None and abs(oracle.epsilon - epsilon) > 1e-12 * max(1.0, epsilon):
        raise ParameterError(
            f"the oracle answers with ε = {oracle.epsilon:g} per query; "
            f"--epsilon {epsilon:g} differs (leave it out)"
        )
    served = oracle.description.get("kind")
    if kind is not None and served != kind:
        raise ParameterError(
            f"the oracle is of kind {served!r}; --kind {kind} differs (leave it out)"
        )
    budget = oracle.last_budget
    left = int(budget.get("queries_left", DEFAULT_MAX_QUERIES))
    if left <= 0:
        raise BudgetExceededError(
            f"the oracle at {oracle.base_url} has no budget left for a query of ε = "
            f"{oracle.epsilon:g} (scope {budget.get('scope')!r}: total "
            f"{budget.get('total')}, spent {budget.get('spent')})"
        )
    return left if left < DEFAULT_MAX_QUERIES else None


def _open_ledger(
    path: str, scope: str, budget: float, delta: float | None
) -> tuple[Ledger, str | None]:
    """The ledger at ``path``, with the scope's budget created when it has none."""
    book = Ledger(path, create=True)
    try:
        book.budget(scope, ANOMALY_RESTRICTED_DP)
        return book, None
    except NoBudgetError:
        book.set_budget(scope, ANOMALY_RESTRICTED_DP, budget, delta=delta)
        kind = "" if delta is None else f", δ {delta:g}"
        return book, (
            f"created the {ANOMALY_RESTRICTED_DP} budget of scope {scope!r}: total ε "
            f"{budget:g}{kind}"
        )
    except BaseException:
        book.close()
        raise


def ledger_search(
    oracle: Any = None,
    *,
    make_oracle: Callable[[Ledger | None, str], Oracle] | None = None,
    budget: float,
    scope: str,
    halting: HaltingRule,
    delta: float | None = None,
    ledger: str | None = None,
    query_cap: int | None = None,
    top_k: int = 4,
    selection: str = "fixed",
    label: str = "noisy binary search",
    rng: RandomnessLike = None,
    progress: Callable[[int, int], None] | None = None,
) -> LedgerSearch:
    """Search for the anomaly (Algorithm 1), every answer charged before it is released.

    Parameters
    ----------
    oracle:
        A remote oracle (it charges its own ledger), or None with ``make_oracle``.
    make_oracle:
        ``make_oracle(ledger, scope)``: a local oracle that records its answers in
        ``ledger`` (None: its own in-memory ledger) under ``scope``.
    budget:
        b, the scope's total ε if the ledger has no budget for it; with ``halting`` built
        for it (``PrivacyBudget(b)`` under a pure-ε budget).
    scope:
        The ledger scope.
    halting:
        The stopping rule (:mod:`privad.search.halting`).
    delta:
        δ of an (ε, δ) budget (the ledger then stops the search tightly), or None.
    ledger:
        A ledger file, or None (an in-memory ledger under an (ε, δ) budget, else none).
    query_cap:
        At most this many queries (a remote oracle's budget, :func:`remote_query_cap`).
    top_k, selection, label, rng:
        As :func:`~privad.search.loop.search`.
    progress:
        ``progress(answered, planned)`` after each answer.

    Returns
    -------
    LedgerSearch
    """
    if (oracle is None) == (make_oracle is None):
        raise ParameterError("give an oracle or a factory of a local one (make_oracle), one")
    local = make_oracle is not None
    max_queries = DEFAULT_MAX_QUERIES if query_cap is None else query_cap
    notes: list[str] = []
    book = None
    if ledger is not None or delta is not None:  # (b, δ): an account always keeps it
        book, note = _open_ledger(ledger or ":memory:", scope, budget, delta)
        notes += [note] if note else []
    try:
        orc = make_oracle(book, scope) if make_oracle is not None else oracle
        # a local oracle stops before its ledger would refuse (reason "oracle-budget")
        left = orc.answers_left() if local else None
        planned = min(max_queries, int(to_fraction(budget) // to_fraction(orc.epsilon)))
        result = search(
            orc,
            halting=halting,
            top_k=min(top_k, orc.n_items),
            selection=selection,
            max_queries=max_queries,
            ledger=None if local else book,
            scope=scope if book is not None and not local else None,
            label=label,
            rng=rng,
            progress=None if progress is None else (lambda t, _p: progress(t, planned)),
        )
        account = None if book is None else book.budget(scope, ANOMALY_RESTRICTED_DP)
    finally:
        if book is not None:
            book.close()
    recorded = None
    if local and book is None:  # the oracle's own ledger has no budget: add it up
        recorded = float(sum(s.epsilon for s in orc.ledger.history(scope)))
    halted = []
    for name in dict.fromkeys(result.halted_by):
        if name == "max-queries" and query_cap is not None:
            halted.append(f"oracle budget ({query_cap} queries were left at the server)")
        elif name == "oracle-budget":
            halted.append(f"ledger ({left} queries were left in scope {scope!r})")
        else:
            halted.append(name)
    return LedgerSearch(result, orc, scope, account, recorded, tuple(halted), tuple(notes))
