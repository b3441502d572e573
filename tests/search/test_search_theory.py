"""The closed forms of dp-noisy-binary-search.txt: eq. (23), (24), (26), Proposition 1, ε_par."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from privad.errors import ParameterError
from privad.search import binarized_error_probability, expected_queries_bound
from privad.search.theory import (
    ben_or_hassidim_level,
    binarized_error_probability_for,
    binary_entropy,
    capacity,
    laplace_difference_cdf,
    randomized_response_epsilon,
    randomized_response_p,
    threshold_ratio,
)


def test_eq24_sanity_values_from_notes():
    # NOTES.md: p = 0.347 at eps = 1 for ratio 0.647 (dataset 6) and 0.335 for 0.701 (dataset 8)
    assert round(binarized_error_probability(1.0, 0.647), 3) == 0.347
    assert round(binarized_error_probability(1.0, 0.701), 3) == 0.335


def test_threshold_ratio_reading():
    # the ratio is (t_h - t_l) / t_l: Figure 1's axis, and the reading that gives 0.347
    assert threshold_ratio(1.0, 1.647) == pytest.approx(0.647)
    t_low, t_high = 2.0, 2.0 * 1.647
    assert binarized_error_probability(1.0, threshold_ratio(t_low, t_high)) == pytest.approx(
        0.3465017, abs=1e-6
    )
    # the other readings do not reproduce the sanity value
    r = 0.647
    assert round(binarized_error_probability(1.0, r / (1 - r)), 3) != 0.347  # (t_h-t_l)/t_h


def test_eq24_by_hand():
    # x = R eps = 1: p = (1/2 + 1/4) e^-1
    assert binarized_error_probability(2.0, 0.5) == pytest.approx(0.75 * math.exp(-1.0), rel=1e-15)
    # in terms of the scale: lambda = t_l / eps
    assert binarized_error_probability_for(2.0, 3.0, 2.0) == pytest.approx(
        binarized_error_probability(1.0, 0.5), rel=1e-15
    )
    # a larger scale (less privacy loss) gives a larger error bound
    assert binarized_error_probability_for(2.0, 3.0, 2.1) > binarized_error_probability_for(
        2.0, 3.0, 2.0
    )


def test_eq23_matches_the_convolution_integral():
    lam = 0.7
    for w in (-2.0, -0.3, 0.0, 0.4, 1.5, 5.0):
        # P(Z' - Z <= w) = integral of the density (19), symmetric in w
        dens = lambda u: (lam + abs(u)) / (4 * lam**2) * math.exp(-abs(u) / lam)  # noqa: E731
        val, _ = integrate.quad(dens, -np.inf, w)
        assert laplace_difference_cdf(w, lam) == pytest.approx(val, abs=1e-9)
    # the error bound of eq. (24) is the upper tail at w = t_h - t_l
    assert 1 - laplace_difference_cdf(1.0, 1.0) == pytest.approx(0.75 * math.exp(-1), rel=1e-14)


def test_randomized_response_epsilon_roundtrip():
    for eps in (0.1, 1.0, 3.0):
        p = randomized_response_p(eps)
        assert p == pytest.approx(1 / (1 + math.e**eps))
        assert randomized_response_epsilon(p) == pytest.approx(eps, rel=1e-12)
    assert randomized_response_epsilon(0.25) == pytest.approx(math.log(3))
    with pytest.raises(ParameterError):
        randomized_response_epsilon(0.5)
    with pytest.raises(ParameterError):
        randomized_response_p(0.0)


def test_binary_entropy_and_capacity():
    assert binary_entropy(0.5) == pytest.approx(1.0)
    assert binary_entropy(0.0) == 0.0
    assert binary_entropy(0.11) == pytest.approx(0.4999, abs=1e-4)
    assert binary_entropy(0.5, base=math.e) == pytest.approx(math.log(2))
    assert capacity(0.11) == pytest.approx(0.5001, abs=1e-4)


def test_eq26_by_hand():
    # n_items = 1024, delta = 1/8, p = 0.11: (10 + 3 + log2(0.89/0.11)) / (1 - h(0.11))
    expected = (10 + 3 + math.log2(0.89 / 0.11)) / (1 - binary_entropy(0.11))
    assert expected_queries_bound(1024, 0.11, 0.125) == pytest.approx(expected, rel=1e-12)
    assert expected_queries_bound(1024, 0.11, 0.125, overshoot=1.0) == pytest.approx(
        14 / (1 - binary_entropy(0.11)), rel=1e-12
    )


def test_eq26_in_nats_would_fall_below_the_information_lower_bound():
    # Why the bound is read in bits: in nats the right-hand side of (26) is smaller than
    # ln(n) / (ln 2 - h_nats(p)), the fewest queries any search needs on average.
    n, p, delta, eps = 10**6, 0.335, 0.01, 1.0
    nats = (math.log(n) + math.log(1 / delta) + eps) / (1 - binary_entropy(p, base=math.e))
    lower = math.log(n) / (math.log(2) - binary_entropy(p, base=math.e))
    assert nats < lower < expected_queries_bound(n, p, delta)


def test_ben_or_hassidim_level():
    assert ben_or_hassidim_level(1000) == pytest.approx((24 * math.log(1000)) ** -0.5)
    assert round(ben_or_hassidim_level(1000), 4) == 0.0777


@pytest.mark.parametrize(
    "call",
    [
        lambda: binarized_error_probability(0.0, 0.7),
        lambda: binarized_error_probability(1.0, -0.1),
        lambda: threshold_ratio(2.0, 2.0),
        lambda: threshold_ratio(2.0, 1.0),
        lambda: expected_queries_bound(1, 0.1, 0.1),
        lambda: expected_queries_bound(10, 0.6, 0.1),
        lambda: expected_queries_bound(10, 0.1, 0.0),
        lambda: laplace_difference_cdf(1.0, 0.0),
    ],
)
def test_theory_validation(call):
    with pytest.raises(ParameterError):
        call()
