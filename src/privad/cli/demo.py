"""``privad demo``: a tour of what privad does, on embedded data (no files needed).

The tour is the library's (:func:`privad.experiments.tour.tour`), with the section that asks
a curator server over HTTP (:func:`privad.services.curator_tour.curator_section`); this
command shows each section. It reads only embedded data and writes nothing but an in-memory
ledger (or the one named with ``--ledger``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.panel import Panel

from privad.accounting import Ledger
from privad.cli._options import check_output_path
from privad.cli._tables import rows_table
from privad.experiments.tour import Section, tour
from privad.noise import Randomness


def _show(console: Console, section: Section) -> None:
    """A section as a table (or a panel of text), then its note."""
    if not section.columns:
        console.print(Panel.fit(section.text, title=section.title))
    else:
        right = () if section.right is None else section.columns[section.right :]
        columns, rows = section.columns, section.rows
        console.print(rows_table(section.title, columns, rows, right=right, title_justify="center"))
    if section.note:
        console.print(section.note)


def demo(
    seed: Annotated[
        int, typer.Option(help="Seed for the randomness, so the tour is repeatable.")
    ] = 0,
    ledger_path: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            help="SQLite ledger to record the tour's spends in (default: an in-memory "
            "ledger, so the tour leaves no file behind).",
        ),
    ] = None,
) -> None:
    """Run a short tour of privad on the embedded datasets (no files needed)."""
    from privad.services.curator_tour import curator_section

    console = Console()
    rng = Randomness(seed)
    if ledger_path is not None:
        check_output_path(ledger_path, "--ledger", "store")
    ledger = Ledger(":memory:" if ledger_path is None else ledger_path)
    console.rule("privad demo: find the anomalies, keep everyone else private")
    for section in tour(ledger, rng, curator=curator_section):
        _show(console, section)
    console.rule("privad.accounting: what was spent on what")
    console.print(ledger.statement())


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
