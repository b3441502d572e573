"""``privad.experiments.plans``: the plans' rows, cost lines and figures, by hand."""

from __future__ import annotations

import math

from privad.experiments.plans import cost_lines, draw_plan, plan_rows, search_plan, sp_plan


def test_sp_plan_rows_show_the_ends_beta_and_eight_steps() -> None:
    rows = plan_rows(sp_plan(5, 0.1, 1, max_ball=30))
    # B = 1 .. 30: β ± 3 is 2..9, and linspace(1, 30, 8) rounds down to 1, 5, 9, ..., 25, 30
    assert [int(row[0]) for row in rows] == [*range(1, 10), 13, 17, 21, 25, 30]
    assert [row[1] for row in rows[:6]] == ["yes"] * 5 + ["no"]


def test_sp_plan_row_of_an_alone_record() -> None:
    # β = 1, B = 1: both mechanisms flag with probability e^ε / (1 + e^ε) at ε = 1
    ball, anomaly, sp, dp = plan_rows(sp_plan(1, 1.0, 1, max_ball=3))[0]
    assert (ball, anomaly) == ("1", "yes")
    assert sp == dp == f"{math.e / (1 + math.e):.4g}"


def test_search_plan_rows_and_cost_lines() -> None:
    plan = search_plan(1.0, 1.0, 2.0, 100, 0.1, delta=1e-6)
    rows = plan_rows(plan)
    assert rows[0] == ("threshold ratio R = (t_h − t_ℓ)/t_ℓ", "1")  # (2 − 1)/1
    assert rows[1] == ("answer error p (eq. 24)", f"{plan['error_probability']:.4g}")
    lines = cost_lines(plan["cost"])
    n = plan["cost"]["answers"]
    assert lines[0].startswith(f"{n} answer(s) of ε = 1 that may touch one record cost: ε = {n}")
    assert lines[1].startswith(f"  and (ε = {plan['cost']['optimal_epsilon']:g}, δ = 1e-06)")
    assert cost_lines(None) == []


def test_draw_plan_panels() -> None:
    assert len(draw_plan(search_plan(1.0, 1.0, 2.0, 100, 0.1)).axes) == 1
    fig = draw_plan(sp_plan(3, 0.5, 1, answers=10))
    assert [len(ax.lines) for ax in fig.axes] == [3, 1]  # sp, dp, β + 1/2; linear only
    assert fig.axes[1].lines[0].get_xdata().max() == 10
