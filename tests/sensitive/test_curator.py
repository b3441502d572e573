"""The sensitive-privacy curator (privad.sensitive.curator): online charging, records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privad.accounting import Ledger
from privad.datasets import load
from privad.errors import BudgetExceededError, DataError, ParameterError, PrivacyWarning
from privad.sensitive import DPMechanism, SensitiveAnomalyIdentifier, SPMechanism
from privad.sensitive.accounting import claim5_bound
from privad.sensitive.curator import Curator, OnlineClaim5

MECH = SPMechanism(18, 0.1, 0.1)


@pytest.fixture(scope="module")
def thyroid() -> np.ndarray:
    return load("thyroid").X


def _curator(
    tmp_path: Path, X: np.ndarray, *, budget: float = 50.0, rng: int = 5, mech=MECH, name: str = "c"
) -> tuple[Curator, Ledger]:
    book = Ledger(tmp_path / f"{name}-ledger.sqlite")
    return Curator(
        X, mech, ledger=book, store=tmp_path / f"{name}.sqlite", budget=budget, rng=rng
    ), book


def test_answers_equal_the_library_for_the_same_seed(tmp_path, thyroid) -> None:
    cur, book = _curator(tmp_path, thyroid, budget=1000)
    got = cur.ask("alice", ids=list(range(thyroid.shape[0])))  # one request: one draw
    lib = SensitiveAnomalyIdentifier(18, 0.1, 0.1, rng=5).fit(thyroid).predict()
    np.testing.assert_array_equal(got.answers, lib)
    Q = thyroid[1000:1100] + 0.004
    cur2, _ = _curator(tmp_path, thyroid, name="c2")
    got = cur2.ask("bob", records=Q)
    lib = SensitiveAnomalyIdentifier(18, 0.1, 0.1, rng=5).fit(thyroid).predict(Q)
    np.testing.assert_array_equal(got.answers, lib)


def test_a_large_epsilon_is_warned_about_once(tmp_path) -> None:
    """Issue 30: the curator answers with the mechanism it is given, never one rebuilt from
    its parameters, so ε = 25 (above the per-answer warning level of 20) is validated and
    warned about once, when the mechanism is made."""
    with pytest.warns(PrivacyWarning) as caught:
        mech = SPMechanism(beta=1, r=0.5, epsilon=25.0)
        cur, _ = _curator(tmp_path, np.array([[0.0], [0.1], [5.0]]), budget=100, mech=mech)
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert str(caught[0].message).startswith("epsilon = 25 per answer protects (almost) nothing")
    assert cur.mechanism is mech
    assert cur.ask("alice", ids=[2, 2]).charged == 25.0  # ε per distinct id (Claim 3)


def test_online_charge_is_the_2r_bound_of_the_final_set_in_any_order(
    tmp_path, thyroid, online_claim5_m
) -> None:
    """The online charge is ε·m of the final vector set with m its 2r bound (min with |V|),
    whatever the order and the batching; the batch bound (box search) can only be lower."""
    cur, book = _curator(tmp_path, thyroid, budget=1000)
    rng = np.random.default_rng(1)
    Q = np.unique(thyroid[rng.choice(thyroid.shape[0], 300, replace=False)] + 0.002, axis=0)
    Q = Q[rng.permutation(Q.shape[0])]  # distinct questions (repeats are one question)
    charged = [cur.ask("bob", records=Q[s : s + 23]).charged for s in range(0, Q.shape[0], 23)]
    for s in range(0, Q.shape[0], 41):  # another querier: another order, other batches
        cur.ask("carol", records=Q[::-1][s : s + 41])
    m = online_claim5_m(Q, 0.1)
    assert m >= claim5_bound(Q, 0.1).m
    assert book.spent("curator/bob", "sensitive") == pytest.approx(m * 0.1)
    assert book.spent("curator/carol", "sensitive") == pytest.approx(m * 0.1)
    assert sum(charged) == pytest.approx(m * 0.1)
    assert 0.0 in charged or len(set(charged)) > 1  # the online increments vary
    online = OnlineClaim5(0.1, "euclidean", thyroid.shape[1])
    online.add(Q, online.with_new(Q)[1])
    assert online.bound.m == m


def test_id_charges_do_not_depend_on_the_data(tmp_path, thyroid) -> None:
    other = thyroid[::-1].copy() * 3.0  # other data, same n and d
    spent = []
    for name, X in (("a", thyroid), ("b", other)):
        cur, book = _curator(tmp_path, X, name=name)
        cur.ask("q", ids=[1, 2, 3, 2])  # 3 distinct ids: 0.3
        cur.ask("q", ids=[3, 4])  # 1 new id: 0.1
        spent.append(book.spent("curator/q", "sensitive"))
    assert spent[0] == spent[1] == pytest.approx(0.4)


def test_repeats_are_free_and_refusals_spend_nothing(tmp_path, thyroid) -> None:
    cur, book = _curator(tmp_path, thyroid, budget=1.0)
    first = cur.ask("alice", ids=list(range(8)))
    again = cur.ask("alice", ids=list(range(8))[::-1])
    assert again.answers == first.answers[::-1] and again.charged == 0.0
    with pytest.raises(BudgetExceededError, match="alice"):
        cur.ask("alice", ids=list(range(8, 11)))  # 0.3 > 0.2 left
    assert book.spent("curator/alice", "sensitive") == pytest.approx(0.8)
    assert cur.ask("alice", ids=[8, 9]).charged == pytest.approx(0.2)
    # another querier gets the recorded answers, and is charged for its own first asks
    bob = cur.ask("bob", ids=[0, 1])
    assert bob.answers == first.answers[:2] and bob.charged == pytest.approx(0.2)


def test_records_survive_a_restart(tmp_path, thyroid, online_claim5_m) -> None:
    cur, book = _curator(tmp_path, thyroid)
    a = cur.ask("alice", ids=[5, 6, 7])
    Q = thyroid[:30] + 0.01
    b = cur.ask("bob", records=Q[:20])
    cur.close()
    book.close()
    cur, book = _curator(tmp_path, thyroid, rng=99)  # another seed: no new draws needed
    assert cur.ask("alice", ids=[7, 6, 5]).answers == a.answers[::-1]
    assert cur.ask("bob", records=Q[:20]).answers == b.answers
    cur.ask("bob", records=Q[20:])  # the online bound continues from the stored vectors
    assert book.spent("curator/bob", "sensitive") == pytest.approx(online_claim5_m(Q, 0.1) * 0.1)
    cur.close()
    with pytest.raises(ParameterError, match="other data or other mechanism"):
        Curator(
            thyroid, SPMechanism(18, 0.2, 0.1), ledger=book, store=tmp_path / "c.sqlite", budget=1.0
        )


def test_the_per_record_exposure_accumulates_and_survives_a_restart(
    tmp_path, thyroid, online_claim5_m
) -> None:
    from privad.geometry import ball_counts

    cur, book = _curator(tmp_path, thyroid)
    cur.ask("alice", ids=[5, 6, 7])
    cur.ask("alice", ids=[7, 8])  # one new id
    Q = thyroid[100:104] + 0.01
    cur.close()
    book.close()
    cur, book = _curator(tmp_path, thyroid)  # rebuilt from the store
    cur.ask("alice", records=Q)
    rows = [s.metadata["per_record"] for s in book.history("curator/alice")]
    points = np.vstack([thyroid[[5, 6, 7, 8]], Q])
    counts = ball_counts(points, 0.1, queries=thyroid)
    assert [r["m"] for r in rows] == [3, 4, 4 + online_claim5_m(Q, 0.1)]
    assert rows[-1]["max"] == int(counts.max())
    assert rows[-1]["median"] == int(np.quantile(counts, 0.5, method="higher"))
    assert rows[-1]["untouched"] == int((counts == 0).sum())


def test_bad_requests_are_refused_before_any_charge(tmp_path, thyroid) -> None:
    cur, book = _curator(tmp_path, thyroid)
    bad = [
        {"ids": [thyroid.shape[0]]},
        {"ids": [-1]},
        {"ids": []},
        {"ids": [0.5]},
        {"records": np.zeros((2, 3))},
        {"records": [[np.nan] * 6]},
        {"records": []},
        {"ids": [1], "records": thyroid[:1]},
        {},
        {"ids": [1], "add_query_to_data": True},
    ]
    for kwargs in bad:
        with pytest.raises((DataError, ParameterError)):
            cur.ask("eve", **kwargs)
    with pytest.raises(DataError, match="at most"):
        cur.ask("eve", ids=np.zeros(100_001, np.int64))
    assert book.history() == []


def test_a_dp_curator_charges_pure_dp(tmp_path, thyroid) -> None:
    cur, book = _curator(tmp_path, thyroid, mech=DPMechanism(18, 0.1, 0.5), name="dp")
    cur.ask("q", ids=[0, 1])
    assert book.spent("curator/q", "pure-dp") == pytest.approx(1.0)
    assert cur.describe()["guarantee"]["notion"] == "pure-dp"


@pytest.mark.parametrize("brute_pairs", [0, 10**9])
def test_online_bound_engines_agree(monkeypatch, thyroid, online_claim5_m, brute_pairs) -> None:
    """Brute force (few pairs) and the tree engine give the same online bound, the 2r bound
    of every pair, never below the batch bound."""
    import privad.sensitive.curator as curator_module

    monkeypatch.setattr(curator_module, "_BRUTE_PAIRS", brute_pairs)
    Q = np.unique(np.round(thyroid[:400], 2), axis=0)  # rounded: pairs at exactly 2r
    online = OnlineClaim5(0.05, "euclidean", Q.shape[1])
    for s in range(0, Q.shape[0], 37):
        online.add(Q[s : s + 37], online.with_new(Q[s : s + 37])[1])
    assert online.bound.m == online_claim5_m(Q, 0.05)
    assert online.bound.upper >= claim5_bound(Q, 0.05).upper


def test_data_outside_the_public_domain_is_refused_when_the_curator_starts(tmp_path) -> None:
    """Issue 26 item 1: the data owner's problem, one error at start, never a refusal per
    question; with public bounds the same data is served (the feature mapped to [0, 1])."""
    X = np.vstack([np.random.default_rng(0).uniform(1, 10, (30, 2)), [[1e-160, 5.0]]])
    with pytest.raises(DataError, match=r"cannot serve this data: record 30, feature 0"):
        _curator(tmp_path, X)
    book = Ledger(tmp_path / "c-ledger.sqlite")
    assert book.history() == []  # the refused start spent nothing
    cur = Curator(
        X,
        MECH,
        ledger=book,
        store=tmp_path / "b.sqlite",
        budget=5.0,
        rng=1,
        bounds={0: (-10.0, 10.0)},  # 1e-160 maps to 0.5
    )
    assert cur.describe()["query_domain"]["bounds"] == {"0": [-10.0, 10.0]}
    assert cur.ask("q", records=[[10.0, 5.0]]).charged == pytest.approx(0.1)
    cur.close()
    with pytest.raises(ParameterError, match="other data or other mechanism parameters"):
        Curator(
            X,
            MECH,
            ledger=book,
            store=tmp_path / "b.sqlite",
            budget=5.0,
            bounds={0: (-20.0, 20.0)},  # other bounds: other questions
        )
