"""Floating-point-safe Laplace noise for released real values.

Why not ``x + numpy.random.laplace(scale)``
-------------------------------------------
I. Mironov, "On Significance of the Least Significant Bits for Differential Privacy",
CCS 2012, showed that textbook floating-point Laplace noise breaks differential privacy:
the set of doubles that ``x + noise`` can produce depends on ``x``, so some outputs are
possible for one input and impossible for its neighbour, and the low-order bits of a
release can reveal the input exactly.

What :func:`laplace` does (the approach of OpenDP and Google's differential-privacy library)
----------------------------------------------------------------------------------------------
1. Choose a power-of-two grid 2**k with ``k = floor(log2(scale)) - G``, where ``G`` is the
   granularity (:data:`GRANULARITY_BITS`, 40 by default, as Google's library uses 2**40).
2. Snap each input to the nearest multiple of 2**k: ``n = rint(x * 2**-k)``. Scaling by a
   power of two is exact in floating point, and ``rint`` of a double is an exact integer,
   so ``n`` is exactly the nearest integer to x / 2**k.
3. Add *exact* discrete Laplace noise Z with scale t = scale / 2**k (a dyadic rational,
   ``float.as_integer_ratio``) on the integers: Canonne, Kamath, Steinke 2020,
   Algorithm 2 (:func:`~privad.noise.discrete_laplace`).
4. Output ``(n + Z) * 2**k``. The exact integer ``n + Z`` is the private release; its
   conversion to a double is post-processing: ``n`` and ``Z`` are both exact doubles
   (``|Z| <= 2**53`` is enforced, see below), and IEEE addition returns the correctly
   rounded exact sum, a function of ``n + Z`` alone; multiplying by 2**k is exact.

Every output lies on the 2**k grid and depends on the input only through ``n``: the
low-order bits of ``x`` below the grid cannot influence it.

Privacy accounting. Snapping can move two inputs apart by up to one grid step, so a query
of L1 sensitivity Delta has sensitivity at most Delta + c * 2**k after snapping, where c
is the number of coordinates that can differ between neighbours. The release is
epsilon-DP with epsilon = (Delta + c * 2**k) / scale; :func:`laplace_scale_for` returns
the smallest double ``scale`` with (Delta + c * 2**k(scale)) / scale <= epsilon, checked in
exact rational arithmetic.

Limits. ``scale`` must be at least 2**(G - 1073) so the grid is representable. Inputs
must satisfy |x| * 2**-k < 2**1024 (finite after scaling), which for scale >= 1 and G = 40
means |x| < 2**984; a larger (or NaN) input raises, and an exception that depends on the
data is itself a (one-bit) leak: clamp inputs to a public range first. A noise draw with
|Z| > 2**53 raises ``OverflowError``; it has probability about exp(-2**(52 - G)) =
exp(-4096) for G = 40.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

import numpy as np

from privad.errors import ParameterError
from privad.noise import _engine
from privad.noise.randomness import RandomnessLike, _check_size, as_randomness
from privad.validation import check_epsilon, check_finite_array, check_int, check_positive

__all__ = [
    "GRANULARITY_BITS",
    "LaplaceMechanism",
    "grid_exponent",
    "laplace",
    "laplace_epsilon_for",
    "laplace_noise",
    "laplace_scale_for",
]

GRANULARITY_BITS: Final[int] = 40
"""Default G: the grid step is 2**(floor(log2(scale)) - G), at most scale / 2**40."""

MIN_GRANULARITY_BITS: Final[int] = 8
MAX_GRANULARITY_BITS: Final[int] = 44
"""G above 44 would let |Z| exceed 2**53 with non-negligible probability (> exp(-256))."""

_NOISE_LIMIT = 2**53


def _check_granularity(granularity_bits: Any) -> int:
    return check_int(
        granularity_bits,
        "granularity_bits",
        minimum=MIN_GRANULARITY_BITS,
        maximum=MAX_GRANULARITY_BITS,
    )


def grid_exponent(scale: float, granularity_bits: int = GRANULARITY_BITS) -> int:
    """The grid exponent ``k = floor(log2(scale)) - granularity_bits`` of :func:`laplace`."""
    scale = check_positive(scale, "scale")
    g = _check_granularity(granularity_bits)
    _, e = math.frexp(scale)  # scale = f * 2**e with 0.5 <= f < 1, exactly
    k = (e - 1) - g
    if k < -1074:
        raise ParameterError(
            f"scale must be >= 2**{g - 1073} for granularity_bits={g} (the grid step "
            f"2**(floor(log2(scale)) - {g}) must be a representable double), got {scale!r}"
        )
    return k


def laplace(
    values: Any,
    scale: float,
    rng: RandomnessLike = None,
    *,
    granularity_bits: int = GRANULARITY_BITS,
) -> np.ndarray:
    """Release ``values`` plus floating-point-safe Laplace noise of scale ``scale``.

    Snaps each value to the grid 2**k (k = floor(log2(scale)) - granularity_bits), adds
    exact discrete Laplace noise of scale ``scale / 2**k`` on that grid (Canonne, Kamath,
    Steinke 2020, Algorithm 2) and returns the result as doubles; this defends against
    Mironov's 2012 floating-point attack (see the module documentation). For an L1
    sensitivity Delta the release is epsilon-DP with epsilon = (Delta + c 2**k) / scale
    (c = coordinates that can differ); get ``scale`` from :func:`laplace_scale_for` or use
    :class:`LaplaceMechanism`, which do this accounting.

    Parameters
    ----------
    values:
        A finite real number or array of any shape (DataError on NaN/inf).
    scale:
        The Laplace scale b > 0 (noise density proportional to exp(-|z| / b)).
    rng:
        A :class:`~privad.noise.Randomness` (or a seed, a NumPy Generator, or ``None``
        for OS entropy). Never use a seeded stream for a real release.
    granularity_bits:
        G in [8, 44]; default :data:`GRANULARITY_BITS` = 40.

    Returns
    -------
    A float64 array of the shape of ``values``; every entry is a multiple of 2**k.
    """
    scale = check_positive(scale, "scale")
    k = grid_exponent(scale, granularity_bits)
    x = check_finite_array(values, "values")
    flat = np.require(x.reshape(-1), requirements=("C", "W"))
    if flat.size:
        # snapping (rint(x / 2**k), exact) is monotone: the extreme values decide overflow
        with np.errstate(over="ignore"):
            extremes = np.rint(np.ldexp(np.array([flat.min(), flat.max()]), -k))
        if not np.isfinite(extremes).all():
            raise ParameterError(
                f"values too large for the noise grid 2**{k} of scale {scale!r}: need "
                f"|x| < 2**{1024 + k}; the largest |x| is {float(np.abs(x).max())!r}"
            )
    t = math.ldexp(scale, -k)  # exact, in [2**G, 2**(G+1))
    num, den = t.as_integer_ratio()
    out = np.empty_like(flat)
    if out.size:  # snapping, noise and scaling back in one pass (one new array)
        _engine.run(
            "laplace_kernel",
            as_randomness(rng),
            out,
            4.2,
            flat,
            *_powers(k),
            num,
            den,
            _NOISE_LIMIT,
        )
    return out.reshape(x.shape)


def _powers(k: int) -> tuple[float, float, float]:
    """``(down1, down2, up)`` of the Laplace kernel: ``down1 * down2 = 2**-k`` with ``down1``
    at most 2**1023, and ``up = 2**k`` (k >= -1074, so 2**k is a double, maybe subnormal)."""
    d1 = min(-k, 1023)
    return math.ldexp(1.0, d1), math.ldexp(1.0, -k - d1), math.ldexp(1.0, k)


def laplace_noise(
    scale: float,
    size: int | tuple[int, ...],
    rng: RandomnessLike = None,
    *,
    granularity_bits: int = GRANULARITY_BITS,
) -> np.ndarray:
    """Laplace noise alone, on the grid 2**k of ``scale``: ``laplace(zeros(size), scale)``.

    To *release* a value use :func:`laplace` on the value itself: adding this noise to an
    arbitrary double ``x`` in floating point brings Mironov's attack back (the sum is not
    on the grid). It is safe where ``x`` is already a multiple of 2**k that is small
    enough for the sum to be exact (for example an integer count when scale < 2**40).
    """
    shape = _check_size(size)
    if shape is None:
        raise ParameterError("size must be an integer >= 0 or a tuple of them, got None")
    return laplace(np.zeros(shape), scale, rng, granularity_bits=granularity_bits)


def _snapped_sensitivity(sensitivity: float, scale: float, coordinates: int, g: int) -> Fraction:
    """Delta + c 2**k, k = grid_exponent(scale, g): the sensitivity after grid snapping."""
    return Fraction(sensitivity) + coordinates * Fraction(2) ** grid_exponent(scale, g)


def _round_up(x: Fraction) -> float:
    """The smallest double >= ``x``."""
    f = float(x)
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def laplace_scale_for(
    sensitivity: float,
    epsilon: float,
    *,
    coordinates: int = 1,
    granularity_bits: int = GRANULARITY_BITS,
) -> float:
    """The smallest double ``scale`` for which :func:`laplace` is ``epsilon``-DP.

    That is, with k = floor(log2(scale)) - granularity_bits,
    ``(sensitivity + coordinates * 2**k) / scale <= epsilon`` holds in exact rational
    arithmetic: the grid snapping's increase of the sensitivity is accounted for.

    Parameters
    ----------
    sensitivity:
        The L1 sensitivity Delta > 0 of the released vector under the neighbouring
        relation.
    epsilon:
        The target epsilon > 0.
    coordinates:
        The most coordinates of the released vector that can differ between neighbours
        (1 for a scalar, or a histogram under add/remove one record; 2 for a histogram
        under substitution; the vector's length in general).
    granularity_bits:
        G of the grid (default :data:`GRANULARITY_BITS`).
    """
    delta = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    c = check_int(coordinates, "coordinates", minimum=1)
    g = _check_granularity(granularity_bits)
    grid_cost = c * 2.0 ** -(g + 1)
    if eps <= grid_cost:
        raise ParameterError(
            f"epsilon={eps!r} is below the grid's own cost: snapping to the grid spends at "
            f"least coordinates x 2^-(G+1) = {grid_cost:.3g} of epsilon at every scale "
            f"(granularity_bits G = {g}), so no Laplace scale gives it; use a larger epsilon "
            "or more granularity_bits"
        )
    scale = delta / eps
    try:
        for _ in range(64):
            if not math.isfinite(scale) or scale <= 0:
                break
            need = _snapped_sensitivity(delta, scale, c, g) / Fraction(eps)
            if Fraction(scale) >= need:
                return scale
            scale = max(_round_up(need), math.nextafter(scale, math.inf))
    except OverflowError:  # the scale needed exceeds the largest double
        pass
    raise ParameterError(
        f"no finite Laplace scale gives epsilon={eps!r} for sensitivity={delta!r}: the "
        f"scale needed, Delta / epsilon = {delta / eps!r} plus the grid's cost, exceeds the "
        "largest double"
    )


def laplace_epsilon_for(
    sensitivity: float,
    scale: float,
    *,
    coordinates: int = 1,
    granularity_bits: int = GRANULARITY_BITS,
) -> float:
    """The epsilon of :func:`laplace` with this ``scale``: (Delta + c 2**k) / scale,
    rounded up to a double (so the reported value is never below the true one)."""
    delta = check_positive(sensitivity, "sensitivity")
    scale = check_positive(scale, "scale")
    c = check_int(coordinates, "coordinates", minimum=1)
    g = _check_granularity(granularity_bits)
    return _round_up(_snapped_sensitivity(delta, scale, c, g) / Fraction(scale))


@dataclass(frozen=True)
class LaplaceMechanism:
    """The epsilon-DP Laplace mechanism for a real-valued query, floating-point safe.

    Parameters
    ----------
    sensitivity:
        L1 sensitivity Delta > 0 of the query under ``neighbouring``.
    epsilon:
        Privacy parameter epsilon > 0.
    coordinates:
        The most coordinates of a released vector that can differ between neighbours
        (see :func:`laplace_scale_for`); :meth:`release` refuses longer vectors.
    neighbouring:
        The neighbouring relation in words (recorded in :attr:`guarantee`), e.g.
        ``"add or remove one record"``. Default: a description in terms of the query's
        sensitivity.
    granularity_bits:
        G of the grid (default :data:`GRANULARITY_BITS`).

    Attributes
    ----------
    scale:
        The Laplace scale from :func:`laplace_scale_for` (accounts for grid snapping).
    grid:
        The grid step 2**k of the outputs.
    """

    sensitivity: float
    epsilon: float
    coordinates: int = 1
    neighbouring: str | None = None
    granularity_bits: int = GRANULARITY_BITS
    scale: float = field(init=False)
    grid: float = field(init=False)

    def __post_init__(self) -> None:
        delta = check_positive(self.sensitivity, "sensitivity")
        eps = check_epsilon(self.epsilon, per_answer=True)
        c = check_int(self.coordinates, "coordinates", minimum=1)
        g = _check_granularity(self.granularity_bits)
        if self.neighbouring is None:
            relation = (
                f"any two inputs whose query values differ by at most {delta!r} in L1 norm, "
                f"in at most {c} coordinate(s)"
            )
        elif isinstance(self.neighbouring, str) and self.neighbouring.strip():
            relation = self.neighbouring.strip()
        else:
            raise ParameterError(
                "neighbouring must be a non-empty description of the neighbouring relation "
                f"(e.g. 'add or remove one record') or None, got {self.neighbouring!r}"
            )
        scale = laplace_scale_for(delta, eps, coordinates=c, granularity_bits=g)
        object.__setattr__(self, "sensitivity", delta)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "coordinates", c)
        object.__setattr__(self, "neighbouring", relation)
        object.__setattr__(self, "granularity_bits", g)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "grid", math.ldexp(1.0, grid_exponent(scale, g)))

    def release(self, values: Any, rng: RandomnessLike = None) -> np.ndarray:
        """``values`` plus noise: :func:`laplace` with :attr:`scale`."""
        x = check_finite_array(values, "values")
        if x.size > self.coordinates:
            raise ParameterError(
                f"this mechanism was built for at most {self.coordinates} coordinate(s) that "
                f"differ between neighbours, but values has {x.size}; build it with "
                f"coordinates={x.size} (the grid rounding adds 2**k per changed coordinate "
                "to the sensitivity)"
            )
        return laplace(x, self.scale, rng, granularity_bits=self.granularity_bits)

    @property
    def guarantee(self) -> Any:
        """The :class:`privad.accounting.guarantee.Guarantee`: ``"pure-dp"`` with
        :attr:`epsilon` under :attr:`neighbouring`; the description records the
        sensitivity, scale, grid and granularity."""
        # Imported here: privad.accounting sits above privad.noise in the layering and
        # must not be needed to import privad.noise.
        from privad.accounting.guarantee import Guarantee

        return Guarantee(
            notion="pure-dp",
            epsilon=self.epsilon,
            neighbouring=str(self.neighbouring),
            description=(
                f"Laplace mechanism, grid-snapped with exact discrete Laplace noise "
                f"(Mironov 2012 defence; CKS 2020 Alg. 2): L1 sensitivity {self.sensitivity!r}, "
                f"scale {self.scale!r}, grid 2**{grid_exponent(self.scale, self.granularity_bits)}"
                f", granularity_bits {self.granularity_bits}, at most {self.coordinates} "
                "changed coordinate(s)"
            ),
        )
