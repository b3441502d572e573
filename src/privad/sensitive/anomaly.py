"""(β, r)-anomalies (Definition 2.2), normality, and k-sensitive records (Definition 3.1).

Notation of the paper (section 2): a database is a histogram x over the record space X;
``x_i`` is the number of records identical to i (its multiplicity) and

    B_x(i, r) = Σ_{j ∈ X : d(i, j) ≤ r} x_j

is the number of records within distance r of i, i itself and its duplicates included
(d(i, i) = 0). Everything in this module is a function of these two integers.

* Definition 2.2: i is a (β, r)-anomaly in x iff x_i > 0 **and** B_x(i, r) ≤ β ("at most β
  records ... within distance r", closed inequality, self counted).
* The anomaly identification function g(i, x) = 1 iff i is present in x as an anomaly.
* The normality property p(i, x) = 1 iff i is present in x as a normal record, i.e.
  x_i > 0 and B_x(i, r) > β. Absent records have p = 0 *and* g = 0.
* Definition 3.1 specialised to (β, r): i is k-sensitive w.r.t. x iff some y with
  ||x − y||_1 ≤ k has p(i, y) = 1, which holds iff B_x(i, r) ≥ β + 1 − k (add k copies of i:
  y_i = x_i + k ≥ 1 and B_y = B_x + k ≥ β + 1; conversely k changes move B by at most k;
  Lemma A.2 of the paper is the "only if" half). The test does not depend on x_i.

:func:`ball_statistics` computes (x_i, B_x(i, r)) from data with :mod:`privad.geometry`,
for the data's own records or for arbitrary query records, including footnote 1's variant
in which the queried record is added to the database first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.sensitive._common import (
    as_count_pair,
    as_counts,
    check_beta,
    check_k,
    scalar_or_array,
)
from privad.validation import check_array, check_choice, check_nonnegative

__all__ = [
    "METRICS",
    "BallStatistics",
    "anomaly_label",
    "ball_statistics",
    "is_anomaly",
    "is_normal",
    "is_sensitive",
    "statistics_from_counts",
]

METRICS: tuple[str, ...] = ("euclidean", "manhattan", "chebyshev")
"""Record metrics d(i, j) supported through :mod:`privad.geometry` (Euclidean by default)."""


def is_anomaly(ball: Any, beta: Any, *, x_i: Any = None) -> Any:
    """Definition 2.2: whether B_x(i, r) ≤ β (at most β records within distance r of i).

    The inequality is ``≤`` ("there are at most β records in x that are within distance r
    from i, i.e. B_x(i, r) ≤ β"), and the ball counts i itself and its duplicates.

    Definition 2.2 also requires i to be present (x_i > 0). With ``x_i=None`` (the default)
    the caller asserts that the record is present, as it is for a record of the data; only
    ``ball == 0`` is then answered False, because an empty ball implies x_i = 0. Pass ``x_i``
    to apply the presence test as well (then this is g(i, x), see :func:`anomaly_label`).

    Vectorised: ``ball`` (and ``x_i``) may be arrays; a scalar input gives a Python bool.

    Examples
    --------
    >>> from privad.sensitive import is_anomaly
    >>> is_anomaly(3, beta=3), is_anomaly(4, beta=3)
    (True, False)
    >>> is_anomaly([1, 5], beta=3).tolist()
    [True, False]
    """
    beta = check_beta(beta)
    if x_i is None:
        b = as_counts(ball, "ball")
        return scalar_or_array((b <= beta) & (b >= 1))
    a, b = as_count_pair(x_i, ball)
    return scalar_or_array((a > 0) & (b <= beta))


def anomaly_label(x_i: Any, ball: Any, beta: Any) -> Any:
    """g(i, x) (section 2, "Anomaly identification"): 1 iff x_i > 0 and B_x(i, r) ≤ β.

    Returns int64 0/1 (a Python int for scalar inputs). An absent record (x_i = 0) is
    never an anomaly: footnote 1 of the paper keeps the presence predicate so that a void
    spot is not confused with an anomaly.
    """
    beta = check_beta(beta)
    a, b = as_count_pair(x_i, ball)
    return scalar_or_array(((a > 0) & (b <= beta)).astype(np.int64))


def is_normal(x_i: Any, ball: Any, beta: Any) -> Any:
    """The normality property p(i, x) (section 3): x_i > 0 and B_x(i, r) > β.

    Not the negation of :func:`anomaly_label`: absent records have p = 0 as well.
    """
    beta = check_beta(beta)
    a, b = as_count_pair(x_i, ball)
    return scalar_or_array((a > 0) & (b > beta))


def is_sensitive(ball: Any, beta: Any, k: Any) -> Any:
    """Definition 3.1 for (β, r)-anomalies: i is k-sensitive w.r.t. x iff B_x(i, r) ≥ β + 1 − k.

    "Sensitive" means normal now or normal after adding/removing at most k records. The
    closed form is exact (see the module docstring) and independent of x_i; the tests in
    ``tests/sensitive`` check it against the literal definition by brute force. For
    k ≥ β + 1 every record is sensitive.

    Examples
    --------
    With β = 3 and k = 1 a record needs B ≥ 3: one more record in its ball makes it normal.

    >>> from privad.sensitive import is_sensitive
    >>> is_sensitive([1, 2, 3, 10], beta=3, k=1).tolist()
    [False, False, True, True]
    """
    beta = check_beta(beta)
    k = check_k(k)
    b = as_counts(ball, "ball")
    return scalar_or_array(b >= beta + 1 - k)


@dataclass(frozen=True)
class BallStatistics:
    """The two integers the mechanisms need for each queried record.

    Attributes
    ----------
    x_i
        multiplicity of each queried record in the database the query is answered on.
    ball
        B_x(i, r) in that database (self and duplicates included).
    capped
        True where ``ball`` reached the count cap c (then the true count is ≥ c and
        ``ball`` holds c; ``x_i`` is then only a lower bound). All False without a cap.
    cap
        the cap c, or None.
    added_query
        whether footnote 1's variant was applied (one copy of each queried
        record added to the database before counting).
    """

    x_i: np.ndarray
    ball: np.ndarray
    capped: np.ndarray
    cap: int | None
    added_query: bool


def ball_statistics(
    data: Any,
    r: float,
    *,
    queries: Any = None,
    metric: str = "euclidean",
    add_query_to_data: bool = False,
    cap: int | None = None,
    engine: str = "auto",
) -> BallStatistics:
    """(x_i, B_x(i, r)) for every queried record, computed with :mod:`privad.geometry`.

    Parameters
    ----------
    data
        the database, an (n, d) array of records (duplicates allowed).
    r
        the radius r ≥ 0 of the (β, r)-anomaly; balls are closed (d(i, j) ≤ r).
    queries
        (q, d) array of query records, or None to query every record of ``data``
        (each row is then its own query, so x_i ≥ 1 and B ≥ 1).
    metric
        ``"euclidean"`` (default), ``"manhattan"`` or ``"chebyshev"``.
    add_query_to_data
        footnote 1's variant: answer the query for i on x + e_i, the
        database with one more copy of i. Then x_i and B both grow by one. The
        variant is (ε, k)-SP whenever the plain query is, because adding e_i to both
        ends of an edge of the k-sensitive graph keeps it an edge (adding a record never
        lowers a ball count, so sensitivity is kept). Only for explicit ``queries``;
        with ``queries=None`` the records are already present and nothing is added.
    cap
        optional count cap c: counts stop at c (``min(true, c)``), which is all
        :func:`privad.sensitive.mdd.apply_count_cap` needs. With footnote 1's variant
        the reported ball is ``min(B + 1, c)``.
    engine
        passed to :func:`privad.geometry.ball_counts`.

    Examples
    --------
    Three close records and a lone one; B_x(i, r) counts the record itself (Definition 2.2).

    >>> import numpy as np
    >>> from privad.sensitive import ball_statistics
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0]])
    >>> stats = ball_statistics(X, 0.5)
    >>> stats.x_i.tolist(), stats.ball.tolist()
    ([1, 1, 1, 1], [3, 3, 3, 1])
    >>> ball_statistics(X, 0.5, queries=np.array([[4.9]]), add_query_to_data=True).ball.tolist()
    [2]
    """
    from privad import geometry  # deferred: geometry is a lower layer, loaded when needed

    X = check_array(data, "data")
    r = check_nonnegative(r, "r")
    metric = check_choice(metric, "metric", METRICS)
    if cap is not None:
        from privad.validation import check_int

        cap = check_int(cap, "cap", minimum=1)
    if queries is None:
        Q = None
        add = False
    else:
        Q = check_array(queries, "queries")
        if Q.shape[1] != X.shape[1]:
            from privad.errors import DataError

            raise DataError(f"queries have {Q.shape[1]} feature(s) but the data has {X.shape[1]}")
        add = bool(add_query_to_data)
    ball = np.asarray(
        geometry.ball_counts(X, r, queries=Q, metric=metric, cap=cap, engine=engine),
        dtype=np.int64,
    )
    mult = np.asarray(geometry.multiplicities(X, queries=Q), dtype=np.int64)
    return statistics_from_counts(ball, mult, add=add, cap=cap)


def statistics_from_counts(
    ball: np.ndarray, mult: np.ndarray, *, add: bool, cap: int | None
) -> BallStatistics:
    """:class:`BallStatistics` from engine output: ball counts (already capped at ``cap``
    by the engine) and multiplicities in the data, for any engine (also a distributed one).

    ``add`` applies footnote 1's variant (one more copy of each query: both grow by one);
    with a cap the ball is ``min(B (+1), c)`` and the multiplicity is kept ≤ the ball.
    """
    ball = np.asarray(ball, dtype=np.int64)
    mult = np.asarray(mult, dtype=np.int64)
    if add:
        ball = ball + 1
        mult = mult + 1
    if cap is not None:
        ball = np.minimum(ball, cap)
        mult = np.minimum(mult, ball)
        capped = ball >= cap
    else:
        capped = np.zeros(ball.shape, dtype=bool)
    return BallStatistics(x_i=mult, ball=ball, capped=capped, cap=cap, added_query=bool(add))
