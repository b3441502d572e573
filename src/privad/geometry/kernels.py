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


@njit(cache=True, inline="always")
def box_bounds(alo, ahi, a, blo, bhi, b, metric):
    """(lower, upper) bounds of the pair values between boxes ``a`` and ``b`` (node rows)."""
    d = alo.shape[1]
    mn = 0.0
    mx = 0.0
    if metric == EUCLIDEAN:
        for j in range(d):
            a_lo = alo[a, j]
            a_hi = ahi[a, j]
            b_lo = blo[b, j]
            b_hi = bhi[b, j]
            g = max(max(b_lo - a_hi, a_lo - b_hi), 0.0)
            big = max(a_hi - b_lo, b_hi - a_lo)
            mn = mn + g * g
            mx = mx + big * big
    elif metric == MANHATTAN:
        for j in range(d):
            a_lo = alo[a, j]
            a_hi = ahi[a, j]
            b_lo = blo[b, j]
            b_hi = bhi[b, j]
            mn = mn + max(max(b_lo - a_hi, a_lo - b_hi), 0.0)
            mx = mx + max(a_hi - b_lo, b_hi - a_lo)
    else:
        for j in range(d):
            a_lo = alo[a, j]
            a_hi = ahi[a, j]
            b_lo = blo[b, j]
            b_hi = bhi[b, j]
            mn = max(mn, max(max(b_lo - a_hi, a_lo - b_hi), 0.0))
            mx = max(mx, max(a_hi - b_lo, b_hi - a_lo))
    return mn, mx


@njit(cache=True, inline="always")
def point_box_bounds(X, i, blo, bhi, b, metric):
    """(lower, upper) bounds of the pair values between point ``X[i]`` and box ``b``."""
    d = X.shape[1]
    mn = 0.0
    mx = 0.0
    if metric == EUCLIDEAN:
        for j in range(d):
            x = X[i, j]
            b_lo = blo[b, j]
            b_hi = bhi[b, j]
            g = max(max(b_lo - x, x - b_hi), 0.0)
            big = max(x - b_lo, b_hi - x)
            mn = mn + g * g
            mx = mx + big * big
    elif metric == MANHATTAN:
        for j in range(d):
            x = X[i, j]
            b_lo = blo[b, j]
            b_hi = bhi[b, j]
            mn = mn + max(max(b_lo - x, x - b_hi), 0.0)
            mx = mx + max(x - b_lo, b_hi - x)
    else:
        for j in range(d):
            x = X[i, j]
            b_lo = blo[b, j]
            b_hi = bhi[b, j]
            mn = max(mn, max(max(b_lo - x, x - b_hi), 0.0))
            mx = max(mx, max(x - b_lo, b_hi - x))
    return mn, mx


@njit(cache=True, inline="always")
def row_values(X, i, YT, s, e, buf, metric):
    """buf[0:e-s] = pair values between point X[i] and points YT[:, s:e] (canonical order)."""
    d = X.shape[1]
    m = e - s
    if metric == EUCLIDEAN:
        for p in range(m):
            buf[p] = 0.0
        for j in range(d):
            x = X[i, j]
            for p in range(m):
                t = x - YT[j, s + p]
                buf[p] = buf[p] + t * t
    elif metric == MANHATTAN:
        for p in range(m):
            buf[p] = 0.0
        for j in range(d):
            x = X[i, j]
            for p in range(m):
                buf[p] = buf[p] + abs(x - YT[j, s + p])
    else:
        for p in range(m):
            buf[p] = 0.0
        for j in range(d):
            x = X[i, j]
            for p in range(m):
                buf[p] = max(buf[p], abs(x - YT[j, s + p]))


@njit(cache=True, inline="always")
def points_box_bounds(XT, s, e, b_lo, b_hi, metric, out_min, out_max):
    """Lower and upper bounds of the pair values between points XT[:, s:e] and a box.

    ``b_lo``/``b_hi`` are the box corners (1-D; coordinates of points, so the bounds are
    exact in the sense of :mod:`privad.geometry.predicate`). Writes ``out_*[0:e-s]``.
    """
    d = XT.shape[0]
    m = e - s
    for k in range(m):
        out_min[k] = 0.0
        out_max[k] = 0.0
    if metric == EUCLIDEAN:
        for j in range(d):
            lo_j = b_lo[j]
            hi_j = b_hi[j]
            for k in range(m):
                x = XT[j, s + k]
                g = max(max(lo_j - x, x - hi_j), 0.0)
                big = max(x - lo_j, hi_j - x)
                out_min[k] = out_min[k] + g * g
                out_max[k] = out_max[k] + big * big
    elif metric == MANHATTAN:
        for j in range(d):
            lo_j = b_lo[j]
            hi_j = b_hi[j]
            for k in range(m):
                x = XT[j, s + k]
                out_min[k] = out_min[k] + max(max(lo_j - x, x - hi_j), 0.0)
                out_max[k] = out_max[k] + max(x - lo_j, hi_j - x)
    else:
        for j in range(d):
            lo_j = b_lo[j]
            hi_j = b_hi[j]
            for k in range(m):
                x = XT[j, s + k]
                out_min[k] = max(out_min[k], max(max(lo_j - x, x - hi_j), 0.0))
                out_max[k] = max(out_max[k], max(x - lo_j, hi_j - x))


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
