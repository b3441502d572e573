"""SensitiveAnomalyIdentifier's contamination contract (PyOD's convention, issue 27), no
collapse on the embedded data, and where (β, r) came from in every spend."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from privad.accounting import Ledger
from privad.base import contamination_threshold
from privad.datasets import load
from privad.errors import ParameterError
from privad.sensitive import SensitiveAnomalyIdentifier, propose_parameters, select_radius


@pytest.fixture(scope="module")
def thyroid() -> np.ndarray:
    return load("thyroid").X  # features in [0, 1]


@pytest.fixture(scope="module")
def breastw() -> np.ndarray:
    return (load("breastw").X - 1.0) / 9.0  # the public range 1..10 of every feature


def _released(est: SensitiveAnomalyIdentifier) -> np.ndarray:
    """The recorded (released) answers of the fitted records."""
    return est.answers_.positions(("self",), est.n_records_).astype(np.int64)


@pytest.mark.parametrize("c", [0.01, 0.05, 0.2])
@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_labels_flag_the_top_c_share_of_the_released_scores(thyroid, c, eps) -> None:
    est = SensitiveAnomalyIdentifier(18, 0.1, eps, contamination=c, count_cap="auto", rng=3).fit(
        thyroid
    )
    scores, labels = est.decision_scores_, est.labels_
    n = thyroid.shape[0]
    assert est.threshold_ == contamination_threshold(scores, c)
    np.testing.assert_array_equal(labels, scores > est.threshold_)
    assert abs(labels.sum() - c * n) <= 1 and c / 2 <= labels.mean() <= 2 * c  # no collapse
    answers = _released(est)
    np.testing.assert_array_equal(scores > 0, answers == 1)  # the released answers, ordered
    assert np.all((scores >= 1.0) | (scores < -0.5)) and len(np.unique(scores)) == n
    # a released 0 is flagged only when every released 1 is, and conversely
    assert not (labels[answers == 0].any() and not labels[answers == 1].all())
    assert len(est.ledger_.history()) == 1  # one release; the rest is post-processing
    np.testing.assert_array_equal(est.predict(), labels)
    assert len(est.ledger_.history()) == 1


def test_without_contamination_the_labels_are_the_released_answers(thyroid) -> None:
    est = SensitiveAnomalyIdentifier(18, 0.1, 1.0, count_cap="auto", rng=3).fit(thyroid)
    assert est.threshold_ == 0.0
    np.testing.assert_array_equal(est.labels_, est.predict())
    np.testing.assert_array_equal(est.decision_scores_, np.where(est.predict() == 1, 1.0, -1.0))
    assert len(est.ledger_.history()) == 1


def test_scores_of_queries_are_stable_and_use_the_fitted_threshold(thyroid) -> None:
    est = SensitiveAnomalyIdentifier(18, 0.1, 1.0, contamination=0.05, count_cap="auto", rng=4).fit(
        thyroid
    )
    Q = thyroid[:40] + 0.01
    s = est.decision_function(Q)
    np.testing.assert_array_equal(est.decision_function(Q), s)  # recorded answers, same ties
    np.testing.assert_array_equal(est.predict(Q), s > est.threshold_)
    assert len(est.ledger_.history()) == 2  # the queries, and the fitted records (threshold)


def test_unfitted_and_clone() -> None:
    est = SensitiveAnomalyIdentifier(5, "private", 1.0, contamination=0.1, blocks=20)
    assert not hasattr(est, "labels_") and not hasattr(est, "decision_scores_")
    params = clone(est).get_params()
    assert (params["contamination"], params["r"], params["blocks"]) == (0.1, "private", 20)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"r": "private"}, "give contamination"),
        ({"r": "data"}, "give contamination"),
        ({"r": "median", "contamination": 0.1}, "'private', 'data'"),
        ({"r": 0.1, "contamination": 0.7}, "contamination"),
        ({"r": -1.0}, "r"),
    ],
)
def test_bad_r_and_contamination(thyroid, kwargs, match) -> None:
    with pytest.raises(ParameterError, match=match):
        SensitiveAnomalyIdentifier(18, epsilon=1.0, **kwargs).fit(thyroid)


def test_r_from_the_data_says_so(thyroid) -> None:
    est = SensitiveAnomalyIdentifier(
        20, "data", 1.0, contamination=0.05, count_cap="auto", rng=0
    ).fit(thyroid)
    assert est.r_ == propose_parameters(thyroid, contamination=0.05, beta=20)[1]
    assert est.mechanism_.r == est.r_ and est.selection_ is None
    est.predict()
    (spend,) = est.ledger_.history()
    where = spend.metadata["context"]["parameters"]
    assert (where["source"], where["beta"], where["r"]) == ("data", 20, est.r_)
    assert where["how"].startswith("NOT PRIVATE")


def test_the_private_route_end_to_end(thyroid) -> None:
    est = SensitiveAnomalyIdentifier(
        20, "private", 1.0, contamination=0.05, selection_epsilon=2.0, count_cap="auto", rng=0
    ).fit(thyroid)
    labels = est.labels_
    selection, release = est.ledger_.history()
    assert selection.guarantee == est.selection_.guarantee and selection.epsilon == 2.0
    assert selection.guarantee.k == 1 and selection.guarantee.notion == "sensitive"
    where = release.metadata["context"]["parameters"]
    assert (where["source"], where["spend_id"], where["r"]) == ("private", selection.id, est.r_)
    assert release.metadata["r"] == est.r_
    assert 0.025 <= labels.mean() <= 0.1
    # NOT PRIVATE check of the chosen r: about c of the records are (β, r)-anomalies
    assert 0.025 <= est.true_labels().mean() <= 0.1


def test_a_refit_recalls_the_private_selection(thyroid) -> None:
    """A repeated request gets the recorded answer: refitting (or a clone) on the same records
    with the same public inputs reuses the selection, with no new draw and no new spend."""
    from sklearn.base import clone

    est = SensitiveAnomalyIdentifier(20, "private", 1.0, contamination=0.05, rng=0)
    first = est.fit(thyroid).selection_
    again = clone(est).set_params(rng=1).fit(thyroid)
    assert again.selection_ is first and again.r_ == est.r_
    assert [s.label for s in est.ledger_.history()] == [first.spend.label]  # charged once
    other = SensitiveAnomalyIdentifier(20, "private", 1.0, contamination=0.1, rng=0).fit(thyroid)
    assert other.selection_ is not first and len(est.ledger_.history()) == 2  # new inputs


def test_an_earlier_private_selection_is_reused(thyroid) -> None:
    with Ledger(":memory:", unbudgeted="record") as book:
        sel = select_radius(thyroid, 20, 0.05, 1.0, ledger=book, scope="t", rng=1)
    est = SensitiveAnomalyIdentifier(20, sel, 1.0, count_cap="auto", rng=0).fit(thyroid)
    assert est.r_ == sel.r and est.parameters_ == sel.provenance()
    est.predict()
    assert len(est.ledger_.history()) == 1  # the selection was charged to its own ledger
    with pytest.raises(ParameterError, match="β = 20"):
        SensitiveAnomalyIdentifier(19, sel, 1.0).fit(thyroid)


def _expected_share(est: SensitiveAnomalyIdentifier) -> float:
    """NOT PRIVATE: the expected share of records the released answers flag."""
    t, e = est.true_labels(), est.error_probability()
    return float(np.where(t == 1, 1.0 - e, e).mean())


@pytest.mark.parametrize("name", ["thyroid", "breastw"])
@pytest.mark.parametrize("c", [0.05, 0.1])
@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_the_papers_rule_with_r_aimed_at_c_does_not_collapse(request, name, c, eps) -> None:
    X = request.getfixturevalue(name)
    est = SensitiveAnomalyIdentifier(20, "data", eps, contamination=c, count_cap="auto").fit(X)
    assert c / 2 <= _expected_share(est) <= 2 * c


def test_where_the_papers_rule_cannot_keep_the_share(breastw) -> None:
    # 683 records, β = 5, c = 0.01 (6 anomalies): at ε = 0.1 the normal records near the
    # boundary are flagged with probability up to 1/(1 + e^0.1) = 0.475, and the released
    # answers flag more than 2c in expectation. Only the contamination rule keeps c there.
    def est(eps):
        return SensitiveAnomalyIdentifier(5, "data", eps, contamination=0.01).fit(breastw)

    assert _expected_share(est(0.1)) > 0.02
    assert 0.005 <= _expected_share(est(1.0)) <= 0.02
    assert 0.005 <= est(0.1).labels_.mean() <= 0.02
