"""The :class:`Randomness` object: the one source of randomness passed explicitly everywhere.

privad's rule: no module but :mod:`privad.noise` touches :mod:`numpy.random` or
:mod:`random`. Every function that draws takes ``rng`` (a :class:`Randomness`, an integer
seed, a NumPy ``Generator``/``BitGenerator``/``SeedSequence``, or ``None`` for fresh OS
entropy) and coerces it with :func:`as_randomness`.

Not a CSPRNG
------------
By default a :class:`Randomness` wraps ``numpy.random.Generator(PCG64DXSM(seed))``.
PCG64DXSM is a fast, statistically excellent generator, but it is **not** a
cryptographically secure PRNG: an adversary who sees enough raw output could in principle
recover its state and predict the noise. For a release where that matters, pass your own
bit generator, for example one seeded from a CSPRNG and reseeded per release, or any
NumPy ``BitGenerator`` you trust::

    Randomness(np.random.Generator(np.random.SFC64(seed)))   # any Generator
    Randomness(np.random.Philox(key=key))                     # or a BitGenerator

The privacy-critical samplers (:func:`~privad.noise.laplace`, the exact Bernoulli and
discrete Laplace samplers) read uniform 64-bit words from the bit generator (its
``next_uint64``: drawn in bulk, or for ``PCG64DXSM`` computed by the compiled samplers from
the generator's state, the same words), so they are exact given uniform words from *any*
``BitGenerator``, MT19937 included.

Seeds
-----
``Randomness(None)`` draws its seed from the operating system (a fresh, non-reproducible
stream). ``Randomness(42)`` is reproducible: the same seed gives the same draws with the
same privad and NumPy versions. A seeded ``Randomness`` must never be used for a real
release: whoever knows the seed can subtract the noise.

Not thread-safe: give each thread or Dask partition its own stream with :meth:`spawn`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np

from privad.errors import ParameterError
from privad.validation import check_int

__all__ = ["Randomness", "RandomnessLike", "as_randomness"]

Size: TypeAlias = int | tuple[int, ...] | None


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParameterError(f"seed must be a non-negative integer or None, got {seed!r}")
    seed = int(seed)
    if seed < 0:
        raise ParameterError(f"seed must be a non-negative integer or None, got {seed}")
    return seed


def _check_size(size: Any) -> Size:
    if size is None:
        return None
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return check_int(size, "size", minimum=0)
    if isinstance(size, tuple | list):
        return tuple(check_int(s, "size", minimum=0) for s in size)
    raise ParameterError(f"size must be None, an integer >= 0 or a tuple of them, got {size!r}")


class Randomness:
    """A stream of randomness: privad's wrapper of a NumPy :class:`numpy.random.Generator`.

    Parameters
    ----------
    seed:
        ``None`` (default): seeded from OS entropy. A non-negative ``int`` or a
        :class:`numpy.random.SeedSequence`: a reproducible ``PCG64DXSM`` stream. A
        :class:`numpy.random.BitGenerator`: wrapped in a ``Generator``. A
        :class:`numpy.random.Generator`: used as is (shared, not copied: draws advance it).
        Another :class:`Randomness`: shares its stream.

    The methods below are for *non-privacy-critical* draws (data generators, random
    splits, initialisations). Noise for a private release goes through the exact samplers
    of :mod:`privad.noise` (:func:`~privad.noise.laplace`, :func:`~privad.noise.bernoulli`,
    ...), which take this object as ``rng``. PCG64DXSM is not a CSPRNG; see the module
    documentation for passing your own bit generator.
    """

    __slots__ = ("_generator",)

    def __init__(
        self,
        seed: int
        | np.random.SeedSequence
        | np.random.BitGenerator
        | np.random.Generator
        | Randomness
        | None = None,
    ) -> None:
        if isinstance(seed, Randomness):
            generator = seed._generator
        elif isinstance(seed, np.random.Generator):
            generator = seed
        elif isinstance(seed, np.random.BitGenerator):
            generator = np.random.Generator(seed)
        elif seed is None or isinstance(seed, np.random.SeedSequence):
            generator = np.random.Generator(np.random.PCG64DXSM(seed))
        elif isinstance(seed, np.random.RandomState):
            raise ParameterError(
                "numpy.random.RandomState (the legacy generator) is not supported; pass a "
                "numpy.random.Generator, a BitGenerator, an integer seed or None"
            )
        else:
            generator = np.random.Generator(np.random.PCG64DXSM(_check_seed(seed)))
        self._generator = generator

    # -- access ------------------------------------------------------------------------

    @property
    def generator(self) -> np.random.Generator:
        """The underlying NumPy Generator. For use inside :mod:`privad.noise` only."""
        return self._generator

    def __repr__(self) -> str:
        return f"Randomness({type(self._generator.bit_generator).__name__})"

    # -- streams -----------------------------------------------------------------------

    def spawn(self, n: int) -> list[Randomness]:
        """``n`` independent child streams (``SeedSequence.spawn``), e.g. one per partition.

        Children of a seeded stream are reproducible; they share no seed with the parent
        or with each other, so no two partitions ever draw the same numbers. Spawning does
        not advance the parent's stream.
        """
        n = check_int(n, "n", minimum=0)
        try:
            children = self._generator.spawn(n)
        except TypeError as exc:
            raise ParameterError(
                "this Randomness cannot spawn child streams: its bit generator was not "
                f"created from a SeedSequence ({exc})"
            ) from None
        return [Randomness(child) for child in children]

    def derive_seed(self) -> int:
        """A seed in [0, 2**32) drawn from this stream, for third-party code that only
        takes an integer seed (for example scikit-learn's ``random_state``)."""
        return int(self._generator.integers(0, 2**32))

    # -- non-privacy-critical draws ----------------------------------------------------

    def _call(self, method: Callable[..., Any], name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            raise ParameterError(f"Randomness.{name}: invalid argument: {exc}") from None

    def random(self, size: Size = None) -> Any:
        """Uniform floats in [0, 1)."""
        return self._call(self._generator.random, "random", _check_size(size))

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Size = None) -> Any:
        """Uniform floats in [low, high); ``low`` and ``high`` finite with low <= high."""
        lo, hi = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ParameterError(f"uniform: low and high must be finite, got {low!r}, {high!r}")
        if np.any(lo > hi):
            raise ParameterError(f"uniform: low must be <= high, got low={low!r}, high={high!r}")
        return self._call(self._generator.uniform, "uniform", low, high, _check_size(size))

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Size = None) -> Any:
        """Normal draws; ``scale`` (standard deviation) finite and >= 0."""
        sc = np.asarray(scale, dtype=float)
        if not np.isfinite(sc).all() or np.any(sc < 0):
            raise ParameterError(f"normal: scale must be finite and >= 0, got {scale!r}")
        if not np.isfinite(np.asarray(loc, dtype=float)).all():
            raise ParameterError(f"normal: loc must be finite, got {loc!r}")
        return self._call(self._generator.normal, "normal", loc, scale, _check_size(size))

    def standard_normal(self, size: Size = None) -> Any:
        """Standard normal draws."""
        return self._call(self._generator.standard_normal, "standard_normal", _check_size(size))

    def multivariate_normal(self, mean: Any, cov: Any, size: Size = None) -> np.ndarray:
        """Multivariate normal draws (``cov`` symmetric positive semi-definite)."""
        return self._call(
            self._generator.multivariate_normal,
            "multivariate_normal",
            mean,
            cov,
            _check_size(size),
            check_valid="raise",
        )

    def standard_t(self, df: Any, size: Size = None) -> Any:
        """Student's t draws with ``df`` > 0 degrees of freedom (heavy tails for generators)."""
        d = np.asarray(df, dtype=float)
        if not np.isfinite(d).all() or np.any(d <= 0):
            raise ParameterError(f"standard_t: df must be finite and > 0, got {df!r}")
        return self._call(self._generator.standard_t, "standard_t", df, _check_size(size))

    def exponential(self, scale: Any = 1.0, size: Size = None) -> Any:
        """Exponential draws with mean ``scale`` >= 0."""
        sc = np.asarray(scale, dtype=float)
        if not np.isfinite(sc).all() or np.any(sc < 0):
            raise ParameterError(f"exponential: scale must be finite and >= 0, got {scale!r}")
        return self._call(self._generator.exponential, "exponential", scale, _check_size(size))

    def binomial(self, n: Any, p: Any, size: Size = None) -> Any:
        """Binomial draws (not exact to the bit: use :func:`~privad.noise.bernoulli` for
        privacy-critical coins)."""
        return self._call(self._generator.binomial, "binomial", n, p, _check_size(size))

    def poisson(self, lam: Any = 1.0, size: Size = None) -> Any:
        """Poisson draws with mean ``lam`` >= 0."""
        return self._call(self._generator.poisson, "poisson", lam, _check_size(size))

    def integers(
        self, low: Any, high: Any = None, size: Size = None, *, endpoint: bool = False
    ) -> Any:
        """Uniform integers in [low, high) (``[0, low)`` if ``high`` is None), as int64."""
        return self._call(
            self._generator.integers,
            "integers",
            low,
            high,
            _check_size(size),
            dtype=np.int64,
            endpoint=endpoint,
        )

    def permutation(self, x: int | Sequence[Any] | np.ndarray) -> np.ndarray:
        """A permuted ``arange(x)`` for an int, or a permuted copy of an array (axis 0)."""
        if isinstance(x, numbers.Integral) and not isinstance(x, bool):
            x = check_int(x, "x", minimum=0)
        return self._call(self._generator.permutation, "permutation", x)

    def shuffle(self, x: np.ndarray) -> None:
        """Shuffle an array in place along axis 0."""
        self._call(self._generator.shuffle, "shuffle", x)

    def choice(
        self,
        a: int | Sequence[Any] | np.ndarray,
        size: Size = None,
        replace: bool = True,
        p: Any = None,
    ) -> Any:
        """Random sample from ``a`` (an int n means ``arange(n)``), optionally weighted by
        ``p`` (finite, >= 0, summing to 1)."""
        if p is not None:
            parr = np.asarray(p, dtype=float)
            if not np.isfinite(parr).all() or np.any(parr < 0):
                raise ParameterError("choice: p must contain finite probabilities >= 0")
        return self._call(self._generator.choice, "choice", a, _check_size(size), bool(replace), p)


RandomnessLike: TypeAlias = (
    Randomness | int | np.random.Generator | np.random.BitGenerator | np.random.SeedSequence | None
)
"""What an ``rng`` argument accepts (see :func:`as_randomness`)."""


def as_randomness(rng: RandomnessLike = None) -> Randomness:
    """Coerce ``rng`` to a :class:`Randomness`.

    ``None`` -> fresh OS entropy; an ``int`` or ``SeedSequence`` -> a seeded PCG64DXSM
    stream; a NumPy ``Generator`` or ``BitGenerator`` -> wrapped (shared, not copied); a
    :class:`Randomness` -> returned unchanged.
    """
    if isinstance(rng, Randomness):
        return rng
    if (
        rng is None
        or isinstance(rng, np.random.Generator | np.random.BitGenerator | np.random.SeedSequence)
        or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool))
    ):
        return Randomness(rng)
    raise ParameterError(
        "rng must be a privad.noise.Randomness, a non-negative integer seed, a "
        f"numpy.random.Generator or BitGenerator, or None; got {type(rng).__name__}"
    )
