"""Accuracy and subset size (section 7).

* Accuracy: "the percentage of all false negatives and true positives, i.e. all outliers,
  found with our approach": the share of the true outliers O = f_outlier(𝒯) that the
  output contains.
* Subset size: "the size of the output of [the] algorithm in Fig. 2", as a share of n.

Both are returned as fractions in [0, 1] (multiply by 100 for the paper's percentages).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.errors import DataError
from privad.validation import check_int

__all__ = ["accuracy", "subset_size"]


def _indices(values: Any, n: int, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise DataError(f"{name} must be a 1-D vector of record indices")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise DataError(f"{name} holds an index outside 0..{n - 1}")
    return arr


def accuracy(found: Any, true_outliers: Any, n: int) -> float:
    """``|found ∩ O| / |O|``: the share of the true outliers O that ``found`` contains.

    Returns NaN when O is empty (no outliers to find).
    """
    n = check_int(n, "n", minimum=1)
    f = _indices(found, n, "found")
    o = _indices(true_outliers, n, "true_outliers")
    mask = np.zeros(n, dtype=bool)
    mask[f] = True
    o = np.unique(o)
    return float("nan") if o.size == 0 else float(np.count_nonzero(mask[o]) / o.size)


def subset_size(found: Any, n: int) -> float:
    """``|found| / n``: the size of the output as a share of all records."""
    n = check_int(n, "n", minimum=1)
    f = np.unique(_indices(found, n, "found"))
    return float(f.size / n)
