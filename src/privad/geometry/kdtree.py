"""A compiled kd-tree with leaf-contiguous points and tight bounding boxes.

The tree is built once per call by :func:`build_tree`. Points are reordered so that every
node owns a contiguous range ``[start, end)`` of the reordered arrays; ``perm[i]`` is the
original row of reordered point ``i``. Nodes are split at the median of their widest feature
(quickselect), so the tree is balanced and its depth is about ``log2(n / leaf_size)``;
children always have larger indices than their parent. A node whose points are all
identical is not split further, whatever its size. Within a leaf, points are sorted by the
leaf's widest feature (:func:`widest_feature` of its box, the feature a split would use),
which the leaf kernels sweep along (:mod:`privad.geometry.sweep`). The build moves the
points with their indices in a feature-major copy, so it reads contiguous runs (0.15 s to
0.11 s at 284,807 x 6 on an idle 2-core machine, measured; the same tree).

Each node's box ``[lo, hi]`` is tight: its corners are coordinates of points it holds, which
is what makes the box bounds of :mod:`privad.geometry.predicate` exact.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

#: Default maximum points per leaf (leaves hold between half of it and all of it). Large
#: leaves with exact point-versus-box filtering inside were fastest in 2-12 dimensions.
DEFAULT_LEAF_SIZE = 512


class KDTree(NamedTuple):
    """A built tree: reordered points and per-node arrays (see the module docstring)."""

    perm: np.ndarray  # (n,) int64, original row of each reordered point
    points: np.ndarray  # (n, d) float64, reordered rows
    points_t: np.ndarray  # (d, n) float64, the same points feature-major (vectorised leaves)
    start: np.ndarray  # (m,) int64
    end: np.ndarray  # (m,) int64
    left: np.ndarray  # (m,) int64, -1 for a leaf
    right: np.ndarray  # (m,) int64, -1 for a leaf
    lo: np.ndarray  # (m, d) float64
    hi: np.ndarray  # (m, d) float64

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.start.shape[0])

    def arrays(self) -> tuple:
        """The node arrays in the order the compiled kernels take them."""
        return (self.start, self.end, self.left, self.right, self.lo, self.hi)


@njit(cache=True)
def _bbox(XT, s, e, lo_row, hi_row):
    """Tight box of the points ``XT[:, s:e]`` (contiguous runs: one pass per feature)."""
    for j in range(XT.shape[0]):
        a = XT[j, s]
        b = a
        for i in range(s + 1, e):
            v = XT[j, i]
            if v < a:
                a = v
            elif v > b:
                b = v
        lo_row[j] = a
        hi_row[j] = b


@njit(cache=True)
def widest_feature(lo, hi, node):
    """(feature, width) of the widest side of box ``node`` (the first one on ties)."""
    dim = 0
    best = -1.0
    for j in range(lo.shape[1]):
        w = hi[node, j] - lo[node, j]
        if w > best:
            best = w
            dim = j
    return dim, best


@njit(cache=True, inline="always")
def _swap(moved, i, j):
    """Swap positions ``i`` and ``j`` of ``perm`` and columns ``i`` and ``j`` of ``XT``
    (``moved = (perm, XT)``)."""
    perm, XT = moved
    t = perm[i]
    perm[i] = perm[j]
    perm[j] = t
    for f in range(XT.shape[0]):
        v = XT[f, i]
        XT[f, i] = XT[f, j]
        XT[f, j] = v


@njit(cache=True, inline="always")
def quickselect(key, lo, hi, k, swap, moved):
    """Reorder positions ``lo..hi`` (inclusive) so that position ``k`` holds the k-th
    smallest of ``key`` (Hoare quickselect, median-of-three pivot). Positions are
    exchanged with ``swap(moved, i, j)``, which must swap ``key[i]`` and ``key[j]`` too
    (``key`` may be a view of what ``moved`` holds)."""
    while hi > lo:
        x = key[lo]
        y = key[(lo + hi) // 2]
        z = key[hi]
        pivot = max(min(x, y), min(max(x, y), z))  # the median of the three
        i = lo
        j = hi
        while i <= j:
            while key[i] < pivot:
                i += 1
            while key[j] > pivot:
                j -= 1
            if i <= j:
                swap(moved, i, j)
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return


_GAPS = (701, 301, 132, 57, 23, 10, 4, 1)  # Ciura's shell sort gaps


@njit(cache=True)
def _sort(perm, XT, dim, s, e, order, moved, scratch):
    """Sort positions ``s:e`` of ``perm`` and of the columns of ``XT`` by the key ``XT[dim]``
    (shell sort of the positions, then one gather: a leaf holds at most a few thousand
    points, and it compiles in a fraction of the time ``np.argsort`` takes)."""
    key = XT[dim]
    m = e - s
    for i in range(m):
        order[i] = s + i
    for gap in _GAPS:
        for i in range(gap, m):
            p = order[i]
            v = key[p]
            k = i
            while k >= gap and key[order[k - gap]] > v:
                order[k] = order[k - gap]
                k -= gap
            order[k] = p
    for i in range(m):
        moved[i] = perm[order[i]]
    for i in range(m):
        perm[s + i] = moved[i]
    for f in range(XT.shape[0]):
        row = XT[f]
        for i in range(m):
            scratch[i] = row[order[i]]
        for i in range(m):
            row[s + i] = scratch[i]


@njit(cache=True)
def _build(X, leaf_size):
    """Median splits on the widest feature, depth first. The points are moved with their
    indices in a feature-major working copy, so the selections and boxes read contiguous
    runs instead of gathering rows through ``perm`` (cache misses above the leaves)."""
    n, d = X.shape
    perm = np.arange(n)
    XT = np.ascontiguousarray(X.T)
    min_leaf = max(1, (leaf_size + 1) // 2)
    max_nodes = 2 * (n // min_leaf) + 1
    start = np.empty(max_nodes, np.int64)
    end = np.empty(max_nodes, np.int64)
    left = np.full(max_nodes, -1, np.int64)
    right = np.full(max_nodes, -1, np.int64)
    lo = np.empty((max_nodes, d), np.float64)
    hi = np.empty((max_nodes, d), np.float64)
    order = np.empty(min(n, leaf_size), np.int64)
    moved = np.empty(min(n, leaf_size), np.int64)
    scratch = np.empty(min(n, leaf_size), np.float64)
    start[0] = 0
    end[0] = n
    _bbox(XT, 0, n, lo[0], hi[0])
    n_nodes = 1
    stack = np.empty(256, np.int64)
    stack[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        s = start[node]
        e = end[node]
        dim, best = widest_feature(lo, hi, node)
        if best <= 0.0:
            continue  # all points identical: keep as one leaf (in any order, sorted)
        if e - s <= leaf_size:
            _sort(perm, XT, dim, s, e, order, moved, scratch)
            continue
        mid = (s + e) // 2
        quickselect(XT[dim], s, e - 1, mid, _swap, (perm, XT))
        lc = n_nodes
        rc = n_nodes + 1
        n_nodes += 2
        start[lc] = s
        end[lc] = mid
        start[rc] = mid
        end[rc] = e
        left[node] = lc
        right[node] = rc
        _bbox(XT, s, mid, lo[lc], hi[lc])
        _bbox(XT, mid, e, lo[rc], hi[rc])
        stack[sp] = rc
        stack[sp + 1] = lc
        sp += 2
    return (
        perm,
        np.ascontiguousarray(XT.T),
        XT,
        start[:n_nodes].copy(),
        end[:n_nodes].copy(),
        left[:n_nodes].copy(),
        right[:n_nodes].copy(),
        lo[:n_nodes].copy(),
        hi[:n_nodes].copy(),
    )


def build_tree(X: np.ndarray, leaf_size: int = DEFAULT_LEAF_SIZE) -> KDTree:
    """Build a :class:`KDTree` over the rows of a validated (n, d) float64 array, n >= 1."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    return KDTree(*_build(X, int(leaf_size)))


@njit(cache=True)
def frontier(left, right, target):
    """Nodes of the shallowest complete cut with at least ``target`` nodes (or all leaves).

    Every point lies under exactly one frontier node, so pairs of frontier nodes partition
    the pairs of points; the kernels use them as parallel tasks.
    """
    cur = np.zeros(1, np.int64)
    while cur.shape[0] < target:
        n_next = 0
        for node in cur:
            n_next += 1 if left[node] < 0 else 2
        if n_next == cur.shape[0]:
            break
        nxt = np.empty(n_next, np.int64)
        k = 0
        for node in cur:
            if left[node] < 0:
                nxt[k] = node
                k += 1
            else:
                nxt[k] = left[node]
                nxt[k + 1] = right[node]
                k += 2
        cur = nxt
    return cur
