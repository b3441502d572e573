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

Magnitudes: what float64 can and cannot represent
-------------------------------------------------
Every engine enters through :func:`check_magnitudes`, which refuses (``DataError``) the two
kinds of input on which the pair value would stop tracking the real distance:

* **overflow** (every metric, :func:`check_span`): per-feature spans whose pair value is not
  finite. Once refused, every pair value and every box bound is finite.
* **underflow** (euclidean only, :func:`check_gaps`): two distinct values of one feature
  (data and queries together) closer than :data:`MIN_GAP` ``= 2**-511`` (~1.49e-154). Their
  squared difference would be subnormal or 0, so distinct records could be "at distance 0"
  (within ``r = 0`` of each other) and the triangle inequality that Claim 5's bound relies
  on would fail (the audit case: data ``{0}``, queries ``±1.2e-162``, ``r = 0``). Columns
  whose nonzero values all have magnitude ``>= 2**-459`` (~6.6e-139) always pass, because
  distinct floats of that size differ by at least ``2**-511``; only the values below it are
  sorted and their consecutive gaps compared.

Once the check passes, every nonzero term ``t * t`` is a normal float64 (``>= 2**-1022``),
so a pair value is its real squared distance up to a relative error of about ``(d + 2)``
units in the last place, and:

* ``r = 0`` means exactly "duplicates only" for every metric (a distinct pair has
  ``v >= 2**-1022 > 0``; manhattan and chebyshev differences of distinct floats are never
  0 under gradual underflow, so they need no gap check). More generally any ``r`` with
  ``r * r`` subnormal decides exactly as real arithmetic does (distinct records are at
  least ``2**-511 > r`` apart), so small radii need no refusal;
* Claim 5 holds as computed (:func:`privad.sensitive.accounting.claim5_bound`, which checks the
  queries): if queries ``s`` and ``t`` both have ``v(., j) <= thr(r)`` for *any* record
  ``j`` (stored, added, or not passing the check itself), then
  ``v(s, t) <= thr(claim5_radius(r))``, for fewer than 10**6 features. (Either ``thr(r)``
  is below about ``2**-1024`` and the two real distances to ``j`` force ``s == t``, or the
  relative margin 1e-9 of ``claim5_radius`` absorbs the relative errors and the absolute
  error, at most ``d * 2**-1075``, of underflowing terms involving ``j``.) Manhattan and
  chebyshev pair values have relative errors only, which the same margin absorbs.

Refusals depend on the data (two records close together), as the span check does: a
deployment that must not reveal them fixes a record domain where they cannot occur, e.g.
every nonzero coordinate at least ``2**-459`` in magnitude and at most ``2**510 / sqrt(d)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from privad.errors import DataError

#: Supported metrics, in the order of their integer codes in the compiled kernels.
METRICS: tuple[str, ...] = ("euclidean", "manhattan", "chebyshev")
EUCLIDEAN, MANHATTAN, CHEBYSHEV = 0, 1, 2

#: Smallest difference allowed between distinct values of a feature for euclidean distances:
#: for ``|t| >= MIN_GAP`` the square ``t * t`` is a normal float64 (``>= 2**-1022``).
MIN_GAP = 2.0**-511
#: Values of larger magnitude are at least :data:`MIN_GAP` from every other float64 (a float
#: of magnitude ``>= 2**-459`` is a multiple of ``2**-511``), so only values up to this
#: magnitude can take part in a gap below :data:`MIN_GAP`.
SMALL = 2.0**-459


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


class ColumnScan(NamedTuple):
    """What one pass over an array (n >= 1, d) tells the checks, per feature."""

    lo: np.ndarray  # min
    hi: np.ndarray  # max
    tiny: np.ndarray  # int64: how many nonzero values have magnitude <= SMALL
    zero: np.ndarray  # bool: whether 0 occurs


def scan_columns(points: np.ndarray) -> ColumnScan:
    """Per-feature min, max, number of tiny nonzero values and presence of 0 of ``points``
    (n >= 1, d), with NumPy reductions (a few ms for 284,807 x 6; no compiled kernel, so
    the engines that need none, such as SciPy's, never load Numba)."""
    magnitude = np.abs(points)
    return ColumnScan(
        lo=points.min(axis=0),
        hi=points.max(axis=0),
        tiny=np.count_nonzero((magnitude <= SMALL) & (magnitude > 0.0), axis=0).astype(np.int64),
        zero=(magnitude == 0.0).any(axis=0),
    )


def small_values(points: np.ndarray, scan: ColumnScan) -> list[np.ndarray]:
    """Per feature, the sorted distinct values of magnitude at most :data:`SMALL`.

    Only these values can lie closer than :data:`MIN_GAP` to another value, so they are all
    that :func:`check_gaps` needs from an array. ``scan`` is :func:`scan_columns` of
    ``points``: a feature is sorted only when it has tiny nonzero values (ordinary data has
    none, and its result is at most ``[0.0]``).
    """
    out = []
    for j, (tiny, zero) in enumerate(zip(scan.tiny.tolist(), scan.zero.tolist(), strict=True)):
        column = points[:, j]
        values = np.unique(column[(np.abs(column) <= SMALL) & (column != 0.0)]) if tiny else []
        out.append(np.concatenate([[0.0] if zero else [], values]))
    return out


def check_gaps(parts: Sequence[Sequence[np.ndarray]]) -> None:
    """Refuse two distinct values of one feature closer than :data:`MIN_GAP` (euclidean).

    ``parts`` holds :func:`small_values` of every array (or partition) taking part: the data
    and the queries together. Rounding is monotone and :data:`MIN_GAP` is a float64, so a
    computed gap is below it exactly when the real one is; the smallest gap of a feature is
    between neighbours in sorted order.
    """
    for j, column in enumerate(zip(*parts, strict=True)):
        values = np.unique(np.concatenate(column))  # -0.0 and 0.0 are one value
        close = np.flatnonzero(np.diff(values) < MIN_GAP)
        if close.size:
            a, b = float(values[close[0]]), float(values[close[0] + 1])
            raise DataError(
                f"feature {j} has the distinct values {a!r} and {b!r}, closer than 2**-511 "
                f"(~1.5e-154): their squared difference underflows float64, so euclidean "
                f"distances between such records cannot be computed faithfully (they could "
                f"count as 0). Allowed: distinct values of a feature (data and queries "
                f"together) at least 2**-511 apart, which always holds when every nonzero "
                f"value has magnitude >= 2**-459 (~6.6e-139); rescale the data and r by a "
                f"power of two, or use metric 'manhattan' or 'chebyshev'"
            )


class Magnitudes(NamedTuple):
    """What :func:`check_magnitudes` needs from one array (n >= 1, d): its per-feature
    ``lo`` and ``hi``, and (euclidean) its :func:`small_values`, None for other metrics."""

    lo: np.ndarray
    hi: np.ndarray
    small: list[np.ndarray] | None


def magnitudes(points: np.ndarray, metric: str) -> Magnitudes:
    """:class:`Magnitudes` of ``points`` (n >= 1, d): one pass, sorting only for features
    with nonzero values below :data:`SMALL`. Computed once for an array that takes part in
    many checks (the records of :class:`privad.geometry.BallIndex`)."""
    scan = scan_columns(points)
    return Magnitudes(
        scan.lo, scan.hi, small_values(points, scan) if metric == "euclidean" else None
    )


def check_prepared(parts: Sequence[Magnitudes], metric: str) -> None:
    """:func:`check_magnitudes` from the :func:`magnitudes` of every array taking part."""
    check_span([np.vstack([m.lo, m.hi]) for m in parts], metric)
    if metric == "euclidean":
        check_gaps([m.small for m in parts])


def check_magnitudes(points: list[np.ndarray], metric: str) -> None:
    """Refuse inputs the pair values cannot represent: :func:`check_span` (overflow, every
    metric) and, for euclidean distances, :func:`check_gaps` (underflow).

    Every engine's validation calls this once on the data and the queries together (see the
    module docstring for what the pair values guarantee once it passes). One pass over the
    arrays; sorting only for features with nonzero values below :data:`SMALL`.
    """
    check_prepared([magnitudes(p, metric) for p in points if p.shape[0] > 0], metric)
