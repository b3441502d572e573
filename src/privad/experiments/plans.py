"""Plans before spending, as data: what ``privad sp plan`` and ``privad search plan`` show,
for Python users too. Closed forms only: nothing is read, drawn or spent.

* :func:`sp_plan`: the probability that a record is labelled an anomaly, by its ball count,
  under sensitive privacy's U_λk and optimal DP's U_ΔG
  (:func:`privad.sensitive.accounting.flag_curve`), and what N answers cost.
* :func:`search_plan`: the noisy binary search's answer error p (eq. 24) and the bound on
  its expected number of queries (eq. 26), and what they cost.
* :func:`plan_rows`, :func:`cost_lines` and :func:`draw_plan`: a plan as the table rows, the
  lines and the figure the commands show.

Costs are :func:`privad.accounting.composition_costs`: N·ε by linear composition and, with
``delta``, the optimal composition theorem's ε at δ (Kairouz, Oh, Viswanath 2015).

Examples
--------
>>> from privad.experiments.plans import search_plan, sp_plan
>>> plan = sp_plan(3, 0.5, 1, max_ball=8)
>>> [row["anomaly"] for row in plan["flag_probability"]][:4]
[True, True, True, False]
>>> round(search_plan(1.0, 1.0, 2.0, 100, 0.1)["threshold_ratio"], 3)
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privad.accounting.planner import CompositionCosts, composition_costs
from privad.errors import ParameterError

__all__ = ["cost_lines", "draw_plan", "plan_rows", "search_plan", "sp_plan"]


def sp_plan(
    beta: int,
    epsilon: float,
    k: int,
    *,
    answers: int | None = None,
    delta: float | None = None,
    max_ball: int | None = None,
) -> dict[str, Any]:
    """P(labelled anomaly) for ball counts 1..``max_ball`` (default 2β + 20) and, with
    ``answers``, the cost of that many answers of ε (at ``delta`` too, when given)."""
    from privad.sensitive.accounting import flag_curve

    top = (2 * beta + 20) if max_ball is None else max_ball
    curve = flag_curve(beta, epsilon, k, np.arange(1, top + 1))
    costs = None if answers is None else composition_costs(epsilon, answers, delta)
    return {
        "beta": beta,
        "epsilon": epsilon,
        "k": k,
        "flag_probability": [
            {"ball": int(x), "anomaly": bool(a), "sp": float(s), "dp": float(p)}
            for x, a, s, p in zip(
                curve["ball"], curve["anomaly"], curve["sp"], curve["dp"], strict=True
            )
        ],
        "cost": None if costs is None else costs.to_dict(),
    }


def search_plan(
    epsilon: float,
    t_low: float,
    t_high: float,
    items: int,
    error: float,
    delta: float | None = None,
    *,
    strict: bool = True,
    costs: Callable[[float, int, float | None], CompositionCosts] = composition_costs,
) -> dict[str, Any]:
    """The binarized oracle's answer error and the expected number of queries to find the
    anomaly among ``items`` with probability ≥ 1 − ``error``, and their cost.

    When an answer is wrong with probability ≥ 1/2 no search converges: a ParameterError,
    or with ``strict=False`` the plan without a bound or a cost (``converges`` False).
    ``costs`` prices the expected queries (ε, N, δ); the console passes one that refuses
    N beyond what it computes per request.

    Examples
    --------
    >>> plan = search_plan(1.0, 1.0, 1.7, 1000, 0.05)
    >>> round(plan["error_probability"], 3), plan["cost"]["answers"]
    (0.335, 192)
    >>> search_plan(1e-12, 1.0, 1.000001, 100, 0.1, strict=False)["converges"]
    False
    """
    from privad.search.theory import (
        binarized_error_probability,
        expected_queries_bound,
        threshold_ratio,
    )

    ratio = threshold_ratio(t_low, t_high)
    p = binarized_error_probability(epsilon, ratio)
    plan = {
        "epsilon": epsilon,
        "threshold_ratio": ratio,
        "error_probability": p,
        "items": items,
        "search_error": error,
        "converges": bool(p < 0.5),
    }
    if not p < 0.5:
        if not strict:
            return plan
        raise ParameterError(
            f"at ε = {epsilon:g} and threshold ratio R = {ratio:.4g} an answer is wrong with "
            f"probability {p:.4g} >= 1/2: the search cannot converge; raise ε or the ratio"
        )
    expected = expected_queries_bound(items, p, error)
    cost = costs(epsilon, max(1, int(np.ceil(expected))), delta)
    return {**plan, "expected_queries_bound": expected, "cost": cost.to_dict()}


def plan_rows(plan: dict[str, Any]) -> list[tuple[str, ...]]:
    """The table of a plan as text rows: for :func:`sp_plan`, (B, anomaly?, sp, dp) at the
    ends, around β and at eight even steps; for :func:`search_plan`, (quantity, value).

    Examples
    --------
    >>> plan_rows(sp_plan(1, 1.0, 1, max_ball=3))[0]
    ('1', 'yes', '0.7311', '0.7311')
    >>> plan_rows(search_plan(1.0, 1.0, 2.0, 100, 0.1))[0]
    ('threshold ratio R = (t_h − t_ℓ)/t_ℓ', '1')
    """
    if "flag_probability" not in plan:
        return [
            ("threshold ratio R = (t_h − t_ℓ)/t_ℓ", f"{plan['threshold_ratio']:.4g}"),
            ("answer error p (eq. 24)", f"{plan['error_probability']:.4g}"),
            ("E[T] bound (eq. 26)", f"{plan['expected_queries_bound']:.1f}"),
        ]
    rows, beta = plan["flag_probability"], plan["beta"]
    top = len(rows)
    show = {1, *range(max(1, beta - 3), min(top, beta + 4) + 1), top}
    show |= set(np.linspace(1, top, 8).astype(int).tolist())
    return [
        (
            str(row["ball"]),
            "yes" if row["anomaly"] else "no",
            f"{row['sp']:.4g}",
            f"{row['dp']:.4g}",
        )
        for row in rows
        if row["ball"] in show
    ]


def cost_lines(cost: dict[str, Any] | None) -> list[str]:
    """A plan's ``cost`` in words (none without a cost).

    Examples
    --------
    >>> cost_lines(sp_plan(3, 0.5, 1, answers=4)["cost"])[0].split(" cost: ")
    ['4 answer(s) of ε = 0.5 that may touch one record', 'ε = 2 by linear composition (pure ε-DP)']
    """
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


def draw_plan(plan: dict[str, Any], delta: float | None = None) -> Any:
    """A plan's figure (:class:`matplotlib.figure.Figure`): the total ε of up to N answers by
    linear and, with ``delta``, optimal composition (N: the plan's answers, or 1000); for
    :func:`sp_plan`, beside P(labelled anomaly) by ball count for sp and dp.

    Examples
    --------
    >>> [len(ax.lines) for ax in draw_plan(sp_plan(3, 0.5, 1), delta=1e-6).axes]  # β + 1/2 too
    [3, 2]
    """
    from matplotlib.figure import Figure

    answers = 1000 if plan["cost"] is None else plan["cost"]["answers"]
    if "flag_probability" not in plan:
        fig = Figure(figsize=(5, 4))
        _cost_axis(fig.subplots(), plan["epsilon"], answers, delta)
        return fig
    fig = Figure(figsize=(10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    rows = plan["flag_probability"]
    balls = np.array([row["ball"] for row in rows])
    ax1.plot(balls, np.array([row["sp"] for row in rows]), label=f"sp, k = {plan['k']}")
    ax1.plot(balls, np.array([row["dp"] for row in rows]), "--", label="dp")
    ax1.axvline(plan["beta"] + 0.5, color="grey", lw=0.8)
    ax1.set_xlabel("records within r (B)")
    ax1.set_ylabel("P(labelled anomaly)")
    ax1.legend()
    _cost_axis(ax2, plan["epsilon"], answers, delta)
    return fig


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
