"""projection_scores and RelaxedDPDetector(scores="projection"): post-processing of 𝒯'."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from privad.base import contamination_threshold
from privad.datasets import load
from privad.errors import ParameterError, PrivacyWarning
from privad.relaxed.detectors import _skew_projection, laplace_scores, projection_scores
from privad.relaxed.estimator import RelaxedDPDetector
from privad.relaxed.messages import SensorToAnalyst


@pytest.fixture(scope="module")
def thyroid():  # type: ignore[no-untyped-def]
    """Embedded ODDS Thyroid (6 columns in [0, 1], 2.5 % outliers)."""
    data = load("thyroid")
    order = np.random.default_rng(0).permutation(data.y.size)[:1200]
    return data.X[order], data.y[order]


def _fit(X, scores="projection", **options):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # no history: parameters from X
        est = RelaxedDPDetector(global_sensitivity=1.0, scores=scores, rng=0, **options)
        return est.fit(X)


def test_projection_scores_by_hand() -> None:
    # one column, b = 0.5, p_o = 50 (quartiles): var = 63.2 / 4 = 15.8 > ν (1 + √(1/5))²
    # with ν = 2 b² = 0.5; median 2, quartiles 1 and 4, so g = (4 + 1 − 4) / 3 = 1/3 and
    # the signal share is (15.8 − 0.5) / 15.8
    T = np.array([[0.0], [1.0], [2.0], [4.0], [10.0]])
    S = (T[:, 0] - 2.0) / np.sqrt(15.8) * (1.0 / 3.0) * (15.3 / 15.8)
    np.testing.assert_allclose(_skew_projection(T, np.array([0.5]), 50.0), S)
    # L = |t − 2| / 0.5 = 4 2 0 4 16 ranks 3.5 2 1 3.5 5; S ranks 1 2 3 4 5; mean rank / n
    np.testing.assert_allclose(projection_scores(T, 0.5, p_o=50), [0.45, 0.4, 0.4, 0.75, 1.0])


def test_without_a_component_above_the_noise_the_ranking_is_laplace_scores() -> None:
    X = np.random.default_rng(1).uniform(size=(300, 4))  # spread far below Lap(10)'s
    T = X + np.random.default_rng(2).laplace(scale=10.0, size=X.shape)
    assert not _skew_projection(T, np.full(4, 10.0), 10.0).any()  # nothing kept
    got, lap = projection_scores(T, 10.0), laplace_scores(T, 10.0)
    np.testing.assert_array_equal(np.argsort(got, kind="stable"), np.argsort(lap, kind="stable"))


def test_the_skew_gives_the_side_of_the_outliers() -> None:
    # 5 % of records shifted by +6 along (1, 1, 1)/√3 under Lap(1) noise in 3 columns: the
    # two-sided distance cannot use the sign, the projection does
    rng = np.random.default_rng(3)
    X = rng.normal(scale=0.3, size=(2000, 3))
    y = np.zeros(2000, dtype=int)
    y[:100] = 1
    X[:100] += 6.0 / np.sqrt(3.0)
    T = X + rng.laplace(size=X.shape)
    S = _skew_projection(T, np.ones(3), 10.0)
    assert roc_auc_score(y, S) > 0.9
    assert roc_auc_score(y, projection_scores(T, 1.0)) > roc_auc_score(y, laplace_scores(T, 1.0))


def test_projection_scores_refuse_bad_input() -> None:
    with pytest.raises(ParameterError, match="noise_scale"):
        projection_scores([[0.0, 1.0], [1.0, 2.0]], [1.0, 0.0])
    with pytest.raises(ParameterError, match="p_o"):
        projection_scores([[0.0], [1.0]], 1.0, p_o=100)


def test_the_estimator_scores_read_only_the_analysts_message(thyroid) -> None:  # type: ignore[no-untyped-def]
    X, y = thyroid
    est = _fit(X, epsilon=1.0, contamination=0.025, p_o=10.0)
    (message,) = [
        m for m in est.run_.transcript.received_by("analyst") if isinstance(m, SensorToAnalyst)
    ]
    np.testing.assert_array_equal(
        est.decision_scores_, projection_scores(message.perturbed, message.noise_scale, 10.0)
    )
    np.testing.assert_array_equal(est.decision_function(X), est.decision_scores_)  # recorded
    assert roc_auc_score(y, est.decision_scores_) > 0.7


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_contamination_keeps_the_share_flagged(thyroid, epsilon) -> None:  # type: ignore[no-untyped-def]
    X, _ = thyroid
    c = 0.05
    est = _fit(X, epsilon=epsilon, contamination=c)
    assert c / 2 <= est.labels_.mean() <= 2 * c
    assert est.threshold_ == contamination_threshold(est.decision_scores_, c)
    np.testing.assert_array_equal(est.predict(X), est.labels_)


def test_the_score_changes_nothing_released_or_charged(thyroid) -> None:  # type: ignore[no-untyped-def]
    X, _ = thyroid
    laplace, projection = (
        _fit(X, epsilon=1.0, contamination=0.025, scores=s) for s in ("laplace", "projection")
    )

    def message(est):  # type: ignore[no-untyped-def]
        (m,) = [
            m for m in est.run_.transcript.received_by("analyst") if isinstance(m, SensorToAnalyst)
        ]
        return m

    np.testing.assert_array_equal(message(laplace).perturbed, message(projection).perturbed)
    assert laplace.guarantee_ == projection.guarantee_
    np.testing.assert_array_equal(laplace.candidates_, projection.candidates_)
