"""``privad sp identify --out`` on a full disk (issue 26, item 4): one line on standard
error, exit status 2, no output, and the spend cancelled, never committed.

Before the fix the labels were written through a buffer that was flushed only after the
spend was committed: on a real full file system the command printed a 70-line OSError
traceback, wrote nothing and kept the 182.5 ε it had charged."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from privad.accounting import Ledger
from privad.cli import budget, sp
from privad.datasets import load
from privad.sensitive.accounting import claim5_bound


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "default.sqlite"))
    monkeypatch.chdir(tmp_path)
    return privad_cli(budget, sp)


def _identify(run, ledger: Path, out: Path) -> tuple[int, str, str]:
    return run(
        *("sp", "identify", "thyroid", "--beta", "18", "--r", "0.1", "--epsilon", "0.1"),
        *("--ledger", str(ledger), "--out", str(out), "--seed", "0", "--budget", "1000"),
    )


def _statuses(ledger: Path) -> tuple[float, list[str]]:
    with Ledger(ledger) as book:
        return book.spent("thyroid", "sensitive"), [s.status for s in book.history("thyroid")]


def _check_nothing_charged(run, error_line, ledger: Path, out: Path) -> None:
    code, _, err = _identify(run, ledger, out)
    assert code == 2
    line = error_line(err)
    assert f"cannot write '{out}': No space left on device; nothing was published" in line
    assert not out.exists()
    assert not [p.name for p in out.parent.iterdir() if p.name.endswith(".part")]
    assert _statuses(ledger) == (0.0, ["cancelled"])


def test_an_injected_enospc_cancels_the_spend(run, error_line, tmp_path: Path) -> None:
    def enospc(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", enospc)
        _check_nothing_charged(run, error_line, tmp_path / "l.sqlite", tmp_path / "labels.csv")
    code, _, err = _identify(run, tmp_path / "l.sqlite", tmp_path / "labels.csv")
    assert code == 0, err
    cost = claim5_bound(load("thyroid").X, 0.1).m * 0.1  # m answers of 0.1 (Claim 5)
    assert _statuses(tmp_path / "l.sqlite") == (pytest.approx(cost), ["cancelled", "committed"])


@pytest.mark.parametrize("free", [28 * 1024, 4096])
def test_a_real_full_file_system_cancels_the_spend(
    run, error_line, tmp_path: Path, full_disk, free: int
) -> None:
    """The 30 kB of labels on a tmpfs with 28 kB free fail at the last flush (the case
    that was committed), with 4 kB free at the first write."""
    out = full_disk(free) / "labels.csv"
    _check_nothing_charged(run, error_line, tmp_path / "l.sqlite", out)
