"""``privad demo``: a tour of what privad does, on embedded data (no files needed).

The tour is the library's (:func:`privad.experiments.tour.tour`); this command adds the
section that asks a curator server over HTTP, and shows each section. It reads only
embedded data and writes nothing but an in-memory ledger (or the one named with
``--ledger``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from privad.accounting import Ledger
from privad.cli._options import check_output_path
from privad.datasets import load
from privad.experiments.tour import THYROID_BETA, THYROID_R, Section, tour
from privad.noise import Randomness


def _show(console: Console, section: Section) -> None:
    """A section as a table (or a panel of text), then its note."""
    if not section.columns:
        console.print(Panel.fit(section.text, title=section.title))
    else:
        table = Table(title=section.title)
        for i, column in enumerate(section.columns):
            right = section.right is not None and i >= section.right
            table.add_column(column, justify="right" if right else "left")
        for row in section.rows:
            table.add_row(*row)
        console.print(table)
    if section.note:
        console.print(section.note)


def _curator_section(rng: Randomness) -> Section:
    """A querier asks the curator (privad serve sp) about a few Thyroid records, over HTTP."""
    import tempfile

    from privad.geometry.warmup import compile_kernels
    from privad.sensitive import SPMechanism
    from privad.services.app import ThreadedServer
    from privad.services.auth import TokenRegistry
    from privad.services.clients import CuratorClient
    from privad.services.curator import create_curator_app

    compile_kernels()  # before the curator starts: its first request must not compile
    data = load("thyroid")
    secret = "demo-querier-" + "0123456789abcdef"
    with tempfile.TemporaryDirectory() as tmp:
        app = create_curator_app(
            data.X,
            SPMechanism(THYROID_BETA, THYROID_R, 0.1),
            db=Path(tmp) / "c.sqlite",
            ledger=Path(tmp) / "l.sqlite",
            tokens=TokenRegistry([("analyst", secret)]),
            budget=1.0,
            rng=rng,
        )
        ids = [int(i) for i in np.flatnonzero(data.y == 1)[:3]] + [0, 1]
        with ThreadedServer(app) as srv, CuratorClient(srv.url, secret, timeout=600.0) as client:
            first = client.ask_ids(ids)
            again = client.ask_ids(ids)
            far = client.ask_records(data.X[:2] + 0.5)
    return Section(
        f"privad serve sp: a querier asks the curator over HTTP ({srv.url})",
        ("request", "answers (1 = anomaly, noisy)", "charged ε", "remaining"),
        tuple(
            (
                what,
                str(reply["answers"]),
                f"{reply['charged']:g}",
                f"{reply['budget']['remaining']:g}",
            )
            for what, reply in (
                (f"ids {ids}", first),
                ("the same ids again", again),
                ("2 feature vectors (far apart)", far),
            )
        ),
        note="The querier sees noisy bits and its own budget, nothing else. Ids cost ε each, "
        "whatever the data; vectors are charged online by Claim 5 (m·ε for the whole set); "
        "a repeated question gets its recorded answer for free (docs/sensitive.md).",
    )


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
    console = Console()
    rng = Randomness(seed)
    if ledger_path is not None:
        check_output_path(ledger_path, "--ledger", "store")
    ledger = Ledger(":memory:" if ledger_path is None else ledger_path)
    console.rule("privad demo: find the anomalies, keep everyone else private")
    for section in tour(ledger, rng, curator=_curator_section):
        _show(console, section)
    console.rule("privad.accounting: what was spent on what")
    console.print(ledger.statement())


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
