"""Resume without re-release: the journal records released rows by row key, so a sender
interrupted midway (after journalling a window, before its uploads) is resumed, whatever
window size the rerun uses, and every row reaches the servers exactly once."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privad.accounting import Ledger
from privad.errors import LedgerError
from privad.io import rows_digest
from privad.relaxed import Sensor
from privad.relaxed.journal import ReleaseJournal, RowChain
from privad.services.clients import AnalystClient, CorrectionClient
from privad.services.sensor_client import AlreadyReleased, SensorUploader, SkippedRows


class Killed(Exception):
    pass


def test_row_keys_are_a_chain_over_the_stream() -> None:
    X = np.array([[1.0, 2.0], [0.0, 0.0], [3.5, -1.0], [0.0, 0.0]])
    start = hashlib.sha256(b"privad relaxed row chain v1").digest()
    k0 = hashlib.sha256(start + np.array([1.0, 2.0], "<f8").tobytes()).digest()
    k1 = hashlib.sha256(k0 + np.zeros(2, "<f8").tobytes()).digest()
    keys = RowChain().keys(X)
    assert keys[:2] == [k0[:16], k1[:16]]
    chain = RowChain()  # any split of the stream gives the same keys
    assert chain.keys(X[:1]) + chain.keys(X[1:3]) + chain.keys(X[3:]) == keys
    assert keys[1] != keys[3]  # equal readings at different places: different records
    assert RowChain().keys(X[1:])[0] != keys[1]  # another stream (another prefix)


class Sender:
    """Sensor s0's clients of a pair of threaded servers, its ledger and its journal."""

    def __init__(self, servers: Any, ring: Any, secrets: dict[str, str], tmp_path: Path) -> None:
        analyst, cs = servers.pair()
        self.ring = ring
        self.a = AnalystClient(analyst.url, secrets["s0"])
        self.c = CorrectionClient(cs.url, secrets["s0"])
        self.book = Ledger(tmp_path / "l.sqlite", default_budget=4.0)
        self.journal = ReleaseJournal(tmp_path / "j.sqlite")

    def uploader(self) -> SensorUploader:
        """A new sensor per run: new noise for new windows."""
        sensor = Sensor(1.0, self.ring.rs, global_sensitivity=400)
        return SensorUploader(sensor, self.a, self.c, ledger=self.book, journal=self.journal)


@pytest.fixture
def sender(servers: Any, ring: Any, secrets: dict[str, str], tmp_path: Path) -> Iterator[Sender]:
    """A :class:`Sender`, its clients, ledger and journal closed at teardown."""
    parts = Sender(servers, ring, secrets, tmp_path)
    yield parts
    for x in (parts.a, parts.c, parts.journal, parts.book):
        x.close()


def test_interrupted_sender_resumes_with_another_window_size(ring, sender) -> None:
    a, c, book, journal = sender.a, sender.c, sender.book, sender.journal
    X = ring.data[:2000]
    up = sender.uploader()
    events = up.send_stream(X.tolist(), 400)
    first = [next(events), next(events)]  # windows 0 and 1
    assert [(r.window, r.first_row, r.status) for r in first] == [(0, 0, "sent"), (1, 400, "sent")]
    # "kill" window 2 after it was journalled and charged, before anything was sent
    real = c.put_differences
    c.put_differences = lambda *args: (_ for _ in ()).throw(Killed())  # type: ignore[method-assign]
    with pytest.raises(Killed):
        next(events)
    c.put_differences = real  # type: ignore[method-assign]
    assert [r.status for r in journal.releases()] == ["closed", "closed", "pending"]
    # the rerun walks the whole stream again, in windows of 300
    got = list(sender.uploader().send_stream(X.tolist(), 300))
    assert isinstance(got[1], SkippedRows)
    assert (got[1].first_row, got[1].n, got[1].windows) == (0, 1200, (0, 1, 2))
    windows = [
        (r.window, r.n, r.first_row, r.status) for r in got if not isinstance(r, SkippedRows)
    ]
    assert windows == [
        (2, 400, 800, "resumed"),
        (3, 300, 1200, "sent"),
        (4, 300, 1500, "sent"),
        (5, 200, 1800, "sent"),
    ]
    stored = a.windows()
    assert [(x["window"], x["n"], x["status"]) for x in stored] == [
        (0, 400, "closed"),
        (1, 400, "closed"),
        (2, 400, "closed"),
        (3, 300, "closed"),
        (4, 300, "closed"),
        (5, 200, "closed"),
    ]
    # every row once: the windows' digests are those of consecutive row ranges
    bounds = [0, 400, 800, 1200, 1500, 1800, 2000]
    spends = [s for s in book.history() if s.status == "committed"]
    assert [s.metadata["digest"] for s in spends] == [
        rows_digest(X[lo:hi]) for lo, hi in zip(bounds, bounds[1:], strict=False)
    ]
    with sqlite3.connect(journal.path) as conn:
        assert conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT key) FROM released_rows"
        ).fetchone() == (2000, 2000)
    assert all(r.status == "closed" and r.to_analyst is None for r in journal.releases())
    # a third run has nothing left to send
    assert [type(r).__name__ for r in sender.uploader().send_stream(X.tolist(), 1000)] == [
        "SkippedRows"
    ]


def test_released_rows_are_refused_or_forced_whatever_the_window(ring, sender) -> None:
    book, journal, X = sender.book, sender.journal, ring.data[:1000]
    up = sender.uploader()
    assert [r.n for r in up.send_stream(X[:600].tolist(), 300)] == [300, 300]
    # the same stream, longer and cut in windows of 250: rows 0..599 are released
    with pytest.raises(AlreadyReleased, match="250 of rows 0..249 were already released"):
        next(up.send_stream(X.tolist(), 250, on_released="refuse"))
    # a window made of released rows, as send_window sees it (keys of the stream)
    keys = RowChain().keys(X)
    with pytest.raises(AlreadyReleased, match=r"100 of the 200 records of window 9"):
        up.send_window(9, X[500:700], keys=keys[500:700])
    got = list(up.send_stream(X.tolist(), 250))  # skip: rows 600..999 in windows of 250
    assert [(type(r).__name__, r.n) for r in got] == [
        ("SkippedRows", 600),
        ("WindowReport", 250),
        ("WindowReport", 150),
    ]
    assert [r.window for r in got[1:]] == [2, 3]  # after the journal's windows 0, 1
    n_spends = len(book.history())
    forced = list(up.send_stream(X[:500].tolist(), 500, on_released="force"))
    assert [(r.window, r.status) for r in forced] == [(4, "forced")]
    assert len(book.history()) == n_spends + 1  # a forced re-release is charged
    with sqlite3.connect(journal.path) as conn:  # rows 0..499 now have two releases
        assert conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT key) FROM released_rows"
        ).fetchone() == (1500, 1000)


def test_a_journal_without_row_keys_is_refused(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as conn:
        conn.execute("CREATE TABLE releases (id INTEGER PRIMARY KEY, digest TEXT)")
    with pytest.raises(LedgerError, match="earlier privad, which keyed releases by window"):
        ReleaseJournal(old)
