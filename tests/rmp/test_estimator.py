"""RMPDetector and AANNDetector: scikit-learn conventions, validation, an AUC check."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import roc_auc_score

from privad.datasets import inject_uniform_anomalies, load_abalone
from privad.errors import DataError, ParameterError
from privad.rmp.estimator import AANNDetector, NotFittedError, RMPDetector


@pytest.fixture(scope="module")
def abalone():
    """The paper's set-up, small: 300 Abalone records in [0, 1] plus 5% U(0, 1) anomalies."""
    data = inject_uniform_anomalies(load_abalone(), 0.05, n_first=300, rng=0)
    return data.X, data.y


def test_get_set_params_and_clone():
    d = RMPDetector(alpha=0.1, r=2, epochs=7, random_state=3)
    params = d.get_params()
    assert params["alpha"] == 0.1 and params["r"] == 2 and params["batch_size"] == 30
    assert params["loss"] == "mean" and params["sgd_batch_size"] == 32
    assert d.set_params(epochs=9) is d and d.epochs == 9
    assert clone(d).get_params() == d.get_params()
    with pytest.raises(ParameterError, match="unknown parameter"):
        d.set_params(gamma=1)
    a = AANNDetector(hidden=3)
    assert clone(a).get_params() == a.get_params()
    assert "hidden=3" in repr(a)


@pytest.mark.parametrize("cls", [RMPDetector, AANNDetector])
def test_not_fitted(cls):
    d = cls()
    with pytest.raises(NotFittedError):
        d.decision_function(np.ones((2, 3)))
    with pytest.raises(NotFittedError):
        d.predict(np.ones((2, 3)))


def test_guarantee_needs_a_fit():
    with pytest.raises(NotFittedError):
        RMPDetector().guarantee  # noqa: B018


@pytest.mark.parametrize(
    "params",
    [
        {"alpha": 0.0},
        {"alpha": 1.0},
        {"r": 0},
        {"r": 8},
        {"epochs": 0},
        {"batch_size": 0},
        {"sgd_batch_size": 0},
        {"momentum": 1.0},
        {"hidden": 0},
        {"learning_rate": -1.0},
        {"input_scaling": "log"},
        {"shuffle": "yes"},
        {"beta": 0.0},
        {"activation": "sin"},
        {"loss": "max"},
        {"contamination": 0.0},
        {"contamination": 0.6},
        {"contamination": True},
        {"threshold": "3sigma"},
    ],
)
def test_bad_parameters_raise_on_fit(params, abalone):
    X, _ = abalone
    with pytest.raises(ParameterError):
        RMPDetector(**{"epochs": 1, **params}).fit(X)


def test_bad_data(abalone):
    X, _ = abalone
    with pytest.raises(DataError, match="at least 2 features"):
        RMPDetector(epochs=1).fit(X[:, :1])
    with pytest.raises(DataError):
        RMPDetector(epochs=1).fit(np.where(X > 0.99, np.nan, X))
    with pytest.raises(DataError):
        AANNDetector(epochs=1).fit(X[:1])
    d = RMPDetector(epochs=1, random_state=0).fit(X)
    with pytest.raises(DataError, match="8"):
        d.predict(X[:, :5])


def test_fitted_attributes(abalone):
    X, _ = abalone
    d = RMPDetector(alpha=0.1, r=3, epochs=2, random_state=0, threshold="mu+3sigma").fit(X)
    assert d.T_.shape == (5, 8) and d.w_ == 5 and d.n_features_in_ == 8
    assert d.n_participants_ == -(-X.shape[0] // 30)
    assert d.threshold_ == d.model_.threshold  # the paper's θ, as the model file keeps it
    assert d.model_.metadata["n_training_records"] == X.shape[0]
    g = d.guarantee
    assert g.notion == "rmp" and g.epsilon is None and "w=5 < n=8" in g.description


def test_same_random_state_same_scores(abalone):
    X, _ = abalone
    a = RMPDetector(epochs=3, random_state=5).fit(X).decision_function(X)
    b = RMPDetector(epochs=3, random_state=5).fit(X).decision_function(X)
    c = RMPDetector(epochs=3, random_state=6).fit(X).decision_function(X)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_auc_on_small_abalone(abalone):
    """Table 1's set-up, scaled down: the detectors must find the uniform anomalies."""
    X, y = abalone
    rmp = RMPDetector(alpha=0.01, epochs=100, random_state=0, threshold="mu+3sigma").fit(X)
    raw = AANNDetector(epochs=100, random_state=0).fit(X)
    assert roc_auc_score(y, raw.decision_function(X)) > 0.95
    assert roc_auc_score(y, rmp.decision_function(X)) > 0.9
    labels = rmp.predict(X)
    assert set(np.unique(labels)) <= {0, 1}
    # θ = μ + 3σ flags few records, and mostly anomalies
    assert 0 < labels.sum() < 0.1 * len(y)
    assert labels[y == 1].mean() > labels[y == 0].mean()
    assert np.array_equal(rmp.fit_predict(X), labels)


@pytest.mark.parametrize("cls", [RMPDetector, AANNDetector])
def test_a_diverging_fit_is_a_data_error_not_a_scikit_learn_error(cls, abalone):
    X, _ = abalone
    with pytest.raises(DataError, match="diverged.*smaller learning_rate"):
        cls(learning_rate=1e300, epochs=3, random_state=0).fit(X)


def test_two_attributes_with_r_1_train_without_warnings():
    """n = 2, r = 1 leaves w = 1 (the 2-D Banana): no scikit-learn warning on any epoch."""
    import warnings

    from privad.datasets import load_banana

    X = load_banana().X[:200]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = RMPDetector(alpha=0.1, epochs=3, random_state=0).fit(X)
        scores = d.decision_function(X)
    assert d.w_ == 1 and scores.shape == (200,) and np.isfinite(scores).all()


# -- the contamination contract (issue 27): PyOD's convention on the released scores -------


@pytest.fixture(scope="module")
def fitted(abalone):
    """One fit per class and contamination share (20 epochs: the contract, not accuracy)."""
    X, _ = abalone
    out = {}
    for cls in (RMPDetector, AANNDetector):
        for c in (0.01, 0.05, 0.1, 0.2, 0.5):
            out[cls, c] = cls(contamination=c, epochs=20, random_state=0).fit(X)
    return out


@pytest.mark.parametrize("cls", [RMPDetector, AANNDetector])
@pytest.mark.parametrize("c", [0.01, 0.05, 0.1, 0.2, 0.5])
def test_contamination_flags_the_top_share_of_the_released_scores(cls, c, fitted, abalone):
    X, _ = abalone
    d = fitted[cls, c]
    scores = d.decision_scores_
    assert np.array_equal(scores, d.decision_function(X))  # the end-user's scores
    m = X.shape[0]
    # PyOD: the 100 (1 - c) percentile (linear interpolation), flagged strictly above it
    k = (m - 1) * (1.0 - c)
    ranked = np.sort(scores)
    lo = int(np.floor(k))
    by_hand = ranked[lo] + (k - lo) * (ranked[min(lo + 1, m - 1)] - ranked[lo])
    assert d.threshold_ == pytest.approx(by_hand, rel=1e-12)
    assert np.array_equal(d.labels_, (scores > d.threshold_).astype(np.int64))
    assert np.array_equal(d.predict(X), d.labels_)
    # no collapse: the share flagged is the contamination, never outside [c/2, 2c]
    assert int(d.labels_.sum()) == m - 1 - lo
    assert c / 2 <= d.labels_.mean() <= 2 * c


@pytest.mark.parametrize("cls", [RMPDetector, AANNDetector])
def test_default_is_pyod_contamination_and_the_paper_rule_stays_an_option(cls, abalone):
    X, _ = abalone
    default = cls(epochs=20, random_state=0).fit(X)
    assert default.get_params()["contamination"] == 0.1
    assert default.get_params()["threshold"] == "contamination"
    assert 0.05 <= default.labels_.mean() <= 0.2
    paper = cls(epochs=20, random_state=0, threshold="mu+3sigma").fit(X)
    if cls is RMPDetector:  # θ of the server's errors on the perturbed records
        assert paper.threshold_ == paper.model_.threshold
    else:
        e = paper.decision_scores_
        assert paper.threshold_ == pytest.approx(e.mean() + 3 * e.std(), rel=1e-12)
    assert np.array_equal(paper.labels_, (paper.decision_scores_ > paper.threshold_) * 1)
    # the same fit: only the threshold differs
    assert np.array_equal(paper.decision_scores_, default.decision_scores_)
