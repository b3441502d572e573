"""privad's estimators are scikit-learn estimators (``parametrize_with_checks``).

The only checks allowed to fail are those that cannot hold for privad's outlier detectors:
scikit-learn's outlier convention is ``predict`` = +1 inlier / −1 outlier, privad follows
PyOD's 0/1 with 1 = anomaly (and the SP mechanism releases bits, not scores); and a private
mechanism drawing OS entropy (no seed) releases different noisy answers in two fits.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone, is_outlier_detector
from sklearn.ensemble import IsolationForest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from privad.errors import NotFittedError
from privad.rmp import AANNDetector, RMPDetector
from privad.rmp.detectors import SklearnOutlierAdapter
from privad.sensitive import SensitiveAnomalyIdentifier

PYOD_LABELS = (
    "predict returns 0/1 with 1 = anomaly (PyOD's convention), not scikit-learn's +1/-1"
)
OUTLIER_SIGN_CHECKS = ("check_outliers_train", "check_outliers_fit_predict")
NOISY = "a private mechanism with fresh OS entropy: two fits release different noisy answers"
NOISY_CHECKS = ("check_classifier_data_not_an_array", "check_fit_idempotent")

ESTIMATORS = [
    SensitiveAnomalyIdentifier(beta=3, r=1.0, epsilon=1.0, rng=0),
    SensitiveAnomalyIdentifier(beta=3, r=1.0, epsilon=1.0),  # OS entropy: non-deterministic
    AANNDetector(epochs=5, random_state=0),
    RMPDetector(epochs=5, random_state=0),
    SklearnOutlierAdapter(IsolationForest(n_estimators=20, random_state=0)),
]


def _expected_failures(estimator) -> dict[str, str]:
    if isinstance(estimator, SklearnOutlierAdapter):
        return {}  # a scorer: it has no predict, so no sign convention
    failures = dict.fromkeys(OUTLIER_SIGN_CHECKS, PYOD_LABELS)
    if getattr(estimator, "rng", 0) is None:
        failures.update(dict.fromkeys(NOISY_CHECKS, NOISY))
    return failures


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_scikit_learn_checks(estimator, check) -> None:
    check(estimator)


@pytest.fixture(scope="module")
def blobs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0.5, 0.05, (200, 4)), rng.uniform(0, 1, (12, 4))])
    y = np.r_[np.zeros(200), np.ones(12)].astype(int)
    order = rng.permutation(y.size)  # both folds of a 2-fold split hold anomalies
    return np.clip(X, 0, 1)[order], y[order]


def test_pipelines_clones_and_grid_searches(blobs) -> None:
    X, y = blobs
    for est in (AANNDetector(epochs=30, random_state=0), RMPDetector(epochs=30, random_state=0)):
        assert is_outlier_detector(est)
        pipe = make_pipeline(StandardScaler(), clone(est)).fit(X)
        assert pipe.predict(X).shape == (X.shape[0],)
        assert pipe.decision_function(X).shape == (X.shape[0],)
        grid = GridSearchCV(clone(est), {"epochs": [10, 30]}, scoring="roc_auc", cv=2).fit(X, y)
        assert grid.best_score_ > 0.5
        fitted = clone(est).fit(X)
        assert fitted.decision_scores_.shape == (X.shape[0],)
        np.testing.assert_array_equal(fitted.labels_, fitted.predict(X))
    sp = make_pipeline(StandardScaler(), SensitiveAnomalyIdentifier(beta=3, r=1.0, epsilon=1.0,
                                                                    rng=0)).fit(X)  # fmt: skip
    labels = sp.predict(X)
    np.testing.assert_array_equal(labels, sp.predict(X))  # recorded: one release
    assert is_outlier_detector(SensitiveAnomalyIdentifier(beta=3, r=1.0, epsilon=1.0))


def test_feature_names_are_checked(blobs) -> None:
    import pandas as pd

    X, _ = blobs
    frame = pd.DataFrame(X, columns=list("abcd"))
    est = SensitiveAnomalyIdentifier(beta=3, r=0.3, epsilon=1.0, rng=0).fit(frame)
    assert list(est.feature_names_in_) == list("abcd")
    with pytest.raises(ValueError, match="feature names"):
        est.predict(frame[list("dcba")])
    with pytest.raises(NotFittedError):
        SensitiveAnomalyIdentifier(beta=3, r=0.3, epsilon=1.0).predict(X)
