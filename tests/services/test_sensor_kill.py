"""Kill and resume, with real processes: ``privad serve correction`` and ``privad serve
analyst`` on loopback, ``privad sensor send -`` fed window by window on standard input and
SIGKILLed while a window is half uploaded, then ``privad sensor send FILE`` again with
another ``--window``. Every input row must reach both servers exactly once, every window be
closed, and the ledger charge every row once.

Deterministic: the test feeds the sender two windows and waits until the journal shows them
closed (the sender then waits for input), stops the analyst (SIGSTOP), feeds the third
window and waits until the journal shows it ``partial`` (the correction server stored
d_diff; the upload to the analyst hangs), and only then kills the sender.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

from privad.accounting import Ledger
from privad.io import rows_digest

N, FIRST_WINDOW, RERUN_WINDOW = 1000, 200, 150
EPSILON = "1000"  # noise scale 1/1000 on integer-spaced rows: T' rounds back to the row


def _rows() -> np.ndarray:
    i = np.arange(N, dtype=np.float64)
    return np.column_stack([i, (i * 37) % 101])  # column 0 names the row


def _csv(X: np.ndarray) -> str:
    return "".join(f"{a:g},{b:g}\n" for a, b in X)


def _wait_for(journal: Path, sql: str, want: int, proc: Any, timeout: float = 60.0) -> None:
    """Poll the sender's journal until ``sql`` counts ``want`` rows."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, (proc.out.read_text(), proc.err.read_text())
        if journal.exists():
            try:
                with sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=1) as conn:
                    if conn.execute(sql).fetchone()[0] >= want:
                        return
            except sqlite3.OperationalError:  # not created yet, or busy
                pass
        time.sleep(0.05)
    raise AssertionError(
        f"the journal never showed {want} for {sql!r}: {proc.err.read_text()[-2000:]}"
    )


def test_killed_sender_resumes_and_every_row_reaches_the_servers_once(
    tmp_path: Path, processes, cli_process, secrets
) -> None:
    cs, analyst = processes.pair(1.0, 2.0, 3)
    journal, ledger = tmp_path / "journal.sqlite", tmp_path / "ledger.sqlite"
    to = ["--analyst", analyst.url, "--correction", cs.url, "--token", secrets["s0"]]
    common = [*to, "--epsilon", EPSILON, "--relaxed-sensitivity", "1,1"]
    common += ["--global-sensitivity", "2000", "--journal", str(journal), "--ledger", str(ledger)]
    X = _rows()

    sender = cli_process("sensor", "send", "-", "--window", str(FIRST_WINDOW), *common)
    assert sender.stdin is not None
    sender.stdin.write(_csv(X[: 2 * FIRST_WINDOW]).encode())
    sender.stdin.flush()
    _wait_for(journal, "SELECT COUNT(*) FROM releases WHERE status = 'closed'", 2, sender)
    os.kill(analyst.proc.pid, signal.SIGSTOP)  # the next upload to the analyst hangs
    try:
        sender.stdin.write(_csv(X[2 * FIRST_WINDOW : 3 * FIRST_WINDOW + 50]).encode())
        sender.stdin.flush()
        _wait_for(journal, "SELECT COUNT(*) FROM releases WHERE status = 'partial'", 1, sender)
        sender.send_signal(signal.SIGKILL)
        sender.wait(10)
    finally:
        os.kill(analyst.proc.pid, signal.SIGCONT)
    with sqlite3.connect(journal) as conn:
        assert conn.execute("SELECT win, status FROM releases ORDER BY id").fetchall() == [
            (0, "closed"),
            (1, "closed"),
            (2, "partial"),
        ]

    data = tmp_path / "stream.csv"
    data.write_text("x1,x2\n" + _csv(X))
    rerun = cli_process("sensor", "send", str(data), "--window", str(RERUN_WINDOW), *common)
    assert rerun.wait(120) == 0, rerun.err.read_text()
    out = rerun.out.read_text()
    assert "window 2: 200 record(s) sent (completed from the journal: an identical copy)" in out
    assert "rows 0..599: already released (window(s) 0..2); skipped" in out
    assert (
        "sent 4 window(s), 600 record(s) (windows 2..5); 600 record(s) already "
        "released, skipped" in out
    )

    # the analyst's store: every row once (T' rounds back to column 0), every window closed
    with sqlite3.connect(tmp_path / "a.sqlite") as conn:
        stored = conn.execute("SELECT win, n, d, perturbed FROM windows ORDER BY win").fetchall()
        closed = [w for (w,) in conn.execute("SELECT win FROM results ORDER BY win")]
    ids = {
        w: np.rint(np.frombuffer(blob, "<f8").reshape(n, d)[:, 0]).astype(int)
        for w, n, d, blob in stored
    }
    assert [(w, len(v)) for w, v in ids.items()] == [
        (0, 200),
        (1, 200),
        (2, 200),
        (3, 150),
        (4, 150),
        (5, 100),
    ]
    assert sorted(np.concatenate(list(ids.values())).tolist()) == list(range(N))
    assert closed == list(ids)
    # the correction server holds d_diff for the same windows, and corrected each
    with sqlite3.connect(tmp_path / "cs.sqlite") as conn:
        assert conn.execute("SELECT win, n FROM differences ORDER BY win").fetchall() == [
            (w, len(v)) for w, v in ids.items()
        ]
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == len(ids)
    # the ledger: one spend per window (none pending or cancelled), on exactly its rows
    with Ledger(ledger, create=False) as book:
        history = book.history()
    assert [s.status for s in history] == ["committed"] * len(ids)
    assert sorted((s.metadata["window"], s.metadata["digest"]) for s in history) == [
        (w, rows_digest(X[v])) for w, v in ids.items()
    ]
