"""The oracles' release path: every answer recorded in a ledger before it leaves ``query``,
refusals draw nothing, restricted oracles charge the parent, and a black-box check of
ε-DP on anomaly-restricted neighbours through ``query``."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from privad.accounting import ANOMALY_RESTRICTED_DP, Ledger, NoBudgetError
from privad.errors import BudgetExceededError, ParameterError
from privad.search import (
    BinarizedOracle,
    LaplaceMaxOracle,
    MaxQueries,
    Oracle,
    PosteriorThreshold,
    make_oracle,
    search,
)
from privad.search.groups import QueryOrder

KINDS = ("laplace", "binarized", "randomized-response")
X = np.array([0.1, 0.5, 0.9, 3.0, 0.3, 0.7])
EPS = 0.5


def _oracle(kind: str, **kwargs) -> Oracle:
    return make_oracle(kind, X, 1.0, 2.0, EPS, **kwargs)


def _total(oracle: Oracle) -> float:
    return sum(s.epsilon for s in oracle.ledger.history(oracle.scope))  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", KINDS)
def test_every_answer_is_recorded_in_the_oracles_own_ledger(kind):
    oracle = _oracle(kind, rng=1)
    for k in range(7):
        oracle.query([0, 3] if k % 2 else np.arange(6) < 2)
    spends = oracle.ledger.history()  # type: ignore[union-attr]
    assert oracle.scope == "oracle" and oracle.ledger.path == ":memory:"  # type: ignore[union-attr]
    assert len(spends) == 7 and _total(oracle) == pytest.approx(7 * EPS)
    assert all(s.guarantee.notion == ANOMALY_RESTRICTED_DP and s.scope == "oracle" for s in spends)
    assert [s.metadata["query"] for s in spends] == list(range(1, 8))
    assert [s.metadata["size"] for s in spends] == [2] * 7
    assert oracle.last_spend == spends[-1]
    statement = oracle.ledger.statement()  # type: ignore[union-attr]
    assert "7 spends" in statement and statement.count(f"ε {EPS}") == 7


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_group_queries_are_fresh_and_each_charged(kind):
    oracle = _oracle(kind, rng=2)
    answers = [oracle.query([0, 1, 2]) for _ in range(40)]
    assert len(oracle.ledger.history()) == 40  # type: ignore[union-attr]
    assert len({str(a) for a in answers}) > 1  # fresh noise, not the recorded answer


@pytest.mark.parametrize("kind", KINDS)
def test_a_query_past_the_budget_is_refused_and_draws_no_noise(kind):
    oracle = _oracle(kind, rng=3, budget=2 * EPS)
    twin = _oracle(kind, rng=3)
    for _ in range(2):
        assert oracle.query([3, 4]) == twin.query([3, 4])
    with pytest.raises(BudgetExceededError, match="nothing was spent"):
        oracle.query([3, 4])
    assert len(oracle.ledger.history()) == 2  # type: ignore[union-attr]
    # the refusal drew nothing: with room made, the next answer is the twin's third
    oracle.ledger.set_budget("oracle", ANOMALY_RESTRICTED_DP, 3 * EPS)  # type: ignore[union-attr]
    assert oracle.query([3, 4]) == twin.query([3, 4])


def test_a_refusal_leaves_the_stream_where_it_was():
    oracle = LaplaceMaxOracle(X, 1.0, 2.0, EPS, rng=4, budget=EPS)
    twin = LaplaceMaxOracle(X, 1.0, 2.0, EPS, rng=4)
    oracle.query([0])
    with pytest.raises(BudgetExceededError):
        oracle.query([0], rng=None)
    oracle.ledger.set_budget("oracle", ANOMALY_RESTRICTED_DP, 4 * EPS)  # type: ignore[union-attr]
    twin.query([0])
    assert [oracle.query([1]) for _ in range(3)] == [twin.query([1]) for _ in range(3)]


def test_rng_overrides_are_charged_like_any_query():
    oracle = _oracle("laplace", rng=5)
    assert oracle.query([1, 2], rng=9) == oracle.query([1, 2], rng=9)  # same stream, twice
    assert len(oracle.ledger.history()) == 2  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", KINDS)
def test_restricted_oracles_charge_the_parent(kind):
    oracle = _oracle(kind, rng=6)
    sub = oracle.restrict([3, 0, 4])
    assert sub.ledger is oracle.ledger and sub.scope == oracle.scope
    sub.query([0])
    oracle.query([0])
    sub.restrict([0, 1]).query([1])
    spends = oracle.ledger.history()  # type: ignore[union-attr]
    assert [s.metadata["n_items"] for s in spends] == [3, 6, 2]
    assert [s.metadata["query"] for s in spends] == [1, 2, 3]


@pytest.mark.parametrize("kind", KINDS)
def test_a_given_ledger_and_scope(kind):
    with Ledger(":memory:") as book:
        book.set_budget("census", ANOMALY_RESTRICTED_DP, 3 * EPS)
        oracle = _oracle(kind, rng=7, ledger=book, scope="census")
        assert oracle.ledger is book and oracle.scope == "census"
        for _ in range(3):
            oracle.query([1, 3], metadata={"who": "test"})
        with pytest.raises(BudgetExceededError):
            oracle.query([1, 3])
        assert [s.metadata["who"] for s in book.history("census")] == ["test"] * 3
        assert book.remaining("census", ANOMALY_RESTRICTED_DP) == 0.0
        # a ledger that refuses unbudgeted scopes refuses before anything is drawn
        with pytest.raises(NoBudgetError):
            _oracle(kind, ledger=book, scope="elsewhere").query([1])


def test_account_parameters_are_checked():
    with Ledger(":memory:") as book:
        with pytest.raises(ParameterError, match="set the scope's budget on that ledger"):
            _oracle("laplace", ledger=book, budget=1.0)
    with pytest.raises(ParameterError, match="scope"):
        _oracle("laplace", scope=" ")
    with pytest.raises(ParameterError, match="Ledger"):
        _oracle("binarized", ledger="ledger.sqlite")
    with pytest.raises(ParameterError, match="budget"):
        _oracle("randomized-response", budget=0.0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_search_leaves_one_spend_per_answer(kind):
    oracle = _oracle(kind, rng=8)
    first = search(oracle, rng=1)
    second = search(oracle, budget=5.0, rng=2)
    spends = oracle.ledger.history()  # type: ignore[union-attr]
    assert len(spends) == first.n_queries + second.n_queries
    assert _total(oracle) == pytest.approx(first.epsilon_spent + second.epsilon_spent)


def test_a_search_stops_before_the_oracles_budget_refuses():
    oracle = _oracle("laplace", rng=9, budget=3 * EPS)
    res = search(oracle, halting=PosteriorThreshold(1.0 - 1e-12), max_queries=10, rng=1)
    assert (res.n_queries, res.halted_by) == (3, ("oracle-budget",))
    assert res.worst_case_guarantee.epsilon == 3 * EPS  # the oracle's cap, before the run
    assert len(oracle.ledger.history()) == 3  # type: ignore[union-attr]
    with pytest.raises(BudgetExceededError):  # asked directly, the oracle refuses
        oracle.query([0, 1])


def _brute_delta(eps: float, m: int, eps_g: float) -> float:
    """δ_m(ε_g) of the optimal composition theorem, by its binomial sum."""
    return (
        sum(
            math.comb(m, i) * max(0.0, math.exp((m - i) * eps) - math.exp(eps_g + i * eps))
            for i in range(m + 1)
        )
        / (1 + math.exp(eps)) ** m
    )


def test_a_search_halts_on_the_oracles_approximate_budget_by_hand():
    """Randomized response at ε = 1 under (5, 0.1): linear composition allows 5 answers; the
    optimal composition theorem 7, as δ_7(5) = (e^7 − e^5)/(1 + e)^7 = 0.0965 ≤ 0.1 and
    δ_8(5) = (e^8 − e^5 + 8(e^7 − e^6))/(1 + e)^8 = 0.2293 > 0.1. The search stops before the
    eighth answer and says so."""
    e = math.e
    assert (e**7 - e**5) / (1 + e) ** 7 == pytest.approx(_brute_delta(1.0, 7, 5.0))
    assert _brute_delta(1.0, 7, 5.0) == pytest.approx(0.0965, abs=1e-4)
    assert _brute_delta(1.0, 8, 5.0) == pytest.approx(0.2293, abs=1e-4)
    with Ledger(":memory:") as book:
        book.set_budget("s", ANOMALY_RESTRICTED_DP, 5.0, delta=0.1)
        oracle = make_oracle(
            "randomized-response",
            np.r_[np.zeros(99), 5.0],
            1.0,
            3.0,
            1.0,
            rng=2,
            ledger=book,
            scope="s",
        )
        assert oracle.answers_left() == 7
        res = search(oracle, halting=PosteriorThreshold(1.0 - 1e-12), rng=3)
        assert (res.n_queries, res.halted_by) == (7, ("oracle-budget",))
        assert oracle.answers_left() == 0
        b = book.budget("s", ANOMALY_RESTRICTED_DP)
        assert float(b.spent) <= 5.0 and b.delta_spent == Fraction(1, 10)
        assert _brute_delta(1.0, 7, float(b.spent)) <= 0.1  # the charge is the tight ε


def test_a_search_halts_on_a_laplace_approximate_budget():
    """The max oracle at ε = 1 under (0.9, 0.05): one answer, since the Laplace mechanism's
    δ(0.9) = 1 − e^{(0.9 − 1)/2} = 0.0488 ≤ 0.05 (linear composition: none). Under
    (30, 10⁻⁶): 33 answers, the most whose privacy-loss distribution fits (30 linearly)."""
    from privad.accounting.tight import tight_epsilon

    values = np.r_[np.zeros(99), 5.0]
    for (total, delta), want in (((0.9, 0.05), 1), ((30.0, 1e-6), 33)):
        with Ledger(":memory:") as book:
            book.set_budget("s", ANOMALY_RESTRICTED_DP, total, delta=delta)
            oracle = make_oracle("laplace", values, 1.0, 3.0, 1.0, rng=4, ledger=book, scope="s")
            res = search(oracle, halting=MaxQueries(1000), rng=5)
            assert (res.n_queries, res.halted_by) == (want, ("oracle-budget",))
            (one,) = oracle.guarantee.accounting_components
            assert float(tight_epsilon([one.times(want)], delta)) <= total
            assert float(tight_epsilon([one.times(want + 1)], delta)) > total
            assert book.budget("s", ANOMALY_RESTRICTED_DP).spent == tight_epsilon(
                [one.times(want)], delta
            )


# --------------------------------------------------------------------------------------------
# black-box ε-DP on anomaly-restricted neighbours, through query (and so the release path)
# --------------------------------------------------------------------------------------------

Z = 5.5
DRAWS = 3000


def _events(kind: str, answers: list) -> np.ndarray:
    """Output events: the bit for binary answers, bins of Y (the maximum over Q) for Laplace."""
    if kind != "laplace":
        return np.array([int(a) for a in answers])
    y = np.array([a.y for a in answers])
    return np.digitize(y, [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0])


@pytest.mark.parametrize("kind", KINDS)
def test_black_box_neighbours_ratio_is_at_most_e_eps(kind):
    # the anomaly (x_0) is shared; record 1 moves from 0 to t_l = 1 and is the maximum of Q
    x = np.array([3.0, 0.0, 0.0, 0.0])
    x2 = np.array([3.0, 1.0, 0.0, 0.0])
    eps, group = 1.0, np.array([1, 2])
    counts = []
    for data, seed in ((x, 11), (x2, 12)):
        oracle = make_oracle(kind, data, 1.0, 2.0, eps, rng=seed)
        events = _events(kind, [oracle.query(group) for _ in range(DRAWS)])
        assert len(oracle.ledger.history()) == DRAWS  # type: ignore[union-attr]
        counts.append(np.bincount(events, minlength=10))
    p1, p2 = counts[0] / DRAWS, counts[1] / DRAWS
    bound = math.exp(eps)
    for a, b in ((p1, p2), (p2, p1)):
        se = np.sqrt((a * (1 - a) + bound**2 * b * (1 - b)) / DRAWS)
        excess = a - bound * b
        assert np.all(excess <= Z * np.maximum(se, 1.0 / DRAWS)), (kind, a, b)
    if kind == "laplace":  # the check can see a difference: the laws are not identical
        assert np.abs(p1 - p2).max() > 0.05


def test_binarizing_a_local_oracle_records_through_the_base():
    base = LaplaceMaxOracle(X, 1.0, 2.0, EPS, rng=10)
    oracle = BinarizedOracle(base)
    assert oracle.ledger is base.ledger
    oracle.query(QueryOrder(np.arange(6)).prefix(3), metadata={"via": "binarized"})
    (spend,) = base.ledger.history()  # type: ignore[union-attr]
    assert spend.metadata["via"] == "binarized" and spend.label == "noisy group query (laplace)"
