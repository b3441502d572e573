"""The three (β, r)-AIQ mechanisms by name: ``"sp"``, ``"dp"`` and ``"compiled"``.

One entry point per operation, so the estimator, the accountant and the experiments can
switch mechanism with a string:

* ``"sp"``: U_{λ_k}, Construction 1 with λ_k (section 4.1.2), (ε, k)-SP (Theorem 4.6);
* ``"dp"``: U_{Δ_G}, Construction 1 with Δ_G (section 4.1.1), optimal ε-DP (Theorem 4.4);
* ``"compiled"``: Construction 2 applied to the optimal ε/2-DP mechanism with
  δ = λ_k − Δ_G, (ε, k)-SP (Theorem 4.7; the paper's Figure 5b instance for k = 1).

Both functions validate their arguments (counts as in :func:`privad.sensitive.delta_g`) and
return arrays of the broadcast shape of (x_i, ball).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.sensitive._common import as_count_pair, check_beta, check_cap, check_eps, check_k
from privad.sensitive.anomaly import anomaly_label
from privad.sensitive.compiler import InputMechanism, _builtin_compiled
from privad.sensitive.constructions import (
    MECHANISMS,
    claim2_log_error,
    mechanism_lambda,
    mechanism_name,
    sample_construction1,
)

__all__ = ["MECHANISMS", "mechanism_log_error", "mechanism_sample", "mechanism_name"]


def mechanism_log_error(
    a: np.ndarray,
    b: np.ndarray,
    *,
    mechanism: str,
    beta: int,
    epsilon: float,
    k: int,
    cap: int | None = None,
) -> np.ndarray:
    """log P(answer ≠ g(i, x)) of the named mechanism (exact, log space; float64 array)."""
    mechanism = mechanism_name(mechanism)
    beta, epsilon, k = check_beta(beta), check_eps(epsilon), check_k(k)
    cap = check_cap(cap, beta)
    a, b = as_count_pair(a, b)
    if mechanism == "dp":
        return claim2_log_error(mechanism_lambda(a, b, beta, None, cap), epsilon)
    if mechanism == "sp":
        return claim2_log_error(mechanism_lambda(a, b, beta, k, cap), epsilon)
    if mechanism == "compiled":
        compiled = _builtin_compiled(beta, epsilon, k, "optimal-dp", cap)
        return np.asarray(compiled.log_error_probability(a, b), dtype=np.float64)
    raise ValueError(f"unknown mechanism {mechanism!r}")  # validated by callers


def mechanism_sample(
    a: np.ndarray,
    b: np.ndarray,
    *,
    mechanism: str,
    beta: int,
    epsilon: float,
    k: int,
    cap: int | None = None,
    rng: Any = None,
) -> np.ndarray:
    """Private 0/1 answers (1 = anomaly) of the named mechanism for counts (x_i, ball).

    Sampled exactly: Construction 1 as two exact Bernoulli draws, the compiled mechanism as
    described in :meth:`privad.sensitive.CompiledMechanism.sample`. int64 array.
    """
    mechanism = mechanism_name(mechanism)
    beta, epsilon, k = check_beta(beta), check_eps(epsilon), check_k(k)
    cap = check_cap(cap, beta)
    a, b = as_count_pair(a, b)
    truth = np.asarray(anomaly_label(a, b, beta), dtype=bool)
    if mechanism in ("dp", "sp"):
        lam = mechanism_lambda(a, b, beta, None if mechanism == "dp" else k, cap)
        return sample_construction1(truth, lam, epsilon, rng)
    if mechanism == "compiled":
        compiled = _builtin_compiled(beta, epsilon, k, "optimal-dp", cap)
        return np.asarray(compiled.sample(a, b, rng), dtype=np.int64).reshape(np.shape(a))
    raise ValueError(f"unknown mechanism {mechanism!r}")


def optimal_dp_input(beta: int, epsilon_m: float, cap: int | None = None) -> InputMechanism:
    """The compiler's default input: U_{Δ_G} at ε_M (re-exported for convenience)."""
    return InputMechanism.optimal_dp(beta, epsilon_m, cap=cap)
