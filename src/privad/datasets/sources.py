"""DATA as the ``privad`` commands read it, for Python users too: a table with column roles
(:func:`load_table`), features scaled from public bounds (:func:`scale_features`), query
records aligned with the data (:func:`align_queries`) and one series of values for a search
oracle (:func:`load_series`).

A source is a catalogue name (``privad.datasets.list_datasets``), a data file (.csv,
.parquet, .npy, .npz, .mat) or a folder of Parquet parts, read by the one column and label
rule of every format (:mod:`privad.datasets.formats`). The messages name the command
line's options (``--column``, ``--labels-column``), which these parameters are.

Examples
--------
>>> from privad.datasets.sources import load_table, load_series
>>> load_table("thyroid", columns=["0", "1"]).X.shape
(3772, 2)
>>> series = load_series("nab:ec2_request_latency_system_failure")
>>> series.values.ndim, series.labels is not None
(1, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError

__all__ = [
    "FILE_SUFFIXES",
    "SeriesData",
    "align_queries",
    "load_series",
    "load_table",
    "scale_features",
]

FILE_SUFFIXES = (".csv", ".parquet", ".pq", ".npy", ".npz", ".mat")
"""The suffixes read as a data file (anything else is a catalogue name, unless it exists)."""


def _as_dataset(obj: Any) -> Any:
    from privad.datasets import TimeSeries

    return obj.to_dataset() if isinstance(obj, TimeSeries) else obj


def load_table(
    source: str,
    *,
    columns: list[str] | None = None,
    label: str | None = None,
    exclude: list[str] | None = None,
    id_column: str | None = None,
    seed: int | None = None,
) -> Any:
    """Load DATA (a catalogue name, a file or a Parquet folder) as a
    :class:`privad.datasets.Dataset` with the column roles of
    :func:`privad.datasets.tables.plan_columns` (features, label, excluded, id)."""
    from privad import datasets
    from privad.datasets.tables import select_columns

    roles = {"columns": columns, "exclude": exclude, "id_column": id_column}
    path = Path(source).expanduser()
    suffix = path.suffix.lower()
    if suffix in FILE_SUFFIXES or path.exists():
        if path.is_dir() or suffix in (".csv", ".parquet", ".pq"):  # a folder: Parquet parts
            return datasets.load(path, label=label, **roles)
        return select_columns(_as_dataset(datasets.load(path, label=label)), **roles)
    entry = datasets.describe(source)  # unknown names: DatasetNotFoundError with suggestions
    if entry.kind == "generated":
        loaded = datasets.load(entry.name, rng=0 if seed is None else seed)
    else:
        loaded = datasets.load(entry.name)
    return select_columns(_as_dataset(loaded), label=label, **roles)


def scale_features(
    ds: Any, bounds: dict[str, tuple[float, float]] | None, *, check: bool = True
) -> tuple[Any, Any]:
    """DATA's features scaled with the public ``bounds`` (if any), then the warning when one
    column dominates the distances (``check``); (dataset, :class:`BoundsScaling` or None)."""
    from dataclasses import replace

    from privad.datasets import check_feature_scales, scale_to_bounds

    scaling = None
    if bounds:
        X, scaling = scale_to_bounds(ds.X, bounds, ds.feature_names)
        ds = replace(ds, X=X)
    if check:
        check_feature_scales(ds.X, ds.feature_names)
    return ds, scaling


def align_queries(Q: Any, data: Any) -> np.ndarray:
    """The query records with the data's feature columns (by name when possible)."""
    names_q = list(Q.feature_names)
    names_d = list(data.feature_names)
    if all(n in names_q for n in names_d) and names_q != names_d:
        return Q.X[:, [names_q.index(n) for n in names_d]]
    if Q.X.shape[1] != data.X.shape[1]:
        raise DataError(
            f"the queries have {Q.X.shape[1]} column(s) but the data has {data.X.shape[1]} "
            f"({', '.join(names_d[:12])}); give query records with the same features"
        )
    return Q.X


_MATRIX_SUFFIXES = (".csv", ".npy", ".npz", ".parquet", ".pq")


@dataclass(frozen=True)
class SeriesData:
    """The values an oracle holds, their name, and labels when the source has them."""

    name: str
    values: np.ndarray
    labels: np.ndarray | None


def _is_yahoo(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            header = handle.readline()
    except OSError:
        return False
    names = {h.strip().lower() for h in header.split(",")}
    return (
        "value" in names
        and bool(names & {"is_anomaly", "anomaly"})
        and bool(names & {"timestamp", "timestamps"})
    )


def _one_column(ds: Any, column: str | None, source: str) -> np.ndarray:
    names = list(ds.feature_names)
    X = np.asarray(ds.X)
    if X.shape[1] == 1:
        return X[:, 0]
    if column is None and "value" in names:
        return X[:, names.index("value")]
    shown = ", ".join(repr(n) for n in names[:8]) + (" ..." if len(names) > 8 else "")
    raise ParameterError(
        f"{source} has {X.shape[1]} columns ({shown}); choose the value column with --column"
    )


def load_series(
    source: str, *, column: str | None = None, labels_column: str | None = None
) -> SeriesData:
    """Read DATA for an oracle: the values (1-D) and the labels if the source has them."""
    from privad import datasets

    path = Path(source).expanduser()
    suffix = path.suffix.lower()
    if path.is_dir():
        raise DataError(f"{source!r} is a folder; give a data file or a series name")
    if path.is_file() or suffix in _MATRIX_SUFFIXES:
        if suffix == ".csv" and _is_yahoo(path) and column is None and labels_column is None:
            ts = datasets.load_yahoo(path)
            return SeriesData(ts.name, ts.values, ts.labels)
        if suffix == ".npy" and path.is_file():
            try:
                arr = np.load(path, allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise DataError(f"{source!r} is not a readable .npy file: {exc}") from None
            if labels_column is not None:
                raise ParameterError("--labels-column does not apply to a .npy file")
            if arr.ndim == 1 or (arr.ndim == 2 and arr.shape[1] == 1):
                if arr.dtype.kind not in "biuf":
                    raise DataError(f"{source!r} must hold numbers, got dtype {arr.dtype}")
                return SeriesData(path.stem, arr.reshape(-1).astype(np.float64), None)
            raise DataError(
                f"{source!r} holds an array of shape {arr.shape}; the oracle needs "
                "a vector of values"
            )
        options: dict[str, Any] = {}
        if suffix in (".csv", ".parquet", ".pq"):
            options = {"label": labels_column}
            if column is not None:
                options["columns"] = [column]
        elif suffix == ".npz":
            options = {"key": column, "label": labels_column}
        ds = datasets.load(path, **options)
        values = _one_column(ds, column, repr(source))
        return SeriesData(ds.name, values, ds.y)
    if column is not None or labels_column is not None:
        raise ParameterError("--column and --labels-column apply to data files only")
    loaded = datasets.load(source)
    if isinstance(loaded, datasets.TimeSeries):
        return SeriesData(loaded.name, loaded.values, loaded.labels)
    return SeriesData(loaded.name, _one_column(loaded, None, repr(source)), loaded.y)
