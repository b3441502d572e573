"""f_outlier: exact DBSCAN engines agree with scikit-learn; calibration; pluggable detectors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import DBSCAN as SklearnDBSCAN

from privad.errors import DataError, ParameterError
from privad.noise import Randomness
from privad.relaxed.detectors import (
    DBSCAN_SHARES,
    AdaptiveDBSCANDetector,
    BallAnomalyDetector,
    DBSCANDetector,
    OutlierDetector,
    dbscan_candidates,
    dbscan_noise,
    dbscan_parameters,
    has_dbscan_package,
)

ENGINE = "scipy"

needs_package = pytest.mark.skipif(not has_dbscan_package(), reason="dbscan package missing")


def _cases() -> list[tuple[np.ndarray, float, int]]:
    gen = Randomness(20240611)
    cases = []
    for k in range(24):
        n = 20 + (k * 97) % 580
        X = np.concatenate([gen.normal(0.0, 1.0, (n, 2)), gen.uniform(-6, 6, (n // 8 + 1, 2))])
        if k % 2:  # many exact ties at distance eps: the closed ball must count them
            X = np.round(X * 4.0) / 4.0
        eps = (0.25, 0.5, 1.0)[k % 3]
        min_samples = (1, 2, 3, 5, 10, 20)[(k // 3) % 6]
        cases.append((X, eps, min_samples))
    return cases


CASES = _cases()


def _sklearn_noise(X: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    labels = SklearnDBSCAN(eps=eps, min_samples=min_samples).fit(X).labels_
    return np.flatnonzero(labels == -1)


@needs_package
@pytest.mark.parametrize("case", range(len(CASES)))
def test_dbscan_package_equals_sklearn_noise_set(case: int) -> None:
    X, eps, m = CASES[case]
    assert np.array_equal(dbscan_noise(X, eps, m, backend="dbscan"), _sklearn_noise(X, eps, m))


@pytest.mark.parametrize("case", range(0, len(CASES), 3))
def test_geometry_engine_equals_sklearn_noise_set(case: int) -> None:
    X, eps, m = CASES[case]
    # the SciPy ball-count engine avoids a cold Numba compile in this suite; the engines
    # agree bit for bit (privad.geometry's own tests)
    got = dbscan_noise(X, eps, m, backend="geometry", geometry_engine=ENGINE)
    assert np.array_equal(got, _sklearn_noise(X, eps, m))


def test_geometry_engine_in_three_dimensions() -> None:
    gen = Randomness(7)
    X = np.concatenate([gen.normal(size=(400, 3)), gen.uniform(-5, 5, (40, 3))])
    for eps, m in [(0.5, 3), (0.8, 8)]:
        got = dbscan_noise(X, eps, m, geometry_engine=ENGINE)
        assert np.array_equal(got, _sklearn_noise(X, eps, m))


def test_hand_example() -> None:
    # five points on a line 1 apart plus one far point; eps 1, minPts 3 (self counted):
    # the end points have 2 neighbours in their ball (border), the far point is noise.
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [4.0, 0.0], [9.0, 0.0]])
    for backend in ("auto", "geometry", "sklearn"):
        assert dbscan_noise(X, 1.0, 3, backend=backend, geometry_engine=ENGINE).tolist() == [5]
    got = dbscan_noise(X, 0.999, 3, backend="geometry", geometry_engine=ENGINE)
    assert got.tolist() == [0, 1, 2, 3, 4, 5]


def test_detector_is_an_outlier_detector() -> None:
    det = DBSCANDetector(1.0, 3)
    assert isinstance(det, OutlierDetector)
    X = np.array([[0.0, 0.0], [0.5, 0.0], [1.0, 0.0], [8.0, 8.0]])
    assert det(X).tolist() == [3]
    assert det(X).dtype == np.int64


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"eps": 0.0, "min_samples": 3}, ParameterError),
        ({"eps": -1.0, "min_samples": 3}, ParameterError),
        ({"eps": float("nan"), "min_samples": 3}, ParameterError),
        ({"eps": 1.0, "min_samples": 0}, ParameterError),
        ({"eps": 1.0, "min_samples": 2.5}, ParameterError),
        ({"eps": 1.0, "min_samples": 3, "backend": "optics"}, ParameterError),
        ({"eps": 1.0, "min_samples": 3, "geometry_engine": "gpu"}, ParameterError),
    ],
)
def test_detector_validation(kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        DBSCANDetector(**kwargs)


def test_dbscan_noise_refuses_bad_data() -> None:
    with pytest.raises(DataError):
        dbscan_noise(np.array([[0.0, np.nan]]), 1.0, 2)
    with pytest.raises(DataError):
        dbscan_noise(np.zeros(5), 1.0, 2)
    with pytest.raises(ParameterError, match="2 columns"):
        dbscan_noise(np.zeros((5, 3)), 1.0, 2, backend="dbscan")


def test_ball_anomaly_detector_plugs_in() -> None:
    # (beta, r)-anomalies: B(i, r) <= beta with i itself counted
    X = np.array([[0.0, 0.0], [0.5, 0.0], [1.0, 0.0], [5.0, 5.0], [5.2, 5.0]])
    assert BallAnomalyDetector(beta=2, r=0.6, engine=ENGINE)(X).tolist() == [0, 2, 3, 4]
    assert BallAnomalyDetector(beta=1, r=0.6, engine=ENGINE)(X).tolist() == []
    assert isinstance(BallAnomalyDetector(1, 1.0), OutlierDetector)
    with pytest.raises(ParameterError):
        BallAnomalyDetector(beta=-1, r=1.0)
    with pytest.raises(ParameterError):
        BallAnomalyDetector(beta=1, r=1.0, engine="gpu")


def test_calibration_keeps_the_layer_as_noise() -> None:
    # a dense core of 900 points and a sparse ring of 100: the calibrated eps is the largest
    # grid value that still leaves >= 90 % of p_o = 10 % as noise
    gen = Randomness(3)
    core = gen.normal(0.0, 0.2, (900, 2))
    angle = gen.uniform(0, 2 * np.pi, 100)
    ring = 6.0 * np.column_stack([np.cos(angle), np.sin(angle)])
    X = np.concatenate([core, ring])
    grid = np.geomspace(0.01, 10, 31)
    eps, m = dbscan_parameters(X, 10, eps_grid=grid)
    assert m == 5  # ceil(0.005 * 1000)
    assert dbscan_noise(X, eps, m).size >= 90
    nxt = grid[np.searchsorted(grid, eps) + 1]
    assert dbscan_noise(X, nxt, m).size < 90
    eps2, m2 = dbscan_parameters(X, 10, min_samples=12, tolerance=0.0)
    assert m2 == 12 and eps2 > 0
    with pytest.raises(ParameterError):
        dbscan_parameters(X, 0)
    with pytest.raises(ParameterError):
        dbscan_parameters(X, 10, eps_grid=[1.0, 0.5])
    with pytest.raises(ParameterError):
        dbscan_parameters(X, 10, tolerance=1.0)


def _ring(seed: int = 3) -> np.ndarray:
    gen = Randomness(seed)
    core = gen.normal(0.0, 0.2, (900, 2))
    angle = gen.uniform(0, 2 * np.pi, 100)
    ring = 6.0 * np.column_stack([np.cos(angle), np.sin(angle)])
    return np.concatenate([core, ring])


def test_candidates_are_history_calibrations_per_share() -> None:
    X = _ring()
    cands = dbscan_candidates(X, 10)
    assert 1 <= len(cands) <= len(DBSCAN_SHARES)
    assert (cands[0].eps, cands[0].min_samples) == dbscan_parameters(X, 10)
    for c in cands:  # every member keeps the ring as noise on the history
        assert c(X).size >= 90
    assert [c.min_samples for c in cands] == sorted(c.min_samples for c in cands)
    with pytest.raises(ParameterError):
        dbscan_candidates(X, 10, min_samples=5)
    with pytest.raises(ParameterError):
        dbscan_candidates(X, 10, shares=[])


def test_adaptive_detector_picks_the_noise_share_closest_to_p_o() -> None:
    X = _ring()
    few = DBSCANDetector(3.0, 5)  # everything within reach: no noise
    right = DBSCANDetector(0.3, 5)  # the ring is noise
    everything = DBSCANDetector(1e-4, 5)  # all noise
    det = AdaptiveDBSCANDetector([few, everything, right], 10)
    noise = det(X)
    assert det.selected == right
    assert np.array_equal(noise, right(X))
    assert det.noise_shares is not None and det.noise_shares[1] == 1.0
    assert det.noise_sets is not None and np.array_equal(det.noise_sets[2], noise)
    # ties go to the earlier candidate
    tie = AdaptiveDBSCANDetector([right, DBSCANDetector(0.3, 5, backend="geometry")], 10)
    tie(X)
    assert tie.selected is tie.candidates[0]
    assert isinstance(det, OutlierDetector) and "p_o=10" in repr(det)
    with pytest.raises(ParameterError):
        AdaptiveDBSCANDetector([], 10)
    with pytest.raises(ParameterError):
        AdaptiveDBSCANDetector([lambda X: X], 10)
    with pytest.raises(ParameterError):
        AdaptiveDBSCANDetector([right], 0)
