"""The three parties and the in-process protocol: information flow (section 6.2) and order."""

from __future__ import annotations

import numpy as np
import pytest

from privad.errors import DataError, ParameterError
from privad.noise import Randomness
from privad.relaxed import (
    Analyst,
    CorrectionServer,
    DBSCANDetector,
    ProtocolError,
    Sensor,
    SplitRule,
    run_protocol,
)
from privad.relaxed import messages as msg
from privad.relaxed.correction import (
    analyst_layers,
    corrected_outliers,
    false_negative_layers,
    index_mask,
    split_presumed_outliers,
)
from privad.relaxed.distances import distance_differences


def _data(n: int = 600, seed: int = 5) -> np.ndarray:
    rng = Randomness(seed)
    core = rng.normal(0.0, 1.0, (n - n // 10, 2))
    angle = rng.uniform(0.0, 2 * np.pi, n // 10)
    ring = 12.0 * np.column_stack([np.cos(angle), np.sin(angle)])
    return np.concatenate([core, ring])


def _run(seed: int = 1, epsilon: float = 1.0):  # type: ignore[no-untyped-def]
    X = _data()
    sensor = Sensor(epsilon, [3.0, 3.0], rng=seed)
    analyst = Analyst(DBSCANDetector(0.3, 5))
    server = CorrectionServer(0.2)
    return X, sensor, analyst, server, run_protocol(X, sensor, analyst, server)


def _floats(message: object) -> np.ndarray:
    """Every float the message carries, flattened."""
    out = []
    for value in vars(message).values():
        arr = np.asarray(value) if value is not None else np.zeros(0)
        if arr.dtype.kind == "f":
            out.append(arr.reshape(-1))
    return np.concatenate(out) if out else np.zeros(0)


def test_transcript_order_and_parties() -> None:
    *_, run = _run()
    kinds = [type(e.message) for e in run.transcript]
    assert kinds == [
        msg.SensorToCorrection,
        msg.SensorToAnalyst,
        msg.AnalystToCorrection,
        msg.CorrectionToAnalyst,
        msg.AnalystToCorrection2,
        msg.CorrectionToAnalyst2,
    ]
    assert [e.seq for e in run.transcript] == list(range(6))
    assert {type(m) for m in run.transcript.received_by("correction")} == {
        msg.SensorToCorrection,
        msg.AnalystToCorrection,
        msg.AnalystToCorrection2,
    }
    assert {type(m) for m in run.transcript.received_by("analyst")} == {
        msg.SensorToAnalyst,
        msg.CorrectionToAnalyst,
        msg.CorrectionToAnalyst2,
    }
    assert run.transcript.received_by("sensor") == []
    assert len(run.transcript.sent_by("sensor")) == 2


def test_information_flow() -> None:
    X, sensor, analyst, server, run = _run()
    T = sensor.scale(X)
    to_analyst = run.transcript.received_by("analyst")[0]
    T_prime = to_analyst.perturbed
    noise = T_prime - T
    d_diff = distance_differences(T, T_prime)
    secret_data = np.concatenate([T.ravel(), T_prime.ravel(), X.ravel()])

    # CS never receives T or T' (nor anything 2-D): only d_diff and index sets
    for message in run.transcript.received_by("correction"):
        for value in vars(message).values():
            assert np.ndim(value) <= 1
        assert not np.isin(_floats(message), secret_data).any()
    for value in vars(server).values():
        assert np.ndim(value) <= 1

    # the analyst never receives noise or d_diff; the one d_diff value it learns is d_TP
    (thresholds,) = [
        m for m in run.transcript.received_by("analyst") if isinstance(m, msg.CorrectionToAnalyst)
    ]
    for message in run.transcript.received_by("analyst"):
        floats = _floats(message)
        assert not np.isin(floats, noise.ravel()).any()
        leaked = floats[np.isin(floats, d_diff)]
        assert leaked.size == 0 or (
            isinstance(message, msg.CorrectionToAnalyst) and leaked.tolist() == [thresholds.d_tp]
        )
    # the final message carries indices only, not which layer each came from
    assert set(vars(run.transcript.received_by("analyst")[-1])) == {"outliers"}


def test_protocol_equals_the_functions() -> None:
    X, sensor, analyst, server, run = _run(seed=3)
    T_prime = run.transcript.received_by("analyst")[0].perturbed
    d_diff = run.transcript.received_by("correction")[0].d_diff
    o_prime = DBSCANDetector(0.3, 5)(T_prime)
    assert np.array_equal(run.presumed_outliers, o_prime)
    split = split_presumed_outliers(d_diff, o_prime)
    # the analyst's default reduction: "radius" with ρ estimated from its presumed outliers
    i_l2, i_l3 = analyst_layers(
        T_prime, split.d_tp, 0.2, reduction="radius", presumed_outliers=o_prime
    )
    layers = false_negative_layers(
        d_diff, index_mask(o_prime, len(X), "O'"), i_l2, i_l3, split.d_tp, split.d_fp
    )
    assert np.array_equal(run.outliers, corrected_outliers(split.tp, layers, len(X)))
    assert np.array_equal(run.outliers, analyst.outliers)
    assert analyst.thresholds is not None and analyst.thresholds[1] >= analyst.thresholds[0]
    assert set(run.timings) >= {
        "perturbation",
        "detection",
        "correction",
        "split",
        "layers",
        "false_negatives",
    }


def test_notes_reduction_through_the_parties_equals_the_functions() -> None:
    X = _data()
    sensor = Sensor(1.0, [3.0, 3.0], rng=3)
    analyst = Analyst(DBSCANDetector(0.3, 5), reduction="notes")
    run = run_protocol(X, sensor, analyst, CorrectionServer(0.2))
    T_prime = run.transcript.received_by("analyst")[0].perturbed
    d_diff = run.transcript.received_by("correction")[0].d_diff
    split = split_presumed_outliers(d_diff, run.presumed_outliers)
    i_l2, i_l3 = analyst_layers(T_prime, split.d_tp, 0.2)  # "notes" is the function default
    sent = run.transcript.received_by("correction")[-1]
    assert np.array_equal(sent.i_l2, i_l2) and np.array_equal(sent.i_l3, i_l3)
    assert analyst.thresholds == (split.d_tp, split.d_tp + 0.2)


def test_radius_reduction_with_a_public_radius() -> None:
    X = _data()
    sensor = Sensor(1.0, [3.0, 3.0], rng=3)
    analyst = Analyst(DBSCANDetector(0.3, 5), outlier_radius=3.5)
    run = run_protocol(X, sensor, analyst, CorrectionServer(0.2, SplitRule(d_tp_floor=0.0)))
    d_tp = run.transcript.received_by("analyst")[1].d_tp
    assert d_tp >= 0.0
    assert analyst.thresholds == (3.5, 3.5 + d_tp)
    dist = analyst.distances()
    sent = run.transcript.received_by("correction")[-1]
    assert np.array_equal(sent.i_l2, np.flatnonzero(dist >= 3.5))
    assert np.array_equal(sent.i_l3, np.flatnonzero(dist >= 3.5 + d_tp))
    # the messages have exactly the fields of section 6.2, whatever the options
    assert set(vars(run.transcript.received_by("analyst")[1])) == {"d_tp", "w_o"}


def test_seeded_runs_are_reproducible() -> None:
    a = _run(seed=9)[-1]
    b = _run(seed=9)[-1]
    assert np.array_equal(
        a.transcript.received_by("analyst")[0].perturbed,
        b.transcript.received_by("analyst")[0].perturbed,
    )
    assert np.array_equal(a.outliers, b.outliers)


def test_messages_out_of_order_are_refused() -> None:
    X = _data()
    to_analyst, to_correction = Sensor(1.0, [3.0, 3.0], rng=0).perturb(X)
    server = CorrectionServer(0.2)
    with pytest.raises(ProtocolError):
        server.receive_presumed_outliers(msg.AnalystToCorrection(presumed_outliers=[0]))
    server.receive_differences(to_correction)
    with pytest.raises(ProtocolError):
        server.receive_differences(to_correction)
    with pytest.raises(ProtocolError):
        server.receive_layers(msg.AnalystToCorrection2(i_l2=[0], i_l3=[0]))
    with pytest.raises(ProtocolError):
        server.receive_presumed_outliers(to_analyst)  # type: ignore[arg-type]
    with pytest.raises(DataError):
        server.receive_presumed_outliers(msg.AnalystToCorrection(presumed_outliers=[len(X)]))
    analyst = Analyst(DBSCANDetector(0.3, 5))
    with pytest.raises(ProtocolError):
        analyst.receive_thresholds(msg.CorrectionToAnalyst(d_tp=1.0, w_o=0.0))
    analyst.receive_data(to_analyst)
    with pytest.raises(ProtocolError):
        analyst.receive_data(to_analyst)
    # a noisy d_TP (ε_TP) is calibrated for the minimum only, not for a percentile
    noisy = msg.SensorToCorrection(
        indices=to_correction.indices, d_diff=to_correction.d_diff, tp_noise=0.1
    )
    robust = CorrectionServer(0.2, SplitRule(d_tp_percentile=5.0))
    robust.receive_differences(noisy)
    with pytest.raises(ProtocolError, match="d_tp_percentile=0"):
        robust.receive_presumed_outliers(msg.AnalystToCorrection(presumed_outliers=[0, 1]))


def test_sensor_validation() -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        Sensor(0.0, [1.0, 1.0])
    with pytest.raises(ParameterError, match="epsilon"):
        Sensor(-0.5, [1.0, 1.0])
    with pytest.raises(ParameterError):
        Sensor(1.0, [1.0, -1.0])
    sensor = Sensor(1.0, [1.0, 1.0])
    with pytest.raises(DataError, match="column"):
        sensor.perturb(np.zeros((5, 3)))
    with pytest.raises(DataError, match="NaN"):
        sensor.perturb(np.array([[0.0, np.nan]]))
    with pytest.raises(DataError):
        sensor.perturb(np.zeros(4))
    with pytest.raises(ParameterError, match="global_sensitivity"):
        sensor.guarantee()
    g = Sensor(0.5, [2.0, 2.0], global_sensitivity=[20.0, 20.0]).guarantee()
    assert g.notion == "relaxed-dp" and g.epsilon == pytest.approx(1.0)
    assert g.epsilon_outlier == pytest.approx(10.0)


def test_bad_detector_output_is_refused() -> None:
    to_analyst, _ = Sensor(1.0, [3.0, 3.0], rng=0).perturb(_data())
    with pytest.raises(DataError):
        Analyst(lambda X: np.array([X.shape[0]])).receive_data(to_analyst)
    with pytest.raises(DataError):
        Analyst(lambda X: np.array([0.5])).receive_data(to_analyst)
    with pytest.raises(ParameterError):
        Analyst("dbscan")  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        Analyst(DBSCANDetector(0.3, 5), reduction="box")
    with pytest.raises(ParameterError):
        Analyst(DBSCANDetector(0.3, 5), outlier_radius=-1.0)
    with pytest.raises(ParameterError):
        Analyst(DBSCANDetector(0.3, 5), radius_percentile=101.0)
    with pytest.raises(ParameterError, match="outlier_layer_width"):
        CorrectionServer(-0.2)
    with pytest.raises(ParameterError, match="rule must be a SplitRule"):
        CorrectionServer(0.2, {"d_fp_rule": "max"})  # type: ignore[arg-type]
    # duplicates from a detector are harmless
    msg = Analyst(lambda X: np.array([3, 1, 3])).receive_data(to_analyst)
    assert msg.presumed_outliers.tolist() == [1, 3]
