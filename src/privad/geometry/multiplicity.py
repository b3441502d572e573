"""Multiplicities x_i: how many records of the database equal a given record.

In the paper's histogram notation (section 2) a database x maps every possible record i to
the number x_i of its copies; Def. 2.2 asks x_i > 0 ("i is present in x").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.geometry.balls import (
    DISTRIBUTED_ENGINE,
    ENGINES,
    check_distributed_engine,
    is_distributed,
)
from privad.validation import check_array, check_choice, check_queries


def multiplicities(data: Any, *, queries: Any = None, engine: str = "auto") -> np.ndarray:
    """How many records of ``data`` are exactly equal to each query (default: each record).

    Two records are equal when all their coordinates are equal as float64 numbers
    (``-0.0 == 0.0``). With the default queries every entry is >= 1.

    Parameters
    ----------
    data:
        (n, d) array of finite numbers, n >= 1.
    queries:
        Optional (m, d) array of finite numbers (m may be 0).
    engine:
        Any engine name of :func:`privad.geometry.ball_counts`. ``"dask"`` (and ``"auto"``
        for Dask collections, which may be given as ``data`` or ``queries``) counts with
        :func:`privad.geometry.distributed.multiplicities_dask`; the others count in memory.

    Returns
    -------
    numpy.ndarray
        (m,) int64 (m = n without queries).

    Raises
    ------
    privad.errors.DataError
        Malformed arrays or different numbers of columns.
    privad.errors.ParameterError
        An unknown ``engine``.
    """
    if is_distributed(data, queries):
        check_distributed_engine(engine)
    else:
        check_choice(engine, "engine", ("auto", *ENGINES))
    if engine == DISTRIBUTED_ENGINE or is_distributed(data, queries):
        from privad.geometry.distributed import multiplicities_dask

        lazy = multiplicities_dask(data, queries=queries)
        return np.asarray(lazy.compute(), dtype=np.int64)
    X = check_array(data, "data")
    Q = check_queries(queries, X)
    rows = X if Q is None else np.concatenate([X, Q], axis=0)
    rows = rows + 0.0  # -0.0 + 0.0 == +0.0, so signed zeros compare (and sort) as one
    inverse, counts = equal_rows(rows)
    if Q is None:
        return counts[inverse].astype(np.int64)
    in_data = np.bincount(inverse[: X.shape[0]], minlength=counts.shape[0])
    return in_data[inverse[X.shape[0] :]].astype(np.int64)


_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplying by it permutes the 64-bit words


def row_hash(bits: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of the (n, d) uint64 bit patterns ``bits`` (xor, multiply by
    an odd constant, fold the high bits down; one column at a time).

    Examples
    --------
    >>> bits = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0]]).view(np.uint64)
    >>> h = row_hash(bits)
    >>> bool(h[0] == h[1]), bool(h[0] == h[2])
    (True, False)
    """
    h = np.zeros(bits.shape[0], np.uint64)
    for column in bits.T:
        h = (h ^ column) * _MIX  # wraps modulo 2**64
        h ^= h >> np.uint64(29)
    return h


def equal_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Classes of exactly equal rows: (class of each row, size of each class).

    Rows are grouped by a 64-bit hash of their bit patterns (one integer sort instead of
    ``np.unique(rows, axis=0)``'s row-by-row sort), then every row is compared bit for bit
    with the first row of its group; a group holding two different rows (a hash collision)
    sends the whole input to ``np.unique(rows, axis=0)``, so the classes are exact either
    way. Signed zeros must be unified by the caller (``rows + 0.0``).

    Examples
    --------
    >>> inverse, counts = equal_rows(np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]]))
    >>> counts[inverse].tolist()
    [2, 1, 2]
    """
    bits = np.ascontiguousarray(rows, dtype=np.float64).view(np.uint64)
    _, first, inverse, counts = np.unique(
        row_hash(bits), return_index=True, return_inverse=True, return_counts=True
    )
    inverse = inverse.reshape(-1)
    if np.array_equal(bits, bits[first[inverse]]):
        return inverse, counts
    _, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return inverse.reshape(-1), counts
