"""End to end on the paper's synthetic sensor data (section 7), small n."""

from __future__ import annotations

import numpy as np
import pytest

from privad.datasets import make_sensor_ring
from privad.errors import DataError, ParameterError
from privad.relaxed import DBSCANDetector, run_pipeline


@pytest.fixture(scope="module")
def ring() -> np.ndarray:
    return make_sensor_ring(n=5000, separation=120.0, rng=11).X


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_correction_does_not_lose_accuracy(ring: np.ndarray, epsilon: float) -> None:
    res = run_pipeline(ring, epsilon, rng=12)
    assert res.n == 5000
    assert res.accuracy >= res.baseline_accuracy
    assert 0.0 <= res.subset_size <= 1.0 and 0.0 <= res.baseline_subset_size <= 1.0
    # the output is TP plus the three layers; TP and FP partition O'
    assert np.array_equal(np.union1d(res.tp, res.fp), res.presumed_outliers)
    assert np.intersect1d(res.tp, res.fp).size == 0
    union = np.union1d(res.tp, np.union1d(res.fn_l1, np.union1d(res.fn_l2, res.fn_l3)))
    assert np.array_equal(union, res.outliers)
    # with the calibrated DBSCAN the unperturbed outlier layer is what DBSCAN finds on T
    assert res.true_outliers.size >= 0.9 * 500
    summary = res.summary()
    assert summary["n_output"] == res.outliers.size
    assert {"time_correction_s", "time_detection_s", "time_total_s"} <= set(summary)
    assert len(res.transcript) == 6


def test_same_seed_same_result(ring: np.ndarray) -> None:
    a = run_pipeline(ring, 1.0, rng=3)
    b = run_pipeline(ring, 1.0, rng=3)
    assert np.array_equal(a.outliers, b.outliers)
    assert a.accuracy == b.accuracy


def test_pluggable_detector_and_explicit_parameters(ring: np.ndarray) -> None:
    det = DBSCANDetector(0.05, 10)
    res = run_pipeline(ring, 1.0, detector=det, outlier_layer_width=0.5, min_gap=0.1,
                       global_sensitivity=[1000.0, 1000.0], rng=4)
    assert res.detector is det and res.w_o == 0.5
    assert res.guarantee is not None and res.guarantee.epsilon == pytest.approx(2.0)
    assert res.accuracy >= res.baseline_accuracy


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"epsilon": 0.0}, ParameterError),
        ({"epsilon": -1.0}, ParameterError),
        ({"epsilon": float("nan")}, ParameterError),
        ({"epsilon": 1.0, "p_o": 0.0}, ParameterError),
        ({"epsilon": 1.0, "p_o": 100.0}, ParameterError),
        ({"epsilon": 1.0, "p_o": -5.0}, ParameterError),
        ({"epsilon": 1.0, "scaling": "zscore"}, ParameterError),
        ({"epsilon": 1.0, "d_diff_centres": "median"}, ParameterError),
        ({"epsilon": 1.0, "outlier_layer_width": -1.0}, ParameterError),
        ({"epsilon": 1.0, "detector": "dbscan"}, ParameterError),
    ],
)
def test_pipeline_validation(kwargs: dict, error: type) -> None:
    X = np.arange(40.0).reshape(20, 2) * np.array([1.0, -0.5])
    with pytest.raises(error):
        run_pipeline(X, **kwargs)


@pytest.mark.parametrize(
    "data",
    [np.array([[0.0, np.nan], [1.0, 2.0]]), np.arange(10.0), np.zeros((0, 2)), [["a", "b"]]],
)
def test_pipeline_refuses_bad_data(data: object) -> None:
    with pytest.raises(DataError):
        run_pipeline(data, 1.0)


def test_history_must_match_columns() -> None:
    X = np.arange(40.0).reshape(20, 2) * np.array([1.0, -0.5])
    with pytest.raises(DataError):
        run_pipeline(X, 1.0, history=np.zeros((10, 3)) + np.arange(10)[:, None])
