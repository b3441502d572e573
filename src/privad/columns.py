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

import contextlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privad.errors import DataError, DatasetNotFoundError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ColumnPlan",
    "ColumnSpec",
    "column_spec",
    "numeric_column",
    "plan_columns",
    "resolve_column",
]

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

    A ``str`` is a name, or, when no column has that name and it reads as an integer, a
    position; an ``int`` is a position (negative from the end). When the table has no header
    its columns are named 0, 1, ... so both readings agree.
    """
    columns = list(frame_columns)
    if isinstance(spec, bool) or not isinstance(spec, str | int | np.integer):
        raise ParameterError(
            f"{what} must be a column name (str) or a 0-based index (int), got {spec!r}"
        )
    if isinstance(spec, str):
        if spec in columns:
            return spec
        try:
            spec = int(spec.strip())
        except ValueError:
            raise DatasetNotFoundError(
                f"unknown {what} {spec!r} in {source}; the columns are {_show_columns(columns)}"
            ) from None
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


def column_spec(spec: Any, names: Sequence[Hashable]) -> Any:
    """A column given as text (a command-line option) as a name when the table has one by
    that name, else as a 0-based position when it is an integer; anything else unchanged."""
    if isinstance(spec, str) and spec not in names:
        with contextlib.suppress(ValueError):
            return int(spec)
    return spec


@dataclass(frozen=True)
class ColumnPlan:
    """The roles of a table's columns (labels as in the table).

    Attributes
    ----------
    features
        The feature columns, in order.
    label
        The 0/1 anomaly-label column, or None.
    id
        The id column (not a feature; its values name the records in outputs), or None.
    """

    features: list[Hashable]
    label: Hashable | None = None
    id: Hashable | None = None


def plan_columns(
    names: Sequence[Hashable],
    *,
    columns: Sequence[ColumnSpec] | None = None,
    label: ColumnSpec | None = None,
    exclude: Sequence[ColumnSpec] | None = None,
    id_column: ColumnSpec | None = None,
    source: str = "the data",
) -> ColumnPlan:
    """Decide which of ``names`` are the features, the label and the id.

    Parameters
    ----------
    names
        The table's column labels.
    columns
        The feature columns (names or 0-based positions); default every column that is not
        the label, the id or excluded.
    label
        The 0/1 anomaly-label column, or None.
    exclude
        Columns that are not features (e.g. a timestamp or a free-text field); they are
        dropped before anything is computed.
    id_column
        The column that identifies records: not a feature, carried to the output.
    source
        The table's name in messages.

    Returns
    -------
    ColumnPlan

    Raises
    ------
    DatasetNotFoundError
        An unknown column name or a position out of range (the message lists the columns).
    ParameterError
        A column with two roles (a feature that is also excluded, the label or the id; the
        label as id), or a column listed twice.
    DataError
        No feature column left.
    """
    names = list(names)

    def find(spec: Any, what: str) -> Hashable:
        return resolve_column(names, column_spec(spec, names), what, source)

    label_col = None if label is None else find(label, "label column")
    id_col = None if id_column is None else find(id_column, "id column")
    if label_col is not None and id_col is not None and repr(label_col) == repr(id_col):
        raise ParameterError(f"column {label_col!r} is both the label and the id column")
    dropped = [
        find(c, "excluded column")
        for c in ([exclude] if isinstance(exclude, str | int) else exclude or [])
    ]
    roles = {
        repr(c): what
        for c, what in ((label_col, "the label column"), (id_col, "the id column"))
        if c is not None
    }
    roles.update({repr(c): "excluded" for c in dropped})
    if columns is None:
        features = [c for c in names if repr(c) not in roles]
    else:
        features = [
            find(c, "column") for c in ([columns] if isinstance(columns, str | int) else columns)
        ]
        if len(set(map(repr, features))) != len(features):
            raise ParameterError(f"columns lists a column twice: {list(columns)!r}")
        for c in features:
            if repr(c) in roles:
                raise ParameterError(
                    f"column {c!r} is {roles[repr(c)]} and also selected "
                    "as a feature; leave it out of the columns"
                )
    if not features:
        raise DataError(
            f"no feature columns left in {source} (every column is the label, the id or excluded)"
        )
    return ColumnPlan(features=features, label=label_col, id=id_col)
