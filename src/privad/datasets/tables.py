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

Which columns are features, which is the label and which the id is decided in one place,
:func:`plan_columns`, for files read here, for datasets already loaded
(:func:`select_columns`), for partitioned files (:mod:`privad.distributed.tables`) and for
CSV streams (:func:`privad.services.streams.read_csv_rows`). Excluded columns and the id
column are never features, so they are dropped before any distance is computed; the id
column's values are carried in :attr:`Dataset.ids` so that outputs can name the records.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from privad.columns import ColumnSpec, numeric_column, plan_columns
from privad.datasets.containers import Dataset, as_labels
from privad.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "frame_to_dataset",
    "select_columns",
]


def _ids(values: Any, column: Hashable, source: str) -> np.ndarray:
    """An id column's values: integers when every value is a whole number, else as given."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    if arr.dtype.kind == "O" and any(v is None or v != v for v in arr.tolist()):
        raise DataError(
            f"the id column {column!r} of {source} has missing values; every record needs an id"
        )
    return arr


def frame_to_dataset(
    frame: pd.DataFrame,
    *,
    columns: Sequence[ColumnSpec] | None = None,
    label: ColumnSpec | None = None,
    exclude: Sequence[ColumnSpec] | None = None,
    id_column: ColumnSpec | None = None,
    name: str,
    source: str,
    description: str = "",
    licence: str = "",
    metadata: dict[str, Any] | None = None,
) -> Dataset:
    """Select the features, the label and the id of ``frame`` (:func:`plan_columns`).

    ``source`` names the file in error messages. The result's ``feature_names`` are the
    column names as strings; the id column (of any type: numbers or text) becomes
    :attr:`Dataset.ids`.
    """
    if len(frame.columns) == 0:
        raise DataError(f"{source} has no columns")
    plan = plan_columns(
        list(frame.columns),
        columns=columns,
        label=label,
        exclude=exclude,
        id_column=id_column,
        source=source,
    )
    if len(frame) == 0:
        raise DataError(f"{source} has a header but no data rows")
    X = np.column_stack([numeric_column(frame[c], c, source) for c in plan.features])
    y = None
    if plan.label is not None:
        y = as_labels(
            numeric_column(frame[plan.label], plan.label, source),
            len(frame),
            f"label column {plan.label!r} of {source}",
        )
    ids = None
    if plan.id is not None:
        column = frame[plan.id]
        if column.isna().any():
            raise DataError(
                f"the id column {plan.id!r} of {source} has missing values; every "
                "record needs an id"
            )
        ids = _ids(column.to_numpy(), plan.id, source)
    return Dataset(
        X=X,
        y=y,
        feature_names=[str(c) for c in plan.features],
        name=name,
        description=description,
        source=source,
        licence=licence,
        metadata=dict(metadata or {}),
        ids=ids,
    )


def select_columns(
    dataset: Dataset,
    *,
    columns: Sequence[ColumnSpec] | None = None,
    label: ColumnSpec | None = None,
    exclude: Sequence[ColumnSpec] | None = None,
    id_column: ColumnSpec | None = None,
) -> Dataset:
    """The roles of :func:`plan_columns` applied to a loaded dataset's feature columns.

    The label column replaces the dataset's labels; the id column's values become
    :attr:`Dataset.ids` (integers when they are whole numbers). With no option given the
    dataset is returned as it is.
    """
    if columns is None and label is None and exclude is None and id_column is None:
        return dataset
    names = list(dataset.feature_names)
    plan = plan_columns(
        names,
        columns=columns,
        label=label,
        exclude=exclude,
        id_column=id_column,
        source=repr(dataset.name),
    )
    X = dataset.X

    def col(c: Hashable) -> np.ndarray:
        return X[:, names.index(c)]  # type: ignore[arg-type]

    return replace(
        dataset,
        X=np.column_stack([col(c) for c in plan.features]),
        y=dataset.y
        if plan.label is None
        else as_labels(col(plan.label), len(X), f"label column {plan.label!r} of {dataset.name!r}"),
        feature_names=[str(c) for c in plan.features],
        ids=dataset.ids if plan.id is None else _ids(col(plan.id), plan.id, repr(dataset.name)),
    )
