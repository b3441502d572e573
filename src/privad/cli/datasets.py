"""``privad datasets``: list the catalogue of datasets and describe one of them.

``privad datasets list`` prints the catalogue (embedded, external and generated data);
``privad datasets describe NAME`` prints an entry's fields, source and licence, and summary
statistics of the data. An unknown name, a missing file or malformed data is a
:class:`~privad.errors.PrivadError`, which ``privad.cli.main`` prints on one line before
exiting with status 2.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from privad.cli._render import JSON_OPTION, emit
from privad.datasets import list_datasets
from privad.datasets.summary import describe_source, entry_dict
from privad.errors import ParameterError

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
    payload = {"datasets": [entry_dict(entry) for entry in entries]}

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


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _stats_table(statistics: list[dict[str, Any]]) -> Table:
    table = Table(title="summary statistics", title_justify="left")
    for column in ("feature", "min", "mean", "sd", "max"):
        table.add_column(column, justify="left" if column == "feature" else "right")
    for row in statistics[:_MAX_FEATURES]:
        table.add_row(row["feature"], *(_fmt(row[k]) for k in ("min", "mean", "sd", "max")))
    if len(statistics) > _MAX_FEATURES:
        table.add_row(f"... {len(statistics) - _MAX_FEATURES} more", "", "", "", "")
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
    payload = describe_source(name, path=path, seed=seed, stats=stats)

    def render(console: Console) -> None:
        for item in [_entry_view(payload["entry"]), *_data_view(payload["data"])]:
            console.print(item, markup=False) if isinstance(item, str) else console.print(item)

    emit(payload, as_json, render)


def _entry_view(entry: dict[str, Any]) -> Table:
    """A catalogue entry's (or a file's) fields."""
    if entry["kind"] == "file":
        return _fields_table([("name", entry["name"]), ("kind", "file")])
    rows: list[tuple[str, Any]] = [
        ("name", entry["name"]),
        ("kind", entry["kind"]),
        ("shape", "varies" if entry["shape"] is None else "{} x {}".format(*entry["shape"])),
        ("anomalies", entry["anomalies_text"]),
        *((key, entry[key]) for key in ("description", "source", "licence", "usage")),
    ]
    if "sha256" in entry:
        rows += [(f"file {f}", f"sha256 {digest}") for f, digest in entry["sha256"].items()]
    elif entry["files"]:
        rows.append(("file", ", ".join(entry["files"])))
    return _fields_table(rows)


def _data_view(data: dict[str, Any] | None) -> list[Any]:
    """The loaded data's summary: what the table view prints."""
    if data is None:
        return []
    if not data["available"]:
        return [f"data: not available here ({data['reason']})"]
    if "points" in data:  # a time series
        v = data["values"]
        windows = "; ".join(f"{s} .. {e}" for s, e in data["windows"]) or "-"
        return [
            _fields_table(
                [
                    ("points", data["points"]),
                    ("from", data["from"]),
                    ("to", data["to"]),
                    ("anomalous points", data["anomalous_points"]),
                    ("windows", windows),
                    (
                        "values",
                        f"min {_fmt(v['min'])}, mean {_fmt(v['mean'])},"
                        f" sd {_fmt(v['sd'])}, max {_fmt(v['max'])}",
                    ),
                ]
            )
        ]
    share = data["anomaly_share"]
    rows: list[tuple[str, Any]] = [
        ("loaded", f"{data['records']} x {data['features']}"),
        ("labelled anomalies", "unlabelled" if share is None else data["anomalies"]),
    ]
    if share is not None:
        rows.append(("anomaly share", f"{share:.4%}"))
    if "classes" in data:
        rows.append(("classes", ", ".join(f"{v}: {c}" for v, c in data["classes"].items())))
    if data["seed"] is not None:
        rows.append(("seed", data["seed"]))
    return [_fields_table(rows), _stats_table(data["statistics"])]


def register(app: typer.Typer) -> None:
    """Add the ``datasets`` group to the ``privad`` command."""
    app.add_typer(datasets_app, name="datasets")
