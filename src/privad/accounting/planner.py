"""Plan before spending: what an ε buys, and what N answers cost, from closed forms only.

Nothing here reads data or touches a ledger. The functions answer the two questions users
ask before they pick ε:

* :func:`composition_costs`: the total cost of N answers of ε that may each touch one record,
  by linear composition (N·ε, exact) and by the optimal composition theorem at δ
  (:func:`~privad.accounting.tight.optimal_epsilon`, Kairouz, Oh, Viswanath 2015, Theorem 3.3);
* :func:`answers_within`: how many such answers an (ε, δ) budget admits;
* :func:`flag_curve`: for (β, r)-anomaly identification, the probability that a record whose
  closed ball of radius r holds B records (itself included, no duplicates) is labelled an
  anomaly, under the (ε, k)-sensitively private mechanism U_λk (Theorem 4.6) and the optimal
  ε-DP mechanism U_ΔG (Theorem 4.4): both are Construction 1, whose error is
  e^(−ε(λ − 1)) / (1 + e^ε) (Claim 2) with the mechanism's λ.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from privad.accounting.exact import to_fraction
from privad.accounting.tight import optimal_epsilon
from privad.validation import check_epsilon, check_int

__all__ = ["CompositionCosts", "answers_within", "composition_costs", "flag_curve"]


@dataclass(frozen=True)
class CompositionCosts:
    """The cost of ``n`` answers of ``epsilon``: linear (exact) and optimal at ``delta``."""

    epsilon: float
    n: int
    delta: float | None
    linear: Fraction
    optimal: Fraction | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: floats (the optimal ε is a multiple of 10⁻⁶, rounded up)."""
        return {
            "epsilon_per_answer": self.epsilon, "answers": self.n, "delta": self.delta,
            "linear_epsilon": float(self.linear),
            "optimal_epsilon": None if self.optimal is None else float(self.optimal),
        }  # fmt: skip


def composition_costs(epsilon: float, n: int, delta: float | None) -> CompositionCosts:
    """N·ε (pure, exact) and, with ``delta``, the optimal ε at δ of ``n`` ε-DP answers.

    Parameters
    ----------
    epsilon : ε of one answer (> 0).
    n : the number of answers that can touch one record (Claim 5's m for a batch).
    delta : δ in (0, 1), or None for the pure total only.
    """
    eps = check_epsilon(epsilon)
    n = check_int(n, "n", minimum=1)
    linear = n * to_fraction(eps)
    optimal = None if delta is None else optimal_epsilon(eps, n, delta)
    return CompositionCosts(eps, n, delta, linear, optimal)


def answers_within(budget: float, delta: float, epsilon: float) -> int:
    """The most answers of ``epsilon`` an (``budget``, ``delta``) budget admits (optimal
    composition; at least the linear ⌊budget/ε⌋, 0 if not even one fits)."""
    budget_f = to_fraction(check_epsilon(budget, "budget"))
    eps = check_epsilon(epsilon)
    lo = int(budget_f / to_fraction(eps))  # linear: always admitted
    if lo == 0:
        return 0
    hi = lo
    while optimal_epsilon(eps, 2 * hi, delta) <= budget_f:
        hi *= 2
    hi *= 2  # optimal_epsilon(hi) > budget
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if optimal_epsilon(eps, mid, delta) <= budget_f:
            lo = mid
        else:
            hi = mid
    return lo


def flag_curve(beta: int, epsilon: float, k: int, balls: Any) -> dict[str, np.ndarray]:
    """P(labelled an anomaly) for ball counts ``balls`` (multiplicity 1), SP against DP.

    Returns
    -------
    dict
        ``ball`` (the counts), ``anomaly`` (B <= β: the true label), ``sp`` (U_λk,
        Theorem 4.6) and ``dp`` (U_ΔG, Theorem 4.4) flag probabilities.
    """
    from privad.sensitive.anomaly import anomaly_label
    from privad.sensitive.mechanisms import aiq_mechanism

    b = np.asarray(balls, dtype=np.int64)
    ones = np.ones_like(b)
    truth = np.asarray(anomaly_label(ones, b, beta), dtype=bool)
    out: dict[str, np.ndarray] = {"ball": b, "anomaly": truth}
    for name in ("sp", "dp"):
        mech = aiq_mechanism(name, beta=beta, r=0.0, epsilon=epsilon, k=k)
        err = np.exp(mech.log_error_probability(ones, b))
        out[name] = np.where(truth, 1.0 - err, err)
    return out
