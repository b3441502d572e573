"""What ``privad sp identify`` (:mod:`privad.cli.sp`) reads around its one library call,
:func:`privad.sensitive.identify`: DATA and ``--queries`` opened for the engine (in memory,
or partitioned for ``--engine dask``); and how ``sp identify`` and ``sp params`` show their
reports (:mod:`privad.sensitive.reports`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privad.cli._data import align_queries, load_table, scale_features, scaling_text
from privad.cli._options import check_output_path
from privad.cli._render import emit, print_lines, summary_table
from privad.errors import DataError, ParameterError


@dataclass(frozen=True)
class Inputs:
    """The records and queries handed to :func:`privad.sensitive.identify`, the data set's
    name and the public-bounds scaling applied (for the report), and the output path."""

    data: Any
    queries: Any
    ids: Any
    name: str
    scaling: Any
    out: Path


def in_memory(
    data: str,
    queries: str | None,
    out: str | None,
    scope: str | None,
    mechanism: str,
    bounds: Any,
    table_options: dict[str, Any],
) -> Inputs:
    """``--engine numba``: DATA (and the queries, with DATA's features and public bounds)
    loaded in this process, and the output file checked (never one of the inputs)."""
    from privad.datasets import scale_to_bounds

    ds, scaling = scale_features(load_table(data, **table_options), bounds)
    out_path = check_output_path(
        out if out is not None else f"{scope or ds.name}-{mechanism}-labels.csv", "--out"
    )
    for source in (data, queries):
        if (
            source is not None
            and Path(source).expanduser().exists()
            and out_path.resolve() == Path(source).expanduser().resolve()
        ):
            raise ParameterError(f"--out {str(out_path)!r} would overwrite the input {source!r}")
    if queries is None:
        return Inputs(ds.X, None, ds.ids, ds.name, scaling, out_path)
    # the id column, if any, must be in the queries too
    q_table = load_table(queries, id_column=table_options["id_column"])
    Q = align_queries(q_table, ds)
    if bounds:  # the same public map as the data (clip counts: the data's only)
        Q = scale_to_bounds(Q, bounds, ds.feature_names)[0]
    return Inputs(ds.X, Q, q_table.ids, ds.name, scaling, out_path)


def partitioned(
    data: str,
    queries: str | None,
    out: str | None,
    scope: str | None,
    mechanism: str,
    **columns: Any,
) -> Inputs:
    """``--engine dask``: DATA and the queries opened as partitioned files (column names
    only; the workers read them), and the output folder checked."""
    from privad.distributed import open_partitioned

    for source, option in ((data, "DATA"), (queries, "--queries")):
        if source is not None and (
            Path(source).suffix.lower() in (".npy", ".npz", ".mat")
            or not (any(ch in source for ch in "*?[") or Path(source).expanduser().exists())
        ):
            raise DataError(
                f"--engine dask reads partitioned files: give {option} as a Parquet "
                f"folder or file, or CSV files (a file or a glob like 'data/*.csv'), "
                f"got {source!r}"
            )
    source = open_partitioned(data, **columns)
    q_source = None if queries is None else open_partitioned(queries)
    out_path = check_output_path(
        out if out is not None else f"{scope or source.name}-{mechanism}-labels", "--out", "folder"
    )
    return Inputs(source, q_source, None, source.name, None, out_path)


def show(report: Any, title: str, as_json: bool) -> None:
    """A report of :mod:`privad.sensitive.reports`: its ``to_dict()`` with ``--json``, else
    its summary table and the lines under it."""

    def render(console: Any) -> None:
        console.print(summary_table(title, report.rows(scaling_text)))
        print_lines(console, report.lines)

    emit(report.to_dict(), as_json, render)
