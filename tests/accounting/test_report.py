"""privad.accounting.report: a ledger read once, as data and as rows of text."""

from __future__ import annotations

import os
from fractions import Fraction

import pytest

from privad.accounting import Guarantee, Ledger
from privad.accounting.composition import scaled
from privad.accounting.report import cancel_reservation, ledger_report, reset_ledger
from privad.errors import LedgerError


@pytest.fixture
def book():
    with Ledger(":memory:") as ledger:
        ledger.set_budget("d", "pure-dp", 2.0)
        ledger.set_budget("d", "sensitive", 3.0)
        ledger.set_budget("ap", "pure-dp", 10.0, delta=1e-6)
        ledger.spend("d", Guarantee("pure-dp", 0.5, "one record"), "count")
        ledger.spend("d", Guarantee("sensitive", 0.25, "one record", k=2), "ids")
        ledger.spend("ap", scaled(Guarantee("pure-dp", 0.1, "one record"), 50), "many")
        ledger.reserve("d", Guarantee("pure-dp", 0.75, "one record"), "killed")
        ledger.reserve("d", Guarantee("pure-dp", 0.1, "one record"), "gone").cancel()
        yield ledger


def test_summary_counts_live_spends_and_keeps_the_last(book) -> None:
    report = ledger_report(book, "d")
    summary = report.summary(last=1)
    assert [s["label"] for s in summary["spends"]] == ["killed"]  # the cancelled one is gone
    assert summary["spends_not_shown"] == 2
    pure = next(b for b in summary["budgets"] if b["notion"] == "pure-dp")
    # 0.5 committed + 0.75 reserved, of 2
    assert (pure["spent"], pure["remaining"]) == (Fraction(5, 4), Fraction(3, 4))
    assert report.summary()["spends_not_shown"] == 0


def test_budget_rows_spell_out_implied_and_tight_spends(book) -> None:
    columns, rows = ledger_report(book).budget_rows()
    assert columns[-1] == "δ; δ spent"  # one budget has a δ
    by = {(r[0], r[1]): r for r in rows}
    # the sensitive total: 0.25 own + 1.25 implied by pure-dp, of 3
    assert by["d", "sensitive"][2:6] == (
        "3.0",
        "1.5 (0.25 own + 1.25 implied by pure-dp)",
        "1.5",
        "1",
    )
    # no budget under anomaly-restricted DP: listed for the implied pure-dp spends
    assert by["d", "anomaly-restricted-dp"][2:5] == ("—", "1.25 (1.25 implied by pure-dp)", "—")
    assert by["d", "pure-dp"][2:] == ("2.0", "1.25", "0.75", "2", "")
    tight = by["ap", "pure-dp"]
    # 50 answers at ε = 0.1 composed tightly at δ = 1e-6 cost less than the linear 5
    assert tight[3].endswith(" tight (pure 5.0)") and float(tight[3].split()[0]) < 5
    assert tight[6].startswith("1e-06; ")


def test_spend_rows_add_columns_only_when_needed(book) -> None:
    columns, rows = ledger_report(book, "d").spend_rows()
    assert columns == ["id", "when", "scope", "label", "notion", "ε", "k", "status"]
    assert [r[3] for r in rows] == ["count", "ids", "killed"]
    assert rows[1][6] == "2" and rows[2][-1] == "reserved"
    columns, rows = ledger_report(book, "ap").spend_rows()
    assert "status" not in columns and rows[0][5] == "5.0"


def test_to_dict_holds_the_statement_and_every_account(book) -> None:
    report = ledger_report(book, "d")
    doc = report.to_dict()
    # the statement as the ledger writes it (but for the time in its first line)
    assert doc["statement"].splitlines()[1:] == book.statement("d").splitlines()[1:]
    assert doc["statement"].startswith("Privacy statement of ledger :memory:")
    assert [a["notion"] for a in doc["accounts"]] == [
        "pure-dp",
        "sensitive",
        "anomaly-restricted-dp",
        "relaxed-dp",
    ]
    assert len(doc["spends"]) == 3


def test_cancel_reservation_asks_then_gives_the_epsilon_back(book) -> None:
    killed = next(s for s in book.history("d") if s.label == "killed")
    asked = []
    done = cancel_reservation(book, killed.id, asked.append)
    assert done.what.startswith(f"reservation #{killed.id} ('killed', scope 'd', pure-dp, ε = 0.75")
    assert asked == [
        f"Give back the ε of {done.what} in ledger :memory:? Only if nothing it computed was "
        "released."
    ]
    # 0.75 given back: pure-dp 2 - 0.5 = 1.5 left; sensitive 3 - (0.5 + 0.25) = 2.25
    assert done.remaining == {"pure-dp": Fraction(3, 2), "sensitive": Fraction(9, 4)}
    assert done.text().endswith(
        "remaining ε of scope 'd': pure-dp 1.5, sensitive 2.25 (ledger :memory:)."
    )
    again = cancel_reservation(book, killed.id, asked.append)
    assert again.already_cancelled and len(asked) == 1  # nothing to ask about
    assert again.text() == f"R{done.what[1:]} was already cancelled."
    assert again.to_dict()["already_cancelled"] and again.to_dict()["cancelled"]


def test_a_committed_spend_cannot_be_cancelled(book) -> None:
    committed = book.history("d")[0]
    with pytest.raises(LedgerError, match="is committed"):
        cancel_reservation(book, committed.id)


def test_reset_ledger_asks_then_deletes_one_scope(book) -> None:
    asked = []
    done = reset_ledger(book, "d", confirm=asked.append)
    # three live spends and one cancelled of d; two budgets of d, kept
    assert asked == ["Delete 4 spend(s) of scope 'd' from ledger :memory:, keeping 2 budget(s)?"]
    assert done.to_dict() == {
        "ledger": ":memory:",
        "scope": "d",
        "reset": True,
        "spends_deleted": 4,
        "budgets_dropped": False,
    }
    assert book.history("d") == [] and book.remaining("d", "pure-dp") == 2.0
    assert len(book.history("ap")) == 1  # another scope is untouched
    gone = reset_ledger(book, drop_budgets=True)
    assert (
        gone.text() == "Reset every scope: 1 spend(s) deleted, budgets dropped (ledger :memory:)."
    )
    assert book.budgets() == []


@pytest.mark.parametrize("where", ["top", "context"])
def test_cancelling_a_reservation_whose_output_was_written_after_it_cautions(
    tmp_path, where
) -> None:
    """Stopped between publishing and committing, the output (written after the reservation)
    may have been read: the question says so. An output older than the reservation (a
    previous run's, never replaced) or none at all: the plain question."""
    out = tmp_path / "labels.csv"
    out.write_text("index,label\n")
    os.utime(out, (1_000_000_000, 1_000_000_000))  # written long before
    meta = {"out": str(out)} if where == "top" else {"context": {"out": str(out)}}
    plain = "Only if nothing it computed was released."
    with Ledger(":memory:") as book:
        book.set_budget("d", "pure-dp", 5.0)
        g = Guarantee("pure-dp", 0.5, "one record")
        asked: list[str] = []
        book.reserve("d", g, "killed before the rename", meta)
        cancel_reservation(book, book.history("d")[-1].id, asked.append)
        book.reserve("d", g, "killed after the rename", meta)
        out.write_text("index,label\n0,1\n")  # the release's answers, now in place
        cancel_reservation(book, book.history("d")[-1].id, asked.append)
        out.unlink()
        book.reserve("d", g, "never published", meta)
        cancel_reservation(book, book.history("d")[-1].id, asked.append)
    assert [q.endswith(f"? {plain}") for q in asked] == [True, False, True]
    assert f"Its output {out} was written after it was reserved" in asked[1]
    assert asked[1].endswith(plain)
