"""Compiled (Numba) k-th neighbour values behind ``kth_neighbour_distance``.

Imported on first use only, so ``import privad.geometry`` does not load Numba.

Algorithm (exact; every value is a canonical pair value of :mod:`privad.geometry.predicate`)
-----------------------------------------------------------------------------------------
A max-heap k-nearest search per record (cKDTree's method) pushes most of the ~k points it
meets through a heap of size k. Instead, per record q:

1. **Estimate**: ``t`` = the j-th smallest value between q and a sample S of every s-th
   record (in kd-tree order, so spread over space), found by the heap search in S, which
   is s times smaller and needs only j ~ k / s + 4 sqrt(k / s) neighbours. About ``s j``
   records lie within ``t`` of q: at least k unless the sample is off by four standard
   deviations.
2. **Collect and select**: every value ``v(q, p) <= t`` over the records p (a range search
   of the kd-tree), then the k-th smallest of them by quickselect. The range search runs
   for all the records of one leaf at once (:func:`_collect_group`): data nodes too far
   from the leaf's box are skipped, and each data leaf left is compared with every record
   of the query leaf whose own bound admits it while its points are in cache.

If at least k values are ``<= t``, the k-th smallest of them is the k-th smallest of all
values (every value left out is larger than ``t``): exact, whatever the estimate. If fewer
than k are (rare), the record falls back to the heap search over all records; one whose
values overflow its row of the shared buffer (rare) is collected again on its own. With
``s = 1`` (small data, or k close to n) step 1 alone is the exact heap search.

Work is split into chunks of leaves in tree order (nearby records: warm caches), run in
parallel above :data:`privad.geometry.kernels.PARALLEL_MIN_POINTS` records.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from privad.geometry.kdtree import build_tree, quickselect
from privad.geometry.kernels import (
    accumulator_rows,
    box_bounds,
    point_box_bounds,
    points_box_lower,
    row_values,
)
from privad.geometry.predicate import metric_code

#: Leaf size of both kd-trees (measured: 64 beat 32 and 128 at 284,807 x 6, k = 1,425).
_LEAF_SIZE = 64
#: Sample stride s: records per sampled record.
_STRIDE = 16
#: Stack depth of the tree walks (the trees are balanced: depth ~ log2(n / 16)).
_STACK = 256


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
def _kth_one(X, i, tree, k, metric, heap, buf, st_node, st_bound):
    """k-th smallest pair value between point i and all points of ``tree`` (the node
    arrays and the points, feature-major: ``(start, end, left, right, lo, hi, XT)``).

    A max-heap holds the k smallest values seen; nodes are searched depth first, nearer
    child first, and skipped when their box bound is not below the heap's top (their points
    cannot change the k-th smallest value).
    """
    start, end, left, right, lo, hi, XT = tree
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


@njit(cache=True, inline="always")
def _expand(st_node, sp, left, right, node, admitted):
    """One step of a depth-first walk down the tree from the node just popped: an inner
    ``node`` that the bound ``admitted`` pushes its children (left on top); returns the new
    stack size and whether ``node`` is an admitted leaf, whose points the caller reads."""
    if not admitted:
        return sp, False
    if left[node] >= 0:
        st_node[sp] = right[node]
        st_node[sp + 1] = left[node]
        return sp + 2, False
    return sp, True


@njit(cache=True)
def _collect(X, i, tree, thr, metric, out, buf, st_node):
    """Write every pair value ``<= thr`` between point ``X[i]`` and the points of ``tree``
    (as for :func:`_kth_one`) into ``out`` (capacity: all points); returns how many."""
    start, end, left, right, lo, hi, XT = tree
    m = 0
    sp = 1
    st_node[0] = 0
    while sp > 0:
        sp, node = sp - 1, st_node[sp - 1]
        mn, _ = point_box_bounds(X, i, lo, hi, node, metric)
        sp, at_leaf = _expand(st_node, sp, left, right, node, mn <= thr)
        if not at_leaf:
            continue
        s = start[node]
        e = end[node]
        row_values(X, i, XT, s, e, buf, metric)
        for p in range(e - s):  # branch-free append: out[m] is overwritten unless v <= thr
            v = buf[p]
            out[m] = v
            m += v <= thr
    return m


@njit(cache=True, inline="always")
def _swap_values(a, i, j):
    a[i], a[j] = a[j], a[i]


@njit(cache=True)
def _select(a, m, k):
    """The k-th smallest (1-based) of ``a[:m]``, reordering it (:func:`quickselect`)."""
    quickselect(a, 0, m - 1, k - 1, _swap_values, a)
    return a[k - 1]


@njit(cache=True)
def _collect_group(Q, leaf, full, t, metric, vals, count, buf, bmin, st_node):
    """:func:`_collect` for the points ``Q[gs:ge]`` of one leaf at once (thresholds ``t``).

    Data nodes are pruned by the box bound between them and the query leaf's box against
    the largest threshold; each data leaf left is compared with every query whose own
    point-box bound admits it (the bounds of all the leaf's queries in one vectorised pass),
    while the data leaf's points are in cache. Row ``g`` of ``vals`` receives query
    ``gs + g``'s values ``<= t[g]`` and ``count[g]`` how many; a row that would overflow
    stops receiving values and gets ``count[g] = -1``.
    """
    start, end, left, right, lo, hi, XT = full
    gs = start[leaf]
    ge = end[leaf]
    cap = vals.shape[1]
    tmax = 0.0
    for g in range(ge - gs):
        count[g] = 0
        tmax = max(tmax, t[g])
    sp = 1
    st_node[0] = 0
    while sp > 0:
        sp, node = sp - 1, st_node[sp - 1]
        mn, _ = box_bounds(lo, hi, leaf, lo, hi, node, metric)
        sp, at_leaf = _expand(st_node, sp, left, right, node, mn <= tmax)
        if not at_leaf:
            continue
        s = start[node]
        e = end[node]
        points_box_lower(XT, gs, ge, lo[node], hi[node], metric, bmin)
        for g in range(ge - gs):
            m = count[g]
            thr = t[g]
            if m < 0 or bmin[g] > thr:
                continue
            if m + e - s > cap:
                count[g] = -1
                continue
            row_values(Q, gs + g, XT, s, e, buf, metric)
            row = vals[g]
            for p in range(e - s):  # branch-free append: row[m] is overwritten unless v <= thr
                v = buf[p]
                row[m] = v
                m += v <= thr
            count[g] = m


@njit(cache=True)
def _kth_leaves(l0, l1, leaves, full, sample, k, j, metric, out, leaf_max, capacity):
    """k-th smallest values of the points of the leaves ``leaves[l0:l1]`` of the full tree
    (see the module docstring)."""
    Q = full[0]
    n = Q.shape[0]
    ftree = full[1:]
    f_start, f_end = ftree[0], ftree[1]
    s_pts_t = sample[6]
    heap = np.empty(max(k, j), np.float64)
    buf = np.empty(leaf_max, np.float64)
    st_node = np.empty(_STACK, np.int64)
    st_bound = np.empty(_STACK, np.float64)
    exact = s_pts_t.shape[1] == n and j == k  # the "sample" is every record
    rows = 0 if exact else leaf_max
    vals = np.empty((rows, capacity), np.float64)
    count = np.empty(rows, np.int64)
    t = np.empty(rows, np.float64)
    bmin = np.empty(rows, np.float64)
    big = np.empty(0, np.float64)  # n + 1 values, allocated when a row overflows
    for leaf in leaves[l0:l1]:
        gs = f_start[leaf]
        ge = f_end[leaf]
        for i in range(gs, ge):
            out[i] = _kth_one(
                Q,
                i,
                sample,
                j,
                metric,
                heap,
                buf,
                st_node,
                st_bound,
            )
        if exact:
            continue
        for i in range(gs, ge):
            t[i - gs] = out[i]
        _collect_group(Q, leaf, ftree, t, metric, vals, count, buf, bmin, st_node)
        for i in range(gs, ge):
            m = count[i - gs]
            row = vals[i - gs]
            if m < 0:  # more values than a row holds: collect this record alone
                if big.shape[0] == 0:
                    big = np.empty(n + 1, np.float64)
                m = _collect(
                    Q,
                    i,
                    ftree,
                    out[i],
                    metric,
                    big,
                    buf,
                    st_node,
                )
                row = big
            if m >= k:
                out[i] = _select(row, m, k)
            else:  # the estimate held fewer than k records: search all of them
                out[i] = _kth_one(
                    Q,
                    i,
                    ftree,
                    k,
                    metric,
                    heap,
                    buf,
                    st_node,
                    st_bound,
                )


@njit(cache=True, parallel=True)
def _kth_parallel(bounds, leaves, full, sample, k, j, metric, out, leaf_max, capacity):
    for c in prange(bounds.shape[0] - 1):
        _kth_leaves(
            bounds[c], bounds[c + 1], leaves, full, sample, k, j, metric, out, leaf_max, capacity
        )


@njit(cache=True)
def _kth_serial(bounds, leaves, full, sample, k, j, metric, out, leaf_max, capacity):
    _kth_leaves(bounds[0], bounds[-1], leaves, full, sample, k, j, metric, out, leaf_max, capacity)


def _stride(n: int, k: int) -> int:
    """Sample stride s <= 16 keeping >= 64 neighbours in the sample (s = 1: the exact heap
    search alone, for small k or k close to n)."""
    return max(1, min(_STRIDE, k // 64, n // (4 * k)))


def _sample_size(k: int, s: int, n_sample: int) -> int:
    """j: k / s plus four standard deviations of the sampled count (j = k for s = 1)."""
    if s == 1:
        return k
    kk = k / s
    return min(n_sample, math.ceil(kk + 4.0 * math.sqrt(kk) + 4.0))


def _capacity(n: int, s: int, j: int, leaf_max: int) -> int:
    """Values one record's row holds in :func:`_collect_group`: twice the ~s j expected
    (records beyond it are collected alone)."""
    return min(n, 2 * s * j) + leaf_max


def _leaf_max(tree) -> int:  # noqa: ANN001
    return int((tree.end - tree.start)[tree.left < 0].max())


def _arrays(tree) -> tuple:  # noqa: ANN001
    return (tree.start, tree.end, tree.left, tree.right, tree.lo, tree.hi, tree.points_t)


def kth_values(X: np.ndarray, k: int, metric: str) -> np.ndarray:
    """The k-th smallest pair value of every row of the validated ``X`` (row order)."""
    n = X.shape[0]
    full = build_tree(X, _LEAF_SIZE)
    s = _stride(n, k)
    sample = full if s == 1 else build_tree(full.points[::s], _LEAF_SIZE)
    j = _sample_size(k, s, sample.points.shape[0])
    leaf_max = max(_leaf_max(full), _leaf_max(sample))
    values = np.empty(n, np.float64)
    leaves = np.flatnonzero(full.left < 0)
    leaves = leaves[np.argsort(full.start[leaves])]  # in tree order: nearby records together
    args = (
        leaves,
        (full.points, *_arrays(full)),
        _arrays(sample),
        k,
        j,
        metric_code(metric),
        values,
        leaf_max,
        _capacity(n, s, j, leaf_max),
    )
    if accumulator_rows(n) > 1:
        _kth_parallel(np.linspace(0, leaves.shape[0], 64 * 4 + 1).astype(np.int64), *args)
    else:
        _kth_serial(np.array([0, leaves.shape[0]], np.int64), *args)
    out = np.empty(n, np.float64)
    out[full.perm] = values
    return out
