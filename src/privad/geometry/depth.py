"""An upper bound on the depth of a ball arrangement: the most points any one ball can hold.

For points ``Q`` and a radius ``r``, the *depth* is ``max over every x of #{q in Q :
d(q, x) <= r}``, where ``x`` ranges over the whole space, not only over ``Q`` (Claim 5 of
sensitive privacy needs it with ``x`` a record that may be added to the data). Computing it
exactly is a hard geometric problem; :func:`depth_bound` bounds it from above by branch and
bound over boxes of x-space:

* For a closed box ``B``, ``U(B) = #{q : gap(q, B) <= thr(r)}`` counts the points within
  ``r`` of the box. Every ``x`` in ``B`` holds at most ``U(B)`` points in its ball.
* The search starts from a box holding every ``x`` whose ball holds a point
  (:func:`root_box`), keeps the boxes in a heap by ``U``, and in each of ``rounds`` rounds
  splits the ``per_round`` boxes of largest ``U`` in half along their widest side and
  counts the halves. Halves with ``U <= lower`` (a known lower bound on the depth) are
  dropped: they cannot hold a deeper point than the one already known.
* The answer is the largest ``U`` of the boxes left (or ``lower`` when none is left: then
  the depth is exactly ``lower``). The boxes left cover every ``x`` that could beat
  ``lower``, so the answer is an upper bound; more rounds make it tighter.

Exactness, as computed. ``gap(q, B)`` is the canonical pair value of
:mod:`privad.geometry.predicate` with each feature's difference replaced by how far ``q``
lies outside the box's side, ``max(lo - q, q - hi, 0)``, combined in feature order. For
any ``x`` in ``B``, ``lo <= x`` gives ``fl(lo - q) <= fl(x - q)`` and ``x <= hi`` gives
``fl(q - hi) <= fl(q - x)`` (rounding is monotone), so each term is at most the term of
``v(q, x)`` and, combining monotonically, ``gap(q, B) <= v(q, x)``: every ``q`` that the
predicate puts within ``r`` of ``x`` is counted in ``U(B)``, with no margin needed. The
tree's pruning and whole-node counting use exact bounds of the same floats (a node whose
farthest point's gap is within ``thr`` is counted whole). Splitting at a float ``mid``
between the sides gives two closed halves whose union is the box. No triangle inequality
is used, so the bound needs none of the magnitude checks of Claim 5's 2r bound.

The search is deterministic: the same points, radius and ``lower`` give the same answer on
every engine, since each engine only supplies the counts ``U`` (:func:`box_counts` here,
the Dask engine summing them over partitions) and ties are broken by the order the boxes
were made.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit, prange

from privad.geometry.kdtree import KDTree
from privad.geometry.kernels import (
    PARALLEL_MIN_POINTS,
    _add,
    _add_square,
    _max,
    points_box_lower,
)
from privad.geometry.predicate import EUCLIDEAN, MANHATTAN, metric_code, threshold

__all__ = [
    "PER_ROUND",
    "ROUNDS",
    "box_counts",
    "box_counts_brute",
    "depth_bound",
    "partitioned_box_counts",
    "root_box",
]

#: Rounds of the search and boxes split per round: at most ``1 + 2 * ROUNDS * PER_ROUND``
#: box counts. Chosen by ``benchmarks/bench_claim5_search.py`` (docs/benchmarks.md).
ROUNDS = 128
PER_ROUND = 16

#: The root box reaches at least this far beyond the points, so that a point outside it is
#: farther than ``r`` from every point even where ``r * r`` underflows (see :func:`root_box`).
_MIN_REACH = 2.0**-500


def root_box(lo: np.ndarray, hi: np.ndarray, r: float) -> tuple[np.ndarray, np.ndarray] | None:
    """A box holding every ``x`` within ``r`` of a point whose features lie in ``[lo, hi]``.

    Each side is widened by ``w = max(2r, 2**-500)`` and then by two more floats outwards,
    so that the real distance from the points to the outside of the box exceeds ``w`` in
    spite of rounding. A point ``x`` outside the box has, in some feature, a difference of
    at least ``w`` (a float) from every point, hence a term of at least ``fl(w * w) >
    fl(r * r)`` (euclidean; at least ``w > r`` otherwise): its ball holds none. Returns
    None when the widened box is not finite (a radius near the float64 range).
    """
    w = max(2.0 * float(r), _MIN_REACH)
    with np.errstate(over="ignore", invalid="ignore"):
        blo = np.nextafter(np.nextafter(lo - w, -np.inf), -np.inf)
        bhi = np.nextafter(np.nextafter(hi + w, np.inf), np.inf)
        ok = np.all(np.isfinite(bhi - blo))
    return (blo, bhi) if ok else None


@njit(cache=True, inline="always")
def _node_gaps(lo, hi, nd, blo, bhi, combine):
    """Exact lower and upper bounds of ``gap(p, B)`` over the points ``p`` of node ``nd``."""
    mn = 0.0
    mx = 0.0
    for j in range(lo.shape[1]):
        near = max(max(blo[j] - hi[nd, j], lo[nd, j] - bhi[j]), 0.0)
        far = max(max(blo[j] - lo[nd, j], hi[nd, j] - bhi[j]), 0.0)
        mn = combine(mn, near)
        mx = combine(mx, far)
    return mn, mx


@njit(cache=True, inline="always")
def _node_gap_bounds(lo, hi, nd, blo, bhi, metric):
    if metric == EUCLIDEAN:
        return _node_gaps(lo, hi, nd, blo, bhi, _add_square)
    if metric == MANHATTAN:
        return _node_gaps(lo, hi, nd, blo, bhi, _add)
    return _node_gaps(lo, hi, nd, blo, bhi, _max)


@njit(cache=True)
def _count_box(XT, start, end, left, right, lo, hi, blo, bhi, thr, metric, buf, stack):
    """``#{p : gap(p, [blo, bhi]) <= thr}`` over the tree's points."""
    total = 0
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        nd = stack[top]
        mn, mx = _node_gap_bounds(lo, hi, nd, blo, bhi, metric)
        if mn > thr:
            continue
        s = start[nd]
        e = end[nd]
        if mx <= thr:
            total += e - s
        elif left[nd] < 0:
            points_box_lower(XT, s, e, blo, bhi, metric, buf)
            for p in range(e - s):
                if buf[p] <= thr:
                    total += 1
        else:
            stack[top] = right[nd]
            stack[top + 1] = left[nd]
            top += 2
    return total


@njit(cache=True)
def _count_boxes_serial(XT, start, end, left, right, lo, hi, blos, bhis, thr, metric, leaf):
    out = np.zeros(blos.shape[0], np.int64)
    buf = np.empty(leaf, np.float64)
    stack = np.empty(256, np.int64)
    for b in range(blos.shape[0]):
        out[b] = _count_box(
            XT, start, end, left, right, lo, hi, blos[b], bhis[b], thr, metric, buf, stack
        )
    return out


@njit(cache=True, parallel=True)
def _count_boxes_parallel(XT, start, end, left, right, lo, hi, blos, bhis, thr, metric, leaf):
    out = np.zeros(blos.shape[0], np.int64)
    for b in prange(blos.shape[0]):
        buf = np.empty(leaf, np.float64)
        stack = np.empty(256, np.int64)
        out[b] = _count_box(
            XT, start, end, left, right, lo, hi, blos[b], bhis[b], thr, metric, buf, stack
        )
    return out


def box_counts(
    tree: KDTree, blos: np.ndarray, bhis: np.ndarray, r: float, metric: str
) -> np.ndarray:
    """``U`` of each box ``[blos[b], bhis[b]]``: how many of the tree's points lie within
    ``r`` of it (the exact gap arithmetic of the module docstring). For a point as a box
    (``blos[b] == bhis[b]``) the gaps are the canonical pair values, so this is the ball
    count of that point.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.geometry.kdtree import build_tree
    >>> tree = build_tree(np.array([[0.0], [1.0], [3.0]]))
    >>> box_counts(tree, np.array([[1.5]]), np.array([[2.0]]), 1.0, "euclidean").tolist()
    [2]
    """
    n = tree.points.shape[0]
    leaf = int(np.max(tree.end - tree.start)) if n else 1
    kernel = _count_boxes_parallel if n >= PARALLEL_MIN_POINTS else _count_boxes_serial
    return kernel(
        tree.points_t,
        *tree.arrays(),
        np.ascontiguousarray(blos, dtype=np.float64),
        np.ascontiguousarray(bhis, dtype=np.float64),
        threshold(r, metric),
        metric_code(metric),
        max(leaf, 1),
    )


def box_counts_brute(
    points: np.ndarray, blos: np.ndarray, bhis: np.ndarray, r: float, metric: str
) -> np.ndarray:
    """:func:`box_counts` from every point's gap, without a tree: the test oracle (the same
    floats, :func:`privad.geometry.cells.point_box_bounds`), O(points x boxes).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> box_counts_brute(X, np.array([[1.5]]), np.array([[2.0]]), 1.0, "euclidean").tolist()
    [2]
    """
    from privad.geometry.cells import point_box_bounds

    thr = threshold(r, metric)
    return np.array(
        [
            (point_box_bounds(points, lo, hi, metric)[0] <= thr).sum()
            for lo, hi in zip(blos, bhis, strict=True)
        ],
        dtype=np.int64,
    )


def partitioned_box_counts(
    X: Any, metric: str
) -> tuple[Callable[[np.ndarray, np.ndarray, float], np.ndarray], np.ndarray, np.ndarray]:
    """:func:`box_counts` for points held as a Dask array, as ``count(blos, bhis, r)``, and the
    points' per-feature minimum and maximum (for :func:`root_box`).

    A tree is built once per non-empty block and persisted (on the workers under a
    ``distributed`` client); each call of ``count`` sums the blocks' counts, the same
    integers as one tree over all the points.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> X = da.from_array(np.array([[0.0], [1.0], [3.0]]), chunks=(2, 1))
    >>> count, lo, hi = partitioned_box_counts(X, "euclidean")
    >>> count(np.array([[1.5]]), np.array([[2.0]]), 1.0).tolist(), lo.tolist(), hi.tolist()
    ([2], [0.0], [3.0])
    """
    import dask

    from privad.geometry.kdtree import build_tree

    blocks = [b for b, size in zip(X.to_delayed().ravel(), X.chunks[0], strict=True) if size]
    trees = dask.persist(*[dask.delayed(build_tree)(b) for b in blocks])
    roots = dask.compute(*[dask.delayed(_root_corners)(t) for t in trees])
    lo = np.min([c[0] for c in roots], axis=0)
    hi = np.max([c[1] for c in roots], axis=0)

    def count(blos: np.ndarray, bhis: np.ndarray, r: float) -> np.ndarray:
        task = dask.delayed(_block_box_counts)
        parts = dask.compute(*[task(t, blos, bhis, r, metric, len(trees)) for t in trees])
        return np.sum(parts, axis=0, dtype=np.int64)

    return count, lo, hi


def _block_box_counts(
    tree: KDTree, blos: np.ndarray, bhis: np.ndarray, r: float, metric: str, n_tasks: int
) -> np.ndarray:
    """:func:`box_counts` of one block, on a worker, with its share of Numba's threads (the
    blocks' tasks run side by side, as the Dask engine's counting tasks do)."""
    from privad.geometry.distributed import _numba_threads

    with _numba_threads(n_tasks):
        return box_counts(tree, blos, bhis, r, metric)


def _root_corners(tree: KDTree) -> tuple[np.ndarray, np.ndarray]:
    """The tight box of all a tree's points (its root node's)."""
    return tree.lo[0].copy(), tree.hi[0].copy()


def _split(blo: np.ndarray, bhi: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """The two closed halves of a box along its widest side that a float can split, or
    None when no side can be split (each is one float wide)."""
    widths = bhi - blo
    for j in np.argsort(-widths, kind="stable"):
        mid = blo[j] + 0.5 * widths[j]
        if blo[j] < mid < bhi[j]:
            left_hi = bhi.copy()
            left_hi[j] = mid
            right_lo = blo.copy()
            right_lo[j] = mid
            return blo, left_hi, right_lo, bhi
    return None


def depth_bound(
    count: Callable[[np.ndarray, np.ndarray], np.ndarray],
    box: tuple[np.ndarray, np.ndarray] | None,
    lower: int,
    *,
    rounds: int = ROUNDS,
    per_round: int = PER_ROUND,
    give_up: int | None = None,
) -> int | None:
    """An upper bound on the depth by branch and bound over boxes (module docstring).

    Parameters
    ----------
    count : ``count(blos, bhis)`` → the ``U`` of each box (``(k, d)`` corners, ``(k,)``
        ints), e.g. :func:`box_counts` of a tree, or a sum over partitions.
    box : the root box (:func:`root_box`); None gives None (no bound found).
    lower : a lower bound on the depth (e.g. the largest ball count centred on a point).
    rounds, per_round : the search's effort (module constants by default).
    give_up : optional int
        After ``rounds // 4`` rounds, a search whose bound is still above this stops and
        returns None: where another bound is known (Claim 5's 2r bound), a search that far
        behind it is not worth finishing (sparse data whose boxes stay wide).

    Returns
    -------
    int or None
        ``max(lower, largest U of the boxes left)``, at least the depth; None when there is
        no root box or the search gave up.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.geometry.kdtree import build_tree
    >>> X = np.array([[0.0], [1.0], [1.5], [3.0]])
    >>> tree = build_tree(X)
    >>> count = lambda lo, hi: box_counts(tree, lo, hi, 0.5, "euclidean")
    >>> depth_bound(count, root_box(X.min(0), X.max(0), 0.5), 1)  # x = 1.25 holds 2
    2
    """
    if box is None:
        return None
    lower = int(lower)
    (u,) = count(box[0][None, :], box[1][None, :])
    heap = [(-int(u), 0, box[0], box[1])] if u > lower else []
    made = 1
    final = lower  # the largest U of boxes that cannot be split further
    for done in range(rounds):
        if not heap:
            break
        if give_up is not None and done == rounds // 4 and max(final, -heap[0][0]) > give_up:
            return None
        halves = []
        for _ in range(min(per_round, len(heap))):
            neg_u, _, blo, bhi = heapq.heappop(heap)
            parts = _split(blo, bhi)
            if parts is None:
                final = max(final, -neg_u)
            else:
                halves.append(parts[:2])
                halves.append(parts[2:])
        if not halves:
            continue
        los = np.array([h[0] for h in halves])
        his = np.array([h[1] for h in halves])
        for (blo, bhi), u in zip(halves, count(los, his).tolist(), strict=True):
            if u > lower:
                heapq.heappush(heap, (-u, made, blo, bhi))
            made += 1
    top = -heap[0][0] if heap else lower
    return max(final, top)
