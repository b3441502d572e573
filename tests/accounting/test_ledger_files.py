"""The ledger's files are private to their owner: the file and its -wal/-shm 0600, the
folders it creates 0700 (a ledger holds every querier's questions and spends)."""

from __future__ import annotations

from pathlib import Path

from privad.accounting import Ledger


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_a_new_ledger_and_its_folders_are_private(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "ledger.sqlite"
    with Ledger(path, create=True) as book:
        book.set_budget("s", "pure-dp", 1.0)
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert [_mode(p) for p in files] == [0o600] * 3
    assert [_mode(tmp_path / "a"), _mode(tmp_path / "a" / "b")] == [0o700, 0o700]


def test_an_existing_ledger_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    Ledger(path, create=True).close()
    path.chmod(0o640)  # the owner's choice
    Ledger(path).close()
    assert _mode(path) == 0o640
