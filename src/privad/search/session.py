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

:func:`halting_rule` reads the stopping rules from text (``posterior:0.9``, ``log-odds:0.05``,
...), as ``privad search run --halting`` gives them.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import privad.search.halting as rules
from privad.accounting import ANOMALY_RESTRICTED_DP, Ledger, NoBudgetError
from privad.accounting.exact import to_fraction
from privad.errors import BudgetExceededError, ParameterError
from privad.noise import RandomnessLike
from privad.search.halting import HaltingRule
from privad.search.loop import DEFAULT_MAX_QUERIES, SearchResult, search
from privad.search.oracles import Oracle

__all__ = ["LedgerSearch", "halting_rule", "ledger_search", "remote_query_cap"]


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
    ledger:
        The ledger file charged on this side, or None.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.search import PrivacyBudget, ledger_search, make_oracle
    >>> x = np.ones(16); x[5] = 9.0
    >>> run = ledger_search(
    ...     make_oracle=lambda book, scope: make_oracle(
    ...         "laplace", x, 2.0, 8.0, 1.0, rng=1, ledger=book, scope=scope),
    ...     budget=3.0, scope="s", halting=PrivacyBudget(3.0), rng=2)
    >>> run.result.n_queries, run.recorded, run.halted
    (3, 3.0, ('budget',))
    >>> run.summary()["epsilon_spent"]
    3.0
    """

    result: SearchResult
    oracle: Oracle
    scope: str
    account: Any
    recorded: float | None
    halted: tuple[str, ...]
    notes: tuple[str, ...]
    ledger: str | None = None

    def summary(self, items: np.ndarray | None = None) -> dict[str, Any]:
        """The released outcome as plain data (what ``privad search run --json`` prints).

        ``items`` names each searched position (default: the position itself); ``top`` lists
        the |S| most probable items with their posterior mass f_T(i) (eq. 6).
        """
        result, account = self.result, self.account
        names = np.arange(result.posterior.size) if items is None else np.asarray(items)
        server = getattr(self.oracle, "last_budget", None)
        return {
            "kind": self.oracle.model.kind,
            "epsilon_per_query": self.oracle.epsilon,
            "queries": result.n_queries,
            "epsilon_spent": result.epsilon_spent,
            "halted_by": list(self.halted),
            "max_posterior": result.max_probability,
            "top": [
                {"rank": rank, "item": int(names[i]), "posterior": float(result.posterior[i])}
                for rank, i in enumerate(result.top, 1)
            ],
            "scope": self.scope,
            "ledger_account": None
            if account is None
            else {
                "scope": self.scope,
                "ledger": self.ledger,
                "total": float(account.total),
                "spent": float(account.spent),
                "remaining": float(account.remaining),
                "delta": None if account.delta is None else float(account.delta),
                "delta_spent": float(account.delta_spent or 0),
            },
            "recorded_epsilon": self.recorded,
            "oracle_budget": server or None,
            "notes": list(self.notes),
        }

    def write_posterior(self, path: str | Path, items: np.ndarray | None = None) -> None:
        """Write the posterior f_T as CSV (``item,posterior``), atomically."""
        from privad.io import atomic_write

        post = self.result.posterior
        names = np.arange(post.size) if items is None else np.asarray(items)
        with atomic_write(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["item", "posterior"])
            writer.writerows((int(i), repr(float(p))) for i, p in zip(names, post, strict=True))


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
    epsilon: float | None = None,
    kind: str | None = None,
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
        A remote oracle (it charges its own ledger; the queries are capped at what its
        budget has left, :func:`remote_query_cap`), or None with ``make_oracle``.
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
    epsilon, kind:
        The ε per query and oracle kind a remote oracle must have (None: the server's).
    top_k, selection, label, rng:
        As :func:`~privad.search.loop.search`.
    progress:
        ``progress(answered, planned)`` after each answer.

    Returns
    -------
    LedgerSearch

    Examples
    --------
    A local oracle (Laplace max, eqs. 8-9) records each answer in a ledger file, whose
    budget is created with total b:

    >>> import numpy as np
    >>> from privad.search import ledger_search, make_oracle, PrivacyBudget
    >>> x = np.ones(32); x[7] = 9.0
    >>> def local(book, scope):
    ...     return make_oracle("laplace", x, 2.0, 8.0, 1.0, rng=3, ledger=book, scope=scope)
    >>> run = ledger_search(make_oracle=local, budget=4.0, scope="demo",
    ...                     halting=PrivacyBudget(4.0), ledger="search.sqlite", rng=4)
    >>> run.result.n_queries, float(run.account.spent), run.notes[0][:32]
    (4, 4.0, 'created the anomaly-restricted-d')
    """
    if (oracle is None) == (make_oracle is None):
        raise ParameterError("give an oracle or a factory of a local one (make_oracle), one")
    local = make_oracle is not None
    query_cap = None if local else remote_query_cap(oracle, epsilon=epsilon, kind=kind)
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
    return LedgerSearch(result, orc, scope, account, recorded, tuple(halted), tuple(notes), ledger)


def _unit(arg: str, spec: str, letter: str) -> float:
    """The α of ``posterior:ALPHA`` or the δ of ``log-odds:DELTA``: a number in (0, 1)."""
    try:
        value = float(arg)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise ParameterError(f"--halting {spec} must be {letter} in (0, 1), got {arg!r}")
    return value


def halting_rule(specs: Sequence[str] | None, budget: float, *, linear: bool = True) -> HaltingRule:
    """The stopping rule of ``--halting`` values (any of them stops), section 4.2.

    ``budget`` (only b), ``posterior[:ALPHA]`` (τ = 1(max f > α), default α = 0.5),
    ``log-odds:DELTA`` (Burnashev-Zigangirov, eq. 25), ``ben-or-hassidim``
    (α = (24 ln n)^(-1/2)), ``max-queries:N``. The budget b always applies: as the rule
    Tε ≤ b (:class:`~privad.search.PrivacyBudget`) when ``linear``, else (an (ε, δ) budget)
    through the ledger, which stops the search tightly. Default: ``posterior:0.5``
    (section 6).

    Raises
    ------
    ParameterError
        An unknown rule, or a level outside (0, 1).

    Examples
    --------
    >>> from privad.search import halting_rule
    >>> halting_rule(["posterior:0.9", "max-queries:200"], 50.0)
    PosteriorThreshold(0.9) | MaxQueries(200) | PrivacyBudget(50.0)
    >>> halting_rule(None, 10.0, linear=False)
    PosteriorThreshold(0.5)
    """
    chosen: list[HaltingRule] = []
    for spec in specs or ["posterior:0.5"]:
        name, _, arg = str(spec).strip().lower().partition(":")
        if name == "budget" and not arg:
            chosen.append(
                rules.PrivacyBudget(budget) if linear else rules.MaxQueries(DEFAULT_MAX_QUERIES)
            )
        elif name in ("posterior", "alpha"):
            alpha = _unit(arg, "posterior:ALPHA", "α") if arg else 0.5
            chosen.append(rules.PosteriorThreshold(alpha))
        elif name == "log-odds" and arg:
            chosen.append(rules.LogOddsThreshold(_unit(arg, "log-odds:DELTA", "δ")))
        elif name in ("ben-or-hassidim", "boh") and not arg:
            chosen.append(rules.BenOrHassidim())
        elif name == "max-queries" and arg and arg.isdigit() and int(arg) > 0:
            chosen.append(rules.MaxQueries(int(arg)))
        else:
            raise ParameterError(
                f"--halting must be budget, posterior[:ALPHA], log-odds:DELTA, ben-or-hassidim "
                f"or max-queries:N (N >= 1), got {spec!r}"
            )
    if linear and not any(isinstance(r, rules.PrivacyBudget) for r in chosen):
        chosen.append(rules.PrivacyBudget(budget))
    return chosen[0] if len(chosen) == 1 else rules.AnyOf(*chosen)
