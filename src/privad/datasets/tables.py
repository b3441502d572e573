"""Turning a table read from a file into a validated :class:`~privad.datasets.Dataset`.

Every tabular loader (CSV, Parquet, the named layouts such as Kaggle's credit-card file)
funnels through :func:`frame_to_dataset`, so they all select columns the same way and
report the same errors:

* an unknown column name or an index out of range: :class:`~privad.errors.DatasetNotFoundError`
  listing the columns that exist;
* a value that is not a number: :class:`~privad.errors.DataError` naming the column, the
  data row (1-based, header not counted) and the value;
* a missing, NaN or infinite value: :class:`~privad.errors.DataError` naming the column, how
  many and the first row;
* no rows or no columns: :class:`~privad.errors.DataError`;
* a label column with anything other than 0/1: :class:`~privad.errors.DataError`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privad.datasets.containers import Dataset, as_labels
from privad.errors import DataError, DatasetNotFoundError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ColumnSpec", "frame_to_dataset", "numeric_column", "resolve_column", "select_columns",
]  # fmt: skip

#: A column given by its name (``str``) or by its 0-based position (``int``; negative counts
#: from the end, as in Python). A ``str`` that names no column but reads as an integer
#: (``"2"``, as typed on a command line) is a position.
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


def frame_to_dataset(
    frame: pd.DataFrame,
    *,
    columns: Sequence[ColumnSpec] | None = None,
    label: ColumnSpec | None = None,
    name: str,
    source: str,
    description: str = "",
    licence: str = "",
    metadata: dict[str, Any] | None = None,
) -> Dataset:
    """Select ``columns`` (default: every column but the label) and ``label`` from ``frame``.

    ``source`` names the file in error messages. The result's ``feature_names`` are the
    column names as strings.
    """
    if isinstance(columns, str | int):
        columns = [columns]
    all_columns = list(frame.columns)
    if len(all_columns) == 0:
        raise DataError(f"{source} has no columns")
    label_col = None
    if label is not None:
        label_col = resolve_column(all_columns, label, "label column", source)
    if columns is None:
        selected = [c for c in all_columns if c != label_col]
    else:
        selected = [resolve_column(all_columns, c, "column", source) for c in columns]
        if len(set(map(repr, selected))) != len(selected):
            raise ParameterError(f"columns lists a column twice: {columns!r}")
        if label_col is not None and label_col in selected:
            raise ParameterError(
                f"the label column {label_col!r} is also selected as a feature; leave it out"
                " of columns"
            )
    if not selected:
        raise DataError(f"no feature columns left in {source} (the only column is the label)")
    if len(frame) == 0:
        raise DataError(f"{source} has a header but no data rows")
    X = np.column_stack([numeric_column(frame[c], c, source) for c in selected])
    y = None
    if label_col is not None:
        y = as_labels(numeric_column(frame[label_col], label_col, source), len(frame),
                      f"label column {label_col!r} of {source}")
    return Dataset(
        X=X,
        y=y,
        feature_names=[str(c) for c in selected],
        name=name,
        description=description,
        source=source,
        licence=licence,
        metadata=dict(metadata or {}),
    )


def select_columns(
    data: Dataset, columns: Sequence[ColumnSpec] | None = None, label: ColumnSpec | None = None
) -> Dataset:
    """Select features of a loaded :class:`Dataset` and make one of its columns the labels.

    The rule of :func:`frame_to_dataset` on ``data``'s columns (named by
    ``data.feature_names``): ``columns`` default to every column but ``label``; a ``label``
    column replaces ``data.y``; without one ``data.y`` is kept.
    """
    if columns is None and label is None:
        return data
    import pandas as pd  # imported lazily: keeps 'import privad' fast

    frame = pd.DataFrame(data.X, columns=data.feature_names, copy=False)
    chosen = frame_to_dataset(frame, columns=columns, label=label, name=data.name,
                              source=repr(data.name))  # fmt: skip
    return Dataset(
        X=chosen.X, y=data.y if label is None else chosen.y,
        feature_names=chosen.feature_names, name=data.name, description=data.description,
        source=data.source, licence=data.licence, classes=data.classes,
        metadata=dict(data.metadata),
    )  # fmt: skip
