"""``privad demo``: a tour of what privad does, on embedded data."""

from __future__ import annotations

import typer
from rich.console import Console


def demo(
    seed: int = typer.Option(0, help="Seed for the randomness, so the tour is repeatable."),
) -> None:
    """Run a short tour of privad on the embedded datasets (no files needed)."""
    console = Console()
    console.print(f"privad demo (seed {seed})")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
