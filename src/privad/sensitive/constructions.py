"""Construction 1 (U_λ) and its two instances for (β, r)-anomaly identification.

Construction 1 (section 4.1), for an AIQ (i, g) and a lower bound λ of the mdd-function:

    (1) input x;  (2) t = e^{−ε(λ(i, x) − 1)} / (1 + e^ε);
    (3) sample b with P(b ≠ g(i, x)) = t;  (4) return b.

Claim 2: its error is exactly t. Theorem 4.1: if λ ≥ 1 is a 1-Lipschitz lower bound of the
mdd of the k-sensitive graph G_S, U_λ is (ε, k)-sensitively private; if λ is α-Lipschitz
(α ≥ 1) it is (α·ε, k)-SP (remark after Theorem 4.1). Two instances:

* ``"dp"``: λ = Δ_G (equation (2)), the Pareto-optimal ε-DP mechanism (Theorem 4.4);
* ``"sp"``: λ = λ_k (equation (3)), (ε, k)-SP with error ≤ e^{−ε|β+1−k−B|} on every record
  that is not k-sensitive (Theorem 4.6).

Exactness. Error probabilities are returned in log space, computed as

    log t = −ε(λ − 1) − log(1 + e^ε)       (``np.logaddexp(0, ε)``, stable for every ε),

so values such as 1e-21 or 1e-300 (and far below the float range, as logs) are exact to
floating-point precision; :func:`error_probability` is ``exp`` of it. Sampling never rounds
a probability: the error event is the AND of two independent exact draws,
``bernoulli_exp_times(λ − 1, ε)`` (probability e^{−ε(λ−1)}, the product never formed) and
``bernoulli_logistic(ε)`` (probability 1/(1 + e^ε)), whose joint probability is Claim 2's t.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.sensitive._common import (
    as_count_pair,
    check_beta,
    check_cap,
    check_eps,
    check_k,
    scalar_or_array,
)
from privad.sensitive.anomaly import anomaly_label
from privad.sensitive.mdd import apply_count_cap, delta_g_array, lambda_k_array
from privad.validation import check_choice

__all__ = [
    "MECHANISMS",
    "Construction1",
    "claim2_log_error",
    "error_probability",
    "log1mexp",
    "log_error_probability",
    "log_output_probabilities",
    "mechanism_lambda",
    "sample_construction1",
    "theorem46_bound",
]

MECHANISMS: tuple[str, ...] = ("sp", "dp", "compiled")
"""Mechanism names used across the package: U_{λ_k}, U_{Δ_G}, and the compiled U_δ."""


def log1mexp(log_p: np.ndarray) -> np.ndarray:
    """log(1 − e^{log_p}) for log_p ≤ 0, accurate everywhere (Mächler 2012)."""
    log_p = np.asarray(log_p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(log_p > -np.log(2.0), np.log(-np.expm1(log_p)), np.log1p(-np.exp(log_p)))


def claim2_log_error(lam: Any, epsilon: float) -> np.ndarray:
    """log of Claim 2's error t = e^{−ε(λ−1)}/(1 + e^ε), for λ ≥ 1 (array or scalar)."""
    lam = np.asarray(lam)
    return -(epsilon * (lam.astype(np.float64) - 1.0)) - np.logaddexp(0.0, epsilon)


def mechanism_lambda(
    a: np.ndarray, b: np.ndarray, beta: int, k: int | None, cap: int | None = None
) -> np.ndarray:
    """λ for validated arrays: Δ_G when ``k`` is None (DP), λ_k otherwise (SP); capped."""
    lam = delta_g_array(a, b, beta) if k is None else lambda_k_array(a, b, beta, k)
    return apply_count_cap(lam, b, beta, cap)


def _parse(
    x_i: Any, ball: Any, beta: Any, epsilon: Any, k: Any, cap: Any
) -> tuple[np.ndarray, np.ndarray, int, float, int | None, int | None]:
    beta = check_beta(beta)
    epsilon = check_eps(epsilon)
    k = None if k is None else check_k(k)
    cap = check_cap(cap, beta)
    a, b = as_count_pair(x_i, ball)
    return a, b, beta, epsilon, k, cap


def log_error_probability(
    x_i: Any, ball: Any, *, beta: Any, epsilon: Any, k: Any = None, cap: Any = None
) -> Any:
    """log P(U(x) ≠ g(i, x)), Claim 2, for the optimal DP (k=None) or the (ε, k)-SP mechanism.

    Parameters
    ----------
    x_i
        multiplicity of the queried record (int scalar or array, ≥ 0).
    ball
        B_x(i, r) (int scalar or array, ≥ x_i); broadcast against ``x_i``.
    beta
        β ≥ 1 of the (β, r)-anomaly.
    epsilon
        ε > 0.
    k
        None for U_{Δ_G} (Theorem 4.4, ε-DP), an integer ≥ 1 for U_{λ_k} (Theorem 4.6,
        (ε, k)-SP).
    cap
        optional count cap c ≥ β + 2 (see :mod:`privad.sensitive.mdd`): ``ball`` ≥ c
        means "at least c"; the value is then the capped mechanism's exact error, an
        upper bound of the uncapped one's.

    Returns float64 (a Python float for scalar inputs): −ε(λ − 1) − log(1 + e^ε), exact in
    log space however small the probability.
    """
    a, b, beta, epsilon, k, cap = _parse(x_i, ball, beta, epsilon, k, cap)
    return scalar_or_array(claim2_log_error(mechanism_lambda(a, b, beta, k, cap), epsilon))


def error_probability(
    x_i: Any, ball: Any, *, beta: Any, epsilon: Any, k: Any = None, cap: Any = None
) -> Any:
    """P(U(x) ≠ g(i, x)) = e^{−ε(λ−1)}/(1 + e^ε) (Claim 2); arguments as
    :func:`log_error_probability`. Underflows to 0 only below ~5e-324; use the log version
    for smaller values. Example: λ = 1 at ε = 0.1 gives 1/(1 + e^0.1) = 0.4750."""
    out = np.exp(
        np.asarray(log_error_probability(x_i, ball, beta=beta, epsilon=epsilon, k=k, cap=cap))
    )
    return scalar_or_array(out)


def theorem46_bound(ball: Any, *, beta: Any, epsilon: Any, k: Any) -> Any:
    """Theorem 4.6's error bound e^{−ε|β + 1 − k − B|} for records that are not k-sensitive.

    Returns NaN where the record is k-sensitive (B ≥ β + 1 − k): the theorem says nothing
    there. The exact error (Claim 2) is always at most this bound where it applies.
    """
    beta = check_beta(beta)
    epsilon = check_eps(epsilon)
    k = check_k(k)
    _, b = as_count_pair(0, ball)
    bound = np.exp(-epsilon * np.abs(beta + 1 - k - b).astype(np.float64))
    return scalar_or_array(np.where(b < beta + 1 - k, bound, np.nan))


def log_output_probabilities(
    truth: np.ndarray, log_err: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(log P(answer = 0), log P(answer = 1)) from the truth g and the log error."""
    log_ok = log1mexp(log_err)
    truth = np.asarray(truth).astype(bool)
    return np.where(truth, log_err, log_ok), np.where(truth, log_ok, log_err)


def sample_construction1(truth: Any, lam: Any, epsilon: float, rng: Any = None) -> np.ndarray:
    """Step (3) of Construction 1 with exact Bernoulli draws; returns int64 0/1 answers.

    ``lam`` must hold integers ≥ 1. The error event is
    ``bernoulli_exp_times(λ − 1, ε) & bernoulli_logistic(ε)``, two independent exact draws of
    probabilities e^{−ε(λ−1)} and 1/(1 + e^ε), so P(error) is exactly Claim 2's t.
    """
    from privad import noise  # deferred: only sampling needs the noise layer

    epsilon = check_eps(epsilon)
    rng = noise.as_randomness(rng)
    truth = np.asarray(truth).astype(bool)
    lam = np.asarray(lam, dtype=np.int64)
    truth, lam = np.broadcast_arrays(truth, lam)
    if lam.size and lam.min() < 1:
        raise ValueError("Construction 1 needs λ >= 1")
    shape = lam.shape
    flat_lam = lam.ravel()
    err_exp = np.asarray(noise.bernoulli_exp_times(flat_lam - 1, epsilon, rng), dtype=bool)
    err_log = np.asarray(
        noise.bernoulli_logistic(np.full(flat_lam.shape, epsilon), rng), dtype=bool
    )
    error = (err_exp & err_log).reshape(shape)
    return (truth ^ error).astype(np.int64)


@dataclass(frozen=True)
class Construction1:
    """Construction 1, U_λ, for any λ given as a function of (x_i, B_x(i, r)).

    Attributes
    ----------
    lam
        a vectorised function ``lam(x_i, ball) -> int array`` with values ≥ 1. For
        Theorem 4.1 it must be a 1-Lipschitz lower bound of the mdd of the graph the
        guarantee is claimed for; this class cannot check that (the exhaustive tests
        do, for the built-in λ's).
    epsilon
        ε > 0.
    beta
        β of the (β, r)-anomaly that defines g.
    name
        a label ("sp", "dp" or anything).

    Use :meth:`dp` and :meth:`sp` for the paper's two instances.
    """

    lam: Callable[[np.ndarray, np.ndarray], Any]
    epsilon: float
    beta: int
    name: str = "custom"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_eps(self.epsilon))
        object.__setattr__(self, "beta", check_beta(self.beta))
        if not callable(self.lam):
            from privad.errors import ParameterError

            raise ParameterError(f"lam must be a function of (x_i, ball), got {self.lam!r}")

    @classmethod
    def dp(cls, beta: int, epsilon: float, *, cap: int | None = None) -> Construction1:
        """U_{Δ_G}: the Pareto-optimal ε-DP mechanism (section 4.1.1, Theorem 4.4)."""
        beta = check_beta(beta)
        cap = check_cap(cap, beta)
        return cls(lambda a, b: mechanism_lambda(a, b, beta, None, cap), epsilon, beta, "dp")

    @classmethod
    def sp(cls, beta: int, k: int, epsilon: float, *, cap: int | None = None) -> Construction1:
        """U_{λ_k}: the (ε, k)-sensitively private mechanism (section 4.1.2, Theorem 4.6)."""
        beta = check_beta(beta)
        k = check_k(k)
        cap = check_cap(cap, beta)
        return cls(lambda a, b: mechanism_lambda(a, b, beta, k, cap), epsilon, beta, "sp")

    def lambda_values(self, x_i: Any, ball: Any) -> np.ndarray:
        """λ(i, x) for validated counts, checked to be ≥ 1."""
        a, b = as_count_pair(x_i, ball)
        lam = np.asarray(self.lam(a, b))
        if lam.shape != a.shape:
            lam = np.broadcast_to(lam, a.shape)
        if lam.size and not (lam >= 1).all():
            from privad.errors import ParameterError

            raise ParameterError("Construction 1 needs λ(i, x) >= 1 everywhere (Theorem 4.1)")
        return lam

    def log_error_probability(self, x_i: Any, ball: Any) -> Any:
        """log t, Claim 2."""
        return scalar_or_array(claim2_log_error(self.lambda_values(x_i, ball), self.epsilon))

    def error_probability(self, x_i: Any, ball: Any) -> Any:
        """t = e^{−ε(λ−1)}/(1 + e^ε), Claim 2."""
        return scalar_or_array(np.exp(np.asarray(self.log_error_probability(x_i, ball))))

    def truth(self, x_i: Any, ball: Any) -> Any:
        """g(i, x), the exact (non-private) answer."""
        return anomaly_label(x_i, ball, self.beta)

    def sample(self, x_i: Any, ball: Any, rng: Any = None) -> Any:
        """One private answer per entry (int64 0/1, 1 = anomaly), exact sampling.

        Integer λ uses the exact two-draw scheme of :func:`sample_construction1`; a
        non-integer λ falls back to ``bernoulli_log`` of the log error.
        """
        a, b = as_count_pair(x_i, ball)
        lam = self.lambda_values(a, b)
        truth = np.asarray(anomaly_label(a, b, self.beta), dtype=bool)
        if np.issubdtype(lam.dtype, np.integer) or (lam == np.floor(lam)).all():
            out = sample_construction1(truth, lam.astype(np.int64), self.epsilon, rng)
        else:
            from privad import noise

            rng = noise.as_randomness(rng)
            err = np.asarray(
                noise.bernoulli_log(claim2_log_error(lam, self.epsilon).ravel(), rng), dtype=bool
            ).reshape(lam.shape)
            out = (truth ^ err).astype(np.int64)
        return scalar_or_array(out)


def mechanism_name(value: Any) -> str:
    """Validate a mechanism name: ``"sp"``, ``"dp"`` or ``"compiled"``."""
    return check_choice(value, "mechanism", MECHANISMS)
