"""Streams of answers under (ε, δ) budgets: prepaid blocks (Ledger.spend(stream=True))."""

from __future__ import annotations

import math
import sqlite3
import threading
from fractions import Fraction

import pytest

from privad.accounting import Component, Guarantee, Ledger, scaled
from privad.accounting.tight import optimal_delta, optimal_epsilon
from privad.errors import BudgetExceededError, LedgerError, ParameterError

REL = "add or remove one record"
HALF = Guarantee("sensitive", 0.5, REL, k=1, description="one answer")


def _brute_delta(eps: float, m: int, eps_g: float) -> float:
    """δ_m(ε_g) of the optimal composition theorem, term by term in floats."""
    return (
        sum(
            math.comb(m, i) * max(0.0, math.exp((m - i) * eps) - math.exp(eps_g + i * eps))
            for i in range(m + 1)
        )
        / (1 + math.exp(eps)) ** m
    )


def test_hand_computed_block_of_pure_answers() -> None:
    """ε = 0.5 per answer under (2, 0.1): linear admits 4 answers; the optimal theorem 8,
    since δ_8(2) = 0.0886 ≤ 0.1 < δ_9(2) = 0.1455 (the binomial sums, by hand)."""
    assert _brute_delta(0.5, 8, 2.0) == pytest.approx(0.0886, abs=1e-4)
    assert _brute_delta(0.5, 9, 2.0) == pytest.approx(0.1455, abs=1e-4)
    with Ledger(":memory:") as book:
        book.set_budget("s", "sensitive", 2.0, delta=0.1)
        assert book.answers_left("s", HALF) == 8
        draws = [book.spend("s", HALF, f"q{i}", {"i": i}, stream=True) for i in range(7)]
        assert book.check("s", HALF, stream=True).delta_spent == Fraction(1, 10)  # room left
        with pytest.raises(BudgetExceededError):
            book.check("s", HALF)  # as an ordinary spend it would not fit
        draws.append(book.spend("s", HALF, "q7", {"i": 7}, stream=True))
        assert {d.block_id for d in draws} == {1} and [d.answers for d in draws] == [1] * 8
        assert book.answers_left("s", HALF) == 0
        with pytest.raises(BudgetExceededError):  # as the spend: the block is used up
            book.check("s", HALF, stream=True)
        with pytest.raises(BudgetExceededError, match="nothing was spent"):
            book.spend("s", HALF, "q8", stream=True)
        (block,) = [s for s in book.history("s") if s.is_block]
        assert block.answers == 8 and block.epsilon == 4.0 and block.delta == 0.1
        assert Fraction(repr(block.tight_epsilon)) == optimal_epsilon(0.5, 8, 0.1)
        assert optimal_delta(0.5, 8, block.tight_epsilon) <= 0.1
        b = book.budget("s", "sensitive")
        assert b.spent == Fraction(repr(block.tight_epsilon)) and b.delta_spent == Fraction(1, 10)
        assert len(book.history("s")) == 9  # the block and its eight draws; nothing for q8
        text = book.statement("s")
        assert "#1: 8 of 8 answers used" in text and "paid by its block" in text
        book.verify()


def test_one_laplace_answer_fits_where_linear_admits_none() -> None:
    """Laplace with ε = 1 under (0.9, 0.05): δ(0.9) = 1 − e^{(0.9 − 1)/2} = 0.0488 ≤ 0.05 for
    one answer (the Laplace privacy-loss distribution, by hand), so one answer is admitted;
    a second is not."""
    assert 1 - math.exp((0.9 - 1.0) / 2) == pytest.approx(0.04877, abs=1e-5)
    lap = Guarantee("anomaly-restricted-dp", 1.0, REL, components=(Component.laplace(1.0, 1.0),))
    with Ledger(":memory:") as book:
        book.set_budget("o", "anomaly-restricted-dp", 0.9, delta=0.05)
        assert book.answers_left("o", lap) == 1
        book.spend("o", lap, "a", stream=True)
        with pytest.raises(BudgetExceededError):
            book.spend("o", lap, "b", stream=True)
        assert len(book.history("o")) == 2
        assert book.budget("o", "anomaly-restricted-dp").spent <= Fraction(9, 10)


def test_pure_budgets_charge_stream_answers_as_ordinary_spends() -> None:
    with Ledger(":memory:") as book:
        book.set_budget("s", "sensitive", 2.0)
        assert book.answers_left("s", HALF) == 4
        spends = [book.spend("s", HALF, "q", stream=True) for _ in range(4)]
        assert all(s.block_id is None and s.answers is None for s in spends)
        with pytest.raises(BudgetExceededError):
            book.spend("s", HALF, "q", stream=True)
    with Ledger(":memory:", unbudgeted="record") as book:
        assert book.answers_left("free", HALF) is None


def test_a_cancelled_draw_gives_its_answers_back_and_commits_can_shrink() -> None:
    with Ledger(":memory:") as book:
        book.set_budget("s", "sensitive", 2.0, delta=0.1)
        r = book.reserve("s", scaled(HALF, 3), "three", stream=True)
        assert r.spend.answers == 3 and book.answers_left("s", HALF) == 5
        r.cancel()
        assert book.answers_left("s", HALF) == 8
        spent = book.budget("s", "sensitive").spent  # the block stays paid
        r = book.reserve("s", scaled(HALF, 4), "four", stream=True)
        assert r.commit(scaled(HALF, 2)).answers == 2
        assert book.answers_left("s", HALF) == 6 and book.budget("s", "sensitive").spent == spent
        with pytest.raises(LedgerError, match="larger"):
            book.reserve("s", HALF, "one", stream=True).commit(scaled(HALF, 2))
        book.verify()


def test_a_request_larger_than_the_blocks_room_opens_no_gainless_block() -> None:
    with Ledger(":memory:") as book:
        book.set_budget("s", "sensitive", 3.0, delta=0.1)
        first = book.spend("s", scaled(HALF, 2), "two", stream=True)
        (block,) = [s for s in book.history("s") if s.is_block]
        room = block.answers - 2
        left = book.budget("s", "sensitive").remaining
        # δ is spent: a request beyond the block's room is an ordinary pure spend, if it fits
        if (room + 1) * Fraction(1, 2) <= left:
            extra = book.spend("s", scaled(HALF, room + 1), "more", stream=True)
            assert extra.block_id is None and extra.tight_epsilon is None
        else:
            with pytest.raises(BudgetExceededError):
                book.spend("s", scaled(HALF, room + 1), "more", stream=True)
        assert first.block_id == block.id
        book.verify()


def test_streams_need_answers_of_one_mechanism() -> None:
    mixed = Guarantee(
        "sensitive", 1.5, REL, k=1, components=(Component.pure(0.5), Component.pure(1.0))
    )
    with Ledger(":memory:") as book:
        book.set_budget("s", "sensitive", 2.0, delta=0.1)
        with pytest.raises(ParameterError, match="one mechanism"):
            book.spend("s", mixed, "mixed", stream=True)
        with pytest.raises(ParameterError, match="one mechanism"):
            book.answers_left("s", mixed)


def test_two_connections_never_overdraw_a_block(tmp_path) -> None:
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as book:
        book.set_budget("s", "sensitive", 2.0, delta=0.1)
    granted: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        with Ledger(path) as mine:
            for _ in range(6):
                try:
                    s = mine.spend("s", HALF, "q", stream=True)
                except BudgetExceededError:
                    continue
                with lock:
                    granted.append(s.id)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 8
    with Ledger(path) as book:
        book.verify()
        assert book.answers_left("s", HALF) == 0


def test_a_version_3_file_gains_the_block_columns(tmp_path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as book:
        book.set_budget("s", "sensitive", 2.0, delta=0.1)
        book.set_budget("p", "sensitive", 2.0)
        book.spend("p", HALF, "a")
    con = sqlite3.connect(path)
    con.execute("DROP INDEX spends_by_block")
    con.execute("ALTER TABLE spends DROP COLUMN answers")
    con.execute("ALTER TABLE spends DROP COLUMN block_id")
    con.execute("PRAGMA user_version = 3")
    con.commit()
    con.close()
    with Ledger(path) as book:
        assert book.spend("s", HALF, "b", stream=True).block_id is not None
        assert book.history("p")[0].answers is None
        book.verify()
