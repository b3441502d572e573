"""RelaxedDPDetector: the parties' protocol behind scikit-learn conventions, with its ledger."""

from __future__ import annotations

import pickle
import warnings
from functools import partial

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.ensemble import IsolationForest
from sklearn.metrics import roc_auc_score

from privad.accounting import RELAXED_DP, Ledger, NoBudgetError
from privad.base import contamination_threshold
from privad.datasets import load, make_sensor_ring
from privad.detectors import SklearnOutlierAdapter
from privad.errors import (
    BudgetExceededError,
    DataError,
    ParameterError,
    PrivacyWarning,
    PrivadWarning,
)
from privad.noise import Randomness
from privad.relaxed import (
    Analyst,
    CorrectionServer,
    RelaxedDPDetector,
    ScoringOutlierDetector,
    Sensor,
    calibrate,
    laplace_scores,
    relaxed_sensitivity,
    run_protocol,
)
from privad.relaxed.distances import centre_distances, column_means
from privad.relaxed.messages import SensorToAnalyst

GS = 400.0  # the ring's domain is within ±200 in both columns


@pytest.fixture(scope="module")
def ring():  # type: ignore[no-untyped-def]
    history = make_sensor_ring(n=1500, separation=120.0, rng=1).X
    data = make_sensor_ring(n=1500, separation=120.0, rng=2)
    return history, data.X, data.y


def _fit(ring, **options):  # type: ignore[no-untyped-def]
    history, X, _ = ring
    return RelaxedDPDetector(
        epsilon=1.0, global_sensitivity=GS, history=history, rng=0, **options
    ).fit(X)


def test_the_estimator_is_the_parties_protocol(ring) -> None:  # type: ignore[no-untyped-def]
    history, X, y = ring
    est = _fit(ring)
    # the same run through the party objects, with the estimator's two child streams
    sensor_rng, _ = Randomness(0).spawn(2)
    sensor = Sensor(1.0, relaxed_sensitivity(history, 10.0), global_sensitivity=GS, rng=sensor_rng)
    cal = calibrate(sensor.scale(history), 10.0)
    run = run_protocol(
        X,
        sensor,
        Analyst(cal.detector, outlier_radius=cal.outlier_radius),
        CorrectionServer(cal.w_o),
    )
    assert np.array_equal(np.flatnonzero(est.labels_), run.outliers)
    assert np.array_equal(np.flatnonzero(est.presumed_labels_), run.presumed_outliers)
    # the DBSCAN score: the distance of T'[j] to the centre of T' (the analyst's step 4)
    (message,) = [
        m for m in est.run_.transcript.received_by("analyst") if isinstance(m, SensorToAnalyst)
    ]
    Tp = message.perturbed
    np.testing.assert_array_equal(est.decision_scores_, centre_distances(Tp, column_means(Tp)))
    assert est.threshold_ is None
    # on the paper's data the correction keeps the outliers in a small output
    assert est.labels_[y == 1].mean() >= 0.95 and est.labels_.mean() < 0.5
    assert roc_auc_score(y, est.decision_scores_) > 0.95


def test_every_window_is_charged_once(ring) -> None:  # type: ignore[no-untyped-def]
    _, X, _ = ring
    est = _fit(ring)
    # Theorem 2 per record (2 columns: 2ε) plus ε_CS = 2ε for the protected d_diff
    assert est.guarantee_.notion == RELAXED_DP and est.guarantee_.epsilon == pytest.approx(4.0)
    assert est.guarantee_ == est.sensor_.release_guarantee()
    (spend,) = est.ledger_.history()
    assert spend.scope == "fitted-data" and spend.epsilon == pytest.approx(4.0)
    # the fitted records again, or permuted: the recorded release, no new spend
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    order = np.random.default_rng(3).permutation(X.shape[0])
    np.testing.assert_array_equal(est.predict(X[order]), est.labels_[order])
    np.testing.assert_array_equal(est.decision_function(X[order]), est.decision_scores_[order])
    assert len(est.ledger_.history()) == 1
    # a new window is a new release, charged
    new = est.predict(X[:700])
    assert new.shape == (700,) and len(est.ledger_.history()) == 2
    assert est.ledger_.spent("fitted-data", RELAXED_DP) == pytest.approx(8.0)


def test_the_unprotected_exchange_charges_the_perturbation_only(ring) -> None:  # type: ignore[no-untyped-def]
    est = _fit(ring, exchange="unprotected")
    assert est.guarantee_.epsilon == pytest.approx(2.0)
    assert est.views_.correction.guarantee is None  # exact d_diff: no guarantee for CS


def test_a_budget_refuses_a_window_before_any_noise(ring) -> None:  # type: ignore[no-untyped-def]
    _, X, _ = ring
    with pytest.raises(BudgetExceededError):
        _fit(ring, budget=3.0)
    est = _fit(ring, budget=6.0)
    with pytest.raises(BudgetExceededError):
        est.predict(X[:100])
    assert est.ledger_.spent("fitted-data", RELAXED_DP) == pytest.approx(4.0)


def test_a_scoring_detector_plugs_in(ring) -> None:  # type: ignore[no-untyped-def]
    _, X, y = ring
    det = SklearnOutlierAdapter(IsolationForest(n_estimators=50))
    est = _fit(ring, detector=det)
    # O' is the top p_o = 10 % of the detector's scores on T'
    assert est.threshold_ == pytest.approx(np.percentile(est.decision_scores_, 90.0))
    np.testing.assert_array_equal(
        est.presumed_labels_, (est.decision_scores_ > est.threshold_).astype(int)
    )
    assert roc_auc_score(y, est.decision_scores_) > 0.9
    assert est.labels_[y == 1].mean() >= 0.9
    # the clone's random_state comes from rng: a seed reproduces the run
    again = _fit(ring, detector=det)
    np.testing.assert_array_equal(again.decision_scores_, est.decision_scores_)
    assert det.get_params()["estimator__random_state"] is None  # not modified


def test_scoring_outlier_detector_by_hand() -> None:
    X = np.r_[np.zeros((9, 1)), [[5.0]]] + np.arange(10)[:, None] * 1e-3

    class Distance:  # the protocol only: fit, decision_function
        def fit(self, X):  # type: ignore[no-untyped-def]
            self.mean_ = X.mean(axis=0)
            return self

        def decision_function(self, X):  # type: ignore[no-untyped-def]
            return np.abs(X - self.mean_)[:, 0]

    f = ScoringOutlierDetector(Distance(), p_o=10.0)
    np.testing.assert_array_equal(f(X), [9])
    assert f.threshold == pytest.approx(np.percentile(f.scores, 90.0))
    with pytest.raises(ParameterError, match="p_o"):
        ScoringOutlierDetector(Distance(), p_o=100.0)
    with pytest.raises(ParameterError, match="higher = more normal"):
        ScoringOutlierDetector(IsolationForest(), p_o=10.0)


def test_parameters_and_data_are_checked(ring) -> None:  # type: ignore[no-untyped-def]
    history, X, _ = ring
    with pytest.raises(ParameterError, match="global_sensitivity"):
        RelaxedDPDetector(epsilon=1.0, global_sensitivity=None, history=history).fit(X)
    with pytest.raises(ParameterError, match="smaller than its relaxed"):
        RelaxedDPDetector(epsilon=1.0, global_sensitivity=1.0, history=history).fit(X)
    with pytest.raises(DataError, match="history has 1 column"):
        RelaxedDPDetector(epsilon=1.0, global_sensitivity=GS, history=history[:, :1]).fit(X)
    with pytest.raises(ParameterError, match="reduction"):
        RelaxedDPDetector(epsilon=1.0, global_sensitivity=GS, reduction="x").fit(X)
    with pytest.raises(ParameterError, match="scope"):
        RelaxedDPDetector(epsilon=1.0, global_sensitivity=GS, scope=" ").fit(X)
    with pytest.warns(PrivacyWarning, match="computed from the data they protect"):
        RelaxedDPDetector(epsilon=1.0, global_sensitivity=GS, rng=0).fit(X[:300])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        RelaxedDPDetector(
            epsilon=1.0,
            global_sensitivity=GS,
            history=history,
            rng=0,
            relaxed_sensitivity=[20.0, 20.0],
        ).fit(X[:300])


def test_clone_and_pickle_keep_the_record(ring) -> None:  # type: ignore[no-untyped-def]
    _, X, _ = ring
    est = _fit(ring)
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.predict(X), est.labels_)  # recorded: no new noise
    assert len(copy.ledger_.history()) == 1
    fresh = clone(est)
    assert not hasattr(fresh, "labels_") and fresh.get_params()["epsilon"] == 1.0


@pytest.fixture(scope="module")
def thyroid():  # type: ignore[no-untyped-def]
    """Embedded ODDS Thyroid (6 columns in [0, 1], 2.5 % outliers): not the paper's ring."""
    data = load("thyroid")
    order = np.random.default_rng(0).permutation(data.y.size)[:1200]
    return data.X[order], data.y[order]


def _relaxed(X, **options):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # no history: parameters from X
        return RelaxedDPDetector(global_sensitivity=1.0, rng=0, **options).fit(X)


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_contamination_flags_the_top_share_of_the_released_scores(thyroid, epsilon) -> None:  # type: ignore[no-untyped-def]
    X, _ = thyroid
    paper = _relaxed(X, epsilon=epsilon)
    # the finding of issue 27: off the paper's ring the corrected superset swallows the set
    assert paper.labels_.mean() > 0.9 and paper.threshold_ is None
    np.testing.assert_array_equal(paper.labels_, paper.candidates_)
    for c in (0.01, 0.05, 0.2):
        before = len(paper.ledger_.history())  # the records' account, shared by every fit
        est = _relaxed(X, epsilon=epsilon, contamination=c)
        # the same release (same noise) as without contamination: only the labels differ
        np.testing.assert_array_equal(est.decision_scores_, paper.decision_scores_)
        np.testing.assert_array_equal(est.candidates_, paper.candidates_)
        assert est.n_candidates_ == int(paper.candidates_.sum())
        assert est.threshold_ == contamination_threshold(est.decision_scores_, c)
        np.testing.assert_array_equal(
            est.labels_, (est.decision_scores_ > est.threshold_).astype(int)
        )
        assert c / 2 <= est.labels_.mean() <= 2 * c  # no collapse
        np.testing.assert_array_equal(est.predict(X), est.labels_)  # the recorded window
        window = est.predict(X[:400])  # a new window: its own top share
        assert c / 2 <= window.mean() <= 2 * c
        assert len(est.ledger_.history()) == before + 2  # its fit and the new window


def test_no_collapse_on_banana_with_a_scoring_detector() -> None:
    X = load("banana").X[:1000]
    det = SklearnOutlierAdapter(IsolationForest(n_estimators=20))
    for options in ({}, {"detector": det}, {"scores": "laplace"}):
        est = RelaxedDPDetector(
            epsilon=1.0,
            global_sensitivity=7.0,
            history=X[500:],
            contamination=0.1,
            rng=0,
            **options,
        ).fit(X[:500])
        assert 0.05 <= est.labels_.mean() <= 0.2
        assert est.threshold_ == contamination_threshold(est.decision_scores_, 0.1)


def test_laplace_scores_read_only_the_analysts_message(thyroid) -> None:  # type: ignore[no-untyped-def]
    X, y = thyroid
    est = _relaxed(X, epsilon=1.0, scores="laplace", contamination=0.025)
    (message,) = [
        m for m in est.run_.transcript.received_by("analyst") if isinstance(m, SensorToAnalyst)
    ]
    Tp, b = message.perturbed, message.noise_scale
    np.testing.assert_allclose(
        est.decision_scores_, (np.abs(Tp - np.median(Tp, axis=0)) / b).sum(axis=1)
    )
    assert roc_auc_score(y, est.decision_scores_) > 0.7  # 0.83 on the whole set (docs)


def test_laplace_scores_by_hand() -> None:
    T = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 7.0]])  # medians 2 and 1
    np.testing.assert_allclose(laplace_scores(T, [2.0, 0.5]), [1.0, 0.0, 1.0 + 12.0])
    np.testing.assert_allclose(laplace_scores(T, 2.0), [1.0, 0.0, 4.0])
    with pytest.raises(ParameterError, match="noise_scale"):
        laplace_scores(T, [1.0, 0.0])


def test_a_column_with_relaxed_sensitivity_zero_is_perturbed_not_refused(thyroid) -> None:  # type: ignore[no-untyped-def]
    X, _ = thyroid
    flag = (np.arange(X.shape[0]) % 25 == 0).astype(float)  # 4 % ones: RS = 0 by eq. (1)
    Z = np.column_stack([X, flag])
    with pytest.warns(PrivadWarning, match=r"column\(s\) \[6\].*fallback RS \[1\.0\]"):
        est = _relaxed(Z, epsilon=1.0, contamination=0.05)
    assert est.relaxed_sensitivity_[6] == 1.0  # GS: ordinary ε-DP for that column
    assert est.guarantee_.epsilon_outlier < np.inf
    floored = _relaxed(Z, epsilon=1.0, contamination=0.05, sensitivity_floor=0.1)
    assert floored.relaxed_sensitivity_[6] == pytest.approx(0.1)  # ε' ≤ 10 ε there
    assert (floored.relaxed_sensitivity_ >= 0.1).all()
    assert 0.025 <= floored.labels_.mean() <= 0.1


@pytest.mark.parametrize(
    ("option", "match"),
    [
        ({"contamination": 0.0}, "contamination"),
        ({"contamination": 0.6}, "contamination"),
        ({"scores": "knn"}, "scores"),
        ({"sensitivity_floor": 0.0}, "sensitivity_floor"),
        ({"sensitivity_floor": 1.5}, "sensitivity_floor"),
    ],
)
def test_the_new_options_are_checked(ring, option, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match=match):
        _fit(ring, **option)


@pytest.mark.parametrize("again", ["refit", "clone", "pickle", "deepcopy"])
def test_refits_and_copies_share_the_budget(ring, again) -> None:  # type: ignore[no-untyped-def]
    """Issue 26: each window costs 4; under budget=10 at most two are released in this
    process, whatever refits or copies ask (before: each refit or copy had its own 10)."""
    import copy

    _, X, _ = ring
    est = _fit(ring, budget=10.0)
    windows = 1
    for rows in (X[:700], X[:600], X[:500]):  # three more windows on the same people
        make = {
            "refit": lambda rows=rows: est.fit(rows),
            "clone": lambda rows=rows: clone(est).fit(rows),
            "pickle": lambda rows=rows: pickle.loads(pickle.dumps(est)).predict(rows),
            "deepcopy": lambda rows=rows: copy.deepcopy(est).predict(rows),
        }[again]
        try:
            make()
        except BudgetExceededError:
            continue
        windows += 1
    assert windows * 4.0 <= 10.0 and windows == 2
    assert est.ledger_.spent("fitted-data", RELAXED_DP) == pytest.approx(8.0)
    assert len(est.ledger_.history(include_cancelled=False)) == 2


def test_a_grid_search_spends_one_budget_and_shows_it(ring) -> None:  # type: ignore[no-untyped-def]
    from sklearn.model_selection import GridSearchCV

    from privad.base import process_ledger

    history, X, y = ring
    est = RelaxedDPDetector(epsilon=1.0, global_sensitivity=GS, history=history, rng=0, budget=20.0)
    grid = GridSearchCV(est, {"p_o": [10.0]}, scoring="roc_auc", cv=3, refit=False)
    with pytest.warns(UserWarning):  # the folds past the budget failed
        grid.fit(X, y)
    scores = np.array([grid.cv_results_[f"split{i}_test_score"][0] for i in range(3)])
    # each fold releases its training window (fit) and its test window (score), 4 each:
    # two folds and the third's training window fill 20; its test window is refused
    assert np.isfinite(scores).tolist() == [True, True, False]
    book = process_ledger(X)
    assert book.spent("fitted-data", RELAXED_DP) == pytest.approx(20.0)
    assert len(book.history(include_cancelled=False)) == 5


def _rows(book, scope):  # type: ignore[no-untyped-def]
    """What each spend of ``scope`` says (label, guarantee, metadata) and its status."""
    return [(s.label, s.guarantee, s.metadata, s.status) for s in book.history(scope)]


def test_windows_can_be_charged_to_the_callers_ledger(ring, tmp_path) -> None:  # type: ignore[no-untyped-def]
    history, X, _ = ring
    est = RelaxedDPDetector(epsilon=1.0, global_sensitivity=GS, history=history, rng=0)
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget("study", RELAXED_DP, 10.0)
        est.fit(X, ledger=book, scope="study")
        new = est.predict(X[:700], ledger=book, scope="study")
        # the recorded windows: no new spend, whichever ledger is given
        np.testing.assert_array_equal(est.predict(X, ledger=book, scope="study"), est.labels_)
        scores = est.decision_function(X[:700], ledger=book, scope="study")
        np.testing.assert_array_equal(est.decision_function(X[:700]), scores)
        assert [s.epsilon for s in book.history("study")] == pytest.approx([4.0, 4.0])
        assert all(s.guarantee == est.guarantee_ for s in book.history("study"))
        assert est.ledger_.history() == []  # the estimator's own ledger is untouched
        charged = _rows(book, "study")
    # the same rows as the default charges to ledger_ (the same windows, the same seed)
    default = _fit(ring)
    np.testing.assert_array_equal(default.labels_, est.labels_)
    np.testing.assert_array_equal(default.predict(X[:700]), new)
    assert _rows(default.ledger_, "fitted-data") == charged


def test_a_window_a_given_ledger_refuses_releases_nothing(ring, tmp_path, assert_refused) -> None:  # type: ignore[no-untyped-def]
    history, X, _ = ring
    est = RelaxedDPDetector(epsilon=1.0, global_sensitivity=GS, history=history, rng=0)
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget("study", RELAXED_DP, 3.0)  # one window costs 4
        with pytest.raises(BudgetExceededError):
            est.fit(X, ledger=book, scope="study")
        assert not hasattr(est, "labels_") and not hasattr(est, "calibration_")
        est.fit(X[:1000])  # charged to ledger_
        charge = {"ledger": book, "scope": "study"}
        calls = [
            partial(m, X[500:], **charge) for m in (est.fit, est.predict, est.decision_function)
        ]
        assert_refused(est, BudgetExceededError, *calls)
        # no budget for this scope in the ledger
        assert_refused(est, NoBudgetError, partial(est.predict, X[500:], ledger=book, scope="s"))
        assert book.history(include_cancelled=True) == []
    assert len(est.ledger_.history()) == 1
    est.predict(X[500:])  # nothing was recorded for these records: a new window, charged
    assert len(est.ledger_.history()) == 2


def test_a_ledger_needs_a_scope(ring) -> None:  # type: ignore[no-untyped-def]
    history, X, _ = ring
    est = RelaxedDPDetector(epsilon=1.0, global_sensitivity=GS, history=history, rng=0)
    book = Ledger(":memory:")
    with pytest.raises(ParameterError, match="both ledger and scope.*got ledger only"):
        est.fit(X, ledger=book)
    assert not hasattr(est, "calibration_")  # raised before anything was computed
    est.fit(X)
    for method in (est.predict, est.decision_function):
        with pytest.raises(ParameterError, match="both ledger and scope.*got ledger only"):
            method(X[:100], ledger=book)
        with pytest.raises(ParameterError, match="both ledger and scope.*got scope only"):
            method(X[:100], scope="study")
    assert len(est.ledger_.history()) == 1 and book.history() == []
