"""Partitioned input and output: a Parquet folder or CSV files in, a Parquet folder out.

Input
    :func:`open_partitioned` opens a Parquet folder (one partition per file, in file-name
    order), one Parquet file, or a CSV file or glob (``'archive/*.csv'``) as a Dask
    DataFrame on the driver and selects the feature columns (by name or 0-based position,
    as ``privad sp identify --columns`` does; the ``label`` column is left out) from the
    files' metadata, so an unknown column is reported before any worker reads a record.
    :meth:`PartitionedSource.load` (or :func:`read_partitioned`, both steps) then reads and
    checks every value on the workers, partition by partition, with the rules and messages
    of the single-machine loaders (:mod:`privad.columns`).
Output
    :func:`atomic_folder` (:mod:`privad.io`, re-exported here) gives a fresh temporary
    folder beside the target and renames it onto the target only when the block succeeds;
    on any failure the temporary folder is deleted, so a job leaves either the complete
    folder or nothing, and the staging folder of a job killed outright is removed by the
    next run on the same target (:func:`privad.io.remove_leftovers`). The target must not
    exist (privad never overwrites output). Parts are named ``part-00000.parquet``, ... in
    partition order (:func:`part_name`).
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privad.columns import numeric_column, plan_columns
from privad.errors import DataError, DatasetNotFoundError, ParameterError
from privad.io import atomic_folder, check_output_path

__all__ = [
    "PartitionedSource",
    "PartitionedTable",
    "atomic_folder",
    "check_new_folder",
    "open_partitioned",
    "part_name",
    "read_partitioned",
    "release_folder",
    "write_columns",
    "write_part",
]

PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True, eq=False)
class PartitionedTable:
    """Validated records held by the workers, one block per input partition.

    Attributes
    ----------
    records
        (n, d) float64 Dask array; its row chunks are the input partitions (some
        may be empty), so ``records.chunks[0] == lengths``.
    feature_names
        the d selected column names, as strings.
    lengths
        records per partition.
    name
        the data's name (the file or folder name without extension).
    source
        what was read (path or glob), for messages.
    """

    records: Any
    feature_names: list[str]
    lengths: tuple[int, ...]
    name: str
    source: str

    @property
    def n_records(self) -> int:
        """n, the number of records."""
        return int(sum(self.lengths))

    @property
    def n_partitions(self) -> int:
        """The number of partitions (including empty ones)."""
        return len(self.lengths)

    def offsets(self) -> np.ndarray:
        """The global index of each partition's first record, shape (partitions + 1,)."""
        return np.concatenate([[0], np.cumsum(self.lengths, dtype=np.int64)])


def _open_frame(source: str) -> tuple[Any, str, str]:
    """(Dask DataFrame, kind, name) for a Parquet folder/file or a CSV file/glob."""
    import dask.dataframe as dd

    path = Path(source).expanduser()
    if any(ch in source for ch in "*?["):
        files = sorted(glob.glob(str(path)))
        if not files:
            raise DatasetNotFoundError(f"no file matches {source!r}")
        suffixes = {Path(f).suffix.lower() for f in files}
        kind = (
            "csv"
            if suffixes == {".csv"}
            else "parquet"
            if suffixes <= set(PARQUET_SUFFIXES)
            else None
        )
        if kind is None:
            raise DataError(
                f"{source!r} matches files of several kinds ({sorted(suffixes)}); "
                "a glob must match only .csv or only .parquet files"
            )
        target: Any = files
        name = Path(files[0]).parent.name or "data"
    elif not path.exists():
        raise DatasetNotFoundError(
            f"{source!r} does not exist; give a Parquet folder or "
            "file, or CSV files (a file or a glob like 'data/*.csv')"
        )
    elif path.is_dir():
        hidden = (".", "_")
        if not any(f.is_file() and not f.name.startswith(hidden) for f in path.rglob("*")):
            raise DataError(f"the Parquet folder {source!r} holds no data files")
        kind, target, name = "parquet", str(path), path.name
    elif path.suffix.lower() in PARQUET_SUFFIXES + (".csv",):
        kind = "csv" if path.suffix.lower() == ".csv" else "parquet"
        target, name = str(path), path.stem
    else:
        raise DataError(f"{source!r} is not a Parquet folder, a Parquet file or a CSV file")
    try:
        if kind == "csv":
            frame = dd.read_csv(target, skipinitialspace=True, blocksize=None)
        else:
            frame = dd.read_parquet(target)
    except Exception as exc:  # OSError, ValueError, pyarrow's and pandas' parser errors
        raise DataError(f"{source!r} is not readable as {kind.upper()}: {exc}") from None
    return frame, kind, name


def _float_partition(
    part: Any, selected: list[Any], source: str, partition_info: Any = None
) -> Any:
    """One partition's selected columns as finite float64 (the single-machine checks)."""
    import pandas as pd

    number = "?" if partition_info is None else partition_info.get("number", "?")
    where = f"{source} (partition {number})"
    columns = {str(c): numeric_column(part[c], c, where) for c in selected}
    return pd.DataFrame(columns, index=pd.RangeIndex(len(part)), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class PartitionedSource:
    """A partitioned input opened on the driver: columns resolved, nothing read yet.

    Attributes
    ----------
    frame
        the lazy Dask DataFrame of the selected columns as checked float64.
    feature_names
        the selected column names, as strings.
    name
        the data's name (file or folder name without extension).
    source
        what was opened, for messages.
    """

    frame: Any
    feature_names: list[str]
    name: str
    source: str

    @property
    def n_partitions(self) -> int:
        """The number of input partitions."""
        return int(self.frame.npartitions)

    def load(self, *, persist: bool = True) -> PartitionedTable:
        """Read and check the records on the workers (needs a Dask scheduler).

        With ``persist`` (default) the checked records stay in the workers' memory for the
        passes that follow (ball counts need several); the partition lengths are computed
        in the same pass.
        """
        frame = self.frame.persist() if persist else self.frame
        lengths = tuple(int(n) for n in frame.map_partitions(len).compute())
        if sum(lengths) == 0:
            raise DataError(f"{self.source!r} has no data rows")
        records = frame.to_dask_array(lengths=lengths)
        return PartitionedTable(
            records=records,
            feature_names=self.feature_names,
            lengths=lengths,
            name=self.name,
            source=self.source,
        )


def open_partitioned(
    source: str,
    *,
    columns: Sequence[Any] | None = None,
    label: Any = None,
    exclude: Sequence[Any] | None = None,
) -> PartitionedSource:
    """Open ``source`` on the driver (see the module docstring); read nothing yet.

    Column names are resolved from the files' metadata, so every error below except the
    value checks is raised before a worker starts; :meth:`PartitionedSource.load` then
    reads and checks the values on the workers. ``columns``, ``label`` and ``exclude``
    follow :func:`privad.datasets.tables.plan_columns`.

    Raises
    ------
    DatasetNotFoundError
        missing path, glob matching nothing, unknown column.
    DataError
        unreadable files, no columns; on load: no rows, a non-numeric, missing
        or infinite value (the message names the column, the partition and the row
        within it).
    ParameterError
        the label or an excluded column is also a feature, a column listed
        twice.
    """
    frame, _, name = _open_frame(source)
    names = list(frame.columns)
    if not names:
        raise DataError(f"{source!r} has no columns")
    selected = plan_columns(
        names, columns=columns, label=label, exclude=exclude, source=source
    ).features
    meta = {str(c): np.float64 for c in selected}
    checked = frame[selected].map_partitions(_float_partition, selected, source, meta=meta)
    return PartitionedSource(
        frame=checked, feature_names=[str(c) for c in selected], name=name, source=source
    )


def read_partitioned(
    source: str,
    *,
    columns: Sequence[Any] | None = None,
    label: Any = None,
    persist: bool = True,
) -> PartitionedTable:
    """:func:`open_partitioned` then :meth:`PartitionedSource.load`: the checked records."""
    return open_partitioned(source, columns=columns, label=label).load(persist=persist)


def check_new_folder(path: str | os.PathLike[str], option: str = "--output") -> Path:
    """``path`` as an output folder that does not exist yet (privad never overwrites), in a
    writable folder that exists (:func:`privad.io.check_output_path`)."""
    return check_output_path(path, option, kind="folder")


def part_name(index: int) -> str:
    """The file name of output partition ``index``: ``part-00000.parquet``, ..."""
    return f"part-{int(index):05d}.parquet"


def write_part(folder: Path, index: int, frame: Any) -> Path:
    """Write one partition (a pandas DataFrame) as ``folder/part-XXXXX.parquet``."""
    path = folder / part_name(index)
    frame.to_parquet(path, index=False)
    return path


def _write_block(
    folder: Path, index: int, start: int, names: list[str], *values: np.ndarray
) -> str:
    """One output part: the global record numbers from ``start``, then the named columns."""
    import pandas as pd

    n = len(values[0]) if values else 0
    frame = pd.DataFrame({"index": np.arange(start, start + n, dtype=np.int64)})
    for name, column in zip(names, values, strict=True):
        frame[name] = np.asarray(column)
    return str(write_part(folder, index, frame))


def write_columns(folder: Path, columns: dict[str, Any], lengths: Sequence[int]) -> list[str]:
    """Write one Parquet part per partition: ``index`` (global record number) and ``columns``.

    ``columns`` maps output names to 1-D arrays of all n records, cut into partitions of
    ``lengths`` records (an empty partition gives a part with no rows, so the parts match
    the input's partitions one to one). NumPy columns are written by this process; if any
    column is a Dask array, each part is written by the worker holding it (``folder`` must
    then be on a file system the workers share with the driver).
    """
    import dask
    import dask.array as da

    lengths = [int(n) for n in lengths]
    starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])[:-1].tolist()
    names = list(columns)
    if not any(isinstance(v, da.Array) for v in columns.values()):
        cuts = np.cumsum(lengths)[:-1]
        split = [np.split(np.asarray(columns[name]), cuts) for name in names]
        return [
            _write_block(folder, i, start, names, *(parts[i] for parts in split))
            for i, start in enumerate(starts)
        ]
    blocks = [
        da.asarray(columns[name]).rechunk((tuple(lengths),)).to_delayed().ravel() for name in names
    ]
    tasks = [
        dask.delayed(_write_block)(folder, i, start, names, *(b[i] for b in blocks))
        for i, start in enumerate(starts)
    ]
    return list(dask.compute(*tasks))


@contextlib.contextmanager
def release_folder(
    target: str | os.PathLike[str],
    *,
    ledger: Any = None,
    scope: str | None = None,
    guarantee: Any = None,
    label: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Iterator[Path]:
    """:func:`atomic_folder`, with the job's one ledger spend around it.

    With a :class:`~privad.accounting.Ledger`, ``guarantee`` is reserved on ``scope`` before
    the block runs (a refusal raises :class:`~privad.errors.BudgetExceededError` and nothing
    is computed or written), so it counts before anything is released; when the block
    succeeds the folder is made durable and renamed into place, and only then is the spend
    committed. If the block, the ``fsync`` or the rename fails (a full disk:
    :class:`~privad.errors.OutputError`), the reservation is cancelled and the temporary
    folder deleted: nothing was released and nothing is spent. Only the driver touches the
    ledger.
    """
    if ledger is None:
        with atomic_folder(target) as tmp:
            yield tmp
        return
    if scope is None or guarantee is None or label is None:
        raise ParameterError("a ledger spend needs scope, guarantee and label")
    with ledger.reserve(scope, guarantee, label, metadata), atomic_folder(target) as tmp:
        yield tmp  # leaving the inner block publishes the folder; then the spend is committed
