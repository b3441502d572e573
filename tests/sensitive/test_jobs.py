"""``privad.sensitive.identify`` and ``choose_parameters``: one library call per job, the
same release (answers and ledger row) as the estimator, nothing written or spent on a
refusal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.accounting import Ledger
from privad.errors import BudgetExceededError, ParameterError, PrivadError
from privad.noise import Randomness
from privad.sensitive import SensitiveAnomalyIdentifier, SPMechanism, choose_parameters, identify

X = Randomness(11).uniform(size=(300, 2))
MECH = SPMechanism(beta=4, r=0.08, epsilon=0.5)


def _identify(folder: Path, scope: str, mechanism=MECH, **options):
    """identify(X) charged to ``scope`` of folder/l.sqlite (budget 10^6), to folder/SCOPE.csv."""
    options = {"budget": 1e6, **options}
    return identify(
        X,
        mechanism,
        ledger=folder / "l.sqlite",
        scope=scope,
        output=folder / f"{scope}.csv",
        **options,
    )


def _row(spend) -> tuple:
    meta = {key: value for key, value in spend.metadata.items() if key != "context"}
    return spend.label, spend.epsilon, spend.guarantee, meta


def test_identify_releases_what_the_estimator_releases(tmp_path: Path) -> None:
    res = _identify(tmp_path, "a", rng=5)
    est = SensitiveAnomalyIdentifier(4, 0.08, 0.5, rng=5).fit(X)
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget("b", "sensitive", 1e6)
        labels = est.predict(ledger=book, scope="b")
        (spend_a,), (spend_b,) = book.history("a"), book.history("b")
    np.testing.assert_array_equal(res.answers, labels)
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "a.csv")["label"], labels)
    assert _row(spend_a) == _row(spend_b)
    assert spend_a.metadata["context"]["engine"] == "numba"
    assert res.guarantee.epsilon == spend_a.epsilon == 0.5 * min(300, res.bound.m)
    assert res.remaining == pytest.approx(1e6 - spend_a.epsilon)
    assert res.flagged == int(labels.sum()) and (res.n_records, res.n_features) == (300, 2)


def test_a_refusal_writes_and_spends_nothing(tmp_path: Path) -> None:
    out = tmp_path / "labels.csv"
    with pytest.raises(BudgetExceededError, match="Claim 5"):
        identify(X, MECH, ledger=tmp_path / "l.sqlite", scope="s", output=out, budget=1.0)
    assert not out.exists() and not list(tmp_path.glob("*.part"))
    with Ledger(tmp_path / "l.sqlite") as book:
        assert book.spent("s", "sensitive") == 0.0 and book.history("s") == []


def test_no_ledger_file_and_no_budget_is_refused_before_anything(tmp_path: Path) -> None:
    with pytest.raises(PrivadError, match="does not exist"):
        identify(X, MECH, ledger=tmp_path / "none.sqlite", scope="s", output=tmp_path / "o.csv")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ParameterError, match="AIQMechanism"):
        identify(X, "sp", ledger=tmp_path / "l.sqlite", scope="s", output=tmp_path / "o.csv")


def test_queries_ids_and_error_columns(tmp_path: Path) -> None:
    Q = np.array([[0.5, 0.5], [5.0, 5.0]])
    res = _identify(
        tmp_path,
        "q",
        queries=Q,
        add_query_to_data=True,
        ids=["p", "far"],
        error_probabilities=True,
        rng=1,
    )
    frame = pd.read_csv(tmp_path / "q.csv")
    assert list(frame.columns[:3]) == ["index", "id", "label"] and frame["id"].tolist() == [
        "p",
        "far",
    ]
    assert res.answers.size == 2 and res.bound.n == 2
    # the far query is alone (B = 1 with itself added): an anomaly, answered wrongly with
    # the exact probability e^{-ε(λ-1)}/(1 + e^ε) of Claim 2
    assert frame["error_probability_NOT_PRIVATE"][1] == pytest.approx(
        float(np.exp(MECH.log_error_probability(1, 1)))
    )


def test_a_private_radius_is_charged_first_and_used(tmp_path: Path) -> None:
    res = _identify(tmp_path, "p", SPMechanism(4, 0.0, 1.0), contamination=0.05, rng=2)
    with Ledger(tmp_path / "l.sqlite") as book:
        selection, labels = book.history("p")
    assert res.parameters["source"] == "private" and res.mechanism.r == res.parameters["r"] > 0
    assert selection.epsilon == 1.0 and labels.metadata["r"] == res.mechanism.r


def test_choose_parameters_proposes_or_selects(tmp_path: Path) -> None:
    choice = choose_parameters(X, beta=4, share=0.05)
    assert choice.selection is None and 0 < choice.anomalies.sum() <= 0.05 * 300
    private = choose_parameters(
        X,
        beta=4,
        contamination=0.05,
        private=True,
        ledger=tmp_path / "l.sqlite",
        scope="c",
        budget=5.0,
        rng=3,
    )
    assert private.selection is not None and private.r == private.selection.r
    assert private.note == "created the sensitive budget of scope 'c': total ε 5"
    with Ledger(tmp_path / "l.sqlite") as book:
        assert book.spent("c", "sensitive") == 1.0
