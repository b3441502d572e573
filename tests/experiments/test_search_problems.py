"""Problems from time series (section 6.1 preprocessing) and the trials of section 6.2."""

from __future__ import annotations

import numpy as np
import pytest

from privad.datasets import TimeSeries, load_nab, load_yahoo, make_search_mixture, nab_series
from privad.errors import DataError, ParameterError
from privad.experiments.search_problems import (
    OTHER_ANOMALIES,
    prepare_series,
    problem_from_dataset,
    problem_from_series,
    run_trials,
    single_anomaly_series,
)
from privad.search import SearchProblem


def _series(values, labels, name="toy"):
    n = len(values)
    return TimeSeries(
        timestamps=np.arange(n).astype("datetime64[s]"),
        values=np.asarray(values, dtype=float),
        labels=np.asarray(labels),
        windows=[],
        name=name,
        source="test",
        licence="test",
        metadata={},
    )


def test_problem_from_series_by_hand():
    ts = _series([1.0, 2.0, 12.0, 3.0, 4.0], [0, 1, 1, 0, 0])
    prob = problem_from_series(ts)
    # the other anomaly (2.0) is dropped; x* = 12, x_j = 4: t_h = 11.2, t_l = 4.8
    assert prob.anomaly_index == 1 and prob.source_index[1] == 2
    assert prob.t_high == pytest.approx(11.2) and prob.t_low == pytest.approx(4.8)
    assert prob.threshold_ratio == pytest.approx(6.4 / 4.8)


def test_series_that_cannot_be_used_are_skipped_with_the_reason():
    good = _series([1.0, 9.0, 2.0], [0, 1, 0], "good")
    below = _series([1.0, 2.0, 9.0], [0, 1, 0], "below")  # the anomaly is not the largest
    negative = _series([-1.0, 9.0, 2.0], [0, 1, 0], "negative")
    none = _series([1.0, 9.0, 2.0], [0, 0, 0], "none")
    problems, skipped = prepare_series([good, below, negative, none])
    assert [p.name for p in problems] == ["good"]
    reasons = {s.name: s.reason for s in skipped}
    assert set(reasons) == {"below", "negative", "none"}
    assert "t_h" in reasons["below"]
    assert "negative" in reasons["negative"]
    assert "no labelled anomaly" in reasons["none"]
    with pytest.raises(DataError):
        problem_from_series(below)


def test_embedded_nab_series():
    series = [load_nab(name) for name in nab_series()]
    problems, skipped = prepare_series(series)
    assert len(problems) + len(skipped) == len(series)
    assert problems and skipped
    for s in skipped:
        assert s.reason.startswith("skipped:")
    ec2 = next(p for p in problems if "ec2_request_latency" in p.name)
    summary = run_trials(ec2, kind="laplace", epsilon=2.0, n_runs=3, rng=1)
    assert summary.n_runs == 3 and summary.mean_queries > 0


def test_problem_from_dataset():
    ds = make_search_mixture(n=300, threshold_ratio=0.7, rng=2)
    prob = problem_from_dataset(ds)
    assert prob.anomaly_index == ds.metadata["anomaly_index"]
    assert prob.threshold_ratio == pytest.approx(0.7)
    assert prob.oracle("binarized", 1.0).model.p == pytest.approx(0.335, abs=1e-3)


def test_problem_validation():
    with pytest.raises(DataError):
        SearchProblem("x", np.array([0.1, 1.5, 3.0]), 1.0, 2.0, 2, 1.0)  # 1.5 between
    with pytest.raises(ParameterError):
        SearchProblem("x", np.array([0.1, 3.0]), 1.0, 2.0, 5, 1.0)
    with pytest.raises(ParameterError):
        problem_from_series(np.array([1.0, 2.0]))  # type: ignore[arg-type]


def _yahoo_file(path, values, labels):
    pairs = enumerate(zip(values, labels, strict=True))
    rows = "".join(f"{k + 1},{v!r},{lab}\n" for k, (v, lab) in pairs)
    path.write_text("timestamp,value,is_anomaly\n" + rows, encoding="utf-8")
    return load_yahoo(path)


@pytest.mark.parametrize(
    ("x_star", "others", "ratio"),
    [
        # like the paper's dataset 6: x_j = 1 (normal), x* = 1.88, two smaller anomalies
        # gap 0.88: t_h = 1.792, t_l = 1.088, ratio 0.704 / 1.088 = 0.64706 (paper: 0.647)
        (1.88, (1.85, 1.7), 0.704 / 1.088),
        # like dataset 8: x* = 1.96, gap 0.96: t_h = 1.864, t_l = 1.096, ratio 0.70073
        (1.96, (1.9, 1.2, 1.95), 0.768 / 1.096),
    ],
)
def test_paper_reduction_drops_the_other_anomalies(tmp_path, x_star, others, ratio):
    normal = [0.2, 1.0, 0.5, 0.7, 0.1, 0.9]
    values = normal[:2] + list(others[:1]) + normal[2:4] + [x_star] + normal[4:] + list(others[1:])
    labels = [0, 0, 1, 0, 0, 1, 0, 0] + [1] * (len(others) - 1)
    ts = _yahoo_file(tmp_path / "real_6.csv", values, labels)
    prob = problem_from_series(ts)  # default: the paper's reduction
    assert prob.threshold_ratio == pytest.approx(ratio, rel=1e-12)
    assert round(prob.threshold_ratio, 3) in (0.647, 0.701)
    assert prob.n_items == len(normal) + 1
    assert prob.values[prob.anomaly_index] == x_star
    assert prob.source_index[prob.anomaly_index] == 5
    assert np.array_equal(prob.values, np.asarray(values)[prob.source_index])
    # the earlier reading keeps them: x_j = the largest other anomaly
    kept = problem_from_series(ts, other_anomalies="keep")
    gap = x_star - max(others)
    assert kept.n_items == len(values) and kept.anomaly_index == 5
    assert kept.threshold_ratio == pytest.approx(0.8 * gap / (max(others) + 0.1 * gap), rel=1e-12)
    assert kept.threshold_ratio < 0.05


def test_reduction_with_windows_removes_every_labelled_point_but_the_largest():
    # NAB-like: two windows [2, 4] and [7, 8]; the largest labelled point is index 3
    values = [1.0, 2.0, 3.5, 9.0, 4.0, 3.0, 2.5, 6.0, 5.0, 2.0]
    labels = [0, 0, 1, 1, 1, 0, 0, 1, 1, 0]
    ts = _series(values, labels)
    ts.windows = [(ts.timestamps[2], ts.timestamps[4]), (ts.timestamps[7], ts.timestamps[8])]
    reduced = single_anomaly_series(ts)
    assert reduced.metadata["source_index"].tolist() == [0, 1, 3, 5, 6, 9]
    assert reduced.labels.tolist() == [0, 0, 1, 0, 0, 0] and reduced.windows == []
    prob = problem_from_series(ts)
    # x* = 9, x_j = 3 (not the 6 inside the other window, nor the 4 in i*'s own window)
    assert prob.anomaly_index == 2
    assert prob.t_high == pytest.approx(8.4) and prob.t_low == pytest.approx(3.6)
    assert prob.threshold_ratio == pytest.approx(4.8 / 3.6)
    assert problem_from_series(ts, other_anomalies="keep").threshold_ratio == pytest.approx(
        0.8 * 3.0 / 6.3
    )


def test_reduction_options_and_errors():
    ts = _series([1.0, 5.0, 2.0], [0, 1, 0])
    assert OTHER_ANOMALIES == ("drop", "keep")
    with pytest.raises(ParameterError, match="other_anomalies"):
        problem_from_series(ts, other_anomalies="remove")
    with pytest.raises(ParameterError, match="other_anomalies"):
        prepare_series([ts], other_anomalies="remove")
    with pytest.raises(ParameterError, match="TimeSeries"):
        single_anomaly_series([1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(DataError, match="no labelled anomaly"):
        single_anomaly_series(_series([1.0, 2.0], [0, 0]))
    with pytest.raises(ParameterError, match="source_index"):
        SearchProblem("x", np.array([0.1, 3.0]), 1.0, 2.0, 1, 1.0, source_index=np.arange(3))
    same = single_anomaly_series(ts, other_anomalies="keep")
    assert np.array_equal(same.values, ts.values)


def test_embedded_nab_ratios_under_both_readings():
    drop = {
        p.name: p.threshold_ratio for p in prepare_series([load_nab(n) for n in nab_series()])[0]
    }
    keep = {
        p.name: p.threshold_ratio
        for p in prepare_series([load_nab(n) for n in nab_series()], other_anomalies="keep")[0]
    }
    assert set(drop) == set(keep)
    ec2 = "nab:ec2_request_latency_system_failure"
    assert drop[ec2] == pytest.approx(0.667, abs=1e-3)
    assert keep[ec2] == pytest.approx(0.379, abs=1e-3)
