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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privad.columns import ColumnSpec, numeric_column, resolve_column
from privad.datasets.containers import Dataset, as_labels
from privad.errors import DataError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["frame_to_dataset"]

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
