"""The sensor's durable record of what it has released: resume without re-release.

A window's records are identified by a content digest (:func:`rows_digest`: SHA-256 of
the values and the shape), not by a window number or a file name, so the same readings
are recognised whatever window number, file or folder they come from. The sensor writes
the window's two outgoing messages to the journal *before* anything leaves the process;
once both servers acknowledged them it keeps only the digest, the row range and the window
number (the noise is not retained). After a crash the pending messages are sent again
byte for byte: an identical copy, which the servers acknowledge as a duplicate and which
carries no new information, instead of a second noisy copy of the same readings.

Statuses: ``pending`` (journalled, nothing acknowledged), ``partial`` (the correction
server stored d_diff: the window number is fixed), ``sent`` (both servers hold it).
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from privad.errors import LedgerError
from privad.io import rows_digest

__all__ = [
    "JOURNAL_ENV",
    "Release",
    "ReleaseJournal",
    "default_journal_path",
    "rows_digest",
]

JOURNAL_ENV = "PRIVAD_SENSOR_JOURNAL"
"""Environment variable naming the default journal file."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    digest TEXT NOT NULL,
    win INTEGER NOT NULL,
    source TEXT NOT NULL,
    first_row INTEGER,
    n INTEGER NOT NULL,
    destination TEXT NOT NULL,
    status TEXT NOT NULL,
    to_analyst TEXT,
    to_correction TEXT,
    spend_id INTEGER,
    forced INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS releases_digest ON releases (digest);
"""


def default_journal_path() -> Path:
    """``$PRIVAD_SENSOR_JOURNAL`` if set, else ``~/.privad/sensor-journal.sqlite``."""
    env = os.environ.get(JOURNAL_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".privad" / "sensor-journal.sqlite"


@dataclass(frozen=True)
class Release:
    """One journalled release of a block of records."""

    id: int
    digest: str
    window: int
    source: str
    first_row: int | None
    n: int
    destination: str
    status: str
    to_analyst: dict[str, Any] | None
    to_correction: dict[str, Any] | None
    spend_id: int | None
    forced: bool


def _now() -> str:
    return datetime.now(UTC).isoformat()


class ReleaseJournal:
    """An SQLite file of the sensor's releases (synchronous=FULL: a crash loses nothing
    that was journalled). Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        target = default_journal_path() if path is None else Path(path)
        try:
            if str(target) != ":memory:":
                target.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(target), isolation_level=None, timeout=30.0)
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"cannot open the sensor journal {target}: {exc}") from None
        self.path = str(target)

    def close(self) -> None:
        """Close the file."""
        self._conn.close()

    def __enter__(self) -> ReleaseJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, where: str, args: tuple[Any, ...]) -> list[Release]:
        rows = self._conn.execute(
            "SELECT id, digest, win, source, first_row, n, destination, status, to_analyst, "
            f"to_correction, spend_id, forced FROM releases WHERE {where} ORDER BY id", args,
        ).fetchall()
        return [Release(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
                        None if r[8] is None else json.loads(r[8]),
                        None if r[9] is None else json.loads(r[9]), r[10], bool(r[11]))
                for r in rows]  # fmt: skip

    def find(self, digest: str) -> list[Release]:
        """Every release of the records with this digest, oldest first."""
        return self._rows("digest = ?", (digest,))

    def releases(self) -> list[Release]:
        """Every release, oldest first."""
        return self._rows("1 = 1", ())

    def begin(self, digest: str, window: int, n: int, *, source: str, first_row: int | None,
              destination: str, to_analyst: dict[str, Any], to_correction: dict[str, Any],
              forced: bool = False) -> int:  # fmt: skip
        """Journal a release before it leaves (status ``pending``); returns its id."""
        now = _now()
        cur = self._conn.execute(
            "INSERT INTO releases (digest, win, source, first_row, n, destination, status, "
            "to_analyst, to_correction, forced, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
            (digest, int(window), source, first_row, int(n), destination,
             json.dumps(to_analyst), json.dumps(to_correction), int(forced), now, now),
        )  # fmt: skip
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def update(self, release_id: int, *, window: int | None = None, status: str | None = None,
               spend_id: int | None = None) -> None:  # fmt: skip
        """Record progress; ``status="sent"`` also drops the stored messages (the noise)."""
        sets, args = ["updated_at = ?"], [_now()]
        if window is not None:
            sets.append("win = ?")
            args.append(int(window))  # type: ignore[arg-type]
        if spend_id is not None:
            sets.append("spend_id = ?")
            args.append(int(spend_id))  # type: ignore[arg-type]
        if status is not None:
            sets.append("status = ?")
            args.append(status)
            if status == "sent":
                sets.append("to_analyst = NULL, to_correction = NULL")
        self._conn.execute(f"UPDATE releases SET {', '.join(sets)} WHERE id = ?",
                           (*args, int(release_id)))  # fmt: skip
