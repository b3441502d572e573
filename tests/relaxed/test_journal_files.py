"""The relaxed sensor's journal (every row it released) is private to its owner."""

from __future__ import annotations

from pathlib import Path

import pytest

from privad.relaxed.journal import JOURNAL_ENV, ReleaseJournal


def test_the_journal_and_its_default_folder_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(JOURNAL_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with ReleaseJournal():
        pass
    path = tmp_path / ".privad" / "sensor-journal.sqlite"
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    given = tmp_path / "j.sqlite"
    with ReleaseJournal(given):
        pass
    assert given.stat().st_mode & 0o777 == 0o600
