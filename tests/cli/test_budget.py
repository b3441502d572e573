"""``privad budget``: set, show, reset, statement, and one-line errors with exit status 2.

The commands run through ``privad.cli.main`` (so a PrivadError becomes one line and exit 2)
on a fresh Typer app that has only the ``budget`` group, so these tests depend on no other
group.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from privad.accounting import Guarantee, Ledger
from privad.cli import budget


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Run ``privad ARGS`` in-process (budget group only); return (exit status, stdout, stderr)."""
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "default.sqlite"))
    return privad_cli(budget)


def test_set_then_show(run, tmp_path: Path) -> None:
    ledger = str(tmp_path / "l.sqlite")
    code, out, err = run("budget", "set", "census", "--epsilon", "1.5", "--ledger", ledger)
    assert code == 0, err
    assert "total ε 1.5" in out and "census" in out
    code, out, _ = run(
        "budget", "set", "census", "--epsilon", "2", "--notion", "sensitive", "--ledger", ledger
    )
    assert code == 0
    with Ledger(ledger) as book:
        assert [(b.notion, b.total_epsilon) for b in book.budgets()] == [
            ("pure-dp", 1.5),
            ("sensitive", 2.0),
        ]
    code, out, _ = run("budget", "show", "--ledger", ledger)
    assert code == 0
    assert "Budgets" in out and "pure-dp" in out and "sensitive" in out and "1.5" in out


def test_default_ledger_comes_from_the_environment(run, tmp_path: Path) -> None:
    code, _, _ = run("budget", "set", "s", "--epsilon", "1")
    assert code == 0
    assert (tmp_path / "default.sqlite").exists()


def test_show_reads_a_ledger_written_by_another_process(run, tmp_path: Path) -> None:
    ledger = tmp_path / "shared.sqlite"
    writer = textwrap.dedent(
        f"""
        from privad.accounting import Guarantee, Ledger
        with Ledger({str(ledger)!r}) as book:
            book.set_budget("census", "pure-dp", 1.0)
            g = Guarantee("pure-dp", 0.1, "add or remove one record")
            for i in range(3):
                book.spend("census", g, f"noisy count {{i}}")
            book.set_budget("aiq", "sensitive", 2.0)
            book.spend("aiq", Guarantee("sensitive", 0.5, "k-sensitive graph", k=3), "record 17")
        """
    )
    subprocess.run([sys.executable, "-c", writer], check=True, timeout=60)
    code, out, err = run("budget", "show", "--ledger", str(ledger))
    assert code == 0, err
    for text in ("census", "pure-dp", "0.3", "0.7", "noisy count 2", "aiq", "record 17"):
        assert text in out
    code, out, _ = run("budget", "show", "--ledger", str(ledger), "--scope", "aiq")
    assert "record 17" in out and "noisy count" not in out
    code, out, _ = run("budget", "show", "--ledger", str(ledger), "--last", "1")
    assert "record 17" in out and "noisy count" not in out and "3 earlier spend(s)" in out
    code, out, _ = run("budget", "statement", "--ledger", str(ledger))
    assert code == 0 and "budget ε 1.0; spent 0.3; remaining 0.7; 3 spends" in out


def test_show_empty_ledger(run, tmp_path: Path) -> None:
    ledger = tmp_path / "e.sqlite"
    Ledger(ledger).close()
    code, out, _ = run("budget", "show", "--ledger", str(ledger))
    assert code == 0 and "No budgets and no spends" in out


def test_show_counts_pure_dp_spends_toward_the_implied_notions(run, tmp_path: Path) -> None:
    ledger = str(tmp_path / "i.sqlite")
    for notion in ("pure-dp", "sensitive"):
        code, _, err = run(
            "budget", "set", "s", "--epsilon", "2", "--notion", notion, "--ledger", ledger
        )
        assert code == 0, err
    with Ledger(ledger) as book:
        book.spend("s", Guarantee("pure-dp", 1.0, "add or remove one record"), "dp answer")
        book.spend("s", Guarantee("sensitive", 1.0, "1-sensitive graph", k=1), "sp answer")
    code, out, err = run("budget", "show", "--ledger", ledger)
    assert code == 0, err
    rows = {
        tuple(cell.strip() for cell in line.split("│")[1:3]): line
        for line in out.splitlines()
        if line.count("│") == 7
    }
    assert "2.0 (1.0 own + 1.0 implied by pure-dp)" in rows[("s", "sensitive")]
    assert " 0.0 " in rows[("s", "sensitive")]  # remaining
    assert "1.0 (1.0 implied by pure-dp)" in rows[("s", "anomaly-restricted-dp")]
    assert "—" in rows[("s", "relaxed-dp")]  # no budget: no total, no remaining
    code, out, _ = run("budget", "statement", "--ledger", ledger)
    assert code == 0
    assert "budget ε 2.0; spent 2.0 (1.0 own + 1.0 implied by pure-dp); remaining 0.0" in out
    code, _, err = run(
        "budget", "set", "s", "--epsilon", "1.5", "--notion", "sensitive", "--ledger", ledger
    )
    assert code == 2 and "1.0 implied by pure-dp" in err


def _ledger_with_spends(path: Path) -> None:
    with Ledger(path) as book:
        book.set_budget("a", "pure-dp", 1.0)
        book.set_budget("b", "pure-dp", 1.0)
        g = Guarantee("pure-dp", 0.25, "add or remove one record")
        book.spend("a", g, "qa")
        book.spend("b", g, "qb")


def test_reset_yes(run, tmp_path: Path) -> None:
    ledger = tmp_path / "r.sqlite"
    _ledger_with_spends(ledger)
    code, out, _ = run("budget", "reset", "--scope", "a", "--yes", "--ledger", str(ledger))
    assert code == 0 and "1 spend(s) deleted" in out
    with Ledger(ledger) as book:
        assert book.remaining("a", "pure-dp") == 1.0
        assert book.remaining("b", "pure-dp") == 0.75
    code, _, _ = run("budget", "reset", "--yes", "--drop-budgets", "--ledger", str(ledger))
    assert code == 0
    with Ledger(ledger) as book:
        assert book.budgets() == [] and book.history() == []


def test_reset_without_yes_and_without_stdin_refuses(run, error_line, tmp_path: Path) -> None:
    ledger = tmp_path / "r.sqlite"
    _ledger_with_spends(ledger)
    code, _, err = run("budget", "reset", "--ledger", str(ledger), stdin="")
    assert code == 2
    assert "pass --yes" in error_line(err)
    with Ledger(ledger) as book:
        assert len(book.history()) == 2


def test_reset_asks_for_confirmation(run, tmp_path: Path) -> None:
    ledger = tmp_path / "r.sqlite"
    _ledger_with_spends(ledger)
    code, out, _ = run("budget", "reset", "--ledger", str(ledger), stdin="n\n")
    assert code == 1 and "Nothing was reset" in out
    with Ledger(ledger) as book:
        assert len(book.history()) == 2
    code, out, _ = run("budget", "reset", "--ledger", str(ledger), stdin="y\n")
    assert code == 0 and "2 spend(s) deleted" in out


def test_cancel_gives_back_a_reservation_after_confirmation(
    run, error_line, tmp_path: Path
) -> None:
    ledger = tmp_path / "c.sqlite"
    with Ledger(ledger) as book:
        book.set_budget("s", "pure-dp", 1.0)
        held = book.reserve(
            "s",
            Guarantee("pure-dp", 0.25, "add or remove one record"),
            "a run killed before its commit",
        )
        assert book.remaining("s", "pure-dp") == 0.75
    code, out, _ = run("budget", "show", "--ledger", str(ledger))
    assert code == 0 and "reserved" in out
    assert [r.split("│")[1].strip() for r in out.splitlines() if "killed before" in r] == [
        str(held.id)
    ]
    code, out, _ = run("budget", "cancel", str(held.id), "--ledger", str(ledger), stdin="n\n")
    assert code == 1 and "Nothing was cancelled" in out
    code, out, err = run("budget", "cancel", str(held.id), "--ledger", str(ledger), stdin="y\n")
    assert code == 0, err
    assert f"Cancelled reservation #{held.id} ('a run killed before its commit'" in out
    assert "remaining ε of scope 's': pure-dp 1" in out
    code, out, _ = run("budget", "cancel", str(held.id), "--ledger", str(ledger))
    assert code == 0 and "was already cancelled" in out
    code, _, err = run("budget", "cancel", "99", "--ledger", str(ledger), "--yes")
    assert code == 2 and "spend #99 is not in ledger" in error_line(err)
    with Ledger(ledger) as book:
        assert book.remaining("s", "pure-dp") == 1.0
        assert book.get_spend(held.id).status == "cancelled"


@pytest.mark.parametrize("bad", ["-1", "0", "abc", "nan", "inf", ""])
def test_bad_epsilon_is_one_line_exit_2(run, error_line, tmp_path: Path, bad: str) -> None:
    ledger = tmp_path / "l.sqlite"
    code, out, err = run("budget", "set", "s", "--epsilon", bad, "--ledger", str(ledger))
    assert code == 2
    assert "--epsilon must be a finite number > 0" in error_line(err)
    assert not ledger.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["budget", "set", "s", "--epsilon", "1", "--notion", "rmp"], "--notion must be one of"),
        (["budget", "set", " ", "--epsilon", "1"], "scope must be a non-empty string"),
        (["budget", "set", "s", "--epsilon", "1", "--delta", "1"], "--delta must be a number"),
        (["budget", "set", "s", "--epsilon", "1", "--delta", "0"], "--delta must be a number"),
        (["budget", "set", "s", "--epsilon", "1", "--delta", "x"], "--delta must be a number"),
        (["budget", "show", "--last", "-3"], "--last must be an integer >= 0"),
        (["budget", "show", "--ledger", "{missing}"], "no ledger at"),
        (["budget", "show", "--ledger", "{dir}"], "is a directory"),
        (["budget", "show", "--ledger", "{text}"], "not a privad ledger"),
        (["budget", "reset", "--yes", "--ledger", "{missing}"], "no ledger at"),
    ],
)
def test_errors_are_one_line_exit_2(
    run, error_line, tmp_path: Path, args: list[str], message: str
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database " * 20)
    subs = {"{missing}": str(tmp_path / "none.sqlite"), "{dir}": str(tmp_path), "{text}": str(text)}
    code, _, err = run(*[subs.get(a, a) for a in args])
    assert code == 2
    assert message in error_line(err)


def test_lowering_below_spent_is_refused(run, error_line, tmp_path: Path) -> None:
    ledger = tmp_path / "r.sqlite"
    _ledger_with_spends(ledger)
    code, _, err = run("budget", "set", "a", "--epsilon", "0.1", "--ledger", str(ledger))
    assert code == 2 and "already spent" in error_line(err)


def test_help_states_meaning_and_range(run) -> None:
    code, out, _ = run("budget", "set", "--help")
    assert code == 0
    assert "finite number > 0" in out and "pure-dp" in out and "PRIVAD_LEDGER" in out
    code, out, _ = run("budget", "reset", "--help")
    assert code == 0 and "--yes" in out and "--drop-budgets" in out
    code, out, _ = run("budget", "show", "--help")
    assert code == 0 and "integer >= 0" in out


def test_real_entry_point_in_a_subprocess(tmp_path: Path) -> None:
    """The real ``privad.cli.main``, with the budget group registered, in a fresh process."""
    script = (
        "import sys, privad.cli as c\n"
        "from privad.cli import budget\n"
        "budget.register(c.app)\n"
        "c.main(sys.argv[1:])\n"
    )
    ledger = str(tmp_path / "sub.sqlite")
    ok = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "budget",
            "set",
            "x",
            "--epsilon",
            "0.5",
            "--ledger",
            ledger,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(
        [sys.executable, "-c", script, "budget", "set", "x", "--epsilon", "-2", "--ledger", ledger],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "privad: error: --epsilon must be a finite number > 0 (e.g. 1.0), got '-2'"
    ]
    with Ledger(ledger) as book:
        assert book.remaining("x", "pure-dp") == 0.5
