"""Other detectors in place of RMP's AANN (:mod:`privad.rmp.detectors`)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.covariance import EllipticEnvelope
from sklearn.ensemble import IsolationForest
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import LocalOutlierFactor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import OneClassSVM

from privad.datasets import inject_uniform_anomalies, load_abalone
from privad.errors import DataError, ParameterError
from privad.noise import Randomness
from privad.rmp import (
    EndUser,
    MiningServer,
    Participant,
    RMPDetector,
    RMPModel,
    public_matrix,
    run_scheme,
)
from privad.rmp.detectors import (
    DetectorModel,
    SklearnOutlierAdapter,
    check_detector,
    fit_detector_model,
)


@pytest.fixture(scope="module")
def abalone():
    """300 Abalone records in [0, 1] plus 5% U(0, 1) anomalies (as in test_estimator)."""
    data = inject_uniform_anomalies(load_abalone(), 0.05, n_first=300, rng=0)
    return data.X, data.y


class PCAError:
    """A tiny PyOD-style detector: squared error of the reconstruction from k components.

    No ``get_params``: the server deep-copies it instead of ``sklearn.base.clone``.
    """

    def __init__(self, k: int = 2) -> None:
        self.k = k

    def fit(self, X, y=None):
        self.mean_ = X.mean(axis=0)
        _, _, vt = np.linalg.svd(X - self.mean_, full_matrices=False)
        self.components_ = vt[: self.k]
        return self

    def decision_function(self, X):
        C = X - self.mean_
        return np.sum((C - C @ self.components_.T @ self.components_) ** 2, axis=1)


class Returns:
    """Fits, and scores with a fixed function of X (for the output checks)."""

    def __init__(self, score) -> None:
        self.score = score

    def fit(self, X, y=None):
        return self

    def decision_function(self, X):
        return self.score(X)


def _iforest() -> SklearnOutlierAdapter:
    return SklearnOutlierAdapter(IsolationForest(n_estimators=50))


def test_isolation_forest_through_the_adapter(abalone):
    X, y = abalone
    d = RMPDetector(alpha=0.01, random_state=0, detector=_iforest(), threshold="mu+3sigma")
    d.fit(X)
    assert isinstance(d.model_, DetectorModel) and d.w_ == X.shape[1] - 1
    scores = d.decision_function(X)
    assert scores.shape == (len(y),) and roc_auc_score(y, scores) > 0.75
    # θ is the paper's μ + 3σ of the training scores (the perturbed rows Z_all). On this
    # set the few records it flags are large abalones, not the uniform anomalies: T mixes
    # the attributes into near-sums, where the anomalies sit in the middle.
    labels = d.predict(X)
    assert set(np.unique(labels)) <= {0, 1} and 0 < labels.sum() < 0.1 * len(y)
    # the end-user's path: double logistic and the public T, then the fitted clone
    model = d.model_
    expected = -model.detector.estimator_.score_samples(model.transform(X))
    assert np.array_equal(scores, expected)
    assert np.array_equal(EndUser(model).predict(X), labels)


def test_a_pyod_style_class_without_get_params(abalone):
    X, y = abalone
    detector = PCAError(k=2)
    d = RMPDetector(alpha=0.01, random_state=0, detector=detector, threshold="mu+3sigma")
    d.fit(X)
    assert roc_auc_score(y, d.decision_function(X)) > 0.9
    labels = d.predict(X)
    assert 0 < labels.sum() < 0.1 * len(y) and labels[y == 1].mean() > labels[y == 0].mean()
    assert not hasattr(detector, "mean_")  # the server fitted a copy
    assert d.model_.metadata == {
        "detector": "PCAError",
        "n_training_records": len(y),
        "alpha": 0.01,
    }


@pytest.mark.parametrize(
    "estimator",
    [
        LocalOutlierFactor(novelty=True, n_neighbors=10),
        OneClassSVM(gamma="scale", nu=0.1),
        EllipticEnvelope(random_state=1),
        make_pipeline(StandardScaler(), IsolationForest(n_estimators=20)),
    ],
    ids=["lof", "ocsvm", "elliptic", "pipeline"],
)
def test_the_party_by_party_path_with_other_sklearn_detectors(abalone, estimator):
    X, y = abalone
    rng = Randomness(3)
    T = public_matrix(X.shape[1] - 2, X.shape[1], rng)
    server = MiningServer(T, alpha=0.05, rng=rng, detector=SklearnOutlierAdapter(estimator))
    for start in range(0, len(X), 30):
        server.receive(Participant(T, 0.05, rng).perturb(X[start : start + 30]))
    model = server.train()
    assert isinstance(model, DetectorModel) and model.w == X.shape[1] - 2
    scores = EndUser(model).decision_function(X)
    assert np.isfinite(scores).all() and roc_auc_score(y, scores) > 0.6


def test_a_seed_reproduces_the_run_and_the_given_detector_is_untouched(abalone):
    X, _ = abalone
    detector = _iforest()
    a = RMPDetector(random_state=5, detector=detector).fit(X)
    b = RMPDetector(random_state=5, detector=detector).fit(X)
    c = RMPDetector(random_state=6, detector=detector).fit(X)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))
    assert not np.array_equal(a.decision_function(X), c.decision_function(X))
    # every random_state of the clone comes from the scheme's stream, even one set by hand
    fixed = SklearnOutlierAdapter(IsolationForest(n_estimators=50, random_state=123))
    e = RMPDetector(random_state=5, detector=fixed).fit(X)
    assert np.array_equal(a.decision_function(X), e.decision_function(X))
    seeded = a.model_.detector.estimator_.random_state
    assert isinstance(seeded, int) and seeded == b.model_.detector.estimator_.random_state
    assert detector.estimator.random_state is None and not hasattr(detector, "estimator_")
    # run_scheme with the same stream gives the same model
    model = run_scheme(X, 0.01, rng=5, detector=detector)
    assert np.array_equal(model.decision_function(X), a.decision_function(X))


def test_detector_none_is_the_aann_unchanged(abalone):
    X, _ = abalone
    default = RMPDetector(alpha=0.1, epochs=3, random_state=2).fit(X)
    explicit = RMPDetector(alpha=0.1, epochs=3, random_state=2, detector=None).fit(X)
    assert isinstance(explicit.model_, RMPModel)
    assert np.array_equal(default.decision_function(X), explicit.decision_function(X))
    assert default.threshold_ == explicit.threshold_
    assert default.get_params()["detector"] is None


def test_get_params_clone_and_the_adapters_nested_parameters():
    d = RMPDetector(epochs=3, detector=_iforest())
    cloned = clone(d)
    assert cloned.detector is not d.detector
    assert cloned.detector.estimator.get_params() == d.detector.estimator.get_params()
    adapter = SklearnOutlierAdapter(IsolationForest())
    params = adapter.get_params()
    assert params["estimator__n_estimators"] == 100 and "estimator" in params
    assert adapter.set_params(estimator__n_estimators=7) is adapter
    assert adapter.estimator.n_estimators == 7
    assert set(adapter.get_params(deep=False)) == {"estimator"}
    with pytest.raises(ParameterError, match="unknown parameter"):
        adapter.set_params(gamma=1)
    assert "IsolationForest" in repr(adapter)


@pytest.mark.parametrize(
    ("detector", "match"),
    [
        (IsolationForest, "instance, got the class IsolationForest"),
        (object(), "fit\\(X\\) and decision_function\\(X\\).*lacks fit and decision_function"),
        (StandardScaler(), "lacks decision_function"),
        (IsolationForest(), "higher = more normal; wrap it as SklearnOutlierAdapter"),
        (make_pipeline(StandardScaler(), OneClassSVM()), "wrap it"),
        (SklearnOutlierAdapter(LocalOutlierFactor()), "LocalOutlierFactor lacks score_samples"),
        (SklearnOutlierAdapter(StandardScaler()), "lacks score_samples"),
        (SklearnOutlierAdapter(OneClassSVM), "instance, got the class OneClassSVM"),
    ],
)
def test_bad_detectors_are_parameter_errors(abalone, detector, match):
    X, _ = abalone
    with pytest.raises(ParameterError, match=match):
        check_detector(detector)
    with pytest.raises(ParameterError, match=match):
        RMPDetector(epochs=1, detector=detector).fit(X)
    with pytest.raises(ParameterError, match=match):
        MiningServer(public_matrix(2, 3, 0), detector=detector)


@pytest.mark.parametrize(
    ("score", "match"),
    [
        (lambda X: X, "one score per record"),
        (lambda X: np.full(len(X), np.nan), "NaN or infinity"),
        (lambda X: ["a"] * len(X), "non-numbers"),
    ],
)
def test_bad_scores_are_data_errors(abalone, score, match):
    X, _ = abalone
    with pytest.raises(DataError, match=match):
        RMPDetector(random_state=0, detector=Returns(score)).fit(X)


def test_a_custom_detector_model_cannot_be_saved(abalone, tmp_path):
    X, _ = abalone
    model = RMPDetector(random_state=0, detector=PCAError()).fit(X).model_
    target = tmp_path / "model.npz"
    with pytest.raises(ParameterError, match="PCAError.*cannot be saved.*pickle"):
        model.save(target)
    with pytest.raises(ParameterError, match="cannot be saved"):
        model.to_bytes()
    assert not target.exists()


def test_pyod_detectors_if_installed(abalone):
    pytest.importorskip("pyod")
    torch_before = "torch" in sys.modules
    from pyod.models.iforest import IForest
    from pyod.models.pca import PCA

    assert torch_before or "torch" not in sys.modules
    X, y = abalone
    for detector in (PCA(n_components=3), IForest(n_estimators=50)):
        d = RMPDetector(alpha=0.01, random_state=0, detector=detector).fit(X)
        again = RMPDetector(alpha=0.01, random_state=0, detector=detector).fit(X)
        scores = d.decision_function(X)
        assert np.array_equal(scores, again.decision_function(X))
        if isinstance(detector, IForest):  # PyOD's PCA score ranks these anomalies low
            assert roc_auc_score(y, scores) > 0.75
        # θ is μ + 3σ of the training scores, not PyOD's contamination-based threshold_
        T = public_matrix(X.shape[1] - 1, X.shape[1], 0)
        Z = Participant(T, 0.01, 1).perturb(X)
        model = fit_detector_model(T, Z, detector, alpha=0.01, rng=2)
        train = model.detector.decision_function(Z.T)
        assert model.threshold == pytest.approx(train.mean() + 3 * train.std())
        assert model.threshold != model.detector.threshold_


def test_contamination_applies_to_any_detector(abalone):
    """The default threshold is PyOD's top ``contamination`` share of the end-user's scores,
    whatever the detector (its own ``threshold_`` is not used)."""
    X, _ = abalone
    d = RMPDetector(alpha=0.01, random_state=0, detector=_iforest(), contamination=0.05).fit(X)
    assert d.threshold_ == np.percentile(d.decision_function(X), 95.0)
    assert np.array_equal(d.labels_, d.predict(X))
    assert 0.025 <= d.labels_.mean() <= 0.1
