"""Resume without re-release: a sender interrupted midway (after journalling a window, before
its uploads) is resumed, and every row reaches the servers exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from privad.accounting import Ledger
from privad.relaxed import Sensor
from privad.relaxed.journal import ReleaseJournal
from privad.services.clients import AlreadyReleased, AnalystClient, CorrectionClient, SensorUploader


class Killed(Exception):
    pass


def test_interrupted_sender_resumes_and_sends_every_row_once(servers, ring, secrets,
                                                             tmp_path: Path) -> None:  # fmt: skip
    analyst, cs = servers.pair()
    X = ring.data[:2000]
    blocks = [(w, X[w * 400:(w + 1) * 400]) for w in range(5)]
    book = Ledger(tmp_path / "l.sqlite", default_budget=4.0)
    journal = ReleaseJournal(tmp_path / "j.sqlite")
    a = AnalystClient(analyst.url, secrets["s0"])
    c = CorrectionClient(cs.url, secrets["s0"])
    sensor = Sensor(1.0, ring.rs, global_sensitivity=400)
    up = SensorUploader(sensor, a, c, ledger=book, journal=journal)
    for w, block in blocks[:2]:
        up.send_window(w, block)
    # "kill" window 2 after it was journalled and charged, before anything was sent
    real = c.put_differences
    c.put_differences = lambda *args: (_ for _ in ()).throw(Killed())  # type: ignore[method-assign]
    with pytest.raises(Killed):
        up.send_window(2, blocks[2][1])
    c.put_differences = real  # type: ignore[method-assign]
    # the rerun (a new sensor: new noise for new windows) walks the whole stream again
    up2 = SensorUploader(Sensor(1.0, ring.rs, global_sensitivity=400), a, c, ledger=book,
                         journal=journal)  # fmt: skip
    statuses = [up2.send_window(w, block, on_released="skip").status for w, block in blocks]
    assert statuses == ["skipped", "skipped", "resumed", "sent", "sent"]
    stored = a.windows()
    assert [(x["window"], x["n"]) for x in stored] == [(w, 400) for w in range(5)]
    assert sorted(r.window for r in journal.releases()) == list(range(5))  # each row once
    assert all(r.status == "sent" and r.to_analyst is None for r in journal.releases())
    # one charge per window, the interrupted one included once
    assert len([s for s in book.history() if s.status == "committed"]) == 5
    # sending released rows again is refused unless forced, and a forced release is charged
    with pytest.raises(AlreadyReleased):
        up2.send_window(9, blocks[0][1])
    assert up2.send_window(9, blocks[0][1], on_released="force").status == "forced"
    assert len(book.history()) == 6
    for x in (a, c, journal, book):
        x.close()
