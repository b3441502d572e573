"""k-th nearest-neighbour distances, exact under the canonical predicate.

Convention: a record is its own first nearest neighbour (distance 0), and duplicates count
one by one, just as the ball count B_x(i, r) of Def. 2.2 counts the record itself and each
copy. With that convention, for every record i and every radius r >= 0 (float64)::

    kth_neighbour_distance(data, k)[i] <= r   if and only if   ball_counts(data, r)[i] >= k

exactly, including ties and points at distance exactly r (the euclidean value is the
smallest float64 radius whose canonical threshold ``r * r`` admits the k-th neighbour; see
:func:`privad.geometry.predicate.radius_from_value`). Hence record i is a (beta, r)-anomaly
(B_x(i, r) <= beta) exactly when its (beta + 1)-th neighbour distance is > r.

The search is a compiled kd-tree k-nearest-neighbour search (one bounded max-heap per query,
nearest child first, pruning nodes whose box bound is not below the current k-th value),
parallel over query leaves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from privad.geometry.kdtree import build_tree
from privad.geometry.kernels import accumulator_rows, point_box_bounds, row_values
from privad.geometry.predicate import (
    METRICS,
    check_magnitudes,
    metric_code,
    radius_from_value,
)
from privad.validation import check_array, check_choice, check_int

_LEAF_SIZE = 64


@njit(cache=True)
def _sift_down(heap, size, pos):
    v = heap[pos]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and heap[c + 1] > heap[c]:
            c += 1
        if heap[c] <= v:
            break
        heap[pos] = heap[c]
        pos = c
    heap[pos] = v


@njit(cache=True)
def _sift_up(heap, pos):
    v = heap[pos]
    while pos > 0:
        parent = (pos - 1) // 2
        if heap[parent] >= v:
            break
        heap[pos] = heap[parent]
        pos = parent
    heap[pos] = v


@njit(cache=True)
def _kth_one(X, i, XT, start, end, left, right, lo, hi, k, metric, heap, buf, st_node, st_bound):
    """k-th smallest pair value between point i and all points.

    A max-heap holds the k smallest values seen; nodes are searched depth first, nearer
    child first, and skipped when their box bound is not below the heap's top (their points
    cannot change the k-th smallest value).
    """
    size = 0
    sp = 1
    st_node[0] = 0
    st_bound[0] = 0.0
    while sp > 0:
        sp -= 1
        node = st_node[sp]
        if size == k and st_bound[sp] >= heap[0]:
            continue
        if left[node] < 0:
            s = start[node]
            e = end[node]
            row_values(X, i, XT, s, e, buf, metric)
            for p in range(e - s):
                v = buf[p]
                if size < k:
                    heap[size] = v
                    _sift_up(heap, size)
                    size += 1
                elif v < heap[0]:
                    heap[0] = v
                    _sift_down(heap, size, 0)
            continue
        lc = left[node]
        rc = right[node]
        ml, _ = point_box_bounds(X, i, lo, hi, lc, metric)
        mr, _ = point_box_bounds(X, i, lo, hi, rc, metric)
        # push the farther child first so the nearer one is searched first
        if ml <= mr:
            st_node[sp] = rc
            st_bound[sp] = mr
            st_node[sp + 1] = lc
            st_bound[sp + 1] = ml
        else:
            st_node[sp] = lc
            st_bound[sp] = ml
            st_node[sp + 1] = rc
            st_bound[sp + 1] = mr
        sp += 2
    return heap[0]


@njit(cache=True)
def _kth_leaf(node, out, X, XT, start, end, left, right, lo, hi, k, metric, leaf_max):
    heap = np.empty(k, np.float64)
    buf = np.empty(leaf_max, np.float64)
    st_node = np.empty(256, np.int64)
    st_bound = np.empty(256, np.float64)
    for i in range(start[node], end[node]):
        out[i] = _kth_one(X, i, XT, start, end, left, right, lo, hi, k, metric,
                          heap, buf, st_node, st_bound)  # fmt: skip


@njit(cache=True, parallel=True)
def _kth_parallel(leaves, out, X, XT, start, end, left, right, lo, hi, k, metric, leaf_max):
    for t in prange(leaves.shape[0]):
        _kth_leaf(leaves[t], out, X, XT, start, end, left, right, lo, hi, k, metric, leaf_max)


@njit(cache=True)
def _kth_serial(leaves, out, X, XT, start, end, left, right, lo, hi, k, metric, leaf_max):
    for t in range(leaves.shape[0]):
        _kth_leaf(leaves[t], out, X, XT, start, end, left, right, lo, hi, k, metric, leaf_max)


def kth_neighbour_distance(data: Any, k: int, *, metric: str = "euclidean") -> np.ndarray:
    """Distance from each record of ``data`` to its k-th nearest record, itself counted first.

    ``k = 1`` gives 0 for every record (the record itself); ``k = 2`` the distance to the
    nearest other record (0 if it has a duplicate). The defining property, exact in float64
    under the canonical predicate of :mod:`privad.geometry.predicate`::

        kth_neighbour_distance(data, k)[i] <= r  <=>  ball_counts(data, r)[i] >= k

    so a record is a (beta, r)-anomaly of Def. 2.2 iff its (beta + 1)-th distance exceeds r.

    Parameters
    ----------
    data:
        (n, d) array of finite numbers, n >= 1.
    k:
        Integer, 1 <= k <= n.
    metric:
        ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.

    Returns
    -------
    numpy.ndarray
        (n,) float64 distances, in the order of the rows of ``data``.

    Raises
    ------
    privad.errors.PrivadError
        ``DataError`` for malformed data (also data whose distances float64 cannot hold:
        :func:`privad.geometry.predicate.check_magnitudes`), ``ParameterError`` for ``k``
        or ``metric``.
    """
    X = check_array(data, "data")
    check_choice(metric, "metric", METRICS)
    k = check_int(k, "k", minimum=1, maximum=X.shape[0])
    check_magnitudes([X], metric)
    tree = build_tree(X, _LEAF_SIZE)
    leaf_max = int((tree.end - tree.start).max())
    values = np.empty(X.shape[0], np.float64)
    leaves = np.flatnonzero(tree.left < 0)
    run = _kth_parallel if accumulator_rows(X.shape[0]) > 1 else _kth_serial
    run(leaves, values, tree.points, tree.points_t, tree.start, tree.end, tree.left, tree.right,
        tree.lo, tree.hi, k, metric_code(metric), leaf_max)  # fmt: skip
    out = np.empty(X.shape[0], np.float64)
    out[tree.perm] = radius_from_value(values, metric)
    return out
