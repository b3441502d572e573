"""The one canonical distance predicate "d(a, b) <= r" shared by every engine.

Ball counts are integers, so two engines agree only if they take the same yes/no decision
for every pair, including pairs at distance exactly ``r`` (integer lattices, rounded data).
That decision is therefore defined here once, as a fixed sequence of IEEE-754 float64
operations, and every engine (the compiled dual tree, the SciPy reference, the brute-force
test oracle, a future Dask engine) must take it with exactly this arithmetic.

For records ``a`` and ``b`` with ``d`` features, the *pair value* ``v(a, b)`` is computed in
float64, in feature order ``j = 0, 1, ..., d-1``, each operation rounded to nearest::

    euclidean:  s = 0.0;  for j: t = a[j] - b[j];  s = s + t * t        (no fused multiply-add)
    manhattan:  s = 0.0;  for j: s = s + |a[j] - b[j]|
    chebyshev:  s = 0.0;  for j: s = max(s, |a[j] - b[j]|)

and the *threshold* is computed once from the radius: ``thr = r * r`` (float64) for euclidean,
``thr = r`` otherwise. Then ``d(a, b) <= r`` is decided as ``v(a, b) <= thr``.

Properties the engines rely on (all follow from round-to-nearest being monotone and
``fl(-x) = -fl(x)``):

* symmetric: ``v(a, b) == v(b, a)`` bit for bit, so a self count may visit each pair once;
* ``v(a, a) == 0 <= thr``: a record always lies in its own ball (Def. 2.2 counts it);
* box bounds are exact: for boxes ``[lo, hi]`` whose corners are coordinates of the points
  they hold, the per-feature gaps ``max(0, fl(blo - ahi), fl(alo - bhi))`` and
  ``max(fl(ahi - blo), fl(bhi - alo))``, combined with the same operations in the same order,
  bound ``v`` from below and above *as computed*, so pruning and whole-node counting in a
  tree take exactly the decision the pair-by-pair computation would.

Where the result differs from real arithmetic, it is a documented part of the definition:
a squared difference below ~1e-308 may round to 0, so two distinct records closer than
~1e-154 may count as being at distance 0. Inputs whose coordinate spans would overflow the
pair value (see :func:`check_span`) are refused, so the pair value is always finite.
"""

from __future__ import annotations

import math

import numpy as np

from privad.errors import DataError

#: Supported metrics, in the order of their integer codes in the compiled kernels.
METRICS: tuple[str, ...] = ("euclidean", "manhattan", "chebyshev")
EUCLIDEAN, MANHATTAN, CHEBYSHEV = 0, 1, 2


def metric_code(metric: str) -> int:
    """Integer code of a (validated) metric name, as used by the compiled kernels."""
    return METRICS.index(metric)


def threshold(r: float, metric: str) -> float:
    """The value ``thr`` that pair values are compared with: ``r * r`` (euclidean) or ``r``.

    For euclidean distance ``r * r`` is one float64 multiplication; if it overflows to
    ``inf`` every pair counts, which is exact because :func:`check_span` guarantees that all
    pair values are finite (so every true distance is below ``r``).
    """
    r = float(r)
    return r * r if metric == "euclidean" else r


def pair_values(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    """Pair values ``v(a_i, b_k)`` for all rows of ``a`` (m, d) and ``b`` (p, d): shape (m, p).

    This is the NumPy statement of the canonical arithmetic (feature order, no reassociation;
    NumPy's element-wise operations are single IEEE operations). Memory is O(m * p).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    s = np.zeros((a.shape[0], b.shape[0]), dtype=np.float64)
    for j in range(a.shape[1]):
        s = _combine(s, a[:, j, None] - b[None, :, j], metric)
    return s


def paired_values(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    """Pair values ``v(a_i, b_i)`` row by row for equally shaped (m, d) arrays: shape (m,)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    s = np.zeros(a.shape[0], dtype=np.float64)
    for j in range(a.shape[1]):
        s = _combine(s, a[:, j] - b[:, j], metric)
    return s


def _combine(s: np.ndarray, t: np.ndarray, metric: str) -> np.ndarray:
    """One feature step of the canonical arithmetic: the running values ``s`` combined with
    that feature's differences ``t``."""
    if metric == "euclidean":
        return s + t * t
    if metric == "manhattan":
        return s + np.abs(t)
    return np.maximum(s, np.abs(t))


def radius_from_value(values: np.ndarray, metric: str) -> np.ndarray:
    """The smallest radii ``r >= 0`` with ``values <= threshold(r, metric)``.

    For manhattan and chebyshev this is the value itself. For euclidean it is the smallest
    float64 ``r`` with ``fl(r * r) >= s`` (usually ``sqrt(s)``, but not always, and far from
    it where ``r * r`` is subnormal), found by bisection on the bit patterns of non-negative
    floats, which are ordered like the floats. Hence ``v <= threshold(r)`` holds exactly
    when ``r >= radius_from_value(v)``.
    """
    values = np.asarray(values, dtype=np.float64)
    if metric != "euclidean":
        return values.copy()
    lo = np.zeros(values.shape, dtype=np.int64)  # invariant: r(lo - 1) fails, r(hi) admits
    hi = np.full(values.shape, np.float64(np.inf).view(np.int64), dtype=np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = lo + (hi - lo) // 2
        r = mid.view(np.float64)
        with np.errstate(over="ignore"):
            admits = r * r >= values
        hi = np.where(open_ & admits, mid, hi)
        lo = np.where(open_ & ~admits, mid + 1, lo)
    return hi.view(np.float64)


def check_span(points: list[np.ndarray], metric: str) -> None:
    """Refuse inputs whose largest possible pair value is not finite.

    The bound is the metric applied to the per-feature spans (max - min over all the given
    arrays); it is what the tree's root box gives, so checking it once makes every pair
    value and every box bound finite.
    """
    lo = np.min([p.min(axis=0) for p in points if p.shape[0] > 0], axis=0)
    hi = np.max([p.max(axis=0) for p in points if p.shape[0] > 0], axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        span = hi - lo
        bound = 0.0
        for g in span.tolist():  # feature order, as the root box bound is computed
            if metric == "euclidean":
                bound = bound + g * g
            elif metric == "manhattan":
                bound = bound + g
            else:
                bound = max(bound, g)
    if not math.isfinite(bound):
        raise DataError(
            f"the coordinates span too wide a range for {metric} distances in float64 "
            f"(the largest possible pair value overflows); rescale the data"
        )
