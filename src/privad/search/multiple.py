"""Several anomalies, and recursive pruning (section 7 of the paper).

The paper sketches two ways beyond a single anomaly; both are **reconstructions** here.

Disjoint groups (:func:`search_groups`, :func:`find_anomalies`)
    "If a good upper bound is known on the expected maximum number of anomalous points, ...
    first divide the set into disjoint subsets that with high probability contain only a
    single anomaly, and then ... apply our method to each of those subsets individually."
    The items are split uniformly at random into g groups of near-equal size, g chosen by
    :func:`groups_needed` so that k anomalies land in k different groups with probability at
    least 1 - η (:func:`probability_distinct_groups`, exact for equal sizes). Each group is
    searched on its own restricted oracle, with the extra hypothesis "no anomaly in this
    group" (prior ``absent_prior``) so that empty groups can be recognised; a group reports
    its most probable item when that item's posterior exceeds ``detect`` and beats "none".

    Privacy: every non-anomalous record lies in exactly one group and only that group's
    queries read it, so by parallel composition (Definition 5) the whole search is
    max_g (T_g ε)-DP under anomaly-restricted neighbours (ex post; ex ante the per-group
    query limit times ε). The partition is drawn independently of the data.

Recursive pruning (:func:`pruned_search`)
    "recursively prune out non-anomalous points", and Ben-Or and Hassidim's multi-epoch
    search with the pruning level ε_par (section 4.2): run the search until max f > ε_par,
    keep the smallest set of most probable items holding ``keep_mass`` of the belief, and
    start again, with a uniform prior, on the kept items only; the last epoch uses the
    caller's halting rule.

    Privacy: sequential composition over epochs (Definition 4). A record still searched in
    the last epoch has lost Σ_e T_e ε, which is the guarantee reported; a record pruned after
    epoch e has lost only Σ_{e' <= e} T_e' ε (:attr:`PrunedSearchResult.epoch_guarantees`).
    Which records are pruned is a function of the released answers (post-processing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privad.accounting import Guarantee, Ledger, parallel, scaled, sequential
from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike, as_randomness
from privad.search.groups import QueryOrder
from privad.search.halting import (
    BenOrHassidim,
    HaltingRule,
    PosteriorThreshold,
    PrivacyBudget,
)
from privad.search.loop import DEFAULT_MAX_QUERIES, SearchResult, search, settle
from privad.search.oracles import Oracle
from privad.validation import check_int, check_probability

__all__ = [
    "GroupOutcome",
    "MultiSearchResult",
    "PrunedSearchResult",
    "find_anomalies",
    "groups_needed",
    "probability_distinct_groups",
    "pruned_search",
    "random_partition",
    "search_groups",
]


def probability_distinct_groups(n_items: int, n_groups: int, n_anomalies: int) -> float:
    """P(k given items fall into k different groups) for a uniformly random partition of
    ``n_items`` into ``n_groups`` groups of near-equal size.

    Exact for equal sizes s = n/g: Π_{i=1}^{k-1} (1 - i(s - 1)/(n - i)) (the i-th anomaly
    must avoid the i(s - 1) free places of the i groups already hit). For unequal sizes
    s = ceil(n/g) is used, which gives a lower bound.
    """
    n = check_int(n_items, "n_items", minimum=1)
    g = check_int(n_groups, "n_groups", minimum=1, maximum=n)
    k = check_int(n_anomalies, "n_anomalies", minimum=0)
    if k > g:
        return 0.0
    s = -(-n // g)
    prob = 1.0
    for i in range(1, k):
        prob *= max(0.0, 1.0 - i * (s - 1) / (n - i))
    return prob


def groups_needed(n_items: int, max_anomalies: int, failure_probability: float = 0.05) -> int:
    """The fewest groups g (each of >= 2 items) such that ``max_anomalies`` anomalies fall
    into different groups with probability >= 1 - ``failure_probability``."""
    n = check_int(n_items, "n_items", minimum=2)
    k = check_int(max_anomalies, "max_anomalies", minimum=1)
    eta = check_probability(
        failure_probability, "failure_probability", low_open=True, high_open=True
    )
    for g in range(max(k, 1), n // 2 + 1):
        if probability_distinct_groups(n, g, k) >= 1.0 - eta:
            return g
    raise ParameterError(
        f"no partition of {n} items into groups of >= 2 items separates {k} anomalies with "
        f"probability >= {1 - eta}; allow a larger failure_probability"
    )


def random_partition(n_items: int, n_groups: int, rng: RandomnessLike = None) -> list[np.ndarray]:
    """A uniformly random partition of range(n_items) into ``n_groups`` groups whose sizes
    differ by at most one (each sorted)."""
    n = check_int(n_items, "n_items", minimum=2)
    g = check_int(n_groups, "n_groups", minimum=1, maximum=n // 2)
    perm = QueryOrder.random(n, rng).permutation
    return [np.sort(part) for part in np.array_split(perm, g)]


def _check_groups(groups: Any, n_items: int) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    seen = np.zeros(n_items, dtype=bool)
    for j, grp in enumerate(groups):
        arr = np.asarray(grp)
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise DataError(f"group {j} must be a 1-D array of item indices")
        arr = arr.astype(np.int64)
        if arr.size < 2:
            raise DataError(f"group {j} has {arr.size} item(s); a group search needs >= 2")
        if arr.min() < 0 or arr.max() >= n_items:
            raise DataError(f"group {j} has indices outside [0, {n_items - 1}]")
        if seen[arr].any() or np.unique(arr).size != arr.size:
            raise DataError(
                f"group {j} overlaps an earlier group (or repeats an item); parallel "
                "composition needs disjoint groups"
            )
        seen[arr] = True
        out.append(arr)
    if not out:
        raise DataError("no groups given")
    return out


@dataclass(frozen=True, eq=False)
class GroupOutcome:
    """One group's search: its items (global indices), the result, what it reports."""

    items: np.ndarray
    result: SearchResult | PrunedSearchResult
    found: int | None

    @property
    def top(self) -> np.ndarray:
        """The group's S in global item indices."""
        return self.items[self.result.top]


@dataclass(frozen=True, eq=False)
class MultiSearchResult:
    """The outcome of a search over disjoint groups.

    ``found`` holds the global indices reported as anomalies; ``guarantee`` is the
    parallel composition (max over groups) of the groups' Tε; ``worst_case_guarantee`` the
    per-group query limit times ε.
    """

    groups: tuple[GroupOutcome, ...]
    found: np.ndarray
    guarantee: Guarantee | None
    worst_case_guarantee: Guarantee | None

    @property
    def n_queries(self) -> int:
        """Queries over all groups (each costs ε only to its own group's records)."""
        return sum(_queries(g.result) for g in self.groups)

    @property
    def epsilon_spent(self) -> float:
        """max_g T_g ε."""
        return 0.0 if self.guarantee is None else float(self.guarantee.cost)


def _queries(result: SearchResult | PrunedSearchResult) -> int:
    return result.n_queries


@dataclass(frozen=True, eq=False)
class PrunedSearchResult:
    """The outcome of :func:`pruned_search`.

    ``epochs`` are (items searched, result) per epoch, items as indices into the oracle
    searched; ``top`` is S of the last epoch in those indices; ``guarantee`` is Σ_e T_e ε
    (sequential composition); ``epoch_guarantees[e]`` is what a record pruned after epoch e
    has lost.
    """

    epochs: tuple[tuple[np.ndarray, SearchResult], ...]
    top: np.ndarray
    guarantee: Guarantee | None
    epoch_guarantees: tuple[Guarantee | None, ...] = field(repr=False)

    @property
    def final(self) -> SearchResult:
        """The last epoch's result."""
        return self.epochs[-1][1]

    @property
    def n_queries(self) -> int:
        """Σ_e T_e."""
        return sum(r.n_queries for _, r in self.epochs)

    @property
    def epsilon_spent(self) -> float:
        """Σ_e T_e ε."""
        return 0.0 if self.guarantee is None else float(self.guarantee.cost)

    @property
    def absent_probability(self) -> float:
        """P(no anomaly) after the last epoch (0 without that hypothesis)."""
        return self.final.absent_probability

    @property
    def max_probability(self) -> float:
        """max f after the last epoch."""
        return self.final.max_probability


def _keep_set(result: SearchResult, keep_mass: float, min_keep: int) -> np.ndarray:
    f = result.posterior
    order = np.argsort(-f, kind="stable")
    items_mass = float(f.sum())
    cum = np.cumsum(f[order])
    need = int(np.searchsorted(cum, keep_mass * items_mass, side="left")) + 1
    need = min(max(need, min_keep), f.size)
    return np.sort(order[:need])


def pruned_search(
    oracle: Oracle,
    *,
    halting: HaltingRule | None = None,
    prune_halting: HaltingRule | None = None,
    keep_mass: float = 0.99,
    min_keep: int = 8,
    max_epochs: int = 8,
    budget: float | None = None,
    top_k: int = 4,
    absent_prior: float | None = None,
    max_queries: int | None = DEFAULT_MAX_QUERIES,
    ledger: Ledger | None = None,
    scope: str | None = None,
    label: str = "pruned noisy binary search",
    rng: RandomnessLike = None,
) -> PrunedSearchResult:
    """Multi-epoch search with recursive pruning (section 7; Ben-Or and Hassidim).

    Each pruning epoch runs :func:`~privad.search.search` until ``prune_halting`` (default
    :class:`~privad.search.halting.BenOrHassidim`: max_i f(i) > ε_par) or ``halting``
    (default ``PosteriorThreshold(0.5)``) fires. If ``halting`` (or the budget, the ledger,
    the cap) ended the epoch, the search is over; otherwise the most probable items holding
    ``keep_mass`` of the items' belief (at least ``min_keep``) are kept and the next epoch
    starts afresh on them. When at most ``min_keep`` items remain, when an epoch prunes
    nothing, or after ``max_epochs`` pruning epochs, a final epoch runs to ``halting``.

    ``budget`` bounds Σ_e T_e ε (each epoch gets what is left); ``max_queries`` caps each
    epoch. A ledger is charged per query (the epochs compose sequentially in one scope).
    The oracle must support :meth:`~privad.search.Oracle.restrict`.

    Examples
    --------
    Each epoch keeps the items holding 99 % of the belief and searches them again:

    >>> from privad.search import LaplaceMaxOracle, MaxQueries, PosteriorThreshold, pruned_search
    >>> values = [1.0] * 17 + [9.0] + [1.0] * 46
    >>> rule = PosteriorThreshold(0.9) | MaxQueries(200)
    >>> result = pruned_search(LaplaceMaxOracle(values, 2.0, 8.0, epsilon=1.0, rng=1),
    ...                        halting=rule, rng=2)
    >>> int(result.top[0]), len(result.epochs)
    (17, 2)
    """
    if not isinstance(oracle, Oracle):
        raise ParameterError(f"oracle must be a privad.search.Oracle, got {type(oracle).__name__}")
    keep_mass = check_probability(keep_mass, "keep_mass", low_open=True, high_open=True)
    min_keep = check_int(min_keep, "min_keep", minimum=2)
    max_epochs = check_int(max_epochs, "max_epochs", minimum=0)
    final_rule = halting if halting is not None else PosteriorThreshold(0.5)
    prune_rule = prune_halting if prune_halting is not None else BenOrHassidim()
    gen = as_randomness(rng)
    eps = oracle.epsilon
    remaining = budget
    items = np.arange(oracle.n_items, dtype=np.int64)
    epochs: list[tuple[np.ndarray, SearchResult]] = []
    common = dict(
        top_k=top_k,
        absent_prior=absent_prior,
        max_queries=max_queries,
        ledger=ledger,
        scope=scope,
        label=label,
        rng=gen,
    )

    def run(rule: HaltingRule) -> SearchResult | None:
        nonlocal remaining
        if remaining is not None and remaining < eps:
            return None
        sub = oracle if items.size == oracle.n_items else oracle.restrict(items)
        res = search(sub, halting=rule, budget=remaining, **common)  # type: ignore[arg-type]
        epochs.append((items, res))
        if remaining is not None:
            remaining = max(0.0, remaining - res.epsilon_spent)
        return res

    finished = False
    while len(epochs) < max_epochs and items.size > min_keep:
        res = run(prune_rule | final_rule)
        if res is None or set(res.halted_by) - {prune_rule.name} or not res.halted_by:
            finished = True  # the final rule, the budget, the ledger or the cap ended it
            break
        keep = _keep_set(res, keep_mass, min_keep)
        if keep.size >= items.size:
            break
        items = items[keep]
    if not finished:
        run(final_rule)
    if not epochs:
        raise ParameterError(f"the budget {budget!r} does not allow a single query of ε = {eps!r}")
    guarantees = [r.guarantee for _, r in epochs if r.guarantee is not None]
    cumulative: list[Guarantee | None] = []
    for j in range(len(epochs)):
        upto = [r.guarantee for _, r in epochs[: j + 1] if r.guarantee is not None]
        cumulative.append(
            sequential(upto, description=f"{label}: epochs 1..{j + 1}") if upto else None
        )
    last_items, last = epochs[-1]
    top = last_items[last.top]
    return PrunedSearchResult(
        epochs=tuple(epochs),
        top=top,
        guarantee=(
            sequential(guarantees, description=f"{label}: all epochs") if guarantees else None
        ),
        epoch_guarantees=tuple(cumulative),
    )


def search_groups(
    oracle: Oracle,
    groups: Any,
    *,
    halting: HaltingRule | None = None,
    detect: float = 0.5,
    absent_prior: float | None = 0.5,
    pruning: bool = False,
    budget: float | None = None,
    top_k: int = 4,
    max_queries: int | None = 2_000,
    ledger: Ledger | None = None,
    scope: str | None = None,
    label: str = "noisy binary search over disjoint groups",
    rng: RandomnessLike = None,
    **pruning_options: Any,
) -> MultiSearchResult:
    """Search each of the disjoint ``groups`` on its own (parallel composition, section 7).

    Parameters
    ----------
    groups:
        Disjoint arrays of item indices (each >= 2 items).
    halting:
        Each group's stopping rule (default ``PosteriorThreshold(0.99)``: stop when an item
        or "no anomaly" holds 99% of the belief).
    detect:
        A group reports its most probable item when that item's posterior exceeds this and
        exceeds P(no anomaly).
    absent_prior:
        Prior of "no anomaly in this group" (default 1/2); None for the paper's single
        anomaly assumption (then every group reports an item).
    pruning:
        Search each group with :func:`pruned_search` (``pruning_options`` go to it).
    budget, max_queries:
        Per group (a record pays only for its own group's queries).
    ledger, scope:
        Reserve the parallel composition of the per-group worst case once, before any
        query, and commit the parallel composition actually used at the end, giving the rest
        back (the whole reservation if a group search raises; needs a finite per-group limit).
    """
    if not isinstance(oracle, Oracle):
        raise ParameterError(f"oracle must be a privad.search.Oracle, got {type(oracle).__name__}")
    parts = _check_groups(groups, oracle.n_items)
    detect = check_probability(detect, "detect", high_open=True)
    rule = halting if halting is not None else PosteriorThreshold(0.99)
    gen = as_randomness(rng)
    eps = oracle.epsilon
    limit = _group_limit(rule, budget, max_queries, eps, pruning, pruning_options)
    worst = None
    if limit:
        worst = scaled(
            oracle.guarantee,
            limit,
            description=f"{label}: parallel composition (Definition 5) over {len(parts)} "
            f"disjoint groups of at most {limit} queries each",
        )
    reservation = None
    if ledger is not None:
        if worst is None:
            raise ParameterError(
                "a ledger needs a finite per-group limit: pass budget= or max_queries="
            )
        if not isinstance(scope, str) or not scope.strip():
            raise ParameterError("a ledger needs a scope")
        reservation = ledger.reserve(
            scope,
            worst,
            label,
            metadata={"groups": len(parts), "query_limit": limit},
            on_error="commit",
        )
    outcomes: list[GroupOutcome] = []
    try:
        for items in parts:
            sub = oracle.restrict(items)
            common: dict[str, Any] = {
                "halting": rule,
                "budget": budget,
                "top_k": top_k,
                "absent_prior": absent_prior,
                "max_queries": max_queries,
                "label": label,
                "rng": gen,
            }
            result: SearchResult | PrunedSearchResult
            if pruning:
                result = pruned_search(sub, **common, **pruning_options)
                final = result.final
            else:
                result = final = search(sub, **common)
            top_local = result.top
            found = None
            p_top = float(final.posterior[final.top[0]])
            if p_top > detect and p_top > final.absent_probability:
                found = int(items[top_local[0]])
            outcomes.append(GroupOutcome(items=items, result=result, found=found))
    except BaseException:
        if reservation is not None:
            reservation.commit()  # keep the worst case: answers may have been released
        raise
    per_group = [o.result.guarantee for o in outcomes if o.result.guarantee is not None]
    guarantee = (
        parallel(
            per_group,
            description=f"{label}: parallel composition (Definition 5) of "
            f"{len(per_group)} group searches",
        )
        if per_group
        else None
    )
    if reservation is not None:
        settle(reservation, guarantee)
    found_items = np.array(sorted(o.found for o in outcomes if o.found is not None), dtype=np.int64)
    return MultiSearchResult(
        groups=tuple(outcomes),
        found=found_items,
        guarantee=guarantee,
        worst_case_guarantee=worst,
    )


def _group_limit(
    rule: HaltingRule,
    budget: float | None,
    max_queries: int | None,
    eps: float,
    pruning: bool,
    options: dict[str, Any],
) -> int | None:
    limits: list[int] = []
    if budget is not None:
        limits.append(PrivacyBudget(budget).query_limit(eps))
    own = rule.query_limit(eps)
    if own is not None and not pruning:
        limits.append(own)
    if max_queries is not None:
        per_epoch = check_int(max_queries, "max_queries", minimum=0)
        epochs = 1
        if pruning:
            epochs += check_int(options.get("max_epochs", 8), "max_epochs", minimum=0)
        limits.append(per_epoch * epochs)
    return min(limits) if limits else None


def find_anomalies(
    oracle: Oracle,
    max_anomalies: int,
    *,
    failure_probability: float = 0.05,
    n_groups: int | None = None,
    rng: RandomnessLike = None,
    **options: Any,
) -> MultiSearchResult:
    """Find up to ``max_anomalies`` anomalies: random disjoint groups, then
    :func:`search_groups` (``options`` go to it, e.g. ``pruning=True``, ``halting=``).

    The number of groups is ``n_groups`` or :func:`groups_needed` (``max_anomalies``,
    ``failure_probability``). Privacy: parallel composition over the groups (see the module
    documentation).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.search import LaplaceMaxOracle, MaxQueries, PosteriorThreshold, find_anomalies
    >>> x = np.ones(256); x[[10, 200]] = 9.0
    >>> oracle = LaplaceMaxOracle(x, 2.0, 8.0, epsilon=1.0, rng=4)
    >>> rule = PosteriorThreshold(0.9) | MaxQueries(100)
    >>> found = find_anomalies(oracle, 2, rng=5, halting=rule)
    >>> found.found.tolist(), len(found.groups)  # disjoint groups: parallel composition
    ([10, 200], 20)
    """
    n = oracle.n_items
    g = (
        groups_needed(n, max_anomalies, failure_probability)
        if n_groups is None
        else check_int(n_groups, "n_groups", minimum=1, maximum=n // 2)
    )
    gen = as_randomness(rng)
    return search_groups(oracle, random_partition(n, g, gen), rng=gen, **options)
