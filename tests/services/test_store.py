"""SQLiteStore's shared writes and reads: a record stored once per key, one-query reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from privad.errors import DataError
from privad.services.errors import Conflict
from privad.services.store import SQLiteStore

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS t (sensor TEXT NOT NULL, win INTEGER NOT NULL, v BLOB NOT NULL, "
    "x REAL NOT NULL, received_at TEXT NOT NULL, PRIMARY KEY (sensor, win))"
)


@pytest.fixture
def store(tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite", role="test", schema=SCHEMA)
    yield store
    store.close()


def _rows(store: SQLiteStore) -> list[tuple]:
    return store.read_all("SELECT sensor, win, v, x FROM t ORDER BY sensor, win")


def test_put_once_stores_acknowledges_a_copy_and_refuses_another(store: SQLiteStore) -> None:
    key = {"sensor": "s1", "win": 3}
    assert store.put_once("t", key, {"v": b"\x01\x02", "x": 0.5}, "taken") is True
    first = store.read_one("SELECT received_at FROM t WHERE sensor = ? AND win = ?", ("s1", 3))
    assert first is not None and first[0].endswith("+00:00")  # stamped in UTC
    # an identical copy (a retry after a lost answer): acknowledged, nothing written
    assert store.put_once("t", key, {"v": b"\x01\x02", "x": 0.5}, "taken") is False
    for other in ({"v": b"\x01\x03", "x": 0.5}, {"v": b"\x01\x02", "x": 0.25}):
        with pytest.raises(Conflict, match="^window 3 is taken$"):
            store.put_once("t", key, other, "window 3 is taken")
    # another key is another record
    assert store.put_once("t", {"sensor": "s1", "win": 4}, {"v": b"", "x": 1.0}, "taken")
    assert _rows(store) == [("s1", 3, b"\x01\x02", 0.5), ("s1", 4, b"", 1.0)]
    assert store.read_one("SELECT v FROM t WHERE win = ?", (9,)) is None


def test_put_once_check_refuses_a_new_row_before_it_is_written(store: SQLiteStore) -> None:
    seen: list[int] = []

    def refuse(conn: sqlite3.Connection) -> None:
        seen.append(conn.execute("SELECT COUNT(*) FROM t").fetchone()[0])
        raise DataError("wrong width")

    with pytest.raises(DataError, match="wrong width"):
        store.put_once("t", {"sensor": "s", "win": 0}, {"v": b"a", "x": 1.0}, "taken", refuse)
    assert seen == [0] and _rows(store) == []
    store.put_once("t", {"sensor": "s", "win": 0}, {"v": b"a", "x": 1.0}, "taken")
    # a stored copy is answered before the check runs: a retry is never refused by it
    assert not store.put_once("t", {"sensor": "s", "win": 0}, {"v": b"a", "x": 1.0}, "t", refuse)
    assert seen == [0]
