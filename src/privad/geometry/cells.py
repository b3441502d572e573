"""Spatial partitioning for the Dask engine: cells, exact cell relevance, blocks and tasks.

Everything here runs on the driver, on a small weighted sample of the records (the summary
pass of :mod:`privad.geometry.distributed`), in plain NumPy.

* :func:`build_top_tree` cuts space into ``K`` cells with a k-d tree over the sample: the
  heaviest cell is split at the weighted median of the feature, among those that split it
  evenly enough, whose split plane has the least sample weight within ``r`` (the records
  that would have to be copied across it), until there are ``K`` cells. A cell is a region
  box; a record goes left when its coordinate is ``< value``. Cells whose sample rows are
  all identical cannot be split.
* :func:`relevance` says which cells can hold a pair within ``r``, from lower bounds of
  the canonical pair values between region boxes (exact, so no pair within ``r`` is ever
  missed; see :mod:`privad.geometry.predicate`).
* :class:`Layout` cuts every cell that the sample says is too large into blocks by row
  number; :func:`plan_tasks` packs, for every query block, the data blocks of the relevant
  cells into groups of bounded size: one counting task per (query block, group).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from privad.geometry.predicate import _combine

#: A split is *even* when each side holds at least this share of the cell's weight.
EVEN_SHARE = 0.25


def term(gap: np.ndarray, metric: str) -> np.ndarray:
    """The canonical one-feature term of non-negative gaps: ``gap * gap`` or ``gap``."""
    gap = np.asarray(gap, dtype=np.float64)
    return gap * gap if metric == "euclidean" else gap


def point_box_bounds(
    rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """Exact lower and upper bounds of the pair values between each row and a box.

    The float64 operations, in order, of the compiled ``kernels.points_box_bounds``: per
    feature the gap ``max(lo - y, y - hi, 0)`` and the reach ``max(y - lo, hi - y)``,
    combined in feature order. By monotone rounding, for every point ``x`` in the box
    ``lower <= v(x, y)``, and ``v(x, y) <= upper``. Infinite box sides are allowed (the
    lower bound stays exact; the upper bound is then ``inf``).
    """
    mn = np.zeros(rows.shape[0])
    mx = np.zeros(rows.shape[0])
    for j in range(rows.shape[1]):
        y = rows[:, j]
        mn = _combine(mn, np.maximum(np.maximum(lo[j] - y, y - hi[j]), 0.0), metric)
        mx = _combine(mx, np.maximum(y - lo[j], hi[j] - y), metric)
    return mn, mx


@dataclass(frozen=True, eq=False)
class TopTree:
    """A k-d tree whose leaves are the cells (node arrays; children after parents)."""

    feature: np.ndarray  # (nodes,) int64 split feature, -1 for a leaf
    value: np.ndarray  # (nodes,) float64: left if x[feature] < value, else right
    left: np.ndarray  # (nodes,) int64
    right: np.ndarray  # (nodes,) int64
    cell: np.ndarray  # (nodes,) int64 cell of a leaf, -1 for inner nodes
    lo: np.ndarray  # (K, d) region box of each cell (-inf / inf at the outside)
    hi: np.ndarray  # (K, d)

    @property
    def n_cells(self) -> int:
        """Number of cells K."""
        return int(self.lo.shape[0])

    def cells_of(self, X: np.ndarray) -> np.ndarray:
        """The cell of every row of ``X`` (n, d): int64 (n,)."""
        node = np.zeros(X.shape[0], np.int64)
        active = np.flatnonzero(self.feature[node] >= 0)
        while active.size:
            nd = node[active]
            right = X[active, self.feature[nd]] >= self.value[nd]
            node[active] = np.where(right, self.right[nd], self.left[nd])
            active = active[self.feature[node[active]] >= 0]
        return self.cell[node]


def _best_split(x: np.ndarray, w: np.ndarray, r: float) -> tuple[int, float] | None:
    """(feature, value) of the split of a cell's sample, or ``None`` if all rows are equal."""
    total = w.sum()
    best, best_key = None, None
    for j in range(x.shape[1]):
        order = np.argsort(x[:, j], kind="stable")
        v = x[order, j]
        if v[0] == v[-1]:
            continue
        cw = np.concatenate([[0.0], np.cumsum(w[order])])
        value = v[min(int(np.searchsorted(cw[1:], total / 2, side="left")), v.shape[0] - 1)]
        if value == v[0]:  # the median is the minimum: split above it
            value = v[int(np.searchsorted(v, value, side="right"))]
        left = cw[int(np.searchsorted(v, value, side="left"))]
        share = min(left, total - left) / total
        near = (
            cw[np.searchsorted(v, value + r, side="right")]
            - cw[np.searchsorted(v, value - r, side="left")]
        ) / total
        even = share >= EVEN_SHARE
        key = (not even, near if even else -share, -(v[-1] - v[0]))
        if best_key is None or key < best_key:
            best, best_key = (j, float(value)), key
    return best


def build_top_tree(sample: np.ndarray, weights: np.ndarray, k: int, r: float) -> TopTree:
    """Up to ``k`` cells from a weighted sample (rows of the records, weights >= 0)."""
    d = sample.shape[1]
    feature, value, left, right = [-1], [np.nan], [-1], [-1]
    lo, hi, rows = [np.full(d, -np.inf)], [np.full(d, np.inf)], [np.arange(sample.shape[0])]
    heap = [(-float(weights.sum()), 0)]
    leaves = 1
    while leaves < k and heap:
        _, node = heapq.heappop(heap)
        idx = rows[node]
        split = _best_split(sample[idx], weights[idx], r) if idx.shape[0] > 1 else None
        if split is None:
            continue
        f, v = split
        go = sample[idx, f] >= v
        feature[node], value[node] = f, v
        for side, mask in ((left, ~go), (right, go)):
            child = len(feature)
            side[node] = child
            feature.append(-1)
            value.append(np.nan)
            left.append(-1)
            right.append(-1)
            c_lo, c_hi = lo[node].copy(), hi[node].copy()
            if side is left:
                c_hi[f] = v
            else:
                c_lo[f] = v
            lo.append(c_lo)
            hi.append(c_hi)
            rows.append(idx[mask])
            heapq.heappush(heap, (-float(weights[idx[mask]].sum()), child))
        leaves += 1
    feature_a = np.array(feature, np.int64)
    is_leaf = feature_a < 0
    cell = np.full(feature_a.shape[0], -1, np.int64)
    cell[is_leaf] = np.arange(int(is_leaf.sum()))
    leaf_nodes = np.flatnonzero(is_leaf)
    return TopTree(
        feature=feature_a,
        value=np.array(value, np.float64),
        left=np.array(left, np.int64),
        right=np.array(right, np.int64),
        cell=cell,
        lo=np.array(lo)[leaf_nodes],
        hi=np.array(hi)[leaf_nodes],
    )


def relevance(tree: TopTree, thr: float, metric: str) -> np.ndarray:
    """(K, K) booleans: can a record of cell j be within ``r`` of a record of cell k?

    Per feature the gap between the region boxes, ``max(lo_j - hi_k, lo_k - hi_j, 0)``,
    bounds ``|fl(a - b)|`` from below for all their records (monotone rounding; the region
    sides are split values, i.e. finite coordinates, or infinite on the outside), and the
    canonical combination of the terms bounds the pair value. Exact and symmetric; a cell
    is relevant to itself.
    """
    lo, hi = tree.lo, tree.hi
    s = np.zeros((lo.shape[0], lo.shape[0]))
    for j in range(lo.shape[1]):
        above = lo[None, :, j] - hi[:, None, j]  # [k, j]: lo_j - hi_k
        gap = np.maximum(np.maximum(above, above.T), 0.0)
        s = _combine(s, gap, metric)
    return s <= thr


def near_estimates(
    tree: TopTree, sample: np.ndarray, weights: np.ndarray, thr: float, metric: str, rel: np.ndarray
) -> np.ndarray:
    """(K, K): sample estimate of the rows of cell j that may be within ``r`` of cell k.

    Row ``[k, k]`` is the estimated size of cell k (every row of a cell is near it).
    """
    k = tree.n_cells
    near = np.zeros((k, k))
    if sample.shape[0] == 0:
        return near
    cells = tree.cells_of(sample)
    for c in range(k):
        cand = np.flatnonzero(rel[c][cells])
        mn, _ = point_box_bounds(sample[cand], tree.lo[c], tree.hi[c], metric)
        keep = cand[mn <= thr]
        near[c] = np.bincount(cells[keep], weights=weights[keep], minlength=k)
    return near


@dataclass(frozen=True, eq=False)
class Layout:
    """The cells of a top tree, each cut into ``blocks[c]`` blocks by row number."""

    tree: TopTree
    blocks: np.ndarray  # (K,) int64 >= 1
    start: np.ndarray  # (K,) int64: first block id of each cell

    @classmethod
    def sized(cls, tree: TopTree, rows: np.ndarray, limit: float) -> Layout:
        """Blocks of at most about ``limit`` rows, for estimated ``rows`` per cell."""
        blocks = np.maximum(1, np.ceil(rows / limit - 1e-9)).astype(np.int64)
        start = np.concatenate([[0], np.cumsum(blocks)[:-1]]).astype(np.int64)
        return cls(tree, blocks, start)

    @property
    def n_blocks(self) -> int:
        """Number of blocks over all cells."""
        return int(self.blocks.sum())

    def labels(self, X: np.ndarray, offset: int) -> np.ndarray:
        """Block id of every row of ``X``; ``offset`` is the record number of its first row
        (blocks of one cell take its records in turn)."""
        cell = self.tree.cells_of(X)
        rows = offset + np.arange(X.shape[0], dtype=np.int64)
        return self.start[cell] + rows % self.blocks[cell]


@dataclass(frozen=True)
class Task:
    """One counting task: a query block against a group of data blocks."""

    query_block: int
    data_blocks: tuple[int, ...]
    identity: bool  # self counts: the group's first data block is the query block itself
    estimated_rows: float  # query rows plus data rows it receives, as the sample predicts


def plan_tasks(
    data: Layout,
    queries: Layout,
    near: np.ndarray,
    query_rows: np.ndarray,
    rel: np.ndarray,
    limit: float,
    self_counts: bool,
) -> list[Task]:
    """For every query block, the data blocks of the relevant cells packed into groups of
    about ``limit`` estimated rows (at least one block per group)."""
    tasks = []
    for c in range(queries.blocks.shape[0]):
        q_rows = query_rows[c] / queries.blocks[c]
        for t in range(int(queries.blocks[c])):
            qb = int(queries.start[c] + t)
            sources: list[tuple[int, float]] = []
            for j in np.flatnonzero(rel[c]):
                per = near[c, j] / data.blocks[j]
                sources += [(int(data.start[j] + u), per) for u in range(int(data.blocks[j]))]
            if self_counts:  # the query block itself first: counted with count_self
                sources.sort(key=lambda s: s[0] != qb)
            groups: list[list[tuple[int, float]]] = []
            for s in sources:
                if groups and sum(e for _, e in groups[-1]) + s[1] <= limit:
                    groups[-1].append(s)
                else:
                    groups.append([s])
            for i, g in enumerate(groups):
                identity = self_counts and i == 0
                est = q_rows + sum(e for _, e in g) - (g[0][1] if identity else 0.0)
                tasks.append(Task(qb, tuple(b for b, _ in g), identity, est))
    return tasks
