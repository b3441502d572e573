"""The Dask side of ``SensitiveAnomalyIdentifier(engine="dask")``: checked, persisted
records, and the counts and Claim 5's bound from :mod:`privad.geometry.distributed`.

Moved out of :mod:`privad.sensitive.estimator` unchanged (module size); see the estimator's
module docstring, "Scale-out", for what the engine does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privad.errors import DataError
from privad.sensitive.accounting import (
    SEEDS,
    Claim5Bound,
    claim5_radius,
    seeds,
    upper_bound,
)
from privad.sensitive.anomaly import BallStatistics, statistics_from_counts
from privad.validation import check_array

__all__ = ["dask_claim5_bound", "dask_records", "dask_statistics"]


def _persisted(X: Any) -> Any:
    """``X`` persisted on the workers when a ``distributed`` client is the active scheduler
    (the workers hold the blocks; nothing comes to the driver), else ``X`` unchanged."""
    from dask.base import get_scheduler

    client = getattr(get_scheduler(), "__self__", None)
    if client is None or not hasattr(client, "persist"):
        return X
    return client.persist(X)


def _check_block(block: np.ndarray, name: str) -> np.ndarray:
    """One block of a Dask array of records, checked on its worker (finite float64)."""
    return check_array(block, name, min_rows=0)


def dask_records(X: Any, name: str, *, min_rows: int = 1) -> Any:
    """``X`` as a (n, d) float64 Dask array, one chunk across the columns.

    A Dask DataFrame is converted with its partitions as row chunks; any other array-like
    is validated here and chunked by Dask. Shape and dtype are checked on the driver; the
    values (finite numbers) on the workers, block by block. With a ``distributed`` client
    the checked blocks are persisted on the workers (:func:`_persisted`), so the passes
    that follow do not produce the input again; otherwise the array stays lazy.
    """
    import dask.array as da

    if hasattr(X, "to_dask_array") and hasattr(X, "npartitions"):  # a Dask DataFrame
        X = X.to_dask_array()  # lengths below, from the persisted blocks when persisted
    if not isinstance(X, da.Array):
        arr = check_array(X, name, min_rows=min_rows)
        return _persisted(da.from_array(arr, chunks=("auto", -1)))
    if X.ndim != 2:
        raise DataError(f"{name} must be a 2-D array, got {X.ndim} dimension(s)")
    if X.dtype.kind not in "biuf":
        raise DataError(f"{name} must be numeric, got a Dask array of dtype {X.dtype}")
    if not math.isnan(X.shape[1]) and X.shape[1] < 1:
        raise DataError(f"{name} must have at least one column, got shape {X.shape}")
    if X.numblocks[1] > 1 and any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()  # rechunking the columns needs the row chunks
    X = X.astype(np.float64).rechunk({1: -1})
    X = _persisted(X.map_blocks(_check_block, name, dtype=np.float64))
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.shape[0] < min_rows:
        raise DataError(f"{name} must have at least {min_rows} row(s), got {X.shape[0]}")
    return X


def dask_statistics(
    X: Any, Q: Any, r: float, metric: str, cap: int | None, add: bool
) -> BallStatistics:
    """(x_i, B) from the distributed engine, gathered on the driver as int64 vectors."""
    import dask

    from privad.geometry.distributed import ball_counts_dask, multiplicities_dask

    ball = ball_counts_dask(X, r, queries=Q, metric=metric, cap=cap)
    mult = multiplicities_dask(X, queries=Q)
    ball_v, mult_v = dask.compute(ball, mult)
    return statistics_from_counts(ball_v, mult_v, add=add, cap=cap)


def _block_seeds(block: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """One block's :data:`SEEDS` largest counts and their global indices (ties: smaller)."""
    keep = seeds(block)
    return block[keep], keep + offset


def _dask_seeds(counts: Any) -> tuple[int, np.ndarray]:
    """The largest count and :func:`~privad.sensitive.accounting.seeds` of counts held as a
    Dask array: each block's best, merged on the driver in the same order."""
    import dask

    if any(math.isnan(c) for c in counts.chunks[0]):
        counts = counts.compute_chunk_sizes()
    offsets = np.concatenate([[0], np.cumsum(counts.chunks[0])[:-1]]).astype(np.int64)
    parts = dask.compute(
        *[
            dask.delayed(_block_seeds)(b, int(o))
            for b, o, size in zip(
                counts.to_delayed().ravel(), offsets, counts.chunks[0], strict=True
            )
            if size
        ]
    )
    values = np.concatenate([p[0] for p in parts])
    index = np.concatenate([p[1] for p in parts])
    order = np.lexsort((index, -values))[:SEEDS]
    return int(values.max()), index[order]


def dask_claim5_bound(Q: Any, r: float, metric: str, counts: Any = None) -> Claim5Bound:
    """:func:`~privad.sensitive.accounting.claim5_bound` for queries held as a Dask array:
    the same box search (its counts summed over the blocks, :func:`partitioned_box_counts`)
    and the same 2r bound, so the same value as in memory.

    ``counts`` (the uncapped counts B(i, r) of the queries, when already gathered) saves
    the pass at r.
    """
    from privad.geometry.depth import partitioned_box_counts
    from privad.geometry.distributed import ball_counts_dask

    if counts is None:  # the counts stay on the workers: their maximum and top indices
        counts = ball_counts_dask(Q, r, metric=metric)
        lower, top = _dask_seeds(counts)
    else:  # gathered on the driver already
        lower, top = int(np.max(counts)), seeds(counts)
    count, lo, hi = partitioned_box_counts(Q, metric)
    R = claim5_radius(r)
    upper = upper_bound(
        count,
        (lo, hi),
        Q[np.sort(top)].compute(),
        r,
        lower,
        lambda: int(ball_counts_dask(Q, R, metric=metric).max().compute()),
    )
    return Claim5Bound(n=int(Q.shape[0]), lower=lower, upper=upper)
