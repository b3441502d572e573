"""Plans before spending, as data: what ``privad sp plan`` and ``privad search plan`` show,
for Python users too. Closed forms only: nothing is read, drawn or spent.

* :func:`sp_plan`: the probability that a record is labelled an anomaly, by its ball count,
  under sensitive privacy's U_λk and optimal DP's U_ΔG
  (:func:`privad.sensitive.accounting.flag_curve`), and what N answers cost.
* :func:`search_plan`: the noisy binary search's answer error p (eq. 24) and the bound on
  its expected number of queries (eq. 26), and what they cost.

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

__all__ = ["search_plan", "sp_plan"]


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
