"""The closed forms of the paper as functions (``dp-noisy-binary-search.txt``, sections 4-5).

* Proposition 1: randomized response with flip probability p is ln((1 - p)/p)-DP:
  :func:`randomized_response_epsilon`, :func:`randomized_response_p`.
* Eq. (23): the CDF of the difference of two independent Lap(λ) variables:
  :func:`laplace_difference_cdf`.
* Eq. (24): the error bound p of the binarized oracle Z_t = 1(Y_t > Ȳ_t):
  :func:`binarized_error_probability` (in terms of ε and the threshold ratio) and
  :func:`binarized_error_probability_for` (in terms of t_ℓ, t_h and the Laplace scale actually
  used by the oracle).
* Eq. (26): the Burnashev-Zigangirov bound on E[T]: :func:`expected_queries_bound`.
* Ben-Or and Hassidim's pruning level ε_par = (24 log n)^(-1/2): :func:`ben_or_hassidim_level`.

The "threshold ratio" is R = (t_h - t_ℓ) / t_ℓ, the x-axis of the paper's Figure 1 (and
:attr:`privad.datasets.SearchThresholds.threshold_ratio`). It is the only reading under which
eq. (24) reproduces the paper's sanity values: p = 0.347 at ε = 1 for R = 0.647 and
p = 0.335 for R = 0.701 (``docs/papers.md``). Read as t_h / t_ℓ, a ratio below 1 would mean
t_h < t_ℓ; read as (t_h - t_ℓ) / t_h, the same ratios give p = 0.153 and 0.104.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privad.errors import ParameterError
from privad.validation import (
    check_epsilon,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = [
    "ben_or_hassidim_level",
    "binarized_error_probability",
    "binarized_error_probability_for",
    "binary_entropy",
    "capacity",
    "expected_queries_bound",
    "laplace_difference_cdf",
    "randomized_response_epsilon",
    "randomized_response_p",
    "threshold_ratio",
]


def _check_flip(p: Any, name: str = "p") -> float:
    p = check_probability(p, name, low_open=True)
    if p >= 0.5:
        raise ParameterError(f"{name} (an error probability) must be in (0, 1/2), got {p!r}")
    return p


def threshold_ratio(t_low: float, t_high: float) -> float:
    """R = (t_h - t_ℓ) / t_ℓ, the threshold ratio of section 6.3 (Figure 1)."""
    t_low = check_positive(t_low, "t_low")
    t_high = check_positive(t_high, "t_high")
    if not t_high > t_low:
        raise ParameterError(f"t_high must be > t_low, got t_low={t_low!r}, t_high={t_high!r}")
    return (t_high - t_low) / t_low


def randomized_response_epsilon(p: float) -> float:
    """ε = ln((1 - p) / p) of randomized response with flip probability p (Proposition 1)."""
    p = _check_flip(p)
    return math.log1p(-p) - math.log(p)


def randomized_response_p(epsilon: float) -> float:
    """The flip probability p = 1 / (1 + e^ε) whose randomized response is ε-DP (Prop. 1)."""
    eps = check_epsilon(epsilon)
    return 1.0 / (1.0 + math.exp(eps)) if eps < 700 else math.exp(-eps)


def laplace_difference_cdf(w: Any, scale: float) -> Any:
    """P(Z' - Z <= w) for independent Z, Z' ~ Lap(scale): eq. (23) and its mirror image.

    For w >= 0 it is 1 - (1/2 + w/(4λ)) exp(-w/λ) (eq. 23, λ = ``scale``); for w < 0 the
    difference is symmetric, so it is (1/2 + |w|/(4λ)) exp(-|w|/λ). Accepts arrays.
    """
    lam = check_positive(scale, "scale")
    arr = np.asarray(w, dtype=np.float64)
    a = np.abs(arr) / lam
    tail = (0.5 + a / 4.0) * np.exp(-a)
    out = np.where(arr >= 0, 1.0 - tail, tail)
    return float(out) if out.ndim == 0 else out


def binarized_error_probability(epsilon: float, ratio: float) -> float:
    """Eq. (24): p = (1/2 + R ε / 4) exp(-R ε), with R = (t_h - t_ℓ)/t_ℓ.

    The bound of Lemma 2 on the probability that Z_t = 1(Y_t > Ȳ_t) points to the wrong
    half: with Z, Z' ~ Lap(t_ℓ/ε) and H(Q) - H(Q̄) >= t_h - t_ℓ, an error needs
    Z' - Z > t_h - t_ℓ, which has probability (1/2 + w/(4λ)) e^(-w/λ) at w = t_h - t_ℓ,
    λ = t_ℓ/ε. At ε = 1 it gives 0.347 for R = 0.647 and 0.335 for R = 0.701.

    Examples
    --------
    >>> from privad.search import binarized_error_probability
    >>> round(binarized_error_probability(1.0, 0.647), 3)
    0.347
    """
    eps = check_epsilon(epsilon)
    r = check_positive(ratio, "ratio")
    x = r * eps
    return (0.5 + x / 4.0) * math.exp(-x)


def binarized_error_probability_for(t_low: float, t_high: float, scale: float) -> float:
    """Eq. (24) for the scale λ an oracle actually uses: (1/2 + w/(4λ)) exp(-w/λ), w = t_h - t_ℓ.

    With λ = t_ℓ/ε this is :func:`binarized_error_probability`; the floating-point-safe
    Laplace mechanism uses a λ larger by at most 2**-40 relative (to charge its grid
    rounding), which makes p larger, i.e. still a valid bound.
    """
    threshold_ratio(t_low, t_high)  # validates
    lam = check_positive(scale, "scale")
    x = (t_high - t_low) / lam
    return (0.5 + x / 4.0) * math.exp(-x)


def binary_entropy(p: float, base: float = 2.0) -> float:
    """h_b(p) = -p log p - (1 - p) log(1 - p), in bits by default (``base=math.e`` for nats)."""
    p = check_probability(p, "p")
    base = check_positive(base, "base")
    if base == 1.0:
        raise ParameterError("base must not be 1")
    if p in (0.0, 1.0):
        return 0.0
    return -(p * math.log(p) + (1 - p) * math.log1p(-p)) / math.log(base)


def capacity(p: float) -> float:
    """1 - h_b(p) in bits: the capacity of the binary symmetric channel with crossover p,
    i.e. the most information (bits) one query answered with error probability p can give."""
    return 1.0 - binary_entropy(p, 2.0)


def expected_queries_bound(
    n_items: int, p: float, delta: float, *, overshoot: float | None = None
) -> float:
    """Eq. (26): E[T] <= (log(n+1) + log(1/δ) + ε) / (1 - h_b(p)), in bits.

    ``n_items`` is the number of items, the paper's n + 1. Our reading of the two
    ambiguities of eq. (26) (see ``docs`` of :mod:`privad.search`):

    * every logarithm is base 2: 1 - h_b(p) is the capacity of the binary symmetric
      channel only in bits, and with natural logarithms the right-hand side falls below the
      information-theoretic lower bound ln(n+1) / (ln 2 - h(p)) for large n, so it could not be
      an upper bound;
    * the additive "ε" is Burnashev and Zigangirov's overshoot term: the most the posterior
      log-odds of the anomaly can grow in one query, log2((1 - p)/p). For randomized response
      this is the privacy ε of Proposition 1 (in bits), which is how the paper writes it.
      Pass ``overshoot=`` to use another value (e.g. the oracle's ε, the literal reading).

    Parameters
    ----------
    n_items:
        Number of items searched (>= 2).
    p:
        The error probability of the binary answers, in (0, 1/2) (eq. 24 for the binarized
        oracle, the flip probability for randomized response).
    delta:
        The target error probability δ of the stopping rule (25), in (0, 1).
    overshoot:
        The additive term, in bits; default log2((1 - p)/p).

    Examples
    --------
    >>> from privad.search import binarized_error_probability, expected_queries_bound
    >>> round(expected_queries_bound(1024, 0.1, 0.05), 2)  # n + 1 = 1024, p = 0.1, δ = 0.05
    32.94
    """
    n = check_int(n_items, "n_items", minimum=2)
    p = _check_flip(p)
    delta = check_probability(delta, "delta", low_open=True, high_open=True)
    if overshoot is None:
        over = (math.log1p(-p) - math.log(p)) / math.log(2.0)
    else:
        over = check_nonnegative(overshoot, "overshoot")
    return (math.log2(n) + math.log2(1.0 / delta) + over) / capacity(p)


def ben_or_hassidim_level(n_items: int) -> float:
    """ε_par = (24 ln n)^(-1/2), Ben-Or and Hassidim's pruning level (section 4.2).

    ``n_items`` is the number of items; the natural logarithm is our reading (the paper does
    not say which). For n_items = 1000, ε_par = 0.0777.
    """
    n = check_int(n_items, "n_items", minimum=2)
    return 1.0 / math.sqrt(24.0 * math.log(n))
