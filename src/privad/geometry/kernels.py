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
def _row_values(X, i, YT, s, e, buf, combine):
    m = e - s
    for p in range(m):
        buf[p] = 0.0
    for j in range(X.shape[1]):
        x = X[i, j]
        for p in range(m):
            buf[p] = combine(buf[p], abs(x - YT[j, s + p]))


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
def _points_box_bounds(XT, s, e, b_lo, b_hi, out_min, out_max, combine):
    m = e - s
    for j in range(XT.shape[0]):
        lo_j = b_lo[j]
        hi_j = b_hi[j]
        for k in range(m):
            x = XT[j, s + k]
            out_min[k] = combine(out_min[k], max(max(lo_j - x, x - hi_j), 0.0))
            out_max[k] = combine(out_max[k], max(x - lo_j, hi_j - x))


@njit(cache=True, inline="always")
def points_box_bounds(XT, s, e, b_lo, b_hi, metric, out_min, out_max):
    """Lower and upper bounds of the pair values between points XT[:, s:e] and a box.

    ``b_lo``/``b_hi`` are the box corners (1-D; coordinates of points, so the bounds are
    exact in the sense of :mod:`privad.geometry.predicate`). Writes ``out_*[0:e-s]``.
    """
    for k in range(e - s):
        out_min[k] = 0.0
        out_max[k] = 0.0
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
