"""Loaders for the user's own files: MATLAB (ODDS), CSV, Parquet and NumPy.

Each returns a validated :class:`~privad.datasets.Dataset` (finite float64 ``X``, optional
0/1 ``y``) or raises a :class:`~privad.errors.PrivadError` subclass that says what is wrong
with the file: :class:`~privad.errors.DatasetNotFoundError` for a missing file, key or
column, :class:`~privad.errors.DataError` for an unreadable, empty, non-numeric or
non-finite one. See :mod:`privad.datasets.tables` for the column rules.

The label rule, the same for every format: ``label`` names where the 0/1 labels are. In a
table (CSV, Parquet) that is a column, by name or 0-based position, left out of the
features. In a file that stores named arrays (``.npz``, ``.mat``) it is an array stored
beside the data (by name), or else a column of the data matrix (by name ``x0``, ``x1``, ...
or position), left out of the features; ``.npy`` stores one array, so only its columns. When
``label`` is not given, the labels are the array ``y`` stored beside the data (the ODDS
layout, and ``numpy.savez(path, X=X, y=y)``); a column is never taken as the labels unless
it is named, so a table without ``label`` is unlabelled.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privad.columns import ColumnSpec, resolve_column
from privad.datasets.containers import Dataset, as_labels
from privad.datasets.tables import frame_to_dataset, select_columns
from privad.errors import DataError, DatasetNotFoundError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_odds", "load_csv", "load_parquet", "load_numpy", "existing_file"]

PathLike = str | os.PathLike[str]


def existing_file(path: PathLike, what: str = "data file", *, allow_dir: bool = False) -> Path:
    """``path`` as a :class:`~pathlib.Path`, or :class:`DatasetNotFoundError` if it is absent."""
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise ParameterError(f"{what} path must be a str or os.PathLike, got {path!r}")
    p = Path(path).expanduser()
    if p.is_file() or (allow_dir and p.is_dir()):
        return p
    if p.is_dir():
        raise DataError(f"{what} {str(p)!r} is a folder, not a file")
    raise DatasetNotFoundError(f"{what} not found: {str(p)!r}")


def _stem(path: Path) -> str:
    return path.name.split(".")[0] or path.name


def _matrix_from_array(
    arr: np.ndarray, what: str, names: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """A 2-D finite float64 matrix from a loaded array, with row-specific error messages."""
    if arr.dtype.kind not in "?biuf":
        raise DataError(f"{what} must hold numbers, got dtype {arr.dtype}")
    if arr.ndim == 1:
        raise DataError(
            f"{what} is 1-D (shape {arr.shape}); a data matrix must be 2-D (records x features)."
            " Reshape a single feature with x.reshape(-1, 1) before saving"
        )
    if arr.ndim != 2:
        raise DataError(f"{what} must be 2-D (records x features), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataError(f"{what} is empty (shape {arr.shape})")
    X = arr.astype(np.float64, copy=False)
    finite = np.isfinite(X)
    if not finite.all():
        rows, cols = np.nonzero(~finite)
        raise DataError(
            f"{what} has {rows.size} NaN or infinite value(s); the first is at row {rows[0] + 1},"
            f" column {cols[0]}. Only finite numbers are allowed"
        )
    feature_names = list(names) if names is not None else [f"x{j}" for j in range(X.shape[1])]
    return X, feature_names


# --------------------------------------------------------------------------------------------
# The label rule of the formats that store named arrays (.npz, .mat)
# --------------------------------------------------------------------------------------------

DEFAULT_LABELS = "y"
"""The array read as the labels of a ``.npz`` or ``.mat`` file when none is named."""


def _label_array(
    arrays: Sequence[str], data_key: str | None, label: ColumnSpec | None
) -> str | None:
    """The stored array holding the labels: ``label`` when it names an array other than the
    data, else (no ``label``) :data:`DEFAULT_LABELS` when present beside the data."""
    if isinstance(label, str) and label in arrays and label != data_key:
        return label
    if label is None and DEFAULT_LABELS in arrays and data_key != DEFAULT_LABELS:
        return DEFAULT_LABELS
    return None


def _matrix_dataset(
    X: np.ndarray,
    names: list[str],
    labels: np.ndarray | None,
    columns: Sequence[ColumnSpec] | None,
    label: ColumnSpec | None,
    arrays: Sequence[str],
    **fields: Any,
) -> Dataset:
    """The Dataset of a stored matrix, its labels and the column selection (a ``label`` that
    named a stored array has been read into ``labels`` and is no longer a column)."""
    data = Dataset(X=X, y=labels, feature_names=names, **fields)
    if label is not None and len(arrays) > 1:
        try:
            resolve_column(names, label, "label")
        except DatasetNotFoundError:
            raise DatasetNotFoundError(
                f"label {label!r} is neither an array of {fields['source']!r} (its arrays are "
                f"{list(arrays)}) nor a column of its data ({', '.join(names[:12])}"
                f"{' ...' if len(names) > 12 else ''})"
            ) from None
    return select_columns(data, columns=columns, label=label)


# --------------------------------------------------------------------------------------------
# MATLAB (ODDS)
# --------------------------------------------------------------------------------------------


def load_odds(
    path: PathLike,
    *,
    columns: Sequence[ColumnSpec] | None = None,
    label: ColumnSpec | None = None,
    name: str | None = None,
    description: str = "",
    source: str | None = None,
    licence: str = "",
) -> Dataset:
    """Load an ODDS file: MATLAB 5 ``.mat`` with ``X`` (n x d) and ``y`` (n x 1, 1 = outlier).

    This is the format of the ODDS library (Rayana 2016) that the sensitive-privacy paper's
    Table 1 draws Thyroid and Mammography from (section 5 of
    ``sensitive-privacy-anomaly-identification.txt``).

    Parameters
    ----------
    path
        the file.
    columns
        the features: columns of ``X``, by name (``x0``, ``x1``, ...) or 0-based
        position; default every column except a ``label`` column.
    label
        the 0/1 labels: another variable of the file (by name), or a column of ``X``
        (by name or position; it is then left out of the features). Default: the
        variable ``y`` when the file has one, else none.
    name
        the dataset name (default: the file name without extension).

    Raises
    ------
    DatasetNotFoundError
        the file does not exist, lacks ``X``, or has no such column.
    DataError
        not a MATLAB file, or ``X``/labels malformed (NaN, wrong shape, not 0/1).
    """
    from scipy.io import loadmat  # imported lazily: scipy.io is slow to import
    from scipy.io.matlab import MatReadError

    p = existing_file(path, "ODDS .mat file")
    try:
        mat = loadmat(p)
    except (MatReadError, ValueError, TypeError, OSError, NotImplementedError) as exc:
        raise DataError(f"{str(p)!r} is not a readable MATLAB 5 .mat file: {exc}") from None
    keys = sorted(k for k in mat if not k.startswith("__"))
    if "X" not in mat:
        raise DatasetNotFoundError(
            f"{str(p)!r} has no variable 'X'; an ODDS file holds X and y, this one holds {keys}"
        )
    X, feature_names = _matrix_from_array(np.asarray(mat["X"]), f"X in {str(p)!r}")
    stored = _label_array(keys, "X", label)
    y = None
    if stored is not None:
        y = as_labels(np.asarray(mat[stored]), X.shape[0], f"{stored} in {str(p)!r}")
        label = None
    return _matrix_dataset(
        X,
        feature_names,
        y,
        columns,
        label,
        keys,
        name=name or _stem(p),
        description=description or f"ODDS-format data from {p.name}",
        source=source or str(p),
        licence=licence,
    )


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------


def _file_table(frame: pd.DataFrame, p: Path, kind: str, name: str | None, **roles: Any) -> Dataset:
    """The table ``frame`` read from file ``p`` as a Dataset named after the file; ``roles``
    are the ``columns``, ``label``, ``exclude`` and ``id_column`` of :func:`frame_to_dataset`."""
    return frame_to_dataset(
        frame,
        **roles,
        name=name or _stem(p),
        source=str(p),
        description=f"{kind} data from {p.name}",
    )


def _read_csv(path: Path, header: bool, **kwargs: Any) -> pd.DataFrame:
    import pandas as pd  # imported lazily: keeps 'import privad' fast

    try:
        return pd.read_csv(path, header=0 if header else None, **kwargs)
    except pd.errors.EmptyDataError:
        raise DataError(f"{str(path)!r} is empty: no header and no data rows") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{str(path)!r} is not a readable CSV file: {exc}") from None


def load_csv(
    path: PathLike,
    columns: Sequence[ColumnSpec] | None = None,
    label: ColumnSpec | None = None,
    header: bool = True,
    *,
    delimiter: str = ",",
    name: str | None = None,
    exclude: Sequence[ColumnSpec] | None = None,
    id_column: ColumnSpec | None = None,
) -> Dataset:
    """Load a CSV file of numbers, optionally with a 0/1 label column and an id column.

    Parameters
    ----------
    path
        the file.
    columns
        the feature columns, by name or by 0-based index (negative from the end);
        default every column except ``label``.
    label
        the column holding the anomaly labels (0/1, 1 = anomaly), by name or index;
        default none (``y`` is ``None``).
    header
        whether the first line holds the column names. Without a header the columns
        are named by their positions 0, 1, ...
    delimiter
        the field separator.
    name
        the dataset name (default: the file name without extension).
    exclude
        columns that are not features (dropped before anything is computed).
    id_column
        the column that identifies records (numbers or text): not a feature,
        its values become :attr:`Dataset.ids`.

    Raises
    ------
    DatasetNotFoundError
        missing file, unknown column name, index out of range.
    DataError
        empty file, header only, non-numeric value, missing/NaN/infinite value,
        labels other than 0/1 (each message names the column and the first bad row).
    """
    p = existing_file(path, "CSV file")
    frame = _read_csv(p, header, sep=delimiter, skipinitialspace=True)
    return _file_table(
        frame, p, "CSV", name, columns=columns, label=label, exclude=exclude, id_column=id_column
    )


# --------------------------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------------------------


def load_parquet(
    path: PathLike,
    columns: Sequence[ColumnSpec] | None = None,
    label: ColumnSpec | None = None,
    *,
    name: str | None = None,
    exclude: Sequence[ColumnSpec] | None = None,
    id_column: ColumnSpec | None = None,
) -> Dataset:
    """Load a Parquet file, or a folder of Parquet partitions read as one table.

    A folder is read with :func:`pyarrow.parquet.read_table`: its ``*.parquet`` files are
    concatenated, and Hive-style partition folders (``key=value/``) add a ``key`` column,
    which can be selected like any other. ``columns``, ``label``, ``exclude`` and
    ``id_column`` follow :func:`load_csv`.

    Raises
    ------
    DatasetNotFoundError
        missing path, unknown column.
    DataError
        not Parquet, an empty folder, no rows, non-numeric or non-finite values.
    """
    import pandas as pd  # imported lazily: keeps 'import privad' fast
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = existing_file(path, "Parquet file or folder", allow_dir=True)
    hidden = (".", "_")
    if p.is_dir() and not any(f.is_file() and not f.name.startswith(hidden) for f in p.rglob("*")):
        raise DataError(f"the Parquet folder {str(p)!r} holds no data files")
    try:
        table = pq.read_table(p)
    except (pa.ArrowInvalid, pa.ArrowException, OSError) as exc:
        raise DataError(f"{str(p)!r} is not readable as Parquet: {exc}") from None
    frame = table.to_pandas()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):  # partition keys
            frame[column] = frame[column].astype(object)
    return _file_table(
        frame,
        p,
        "Parquet",
        name,
        columns=columns,
        label=label,
        exclude=exclude,
        id_column=id_column,
    )


# --------------------------------------------------------------------------------------------
# NumPy
# --------------------------------------------------------------------------------------------


def load_numpy(
    path: PathLike,
    key: str | None = None,
    label: ColumnSpec | None = None,
    *,
    columns: Sequence[ColumnSpec] | None = None,
    name: str | None = None,
) -> Dataset:
    """Load a 2-D array from ``.npy`` or ``.npz`` (never unpickling objects).

    Parameters
    ----------
    path
        a ``.npy`` file (one array) or a ``.npz`` archive.
    key
        the array in the ``.npz`` holding the data; default the only array besides the
        labels, else ``X`` or ``x`` when present. Not allowed for ``.npy``.
    label
        the 0/1 labels (1 = anomaly): another array of the ``.npz`` (by name), or a
        column of the data (by name ``x0``, ``x1``, ... or 0-based position; it is then
        left out of the features). Default: the array ``y`` of a ``.npz`` when it is not
        the data, else none.
    columns
        the features, columns of the data by name or position; default every
        column except a ``label`` column.

    Raises
    ------
    DatasetNotFoundError
        missing file, key or column.
    DataError
        not a NumPy file, object arrays, not 2-D, empty, NaN/inf, bad labels.
    """
    p = existing_file(path, "NumPy file")
    try:
        loaded = np.load(p, allow_pickle=False)
    except ValueError as exc:
        raise DataError(
            f"{str(p)!r} cannot be loaded without unpickling objects ({exc});"
            " save plain numeric arrays"
        ) from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{str(p)!r} is not a readable .npy/.npz file: {exc}") from None
    y, arrays = None, []
    if isinstance(loaded, np.ndarray):
        if key is not None:
            raise ParameterError(
                f"{str(p)!r} is a .npy file holding a single array; key applies to .npz "
                "archives only"
            )
        X, names = _matrix_from_array(loaded, f"the array in {str(p)!r}")
    else:
        with loaded as archive:
            keys = arrays = list(archive.files)
            if not keys:
                raise DataError(f"the archive {str(p)!r} holds no arrays")
            if key is not None and key not in keys:
                raise DatasetNotFoundError(
                    f"key {key!r} is not in {str(p)!r}; its arrays are {keys}"
                )
            stored = _label_array(keys, key, label) if len(keys) > 1 else None
            if key is None:
                others = [k for k in keys if k != stored]
                candidates = [k for k in ("X", "x") if k in others]
                if len(others) == 1:
                    key = others[0]
                elif candidates:
                    key = candidates[0]
                else:
                    raise ParameterError(
                        f"{str(p)!r} holds several arrays {keys} and none is named X or x; "
                        "say which is the data with key=..., or save it as X "
                        "(numpy.savez(path, X=data, y=labels))"
                    )
            try:
                X, names = _matrix_from_array(archive[key], f"array {key!r} in {str(p)!r}")
                if stored is not None:
                    y = as_labels(archive[stored], X.shape[0], f"labels {stored!r} in {str(p)!r}")
                    label = None
            except ValueError as exc:  # object arrays inside an npz
                if isinstance(exc, DataError):
                    raise
                raise DataError(f"{str(p)!r}: {exc}") from None
    return _matrix_dataset(
        X,
        names,
        y,
        columns,
        label,
        arrays,
        name=name or _stem(p),
        description=f"NumPy data from {p.name}",
        source=str(p),
    )
