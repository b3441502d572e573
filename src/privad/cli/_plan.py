"""``privad sp plan`` and ``privad search plan``: closed forms only, nothing read or spent.

Both print a table (or ``--json``) and can draw a figure (``--figure PATH``); the plans, their
rows, their cost in words and their figures are :mod:`privad.experiments.plans`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from privad.cli._render import emit, print_lines
from privad.experiments import plans


def _show(
    payload: dict[str, Any], table: Table, as_json: bool, figure: str | None, delta: float | None
) -> None:
    """The plan's figure saved atomically to ``figure`` (its format from the suffix, PNG
    without one) if given; then the plan, as JSON or its table and cost."""
    if figure is not None:
        import matplotlib

        matplotlib.use("Agg")
        from privad.io import atomic_write

        path = Path(figure)
        with atomic_write(path, "wb") as handle:
            plans.draw_plan(payload, delta).savefig(
                handle, format=path.suffix.lstrip(".") or "png", dpi=120
            )
    for row in plans.plan_rows(payload):
        table.add_row(*row)

    def render(console: Any) -> None:
        console.print(table)
        print_lines(console, plans.cost_lines(payload["cost"]))

    emit(payload, as_json, render)


def sp_plan(
    b: int,
    eps: float,
    k_v: int,
    n: int | None,
    d: float | None,
    max_ball: int | None,
    as_json: bool,
    figure: str | None,
) -> None:
    """``privad sp plan`` (see :func:`privad.cli.sp.plan`): :func:`plans.sp_plan`, shown."""
    payload = plans.sp_plan(b, eps, k_v, answers=n, delta=d, max_ball=max_ball)
    table = Table(
        title=f"P(labelled anomaly) by ball count B (β = {b}, ε = {eps:g}, k = {k_v};"
        " multiplicity 1)",
        title_justify="left",
    )
    for col in ("B", "anomaly?", "sp (U_λk)", "dp (U_ΔG)"):
        table.add_column(col, justify="right")
    _show(payload, table, as_json, figure, d)


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
    table = Table(title="Noisy binary search plan (binarized oracle)", title_justify="left")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    _show(payload, table, as_json, figure, d)
