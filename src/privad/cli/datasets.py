"""``privad datasets``: list the catalogue of datasets and describe one of them.

``privad datasets list`` prints the catalogue (embedded, external and generated data);
``privad datasets describe NAME`` prints an entry's fields, source and licence, and summary
statistics of the data. An unknown name, a missing file or malformed data is a
:class:`~privad.errors.PrivadError`, which ``privad.cli.main`` prints on one line before
exiting with status 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from privad.cli._render import JSON_OPTION, emit
from privad.datasets import Dataset, DatasetInfo, TimeSeries, describe, list_datasets, load
from privad.datasets.embedded import expected_sha256
from privad.errors import DatasetNotFoundError, ParameterError

datasets_app = typer.Typer(
    name="datasets",
    help=(
        "Datasets: what privad ships, what it reads from your files, what it generates.\n\n"
        "'privad datasets list' shows the catalogue; 'privad datasets describe NAME' shows one "
        "entry with its source, licence and summary statistics."
    ),
    no_args_is_help=True,
    add_completion=False,
)

_KINDS = ("embedded", "generated", "external")
_MAX_FEATURES = 20


def _when(stamp: np.datetime64) -> str:
    return np.datetime_as_string(stamp, unit="s").replace("T", " ")


@datasets_app.command("list")
def list_command(
    kind: str | None = typer.Option(
        None,
        "--kind",
        metavar="KIND",
        help="Show only one kind: embedded, generated or external. Default: all.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """List the datasets privad knows: name, kind, shape, anomalies, licence."""
    if kind is not None and kind not in _KINDS:
        raise ParameterError(f"--kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    entries = list_datasets(kind)  # type: ignore[arg-type]
    payload = {"datasets": [_entry_dict(entry) for entry in entries]}

    def render(console: Console) -> None:
        table = Table(title="privad datasets", title_justify="left")
        table.add_column("name", no_wrap=True, style="bold")
        table.add_column("kind", no_wrap=True)
        table.add_column("shape", justify="right", no_wrap=True)
        table.add_column("anomalies", justify="right", no_wrap=True)
        table.add_column("licence")
        for entry in entries:
            table.add_row(
                entry.name,
                entry.kind,
                entry.shape_text,
                entry.anomalies_text,
                entry.licence_short or entry.licence,
            )
        console.print(table)
        console.print(
            "Load one with privad.datasets.load(NAME); 'privad datasets describe NAME' for "
            "details. External data is read from --path or $PRIVAD_DATA, never downloaded.",
            markup=False,
        )

    emit(payload, as_json, render)


def _entry_dict(entry: DatasetInfo) -> dict[str, Any]:
    """A catalogue entry as JSON data."""
    return {
        "name": entry.name,
        "kind": entry.kind,
        "shape": None if entry.shape is None else list(entry.shape),
        "anomalies": entry.n_anomalies,
        "anomalies_text": entry.anomalies_text,
        "series": entry.series,
        "description": entry.description,
        "source": entry.source,
        "licence": entry.licence,
        "usage": entry.usage,
        "files": list(entry.files),
    }


def _load_for_stats(entry: DatasetInfo, path: str | None, seed: int) -> Dataset | TimeSeries:
    if entry.kind == "generated":
        if path is not None:
            raise ParameterError(f"--path does not apply to the generated dataset {entry.name!r}")
        return entry.loader(rng=seed)
    if entry.kind == "external":
        return entry.loader(path=path)
    if path is not None:
        raise ParameterError(f"--path does not apply to the embedded dataset {entry.name!r}")
    return entry.loader()


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _stats_table(data: Dataset) -> Table:
    X = data.X
    table = Table(title="summary statistics", title_justify="left")
    for column, justify in (
        ("feature", "left"),
        ("min", "right"),
        ("mean", "right"),
        ("sd", "right"),
        ("max", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    shown = min(X.shape[1], _MAX_FEATURES)
    mins, maxs = X[:, :shown].min(axis=0), X[:, :shown].max(axis=0)
    means, sds = X[:, :shown].mean(axis=0), X[:, :shown].std(axis=0)
    for j in range(shown):
        table.add_row(
            data.feature_names[j], _fmt(mins[j]), _fmt(means[j]), _fmt(sds[j]), _fmt(maxs[j])
        )
    if X.shape[1] > shown:
        table.add_row(f"... {X.shape[1] - shown} more", "", "", "", "")
    return table


def _fields_table(rows: list[tuple[str, Any]]) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in rows:
        table.add_row(key, str(value))
    return table


@datasets_app.command("describe")
def describe_command(
    name: str = typer.Argument(
        ...,
        metavar="NAME",
        help="A dataset name from 'privad datasets list', e.g. thyroid, or the path of a data "
        "file (.csv, .parquet, .npy, .npz, .mat) or of a folder of Parquet files.",
    ),
    path: str | None = typer.Option(
        None,
        "--path",
        metavar="PATH",
        help="File (or folder) of an external dataset: gas, creditcard, yahoo.",
    ),
    seed: int = typer.Option(
        0, "--seed", help="Seed of a generated dataset, so the statistics are repeatable."
    ),
    stats: bool = typer.Option(
        True,
        "--stats/--no-stats",
        help="Load the data and print summary statistics (default), or only the entry.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Describe one dataset (fields, source, licence and summary statistics) or a data file."""
    entry = _registered(name)
    if entry is None:  # a data file, read by the rule of every data file (docs/data.md)
        if path is not None:
            raise ParameterError(
                "--path applies to the external datasets (gas, creditcard, yahoo); "
                f"{name!r} is a file: it is described as it is"
            )
        shown: list[Any] = [_fields_table([("name", name), ("kind", "file")])]
        payload: dict[str, Any] = {"entry": {"name": name, "kind": "file"}, "data": None}
        if stats:
            payload["data"], more = _summary(load(Path(name).expanduser()), None)
            shown += more
    else:
        payload, shown = _entry_view(entry, path, seed, stats)

    def render(console: Console) -> None:
        for item in shown:
            console.print(item, markup=False) if isinstance(item, str) else console.print(item)

    emit(payload, as_json, render)


def _registered(name: str) -> DatasetInfo | None:
    """The registry's entry of ``name``; None for a path that exists (a data file)."""
    try:
        return describe(name)
    except DatasetNotFoundError:
        if Path(name).expanduser().exists():
            return None
        raise


def _entry_view(
    entry: DatasetInfo, path: str | None, seed: int, stats: bool
) -> tuple[dict[str, Any], list[Any]]:
    """A registered dataset's description as JSON data and as what the table view prints."""
    rows: list[tuple[str, Any]] = [
        ("name", entry.name),
        ("kind", entry.kind),
        ("shape", entry.shape_text),
        ("anomalies", entry.anomalies_text),
        ("description", entry.description),
        ("source", entry.source),
        ("licence", entry.licence),
        ("usage", entry.usage),
    ]
    payload: dict[str, Any] = {"entry": _entry_dict(entry), "data": None}
    if entry.kind == "embedded":
        sums = {f: expected_sha256(f) for f in entry.files}
        rows += [(f"file {f}", f"sha256 {digest}") for f, digest in sums.items()]
        payload["entry"]["sha256"] = sums
    elif entry.files:
        rows.append(("file", ", ".join(entry.files)))
    shown: list[Any] = [_fields_table(rows)]
    if stats:
        payload["data"], more = _data_summary(entry, path, seed)
        shown += more
    return payload, shown


def _data_summary(
    entry: DatasetInfo, path: str | None, seed: int
) -> tuple[dict[str, Any], list[Any]]:
    """The loaded data's summary as JSON data and as what the table view prints."""
    try:
        data = _load_for_stats(entry, path, seed)
    except DatasetNotFoundError as exc:
        if entry.kind == "external" and path is None:
            return ({"available": False, "reason": str(exc)}, [f"data: not available here ({exc})"])
        raise
    return _summary(data, seed if entry.kind == "generated" else None)


def _summary(data: Dataset | TimeSeries, seed: int | None) -> tuple[dict[str, Any], list[Any]]:
    """Loaded data's summary (``seed``: that of generated data, else None)."""
    if isinstance(data, TimeSeries):
        values = data.values
        info: dict[str, Any] = {
            "available": True,
            "points": len(data),
            "from": _when(data.timestamps[0]),
            "to": _when(data.timestamps[-1]),
            "anomalous_points": data.n_anomalies,
            "windows": [[_when(s), _when(e)] for s, e in data.windows],
            "values": {
                "min": values.min(),
                "mean": values.mean(),
                "sd": values.std(),
                "max": values.max(),
            },
        }
        return info, [
            _fields_table(
                [
                    ("points", len(data)),
                    ("from", info["from"]),
                    ("to", info["to"]),
                    ("anomalous points", data.n_anomalies),
                    ("windows", "; ".join(f"{s} .. {e}" for s, e in info["windows"]) or "-"),
                    (
                        "values",
                        f"min {_fmt(values.min())}, mean {_fmt(values.mean())},"
                        f" sd {_fmt(values.std())}, max {_fmt(values.max())}",
                    ),
                ]
            )
        ]
    n, d = data.shape
    X = data.X
    info = {
        "available": True,
        "records": n,
        "features": d,
        "anomalies": data.n_anomalies,
        "anomaly_share": None if data.y is None else float(data.y.mean()),
        "seed": seed,
        "statistics": [
            {"feature": f, "min": lo, "mean": mu, "sd": sd, "max": hi}
            for f, lo, mu, sd, hi in zip(
                data.feature_names,
                X.min(axis=0),
                X.mean(axis=0),
                X.std(axis=0),
                X.max(axis=0),
                strict=True,
            )
        ],
    }
    summary = [
        ("loaded", f"{n} x {d}"),
        ("labelled anomalies", "unlabelled" if data.y is None else data.n_anomalies),
    ]
    if data.y is not None:
        summary.append(("anomaly share", f"{data.y.mean():.4%}"))
    if data.classes is not None:
        values, counts = np.unique(data.classes, return_counts=True)
        info["classes"] = {str(v): int(c) for v, c in zip(values, counts, strict=True)}
        summary.append(("classes", ", ".join(f"{v}: {c}" for v, c in info["classes"].items())))
    if seed is not None:
        summary.append(("seed", seed))
    return info, [_fields_table(summary), _stats_table(data)]


def register(app: typer.Typer) -> None:
    """Add the ``datasets`` group to the ``privad`` command."""
    app.add_typer(datasets_app, name="datasets")
