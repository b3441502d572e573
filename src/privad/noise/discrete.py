"""Exact discrete Laplace sampling (Canonne, Kamath, Steinke 2020, Algorithm 2)."""

from __future__ import annotations

import math

import numpy as np

from privad.errors import ParameterError
from privad.noise import _engine
from privad.noise.randomness import RandomnessLike, Size, _check_size, as_randomness
from privad.validation import check_int

__all__ = ["MAX_SCALE_NUM", "discrete_laplace"]

MAX_SCALE_NUM = 2**53
"""Largest allowed numerator of the scale (after reduction): a sample then overflows
int64 with probability below exp(-1023)."""

_INT64_MAX = 2**63 - 1


def discrete_laplace(
    scale_num: int, scale_den: int, size: Size, rng: RandomnessLike = None
) -> np.ndarray:
    """Exact discrete Laplace samples: P[Z = z] proportional to exp(-|z| * den / num).

    The scale is the rational t = ``scale_num / scale_den`` (two positive integers);
    the sampler is C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
    Differential Privacy", NeurIPS 2020, Algorithm 2, with exact integer arithmetic::

        repeat:
            U ~ uniform{0, ..., num - 1}
            D ~ Bern(exp(-U / num))          (Algorithm 1, exact)
            if D = 0: restart
            V ~ number of successes of Bern(exp(-1)) before the first failure
            X = U + num * V;  Y = floor(X / den);  B ~ Bern(1/2)
            if B = 1 and Y = 0: restart
            return (1 - 2B) * Y

    Adding ``discrete_laplace(num, den, ...)`` to an integer query of L1 sensitivity
    Delta is (Delta * den / num)-DP.

    Parameters
    ----------
    scale_num, scale_den:
        Positive integers; the fraction is reduced, and the reduced numerator must be
        <= 2**53 (:data:`MAX_SCALE_NUM`).
    size:
        Output shape (an int or a tuple).
    rng:
        A :class:`~privad.noise.Randomness` or anything :func:`~privad.noise.as_randomness`
        accepts.

    Returns
    -------
    An int64 array of shape ``size``. (A draw beyond int64 has probability below
    exp(-1023) and raises ``OverflowError`` rather than wrap.)
    """
    num = check_int(scale_num, "scale_num", minimum=1)
    den = check_int(scale_den, "scale_den", minimum=1)
    g = math.gcd(num, den)
    num, den = num // g, den // g
    if num > MAX_SCALE_NUM:
        raise ParameterError(
            f"scale_num / scale_den = {num}/{den} in lowest terms: the numerator must be "
            f"<= 2**53 so that samples fit in int64; got {num}"
        )
    if den > _INT64_MAX:
        raise ParameterError(f"scale_den must be < 2**63 in lowest terms, got {den}")
    shape = _check_size(size)
    if shape is None:
        raise ParameterError("size must be an integer >= 0 or a tuple of them, got None")
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    _engine.run("dlap_kernel", as_randomness(rng), out, 4.2, num, den, _INT64_MAX)
    return out.reshape(shape)
