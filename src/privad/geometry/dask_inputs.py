"""The Dask engine's inputs: row partitions, checked from one summary pass per input.

Data and query records may be a :class:`dask.array.Array` chunked by rows, a
:class:`dask.dataframe.DataFrame` of numeric columns or an in-memory array, which is split
into row partitions (:func:`source`). The summary pass (step 1 of the design in
:mod:`privad.geometry.distributed`, eager, small output): one task per partition converts
it to float64 and returns its length, its number of non-finite values, per-feature min/max,
the distinct values of magnitude at most ``2**-459`` per feature (none or ``0`` for
ordinary data; see :func:`privad.geometry.predicate.check_gaps`) and an evenly spaced
sample of at most a few thousand rows. The driver raises the same ``DataError`` messages as
the single-machine engine from these summaries (no partition is ever brought to the
driver) (:func:`check_inputs`); :func:`shared_summaries` runs the pass once per input for a
whole job.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

import dask
import dask.array as da
import numpy as np
from dask.base import get_scheduler
from dask.delayed import delayed

from privad.errors import DataError
from privad.geometry.predicate import scan_columns, small_values
from privad.validation import check_array, check_int

#: Rows per partition when an in-memory array is split without ``partitions``.
DEFAULT_PARTITION_ROWS = 1 << 18
#: Sample rows per partition at most (the summary pass); partitions with fewer rows are
#: summarised exactly.
SAMPLE_ROWS = 2048
#: Sample values over all partitions and features at most (bounds the driver's memory).
SAMPLE_BUDGET = 1 << 22


def is_dask_collection(x: Any) -> bool:
    """Whether ``x`` is a Dask collection (array, DataFrame, Series, bag, delayed)."""
    return dask.is_dask_collection(x)


@dataclass(frozen=True)
class Source:
    """One input (data or queries) as a sequence of row partitions in record order."""

    name: str
    parts: tuple[Any, ...]  # Delayed objects computing to 2-D blocks (or in-memory arrays)
    ncols: int | None  # known number of columns, if any


class _Summary(NamedTuple):
    """What the summary pass returns for one partition (small)."""

    error: str | None  # conversion error message, if the block is not numeric
    shape: tuple[int, ...]
    bad: int  # number of NaN/inf values
    lo: np.ndarray | None  # per-feature min (None when empty or not finite)
    hi: np.ndarray | None
    small: list[np.ndarray] | None  # per feature: distinct values of magnitude <= SMALL
    sample: np.ndarray | None  # (s, d) systematic sample of rows
    weight: float  # rows represented by each sample row


def to_float(block: Any) -> np.ndarray:
    """A block (ndarray, pandas DataFrame/Series) as a C-contiguous float64 array."""
    to_numpy = getattr(block, "to_numpy", None)
    if to_numpy is not None and not isinstance(block, np.ndarray):
        arr = to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        arr = np.asarray(block, dtype=np.float64)
    return np.ascontiguousarray(arr)


def _summarise(block: Any, sample_rows: int) -> _Summary:
    try:
        arr = to_float(block)
    except (TypeError, ValueError) as exc:
        return _Summary(str(exc), (), 0, None, None, None, None, 0.0)
    finite = np.isfinite(arr)
    bad = int(arr.size - np.count_nonzero(finite))
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0 or bad:
        return _Summary(None, arr.shape, bad, None, None, None, None, 0.0)
    n = arr.shape[0]
    s = min(n, sample_rows)
    idx = ((np.arange(s) + 0.5) * (n / s)).astype(np.int64)
    scan = scan_columns(arr)
    return _Summary(
        None, arr.shape, 0, scan.lo, scan.hi, small_values(arr, scan), arr[idx].copy(), n / s
    )


def source(x: Any, name: str, partitions: int | None, min_rows: int) -> Source:
    """Normalise an input; in-memory arrays are validated here, Dask ones in the summary pass."""
    if not is_dask_collection(x):
        arr = np.ascontiguousarray(check_array(x, name, min_rows=min_rows))
        k = partitions or max(1, math.ceil(arr.shape[0] / DEFAULT_PARTITION_ROWS))
        chunks = np.array_split(arr, min(k, max(arr.shape[0], 1)))
        return Source(name, tuple(_scatter(chunks)), arr.shape[1])
    import dask.dataframe as dd

    if isinstance(x, da.Array):
        if x.ndim != 2:
            shape = x.shape
            if any(math.isnan(s) for s in shape):
                shape = x.compute_chunk_sizes().shape
            hint = " (reshape a single feature with X.reshape(-1, 1))" if x.ndim == 1 else ""
            raise DataError(f"{name} must be a 2-D array, got shape {shape}{hint}")
        if x.numblocks[1] > 1:
            x = x.rechunk({1: -1})
        ncols = None if math.isnan(x.shape[1]) else int(x.shape[1])
        # not optimised: an optimised graph of a persisted array drops its futures
        return Source(name, tuple(x.to_delayed(optimize_graph=False).ravel()), ncols)
    if isinstance(x, dd.DataFrame):
        return Source(name, tuple(x.to_delayed()), len(x.columns))
    if isinstance(x, dd.Series):
        n = int(x.shape[0].compute())
        raise DataError(
            f"{name} must be a 2-D array, got shape ({n},) "
            f"(reshape a single feature with X.reshape(-1, 1))"
        )
    raise DataError(
        f"{name} must be an array, a Dask array or a Dask DataFrame, got {type(x).__name__}"
    )


def _scatter(chunks: list[np.ndarray]) -> list[Any]:
    """In-memory chunks as graph inputs: scattered to the workers when the scheduler in use
    is a ``distributed`` client (so the graph stays small), else embedded in the graph."""
    client = getattr(get_scheduler(), "__self__", None)
    if client is None or not hasattr(client, "scatter"):
        return [delayed(c, traverse=False) for c in chunks]
    return [delayed(f) for f in client.scatter(chunks, hash=False)]


def _sample_rows(n_parts: int, ncols: int | None) -> int:
    budget = SAMPLE_BUDGET // max(1, n_parts * (ncols or 1))
    return int(min(SAMPLE_ROWS, max(64, budget)))


@dataclass(frozen=True)
class Checked:
    """A validated input: its partitions, their lengths and the merged sample."""

    source: Source
    lengths: np.ndarray  # (P,) int64
    ncols: int
    lo: np.ndarray | None  # per-feature min over all rows (None if no rows)
    hi: np.ndarray | None
    small: list[list[np.ndarray]]  # per non-empty partition: its small values per feature
    sample: np.ndarray  # (s, d) sample rows over all partitions
    weights: np.ndarray  # (s,) rows each sample row stands for

    @property
    def n(self) -> int:
        return int(self.lengths.sum())


def _check(source: Source, summaries: Sequence[_Summary], min_rows: int) -> Checked:
    """Raise the single-machine engine's ``DataError`` for what the summaries show."""
    name = source.name
    for s in summaries:  # the first conversion error in record order, as np.asarray's
        if s.error is not None:
            raise DataError(f"{name} must be numeric, could not convert: {s.error}")
    ndims = {len(s.shape) for s in summaries}
    n = sum(s.shape[0] for s in summaries if s.shape)
    tail = next((s.shape[1:] for s in summaries), ())
    if ndims != {2}:
        shape = (n, *tail)
        hint = " (reshape a single feature with X.reshape(-1, 1))" if len(shape) == 1 else ""
        raise DataError(f"{name} must be a 2-D array, got shape {shape}{hint}")
    cols = {s.shape[1] for s in summaries}
    if len(cols) > 1:
        raise DataError(f"{name} partitions have different numbers of columns: {sorted(cols)}")
    d = cols.pop()
    if n < min_rows:
        raise DataError(f"{name} must have at least {min_rows} row(s), got {n}")
    if d < 1:
        raise DataError(f"{name} must have at least one column, got shape {(n, d)}")
    bad = sum(s.bad for s in summaries)
    if bad:
        raise DataError(
            f"{name} contains {bad} NaN or infinite value(s); only finite values are allowed"
        )
    full = [s for s in summaries if s.sample is not None]
    lo = np.min([s.lo for s in full], axis=0) if full else None
    hi = np.max([s.hi for s in full], axis=0) if full else None
    if full:
        sample = np.concatenate([s.sample for s in full])
        weights = np.concatenate([np.full(s.sample.shape[0], s.weight) for s in full])
    else:
        sample, weights = np.zeros((0, d)), np.zeros(0)
    lengths = np.array([s.shape[0] for s in summaries], dtype=np.int64)
    small = [s.small for s in full]
    return Checked(source, lengths, d, lo, hi, small, sample, weights)


_SUMMARIES: ContextVar[dict | None] = ContextVar("privad_dask_summaries", default=None)


@contextmanager
def shared_summaries(cache: dict | None = None) -> Iterator[dict]:
    """Run each summary pass once per input inside the block (or for as long as ``cache``
    is passed in again).

    Calls of :func:`~privad.geometry.distributed.ball_counts_dask`,
    :func:`~privad.geometry.distributed.multiplicities_dask` and
    :func:`~privad.geometry.distributed.plan_ball_counts` in the block look their inputs'
    summaries up in ``cache`` (a new dict by default) under the inputs' Dask keys: the same
    collection (the same keys, hence the same values) is summarised once, however many
    counts are built on it. The cache holds at most the summary pass's output per input
    (lengths, min/max and a sample of at most 2^22 values). Keys identify values only while
    the inputs do not change under them (a file rewritten in place keeps its key): keep a
    cache for one job.
    """
    cache = {} if cache is None else cache
    token = _SUMMARIES.set(cache)
    try:
        yield cache
    finally:
        _SUMMARIES.reset(token)


def _summaries(sources: list[Source]) -> list[list[_Summary]]:
    """The summary pass over every source, through the cache of :func:`shared_summaries`."""
    cache = _SUMMARIES.get()
    store: dict = {} if cache is None else cache
    rows = [_sample_rows(len(s.parts), s.ncols) for s in sources]
    keys = [(tuple(str(p.key) for p in s.parts), k) for s, k in zip(sources, rows, strict=True)]
    todo = [i for i, key in enumerate(keys) if key not in store]
    tasks = [[delayed(_summarise, pure=True)(p, rows[i]) for p in sources[i].parts] for i in todo]
    for i, summaries in zip(todo, dask.compute(*tasks) if todo else (), strict=True):
        store[keys[i]] = summaries
    return [store[key] for key in keys]


def check_inputs(data: Source, queries: Source | None) -> tuple[Checked, Checked | None]:
    """Run the summary pass over data (and queries) and validate from its results."""
    sources = [data] if queries is None else [data, queries]
    results = _summaries(sources)
    X = _check(data, results[0], min_rows=1)
    if queries is None:
        return X, None
    Q = _check(queries, results[1], min_rows=0)
    if Q.ncols != X.ncols:
        raise DataError(
            f"queries must have the same number of columns as data ({X.ncols}), got {Q.ncols}"
        )
    return X, Q


def check_partitions(partitions: Any) -> int | None:
    """``partitions`` (None, or an int >= 1), checked."""
    return None if partitions is None else check_int(partitions, "partitions", minimum=1)
