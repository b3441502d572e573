"""``privad sp plan`` and ``privad search plan``: closed forms only, nothing read or spent.

Both print a table (or ``--json``) and can draw a figure (``--figure PATH``). The totals
are :func:`privad.accounting.planner.composition_costs`: N·ε by linear composition and,
with ``--delta``, the optimal composition theorem's ε at δ (Kairouz, Oh, Viswanath 2015).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from privad.accounting.planner import composition_costs
from privad.cli._render import emit, print_lines
from privad.experiments import plans


def _emit(payload: dict[str, Any], table: Table, as_json: bool, extra: list[str]) -> None:
    def render(console: Any) -> None:
        console.print(table)
        print_lines(console, extra)

    emit(payload, as_json, render)


def _cost_lines(cost: dict[str, Any] | None) -> list[str]:
    if cost is None:
        return []
    lines = [
        f"{cost['answers']} answer(s) of ε = {cost['epsilon_per_answer']:g} that may touch one "
        f"record cost: ε = {cost['linear_epsilon']:g} by linear composition (pure ε-DP)"
    ]
    if cost["optimal_epsilon"] is not None:
        lines.append(
            f"  and (ε = {cost['optimal_epsilon']:g}, δ = {cost['delta']:g}) by the optimal "
            "composition theorem"
        )
    return lines


def _draw(figure: str | None, size: tuple[float, float], draw: Callable[[Any], None]) -> None:
    """``draw(fig)`` on a new Matplotlib figure of ``size``, saved atomically to ``figure``
    (its format from the suffix, PNG without one); nothing without ``figure``."""
    if figure is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from privad.io import atomic_write

    fig = Figure(figsize=size)
    draw(fig)
    path = Path(figure)
    with atomic_write(path, "wb") as handle:
        fig.savefig(handle, format=path.suffix.lstrip(".") or "png", dpi=120)


def _cost_axis(ax: Any, epsilon: float, n: int, delta: float | None) -> None:
    counts = np.unique(np.geomspace(1, max(n, 2), num=24).astype(int))
    ax.plot(counts, counts * epsilon, label="linear (pure ε)")
    if delta is not None:
        opt = [float(composition_costs(epsilon, int(c), delta).optimal) for c in counts]  # type: ignore[arg-type]
        ax.plot(counts, opt, label=f"optimal, δ = {delta:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("answers that may touch one record")
    ax.set_ylabel("total ε")
    ax.legend()


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
    rows = payload["flag_probability"]
    top = len(rows)
    table = Table(
        title=f"P(labelled anomaly) by ball count B (β = {b}, ε = {eps:g}, k = {k_v};"
        " multiplicity 1)",
        title_justify="left",
    )
    for col in ("B", "anomaly?", "sp (U_λk)", "dp (U_ΔG)"):
        table.add_column(col, justify="right")
    show = {1, *range(max(1, b - 3), min(top, b + 4) + 1), top}
    show |= set(np.linspace(1, top, 8).astype(int).tolist())
    for row in rows:
        if row["ball"] in show:
            table.add_row(
                str(row["ball"]),
                "yes" if row["anomaly"] else "no",
                f"{row['sp']:.4g}",
                f"{row['dp']:.4g}",
            )

    def draw(fig: Any) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        balls = np.array([row["ball"] for row in rows])
        ax1.plot(balls, np.array([row["sp"] for row in rows]), label=f"sp, k = {k_v}")
        ax1.plot(balls, np.array([row["dp"] for row in rows]), "--", label="dp")
        ax1.axvline(b + 0.5, color="grey", lw=0.8)
        ax1.set_xlabel("records within r (B)")
        ax1.set_ylabel("P(labelled anomaly)")
        ax1.legend()
        _cost_axis(ax2, eps, n or 1000, d)

    _draw(figure, (10, 4), draw)
    _emit(payload, table, as_json, _cost_lines(payload["cost"]))


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
    for name, value in (
        ("threshold ratio R = (t_h − t_ℓ)/t_ℓ", f"{payload['threshold_ratio']:.4g}"),
        ("answer error p (eq. 24)", f"{payload['error_probability']:.4g}"),
        ("E[T] bound (eq. 26)", f"{payload['expected_queries_bound']:.1f}"),
    ):
        table.add_row(name, value)
    answers = payload["cost"]["answers"]
    _draw(figure, (5, 4), lambda fig: _cost_axis(fig.subplots(), eps, answers, d))
    _emit(payload, table, as_json, _cost_lines(payload["cost"]))
