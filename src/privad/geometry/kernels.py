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
def _passes(YT, s, m, out, combine, term, u, v):
    """``out[p]`` = the terms ``term(YT[j, s + p], u[j], v[j])`` combined in feature order from
    0.0, for ``p < m``: the loop behind every per-point kernel below.

    Two features per pass over ``out``: half the loads and stores of one per pass (pair
    values of 36 points x 6 features: 1.95 ns each before, 1.3-1.8 ns after; a noisy
    microbenchmark). Each value still combines its terms one by one,
    in order, so the floats are those of one feature per pass.
    """
    d = YT.shape[0]
    j = d % 2
    if j == 1:
        for p in range(m):
            out[p] = combine(0.0, term(YT[0, s + p], u[0], v[0]))
    else:
        for p in range(m):
            out[p] = 0.0
    while j < d:
        u0 = u[j]
        v0 = v[j]
        u1 = u[j + 1]
        v1 = v[j + 1]
        for p in range(m):
            out[p] = combine(
                combine(out[p], term(YT[j, s + p], u0, v0)), term(YT[j + 1, s + p], u1, v1)
            )
        j += 2


@njit(cache=True, inline="always")
def _difference(y, x, _unused):
    return abs(x - y)


@njit(cache=True, inline="always")
def _gap(x, lo, hi):
    """How far ``x`` lies outside ``[lo, hi]`` (0 inside): the lower bound's term."""
    return max(max(lo - x, x - hi), 0.0)


@njit(cache=True, inline="always")
def _reach(x, lo, hi):
    """How far ``x`` lies from the farther end of ``[lo, hi]``: the upper bound's term."""
    return max(x - lo, hi - x)


@njit(cache=True, inline="always")
def _metric_passes(YT, s, m, out, metric, term, u, v):
    """:func:`_passes` with the combining step of ``metric``."""
    if metric == EUCLIDEAN:
        _passes(YT, s, m, out, _add_square, term, u, v)
    elif metric == MANHATTAN:
        _passes(YT, s, m, out, _add, term, u, v)
    else:
        _passes(YT, s, m, out, _max, term, u, v)


@njit(cache=True, inline="always")
def row_values(X, i, YT, s, e, buf, metric):
    """buf[0:e-s] = pair values between point X[i] and points YT[:, s:e] (canonical order).

    Euclidean squares ``|x - y|``: bit for bit the square of ``x - y``.
    """
    x = X[i]
    _metric_passes(YT, s, e - s, buf, metric, _difference, x, x)


@njit(cache=True, inline="always")
def points_box_bounds(XT, s, e, b_lo, b_hi, metric, out_min, out_max):
    """Lower and upper bounds of the pair values between points XT[:, s:e] and a box.

    ``b_lo``/``b_hi`` are the box corners (1-D; coordinates of points, so the bounds are
    exact in the sense of :mod:`privad.geometry.predicate`). Writes ``out_*[0:e-s]``.
    """
    _metric_passes(XT, s, e - s, out_min, metric, _gap, b_lo, b_hi)
    _metric_passes(XT, s, e - s, out_max, metric, _reach, b_lo, b_hi)


@njit(cache=True, inline="always")
def points_box_lower(XT, s, e, b_lo, b_hi, metric, out_min):
    """The lower bounds of :func:`points_box_bounds` alone (the same floats), for callers
    that only prune: half the work."""
    _metric_passes(XT, s, e - s, out_min, metric, _gap, b_lo, b_hi)


@njit(cache=True, inline="always")
def _half_reach(b_lo, b_hi, combine):
    v = 0.0
    for j in range(b_lo.shape[0]):
        v = combine(v, 0.5 * (b_hi[j] - b_lo[j]))
    return v


@njit(cache=True, inline="always")
def may_reach_all(b_lo, b_hi, thr, metric):
    """Whether some point may be within ``thr`` of every point of the box ``[b_lo, b_hi]``.

    No point can be when the half-sides alone combine above ``thr``: on each feature a point
    is at least half the side away from one end of the box. A margin of 1e-9 covers
    rounding. This only decides whether computing upper bounds is worth it: a caller that
    skips them compares the points one by one instead, with the same result.
    """
    if metric == EUCLIDEAN:
        v = _half_reach(b_lo, b_hi, _add_square)
    elif metric == MANHATTAN:
        v = _half_reach(b_lo, b_hi, _add)
    else:
        v = _half_reach(b_lo, b_hi, _max)
    return v <= thr * (1.0 + 1e-9)


@njit(cache=True, inline="always")
def sorting_out_bounds(XT, s, e, b_lo, b_hi, thr, metric, bmin, bmax):
    """Bounds of the points ``XT[:, s:e]`` against a box for sorting them out: lower ones in
    ``bmin``, upper ones in ``bmax`` only where a point may reach the whole box
    (:func:`may_reach_all`); returns whether they were computed."""
    if may_reach_all(b_lo, b_hi, thr, metric):
        points_box_bounds(XT, s, e, b_lo, b_hi, metric, bmin, bmax)
        return True
    points_box_lower(XT, s, e, b_lo, b_hi, metric, bmin)
    return False


@njit(cache=True, inline="always")
def gather_box(XT, idx, m, G, lo, hi):
    """Gather the columns ``idx[:m]`` of the feature-major ``XT`` into the first ``m``
    columns of ``G`` and write their tight box to ``lo`` and ``hi``."""
    for j in range(G.shape[0]):
        for k in range(m):
            G[j, k] = XT[j, idx[k]]
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
