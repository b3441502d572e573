"""Notions that imply each other: a pure-dp spend counts against the implied budgets too."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from privad.accounting import (
    ANOMALY_RESTRICTED_DP,
    NOTIONS,
    PURE_DP,
    RELAXED_DP,
    RMP,
    SENSITIVE,
    Guarantee,
    Ledger,
)
from privad.accounting.notions import implying_notions
from privad.accounting.schema import SCHEMA_VERSION
from privad.errors import BudgetExceededError, LedgerError, ParameterError

REL = "add or remove one record"
IMPLIED = (SENSITIVE, ANOMALY_RESTRICTED_DP, RELAXED_DP)


def dp(eps: float) -> Guarantee:
    return Guarantee(PURE_DP, eps, REL)


def sp(eps: float, k: int = 1) -> Guarantee:
    return Guarantee(SENSITIVE, eps, "k-sensitive neighbourhood graph", k=k)


def relaxed(eps: float, eps_out: float) -> Guarantee:
    return Guarantee(RELAXED_DP, eps, "non-outlier records", epsilon_outlier=eps_out)


@pytest.fixture
def book() -> Iterator[Ledger]:
    with Ledger(":memory:") as ledger:
        yield ledger


def _snapshot(ledger: Ledger) -> tuple[list, list, list]:
    return ledger.budgets(), ledger.history(), ledger.events()


# -- the relation -------------------------------------------------------------------------------


def test_pure_dp_implies_the_restricted_notions_and_nothing_else_implies_anything() -> None:
    assert NOTIONS[PURE_DP].implies == IMPLIED
    assert all(NOTIONS[n].implies == () for n in NOTIONS if n != PURE_DP)
    for notion in IMPLIED:
        assert implying_notions(notion) == (PURE_DP,)
    assert implying_notions(PURE_DP) == implying_notions(RMP) == ()


def test_the_relation_is_transitively_closed_and_between_budgeted_notions() -> None:
    for name, info in NOTIONS.items():
        for implied in info.implies:
            assert NOTIONS[implied].has_epsilon and info.has_epsilon
            assert set(NOTIONS[implied].implies) <= set(info.implies)
            assert implied != name


# -- the measured bug: one record answered by dp and by sp --------------------------------------


def test_dp_then_sp_is_refused_when_the_sensitive_total_would_exceed(book: Ledger) -> None:
    book.set_budget("s", PURE_DP, 1.0)
    book.set_budget("s", SENSITIVE, 1.0)
    book.spend("s", dp(1.0), "record 7 by dp")
    assert book.spent("s", SENSITIVE) == 1.0
    assert book.remaining("s", SENSITIVE) == 0.0
    before = _snapshot(book)
    with pytest.raises(BudgetExceededError, match="under 'sensitive'") as info:
        book.spend("s", sp(1.0), "record 7 by sp")
    assert "spent 1.0 (1.0 implied by pure-dp)" in str(info.value)
    assert _snapshot(book) == before
    book.set_budget("s", SENSITIVE, 2.0)
    book.spend("s", sp(1.0), "record 7 by sp")
    assert book.spent("s", SENSITIVE) == 2.0
    assert book.spent("s", PURE_DP) == 1.0  # sensitive does not imply DP
    text = book.statement("s")
    assert "budget ε 2.0; spent 2.0 (1.0 own + 1.0 implied by pure-dp); remaining 0.0" in text
    assert "together: ε 2.0 for k = 1" in text
    assert "budget ε 1.0; spent 1.0; remaining 0.0; 1 spend" in text
    book.verify()


def test_implied_spend_is_refused_by_the_implied_budget(book: Ledger) -> None:
    book.set_budget("s", PURE_DP, 5.0)
    book.set_budget("s", SENSITIVE, 0.5)
    before = _snapshot(book)
    with pytest.raises(BudgetExceededError, match="exceed the budget of 'sensitive'") as info:
        book.spend("s", dp(1.0), "noisy count")
    assert "'pure-dp' implies it" in str(info.value) and "total 0.5" in str(info.value)
    assert _snapshot(book) == before
    with pytest.raises(BudgetExceededError, match="sensitive"):
        book.check("s", dp(1.0))
    with pytest.raises(BudgetExceededError, match="sensitive"):
        book.reserve("s", dp(1.0), "noisy count")
    assert _snapshot(book) == before
    assert book.check("s", dp(0.5)).notion == PURE_DP  # type: ignore[union-attr]
    book.spend("s", dp(0.5), "noisy count")
    assert book.remaining("s", SENSITIVE) == 0.0
    book.verify()


def test_spends_of_other_notions_are_not_charged_to_pure_dp(book: Ledger) -> None:
    book.set_budget("s", PURE_DP, 1.0)
    for notion in IMPLIED:
        book.set_budget("s", notion, 5.0)
    book.spend("s", sp(3.0), "sp")
    book.spend("s", relaxed(2.0, 4.0), "relaxed")
    book.spend("s", Guarantee(RMP, None, "reconstruction"), "rmp")
    assert book.spent("s", PURE_DP) == 0.0
    assert [book.spent("s", n) for n in IMPLIED] == [3.0, 0.0, 2.0]
    book.verify()


# -- budgets set after implied spends -----------------------------------------------------------


def test_set_budget_after_implied_spends_starts_from_the_true_total(book: Ledger) -> None:
    book.set_budget("s", PURE_DP, 5.0)
    book.spend("s", dp(1.0), "a")
    book.spend("s", dp(0.5), "b")
    for notion in IMPLIED:
        assert book.spent("s", notion) == 1.5  # counted, though no budget caps it
    with pytest.raises(ParameterError, match=r"\(1.5 \(1.5 implied by pure-dp\)\)"):
        book.set_budget("s", SENSITIVE, 1.0)
    budget = book.set_budget("s", SENSITIVE, 2.0)
    assert budget.spent == Fraction(3, 2) and budget.remaining == Fraction(1, 2)
    with pytest.raises(BudgetExceededError, match="sensitive"):
        book.spend("s", sp(1.0), "c")
    book.spend("s", sp(0.5), "c")
    with pytest.raises(ParameterError, match=r"2.0 \(0.5 own \+ 1.5 implied by pure-dp\)"):
        book.set_budget("s", SENSITIVE, 1.5)
    book.verify()


def test_default_budget_starts_from_the_implied_total() -> None:
    with Ledger(":memory:", default_budget=1.0) as book:
        book.spend("s", dp(0.75), "a")
        assert book.remaining("s", SENSITIVE) == 0.25
        before = _snapshot(book)
        with pytest.raises(BudgetExceededError, match="sensitive"):
            book.spend("s", sp(0.5), "b")
        assert _snapshot(book) == before  # the default budget is not created either
        book.spend("s", sp(0.25), "b")
        assert book.budget("s", SENSITIVE).spent == 1
        assert [b.notion for b in book.budgets()] == [PURE_DP, SENSITIVE]
        book.verify()


# -- giving back --------------------------------------------------------------------------------


def test_cancel_and_partial_commit_give_back_on_every_charged_budget(book: Ledger) -> None:
    book.set_budget("s", PURE_DP, 5.0)
    book.set_budget("s", SENSITIVE, 5.0)
    book.set_budget("s", RELAXED_DP, 5.0)

    def spent() -> list[float]:
        return [book.spent("s", n) for n in (PURE_DP, *IMPLIED)]

    r = book.reserve("s", dp(2.0), "search")
    assert spent() == [2.0, 2.0, 2.0, 2.0]
    r.commit(dp(0.5))
    assert spent() == [0.5, 0.5, 0.5, 0.5]
    book.verify()
    r = book.reserve("s", dp(1.0), "job")
    book.set_budget("s", ANOMALY_RESTRICTED_DP, 3.0)  # set while the reservation is held
    assert book.budget("s", ANOMALY_RESTRICTED_DP).spent == Fraction(3, 2)
    r.cancel()
    assert spent() == [0.5, 0.5, 0.5, 0.5]
    assert all(b.spent == Fraction(1, 2) for b in book.budgets("s"))
    book.verify()


def test_statement_shows_implied_totals_of_unbudgeted_notions_and_outliers(book: Ledger) -> None:
    book.set_budget("s", PURE_DP, 5.0)
    book.set_budget("s", RELAXED_DP, 5.0)
    book.spend("s", relaxed(1.0, 2.0), "window 1")
    book.spend("s", dp(0.5), "count")
    text = book.statement()
    assert (
        "a pure-dp spend of ε is also one under sensitive, anomaly-restricted-dp, "
        "relaxed-dp); other notions' ε are never added together" in " ".join(text.split())
    )
    assert "budget ε 5.0; spent 1.5 (1.0 own + 0.5 implied by pure-dp); remaining 3.5" in text
    assert "outliers: ε' 2.5 in total" in text  # ε-DP gives ε to the outliers as well
    assert (
        "Scope 's': (ε, k)-sensitive privacy (sensitive)\n  no budget set (not capped); "
        "spent 0.5 (0.5 implied by pure-dp); 0 spends" in text
    )


def test_verify_recomputes_with_the_implication(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as book:
        book.set_budget("s", PURE_DP, 2.0)
        book.set_budget("s", SENSITIVE, 2.0)
        book.spend("s", dp(1.0), "a")
        book.spend("s", sp(0.5), "b")
        book.verify()
    con = sqlite3.connect(path)
    con.execute("UPDATE budgets SET spent = '1/2' WHERE notion = 'sensitive'")  # own only
    con.commit()
    con.close()
    with Ledger(path) as book, pytest.raises(LedgerError, match="sum of spends 1.5"):
        book.verify()


# -- files written by the previous format -------------------------------------------------------


def _as_version_1(path: Path, sensitive_spent: str) -> None:
    """Turn a ledger file into what privad wrote before implication: own spends only."""
    con = sqlite3.connect(path)
    con.execute("UPDATE budgets SET spent = ? WHERE notion = 'sensitive'", (sensitive_spent,))
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()


def test_a_version_1_file_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with Ledger(path) as book:
        book.set_budget("s", PURE_DP, 2.0)
        book.set_budget("s", SENSITIVE, 1.0)
        book.spend("s", sp(0.25), "b")
        book.spend("s", dp(0.5), "a")
    _as_version_1(path, "1/4")
    with Ledger(path) as book:
        assert book.budget("s", SENSITIVE).spent == Fraction(3, 4)
        assert [e.action for e in book.events()][-1] == "migrate"
        assert "over their total" not in book.events()[-1].detail
        book.verify()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    con.close()
    with Ledger(path) as book:  # migrated once
        assert [e.action for e in book.events()].count("migrate") == 1


def test_migration_reports_budgets_the_true_totals_exceed(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with Ledger(path) as book:
        book.set_budget("s", PURE_DP, 1.0)
        book.set_budget("s", SENSITIVE, 2.0)
        book.spend("s", dp(1.0), "dp")
        book.spend("s", sp(1.0), "sp")
        book.set_budget("s", SENSITIVE, 2.0)
    _as_version_1(path, "1")
    con = sqlite3.connect(path)
    con.execute("UPDATE budgets SET total = '1.0' WHERE notion = 'sensitive'")  # as v1 allowed
    con.commit()
    con.close()
    with Ledger(path) as book:
        assert "'sensitive': spent 2.0 > 1.0" in book.events()[-1].detail
        assert book.remaining("s", SENSITIVE) == -1.0
        with pytest.raises(BudgetExceededError):
            book.spend("s", sp(0.1), "more")
        with pytest.raises(LedgerError, match="spent 2.0 > total 1.0"):
            book.verify()
