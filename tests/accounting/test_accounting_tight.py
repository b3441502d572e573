"""(ε, δ) accounting: the optimal composition formula, dp-accounting, and (ε, δ) budgets."""

from __future__ import annotations

import itertools
import math
import sqlite3
from fractions import Fraction

import pytest

from privad.accounting import Guarantee, Ledger, per_ball, scaled, sequential
from privad.accounting.planner import answers_within
from privad.accounting.tight import (
    Component,
    optimal_delta,
    optimal_epsilon,
    pld_epsilon,
    rdp_epsilon,
    tight_epsilon,
)
from privad.errors import BudgetExceededError, ParameterError

REL = "add or remove one record"


def _brute_delta(eps: float, m: int, eps_g: float) -> float:
    """δ of m binary randomized responses by enumerating all 2^m outputs."""
    p = math.exp(eps) / (1 + math.exp(eps))
    total = 0.0
    for out in itertools.product((0, 1), repeat=m):
        ones = sum(out)
        px = p**ones * (1 - p) ** (m - ones)
        py = (1 - p) ** ones * p ** (m - ones)
        total += max(0.0, px - math.exp(eps_g) * py)
    return total


@pytest.mark.parametrize(("eps", "m", "eps_g"), [(0.5, 1, 0.2), (0.3, 4, 0.5), (1.0, 7, 2.0)])
def test_optimal_delta_is_the_binomial_sum(eps: float, m: int, eps_g: float) -> None:
    assert optimal_delta(eps, m, eps_g) == pytest.approx(_brute_delta(eps, m, eps_g), rel=1e-12)


@pytest.mark.parametrize(("eps", "m", "delta"), [(0.5, 5, 1e-3), (0.2, 12, 1e-4), (1.0, 3, 0.05)])
def test_optimal_epsilon_is_the_smallest_valid_on_the_grid(eps, m, delta) -> None:
    g = optimal_epsilon(eps, m, delta)
    assert _brute_delta(eps, m, float(g)) <= delta
    assert g == m * Fraction(repr(eps)) or _brute_delta(eps, m, float(g) - 2e-6) > delta


def test_thyroid_batch_figures_of_the_issue() -> None:
    # 1,825 answers of ε = 0.1 that can each touch one record (Claim 5's m).
    g6 = optimal_epsilon(0.1, 1825, 1e-6)
    assert float(g6) == pytest.approx(28.674131, abs=2e-6) and g6 <= 30
    assert float(optimal_epsilon(0.1, 1825, 1e-9)) == pytest.approx(33.993817, abs=2e-6)
    assert optimal_delta(0.1, 1825, float(g6)) <= 1e-6
    # the library (asked at 0.99·δ) is a hair above; the Rényi accountant is looser
    assert float(g6) <= pld_epsilon([Component.pure(0.1, 1825)], 1e-6) < float(g6) + 0.01
    assert float(g6) < rdp_epsilon([Component.pure(0.1, 1825)], 1e-6) < 182.5


def test_laplace_search_by_pld() -> None:
    value = tight_epsilon([Component.laplace(1.0, 1.0, 232)], 1e-6)
    assert 140.4 < float(value) < 140.6  # the pure-ε optimum would be 166.7
    pure = tight_epsilon([Component.pure(1.0, 232)], 1e-6)
    assert float(pure) == pytest.approx(166.6974, abs=1e-3)


def test_components_follow_composition() -> None:
    one = Guarantee("pure-dp", 0.1, REL)
    assert one.components == ()
    assert scaled(one, 5).components == (Component.pure(0.1, 5),)
    assert sequential([scaled(one, 2), one]).components == (Component.pure(0.1, 3),)
    assert per_ball([one, one], 4).components == (Component.pure(0.1, 4),)
    g = scaled(one, 7)
    assert Guarantee.from_dict(g.to_dict()) == g
    with pytest.raises(ParameterError, match="linear sum"):
        Guarantee("pure-dp", 1.0, REL, components=(Component.pure(0.1, 3),))


def _thyroid() -> Guarantee:
    return scaled(Guarantee("sensitive", 0.1, "k-sensitive graph", k=1), 1825)


def test_ledger_charges_the_tight_epsilon_and_shows_the_pure_one() -> None:
    with Ledger(":memory:") as book:
        book.set_budget("thyroid", "sensitive", 30.0, delta=1e-6)
        s = book.spend("thyroid", _thyroid(), "labels")
        assert s.epsilon == 182.5 and s.tight_epsilon == pytest.approx(28.674131)
        assert s.delta == 1e-6
        b = book.budget("thyroid", "sensitive")
        assert b.spent == Fraction(28674131, 10**6) and b.delta_spent == Fraction(1, 10**6)
        text = book.statement()
        assert "182.5" in text and "28.674131" in text
        book.verify()
        # δ is used up: a further batch is charged its pure ε, and refused
        with pytest.raises(BudgetExceededError, match="δ"):
            book.spend("thyroid", _thyroid(), "again")


def test_ledger_refuses_a_batch_beyond_an_approximate_budget() -> None:
    with Ledger(":memory:") as book:
        book.set_budget("t", "sensitive", 25.0, delta=1e-6)
        with pytest.raises(BudgetExceededError, match="refused"):
            book.spend("t", _thyroid(), "labels")
        assert book.history("t") == []
        book.set_budget("t", "sensitive", 200.0)  # a pure budget: the linear 182.5
        assert book.spend("t", _thyroid(), "labels").tight_epsilon is None
        assert book.budget("t", "sensitive").spent == Fraction(365, 2)


def test_a_partial_commit_keeps_the_tight_charge_and_shrinks_the_pure_one() -> None:
    """232 answers reserved, 50 used (a search that stopped early): the pure ε shrinks to
    50 (a pure filter), the (ε, δ) charge stays that of the 232 reserved, because the tight
    bound of a data-dependent number of answers is no guarantee."""
    one = Guarantee("anomaly-restricted-dp", 1.0, REL)
    with Ledger(":memory:") as book:
        book.set_budget("s", "anomaly-restricted-dp", 200.0, delta=1e-6)
        book.set_budget("s", "pure-dp", 1000.0)  # not charged: pure-dp is not implied
        r = book.reserve("s", scaled(one, 232), "search")
        assert r.spend.tight_epsilon == pytest.approx(166.697, abs=1e-3)
        done = r.commit(scaled(one, 50))
        assert done.epsilon == 50 and done.tight_epsilon == r.spend.tight_epsilon
        assert book.budget("s", "anomaly-restricted-dp").spent == Fraction(repr(done.tight_epsilon))
        r2 = book.reserve("s", one, "one more", delta=None)
        r2.cancel()
        book.verify()


def test_a_version_2_file_gains_the_delta_columns(tmp_path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as book:
        book.set_budget("s", "pure-dp", 1.0)
        book.spend("s", Guarantee("pure-dp", 0.5, REL), "a")
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE budgets DROP COLUMN delta")
    con.execute("ALTER TABLE spends DROP COLUMN tight_epsilon")
    con.execute("PRAGMA user_version = 2")
    con.commit()
    con.close()
    with Ledger(path) as book:
        assert book.budget("s", "pure-dp").delta is None
        book.set_budget("s", "pure-dp", 1.0, delta=1e-5)
        book.verify()


def _answer() -> Guarantee:
    return Guarantee("sensitive", 0.1, "k-sensitive graph", k=1)


def test_a_single_answer_keeps_delta_for_the_batch_after_it() -> None:
    """Issue 26, item 3: one answer of ε = 0.1 is (0.099999, 10⁻⁶)-DP, which saved 10⁻⁶ of
    ε for all of δ, and the batch of m = 334 after it was charged its linear 33.4. The
    single answer is charged its pure ε with δ_i = 0; the batch gets the whole δ."""
    with Ledger(":memory:") as book:
        book.set_budget("a", "sensitive", 40.0, delta=1e-6)
        single = book.spend("a", _answer(), "one answer")
        assert single.tight_epsilon is None and single.delta == 0.0
        batch = book.spend("a", scaled(_answer(), 334), "batch")
        assert batch.tight_epsilon == 9.777433 and batch.delta == 1e-6
        assert book.budget("a", "sensitive").spent == Fraction(9877433, 10**6)
        book.verify()


def test_answers_left_after_a_single_answer_is_the_optimal_count_of_what_is_left() -> None:
    """The audit's case: 720 answers of 0.01 fit (1, 10⁻⁵); one answer took all of δ and
    left the linear 99. Now the ε left, 0.99, still buys its optimal count, 707."""
    one = Guarantee("sensitive", 0.01, "k-sensitive graph", k=1)
    with Ledger(":memory:") as book:
        book.set_budget("a", "sensitive", 1.0, delta=1e-5)
        assert book.answers_left("a", one) == answers_within(1.0, 1e-5, 0.01) == 720
        book.spend("a", one, "one answer")
        assert book.answers_left("a", one) == answers_within(0.99, 1e-5, 0.01) == 707


@pytest.mark.parametrize("m", [1, 2, 10, 17])
def test_a_spend_whose_delta_buys_less_than_one_answer_is_charged_pure(m: int) -> None:
    """m answers of 0.1 at δ = 10⁻⁶ save less than 0.1 up to m = 17 (m = 17: 1.7 against
    1.640...); they are charged m·ε with δ_i = 0. From m = 18 on δ buys an answer."""
    saved = m * Fraction(1, 10) - optimal_epsilon(0.1, m, 1e-6)
    assert 0 < saved < Fraction(1, 10)
    assert 18 * Fraction(1, 10) - optimal_epsilon(0.1, 18, 1e-6) >= Fraction(1, 10)
    with Ledger(":memory:") as book:
        book.set_budget("a", "sensitive", 10.0, delta=1e-6)
        s = book.spend("a", scaled(_answer(), m), "small batch")
        assert s.tight_epsilon is None and s.delta == 0.0
        assert book.budget("a", "sensitive").delta_spent == 0
        s = book.spend("a", scaled(_answer(), 18), "batch that gains an answer")
        assert s.tight_epsilon == float(optimal_epsilon(0.1, 18, 1e-6)) and s.delta == 1e-6


def test_delta_buying_less_than_an_answer_is_used_when_the_pure_epsilon_does_not_fit() -> None:
    with Ledger(":memory:") as book:
        book.set_budget("a", "sensitive", 0.0999995, delta=1e-5)
        s = book.spend("a", _answer(), "only fits with δ")
        assert s.tight_epsilon == float(optimal_epsilon(0.1, 1, 1e-5)) < 0.0999995
        assert s.delta == 1e-5


def test_delta_zero_asks_for_the_pure_epsilon() -> None:
    with Ledger(":memory:") as book:
        book.set_budget("a", "sensitive", 200.0, delta=1e-6)
        assert book.check("a", _thyroid(), delta=0.0) is not None
        s = book.spend("a", _thyroid(), "pure on purpose", delta=0.0)
        assert (
            s.tight_epsilon is None
            and s.delta == 0.0
            and book.budget("a", "sensitive").spent == Fraction(365, 2)
        )
        r = book.reserve("a", scaled(_answer(), 3), "stream", delta=0.0, stream=True)
        assert r.spend.block_id is None and r.spend.delta == 0.0  # no block: no gain at δ 0
        r.commit()
        with pytest.raises(ParameterError, match=r"delta must be in \[0, 1\)"):
            book.spend("a", _answer(), "x", delta=-1e-9)
        book.verify()


def test_delta_is_checked() -> None:
    with Ledger(":memory:") as book, pytest.raises(ParameterError, match="delta"):
        book.set_budget("s", "pure-dp", 1.0, delta=1.5)


def test_composed_sp_batch_meets_its_tight_charge_on_a_sensitive_pair() -> None:
    """Exact output distributions of a batch on two k-sensitive neighbours, against (ε, δ)."""
    import numpy as np

    from privad.sensitive.mechanisms import aiq_mechanism

    beta, eps, m = 2, 0.7, 6
    mech = aiq_mechanism("sp", beta=beta, r=1.0, epsilon=eps, k=1)
    # m queries whose balls hold B records in x and B - 1 in x' (one record removed)
    ball_x = np.array([3, 3, 4, 5, 3, 4])
    x_i = np.ones(m, np.int64)
    p_x = np.exp(mech.log_error_probability(x_i, ball_x))
    p_y = np.exp(mech.log_error_probability(x_i, ball_x - 1))
    from privad.sensitive.anomaly import anomaly_label

    one_x = np.where(anomaly_label(x_i, ball_x, beta), 1 - p_x, p_x)  # P(answer = 1)
    one_y = np.where(anomaly_label(x_i, ball_x - 1, beta), 1 - p_y, p_y)
    g = mech.batch_guarantee(m, m)
    delta = 1e-3
    charged = float(tight_epsilon(g.accounting_components, delta))
    assert charged < g.epsilon
    for a, b in ((one_x, one_y), (one_y, one_x)):
        total = 0.0
        for out in itertools.product((0, 1), repeat=m):
            o = np.array(out)
            pa = np.prod(np.where(o == 1, a, 1 - a))
            pb = np.prod(np.where(o == 1, b, 1 - b))
            total += max(0.0, pa - math.exp(charged) * pb)
        assert total <= delta
