"""Multiplicities x_i: how many records of the database equal a given record.

In the paper's histogram notation (section 2) a database x maps every possible record i to
the number x_i of its copies; Def. 2.2 asks x_i > 0 ("i is present in x").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.validation import check_array, check_queries


def multiplicities(data: Any, *, queries: Any = None) -> np.ndarray:
    """How many records of ``data`` are exactly equal to each query (default: each record).

    Two records are equal when all their coordinates are equal as float64 numbers
    (``-0.0 == 0.0``). With the default queries every entry is >= 1.

    Parameters
    ----------
    data:
        (n, d) array of finite numbers, n >= 1.
    queries:
        Optional (m, d) array of finite numbers (m may be 0).

    Returns
    -------
    numpy.ndarray
        (m,) int64 (m = n without queries).

    Raises
    ------
    privad.errors.DataError
        Malformed arrays or different numbers of columns.
    """
    X = check_array(data, "data")
    Q = check_queries(queries, X)
    rows = X if Q is None else np.concatenate([X, Q], axis=0)
    rows = rows + 0.0  # -0.0 + 0.0 == +0.0, so signed zeros compare (and sort) as one
    _, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if Q is None:
        return counts[inverse].astype(np.int64)
    in_data = np.bincount(inverse[: X.shape[0]], minlength=counts.shape[0])
    return in_data[inverse[X.shape[0] :]].astype(np.int64)
