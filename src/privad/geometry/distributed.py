"""The ``"dask"`` engine: exact ball counts and multiplicities for data held as Dask collections.

The data (and the query records) may be a :class:`dask.array.Array` chunked by rows, a
:class:`dask.dataframe.DataFrame` of numeric columns (for example a folder of Parquet
partitions) or an in-memory array, which is split into row partitions. Results are
identical, bit for bit, to the single-machine engines: every count is decided by the
canonical predicate of :mod:`privad.geometry.predicate`, with the compiled dual tree of
:mod:`privad.geometry.dualtree` doing the counting inside each task.

Design (details and the communication cost in ``docs/distributed.md``, "The Dask engine:
design"):

1. **Summary pass** (eager, small output; :mod:`privad.geometry.dask_inputs`): one task
   per partition returns its length, per-feature min/max, its tiny values and a sample of
   rows; the driver raises the single-machine engine's ``DataError`` from these summaries
   (no partition is ever brought to the driver), checks the float64 span and, for
   euclidean distances, the gaps between tiny values
   (:func:`~privad.geometry.predicate.check_gaps`), and plans. (Data made mostly of tiny
   values brings them all to the driver: rescale it by a power of two first.)
2. **Plan** (driver, sample only; :mod:`privad.geometry.cells`). A k-d tree over the
   sample cuts space into ``K`` cells of about equal weight, each split placed where the
   fewest records lie within ``r`` of it. Cell j is *relevant* to cell k when the exact
   lower bound of the canonical pair values between their region boxes is ``<= thr``; no
   pair within ``r`` joins irrelevant cells. A cell estimated to hold more than
   ``2 n / K`` rows (many equal records) is cut into blocks by record number.
3. **Counting pass** (lazy, returned as a Dask array). Every partition routes each of its
   rows to its block (one shuffle). For every query block, each data block of each relevant
   cell is filtered against the tight bounding box of the query block with the exact
   point-box bounds of the predicate: rows that cannot be within ``r`` of any query are
   dropped, rows within ``r`` of every query are only counted (an integer travels, not the
   row), and the rest (the halo) is shipped. Data blocks are packed into groups of about
   ``2 n / K`` rows; each (query block, group) task counts with the dual tree, and the
   partial counts of a query block are summed (and capped). Counts travel back as int64
   and are put in record order per query partition.

So a task holds one query block and one group of data blocks: about ``4 n / K`` rows,
never the whole dataset unless ``K`` is tiny. A radius larger than the data span makes
every cell relevant to every other: the scheme becomes the block-pair scheme (every block
against every group) without needing more memory per task, and the point-box filter
reduces what travels to integers.

The engine does not start clusters: it computes with the current Dask scheduler (the
``distributed`` client if one is active, otherwise Dask's default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import getitem
from typing import Any

import dask
import dask.array as da
import dask.system
import dask.threaded
import numba
import numpy as np
from dask.base import get_scheduler, tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from privad.errors import DataError
from privad.geometry import dualtree
from privad.geometry.cells import (
    Layout,
    Task,
    TopTree,
    build_top_tree,
    near_estimates,
    plan_tasks,
    point_box_bounds,
    relevance,
)
from privad.geometry.dask_inputs import (
    Checked,
    check_inputs,
    check_partitions,
    is_dask_collection,
    shared_summaries,
    source,
    to_float,
)
from privad.geometry.predicate import (
    METRICS,
    check_gaps,
    check_span,
    threshold,
)
from privad.validation import check_choice, check_int, check_nonnegative

# is_dask_collection and shared_summaries are defined with the inputs (dask_inputs) and are
# part of this engine's public interface.
__all__ = [
    "BallCountPlan",
    "ball_counts_dask",
    "is_dask_collection",
    "multiplicities_dask",
    "plan_ball_counts",
    "shared_summaries",
]

#: A block (and a group of data blocks) is cut at about this many times the average cell.
BLOCK_FACTOR = 2.0
#: Sample rows the plan uses at most (more when there are many cells: 64 per cell).
PLAN_SAMPLE = 1 << 16


# --------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BallCountPlan:
    """How the Dask engine will count: cells, blocks and counting tasks (see the module doc).

    Built by :func:`plan_ball_counts` after the summary pass; :meth:`counts` returns the
    lazy counts and :meth:`task_rows` the rows every counting task actually receives (a
    diagnostic: it runs the routing and filtering but not the counting).
    """

    data: Checked
    queries: Checked | None
    r: float
    thr: float
    metric: str
    cap: int | None
    tree: TopTree
    data_layout: Layout
    query_layout: Layout
    tasks: tuple[Task, ...]

    @property
    def n_cells(self) -> int:
        """Number of cells the records are partitioned into."""
        return self.tree.n_cells

    def cells_of(self, X: Any) -> np.ndarray:
        """The cell of each row of an in-memory array (a diagnostic)."""
        return self.tree.cells_of(np.asarray(X, dtype=np.float64))

    def counts(self) -> da.Array:
        """The ball counts as a lazy int64 Dask array, chunked like the query records."""
        if self.queries is not None and self.queries.n == 0:
            chunks = (tuple(int(n) for n in self.queries.lengths),)
            return da.zeros((0,), chunks=chunks, dtype=np.int64)
        return _build(self, _count_task)

    def task_rows(self) -> np.ndarray:
        """(tasks, 2) int64: per counting task, its query rows and the data rows shipped to
        it after filtering (computes the routing and filtering, not the counts)."""
        out = _build(self, _count_rows, assemble=False).compute()
        return np.array(out, dtype=np.int64).reshape(-1, 2)


def _plan_sample(c: Checked, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``limit`` rows of a sample (evenly spaced), reweighted to the same total."""
    s = c.sample.shape[0]
    if s <= limit:
        return c.sample, c.weights
    idx = ((np.arange(limit) + 0.5) * (s / limit)).astype(np.int64)
    w = c.weights[idx]
    return c.sample[idx], w * (c.weights.sum() / w.sum())


def _plan(
    X: Checked, Q: Checked | None, r: float, metric: str, cap: int | None, k_req: int
) -> BallCountPlan:
    thr = threshold(r, metric)
    limit = max(PLAN_SAMPLE, 64 * k_req)
    xs, xw = _plan_sample(X, limit)
    if Q is None:
        qs, qw = xs, xw
        tree = build_top_tree(xs, xw, k_req, r)
    else:
        qs, qw = _plan_sample(Q, limit)
        tree = build_top_tree(np.concatenate([xs, qs]), np.concatenate([xw, qw]), k_req, r)
    rel = relevance(tree, thr, metric)
    near = near_estimates(tree, xs, xw, thr, metric, rel)
    data_limit = max(1.0, BLOCK_FACTOR * X.n / k_req)
    dl = Layout.sized(tree, np.diag(near), data_limit)
    if Q is None:
        ql, q_rows = dl, np.diag(near)
    else:
        cells = tree.cells_of(qs)
        q_rows = np.bincount(cells, weights=qw, minlength=tree.n_cells)
        ql = Layout.sized(tree, q_rows, max(1.0, BLOCK_FACTOR * Q.n / k_req))
    tasks = plan_tasks(dl, ql, near, q_rows, rel, data_limit, Q is None)
    return BallCountPlan(X, Q, r, thr, metric, cap, tree, dl, ql, tuple(tasks))


# --------------------------------------------------------------------------------------
# Task functions (run on the workers)
# --------------------------------------------------------------------------------------


def _concurrency() -> int | None:
    """How many tasks this process may run at once, or ``None`` to leave Numba alone.

    In ``distributed`` workers: the threads of all workers in this process (several with
    ``processes=False``); under Dask's local threaded scheduler: its pool size; under the
    synchronous scheduler (tasks run one at a time): ``None``.
    """
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        worker = None
    if worker is not None:
        try:
            from distributed.worker import Worker

            running = [w for w in list(Worker._instances) if w.status.name == "running"]
            return max(1, sum(int(w.state.nthreads) for w in running))
        except (AttributeError, TypeError):  # a future version without these internals
            return int(worker.state.nthreads)
    scheduler = get_scheduler()
    if scheduler is None or scheduler is dask.threaded.get:
        return int(dask.config.get("num_workers", None) or dask.system.CPU_COUNT)
    return None


@contextmanager
def _numba_threads(n_tasks: int) -> Iterator[None]:
    """Give each of the counting tasks that can run at once a share of the cores.

    Numba's thread count is per calling thread; tasks running side by side would otherwise
    each start a thread team as large as the machine.
    """
    concurrent = _concurrency()
    if concurrent is None:
        yield
        return
    old = numba.get_num_threads()
    share = numba.config.NUMBA_NUM_THREADS // max(1, min(concurrent, n_tasks))
    numba.set_num_threads(max(1, min(old, share)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _route(block: Any, layout: Layout, offset: int) -> tuple:
    """Block labels of a partition's rows, and its rows split by block (record order kept)."""
    arr = to_float(block)
    labels = layout.labels(arr, offset)
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels, minlength=layout.n_blocks)
    pieces = np.split(arr[order], np.cumsum(sizes)[:-1])
    return (labels.astype(np.int32 if layout.n_blocks < 2**31 else np.int64), *pieces)


def _box(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Tight bounding box of a block of rows (``None`` for no rows)."""
    if rows.shape[0] == 0:
        return None
    return rows.min(axis=0), rows.max(axis=0)


def _gather(pieces: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A block's rows from every partition, in partition order, and the piece sizes."""
    sizes = np.array([p.shape[0] for p in pieces], dtype=np.int64)
    return np.ascontiguousarray(np.concatenate(pieces)), sizes


def _filter(
    rows: np.ndarray, box: tuple[np.ndarray, np.ndarray] | None, thr: float, metric: str
) -> tuple[np.ndarray, int]:
    """The rows that may be within ``r`` of some query of the box, and how many rows are
    within ``r`` of all of them (those are counted, not shipped)."""
    if box is None or rows.shape[0] == 0:
        return rows[:0], 0
    mn, mx = point_box_bounds(rows, box[0], box[1], metric)
    everywhere = mx <= thr
    keep = (mn <= thr) & ~everywhere
    return np.ascontiguousarray(rows[keep]), int(np.count_nonzero(everywhere))


def _count_task(
    q: np.ndarray,
    identity: bool,
    thr: float,
    metric: str,
    cap: int | None,
    filtered: list[tuple[np.ndarray, int]],
    n_tasks: int,
) -> np.ndarray:
    """Partial ball counts of a query block against one group of (filtered) data blocks
    (``n_tasks``: how many counting tasks the graph has)."""
    nq = q.shape[0]
    if nq == 0:
        return np.zeros(0, np.int64)
    rows = [f[0] for f in filtered if f[0].shape[0] > 0]
    counts = np.full(nq, sum(f[1] for f in filtered), dtype=np.int64)
    with _numba_threads(n_tasks):
        if identity:  # the block against itself, each pair once (cheaper than with the halo)
            counts += dualtree.count_self(q, thr, metric, cap)
        if rows:
            data = np.ascontiguousarray(np.concatenate(rows))
            counts += dualtree.count_queries(data, q, thr, metric, cap)
    return counts


def _count_rows(
    q: np.ndarray,
    identity: bool,
    thr: float,
    metric: str,
    cap: int | None,
    filtered: list[tuple[np.ndarray, int]],
    n_tasks: int,
) -> tuple[int, int]:
    """Diagnostic stand-in for :func:`_count_task`: its query rows and the data rows
    shipped to it (in a task that counts a block against itself, the query rows are data
    rows too and are not counted again)."""
    return q.shape[0], sum(f[0].shape[0] for f in filtered)


def _finish(sizes: np.ndarray, cap: int | None, partials: list[np.ndarray]) -> list:
    """Sum a query block's partial counts, apply the cap, split them by source partition."""
    total = np.sum(partials, axis=0, dtype=np.int64)
    if cap is not None:
        np.minimum(total, cap, out=total)
    return np.split(total, np.cumsum(sizes)[:-1])


def _unroute(labels: np.ndarray, pieces: list[np.ndarray]) -> np.ndarray:
    """A partition's counts in record order from its pieces of every block."""
    out = np.empty(labels.shape[0], np.int64)
    out[np.argsort(labels, kind="stable")] = np.concatenate(pieces)
    return out


# --------------------------------------------------------------------------------------
# The counting graph (one layer of plain tasks: Delayed calls would cost O(tasks^2))
# --------------------------------------------------------------------------------------


def _routed(
    dsk: dict, prefix: str, c: Checked, layout: Layout
) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """Add the shuffle of one input to ``dsk``: per partition the key of its block labels;
    per block the keys of its gathered rows and of its piece sizes."""
    offsets = np.concatenate([[0], np.cumsum(c.lengths)[:-1]])
    labels = []
    for p, part in enumerate(c.source.parts):
        dsk[(f"{prefix}-route", p)] = (_route, part.key, layout, int(offsets[p]))
        dsk[(f"{prefix}-labels", p)] = (getitem, (f"{prefix}-route", p), 0)
        labels.append((f"{prefix}-labels", p))
    rows, sizes = [], []
    for b in range(layout.n_blocks):
        pieces = [(getitem, (f"{prefix}-route", p), 1 + b) for p in range(len(labels))]
        dsk[(f"{prefix}-gather", b)] = (_gather, pieces)
        dsk[(f"{prefix}-rows", b)] = (getitem, (f"{prefix}-gather", b), 0)
        dsk[(f"{prefix}-sizes", b)] = (getitem, (f"{prefix}-gather", b), 1)
        rows.append((f"{prefix}-rows", b))
        sizes.append((f"{prefix}-sizes", b))
    return labels, rows, sizes


def _build(plan: BallCountPlan, count: Callable, assemble: bool = True) -> Any:
    """The counting graph: a lazy Dask array of counts, or (``assemble=False``) a Delayed
    list of what each counting task returns."""
    X, Q = plan.data, plan.queries
    inputs = list(X.source.parts) + ([] if Q is None else list(Q.source.parts))
    name = "ball-counts-" + tokenize(
        [p.key for p in inputs],
        Q is None,
        plan.r,
        plan.metric,
        plan.cap,
        count.__name__,
        plan.tree.feature,
        plan.tree.value,
        plan.data_layout.blocks,
        plan.query_layout.blocks,
    )
    dsk: dict = {}
    d_labels, d_rows, d_sizes = _routed(dsk, f"{name}-data", X, plan.data_layout)
    if Q is None:
        q_labels, q_rows, q_sizes, qc = d_labels, d_rows, d_sizes, X
    else:
        q_labels, q_rows, q_sizes = _routed(dsk, f"{name}-queries", Q, plan.query_layout)
        qc = Q
    for qb, rows in enumerate(q_rows):
        dsk[(f"{name}-box", qb)] = (_box, rows)
    partials: dict[int, list[tuple]] = {}
    for i, task in enumerate(plan.tasks):
        qb = task.query_block
        srcs = task.data_blocks[1:] if task.identity else task.data_blocks
        filtered = []
        for b in srcs:
            key = (f"{name}-filter", b, qb)
            dsk.setdefault(key, (_filter, d_rows[b], (f"{name}-box", qb), plan.thr, plan.metric))
            filtered.append(key)
        dsk[(f"{name}-count", i)] = (
            count,
            q_rows[qb],
            task.identity,
            plan.thr,
            plan.metric,
            plan.cap,
            filtered,
            len(plan.tasks),
        )
        partials.setdefault(qb, []).append((f"{name}-count", i))
    if not assemble:
        dsk[f"{name}-tasks"] = (list, [(f"{name}-count", i) for i in range(len(plan.tasks))])
        graph = HighLevelGraph.from_collections(name, dsk, dependencies=inputs)
        return Delayed(f"{name}-tasks", graph, layer=name)
    for qb in range(plan.query_layout.n_blocks):
        dsk[(f"{name}-finish", qb)] = (_finish, q_sizes[qb], plan.cap, partials[qb])
    n_blocks = plan.query_layout.n_blocks
    for p, labels in enumerate(q_labels):
        back = [(getitem, (f"{name}-finish", qb), p) for qb in range(n_blocks)]
        dsk[(name, p)] = (_unroute, labels, back)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=inputs)
    return da.Array(graph, name, chunks=(tuple(int(n) for n in qc.lengths),), dtype=np.int64)


# --------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------


def plan_ball_counts(
    data: Any,
    r: float,
    *,
    queries: Any = None,
    metric: str = "euclidean",
    cap: int | None = None,
    partitions: int | None = None,
) -> BallCountPlan:
    """Validate the input with the summary pass and plan the distributed count.

    Takes the arguments of :func:`ball_counts_dask`; raises its errors.
    """
    r = check_nonnegative(r, "r")
    check_choice(metric, "metric", METRICS)
    if cap is not None:
        cap = check_int(cap, "cap", minimum=1)
    partitions = check_partitions(partitions)
    d_src = source(data, "data", partitions, min_rows=1)
    q_src = None if queries is None else source(queries, "queries", partitions, min_rows=0)
    if q_src is not None and d_src.ncols is not None and q_src.ncols is not None:
        if q_src.ncols != d_src.ncols:
            raise DataError(
                f"queries must have the same number of columns as data ({d_src.ncols}), "
                f"got {q_src.ncols}"
            )
    X, Q = check_inputs(d_src, q_src)
    boxes = [np.vstack([c.lo, c.hi]) for c in (X, Q) if c is not None and c.lo is not None]
    check_span(boxes, metric)  # as check_magnitudes does, from the summaries
    if metric == "euclidean":
        check_gaps([part for c in (X, Q) if c is not None for part in c.small])
    k_req = partitions or max(len(d_src.parts), 0 if q_src is None else len(q_src.parts))
    k_req = max(1, min(k_req, X.n + (0 if Q is None else Q.n)))
    return _plan(X, Q, r, metric, cap, k_req)


def ball_counts_dask(
    data: Any,
    r: float,
    *,
    queries: Any = None,
    metric: str = "euclidean",
    cap: int | None = None,
    partitions: int | None = None,
) -> da.Array:
    """Exact ball counts B_x(i, r) of Def. 2.2 for data held as a Dask collection.

    The same counts as :func:`privad.geometry.ball_counts` (closed ball, canonical
    predicate, each record counted in its own ball), computed so that no task holds the
    whole dataset (see the module docstring).

    Parameters
    ----------
    data:
        (n, d) finite numbers, n >= 1: a Dask array chunked by rows (column chunks are
        merged), a Dask DataFrame of numeric columns, or an in-memory array (split into
        ``partitions`` row partitions).
    r, queries, metric, cap:
        As for :func:`privad.geometry.ball_counts`; ``queries`` may be any of the types
        ``data`` may be (m may be 0).
    partitions:
        Number of cells the records are cut into (and the number of row partitions an
        in-memory array is split into). Default: the number of partitions of the input
        (the larger of data and queries); in-memory arrays get one per 262,144 rows.

    Returns
    -------
    dask.array.Array
        (m,) int64 counts (m = n without queries), lazy, in record order and chunked like
        the query records (like ``data`` without queries).

    Raises
    ------
    privad.errors.PrivadError
        Immediately (from the summary pass): ``DataError`` with the single-machine
        engine's messages for malformed data or queries; ``ParameterError`` for ``r``,
        ``metric``, ``cap`` or ``partitions``.
    """
    return plan_ball_counts(
        data, r, queries=queries, metric=metric, cap=cap, partitions=partitions
    ).counts()


# --------------------------------------------------------------------------------------
# Multiplicities: hash partitioning with per-partition pre-aggregation
# --------------------------------------------------------------------------------------


def _row_hash(rows: np.ndarray) -> np.ndarray:
    """A deterministic 64-bit hash of each row's float64 bit patterns (``-0.0`` as ``0.0``)."""
    bits = np.ascontiguousarray(rows + 0.0).view(np.uint64)
    h = np.full(rows.shape[0], np.uint64(0x9E3779B97F4A7C15))
    for j in range(bits.shape[1]):
        h = (h ^ bits[:, j]) * np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


def _unique_rows(block: Any, n_buckets: int) -> tuple:
    """A partition's distinct rows with their counts, split by hash bucket, plus what maps
    them back to the partition's rows."""
    arr = to_float(block) + 0.0  # -0.0 + 0.0 == +0.0
    if arr.shape[0] == 0:
        uniq, inverse, counts = arr, np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        uniq, inverse, counts = np.unique(arr, axis=0, return_inverse=True, return_counts=True)
    bucket = (_row_hash(uniq) % np.uint64(n_buckets)).astype(np.int64)
    order = np.argsort(bucket, kind="stable")
    cuts = np.cumsum(np.bincount(bucket, minlength=n_buckets))[:-1]
    pieces = [
        (np.ascontiguousarray(u), c)
        for u, c in zip(
            np.split(uniq[order], cuts), np.split(counts[order].astype(np.int64), cuts), strict=True
        )
    ]
    back = (inverse.reshape(-1), order)
    return (back, *pieces)


def _bucket_totals(n_data: int, pieces: list[tuple[np.ndarray, np.ndarray]]) -> list:
    """Totals over the data pieces for the rows of every piece (data and query pieces)."""
    rows = [p[0] for p in pieces]
    lengths = [r.shape[0] for r in rows]
    if sum(lengths) == 0:
        return [np.zeros(n, np.int64) for n in lengths]
    _, inverse = np.unique(np.concatenate(rows), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_in_data = sum(lengths[:n_data])
    totals = np.zeros(int(inverse.max()) + 1, np.int64)
    if n_in_data:
        np.add.at(totals, inverse[:n_in_data], np.concatenate([p[1] for p in pieces[:n_data]]))
    return np.split(totals[inverse], np.cumsum(lengths)[:-1])


def _unroute_unique(back: tuple[np.ndarray, np.ndarray], pieces: list[np.ndarray]) -> np.ndarray:
    """A partition's multiplicities in record order from its distinct rows' totals."""
    inverse, order = back
    totals = np.empty(order.shape[0], np.int64)
    totals[order] = np.concatenate(pieces)
    return totals[inverse]


def multiplicities_dask(
    data: Any, *, queries: Any = None, partitions: int | None = None
) -> da.Array:
    """How many records of ``data`` equal each query (default: each record), distributed.

    The same numbers as :func:`privad.geometry.multiplicities`. Each partition reduces its
    rows to distinct rows with counts; these are shuffled by a hash of the row into
    ``partitions`` buckets, totalled there and sent back, so a bucket holds at most one
    copy of a distinct row per partition, never the whole dataset.

    Parameters
    ----------
    data, queries:
        As for :func:`ball_counts_dask`.
    partitions:
        Number of hash buckets (and of row partitions for in-memory arrays). Default: the
        number of partitions of the input.

    Returns
    -------
    dask.array.Array
        (m,) int64, lazy, in record order, chunked like the query records.

    Raises
    ------
    privad.errors.DataError
        Malformed arrays or different numbers of columns (immediately, from the summary
        pass), with the single-machine messages.
    """
    partitions = check_partitions(partitions)
    d_src = source(data, "data", partitions, min_rows=1)
    q_src = None if queries is None else source(queries, "queries", partitions, min_rows=0)
    X, Q = check_inputs(d_src, q_src)
    h = partitions or max(len(d_src.parts), 0 if q_src is None else len(q_src.parts))
    inputs = list(d_src.parts) + ([] if q_src is None else list(q_src.parts))
    name = "multiplicities-" + tokenize([p.key for p in inputs], q_src is None, h)
    dsk: dict = {}
    for i, part in enumerate(inputs):
        dsk[(f"{name}-unique", i)] = (_unique_rows, part.key, h)
    n_data = len(d_src.parts)
    for b in range(h):
        pieces = [(getitem, (f"{name}-unique", i), 1 + b) for i in range(len(inputs))]
        dsk[(f"{name}-bucket", b)] = (_bucket_totals, n_data, pieces)
    qc = X if Q is None else Q
    first = 0 if Q is None else n_data
    for p in range(len(qc.source.parts)):
        back = [(getitem, (f"{name}-bucket", b), first + p) for b in range(h)]
        dsk[(name, p)] = (_unroute_unique, (getitem, (f"{name}-unique", first + p), 0), back)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=inputs)
    return da.Array(graph, name, chunks=(tuple(int(n) for n in qc.lengths),), dtype=np.int64)
