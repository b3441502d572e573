"""Input validation of the exact samplers: PrivadError subclasses with clear messages."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privad import noise
from privad.errors import DataError, ParameterError


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: noise.bernoulli(1.5, 0), ParameterError, r"\[0, 1\]"),
        (lambda: noise.bernoulli(-0.1, 0), ParameterError, r"\[0, 1\]"),
        (lambda: noise.bernoulli([0.5, math.nan], 0), ParameterError, "finite"),
        (lambda: noise.bernoulli("x", 0), ParameterError, "real number"),
        (lambda: noise.bernoulli([0.1, 0.2], 0, size=3), ParameterError, "broadcast"),
        (lambda: noise.bernoulli(0.1, 0, size=-2), ParameterError, "size"),
        (lambda: noise.bernoulli_exp(-1.0, 0), ParameterError, ">= 0"),
        (lambda: noise.bernoulli_exp(math.inf, 0), ParameterError, "finite"),
        (lambda: noise.bernoulli_log(0.5, 0), ParameterError, "<= 0"),
        (lambda: noise.bernoulli_log(-math.inf, 0), ParameterError, "finite"),
        (lambda: noise.bernoulli_exp_times(-1, 0.5, 0), ParameterError, ">= 0"),
        (lambda: noise.bernoulli_exp_times(1.5, 0.5, 0), ParameterError, "integers"),
        (lambda: noise.bernoulli_exp_times([True], 0.5, 0), ParameterError, "integer"),
        (lambda: noise.bernoulli_exp_times(2**64, 0.5, 0), ParameterError, "2\\*\\*63"),
        (lambda: noise.bernoulli_exp_times(1, -0.5, 0), ParameterError, ">= 0"),
        (lambda: noise.bernoulli_exp_times([1, 2], [0.1, 0.2, 0.3]), ParameterError, "broadcast"),
        (lambda: noise.bernoulli_logistic(math.nan, 0), ParameterError, "finite"),
        (lambda: noise.randomized_response([0, 1], 0.6, 0), ParameterError, r"\[0, 1/2\]"),
        (lambda: noise.randomized_response([0, 1], -0.1, 0), ParameterError, r"\[0, 1\]"),
        (lambda: noise.randomized_response([0, 2], 0.1, 0), DataError, "only 0 and 1"),
        (lambda: noise.randomized_response(["a"], 0.1, 0), DataError, "0/1"),
        (lambda: noise.discrete_laplace(0, 1, 5, 0), ParameterError, ">= 1"),
        (lambda: noise.discrete_laplace(1, -2, 5, 0), ParameterError, ">= 1"),
        (lambda: noise.discrete_laplace(1.5, 1, 5, 0), ParameterError, "integer"),
        (lambda: noise.discrete_laplace(2**60, 1, 5, 0), ParameterError, "2\\*\\*53"),
        (lambda: noise.discrete_laplace(1, 1, None, 0), ParameterError, "size"),
        (lambda: noise.discrete_laplace(1, 1, 5, 1.5), ParameterError, "rng"),
    ],
)
def test_bad_inputs_raise(call, error, match) -> None:  # noqa: ANN001
    with pytest.raises(error, match=match):
        call()


def test_edge_values() -> None:
    assert not noise.bernoulli(0.0, 0, size=1000).any()
    assert noise.bernoulli(1.0, 0, size=1000).all()
    assert noise.bernoulli_exp(0.0, 0, size=1000).all()
    assert noise.bernoulli_log(0.0, 0, size=1000).all()
    assert noise.bernoulli_exp_times(0, 1e300, 0, size=1000).all()
    assert not noise.bernoulli_exp_times(2**62, 1e300, 0, size=10).any()
    assert not noise.bernoulli_exp(1e300, 0, size=10).any()
    assert noise.bernoulli(np.zeros((0, 3)), 0).shape == (0, 3)
    assert noise.discrete_laplace(2**53, 1, 10, 0).dtype == np.int64
    assert noise.discrete_laplace(6, 4, (2, 3), 0).shape == (2, 3)  # reduced to 3/2
    assert noise.bernoulli_exp_times(np.arange(4).reshape(2, 2), [0.1, 0.2], 0).shape == (2, 2)
    assert noise.bernoulli([[0.5]], 0, size=(2, 3)).shape == (2, 3)
    out = noise.randomized_response(np.array([True, False]), 0.5, 0)
    assert out.dtype == np.bool_


def test_kernel_overflow_guard_raises_instead_of_wrapping() -> None:
    """A noise draw above the limit raises OverflowError (never wraps); with limit 0 the
    first non-zero draw triggers it."""
    from privad.noise import _engine

    out = np.zeros(100, dtype=np.int64)
    with pytest.raises(OverflowError):
        _engine.run("dlap_kernel", noise.Randomness(0), out, 5.0, 1000, 1, 0)
