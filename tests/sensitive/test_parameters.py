"""(β, r) from the contamination (privad.sensitive.parameters): β = round(c·n) and PyOD's KNN."""

from __future__ import annotations

import numpy as np
import pytest

from privad.errors import DataError, ParameterError
from privad.geometry import ball_counts
from privad.noise import Randomness
from privad.sensitive import SensitiveAnomalyIdentifier, propose_parameters
from privad.sensitive.parameters import default_beta

# 95 evenly spaced records in [0, 1] and 5 far ones: the far ones are the anomalies.
LINE = np.r_[np.linspace(0.0, 1.0, 95), [3.0, 5.0, 7.0, 9.0, 11.0]][:, None]


def _blobs(n: int = 200, seed: int = 5) -> np.ndarray:
    """Two Gaussian blobs and a tight cluster of 10 far records (5 % of 200), in 3-D."""
    rng = Randomness(seed)
    inliers = np.r_[rng.normal(0.0, 1.0, (95, 3)), rng.normal(6.0, 1.0, (n - 105, 3))]
    return np.r_[inliers, rng.normal(0.0, 0.2, (10, 3)) + [20.0, -20.0, 0.0]]


def test_default_beta_is_the_expected_number_of_anomalies() -> None:
    assert default_beta(0.05, 100) == 5
    assert default_beta(0.05, 378) == 19  # 18.9
    assert default_beta(0.35, 768) == 269  # 268.8
    assert default_beta(0.001, 100) == 1  # 0.1, at least 1
    assert default_beta(0.0, 10) == 1
    for share, n, name in ((1.0, 10, "share"), (-0.1, 10, "share"), (0.1, 0, "n_records")):
        with pytest.raises(ParameterError, match=name):
            default_beta(share, n)


def test_propose_parameters_takes_beta_from_the_contamination() -> None:
    # β = round(0.05 · 100) = 5. A far record's 6th nearest record (itself first) is at
    # least 2 away (3.0's is 1 − 4/94 at 2.0426); on the line it is 5/94 (5 steps) in the
    # interior, so at c = 0.05 (five records above r) r is the 6th largest D_i: the line's
    # end record 1.0, whose 6th is 1.0 − 5/94 = 0.0532 away, and the far five are anomalous.
    beta, r = propose_parameters(LINE, contamination=0.05)
    assert (beta, r) == (5, pytest.approx(5 / 94))
    anomalies = np.flatnonzero(ball_counts(LINE, r) <= beta)
    np.testing.assert_array_equal(anomalies, [95, 96, 97, 98, 99])
    # anomaly_share is the same target; an explicit fraction or β wins; no target: β/n 0.005
    assert propose_parameters(LINE, anomaly_share=0.05) == (beta, r)
    assert propose_parameters(LINE, 0.03, contamination=0.05)[0] == 3
    assert propose_parameters(LINE, contamination=0.05, beta=2)[0] == 2
    assert propose_parameters(LINE, contamination=0.01, min_beta=4)[0] == 4
    assert propose_parameters(LINE)[0] == 1  # max(1, round(0.005 · 100))
    with pytest.raises(ParameterError, match="beta_fraction"):
        propose_parameters(LINE, 1.5, contamination=0.05)
    with pytest.raises(DataError, match="beta"):
        propose_parameters(LINE[:10], contamination=0.5, beta=10)


def _knn_labels(X: np.ndarray, k: int, c: float) -> np.ndarray:
    """PyOD's KNN(n_neighbors=k, method="largest") rule, written out: the distance to the
    k-th nearest other record, flagged above its 100 (1 − c) percentile."""
    from sklearn.neighbors import NearestNeighbors

    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    score = dist[:, k]
    return (score > np.percentile(score, 100.0 * (1.0 - c))).astype(np.int64)


@pytest.mark.parametrize("c", [0.05, 0.1, 0.25])
def test_exact_labels_are_knn_at_the_contamination(c: float) -> None:
    X = _blobs()
    beta, r = propose_parameters(X, contamination=c)  # c·n is an integer: no rounding
    assert beta == round(c * X.shape[0])
    exact = (ball_counts(X, r) <= beta).astype(np.int64)
    assert exact.sum() == round(c * X.shape[0])
    np.testing.assert_array_equal(exact, _knn_labels(X, beta, c))
    pyod_knn = pytest.importorskip("pyod.models.knn")
    knn = pyod_knn.KNN(n_neighbors=beta, method="largest", contamination=c).fit(X)
    np.testing.assert_array_equal(exact, knn.labels_)


def test_the_far_cluster_needs_beta_at_least_its_size() -> None:
    # the 10 far records are a cluster: with β = 5 < 10 they mask each other, with
    # β = round(0.05 · 200) = 10 they are exactly the anomalies
    X = _blobs()
    far = np.arange(190, 200)
    beta, r = propose_parameters(X, contamination=0.05)
    np.testing.assert_array_equal(np.flatnonzero(ball_counts(X, r) <= beta), far)
    small, r5 = propose_parameters(X, contamination=0.05, beta=5)
    assert not set(far) <= set(np.flatnonzero(ball_counts(X, r5) <= small))


def test_estimator_with_the_default_beta_keeps_the_contamination() -> None:
    # the contamination contract with (β, r) from c: the released scores' top c share,
    # c·n = 10 records, and at ε = 4 the released answers are the far cluster
    X = _blobs()
    c = 0.05
    est = SensitiveAnomalyIdentifier(
        default_beta(c, X.shape[0]), "data", 4.0, contamination=c, count_cap="auto", rng=3
    ).fit(X)
    assert est.parameters_["source"] == "data" and est.parameters_["beta"] == 10
    assert est.labels_.sum() == 10
    np.testing.assert_array_equal(np.flatnonzero(est.labels_), np.arange(190, 200))
