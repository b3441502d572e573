"""Problems from time series (section 6.1 preprocessing) and the trials of section 6.2."""

from __future__ import annotations

import numpy as np
import pytest

from privad.datasets import TimeSeries, load_nab, make_search_mixture, nab_series
from privad.errors import DataError, ParameterError
from privad.search import (
    SearchProblem,
    prepare_series,
    problem_from_dataset,
    problem_from_series,
    run_trials,
)


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
    # x* = 12, x_j = 4: t_h = 12 - 0.8 = 11.2, t_l = 4 + 0.8 = 4.8
    assert prob.anomaly_index == 2
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
