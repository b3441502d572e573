"""privad.noise: all of privad's randomness (layer 1).

No other module of privad touches :mod:`numpy.random` or :mod:`random`. Everything that
draws takes an ``rng`` argument, coerced with :func:`as_randomness`.

* :class:`Randomness`, :func:`as_randomness`: the randomness object (a NumPy Generator,
  PCG64DXSM by default; not a CSPRNG, bring your own BitGenerator if you need one), its
  non-privacy-critical draws and :meth:`Randomness.spawn` for independent child streams.
* :func:`laplace`, :func:`laplace_scale_for`, :class:`LaplaceMechanism` (and
  :func:`laplace_epsilon_for`, :func:`laplace_noise`, :func:`grid_exponent`):
  floating-point-safe Laplace for released reals (grid snapping plus exact discrete
  Laplace; defends against Mironov 2012).
* :func:`discrete_laplace`: exact discrete Laplace (Canonne, Kamath, Steinke 2020, Alg. 2).
* :func:`bernoulli`, :func:`bernoulli_exp`, :func:`bernoulli_log`,
  :func:`bernoulli_exp_times`, :func:`bernoulli_logistic`: exact Bernoulli samplers
  (CKS 2020 Alg. 1), also for probabilities far below 2**-53.
* :func:`randomized_response`.

The exact samplers run in Numba kernels compiled on first use (cached on disk), so
importing this package does not import Numba.
"""

from privad.noise.bernoulli import (
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_times,
    bernoulli_log,
    bernoulli_logistic,
    randomized_response,
)
from privad.noise.discrete import MAX_SCALE_NUM, discrete_laplace
from privad.noise.laplace import (
    GRANULARITY_BITS,
    LaplaceMechanism,
    grid_exponent,
    laplace,
    laplace_epsilon_for,
    laplace_noise,
    laplace_scale_for,
)
from privad.noise.randomness import Randomness, RandomnessLike, as_randomness

__all__ = [
    "GRANULARITY_BITS",
    "MAX_SCALE_NUM",
    "LaplaceMechanism",
    "Randomness",
    "RandomnessLike",
    "as_randomness",
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_times",
    "bernoulli_log",
    "bernoulli_logistic",
    "discrete_laplace",
    "grid_exponent",
    "laplace",
    "laplace_epsilon_for",
    "laplace_noise",
    "laplace_scale_for",
    "randomized_response",
]
