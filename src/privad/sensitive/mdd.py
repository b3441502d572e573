"""Minimum discrepant distance (mdd) and its lower bounds for (β, r)-anomalies.

The mdd-function of a neighbourhood graph G_S (equation (1)) is

    Δ_{G_S}(i, x) = min_{y : g(i, y) ≠ g(i, x)} d_{G_S}(x, y),

the graph distance from x to the nearest database where the answer for i flips.
Construction 1 needs a 1-Lipschitz lower bound λ ≥ 1 of it (Theorem 4.1); this module gives

* :func:`delta_g`: Δ_G, equation (2), the exact mdd of the full neighbourhood graph
  (Lemma 4.3); with it Construction 1 is the Pareto-optimal ε-DP mechanism (Theorem 4.4);
* :func:`lambda_k`: λ_k, equation (3), a 1-Lipschitz lower bound of the mdd of the
  k-sensitive neighbourhood graph (Lemma 4.5);
* :func:`compiler_delta`: δ = λ_k − Δ_G, the non-negative 2-Lipschitz lower bound of
  Δ_{G_S} − Δ_G that the compiler (Construction 2) needs; the paper instantiates it with
  k = 1 (section 4.2, Figure 5);
* :func:`apply_count_cap`: the same bounds computed from ball counts capped at c.

All functions are vectorised over ``x_i`` and ``ball`` and use integer arithmetic only.

Count caps
----------
Counting every record in every ball is the expensive part on large data, and for a normal
record with a large ball the mechanisms' error is astronomically small anyway. With a cap c
the geometry layer returns ``min(B, c)``. The bound used is then

    λ^c(i, x) = λ(i, x)   if B_x(i, r) < c,        λ^c(i, x) = c − β   if B_x(i, r) ≥ c,

which needs only the capped counts. For c ≥ β + 2 it is still a 1-Lipschitz lower bound
(≥ 1) of the mdd, so Theorem 4.1 applies and the capped mechanism is private with the same
guarantee: for B ≥ c > β + 1 both bounds equal Δ_G ≥ B − β ≥ c − β (lower bound), the value is
constant on B ≥ c, and across the boundary B = c − 1 → c it moves by exactly 1 from
c − 1 − β (x_i > 0) or c + 1 − β (x_i = 0) to c − β. Note that the naive rule "evaluate λ at
(min(x_i, c), min(B, c))" is *not* 1-Lipschitz: for an absent record (x_i = 0) beyond the
cap it gives 2 + c − β, and adding a copy of i gives c − β, a jump of 2 along an edge of both
graphs. λ^c avoids that. The capped mechanism's error is exactly Claim 2's value at λ^c;
for capped records (B ≥ c) it is e^{−ε(c−β−1)}/(1 + e^ε), which is an *upper bound* of the
uncapped mechanism's error there. Anomalies (B ≤ β < c) are never affected.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.sensitive._common import (
    as_count_pair,
    check_beta,
    check_cap,
    check_k,
    scalar_or_array,
)

__all__ = [
    "apply_count_cap",
    "compiler_delta",
    "delta_g",
    "delta_g_array",
    "lambda_k",
    "lambda_k_array",
    "compiler_delta_array",
]


def delta_g_array(a: np.ndarray, b: np.ndarray, beta: int) -> np.ndarray:
    """Equation (2) on validated int64 arrays (no checks; see :func:`delta_g`)."""
    absent = a == 0
    out = np.where(
        absent,
        np.where(b < beta, 1, 2 + b - beta),
        np.where(b <= beta, np.minimum(a, beta + 1 - b), b - beta),
    )
    return out.astype(np.int64, copy=False)


def lambda_k_array(a: np.ndarray, b: np.ndarray, beta: int, k: int) -> np.ndarray:
    """Equation (3) on validated int64 arrays (no checks; see :func:`lambda_k`)."""
    sensitive = b >= beta + 1 - k
    far = beta + 1 - b + np.minimum(0, a - k)
    return np.where(sensitive, delta_g_array(a, b, beta), far).astype(np.int64, copy=False)


def compiler_delta_array(a: np.ndarray, b: np.ndarray, beta: int, k: int) -> np.ndarray:
    """δ = λ_k − Δ_G on validated int64 arrays (no checks; see :func:`compiler_delta`)."""
    return lambda_k_array(a, b, beta, k) - delta_g_array(a, b, beta)


def apply_count_cap(lam: np.ndarray, b: np.ndarray, beta: int, cap: int | None) -> np.ndarray:
    """λ^c: replace λ by c − β wherever the (capped) ball count reached c.

    Valid for λ = Δ_G or λ = λ_k and c ≥ β + 2 (see the module docstring for why the result
    is still a 1-Lipschitz lower bound of the mdd, so Theorem 4.1 still applies).
    """
    if cap is None:
        return lam
    return np.where(b >= cap, cap - beta, lam).astype(np.int64, copy=False)


def delta_g(x_i: Any, ball: Any, beta: Any, *, cap: Any = None) -> Any:
    """Δ_G(i, x), equation (2): the mdd on the full neighbourhood graph (Lemma 4.3).

    ::

        Δ_G = 1                        x_i = 0, B < β
              2 + B − β                x_i = 0, B ≥ β
              min(x_i, β + 1 − B)      x_i > 0, B ≤ β
              B − β                    x_i > 0, B > β

    with B = B_x(i, r). Args: ``x_i`` (multiplicity) and ``ball`` (B_x(i, r), ≥ x_i), int
    scalars or arrays; ``beta`` ≥ 1; optional ``cap`` (count cap c ≥ β + 2, see the module
    docstring). Returns int64 (a Python int for scalar inputs), always ≥ 1.
    """
    beta = check_beta(beta)
    cap = check_cap(cap, beta)
    a, b = as_count_pair(x_i, ball)
    return scalar_or_array(apply_count_cap(delta_g_array(a, b, beta), b, beta, cap))


def lambda_k(x_i: Any, ball: Any, beta: Any, k: Any, *, cap: Any = None) -> Any:
    """λ_k(i, x), equation (3): a 1-Lipschitz lower bound of the k-sensitive mdd (Lemma 4.5).

    ::

        λ_k = Δ_G(i, x)                         B ≥ β + 1 − k   (i is k-sensitive)
              β + 1 − B + min(0, x_i − k)       B < β + 1 − k   (i is not k-sensitive)

    λ_k ≥ Δ_G ≥ 1 everywhere, with equality on k-sensitive records. k ≥ 1 has no upper limit
    (for k ≥ β + 1, λ_k = Δ_G). ``cap`` as in :func:`delta_g`.
    """
    beta = check_beta(beta)
    k = check_k(k)
    cap = check_cap(cap, beta)
    a, b = as_count_pair(x_i, ball)
    return scalar_or_array(apply_count_cap(lambda_k_array(a, b, beta, k), b, beta, cap))


def compiler_delta(x_i: Any, ball: Any, beta: Any, k: Any = 1) -> Any:
    """δ(i, x) = λ_k(i, x) − Δ_G(i, x) for Construction 2 (section 4.2).

    Non-negative (λ_k ≥ Δ_G), 2-Lipschitz on the k-sensitive graph (λ_k is 1-Lipschitz there
    by Lemma 4.5, Δ_G on the full graph by Lemma 4.3) and a lower bound of Δ_{G_S} − Δ_G
    (because Δ_{G_S} ≥ λ_k). The paper uses k = 1 (Figure 5); for k > 1 the k-sensitive graph
    has more edges, so Δ_{G_S} is smaller and λ_1 − Δ_G is no longer a lower bound of it:
    use δ = λ_k − Δ_G with the same k as the guarantee (this is what the compiler does).
    Positive only where i is not k-sensitive and B < β: δ = max(β + 1 − B − x_i, 0) for
    k = 1, x_i ≥ 1 (section 4.2).
    """
    beta = check_beta(beta)
    k = check_k(k)
    a, b = as_count_pair(x_i, ball)
    return scalar_or_array(compiler_delta_array(a, b, beta, k))
