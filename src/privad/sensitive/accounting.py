"""Privacy accounting for (β, r)-anomaly identification queries.

* :func:`claim5_bound`: the m of Claim 5 for a batch of queried records; a mechanism's
  :meth:`~privad.sensitive.AIQMechanism.batch_guarantee` turns it into min(n, m)·ε —
  Claim 3 (sequential composition, n·ε) or Claim 5 (m·ε), whichever is smaller.
* :func:`per_record_privacy_loss`: how much each record's presence changes the answers,
  exactly, from the closed-form probabilities (a Figure 3-style privacy map).
* :func:`flag_curve`: the probability of being flagged by ball count, SP against DP, before
  anything is asked (``privad sp plan``).
* :func:`record_exposure` (:class:`RecordExposure`): how many answers of a batch can move
  with each stored record, and what that costs the record (linear and optimal
  composition). The charge stays Claim 5's m, the worst case over every possible record;
  the distribution over the stored records depends on the data, so it is for the curator
  only (the ledger's statement shows it; no querier ever receives it).

Claim 5, and what m has to bound
--------------------------------
The mechanism answering the query for i_t reads the database only through x_{i_t} and
B_x(i_t, r), i.e. only the records within distance r of i_t. Two neighbouring databases
differ in one record j, so only the queries with d(i_t, j) ≤ r can change their answer
distribution; each such query contributes at most ε to the log-ratio along an edge of the
k-sensitive graph (all queries share the same graph: same β, r, k), the others contribute 0.
So the batch is (m·ε, k)-SP with

    m = max over every possible record j of #{t : d(i_t, j) ≤ r},

the largest number of queried records in any closed ball of radius r (queries counted with
repetition). The centre j ranges over the whole record space, not only over queried or
stored records. :func:`claim5_bound` computes

* a lower bound, ``max_t #{s : d(i_s, i_t) ≤ r}`` (balls centred on a queried record);
* an upper bound, the smaller of two:

  - the *box search* of :mod:`privad.geometry.depth`: x-space is cut into boxes by branch
    and bound, and every j in a box B holds at most the number of queries within r of B
    (exactly as computed, no margin needed); the largest such count over the boxes left
    after a fixed number of rounds bounds m. At 284,807 records in 6 features it is 2.7
    times tighter than the 2r bound and costs a tenth of it (docs/benchmarks.md);
  - the *2r bound*, ``max_t #{s : d(i_s, i_t) ≤ 2r}``: if i_s and i_t both lie in a ball of
    radius r around j then d(i_s, i_t) ≤ 2r (triangle inequality), so every queried record
    in that ball lies within 2r of any one of them. The radius is enlarged by a relative
    1e-9 so that rounding in the float distance cannot break the triangle inequality. This
    pass is made only when the search's bound exceeds the 2r counts of the :data:`SEEDS`
    densest queries (it cannot be the minimum otherwise), so the upper bound is never
    looser than the 2r bound and the 2r pass is skipped where the search wins. Where the
    search is far behind those counts a quarter of the way through (:data:`GIVE_UP`;
    sparse data whose boxes stay wide), it stops and the 2r bound is used;

and uses ``min(upper, n)``. When lower == upper the value is exact.

The same argument gives m·ε-DP for the DP mechanism (its answer for i_t also reads only the
ball of i_t), so :meth:`~privad.sensitive.AIQMechanism.batch_guarantee` applies it to
:class:`~privad.sensitive.DPMechanism` as well.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.errors import ParameterError
from privad.geometry.predicate import check_magnitudes
from privad.sensitive.anomaly import METRICS, anomaly_label
from privad.sensitive.constructions import log_output_probabilities
from privad.sensitive.mechanisms import aiq_mechanism
from privad.validation import check_array, check_choice, check_nonnegative

__all__ = [
    "Claim5Bound",
    "RecordExposure",
    "claim5_bound",
    "claim5_radius",
    "flag_curve",
    "pairs_within",
    "per_record_privacy_loss",
    "record_exposure",
]

_MARGIN = 1e-9


@dataclass(frozen=True)
class Claim5Bound:
    """Claim 5's m for a batch of n queries: ``lower ≤ m_true ≤ upper``; ``m = min(upper, n)``."""

    n: int
    lower: int
    upper: int

    @property
    def m(self) -> int:
        """The multiplier used for the guarantee: min(upper, n) (≥ 1 for n ≥ 1)."""
        return max(1, min(self.upper, self.n))

    @property
    def exact(self) -> bool:
        """Whether the bound is tight (lower == m)."""
        return self.lower == self.m


def claim5_radius(r: float) -> float:
    """The radius 2r·(1 + 1e-9) (+1e-300) of Claim 5's upper bound (see the module docstring);
    every engine computing :func:`claim5_bound` counts with this radius."""
    return 2.0 * float(r) * (1.0 + _MARGIN) + 1e-300


def claim5_bound(
    queries: Any,
    r: float,
    *,
    metric: str = "euclidean",
    ball_counts_at_r: Any = None,
) -> Claim5Bound:
    """Bounds on Claim 5's m: the most queried records in any closed ball of radius r.

    See the module docstring: the upper bound is the smaller of the box search's bound
    (:mod:`privad.geometry.depth`) and ``max_t #{s : d(i_s, i_t) ≤ 2r}`` (relative radius
    margin 1e-9), the 2r pass made only when the search does not already beat the 2r counts
    of the densest queries (:func:`upper_bound`); ``max_t #{s : d(i_s, i_t) ≤ r}`` is the
    lower bound. Repeated queries count repeatedly.

    Parameters
    ----------
    queries : (n, d) array of the queried records, n ≥ 1.
    r : the radius of the (β, r)-anomaly queries, finite and ≥ 0.
    metric : ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.
    ball_counts_at_r : optional (n,) int array
        The uncapped self ball counts of ``queries`` at ``r``, already computed elsewhere
        (the estimator's counts of its fitted records): the lower bound is their maximum and
        no pass at r is made. Capped counts must not be given.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive.accounting import claim5_bound
    >>> Q = np.array([[0.0], [1.0], [1.5], [3.0]])
    >>> b = claim5_bound(Q, 0.5)  # x = 1.25 is within 0.5 of two queries; none of three
    >>> (b.lower, b.upper, b.m, b.exact)
    (2, 2, 2, True)
    """
    from privad import geometry
    from privad.geometry.depth import box_counts
    from privad.geometry.kdtree import build_tree

    Q = check_array(queries, "queries")
    r = check_nonnegative(r, "r")
    metric = check_choice(metric, "metric", METRICS)
    n = Q.shape[0]
    if ball_counts_at_r is None:
        counts = geometry.ball_counts(Q, r, metric=metric)
    else:
        check_magnitudes([Q], metric)  # as the pass at r would (the 2r bound needs it)
        counts = ball_counts_at_r
    lower = _max_of_counts(counts, n)
    tree = build_tree(Q)
    upper = upper_bound(
        lambda lo, hi, radius: box_counts(tree, lo, hi, radius, metric),
        (tree.lo[0], tree.hi[0]),  # the root node's box: every query's features
        Q[seeds(counts)],
        r,
        lower,
        lambda: int(np.max(geometry.ball_counts(Q, claim5_radius(r), metric=metric))),
    )
    return Claim5Bound(n=n, lower=lower, upper=upper)


#: How many of the densest queries (largest counts at r) are counted at 2r first: their
#: largest 2r count is a lower bound of the 2r bound, which the search has to beat.
SEEDS = 8
#: The search gives up (and the 2r pass decides) when, a quarter of the way through, its
#: bound is still above this multiple of the seeds' 2r count.
GIVE_UP = 2


def seeds(counts: Any) -> np.ndarray:
    """Indices of the :data:`SEEDS` queries with the largest counts at r, ties broken by the
    smaller index (every engine picks the same)."""
    return np.argsort(-np.asarray(counts), kind="stable")[:SEEDS]


def upper_bound(
    count: Callable[[np.ndarray, np.ndarray, float], np.ndarray],
    span: tuple[np.ndarray, np.ndarray],
    top: np.ndarray,
    r: float,
    lower: int,
    all_2r: Callable[[], int],
) -> int:
    """Claim 5's upper bound, the rule every engine follows; the engine supplies the counts.

    ``count(blos, bhis, radius)`` counts the queries within ``radius`` of each box
    (:func:`privad.geometry.depth.box_counts`, or its sum over a Dask array's blocks); a
    point as a box gives its ball count. ``span`` holds the queries' per-feature minimum and
    maximum, ``top`` the rows of the :data:`SEEDS` densest queries (:func:`seeds`), ``lower``
    the largest count at r, and ``all_2r()`` makes the 2r pass.

    First the seeds' 2r counts, whose largest is at most the 2r bound; then the box search
    (:func:`privad.geometry.depth.depth_bound`, giving up when a quarter of the way through
    it is still above :data:`GIVE_UP` times that). When the search's bound is at most the
    seeds' count it is the upper bound and the 2r pass is not made; otherwise the upper
    bound is ``min(search, all_2r())`` (the 2r bound alone when the search gave up). It is
    never above the 2r bound, and engines that supply the same counts give the same value.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.geometry.depth import box_counts_brute
    >>> Q = np.array([[0.0], [1.0], [1.5], [3.0]])
    >>> count = lambda lo, hi, radius: box_counts_brute(Q, lo, hi, radius, "euclidean")
    >>> upper_bound(count, (Q.min(0), Q.max(0)), Q[[1]], 0.5, 2, lambda: 3)  # no 2r pass
    2
    """
    from privad.geometry.depth import depth_bound, root_box

    seeds_2r = int(np.max(count(top, top, claim5_radius(r))))
    search = depth_bound(
        lambda blos, bhis: count(blos, bhis, r),
        root_box(*span, r),
        lower,
        give_up=GIVE_UP * seeds_2r,
    )
    if search is not None and search <= seeds_2r:
        return search
    full = all_2r()
    return full if search is None else min(search, full)


def _max_of_counts(counts: Any, n: int) -> int:
    """The maximum of ``n`` given ball counts, checked to be integers in 1..n."""
    c = np.asarray(counts)
    if c.shape != (n,) or not np.issubdtype(c.dtype, np.integer):
        raise ParameterError(
            f"ball_counts_at_r must be an integer array of shape ({n},), one count per query, "
            f"got {c.dtype} with shape {c.shape}"
        )
    if c.min() < 1 or c.max() > n:
        raise ParameterError(f"ball_counts_at_r must hold counts between 1 and {n}")
    return int(c.max())


@dataclass(frozen=True, eq=False)
class RecordExposure:
    """NOT PRIVATE (curator only). How many answers of a release can move with each record.

    Answer t reads only the records within r of its query i_t (Claim 5), so record j can
    move the answers of the queries with d(i_t, j) ≤ r and no others: c_j of them. Each is
    ε-indistinguishable on a neighbouring pair, so record j loses at most c_j·ε by linear
    composition, and at most the optimal composition of c_j answers (Kairouz, Oh, Viswanath
    2015, Theorem 3.3) at δ. The release is *charged* Claim 5's ``m``: the largest c over
    every possible record, stored or not (a record added to the data has a c too), which
    is at least the largest c_j over the stored records. The distribution of the c_j reads
    the data (who lies near whom), so it is for the curator's eyes only.

    Attributes
    ----------
    counts : (n_records,) int64 array, c_j for each stored record (queries counted with
        repetition, as Claim 5 counts them).
    epsilon : ε of one answer.
    m : the number of answers the release is charged per record (Claim 5's m, or the
        curator's online charge).
    delta : δ of the optimal composition (the scope's (ε, δ) budget), or None.
    """

    counts: np.ndarray
    epsilon: float
    m: int
    delta: float | None = None

    @property
    def worst(self) -> int:
        """max_j c_j over the stored records (0 when there are none)."""
        return int(self.counts.max()) if self.counts.size else 0

    def linear_loss(self) -> np.ndarray:
        """c_j·ε for each record (float64)."""
        return self.counts * float(self.epsilon)

    def optimal_loss(self, count: int) -> float | None:
        """The optimal-composition ε at :attr:`delta` of ``count`` answers (0.0 for none;
        None without a δ). Monotone in ``count``: a bound for every record with c_j ≤ count."""
        from privad.accounting.tight import optimal_epsilon

        if self.delta is None:
            return None
        return 0.0 if count <= 0 else float(optimal_epsilon(self.epsilon, int(count), self.delta))

    def bins(self) -> list[tuple[int, int, int]]:
        """(lowest c, highest c, records) for c = 0, 1, 2–3, 4–7, …: the non-empty bins."""
        c = self.counts
        if not c.size:
            return []
        top = max(1, self.worst)
        edges = [0, 1] + [1 << k for k in range(1, top.bit_length() + 1)]
        out = []
        for lo, nxt in zip(edges, edges[1:] + [top + 1], strict=True):
            hi = min(nxt - 1, top)
            if lo > hi:
                continue
            n = int(np.count_nonzero((c >= lo) & (c <= hi)))
            if n:
                out.append((lo, hi, n))
        return out

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary (what the ledger keeps in the spend's metadata)."""
        c = self.counts
        q = (lambda p: int(np.quantile(c, p, method="higher"))) if c.size else (lambda p: 0)
        return {
            "records": int(c.size),
            "epsilon": float(self.epsilon),
            "m": int(self.m),
            "max": self.worst,
            "median": q(0.5),
            "p90": q(0.9),
            "p99": q(0.99),
            "untouched": int(np.count_nonzero(c == 0)),
            "bins": [list(b) for b in self.bins()],
            "delta": self.delta,
            "loss_linear_m": float(self.m * self.epsilon),
            "loss_linear_max": float(self.worst * self.epsilon),
            "loss_optimal_m": self.optimal_loss(self.m),
            "loss_optimal_max": self.optimal_loss(self.worst),
        }


def record_exposure(
    data: Any,
    r: float,
    *,
    epsilon: float,
    m: int,
    queries: Any = None,
    metric: str = "euclidean",
    self_counts: Any = None,
    delta: float | None = None,
) -> RecordExposure:
    """c_j, the answers that can move with each record of ``data`` (:class:`RecordExposure`).

    ``queries=None`` means one query per record of ``data``: then c_j is the record's own
    uncapped ball count B_x(j, r), which the release has already computed (pass it as
    ``self_counts``; nothing is counted again). Otherwise c_j = #{t : d(q_t, j) ≤ r}, one
    ball-count pass of the queries around the records (measured: the cost of the pass that
    gives the mechanism its counts, e.g. 1 ms for 754 queries on Thyroid's 3,772 records,
    30 ms for 20,000; Dask collections are counted on the cluster).
    """
    from privad import geometry

    if queries is None and self_counts is not None:
        counts = np.asarray(self_counts, dtype=np.int64)
    elif queries is None:
        counts = geometry.ball_counts(data, r, metric=metric)
    else:
        counts = geometry.ball_counts(queries, r, queries=data, metric=metric)
    return RecordExposure(np.asarray(counts, dtype=np.int64), float(epsilon), int(m), delta)


def pairs_within(
    queries: np.ndarray, data: np.ndarray, r: float, metric: str, block: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """All (query index, data index) pairs with d ≤ r, decided by geometry's canonical predicate.

    Candidates come from a cKDTree with a slightly enlarged radius and are re-decided with
    :mod:`privad.geometry.predicate`, so the pairs agree with :func:`privad.geometry.ball_counts`
    exactly (also at distance exactly r).
    """
    from scipy.spatial import cKDTree

    from privad.geometry.predicate import paired_values, threshold

    p = {"euclidean": 2.0, "manhattan": 1.0, "chebyshev": math.inf}[metric]
    rel = 1e-8 + 16.0 * data.shape[1] * np.finfo(np.float64).eps
    r_hi = r * (1.0 + rel) + 1e-150 * math.sqrt(data.shape[1])
    thr = threshold(r, metric)
    tree = cKDTree(data)
    qi: list[np.ndarray] = []
    dj: list[np.ndarray] = []
    for s in range(0, queries.shape[0], block):
        lists = tree.query_ball_point(queries[s : s + block], r_hi, p=p)
        lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
        if lengths.sum() == 0:
            continue
        idx = np.concatenate([np.asarray(x, dtype=np.int64) for x in lists])
        owner = np.repeat(np.arange(s, s + len(lists)), lengths)
        keep = paired_values(queries[owner], data[idx], metric) <= thr
        qi.append(owner[keep])
        dj.append(idx[keep])
    if not qi:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(qi), np.concatenate(dj)


def per_record_privacy_loss(
    data: Any,
    r: float,
    *,
    beta: int,
    epsilon: float,
    mechanism: str = "sp",
    k: int = 1,
    metric: str = "euclidean",
    queries: Any = None,
    add_query_to_data: bool = False,
    combine: str = "max",
) -> np.ndarray:
    """Exact privacy loss of each record of ``data`` (a Figure 3-style privacy map).

    For record j (row j of ``data``) let x − e_j be the database without that one copy. For
    each query i the loss is

        L_ij = max over answers o ∈ {0, 1} of |log P(U_i(x) = o) − log P(U_i(x − e_j) = o)|,

    from the closed-form error probabilities (Claim 2 / Theorem 4.7). Only queries with
    d(i, j) ≤ r are affected (the others read neither x_j nor its ball), and for them the
    removal lowers B_x(i, r) by one and, when i equals j, x_i by one.

    ``combine="max"`` (default) returns max_i L_ij: the most any single answer reveals about
    j's presence. ``combine="sum"`` returns Σ_i L_ij: the exact loss of releasing all answers
    together (answers use independent randomness, so the joint log-ratio is the sum).
    For the SP mechanism every k-sensitive record has loss ≤ ε per query; anomalies may lose
    more (Figure 2d). ``exp(−loss)`` is the "level of privacy" plotted in Figure 3.

    ``queries`` defaults to the records of ``data`` themselves. With ``add_query_to_data``
    (footnote 1) each query is answered on x + e_i, as in the estimator.
    """
    X = check_array(data, "data")
    mech = aiq_mechanism(mechanism, beta=beta, r=r, epsilon=epsilon, k=k, metric=metric)
    r, beta, metric = mech.r, mech.beta, mech.metric
    combine = check_choice(combine, "combine", ("max", "sum"))
    from privad import geometry

    if queries is None:
        Q = X
        add = False
        ball = np.asarray(geometry.ball_counts(X, r, metric=metric), dtype=np.int64)
        mult = np.asarray(geometry.multiplicities(X), dtype=np.int64)
    else:
        Q = check_array(queries, "queries")
        add = bool(add_query_to_data)
        ball = np.asarray(geometry.ball_counts(X, r, queries=Q, metric=metric), dtype=np.int64)
        mult = np.asarray(geometry.multiplicities(X, queries=Q), dtype=np.int64)
        if add:
            ball = ball + 1
            mult = mult + 1
    qi, dj = pairs_within(Q, X, r, metric)
    out = np.zeros(X.shape[0], dtype=np.float64)
    if qi.size == 0:
        return out
    same = (Q[qi] + 0.0 == X[dj] + 0.0).all(axis=1)
    a0, b0 = mult[qi], ball[qi]
    a1, b1 = a0 - same.astype(np.int64), b0 - 1
    le0 = mech.log_error_probability(a0, b0)
    le1 = mech.log_error_probability(a1, b1)
    g0 = np.asarray(anomaly_label(a0, b0, beta))
    g1 = np.asarray(anomaly_label(a1, b1, beta))
    p00, p01 = log_output_probabilities(g0, le0)
    p10, p11 = log_output_probabilities(g1, le1)
    loss = np.maximum(np.abs(p00 - p10), np.abs(p01 - p11))
    if combine == "max":
        np.maximum.at(out, dj, loss)
    else:
        np.add.at(out, dj, loss)
    return out


def flag_curve(beta: int, epsilon: float, k: int, balls: Any) -> dict[str, np.ndarray]:
    """P(labelled an anomaly) for ball counts ``balls`` (multiplicity 1), SP against DP.

    For (β, r)-anomaly identification, the probability that a record whose closed ball of
    radius r holds B records (itself included, no duplicates) is labelled an anomaly, under
    the (ε, k)-sensitively private mechanism U_λk (Theorem 4.6) and the optimal ε-DP
    mechanism U_ΔG (Theorem 4.4): both are Construction 1, whose error is
    e^(−ε(λ − 1)) / (1 + e^ε) (Claim 2) with the mechanism's λ. Closed forms only: no data
    is read and nothing is spent (``privad sp plan``).

    Returns
    -------
    dict
        ``ball`` (the counts), ``anomaly`` (B <= β: the true label), ``sp`` (U_λk,
        Theorem 4.6) and ``dp`` (U_ΔG, Theorem 4.4) flag probabilities.
    """
    b = np.asarray(balls, dtype=np.int64)
    ones = np.ones_like(b)
    truth = np.asarray(anomaly_label(ones, b, beta), dtype=bool)
    out: dict[str, np.ndarray] = {"ball": b, "anomaly": truth}
    for name in ("sp", "dp"):
        mech = aiq_mechanism(name, beta=beta, r=0.0, epsilon=epsilon, k=k)
        err = np.exp(mech.log_error_probability(ones, b))
        out[name] = np.where(truth, 1.0 - err, err)
    return out
