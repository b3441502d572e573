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
from privad.errors import ParameterError
from privad.sensitive.accounting import flag_curve


def _emit(payload: dict[str, Any], table: Table, as_json: bool, extra: list[str]) -> None:
    def render(console: Any) -> None:
        console.print(table)
        print_lines(console, extra)

    emit(payload, as_json, render)


def _cost_lines(costs: Any) -> list[str]:
    lines = [
        f"{costs.n} answer(s) of ε = {costs.epsilon:g} that may touch one record cost: "
        f"ε = {float(costs.linear):g} by linear composition (pure ε-DP)"
    ]
    if costs.optimal is not None:
        lines.append(
            f"  and (ε = {float(costs.optimal):g}, δ = {costs.delta:g}) by the optimal "
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
    """The body of ``privad sp plan`` (see :func:`privad.cli.sp.plan`)."""
    top = (2 * b + 20) if max_ball is None else max_ball
    curve = flag_curve(b, eps, k_v, np.arange(1, top + 1))
    costs = None if n is None else composition_costs(eps, n, d)
    payload: dict[str, Any] = {
        "beta": b,
        "epsilon": eps,
        "k": k_v,
        "flag_probability": [
            {"ball": int(x), "anomaly": bool(a), "sp": float(s), "dp": float(p)}
            for x, a, s, p in zip(
                curve["ball"], curve["anomaly"], curve["sp"], curve["dp"], strict=True
            )
        ],
        "cost": None if costs is None else costs.to_dict(),
    }
    table = Table(
        title=f"P(labelled anomaly) by ball count B (β = {b}, ε = {eps:g}, k = {k_v};"
        " multiplicity 1)",
        title_justify="left",
    )
    for col in ("B", "anomaly?", "sp (U_λk)", "dp (U_ΔG)"):
        table.add_column(col, justify="right")
    show = sorted(
        {
            1,
            *range(max(1, b - 3), min(top, b + 4) + 1),
            top,
            *np.linspace(1, top, 8).astype(int).tolist(),
        }
    )
    for row in payload["flag_probability"]:
        if row["ball"] in show:
            table.add_row(
                str(row["ball"]),
                "yes" if row["anomaly"] else "no",
                f"{row['sp']:.4g}",
                f"{row['dp']:.4g}",
            )

    def draw(fig: Any) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        ax1.plot(curve["ball"], curve["sp"], label=f"sp, k = {k_v}")
        ax1.plot(curve["ball"], curve["dp"], "--", label="dp")
        ax1.axvline(b + 0.5, color="grey", lw=0.8)
        ax1.set_xlabel("records within r (B)")
        ax1.set_ylabel("P(labelled anomaly)")
        ax1.legend()
        _cost_axis(ax2, eps, n or 1000, d)

    _draw(figure, (10, 4), draw)
    _emit(payload, table, as_json, [] if costs is None else _cost_lines(costs))


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
    """The body of ``privad search plan`` (see :func:`privad.cli.search.plan`)."""
    from privad.search.theory import (
        binarized_error_probability,
        expected_queries_bound,
        threshold_ratio,
    )

    ratio = threshold_ratio(lo, hi)
    p = binarized_error_probability(eps, ratio)
    if not p < 0.5:
        raise ParameterError(
            f"at ε = {eps:g} and threshold ratio R = {ratio:.4g} an answer is wrong with "
            f"probability {p:.4g} >= 1/2: the search cannot converge; raise ε or the ratio"
        )
    expected = expected_queries_bound(n_items, p, err)
    costs = composition_costs(eps, max(1, int(np.ceil(expected))), d)
    payload = {
        "epsilon": eps,
        "threshold_ratio": ratio,
        "error_probability": p,
        "items": n_items,
        "search_error": err,
        "expected_queries_bound": expected,
        "cost": costs.to_dict(),
    }
    table = Table(title="Noisy binary search plan (binarized oracle)", title_justify="left")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    for name, value in (
        ("threshold ratio R = (t_h − t_ℓ)/t_ℓ", f"{ratio:.4g}"),
        ("answer error p (eq. 24)", f"{p:.4g}"),
        ("E[T] bound (eq. 26)", f"{expected:.1f}"),
    ):
        table.add_row(name, value)
    _draw(figure, (5, 4), lambda fig: _cost_axis(fig.subplots(), eps, costs.n, d))
    _emit(payload, table, as_json, _cost_lines(costs))
