"""Step 1b: the relaxed-sensitivity Laplace mechanism, per column (Definition 3, section 4.1).

``𝒯'[i, j] = 𝒯[i, j] + Y_ij`` with independent ``Y_ij ~ Lap(RS_j/ε)`` in measurement units.
After the scaling of step 1a (divisor ``s_j``) column j has relaxed sensitivity ``RS_j/s_j``
and receives ``Lap((RS_j/s_j)/ε)``; with the default divisor ``s_j = RS_j`` that is
``Lap(1/ε)`` in every column.

Noise comes from :func:`privad.noise.laplace` (floating-point-safe: the value is snapped to
a power-of-two grid and exact discrete Laplace noise is added on that grid), with the scale
from :func:`privad.noise.laplace_scale_for`, which charges the grid rounding to the
sensitivity, so the scale is ``(RS_j/s_j)/ε`` up to that rounding allowance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.noise import as_randomness, laplace, laplace_scale_for
from privad.relaxed.sensitivity import check_relaxed_sensitivity
from privad.validation import check_array, check_epsilon

__all__ = ["laplace_columns", "noise_scales"]


def noise_scales(relaxed_sensitivity: Any, divisors: Any, epsilon: Any) -> np.ndarray:
    """The Laplace scale per column in the scaled space: ``laplace_scale_for(RS_j/s_j, ε)``.

    Parameters
    ----------
    relaxed_sensitivity:
        ``RS_j`` per column (eq. 1), measurement units.
    divisors:
        The step-1a divisors ``s_j`` (:func:`~privad.relaxed.scaling.column_divisors`).
    epsilon:
        ε > 0.
    """
    rs = check_relaxed_sensitivity(relaxed_sensitivity)
    s = check_relaxed_sensitivity(divisors, rs.size, name="divisors")
    epsilon = check_epsilon(epsilon)
    return np.array([float(laplace_scale_for(float(r), epsilon)) for r in rs / s])


def laplace_columns(scaled: Any, scales: Any, rng: Any = None) -> np.ndarray:
    """Step 1b: add independent Laplace noise with scale ``scales[j]`` to every entry of column j.

    Parameters
    ----------
    scaled:
        The (scaled) data 𝒯, n × d, finite.
    scales:
        One Laplace scale > 0 per column (:func:`noise_scales`).
    rng:
        A :class:`privad.noise.Randomness`, a seed, or ``None`` for OS entropy.

    Returns
    -------
    numpy.ndarray
        𝒯' (n × d float64); row i is record i.
    """
    T = check_array(scaled, "scaled")
    scales = check_relaxed_sensitivity(scales, T.shape[1], name="scales")
    gen = as_randomness(rng)
    out = np.empty_like(T)
    for j in range(T.shape[1]):
        out[:, j] = laplace(T[:, j], float(scales[j]), gen)
    return out
