"""Floating-point-safe Laplace: grid snapping (Mironov 2012), accounting, validation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from privad import noise
from privad.errors import DataError, ParameterError
from privad.noise import GRANULARITY_BITS, LaplaceMechanism, grid_exponent


def _on_grid(y: np.ndarray, k: int) -> bool:
    m = np.ldexp(y, -k)
    return bool(np.array_equal(m, np.rint(m)))


@pytest.mark.parametrize("scale", [1.0, 0.37, 1e-9, 123456.789, 2.0**-1000, 3e250])
def test_outputs_lie_on_the_power_of_two_grid(scale: float) -> None:
    k = grid_exponent(scale)
    assert k == math.floor(math.log2(scale)) - GRANULARITY_BITS
    assert 2.0**k <= scale / 2**GRANULARITY_BITS
    rng = noise.Randomness(1)
    x = rng.uniform(-3, 3, 5000) * scale
    y = noise.laplace(x, scale, rng)
    assert y.dtype == np.float64 and y.shape == x.shape
    assert _on_grid(y, k)


def test_low_order_bits_of_the_input_cannot_change_the_output() -> None:
    """Mironov's attack reads the input from low-order bits of x + noise. Here the
    output depends on x only through n = rint(x / 2**k): inputs that differ below the
    grid (for example in the last bit of their float representation, so of different
    mantissa parity) give identical outputs under the same seed."""
    scale = 1.0
    k = grid_exponent(scale)
    rng = noise.Randomness(3)
    x = rng.uniform(-100, 100, 20_000)
    x_up = np.nextafter(x, np.inf)  # flips the parity of the mantissa
    x_far = x + 0.2 * 2.0**k  # moves below the grid step
    same = (np.rint(np.ldexp(x, -k)) == np.rint(np.ldexp(x_up, -k))) & (
        np.rint(np.ldexp(x, -k)) == np.rint(np.ldexp(x_far, -k))
    )
    assert same.mean() > 0.5
    x, x_up, x_far = x[same], x_up[same], x_far[same]
    # tiny inputs of both signs snap to +-0 and must not leak their sign
    x = np.concatenate([x, [1e-300, -1e-300, 0.0, -0.0]])
    x_up = np.concatenate([x_up, [-1e-300, 1e-300, -0.0, 5e-324]])
    x_far = np.concatenate([x_far, [0.0, 0.0, 2.0**-50, -(2.0**-50)]])
    y = noise.laplace(x, scale, 99)
    bits = y.view(np.int64)  # bitwise: also the sign of zero
    assert np.array_equal(bits, noise.laplace(x_up, scale, 99).view(np.int64))
    assert np.array_equal(bits, noise.laplace(x_far, scale, 99).view(np.int64))
    # and the parity of the input's mantissa is not visible in the output's low bits:
    # every output is a multiple of 2**k, whatever the input's last bit
    assert _on_grid(y, k)
    assert not _on_grid(x, k)


def test_naive_float_laplace_leaks_what_ours_does_not() -> None:
    """A demonstration of the attack surface: with x + Laplace in floating point, the
    set of outputs depends on the input's low bits; with the grid, outputs are always
    multiples of 2**k (no dependence)."""
    k = grid_exponent(1.0)
    x = np.full(2000, 0.1)  # not a multiple of 2**k
    naive = x + noise.Randomness(0).generator.laplace(0.0, 1.0, x.size)
    assert not _on_grid(naive, k)
    assert _on_grid(noise.laplace(x, 1.0, 0), k)


def test_inputs_are_snapped_exactly() -> None:
    """With the noise removed (subtract the discrete noise drawn from the same seed)
    the result is exactly rint(x / 2**k) * 2**k."""
    scale = 0.75
    k = grid_exponent(scale)
    x = np.array([0.0, 1.0, -1.0, 0.1, 1e10 + 0.3, -7.123456789, 2.0**-60, 5e-324])
    y = noise.laplace(x, scale, 4)
    num, den = math.ldexp(scale, -k).as_integer_ratio()
    z = noise.discrete_laplace(num, den, x.size, 4)
    expected = np.ldexp(np.rint(np.ldexp(x, -k)) + z, k)
    assert np.array_equal(y, expected)


def test_laplace_shapes_and_empty() -> None:
    assert noise.laplace(3.0, 1.0, 0).shape == ()
    assert noise.laplace(np.zeros((4, 5)), 1.0, 0).shape == (4, 5)
    assert noise.laplace([], 1.0, 0).shape == (0,)


def test_scale_for_accounts_for_the_grid_exactly() -> None:
    cases = [(1.0, 1.0, 1), (1.0, 0.1, 1), (3.7, 2.3, 5), (1e-6, 1e-3, 2), (5.0, 1e-12, 1)]
    for delta, eps, c in [*cases, (2.0, 700.0, 1), (1.0, 1.0, 10**6)]:
        b = noise.laplace_scale_for(delta, eps, coordinates=c)
        k = grid_exponent(b)
        exact = (Fraction(delta) + c * Fraction(2) ** k) / Fraction(b)
        assert exact <= Fraction(eps)
        # the smallest such double: one ulp less breaks the bound (or changes nothing)
        smaller = math.nextafter(b, 0.0)
        k2 = grid_exponent(smaller)
        assert (Fraction(delta) + c * Fraction(2) ** k2) / Fraction(smaller) > Fraction(eps)
        assert b >= delta / eps
        assert noise.laplace_epsilon_for(delta, b, coordinates=c) <= eps
        assert Fraction(noise.laplace_epsilon_for(delta, b, coordinates=c)) >= exact


def test_scale_for_overhead_is_tiny() -> None:
    b = noise.laplace_scale_for(1.0, 1.0)
    assert 1.0 < b <= 1.0 + 2.0**-39


def test_mechanism_scale_grid_guarantee() -> None:
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=0.5, neighbouring="add or remove one record")
    assert mech.scale == noise.laplace_scale_for(1.0, 0.5)
    assert mech.grid == 2.0 ** grid_exponent(mech.scale)
    g = mech.guarantee
    assert g.notion == "pure-dp" and g.epsilon == 0.5
    assert g.neighbouring == "add or remove one record"
    assert "granularity_bits 40" in g.description
    y = mech.release([10.0], rng=1)
    assert y.shape == (1,)
    with pytest.raises(ParameterError, match="coordinates"):
        mech.release([1.0, 2.0], rng=1)
    default = LaplaceMechanism(2.0, 1.0, coordinates=3)
    assert "L1" in default.guarantee.neighbouring
    assert default.release(np.zeros(3), 2).shape == (3,)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: noise.laplace([1.0], 0.0, 0), ParameterError),
        (lambda: noise.laplace([1.0], -1.0, 0), ParameterError),
        (lambda: noise.laplace([1.0], math.nan, 0), ParameterError),
        (lambda: noise.laplace([1.0], math.inf, 0), ParameterError),
        (lambda: noise.laplace([1.0], "1", 0), ParameterError),
        (lambda: noise.laplace([1.0, math.nan], 1.0, 0), DataError),
        (lambda: noise.laplace([math.inf], 1.0, 0), DataError),
        (lambda: noise.laplace(["a"], 1.0, 0), DataError),
        (lambda: noise.laplace([1e308], 1.0, 0), ParameterError),  # |x| / 2**k overflows
        (lambda: noise.laplace([1.0], 5e-324, 0), ParameterError),  # grid below 2**-1074
        (lambda: noise.laplace([1.0], 1.0, 0, granularity_bits=60), ParameterError),
        (lambda: noise.laplace([1.0], 1.0, "seed"), ParameterError),
        (lambda: noise.laplace_scale_for(0.0, 1.0), ParameterError),
        (lambda: noise.laplace_scale_for(1.0, 0.0), ParameterError),
        (lambda: noise.laplace_scale_for(1.0, -1.0), ParameterError),
        (lambda: noise.laplace_scale_for(1.0, math.nan), ParameterError),
        (lambda: noise.laplace_scale_for(1.0, 1.0, coordinates=0), ParameterError),
        (lambda: noise.laplace_scale_for(1e308, 1e-10), ParameterError),
        (lambda: LaplaceMechanism(1.0, 0.0), ParameterError),
        (lambda: LaplaceMechanism(-1.0, 1.0), ParameterError),
        (lambda: LaplaceMechanism(1.0, 1.0, neighbouring="  "), ParameterError),
    ],
)
def test_validation(call, error) -> None:  # noqa: ANN001
    with pytest.raises(error):
        call()


def test_error_messages_say_what_is_allowed() -> None:
    with pytest.raises(ParameterError, match=r"scale must be > 0"):
        noise.laplace([1.0], -2.0, 0)
    with pytest.raises(ParameterError, match=r"\|x\| < 2\*\*"):
        noise.laplace([1e308], 1.0, 0)
    with pytest.raises(DataError, match="NaN or infinite"):
        noise.laplace([np.nan], 1.0, 0)
