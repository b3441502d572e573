"""``privad datasets``: list the catalogue of datasets and describe one of them.

``privad datasets list`` prints the catalogue (embedded, external and generated data);
``privad datasets describe NAME`` prints an entry's fields, source and licence, and summary
statistics of the data. An unknown name, a missing file or malformed data is a
:class:`~privad.errors.PrivadError`, which ``privad.cli.main`` prints on one line before
exiting with status 2.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from privad.cli._render import JSON_OPTION, emit
from privad.cli._tables import rows_table
from privad.datasets import list_datasets
from privad.datasets.summary import (
    catalogue_rows,
    data_fields,
    describe_source,
    entry_dict,
    entry_fields,
    statistics_rows,
)
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
    payload = {"datasets": [entry_dict(entry) for entry in list_datasets(kind)]}  # type: ignore[arg-type]

    def render(console: Console) -> None:
        console.print(
            rows_table(
                "privad datasets",
                ("name", "kind", "shape", "anomalies", "licence"),
                catalogue_rows(kind),
                right=("shape", "anomalies"),
                options={
                    "name": {"no_wrap": True, "style": "bold"},
                    **dict.fromkeys(("kind", "shape", "anomalies"), {"no_wrap": True}),
                },
            )
        )
        console.print(
            "Load one with privad.datasets.load(NAME); 'privad datasets describe NAME' for "
            "details. External data is read from --path or $PRIVAD_DATA, never downloaded.",
            markup=False,
        )

    emit(payload, as_json, render)


def _fields_table(rows: list[tuple[str, str]]) -> Table:
    """Fields (an entry's, the loaded data's) as a table without header or borders."""
    options = {"field": {"style": "bold", "no_wrap": True}, "value": {"overflow": "fold"}}
    plain = {"show_header": False, "box": None, "pad_edge": False}
    return rows_table(None, ("field", "value"), rows, options=options, **plain)


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
    data = payload["data"]

    def render(console: Console) -> None:
        console.print(_fields_table(entry_fields(payload["entry"])))
        if data is not None and not data["available"]:
            console.print(f"data: not available here ({data['reason']})", markup=False)
        elif data is not None:
            console.print(_fields_table(data_fields(data)))
            if "statistics" in data:
                stats_rows = statistics_rows(data["statistics"])
                columns = ("feature", "min", "mean", "sd", "max")
                console.print(
                    rows_table("summary statistics", columns, stats_rows, right=columns[1:])
                )

    emit(payload, as_json, render)


def register(app: typer.Typer) -> None:
    """Add the ``datasets`` group to the ``privad`` command."""
    app.add_typer(datasets_app, name="datasets")
