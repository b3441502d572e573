"""RMP's perturbation (eq. 1-3): hand-computed values, shapes, and Δ's distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privad.errors import DataError, ParameterError
from privad.rmp import (
    beta_star,
    double_logistic,
    guarantee,
    participant_matrix,
    perturb,
    public_matrix,
)
from privad.rmp.perturbation import check_alpha, check_dimensions, inverse_double_logistic

P_MIN = 1e-6  # two-sided statistical checks at α ≈ 1e-6, fixed seeds


def test_beta_star_to_four_decimals():
    assert round(beta_star(), 4) == 2.8124


def test_beta_star_minimises_the_integral():
    from scipy import integrate

    def gap(b):
        return integrate.quad(lambda x: (1 - math.exp(-b * x * x) - x) ** 2, 0, 1)[0]

    b = beta_star()
    assert gap(b) < gap(b - 0.01) and gap(b) < gap(b + 0.01)


def test_double_logistic_hand_values():
    assert double_logistic(np.array([0.0]))[0] == 0.0
    assert double_logistic(np.array([1.0]), beta=2.0)[0] == pytest.approx(1 - math.exp(-2))
    assert double_logistic(np.array([-0.5]), beta=2.0)[0] == pytest.approx(-(1 - math.exp(-0.5)))
    b = beta_star()
    got = double_logistic(np.array([[0.3, -1.0]]))
    assert got == pytest.approx(np.array([[1 - math.exp(-b * 0.09), -(1 - math.exp(-b))]]))


def test_double_logistic_is_odd_and_inverted():
    x = np.linspace(-1, 1, 41)
    y = double_logistic(x)
    assert np.allclose(double_logistic(-x), -y)
    assert np.all(np.abs(y) < 1)
    assert np.allclose(inverse_double_logistic(y), x)


def test_double_logistic_rejects_nonfinite_and_bad_beta():
    with pytest.raises(DataError):
        double_logistic(np.array([np.nan]))
    with pytest.raises(ParameterError):
        double_logistic(np.array([0.5]), beta=0.0)


def test_perturb_is_eq3_on_a_tiny_example():
    T_i = np.array([[1.0, 2.0, 3.0], [0.5, 0.0, 1.0]])
    Y = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]])  # 3 attributes x 2 records
    assert np.array_equal(perturb(T_i, Y), np.array([[7.0, -1.0], [2.5, -1.0]]))


def test_perturb_checks_the_orientation():
    T = public_matrix(2, 3, rng=0)
    with pytest.raises(DataError, match="n = 3 rows"):
        perturb(T, np.ones((2, 3)))


def test_public_matrix_shape_range_and_w_below_n():
    T = public_matrix(3, 5, rng=1)
    assert T.shape == (3, 5)
    assert np.all((T >= 0) & (T < 1))
    for w, n in ((5, 5), (6, 5), (0, 5)):
        with pytest.raises(ParameterError):
            public_matrix(w, n, rng=1)
    assert check_dimensions(4, 5) == (4, 5)
    with pytest.raises(ParameterError, match="smaller than n"):
        check_dimensions(5, 5)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, float("nan"), "0.1", True])
def test_alpha_must_lie_in_the_open_unit_interval(alpha):
    with pytest.raises(ParameterError):
        check_alpha(alpha)


def test_delta_is_bounded_by_alpha():
    T = public_matrix(7, 8, rng=2)
    for alpha in (0.01, 0.2, 0.6):
        T_i = participant_matrix(T, alpha, rng=3)
        assert np.all(np.abs(T_i - T) < alpha)
        assert T_i.shape == T.shape


def test_delta_is_uniform_on_minus_alpha_alpha():
    alpha = 0.3
    T = public_matrix(40, 50, rng=4)
    deltas = np.concatenate(
        [(participant_matrix(T, alpha, rng=seed) - T).ravel() for seed in range(20)]
    )  # 40,000 draws
    assert stats.kstest(deltas, stats.uniform(loc=-alpha, scale=2 * alpha).cdf).pvalue > P_MIN
    # mean and variance z-tests (U(-a, a): mean 0, variance a²/3, var of x² = 4a⁴/45)
    n = deltas.size
    z_mean = deltas.mean() / math.sqrt(alpha**2 / 3 / n)
    z_var = (np.mean(deltas**2) - alpha**2 / 3) / math.sqrt(4 * alpha**4 / 45 / n)
    bound = stats.norm.isf(P_MIN / 2)
    assert abs(z_mean) < bound and abs(z_var) < bound
    # two-sided: a wrong α in either direction is rejected (KS distance 0.045 and 0.05
    # against a critical value of about 0.0135 at 1e-6 with 40,000 draws) ...
    for wrong in (0.9 * alpha, 1.1 * alpha):
        law = stats.uniform(loc=-wrong, scale=2 * wrong)
        assert stats.kstest(deltas, law.cdf).pvalue < P_MIN
    # ... and so is a wrong law with the right mean and variance a²/3, which the moment
    # tests above cannot tell apart (KS distance about 0.04)
    for law in (stats.laplace(scale=alpha / math.sqrt(6)), stats.norm(scale=alpha / math.sqrt(3))):
        assert stats.kstest(deltas, law.cdf).pvalue < P_MIN


def test_public_matrix_is_uniform():
    T = public_matrix(99, 100, rng=5).ravel()
    assert stats.kstest(T, "uniform").pvalue > P_MIN
    # a wrong range either way is rejected (KS distance 0.09 and 0.1 against about 0.027)
    for top in (0.9, 1.1):
        assert stats.kstest(T, stats.uniform(scale=top).cdf).pvalue < P_MIN


def test_participants_draw_different_matrices_and_seeds_repeat():
    T = public_matrix(3, 4, rng=6)
    assert not np.array_equal(participant_matrix(T, 0.1, rng=1), participant_matrix(T, 0.1, rng=2))
    assert np.array_equal(participant_matrix(T, 0.1, rng=1), participant_matrix(T, 0.1, rng=1))


def test_guarantee_is_rmp_without_epsilon():
    g = guarantee(0.1, 7, 8)
    assert g.notion == "rmp" and g.epsilon is None
    assert "alpha=0.1" in g.description
    with pytest.raises(ParameterError):
        guarantee(0.1, 8, 8)
