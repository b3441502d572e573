"""``privad sp plan`` and ``privad search plan``: closed forms only, nothing read or spent.

Both print a table (or ``--json``) and can draw a figure (``--figure PATH``); the plans, their
rows, their cost in words and their figures are :mod:`privad.experiments.plans`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from privad.cli._render import emit, print_lines
from privad.cli._tables import rows_table
from privad.experiments import plans


def show_plan(
    payload: dict[str, Any],
    title: str,
    columns: Sequence[str],
    right: Sequence[str],
    as_json: bool,
    figure: str | None,
    delta: float | None,
) -> None:
    """A plan of :mod:`privad.experiments.plans`: its figure saved atomically to ``figure``
    (its format from the suffix, PNG without one) if given; then the plan, as JSON or its
    table (``columns``, those in ``right`` right-justified) and cost."""
    if figure is not None:
        import matplotlib

        matplotlib.use("Agg")
        from privad.io import atomic_write

        path = Path(figure)
        with atomic_write(path, "wb") as handle:
            plans.draw_plan(payload, delta).savefig(
                handle, format=path.suffix.lstrip(".") or "png", dpi=120
            )
    table = rows_table(title, columns, plans.plan_rows(payload), right=right)

    def render(console: Any) -> None:
        console.print(table)
        print_lines(console, plans.cost_lines(payload["cost"]))

    emit(payload, as_json, render)


def search_plan(
    eps: float,
    lo: float,
    hi: float,
    n_items: int,
    err: float,
    d: float | None,
    as_json: bool,
    figure: str | None,
) -> None:
    """``privad search plan`` (see :func:`privad.cli.search.plan`): :func:`plans.search_plan`,
    shown."""
    payload = plans.search_plan(eps, lo, hi, n_items, err, d)
    title = "Noisy binary search plan (binarized oracle)"
    show_plan(payload, title, ("quantity", "value"), ("value",), as_json, figure, d)
