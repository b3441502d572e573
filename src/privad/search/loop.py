"""The search loop: Algorithm 1 (PrivateBinarySearch) with any oracle and halting rule.

::

    f_0 uniform; t = 1
    while not halt(f_{t-1}, t):          # τ(f_{t-1}), tε <= b: privad.search.halting
        Q_t  <- median split of f_{t-1} (eq. 10; privad.search.selection)
        answer <- oracle.query(Q_t)       # eq. 5, eq. 9, or Z_t of section 5
        f_t  <- Bayes update (eq. 6 or eqs. 11-12; privad.search.posterior)
    return f_{t-1}

Privacy. Each query is ε-DP under anomaly-restricted neighbours (Propositions 1 and 2);
T queries compose sequentially to Tε (Definition 4). :attr:`SearchResult.guarantee` is that
Tε, the paper's "total privacy risk" of the run (ex post: T depends on the answers). The
ex-ante guarantee, valid before the run whatever the answers, is the halting rule's query
limit times ε (:attr:`SearchResult.worst_case_guarantee`): b with a budget rule,
``max_queries``·ε otherwise (stopping early on the answers is post-processing of the full
run, so it costs nothing extra).

Ledger. With ``ledger=`` and ``scope=``, the run is charged to a
:class:`privad.accounting.Ledger` under ``"anomaly-restricted-dp"``:

* ``ledger_mode="per-query"`` (default): check-then-spend ε before each query is sent, as a
  stream (an (ε, δ) budget prepays a block of answers, see below); a refused spend (budget
  exhausted) halts the search with reason ``"ledger"`` and the query is not sent. A pure
  budget ends up charged exactly Tε.
* ``ledger_mode="reserve"``: reserve the worst case (query limit × ε) before the first
  query, fail early if it does not fit, and at the end commit the ε actually used, Tε,
  giving the rest back
  (:meth:`~privad.accounting.Ledger.commit` with the used guarantee). A run that sent no
  query releases nothing that depends on the data and is cancelled. If the search raises,
  the whole reservation is committed (answers may have been released). For a pure budget
  both modes charge exactly Tε: the ledger is a privacy filter (each query's ε is charged
  before it is sent and the total never passes the budget), which is valid for pure ε-DP
  with adaptively chosen stopping (Rogers, Roth, Ullman, Vadhan 2016). An (ε, δ) budget
  keeps the reservation's tight charge (the tight bound of the T answers used is no
  guarantee, T depending on the answers; :meth:`~privad.accounting.Ledger.commit`).

This ledger is the searcher's account. The oracle keeps its own: a remote oracle's server
records every answer it releases, and so does a local oracle, in ``oracle.ledger``
(:mod:`privad.search.oracles`), before the answer leaves ``query``. A search against a local
oracle therefore leaves T spends in ``oracle.ledger`` whether or not ``ledger=`` is given;
pass ``ledger=`` only for a second account (e.g. a budget spanning several oracles).

The oracle's budget. When a local oracle's ledger scope has a budget, the loop asks it once,
before the first query, how many answers it admits (:meth:`Oracle.answers_left
<privad.search.Oracle.answers_left>`) and stops before the answer that would exceed it,
with reason ``"oracle-budget"``. Under an (ε, δ) budget that count is the tight one: the
answers are drawn from a prepaid block, the most answers the budget admits by composing
the oracle's mechanism tightly (the Laplace privacy-loss distribution for the max oracle,
the optimal composition theorem for ε-DP answers), as the ledger charges them. Stopping on
the count is valid whatever the answers say: the block was paid for all of them. An oracle
that refuses a query anyway (a remote one whose budget is spent, or another process
spending the same scope) raises :class:`~privad.errors.BudgetExceededError` out of
:func:`search`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple

import numpy as np

from privad.accounting import Guarantee, Ledger, Reservation, scaled
from privad.errors import BudgetExceededError, ParameterError
from privad.noise import RandomnessLike, as_randomness
from privad.search.halting import (
    AnyOf,
    HaltingRule,
    MaxQueries,
    PosteriorThreshold,
    PrivacyBudget,
    SearchState,
)
from privad.search.oracles import Oracle
from privad.search.posterior import Posterior, SegmentPosterior
from privad.search.selection import QuerySelection, as_selection
from privad.validation import check_choice, check_int, check_probability

__all__ = ["DEFAULT_MAX_QUERIES", "SearchResult", "TraceEntry", "search"]

DEFAULT_MAX_QUERIES = 100_000
"""The safety cap on queries when the caller sets none (so a search always ends)."""


class TraceEntry(NamedTuple):
    """One iteration: |Q_t|, f_{t-1}(Q_t), the answer, max f_t afterwards."""

    query_size: int
    query_mass: float
    answer: Any
    max_probability: float


@dataclass(frozen=True, eq=False)
class SearchResult:
    """The outcome of one search (section 4.3: the belief, and a small set S to screen).

    Attributes
    ----------
    n_items:
        Number of items searched.
    n_queries:
        T, the number of queries answered.
    epsilon:
        ε per query.
    top:
        S, the ``top_k`` items with the largest posterior, most probable first (section 6.2
        uses |S| = 4).
    halted_by:
        Names of the halting rules that fired (``"posterior"``, ``"budget"``, ``"log-odds"``,
        ``"ben-or-hassidim"``, ``"max-queries"``), ``"ledger"`` for a refused spend of the
        searcher's ledger, or ``"oracle-budget"`` when the local oracle's ledger scope admits
        no more answers.
    guarantee:
        Tε: the T per-query guarantees composed sequentially (None when T = 0).
    worst_case_guarantee:
        The query limit (the halting rule's, and the local oracle's budget's) times ε (None
        without a limit).
    max_probability, absent_probability:
        max f_T, and P(no anomaly) when that hypothesis was searched (else 0).
    belief:
        The :class:`~privad.search.posterior.Posterior` object.
    trace:
        Per-iteration :class:`TraceEntry` records when ``trace=True`` was passed.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones(64); x[17] = 9.0  # one anomaly above t_h = 8, the rest below t_l = 2
    >>> from privad.search import LaplaceMaxOracle, search
    >>> result = search(LaplaceMaxOracle(x, 2.0, 8.0, epsilon=1.0, rng=1), budget=30.0, rng=2)
    >>> result.top.tolist(), result.epsilon_spent, result.contains(17)
    ([17, 40, 33, 31], 6.0, True)
    """

    n_items: int
    n_queries: int
    epsilon: float
    top: np.ndarray
    halted_by: tuple[str, ...]
    guarantee: Guarantee | None
    worst_case_guarantee: Guarantee | None
    max_probability: float
    absent_probability: float
    belief: Posterior = field(repr=False)
    trace: tuple[TraceEntry, ...] = field(default=(), repr=False)

    @property
    def epsilon_spent(self) -> float:
        """Tε (0.0 when no query was made)."""
        return 0.0 if self.guarantee is None else float(self.guarantee.cost)

    @cached_property
    def posterior(self) -> np.ndarray:
        """f_T over the items, in item order (computed once, O(n))."""
        out = self.belief.probabilities()
        out.setflags(write=False)
        return out

    @property
    def argmax(self) -> int:
        """The most probable item."""
        return int(self.top[0])

    def contains(self, item: int) -> bool:
        """Whether ``item`` is in S (section 6.2's success criterion: i* ∈ S)."""
        return bool(np.any(self.top == int(item)))


def _halting_rule(
    halting: HaltingRule | None, budget: float | None, max_queries: int | None
) -> HaltingRule:
    if halting is not None and not isinstance(halting, HaltingRule):
        raise ParameterError(f"halting must be a HaltingRule, got {type(halting).__name__}")
    rules: list[HaltingRule] = [halting if halting is not None else PosteriorThreshold(0.5)]
    if budget is not None:
        rules.append(PrivacyBudget(budget))
    if max_queries is not None:
        rules.append(MaxQueries(check_int(max_queries, "max_queries", minimum=0)))
    return rules[0] if len(rules) == 1 else AnyOf(*rules)


def _sequential(g: Guarantee, n: int, what: str) -> Guarantee:
    return scaled(
        g,
        n,
        description=f"{what}: sequential composition (Definition 4) of {n} queries, "
        f"each {g.summary()} ({g.description})",
    )


def settle(reservation: Reservation, used: Guarantee | None) -> None:
    """End a reserve-mode run normally: commit the ε used, or cancel if ``used`` is None."""
    if used is None:
        reservation.cancel()
    else:
        reservation.commit(used)


def search(
    oracle: Oracle,
    *,
    halting: HaltingRule | None = None,
    budget: float | None = None,
    top_k: int = 4,
    selection: str | QuerySelection = "fixed",
    split: str = "nearest",
    absent_prior: float | None = None,
    max_queries: int | None = DEFAULT_MAX_QUERIES,
    ledger: Ledger | None = None,
    scope: str | None = None,
    ledger_mode: Literal["per-query", "reserve"] = "per-query",
    label: str = "noisy binary search",
    trace: bool = False,
    progress: Callable[[int, float], None] | None = None,
    rng: RandomnessLike = None,
) -> SearchResult:
    """Search for the anomaly with noisy group queries (Algorithm 1).

    Parameters
    ----------
    oracle:
        Any :class:`~privad.search.oracles.Oracle` (local or remote).
    halting:
        The stopping time τ; default ``PosteriorThreshold(0.5)`` (section 6.2). Combine
        rules with ``|`` / ``&``.
    budget:
        b: adds ``PrivacyBudget(b)`` (stop when (T + 1)ε > b).
    top_k:
        |S|, the size of the returned set (default 4, section 6.2).
    selection:
        ``"fixed"`` (one random order, O(T) per query) or ``"fresh"`` (a new permutation
        per query, Algorithm 1 verbatim, O(n) per query); see :mod:`privad.search.selection`.
    split:
        Which prefix around the median: ``"nearest"`` (default), ``"lower"`` (eq. 10
        verbatim) or ``"randomized"`` (Burnashev-Zigangirov); ignored for a
        :class:`~privad.search.selection.QuerySelection` instance.
    absent_prior:
        If set (in (0, 1)), also weigh the hypothesis "no anomaly among the items" with this
        prior (section 7 searches); needs an oracle whose model supports it.
    max_queries:
        Safety cap on T (default 100,000; None for no cap, then some rule must end the run).
    ledger, scope, ledger_mode, label:
        Charge the run to ``ledger`` under ``scope``: the searcher's own account, beside the
        oracle's (a local oracle records every answer in ``oracle.ledger`` anyway; see the
        module documentation).
    trace:
        Record every iteration in :attr:`SearchResult.trace`.
    progress:
        Called as ``progress(T, max posterior)`` after each answer (the command line's
        progress display; it sees only what the searcher sees).
    rng:
        The searcher's randomness (the permutation σ). The oracle draws its noise from its
        own randomness.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones(64); x[17] = 9.0  # one anomaly above t_h = 8, the rest below t_l = 2
    >>> from privad.search import LaplaceMaxOracle, PosteriorThreshold, PrivacyBudget, search
    >>> oracle = LaplaceMaxOracle(x, 2.0, 8.0, epsilon=1.0, rng=1)
    >>> result = search(oracle, halting=PosteriorThreshold(0.9) | PrivacyBudget(30.0), rng=2)
    >>> int(result.argmax), result.n_queries, result.halted_by, result.guarantee.epsilon
    (17, 6, ('posterior',), 6.0)
    """
    if not isinstance(oracle, Oracle):
        raise ParameterError(f"oracle must be a privad.search.Oracle, got {type(oracle).__name__}")
    model = oracle.model
    n = check_int(oracle.n_items, "n_items", minimum=2)
    top_k = check_int(top_k, "top_k", minimum=1)
    rule = _halting_rule(halting, budget, max_queries)
    selector = as_selection(selection, split)
    if absent_prior is not None:
        absent_prior = check_probability(
            absent_prior, "absent_prior", low_open=True, high_open=True
        )
        if not model.supports_absent:
            raise ParameterError(
                f"absent_prior needs an oracle whose answers have a 'no anomaly' likelihood; "
                f"the {model.kind} model has none"
            )
    mode = check_choice(ledger_mode, "ledger_mode", ("per-query", "reserve"))
    if ledger is not None and (not isinstance(scope, str) or not scope.strip()):
        raise ParameterError("a ledger needs a scope (a non-empty name to charge the search to)")
    epsilon = model.epsilon
    per_query = model.guarantee
    oracle_left = oracle.answers_left()  # the oracle's own ledger scope (None: no cap here)
    limit = rule.query_limit(epsilon)
    if oracle_left is not None:
        limit = oracle_left if limit is None else min(limit, oracle_left)
    if limit is None and mode == "reserve" and ledger is not None:
        raise ParameterError(
            "ledger_mode='reserve' needs a bound on the number of queries: pass budget= or "
            "max_queries="
        )
    gen = as_randomness(rng)

    reservation = None
    if ledger is not None and mode == "reserve" and limit:
        reservation = ledger.reserve(
            scope,
            _sequential(per_query, limit, f"{label} (reserved worst case)"),  # type: ignore[arg-type]
            label,
            metadata={"n_items": n, "query_limit": limit},
            on_error="commit",
        )

    posterior = selector.start(n, gen, absent_prior)
    records: list[TraceEntry] = []
    n_queries = 0
    halted_by: tuple[str, ...] = ()
    try:
        while True:
            halted_by = rule.fired(SearchState(n_queries, epsilon, posterior))
            if oracle_left is not None and n_queries >= oracle_left:
                halted_by = (*halted_by, "oracle-budget")
            if halted_by:
                break
            group = selector.propose(posterior, gen)
            if ledger is not None and mode == "per-query":
                try:
                    ledger.spend(
                        scope,
                        per_query,
                        label,  # type: ignore[arg-type]
                        metadata={"query": n_queries + 1, "n_items": n, "size": group.n_in},
                        stream=True,
                    )
                except BudgetExceededError:
                    halted_by = ("ledger",)
                    break
            mass = _group_mass(posterior, group) if trace else float("nan")
            answer = model.check_answer(oracle.query(group))
            log_in, log_out = model.log_likelihoods(answer)
            log_absent = model.log_likelihood_absent(answer) if posterior.has_absent else None
            posterior.update(group, log_in, log_out, log_absent)
            n_queries += 1
            if trace:
                records.append(TraceEntry(group.n_in, mass, answer, posterior.max_probability()))
            if progress is not None:
                progress(n_queries, posterior.max_probability())
    except BaseException:
        if reservation is not None:
            reservation.commit()  # keep the worst case: answers may have been released
        raise
    guarantee = _sequential(per_query, n_queries, label) if n_queries else None
    if reservation is not None:
        settle(reservation, guarantee)
    worst = _sequential(per_query, limit, f"{label} (worst case)") if limit else None
    return SearchResult(
        n_items=n,
        n_queries=n_queries,
        epsilon=epsilon,
        top=posterior.top(min(top_k, n)),
        halted_by=halted_by,
        guarantee=guarantee,
        worst_case_guarantee=worst,
        max_probability=posterior.max_probability(),
        absent_probability=posterior.absent_probability,
        belief=posterior,
        trace=tuple(records),
    )


def _group_mass(posterior: Posterior, group: Any) -> float:
    """f_{t-1}(Q_t) (for the trace)."""
    if isinstance(posterior, SegmentPosterior):
        starts, lengths, logw = posterior.segments()
        ends = starts + lengths
        inside = np.clip(np.minimum(ends, group.size) - starts, 0, None)
        head = float(np.dot(np.exp(logw), inside))
        if group.complement:
            return float(np.dot(np.exp(logw), lengths)) - head
        return head
    return float(np.exp(posterior.log_probabilities()[group.indices()]).sum())
