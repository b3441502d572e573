"""Compiled (Numba) primitives of the canonical predicate, shared by the compiled engines.

Each function performs exactly the float64 operations, in exactly the order, that
:mod:`privad.geometry.predicate` defines (feature order, no fused multiply-add, no
reassociation; the tests check the pair values bit for bit against NumPy). The box bounds
are the exact bounds described there. ``metric`` is an integer code
(:func:`privad.geometry.predicate.metric_code`); each function branches on it once, outside
its loops, so the loops vectorise.

Also here: the threading policy of the compiled engines (:data:`PARALLEL_MIN_POINTS`).
"""

from __future__ import annotations

import numba
from numba import njit

from privad.geometry.predicate import EUCLIDEAN, MANHATTAN

# How the per-feature magnitudes combine into a pair value (or a bound), one helper per
# metric. The kernels branch on the metric once, outside their loops, and pass the helper
# to a loop written once: all are inlined at the Numba IR level (``inline="always"``), so
# each metric gets its own loop with the operation inlined, and the loops vectorise.


@njit(cache=True, inline="always")
def _add_square(s, t):
    return s + t * t


@njit(cache=True, inline="always")
def _add(s, t):
    return s + t


@njit(cache=True, inline="always")
def _max(s, t):
    return max(s, t)


@njit(cache=True, inline="always")
def _box_bounds(alo, ahi, a, blo, bhi, b, combine):
    mn = 0.0
    mx = 0.0
    for j in range(alo.shape[1]):
        a_lo = alo[a, j]
        a_hi = ahi[a, j]
        b_lo = blo[b, j]
        b_hi = bhi[b, j]
        g = max(max(b_lo - a_hi, a_lo - b_hi), 0.0)
        big = max(a_hi - b_lo, b_hi - a_lo)
        mn = combine(mn, g)
        mx = combine(mx, big)
    return mn, mx


@njit(cache=True, inline="always")
def box_bounds(alo, ahi, a, blo, bhi, b, metric):
    """(lower, upper) bounds of the pair values between boxes ``a`` and ``b`` (node rows)."""
    if metric == EUCLIDEAN:
        return _box_bounds(alo, ahi, a, blo, bhi, b, _add_square)
    if metric == MANHATTAN:
        return _box_bounds(alo, ahi, a, blo, bhi, b, _add)
    return _box_bounds(alo, ahi, a, blo, bhi, b, _max)


@njit(cache=True, inline="always")
def point_box_bounds(X, i, blo, bhi, b, metric):
    """(lower, upper) bounds of the pair values between point ``X[i]`` and box ``b``.

    The box bounds with ``X[i]`` as the degenerate box ``[X[i], X[i]]``: the same floats.
    """
    return box_bounds(X, X, i, blo, bhi, b, metric)


@njit(cache=True, inline="always")
def _zero(buf, p):
    return 0.0


@njit(cache=True, inline="always")
def _load(buf, p):
    return buf[p]


@njit(cache=True, inline="always")
def _fold4(x, Y, j, s, buf, m, start, combine):
    """Fold features ``j .. j+3`` into ``start(buf, p)`` for ``p < m``, in one pass and in
    feature order (``start``: :func:`_zero` for the first features, else :func:`_load`)."""
    x0 = x[j]
    x1 = x[j + 1]
    x2 = x[j + 2]
    x3 = x[j + 3]
    y0 = Y[j, s : s + m]
    y1 = Y[j + 1, s : s + m]
    y2 = Y[j + 2, s : s + m]
    y3 = Y[j + 3, s : s + m]
    for p in range(m):
        a = combine(start(buf, p), abs(x0 - y0[p]))
        a = combine(a, abs(x1 - y1[p]))
        a = combine(a, abs(x2 - y2[p]))
        buf[p] = combine(a, abs(x3 - y3[p]))


@njit(cache=True, inline="always")
def _fold2(x, Y, j, s, buf, m, start, combine):
    """Fold features ``j, j+1`` into ``buf[0:m]`` in one pass (see :func:`_fold4`)."""
    x0 = x[j]
    x1 = x[j + 1]
    y0 = Y[j, s : s + m]
    y1 = Y[j + 1, s : s + m]
    for p in range(m):
        buf[p] = combine(combine(start(buf, p), abs(x0 - y0[p])), abs(x1 - y1[p]))


@njit(cache=True, inline="always")
def _fold1(x, Y, j, s, buf, m, start, combine):
    """Fold feature ``j`` into ``buf[0:m]`` (see :func:`_fold4`)."""
    x0 = x[j]
    y0 = Y[j, s : s + m]
    for p in range(m):
        buf[p] = combine(start(buf, p), abs(x0 - y0[p]))


@njit(cache=True, inline="always")
def _row_values(X, i, YT, s, e, buf, combine):
    # Features are folded four (then two, then one) at a time: one pass over ``buf`` per
    # block instead of one per feature, the same operations in the same order (combining
    # 0.0 first is exact: 0 + t * t, 0 + t and max(0, t) are the terms themselves). At
    # d = 6 the per-feature passes were the cost: this is 2-4x faster.
    m = e - s
    x = X[i]
    d = X.shape[1]
    if d >= 4:
        _fold4(x, YT, 0, s, buf, m, _zero, combine)
        j = 4
    elif d >= 2:
        _fold2(x, YT, 0, s, buf, m, _zero, combine)
        j = 2
    else:
        _fold1(x, YT, 0, s, buf, m, _zero, combine)
        j = 1
    while d - j >= 4:
        _fold4(x, YT, j, s, buf, m, _load, combine)
        j += 4
    if d - j >= 2:
        _fold2(x, YT, j, s, buf, m, _load, combine)
        j += 2
    if j < d:
        _fold1(x, YT, j, s, buf, m, _load, combine)


@njit(cache=True, inline="always")
def row_values(X, i, YT, s, e, buf, metric):
    """buf[0:e-s] = pair values between point X[i] and points YT[:, s:e] (canonical order).

    Euclidean squares ``|x - y|``: bit for bit the square of ``x - y``.
    """
    if metric == EUCLIDEAN:
        _row_values(X, i, YT, s, e, buf, _add_square)
    elif metric == MANHATTAN:
        _row_values(X, i, YT, s, e, buf, _add)
    else:
        _row_values(X, i, YT, s, e, buf, _max)


@njit(cache=True, inline="always")
def _gap(x, lo, hi):
    """The canonical lower and upper one-feature terms between ``x`` and ``[lo, hi]``."""
    return max(max(lo - x, x - hi), 0.0), max(x - lo, hi - x)


@njit(cache=True, inline="always")
def _bounds2(XT, j, s, m, b_lo, b_hi, out_min, out_max, start, combine):
    """Fold features ``j, j+1`` into the bounds ``out_*[0:m]`` in one pass (see
    :func:`_fold4`)."""
    lo0 = b_lo[j]
    hi0 = b_hi[j]
    lo1 = b_lo[j + 1]
    hi1 = b_hi[j + 1]
    x0 = XT[j, s : s + m]
    x1 = XT[j + 1, s : s + m]
    for k in range(m):
        g0, f0 = _gap(x0[k], lo0, hi0)
        g1, f1 = _gap(x1[k], lo1, hi1)
        out_min[k] = combine(combine(start(out_min, k), g0), g1)
        out_max[k] = combine(combine(start(out_max, k), f0), f1)


@njit(cache=True, inline="always")
def _bounds1(XT, j, s, m, b_lo, b_hi, out_min, out_max, start, combine):
    """Fold feature ``j`` into the bounds ``out_*[0:m]`` (see :func:`_fold4`)."""
    lo0 = b_lo[j]
    hi0 = b_hi[j]
    x0 = XT[j, s : s + m]
    for k in range(m):
        g0, f0 = _gap(x0[k], lo0, hi0)
        out_min[k] = combine(start(out_min, k), g0)
        out_max[k] = combine(start(out_max, k), f0)


@njit(cache=True, inline="always")
def _points_box_bounds(XT, s, e, b_lo, b_hi, out_min, out_max, combine):
    # Two features per pass, as in :func:`_row_values` (the same operations in order).
    m = e - s
    d = XT.shape[0]
    if d >= 2:
        _bounds2(XT, 0, s, m, b_lo, b_hi, out_min, out_max, _zero, combine)
    else:
        _bounds1(XT, 0, s, m, b_lo, b_hi, out_min, out_max, _zero, combine)
    j = 2
    while d - j >= 2:
        _bounds2(XT, j, s, m, b_lo, b_hi, out_min, out_max, _load, combine)
        j += 2
    if j < d:
        _bounds1(XT, j, s, m, b_lo, b_hi, out_min, out_max, _load, combine)


@njit(cache=True, inline="always")
def points_box_bounds(XT, s, e, b_lo, b_hi, metric, out_min, out_max):
    """Lower and upper bounds of the pair values between points XT[:, s:e] and a box.

    ``b_lo``/``b_hi`` are the box corners (1-D; coordinates of points, so the bounds are
    exact in the sense of :mod:`privad.geometry.predicate`). Writes ``out_*[0:e-s]``.
    """
    if metric == EUCLIDEAN:
        _points_box_bounds(XT, s, e, b_lo, b_hi, out_min, out_max, _add_square)
    elif metric == MANHATTAN:
        _points_box_bounds(XT, s, e, b_lo, b_hi, out_min, out_max, _add)
    else:
        _points_box_bounds(XT, s, e, b_lo, b_hi, out_min, out_max, _max)


@njit(cache=True, inline="always")
def box_of(G, m, lo, hi):
    """Tight box of the first ``m`` columns of the feature-major block ``G``."""
    for j in range(G.shape[0]):
        a = G[j, 0]
        b = a
        for k in range(1, m):
            v = G[j, k]
            a = min(a, v)
            b = max(b, v)
        lo[j] = a
        hi[j] = b


#: Below this many points (queries plus data) the kernels run on one thread: a parallel
#: region costs more than it saves there, especially on a machine shared with other work.
PARALLEL_MIN_POINTS = 8192


def accumulator_rows(n_points: int) -> int:
    """Accumulator rows: one per thread (``numba.get_thread_id()`` in a prange loop is below
    ``numba.get_num_threads()``), or 1 for the serial kernels."""
    threads = int(numba.get_num_threads())
    return threads if threads > 1 and n_points >= PARALLEL_MIN_POINTS else 1
