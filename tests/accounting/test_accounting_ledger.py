"""Ledger: check-then-spend, exactness, persistence, two-phase spends, file handling."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from privad.accounting import (
    Guarantee,
    Ledger,
    NoBudgetError,
    default_ledger_path,
)
from privad.errors import BudgetExceededError, LedgerError, ParameterError

REL = "add or remove one record"


def dp(eps: float) -> Guarantee:
    return Guarantee("pure-dp", eps, REL, description="test mechanism")


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with Ledger(":memory:") as book:
        book.set_budget("census", "pure-dp", 1.0)
        yield book


# -- check-then-spend ---------------------------------------------------------------------------


def test_exact_fill_ten_spends_of_a_tenth(ledger: Ledger) -> None:
    for i in range(10):
        ledger.spend("census", dp(0.1), f"query {i}")
    assert ledger.remaining("census", "pure-dp") == 0.0
    assert ledger.budget("census", "pure-dp").spent == Fraction(1)
    with pytest.raises(BudgetExceededError):
        ledger.spend("census", dp(1e-9), "one more")


def test_other_exact_fills(ledger: Ledger) -> None:
    ledger.set_budget("b", "pure-dp", 0.3)
    ledger.spend("b", dp(0.1), "a")
    ledger.spend("b", dp(0.2), "b")  # 0.1 + 0.2 == 0.3 exactly, not 0.30000000000000004
    assert ledger.remaining("b", "pure-dp") == 0.0
    ledger.set_budget("c", "pure-dp", 1.0)
    for i in range(3):
        ledger.spend("c", dp(1 / 3), f"third {i}")  # repr 0.3333333333333333, sum < 1
    assert 0 < ledger.remaining("c", "pure-dp") < 1e-15


def test_refused_spend_writes_nothing_and_says_why(ledger: Ledger) -> None:
    ledger.spend("census", dp(0.75), "big query")
    before = (ledger.history(), ledger.budget("census", "pure-dp"), ledger.events())
    with pytest.raises(BudgetExceededError) as info:
        ledger.spend("census", dp(0.5), "too big", {"x": 1})
    message = str(info.value)
    for part in ("total 1.0", "spent 0.75", "remaining 0.25", "requested 0.5", "too big"):
        assert part in message
    assert "\n" not in message
    assert (ledger.history(), ledger.budget("census", "pure-dp"), ledger.events()) == before
    ledger.verify()


def test_check_raises_without_spending(ledger: Ledger) -> None:
    budget = ledger.check("census", dp(1.0))
    assert budget is not None and budget.total == 1
    with pytest.raises(BudgetExceededError):
        ledger.check("census", dp(1.5))
    with pytest.raises(NoBudgetError):
        ledger.check("elsewhere", dp(0.1))
    assert ledger.history() == [] and ledger.spent("census", "pure-dp") == 0.0


def test_no_budget_is_a_clear_ledger_error(ledger: Ledger) -> None:
    with pytest.raises(NoBudgetError, match="no budget is set for scope 'other'") as info:
        ledger.spend("other", dp(0.1), "q")
    assert isinstance(info.value, LedgerError)
    assert not isinstance(info.value, BudgetExceededError)
    with pytest.raises(NoBudgetError):
        ledger.remaining("other", "pure-dp")
    # A budget of another notion does not cover this one.
    with pytest.raises(NoBudgetError):
        ledger.spend("census", Guarantee("sensitive", 0.1, REL, k=1), "q")


def test_default_budget_creates_the_budget_on_first_spend() -> None:
    with Ledger(":memory:", default_budget=0.5) as book:
        assert book.remaining("new", "pure-dp") == 0.5
        book.spend("new", dp(0.25), "q")
        assert book.budget("new", "pure-dp").total == Fraction(1, 2)
        assert book.remaining("new", "pure-dp") == 0.25
        with pytest.raises(BudgetExceededError):
            book.spend("new", dp(0.3), "q2")
        assert [e.action for e in book.events()] == ["default-budget"]
    with pytest.raises(ParameterError):
        Ledger(":memory:", default_budget=0)


def test_rmp_is_recorded_with_zero_and_never_refused(ledger: Ledger) -> None:
    r = Guarantee("rmp", None, "one participant's record")
    s = ledger.spend("collab", r, "perturbed upload")  # no budget needed
    assert s.epsilon == 0.0 and s.notion == "rmp"
    assert ledger.spent("collab", "rmp") == 0.0
    assert [h.label for h in ledger.history("collab")] == ["perturbed upload"]
    with pytest.raises(ParameterError, match="no budget"):
        ledger.set_budget("collab", "rmp", 1.0)


def test_budget_cannot_drop_below_spent(ledger: Ledger) -> None:
    ledger.spend("census", dp(0.6), "q")
    with pytest.raises(ParameterError, match="below what scope 'census' has already spent"):
        ledger.set_budget("census", "pure-dp", 0.5)
    b = ledger.set_budget("census", "pure-dp", 2.0)
    assert (b.total, b.spent, b.remaining) == (2, Fraction(3, 5), Fraction(7, 5))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda b: b.set_budget("", "pure-dp", 1.0), "scope"),
        (lambda b: b.set_budget("s", "pure-dp", -1.0), "total_epsilon"),
        (lambda b: b.set_budget("s", "pure-dp", float("nan")), "total_epsilon"),
        (lambda b: b.set_budget("s", "approx", 1.0), "notion"),
        (lambda b: b.spend("census", dp(0.1), ""), "label"),
        (lambda b: b.spend("census", 0.1, "x"), "Guarantee"),
        (lambda b: b.spend("census", dp(0.1), "x", metadata=[1]), "mapping"),
        (lambda b: b.spend("census", dp(0.1), "x", metadata={"f": object()}), "JSON"),
        (lambda b: b.spend("census", dp(0.1), "x", metadata={"f": float("nan")}), "JSON"),
    ],
)
def test_bad_arguments_are_parameter_errors(ledger: Ledger, call, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        call(ledger)
    assert ledger.history() == []


# -- history, metadata, statement ------------------------------------------------------------


def test_history_records_everything(ledger: Ledger) -> None:
    ledger.set_budget("s", "sensitive", 1.0)
    ledger.spend("census", dp(0.1), "count", {"column": "age", "n": np.int64(3)})
    ledger.spend("s", Guarantee("sensitive", 0.2, "k-sensitive graph", k=4), "aiq #17")
    rows = ledger.history()
    assert [r.label for r in rows] == ["count", "aiq #17"]
    first, second = rows
    assert first.metadata == {"column": "age", "n": 3}
    assert first.timestamp.tzinfo is not None and first.status == "committed"
    assert (second.notion, second.epsilon, second.k) == ("sensitive", 0.2, 4)
    assert second.guarantee == Guarantee("sensitive", 0.2, "k-sensitive graph", k=4)
    assert [r.label for r in ledger.history("s")] == ["aiq #17"]
    assert [r.label for r in ledger.history(notion="pure-dp")] == ["count"]
    assert second.to_dict()["k"] == 4


def test_statement_reads_well(ledger: Ledger) -> None:
    ledger.spend("census", dp(0.1), "count of anomalies")
    ledger.spend("census", dp(0.2), "histogram")
    ledger.spend("collab", Guarantee("rmp", None, "one participant"), "upload")
    text = ledger.statement()
    assert "Scope 'census': ε-differential privacy (pure-dp)" in text
    assert "budget ε 1.0; spent 0.3; remaining 0.7; 2 spends" in text
    assert "count of anomalies" in text and "histogram" in text
    assert "Scope 'collab'" in text and "ε 0" in text
    assert "census" not in ledger.statement("collab").split("\n", 3)[-1]
    with Ledger(":memory:") as empty:
        assert "nothing has been spent" in empty.statement()


# -- two-phase spends --------------------------------------------------------------------------


def test_reservation_counts_at_once_and_commits(ledger: Ledger) -> None:
    r = ledger.reserve("census", dp(0.6), "dask job")
    assert r.status == "reserved"
    assert ledger.remaining("census", "pure-dp") == 0.4
    with pytest.raises(BudgetExceededError):
        ledger.spend("census", dp(0.5), "concurrent")
    s = r.commit()
    assert s.status == "committed" and s.committed_at is not None
    assert r.commit().status == "committed"  # idempotent
    with pytest.raises(LedgerError, match="committed"):
        r.cancel()
    ledger.verify()


def test_reservation_context_manager_cancels_on_error(ledger: Ledger) -> None:
    with pytest.raises(RuntimeError):
        with ledger.reserve("census", dp(0.6), "failing job"):
            raise RuntimeError("worker died")
    assert ledger.remaining("census", "pure-dp") == 1.0
    assert [h.status for h in ledger.history()] == ["cancelled"]
    assert ledger.history(include_cancelled=False) == []
    with ledger.reserve("census", dp(0.6), "good job") as r:
        assert ledger.spent("census", "pure-dp") == 0.6
    assert r.status == "committed"
    with pytest.raises(RuntimeError):
        with ledger.reserve("census", dp(0.1), "partial", on_error="commit"):
            raise RuntimeError
    assert ledger.spent("census", "pure-dp") == 0.7
    assert [e.action for e in ledger.events()] == ["set-budget", "cancel"]
    ledger.verify()


def test_partial_commit_gives_the_unused_reservation_back(ledger: Ledger) -> None:
    r = ledger.reserve("census", dp(0.6), "search, worst case")
    s = r.commit(dp(0.25))  # the job stopped early: commit what it used
    assert s.status == "committed" and s.epsilon == 0.25 and s.guarantee.epsilon == 0.25
    assert ledger.spent("census", "pure-dp") == 0.25
    assert ledger.remaining("census", "pure-dp") == 0.75
    assert [e.action for e in ledger.events()] == ["set-budget", "commit-partial"]
    assert r.commit(dp(0.1)).epsilon == 0.25  # committed: idempotent, unchanged
    ledger.verify()
    for _ in range(3):  # exact arithmetic: 0.25 + 3 x 0.25 fills 1.0 exactly
        ledger.spend("census", dp(0.25), "fill")
    assert ledger.remaining("census", "pure-dp") == 0.0


def test_partial_commit_refuses_more_or_another_notion(ledger: Ledger) -> None:
    r = ledger.reserve("census", dp(0.5), "job")
    with pytest.raises(LedgerError, match="larger"):
        r.commit(dp(0.6))
    sens = Guarantee("sensitive", 0.1, REL, k=2)
    with pytest.raises(LedgerError, match="same notion"):
        r.commit(sens)
    assert r.status == "reserved" and ledger.spent("census", "pure-dp") == 0.5
    r.commit(dp(0.5))  # equal is fine
    assert ledger.spent("census", "pure-dp") == 0.5
    ledger.verify()


def test_stale_reservation_can_be_cancelled_by_id(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as a:
        a.set_budget("s", "pure-dp", 1.0)
        sid = a.reserve("s", dp(0.5), "job that crashed").id
    with Ledger(path) as b:  # "after the crash"
        assert b.remaining("s", "pure-dp") == 0.5
        b.cancel(sid)
        assert b.remaining("s", "pure-dp") == 1.0
        with pytest.raises(LedgerError, match="not in ledger"):
            b.commit(10_000)


# -- reset -------------------------------------------------------------------------------------


def test_reset_keeps_budgets_by_default(ledger: Ledger) -> None:
    ledger.set_budget("other", "pure-dp", 2.0)
    ledger.spend("census", dp(0.5), "a")
    ledger.spend("other", dp(0.5), "b")
    assert ledger.reset("census") == 1
    assert ledger.remaining("census", "pure-dp") == 1.0
    assert ledger.remaining("other", "pure-dp") == 1.5
    assert ledger.reset() == 1
    assert len(ledger.budgets()) == 2 and ledger.history() == []
    ledger.reset(drop_budgets=True)
    assert ledger.budgets() == []
    assert [e.action for e in ledger.events()][-3:] == ["reset", "reset", "reset"]
    ledger.verify()


# -- files -------------------------------------------------------------------------------------


def test_survives_restart(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "ledger.sqlite"  # parents are created
    with Ledger(path) as a:
        a.set_budget("census", "pure-dp", 1.0)
        for i in range(7):
            a.spend("census", dp(0.1), f"q{i}")
    with Ledger(path, create=False) as b:
        assert b.remaining("census", "pure-dp") == pytest.approx(0.3)
        assert b.budget("census", "pure-dp").remaining == Fraction(3, 10)
        for i in range(3):
            b.spend("census", dp(0.1), f"r{i}")
        with pytest.raises(BudgetExceededError):
            b.spend("census", dp(0.1), "over")
        assert len(b.history()) == 10
        b.verify()
        mode = b._conn.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"


def test_missing_file_without_create(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="no ledger at"):
        Ledger(tmp_path / "nope.sqlite", create=False)
    assert not (tmp_path / "nope.sqlite").exists()


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="is a directory"):
        Ledger(tmp_path)


def test_non_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not a database, it is a text file with enough bytes " * 10)
    with pytest.raises(LedgerError, match="not a privad ledger"):
        Ledger(path)
    assert path.read_text().startswith("this is not")


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="not a privad ledger"):
        Ledger(path)


def test_newer_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="newer"):
        Ledger(path)


def test_empty_file_becomes_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.touch()
    with Ledger(path) as book:
        book.set_budget("s", "pure-dp", 1.0)
    with Ledger(path) as book:
        assert book.remaining("s", "pure-dp") == 1.0


def test_verify_detects_tampering(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as book:
        book.set_budget("s", "pure-dp", 1.0)
        book.spend("s", dp(0.5), "q")
    con = sqlite3.connect(path)
    con.execute("UPDATE budgets SET spent = '0'")
    con.commit()
    con.close()
    with Ledger(path) as book, pytest.raises(LedgerError, match="inconsistent"):
        book.verify()


def test_closed_ledger_raises() -> None:
    book = Ledger(":memory:")
    book.close()
    book.close()
    with pytest.raises(LedgerError, match="closed"):
        book.budgets()


def test_default_ledger_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "x.sqlite"))
    assert default_ledger_path() == tmp_path / "x.sqlite"
    with Ledger() as book:
        assert book.path == str(tmp_path / "x.sqlite")
    monkeypatch.delenv("PRIVAD_LEDGER")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_ledger_path() == tmp_path / ".privad" / "ledger.sqlite"


def test_threads_sharing_one_ledger_and_one_file(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    shared = Ledger(path)
    shared.set_budget("s", "pure-dp", 1.0)
    accepted: list[int] = []

    def work(own: bool) -> None:
        book = Ledger(path) if own else shared
        for _ in range(10):
            try:
                book.spend("s", dp(0.05), "t")
                accepted.append(1)
            except BudgetExceededError:
                pass
        if own:
            book.close()

    threads = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(accepted) == 20
    assert shared.budget("s", "pure-dp").spent == 1
    shared.verify()
    shared.close()


def test_ledgers_pickle(tmp_path) -> None:
    """An in-memory ledger travels whole (an estimator's own ledger_); a file ledger by path."""
    import pickle

    from privad.accounting import Guarantee, Ledger

    g = Guarantee("pure-dp", 0.5, "add or remove one record")
    mem = Ledger(":memory:")
    mem.set_budget("s", "pure-dp", 2.0)
    mem.spend("s", g, "x")
    copy = pickle.loads(pickle.dumps(mem))
    assert copy.spent("s", "pure-dp") == 0.5 and copy.history("s")[0].label == "x"
    copy.spend("s", g, "y")
    assert mem.spent("s", "pure-dp") == 0.5  # a copy, not a view
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget("s", "pure-dp", 1.0)
        again = pickle.loads(pickle.dumps(book))
        again.spend("s", g, "z")
        assert book.spent("s", "pure-dp") == 0.5  # the same file
        again.close()
