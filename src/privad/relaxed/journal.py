"""The sensor's durable record of what it has released: resume without re-release.

**Rows, not windows.** What was released is recorded row by row. A row's key is a link of a
hash chain over the input stream (:class:`RowChain`):

    k₋₁ = SHA-256("privad relaxed row chain v1"),   k_i = SHA-256(k_{i−1} ‖ row_i)      (J1)

with row_i its float64 little-endian values, so k_i identifies "row i of a stream whose
first i + 1 rows are exactly these" — the same key whatever window size, window number,
file name or folder (a copy of the file, or the stream replayed on standard input) it comes
from, while equal readings at different places of a stream (a meter that reads 0 twice)
keep different keys. A rerun of an interrupted stream meets the keys of the rows it
released before and skips them, whatever ``--window`` it is given.

**Windows.** The ledger still charges a window as a whole, in a scope keyed by the content
digest of its records (:func:`privad.io.rows_digest`), since windows hold disjoint records.

**Write-ahead.** The sensor writes a window's two outgoing messages and its row keys to the
journal *before* anything leaves the process; once both servers acknowledged them it keeps
only the keys, the digest and the window number (the noise is not retained). After a crash
the pending messages are sent again byte for byte: an identical copy, which the servers
acknowledge as a duplicate and which carries no new information, instead of a second noisy
copy of the same readings.

Statuses: ``pending`` (journalled, nothing acknowledged), ``partial`` (the correction
server stored d_diff), ``sent`` (both servers hold it), ``closed`` (the analyst ran the
detection and correction of the window and answered).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from privad.errors import LedgerError
from privad.io import private_file, private_folder
from privad.validation import check_choice

__all__ = [
    "JOURNAL_ENV",
    "STATUSES",
    "Release",
    "ReleaseJournal",
    "RowChain",
    "default_journal_path",
]

JOURNAL_ENV = "PRIVAD_SENSOR_JOURNAL"
"""Environment variable naming the default journal file."""

STATUSES: tuple[str, ...] = ("pending", "partial", "sent", "closed")
"""A release's progress, in order."""

_VERSION = 2  # 1: releases keyed by window content only (no row keys)

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
CREATE INDEX IF NOT EXISTS releases_destination ON releases (destination, win);
CREATE TABLE IF NOT EXISTS released_rows (
    key BLOB NOT NULL,
    release INTEGER NOT NULL REFERENCES releases (id)
);
CREATE INDEX IF NOT EXISTS released_rows_key ON released_rows (key);
"""

_CHAIN_START = hashlib.sha256(b"privad relaxed row chain v1").digest()
_KEY_BYTES = 16  # of each SHA-256 link kept (a collision among 2^32 rows: about 2^-65)
_LOOKUP_CHUNK = 500  # keys per query (below every SQLite version's variable limit)


def default_journal_path() -> Path:
    """``$PRIVAD_SENSOR_JOURNAL`` if set, else ``~/.privad/sensor-journal.sqlite``."""
    env = os.environ.get(JOURNAL_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".privad" / "sensor-journal.sqlite"


class RowChain:
    """The row keys (J1) of one input stream, block by block: ``keys(block)`` returns the
    keys of the block's rows and continues the chain after them.

    A new chain starts a new stream: ``RowChain().keys(X)`` equals the concatenated
    ``keys`` of any split of X into consecutive blocks.
    """

    def __init__(self) -> None:
        self._last = _CHAIN_START

    def keys(self, block: Any) -> list[bytes]:
        """The keys of the rows of ``block`` (n × d), in order."""
        arr = np.ascontiguousarray(np.asarray(block, dtype="<f8"))
        out = []
        last = self._last
        for row in arr.reshape(arr.shape[0], -1):
            last = hashlib.sha256(last + row.tobytes()).digest()
            out.append(last[:_KEY_BYTES])
        self._last = last
        return out


@dataclass(frozen=True)
class Release:
    """One journalled release of a window of records."""

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
    """An SQLite file of the sensor's releases and of every row they released
    (synchronous=FULL: a crash loses nothing that was journalled). Use as a context manager
    or call :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        target = default_journal_path() if path is None else Path(path)
        try:
            if path is None:  # only privad's own default location is created (0700)
                private_folder(target.parent)
            private_file(target)  # 0600, and so are its -wal/-shm files
            self._conn = sqlite3.connect(str(target), isolation_level=None, timeout=30.0)
            self._conn.execute("PRAGMA synchronous=FULL")
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            old = self._conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'releases'"
            ).fetchone()
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"cannot open the sensor journal {target}: {exc}") from None
        if old is not None and version < _VERSION:
            self._conn.close()
            raise LedgerError(
                f"the sensor journal {target} was written by an earlier privad, which keyed "
                "releases by window content only, so it cannot say which rows were released; "
                "finish its streams with that version, or move the file away and start a new "
                "journal (records released before are then not recognised)"
            )
        try:
            self._conn.executescript(_SCHEMA)
            self._conn.execute(f"PRAGMA user_version = {_VERSION}")
        except sqlite3.Error as exc:
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
            f"to_correction, spend_id, forced FROM releases WHERE {where} ORDER BY id",
            args,
        ).fetchall()
        return [
            Release(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                r[6],
                r[7],
                None if r[8] is None else json.loads(r[8]),
                None if r[9] is None else json.loads(r[9]),
                r[10],
                bool(r[11]),
            )
            for r in rows
        ]

    def releases(self, destination: str | None = None) -> list[Release]:
        """Every release (to ``destination`` only, if given), oldest first."""
        if destination is None:
            return self._rows("1 = 1", ())
        return self._rows("destination = ?", (destination,))

    def unfinished(self, destination: str) -> list[Release]:
        """The releases to ``destination`` that were not closed, oldest first."""
        return self._rows("destination = ? AND status != 'closed'", (destination,))

    def released(self, keys: Sequence[bytes]) -> dict[bytes, int]:
        """For each of ``keys`` released before: the window number of its latest release."""
        found: dict[bytes, int] = {}
        keys = list(keys)
        for lo in range(0, len(keys), _LOOKUP_CHUNK):
            part = keys[lo : lo + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(part))
            for key, win in self._conn.execute(
                "SELECT k.key, r.win FROM released_rows k JOIN releases r ON r.id = k.release "
                f"WHERE k.key IN ({marks}) ORDER BY r.id",
                part,
            ):
                found[bytes(key)] = int(win)
        return found

    def next_window(self, destination: str) -> int:
        """1 + the largest window number journalled for ``destination`` (0 if none)."""
        row = self._conn.execute(
            "SELECT MAX(win) FROM releases WHERE destination = ?", (destination,)
        ).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def begin(
        self,
        digest: str,
        window: int,
        n: int,
        *,
        keys: Iterable[bytes],
        source: str,
        first_row: int | None,
        destination: str,
        to_analyst: dict[str, Any],
        to_correction: dict[str, Any],
        forced: bool = False,
    ) -> int:
        """Journal a release and its row keys, in one transaction, before it leaves (status
        ``pending``); returns its id."""
        now = _now()
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute(
                "INSERT INTO releases (digest, win, source, first_row, n, destination, status, "
                "to_analyst, to_correction, forced, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
                (
                    digest,
                    int(window),
                    source,
                    first_row,
                    int(n),
                    destination,
                    json.dumps(to_analyst),
                    json.dumps(to_correction),
                    int(forced),
                    now,
                    now,
                ),
            )
            release_id = int(cur.lastrowid)  # type: ignore[arg-type]
            conn.executemany(
                "INSERT INTO released_rows (key, release) VALUES (?, ?)",
                ((k, release_id) for k in keys),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return release_id

    def update(
        self, release_id: int, *, status: str | None = None, spend_id: int | None = None
    ) -> None:
        """Record progress; ``status="sent"`` (or later) also drops the stored messages (the
        noise)."""
        sets, args = ["updated_at = ?"], [_now()]
        if spend_id is not None:
            sets.append("spend_id = ?")
            args.append(int(spend_id))  # type: ignore[arg-type]
        if status is not None:
            check_choice(status, "status", STATUSES)
            sets.append("status = ?")
            args.append(status)
            if STATUSES.index(status) >= STATUSES.index("sent"):
                sets.append("to_analyst = NULL, to_correction = NULL")
        self._conn.execute(
            f"UPDATE releases SET {', '.join(sets)} WHERE id = ?", (*args, int(release_id))
        )
