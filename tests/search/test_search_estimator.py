"""NoisyBinarySearchDetector: the search over one series behind scikit-learn conventions.

scikit-learn's common checks fit data with several columns, which a search over one series
refuses (tests/test_sklearn_contract.py exempts them for that reason); the properties they
check are tested here on one-column series instead.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone, is_outlier_detector
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from privad.accounting import ANOMALY_RESTRICTED_DP, Ledger, NoBudgetError
from privad.datasets import make_search_mixture
from privad.errors import BudgetExceededError, DataError, NotFittedError, ParameterError
from privad.experiments.search_problems import problem_from_dataset
from privad.noise import Randomness
from privad.search import (
    NoisyBinarySearchDetector,
    PosteriorThreshold,
    make_oracle,
    search,
)

SCOPE = "fitted-data"


@pytest.fixture(scope="module")
def easy():  # type: ignore[no-untyped-def]
    return problem_from_dataset(make_search_mixture(n=1000, threshold_ratio=2.0, rng=21))


def _detector(problem, **options):  # type: ignore[no-untyped-def]
    options.setdefault("rng", 5)
    return NoisyBinarySearchDetector(problem.t_low, problem.t_high, epsilon=2.0, **options)


def _column(problem) -> np.ndarray:  # type: ignore[no-untyped-def]
    return problem.values.reshape(-1, 1)


def test_the_estimator_is_the_search(easy) -> None:  # type: ignore[no-untyped-def]
    est = _detector(easy, alpha=0.9).fit(_column(easy))
    # the same search through the oracle and the loop, with the estimator's child streams
    oracle_rng, search_rng = Randomness(5).spawn(2)
    oracle = make_oracle("laplace", easy.values, easy.t_low, easy.t_high, 2.0, rng=oracle_rng)
    res = search(oracle, halting=PosteriorThreshold(0.9), rng=search_rng)
    np.testing.assert_array_equal(est.decision_scores_, res.posterior)
    np.testing.assert_array_equal(est.top_, res.top)
    assert est.n_queries_ == res.n_queries and est.guarantee_ == res.guarantee
    # found: exactly the planted anomaly is labelled (f_T > α = 0.9)
    assert est.anomaly_ == easy.anomaly_index and est.threshold_ == 0.9
    np.testing.assert_array_equal(np.flatnonzero(est.labels_), [easy.anomaly_index])
    assert is_outlier_detector(est)


def test_every_answer_is_in_the_ledger_and_a_series_is_searched_once(easy) -> None:  # type: ignore[no-untyped-def]
    est = _detector(easy).fit(_column(easy))
    spends = est.ledger_.history(SCOPE)
    assert len(spends) == est.n_queries_ > 0
    assert all(s.notion == ANOMALY_RESTRICTED_DP and s.epsilon == 2.0 for s in spends)
    assert est.guarantee_.epsilon == pytest.approx(2.0 * est.n_queries_)
    # the same series, or permuted: the recorded search, no new answers
    np.testing.assert_array_equal(est.predict(_column(easy)), est.labels_)
    order = np.random.default_rng(1).permutation(easy.n_items)
    np.testing.assert_array_equal(
        est.decision_function(_column(easy)[order]), est.decision_scores_[order]
    )
    assert len(est.ledger_.history(SCOPE)) == est.n_queries_
    # a different series is a new search, charged to the same scope
    scores = est.decision_function(_column(easy)[:300])
    assert scores.shape == (300,) and scores.sum() == pytest.approx(1.0)
    assert len(est.ledger_.history(SCOPE)) > est.n_queries_


def test_a_budget_halts_the_search_and_then_refuses(easy) -> None:  # type: ignore[no-untyped-def]
    est = _detector(easy, budget=5.0, alpha=0.999).fit(_column(easy))
    # (2 + 1)·2 > 5: the search's budget rule and the oracle's ledger agree
    assert est.n_queries_ == 2 and set(est.result_.halted_by) == {"budget", "oracle-budget"}
    assert est.ledger_.remaining(SCOPE, ANOMALY_RESTRICTED_DP) == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError, match="less than one answer"):
        est.predict(_column(easy)[::-1].copy()[:500])  # a new series: nothing left
    assert len(est.ledger_.history(SCOPE)) == 2


@pytest.mark.parametrize("kind", ["binarized", "randomized-response"])
def test_other_oracles(easy, kind) -> None:  # type: ignore[no-untyped-def]
    est = _detector(easy, oracle=kind, alpha=0.9).fit(_column(easy))
    assert est.anomaly_ == easy.anomaly_index
    assert len(est.ledger_.history(SCOPE)) == est.n_queries_


def test_no_anomaly_with_absent_prior() -> None:
    values = np.linspace(0.0, 1.0, 200).reshape(-1, 1)  # every value normal (<= t_l = 1)
    est = NoisyBinarySearchDetector(1.0, 3.0, epsilon=2.0, absent_prior=0.5, alpha=0.9, rng=2).fit(
        values
    )
    assert est.result_.absent_probability > 0.9 and est.labels_.sum() == 0
    assert est.decision_scores_.sum() == pytest.approx(1.0 - est.result_.absent_probability)


def test_the_data_model_and_parameters_are_checked(easy) -> None:  # type: ignore[no-untyped-def]
    est = _detector(easy)
    with pytest.raises(DataError, match="one column"):
        est.fit(np.c_[easy.values, easy.values])
    with pytest.raises(ValueError, match="2D array"):
        est.fit(easy.values)  # 1-D input, as scikit-learn refuses it
    between = _column(easy).copy()
    between[0, 0] = (easy.t_low + easy.t_high) / 2
    with pytest.raises(DataError, match="strictly between"):
        est.fit(between)
    with pytest.raises(DataError, match="negative"):
        est.fit(-_column(easy))
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError):
            est.fit(np.r_[_column(easy), [[bad]]])
    with pytest.raises(ParameterError, match="t_high must be > t_low"):
        NoisyBinarySearchDetector(2.0, 1.0, epsilon=1.0).fit(_column(easy))
    with pytest.raises(ParameterError, match="alpha"):
        _detector(easy, alpha=1.0).fit(_column(easy))
    with pytest.raises(ParameterError, match="oracle"):
        _detector(easy, oracle="max").fit(_column(easy))
    with pytest.raises(NotFittedError):
        _detector(easy).predict(_column(easy))


def test_scikit_learn_contract_on_one_column(easy) -> None:  # type: ignore[no-untyped-def]
    X = _column(easy)
    est = _detector(easy)
    params = est.get_params()
    assert est.fit(X) is est and est.get_params() == params  # returns self, params untouched
    # idempotent with a seed, whatever the memory layout; float32 input is read as float64
    again = clone(est).fit(np.asfortranarray(X))
    np.testing.assert_array_equal(again.decision_scores_, est.decision_scores_)
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(
        clone(est).fit(X32).decision_scores_,
        clone(est).fit(X32.astype(np.float64)).decision_scores_,
    )
    ints = clone(est).fit(np.round(X * 1000).astype(np.int64))  # another series (scaled)
    assert ints.n_features_in_ == 1
    # one process, one series: est and its clone's fit share one ledger
    assert len(est.ledger_.history(SCOPE)) == est.n_queries_ + again.n_queries_
    # pickling keeps the record: the fitted series gets its recorded answers
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.predict(X), est.labels_)
    assert len(copy.ledger_.history(SCOPE)) == est.n_queries_ + again.n_queries_
    # feature names, and a pipeline with a one-column transformer
    frame = pd.DataFrame({"value": easy.values})
    named = clone(est).fit(frame)
    assert list(named.feature_names_in_) == ["value"]
    with pytest.raises(ValueError, match="feature names"):
        named.predict(frame.rename(columns={"value": "other"}))
    pipe = make_pipeline(FunctionTransformer(np.abs), clone(est)).fit(X)
    np.testing.assert_array_equal(pipe.predict(X), est.labels_)


@pytest.mark.parametrize("again", ["refit", "clone", "pickle", "deepcopy"])
def test_refits_and_copies_share_the_budget(easy, again) -> None:  # type: ignore[no-untyped-def]
    """Issue 26: under budget=10 at ε = 2 at most 5 answers are released in this process,
    whatever refits or copies ask (before: each refit or copy had its own 10)."""
    import copy

    X = _column(easy)
    est = _detector(easy, budget=10.0, alpha=0.999)
    answers = est.fit(X[:600]).n_queries_
    for rows in (X, X[:800], X[::-1].copy()):
        other = {
            "refit": lambda: est,
            "clone": lambda: clone(est),
            "pickle": lambda: pickle.loads(pickle.dumps(est)),
            "deepcopy": lambda: copy.deepcopy(est),
        }[again]()
        try:
            answers += other.fit(rows).n_queries_
        except BudgetExceededError:
            continue
    assert 0 < answers * 2.0 <= 10.0
    assert len(est.ledger_.history(SCOPE)) == answers
    assert est.ledger_.spent(SCOPE, ANOMALY_RESTRICTED_DP) == pytest.approx(2.0 * answers)


def _rows(book, scope):  # type: ignore[no-untyped-def]
    """What each spend of ``scope`` says (label, guarantee, metadata) and its status."""
    return [(s.label, s.guarantee, s.metadata, s.status) for s in book.history(scope)]


def test_searches_can_be_charged_to_the_callers_ledger(easy, tmp_path) -> None:  # type: ignore[no-untyped-def]
    X = _column(easy)
    est = _detector(easy, alpha=0.9)
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget("study", ANOMALY_RESTRICTED_DP, 400.0)
        est.fit(X, ledger=book, scope="study")
        spends = book.history("study")
        assert len(spends) == est.n_queries_ > 0
        assert all(s.notion == ANOMALY_RESTRICTED_DP and s.epsilon == 2.0 for s in spends)
        assert book.spent("study", ANOMALY_RESTRICTED_DP) == pytest.approx(est.guarantee_.epsilon)
        # the recorded search: no new answers, whichever ledger is given
        np.testing.assert_array_equal(est.predict(X, ledger=book, scope="study"), est.labels_)
        scores = est.decision_function(X[:300], ledger=book, scope="study")  # a new series
        assert len(book.history("study")) > est.n_queries_
        np.testing.assert_array_equal(est.decision_function(X[:300]), scores)
        assert est.ledger_.history() == []  # the estimator's own ledger is untouched
        charged = _rows(book, "study")
    # the same rows as the default charges to ledger_ (the same searches, the same seed)
    default = _detector(easy, alpha=0.9).fit(X)
    np.testing.assert_array_equal(default.decision_function(X[:300]), scores)
    assert _rows(default.ledger_, SCOPE) == charged


def test_a_search_a_given_ledger_refuses_releases_nothing(easy, tmp_path, assert_refused) -> None:  # type: ignore[no-untyped-def]
    X = _column(easy)
    est = _detector(easy)
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget("study", ANOMALY_RESTRICTED_DP, 1.0)  # one answer costs 2
        with pytest.raises(BudgetExceededError, match="less than one answer"):
            est.fit(X, ledger=book, scope="study")
        assert not hasattr(est, "labels_") and not hasattr(est, "decision_scores_")
        est.fit(X[:600])  # charged to ledger_
        series = X[300:]
        assert_refused(
            est,
            BudgetExceededError,
            lambda: est.fit(series, ledger=book, scope="study"),
            lambda: est.predict(series, ledger=book, scope="study"),
            lambda: est.decision_function(series, ledger=book, scope="study"),
            match="less than one answer",
        )
        # no budget for this scope in the ledger
        assert_refused(est, NoBudgetError, lambda: est.predict(series, ledger=book, scope="s"))
        assert book.history(include_cancelled=True) == []
    answers = len(est.ledger_.history())
    est.predict(X[300:])  # nothing was recorded for this series: a new search, charged
    assert len(est.ledger_.history()) > answers


def test_a_ledger_needs_a_scope(easy) -> None:  # type: ignore[no-untyped-def]
    X = _column(easy)
    est = _detector(easy)
    book = Ledger(":memory:")
    with pytest.raises(ParameterError, match="both ledger and scope.*got ledger only"):
        est.fit(X, ledger=book)
    assert not hasattr(est, "rng_")  # raised before anything was computed
    est.fit(X)
    answers = len(est.ledger_.history())
    for method in (est.predict, est.decision_function):
        with pytest.raises(ParameterError, match="both ledger and scope.*got ledger only"):
            method(X[:300], ledger=book)
        with pytest.raises(ParameterError, match="both ledger and scope.*got scope only"):
            method(X[:300], scope="study")
    assert len(est.ledger_.history()) == answers and book.history() == []
