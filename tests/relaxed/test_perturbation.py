"""Step 1b: the Laplace scale per column is RS_j/ε (1/ε in the scaled space), two-sided.

Kolmogorov–Smirnov at α = 1e-6 with 200,000 draws per column: the KS distance between
Lap(b) and Lap(1.1 b) (or Lap(0.9 b)) is about 0.017, far above the critical value
≈ 0.006, so a 10 % wrong scale in either direction is detected; the right scale fails
with probability 1e-6 (fixed seeds make the test deterministic).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privad.errors import DataError, ParameterError
from privad.relaxed import Sensor
from privad.relaxed.perturbation import laplace_columns, noise_scales

ALPHA = 1e-6
N = 200_000


def _ks_p(sample: np.ndarray, scale: float) -> float:
    return float(stats.kstest(sample, stats.laplace(loc=0.0, scale=scale).cdf).pvalue)


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_noise_scale_per_column_in_the_scaled_space(epsilon: float) -> None:
    rs = np.array([2.0, 50.0])  # very different columns: both get Lap(1/eps) after scaling
    sensor = Sensor(epsilon, rs, rng=20240611)
    assert np.allclose(sensor.noise_scale, 1.0 / epsilon, rtol=1e-6)
    # data spread over the measurement range; the noise is T' - T in the scaled space
    X = np.column_stack([np.linspace(-3, 3, N), np.linspace(0, 100, N)])
    to_analyst, _ = sensor.perturb(X)
    noise = to_analyst.perturbed - sensor.scale(X)
    for j in range(2):
        assert _ks_p(noise[:, j], 1.0 / epsilon) > ALPHA
        assert _ks_p(noise[:, j], 1.1 / epsilon) < ALPHA
        assert _ks_p(noise[:, j], 0.9 / epsilon) < ALPHA
    # in measurement units the same noise is Lap(RS_j / eps)
    noise_units = noise * sensor.divisors
    for j in range(2):
        assert _ks_p(noise_units[:, j], rs[j] / epsilon) > ALPHA
        assert _ks_p(noise_units[:, j], 1.1 * rs[j] / epsilon) < ALPHA
        assert _ks_p(noise_units[:, j], 0.9 * rs[j] / epsilon) < ALPHA


def test_unscaled_mode_uses_rs_over_epsilon() -> None:
    rs = np.array([4.0, 0.5])
    sensor = Sensor(0.5, rs, scaling="none", rng=77)
    assert np.allclose(sensor.noise_scale, rs / 0.5, rtol=1e-6)
    noise = laplace_columns(np.zeros((N, 2)), sensor.noise_scale, 78)
    for j in range(2):
        assert _ks_p(noise[:, j], rs[j] / 0.5) > ALPHA
        assert _ks_p(noise[:, j], 1.1 * rs[j] / 0.5) < ALPHA
        assert _ks_p(noise[:, j], 0.9 * rs[j] / 0.5) < ALPHA


def test_columns_and_entries_are_independent_draws() -> None:
    noise = laplace_columns(np.zeros((50_000, 2)), [1.0, 1.0], 5)
    assert abs(np.corrcoef(noise[:, 0], noise[:, 1])[0, 1]) < 0.03
    assert abs(np.corrcoef(noise[:-1, 0], noise[1:, 0])[0, 1]) < 0.03


def test_validation() -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        noise_scales([1.0], [1.0], 0.0)
    with pytest.raises(ParameterError):
        noise_scales([1.0, 2.0], [1.0], 1.0)
    with pytest.raises(ParameterError):
        laplace_columns(np.zeros((3, 2)), [1.0, 0.0])
    with pytest.raises(DataError):
        laplace_columns(np.array([[np.inf, 0.0]]), [1.0, 1.0])


def test_a_meaningless_epsilon_is_warned_about_once_per_run() -> None:
    """Issue 30: the sensor is the mechanism, built and validated once per run, so ε = 25
    (above privad's 20 per answer) gives one PrivacyWarning, whether the sensor is built
    directly and used for several windows or by the estimator's fit."""
    import warnings

    from privad.errors import PrivacyWarning
    from privad.relaxed import RelaxedDPDetector, Sensor

    X = np.column_stack([np.linspace(0.0, 10.0, 40), np.linspace(5.0, 6.0, 40)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sensor = Sensor(25, [2.0, 0.5], global_sensitivity=10, rng=1)
        sensor.views()
        for _ in range(3):
            sensor.perturb(X)
        RelaxedDPDetector(
            epsilon=25, relaxed_sensitivity=[2.0, 0.5], global_sensitivity=10, history=X, rng=1
        ).fit(X)
    privacy = [w for w in caught if issubclass(w.category, PrivacyWarning)]
    assert [str(w.message).split(" per answer")[0] for w in privacy] == ["epsilon = 25"] * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        Sensor(20, [2.0, 0.5])  # 20 itself is not warned about
