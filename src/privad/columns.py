"""Columns of a table, read the same way everywhere: by name or position, finite numbers only.

The single-machine loaders (:mod:`privad.datasets.tables`, the time-series loaders) and the
partitioned ones (:mod:`privad.distributed.tables`, on every Dask worker) select and check
columns with these two functions, so they report the same errors:

* :func:`resolve_column`: an unknown column name or an index out of range is a
  :class:`~privad.errors.DatasetNotFoundError` listing the columns that exist;
* :func:`numeric_column`: a value that is not a number is a :class:`~privad.errors.DataError`
  naming the column, the data row (1-based, header not counted) and the value; a missing,
  NaN or infinite value one naming the column, how many and the first row.

They sit in the bottom layer (with :mod:`privad.validation` and :mod:`privad.io`) because
both the data layer and the cluster layer read tables.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privad.errors import DataError, DatasetNotFoundError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ColumnSpec", "numeric_column", "resolve_column"]

#: A column given by its name (``str``) or by its 0-based position (``int``; negative counts
#: from the end, as in Python).
ColumnSpec = str | int


def _show_columns(columns: Sequence[Hashable], limit: int = 12) -> str:
    shown = ", ".join(repr(c) for c in list(columns)[:limit])
    more = len(columns) - limit
    return shown + (f", ... ({more} more)" if more > 0 else "")


def resolve_column(
    frame_columns: Sequence[Hashable], spec: Any, what: str = "column", source: str = "the data"
) -> Hashable:
    """The label of the column named or indexed by ``spec`` in ``frame_columns``.

    A ``str`` is a name and an ``int`` a position (negative from the end); when the table
    has no header its columns are named 0, 1, ... so both readings agree.
    """
    columns = list(frame_columns)
    if isinstance(spec, bool) or not isinstance(spec, str | int | np.integer):
        raise ParameterError(
            f"{what} must be a column name (str) or a 0-based index (int), got {spec!r}"
        )
    if isinstance(spec, str):
        if spec in columns:
            return spec
        raise DatasetNotFoundError(
            f"unknown {what} {spec!r} in {source}; the columns are {_show_columns(columns)}"
        )
    index = int(spec)
    if spec in columns:  # headerless tables: the labels are the positions themselves
        return spec
    if -len(columns) <= index < len(columns):
        return columns[index]
    raise DatasetNotFoundError(
        f"{what} index {index} is out of range for {source}, which has {len(columns)}"
        f" column(s): {_show_columns(columns)}"
    )


def numeric_column(series: pd.Series, column: Hashable, source: str) -> np.ndarray:
    """One column as finite float64, or a :class:`DataError` naming the first bad value."""
    import pandas as pd  # imported lazily: keeps 'import privad' fast

    values = series
    if not (
        pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype)
    ):
        converted = pd.to_numeric(values, errors="coerce")
        bad = converted.isna().to_numpy() & values.notna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"column {column!r} of {source} is not numeric: data row {row + 1} holds"
                f" {values.iloc[row]!r} ({int(bad.sum())} non-numeric value(s) in all)"
            )
        values = converted
    arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
    finite = np.isfinite(arr)
    if not finite.all():
        bad_rows = np.flatnonzero(~finite)
        row = int(bad_rows[0])
        kind = "missing or NaN" if np.isnan(arr[row]) else "infinite"
        raise DataError(
            f"column {column!r} of {source} has {bad_rows.size} missing, NaN or infinite"
            f" value(s); the first is {kind}, at data row {row + 1}. Only finite numbers are"
            " allowed: clean or impute the data first"
        )
    return arr
