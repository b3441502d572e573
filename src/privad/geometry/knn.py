"""Compiled (Numba) k-nearest-neighbour search behind ``kth_neighbour_distance``.

Imported on first use only, so ``import privad.geometry`` does not load Numba.

The search is a compiled kd-tree k-nearest-neighbour search (one bounded max-heap per query,
nearest child first, pruning nodes whose box bound is not below the current k-th value),
parallel over query leaves.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from privad.geometry.kdtree import build_tree
from privad.geometry.kernels import accumulator_rows, point_box_bounds, row_values
from privad.geometry.predicate import metric_code

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


def kth_values(X: np.ndarray, k: int, metric: str) -> np.ndarray:
    """The k-th smallest pair value of every row of the validated ``X`` (row order)."""
    tree = build_tree(X, _LEAF_SIZE)
    leaf_max = int((tree.end - tree.start).max())
    values = np.empty(X.shape[0], np.float64)
    leaves = np.flatnonzero(tree.left < 0)
    run = _kth_parallel if accumulator_rows(X.shape[0]) > 1 else _kth_serial
    run(leaves, values, tree.points, tree.points_t, tree.start, tree.end, tree.left, tree.right,
        tree.lo, tree.hi, k, metric_code(metric), leaf_max)  # fmt: skip
    out = np.empty(X.shape[0], np.float64)
    out[tree.perm] = values
    return out
