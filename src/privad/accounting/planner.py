"""Plan before spending: what an ε buys, and what N answers cost, from closed forms only.

Nothing here reads data or touches a ledger. The functions answer the two questions users
ask before they pick ε:

* :func:`composition_costs`: the total cost of N answers of ε that may each touch one record,
  by linear composition (N·ε, exact) and by the optimal composition theorem at δ
  (:func:`~privad.accounting.tight.optimal_epsilon`, Kairouz, Oh, Viswanath 2015, Theorem 3.3);
* :func:`answers_within`: how many such answers an (ε, δ) budget admits.

What a sensitive-privacy answer looks like before it is asked (the flag probability by
ball count) is a property of that scheme's mechanisms:
:func:`privad.sensitive.accounting.flag_curve`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from privad.accounting.exact import to_fraction
from privad.accounting.tight import optimal_epsilon
from privad.validation import check_epsilon, check_int

__all__ = ["CompositionCosts", "answers_within", "composition_costs"]


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
            "epsilon_per_answer": self.epsilon,
            "answers": self.n,
            "delta": self.delta,
            "linear_epsilon": float(self.linear),
            "optimal_epsilon": None if self.optimal is None else float(self.optimal),
        }


def composition_costs(epsilon: float, n: int, delta: float | None) -> CompositionCosts:
    """N·ε (pure, exact) and, with ``delta``, the optimal ε at δ of ``n`` ε-DP answers.

    Parameters
    ----------
    epsilon : ε of one answer (> 0).
    n : the number of answers that can touch one record (Claim 5's m for a batch).
    delta : δ in (0, 1), or None for the pure total only.

    Examples
    --------
    >>> from privad.accounting import composition_costs
    >>> costs = composition_costs(0.1, 100, 1e-6)
    >>> float(costs.linear), float(costs.optimal)
    (10.0, 4.774568)
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
