"""End to end on the paper's synthetic sensor data (section 7), small n."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from privad.datasets import make_sensor_ring
from privad.errors import DataError, ParameterError
from privad.relaxed import (
    AdaptiveDBSCANDetector,
    DBSCANDetector,
    RelaxedExchange,
    RelaxedReconstruction,
    SplitRule,
    run_pipeline,
)


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
    res = run_pipeline(
        ring,
        1.0,
        reconstruction=RelaxedReconstruction(
            detector=det, outlier_layer_width=0.5, split=SplitRule(min_gap=0.1)
        ),
        global_sensitivity=[1000.0, 1000.0],
        rng=4,
    )
    assert res.detector is det and res.w_o == 0.5
    assert res.guarantee is not None and res.guarantee.epsilon == pytest.approx(2.0)
    assert res.accuracy >= res.baseline_accuracy


def test_default_reconstruction_finds_the_outliers_in_a_small_subset(ring: np.ndarray) -> None:
    # the chosen defaults ("radius" reduction, ρ from history, adaptive DBSCAN) against the
    # previous NOTES reading, on the same data and noise (docs/relaxed_reproduction.md)
    res = run_pipeline(ring, 0.5, rng=12)
    assert res.reduction == "radius" and res.accuracy >= 0.99 and res.subset_size < 0.2
    assert res.thresholds is not None and res.thresholds[0] == res.outlier_radius
    # ρ is the inner edge of the historical outlier layer: the unperturbed outliers' distances
    assert res.outlier_radius is not None and 9.0 < res.outlier_radius < 11.0
    assert res.dbscan_candidates and len(res.dbscan_noise_shares) == len(res.dbscan_candidates)
    assert res.detector in res.dbscan_candidates
    notes_reading = RelaxedReconstruction(reduction="notes", dbscan_calibration="history")
    notes = run_pipeline(ring, 0.5, rng=12, reconstruction=notes_reading)
    assert notes.reduction == "notes" and notes.outlier_radius is None
    assert notes.subset_size > 0.9  # the failure mode: I_L3 is every record
    assert isinstance(notes.detector, DBSCANDetector) and notes.dbscan_candidates == ()
    summary = res.summary()
    assert {
        "reduction",
        "outlier_radius",
        "threshold_l2",
        "threshold_l3",
        "dbscan_candidates",
        "dbscan_noise_shares",
    } <= set(summary)


def test_radius_sources_and_step3_options(ring: np.ndarray) -> None:
    history = RelaxedReconstruction(dbscan_calibration="history")
    base = run_pipeline(ring, 1.0, rng=5, reconstruction=history)
    presumed = run_pipeline(
        ring, 1.0, rng=5, reconstruction=replace(history, outlier_radius="presumed")
    )
    assert presumed.thresholds is not None
    assert presumed.outlier_radius == presumed.thresholds[0] != base.outlier_radius
    given = run_pipeline(ring, 1.0, rng=5, reconstruction=replace(history, outlier_radius=7.5))
    assert given.outlier_radius == 7.5 and given.thresholds is not None
    assert given.thresholds[0] == 7.5
    floored = run_pipeline(
        ring,
        1.0,
        rng=5,
        reconstruction=replace(
            history, split=SplitRule(d_tp_floor=0.0, d_tp_percentile=5.0, d_fp_rule="none")
        ),
    )
    assert floored.d_tp is not None and floored.d_tp >= 0.0 and floored.d_fp == float("inf")
    # the same noise: the perturbed data and O' do not depend on the correction options
    assert np.array_equal(base.presumed_outliers, floored.presumed_outliers)


def test_precomputed_dbscan_family_is_used(ring: np.ndarray) -> None:
    fam = (DBSCANDetector(0.05, 10), DBSCANDetector(0.8, 25))
    res = run_pipeline(
        ring, 1.0, rng=6, reconstruction=RelaxedReconstruction(dbscan_candidates=fam)
    )
    assert res.dbscan_candidates == fam and res.detector in fam
    det = AdaptiveDBSCANDetector(fam, 10)
    res2 = run_pipeline(ring, 1.0, rng=6, reconstruction=RelaxedReconstruction(detector=det))
    assert np.array_equal(res.outliers, res2.outliers)


@pytest.mark.parametrize(
    "choices",
    [
        {"reduction": "box"},
        {"outlier_radius": "future"},
        {"outlier_radius": -1.0},
        {"dbscan_calibration": "grid"},
        {"split": {"d_fp_rule": "min"}},
        {"outlier_radius_percentile": 120.0},
        {"radius_percentile": -1.0},
        {"analyst_centre": "median"},
        {"dbscan_options": {"min_samples_share": 0.01}},
        {"d_diff_centres": "median"},
        {"outlier_layer_width": -1.0},
        {"detector": "dbscan"},
    ],
)
def test_reconstruction_refuses_bad_choices_when_built(choices: dict) -> None:
    with pytest.raises(ParameterError) as err:
        RelaxedReconstruction(**choices)
    (name,) = choices
    assert name in str(err.value) or name == "detector"  # the message names the choice


@pytest.mark.parametrize(
    "exchange",
    [
        {"kind": "secret"},
        {"kind": "unprotected", "cs_epsilon": 1.0},
        {"kind": "protected", "cs_epsilon": 0.0},
        {"kind": "protected", "tp_epsilon": -1.0},
    ],
)
def test_exchange_refuses_bad_choices_when_built(exchange: dict) -> None:
    with pytest.raises(ParameterError):
        RelaxedExchange(**exchange)


def test_reconstruction_defaults_and_protected_exchange(ring: np.ndarray) -> None:
    rec = RelaxedReconstruction(dbscan_shares=[0.01, 0.02], w_o_quantiles=[1, 99])
    assert rec.dbscan_shares == (0.01, 0.02) and rec.w_o_quantiles == (1.0, 99.0)
    assert RelaxedReconstruction() == RelaxedReconstruction(reduction="radius")
    exchange = RelaxedExchange("protected", cs_epsilon=1.0)
    res = run_pipeline(ring, 1.0, rng=7, exchange=exchange)
    paper = run_pipeline(ring, 1.0, rng=7)
    (noisy,) = res.transcript.received_by("correction")[:1]
    (exact,) = paper.transcript.received_by("correction")[:1]
    assert not np.allclose(noisy.d_diff, exact.d_diff)  # d_diff leaves the sensor with noise
    # the same perturbation: 𝒯' and so O' do not depend on the exchange
    assert np.array_equal(res.presumed_outliers, paper.presumed_outliers)


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
