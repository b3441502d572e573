"""Exact Bernoulli samplers and randomized response.

Every sampler here returns *exactly* the stated probability, for probabilities given as
floats (read as the exact dyadic rationals they are) or in log space, including
probabilities far below 2**-53 such as 1e-21 or exp(-700); nothing is rounded to a double
along the way. They are vectorised: the probability arguments are arrays (or scalars)
broadcast together, or to ``size``, and the result is a ``bool`` array of that shape.

Algorithms (implemented in :mod:`privad.noise._kernels`):

* :func:`bernoulli`: a uniform U in [0, 1) is generated lazily, 64 bits at a time, and
  compared with the binary expansion of ``p``; the first differing word decides U < p.
* :func:`bernoulli_exp`: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
  Differential Privacy", NeurIPS 2020 (CKS 2020), Algorithm 1: for gamma in [0, 1] the
  K-loop; for gamma > 1, floor(gamma) Bern(exp(-1)) trials (stopping at the first
  failure) and one Bern(exp(-(gamma - floor(gamma)))).
* :func:`bernoulli_exp_times`: Bern(exp(-a gamma)) without forming the product a * gamma.
* :func:`bernoulli_logistic`: Bern(1 / (1 + e^x)) by rejection on Bern(1/2) and
  Bern(exp(-|x|)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.noise import _engine
from privad.noise._arrays import broadcast, float_param, int_param
from privad.noise.randomness import RandomnessLike, Size, as_randomness
from privad.validation import check_probability

__all__ = [
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_times",
    "bernoulli_log",
    "bernoulli_logistic",
    "randomized_response",
]


def bernoulli(p: Any, rng: RandomnessLike = None, *, size: Size = None) -> np.ndarray:
    """Exactly Bern(p) for float probabilities ``p`` in [0, 1].

    A float is a dyadic rational m / 2**q. The sampler generates the binary expansion of
    a uniform U in [0, 1) lazily, one 64-bit word at a time, and returns U < p as soon as
    a word of U differs from the same word of p: P[True] = p exactly (it reads one word
    except with probability 2**-64 per extra word). For probabilities below ~1e-300, or
    known only as a logarithm, use :func:`bernoulli_log`.

    Parameters
    ----------
    p:
        A probability or an array of them, each in [0, 1].
    rng:
        A :class:`~privad.noise.Randomness` (or anything :func:`~privad.noise.as_randomness`
        accepts; ``None`` = OS entropy).
    size:
        Output shape; ``p`` is broadcast to it. Default: the shape of ``p``.

    Returns
    -------
    A bool array of the broadcast shape.
    """
    arr = float_param(p, "p")
    if np.any((arr < 0) | (arr > 1)):
        raise ParameterError(
            f"p must be a probability in [0, 1], got values in [{arr.min()}, {arr.max()}]"
        )
    (flat,), shape = broadcast([arr], size, "p")
    out = np.empty(shape, dtype=np.bool_)
    _engine.run("bern_float_kernel", as_randomness(rng), out.reshape(-1), 1.05, flat)
    return out


def bernoulli_exp(gamma: Any, rng: RandomnessLike = None, *, size: Size = None) -> np.ndarray:
    """Exactly Bern(exp(-gamma)) for floats ``gamma >= 0`` (each read as an exact rational).

    CKS 2020 Algorithm 1 for gamma in [0, 1]: K = 1; while Bern(gamma / K): K += 1; return
    [K odd] (P = sum_j (-gamma)^j / j! = exp(-gamma)), with Bern(gamma / K) sampled as
    Bern(1/K) and :func:`bernoulli`-style Bern(gamma), both exact. For gamma > 1:
    Bern(exp(-(gamma - floor(gamma)))) and floor(gamma) independent Bern(exp(-1)) trials,
    stopping at the first failure, so gamma = 700 or 1e4 costs about as much as gamma = 1.
    (For gamma >= 2**62 the trials stop after 2**62; reaching that point has probability
    exp(-2**62).)

    Returns a bool array of the broadcast shape of ``gamma`` (or ``size``).
    """
    arr = float_param(gamma, "gamma")
    if np.any(arr < 0):
        raise ParameterError(f"gamma must be >= 0 (Bern(exp(-gamma))), got minimum {arr.min()!r}")
    (flat,), shape = broadcast([arr], size, "gamma")
    out = np.empty(shape, dtype=np.bool_)
    _engine.run("bern_exp_kernel", as_randomness(rng), out.reshape(-1), 1.5, flat)
    return out


def bernoulli_log(log_p: Any, rng: RandomnessLike = None, *, size: Size = None) -> np.ndarray:
    """Exactly Bern(exp(log_p)) for floats ``log_p <= 0``: ``bernoulli_exp(-log_p)``.

    The way to sample probabilities far below 2**-53 (1e-21, 1e-300, exp(-1e4)) exactly:
    pass the logarithm, e.g. ``bernoulli_log(-700.0)`` is Bern(exp(-700)) exactly.
    """
    arr = float_param(log_p, "log_p")
    if np.any(arr > 0):
        raise ParameterError(f"log_p must be <= 0 (a log-probability), got maximum {arr.max()!r}")
    return bernoulli_exp(-arr, rng, size=size)


def bernoulli_exp_times(
    a: Any, gamma: Any, rng: RandomnessLike = None, *, size: Size = None
) -> np.ndarray:
    """Exactly Bern(exp(-a * gamma)) for integers ``a >= 0`` and floats ``gamma >= 0``.

    The product a * gamma is never formed (so never rounded): exp(-a gamma) is the
    product over the set bits j of a of exp(-(2**j gamma)), and 2**j * gamma is exact in
    floating point. The sampler draws one exact Bern(exp(-(2**j gamma))) per set bit
    (:func:`bernoulli_exp`), stopping at the first failure; equivalently, and in
    distribution identical to, a independent Bern(exp(-gamma)) trials short-circuited,
    but at most 63 draws instead of a. This lets the sensitive-privacy mechanism sample
    exp(-epsilon * (lambda - 1)) with no rounding of epsilon * (lambda - 1).

    ``a`` and ``gamma`` broadcast together (or to ``size``); returns a bool array.
    """
    a_arr = int_param(a, "a", minimum=0)
    g_arr = float_param(gamma, "gamma")
    if np.any(g_arr < 0):
        raise ParameterError(f"gamma must be >= 0, got minimum {g_arr.min()!r}")
    (a_flat, g_flat), shape = broadcast([a_arr, g_arr], size, "a and gamma")
    out = np.empty(shape, dtype=np.bool_)
    _engine.run("bern_exp_times_kernel", as_randomness(rng), out.reshape(-1), 2.0, a_flat, g_flat)
    return out


def bernoulli_logistic(x: Any, rng: RandomnessLike = None, *, size: Size = None) -> np.ndarray:
    """Exactly Bern(1 / (1 + exp(x))) for finite floats ``x``.

    For x >= 0: repeat { A ~ Bern(1/2); if A = 0 return 0; if Bern(exp(-x)) return 1 }:
    P[1] = (e^-x / 2) / (1 - (1 - e^-x) / 2) = 1 / (1 + e^x); at most 2 rounds on average.
    For x < 0, 1 / (1 + e^x) = 1 - 1 / (1 + e^-x): the complement of the x >= 0 case.
    Bern(exp(-x)) is :func:`bernoulli_exp` (CKS 2020 Algorithm 1), so this is exact.
    """
    arr = float_param(x, "x")
    (flat,), shape = broadcast([arr], size, "x")
    out = np.empty(shape, dtype=np.bool_)
    _engine.run("bern_logistic_kernel", as_randomness(rng), out.reshape(-1), 1.0, flat)
    return out


def randomized_response(bits: Any, p: float, rng: RandomnessLike = None) -> np.ndarray:
    """Flip each 0/1 entry of ``bits`` independently with probability ``p`` (exact).

    Warner's randomized response: for p < 1/2 each reported bit is epsilon-DP for its
    owner with epsilon = ln((1 - p) / p). The flips are exact :func:`bernoulli` draws.

    Parameters
    ----------
    bits:
        An array of 0/1 values (bool or integer dtype, any shape).
    p:
        The flip probability, in [0, 1/2].

    Returns
    -------
    An array of the same shape and dtype as ``bits`` (bool stays bool).
    """
    p = check_probability(p, "p")
    if p > 0.5:
        raise ParameterError(f"p (the flip probability) must be in [0, 1/2], got {p!r}")
    arr = np.asarray(bits)
    if arr.dtype == np.bool_:
        as_bool = arr
    elif arr.dtype.kind in "iuf":
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise DataError("bits must contain only 0 and 1 (or False/True)")
        as_bool = arr != 0
    else:
        raise DataError(
            f"bits must be a bool or numeric array of 0/1 values, got dtype {arr.dtype}"
        )
    flips = bernoulli(p, rng, size=arr.shape)
    return (as_bool ^ flips).astype(arr.dtype, copy=False)
