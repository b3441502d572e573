"""Restarts lose no accepted record: commit before acknowledging (WAL, synchronous=FULL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privad.noise import Randomness
from privad.relaxed import Analyst, CorrectionServer, Sensor, SplitRule, run_protocol
from privad.services.app import ThreadedServer
from privad.services.auth import TokenRegistry
from privad.services.clients import AnalystClient, CorrectionClient
from privad.services.correction import create_correction_app
from privad.services.sensor_client import SensorUploader


def _send_two_windows(ring: Any, seed: int, analyst: str, correction: str, secret: str) -> Any:
    """Windows 0 (closed: its result is returned) and 1 (acknowledged by both servers, not
    closed) of sensor s0, its noise from ``seed``."""
    up = SensorUploader(
        Sensor(1.0, ring.rs, rng=Randomness(seed)),
        AnalystClient(analyst, secret),
        CorrectionClient(correction, secret),
    )
    closed = up.send_window(0, ring.window(0))
    up.close = False
    up.send_window(1, ring.window(1))
    return closed


def test_killed_analyst_process_restarts_with_everything_it_acknowledged(
    tmp_path: Path, servers, processes, ring, secrets
) -> None:
    cs = servers.correction()
    tokens = processes.tokens("s0")
    args = processes.analyst_args(cs.url, ring.eps, ring.min_samples, tokens, "analyst.sqlite")
    first = processes.spawn(*args)
    closed = _send_two_windows(ring, 3, first.url, cs.url, secrets["s0"])
    first.kill()  # SIGKILL right after the acknowledgements: no graceful shutdown

    second = processes.spawn(*args)
    client = AnalystClient(second.url, secrets["s0"])
    assert client.outliers(0)["outliers"] == closed.outliers.tolist()
    assert [(w["window"], w["status"], w["n"]) for w in client.windows()] == [
        (0, "closed", 2000),
        (1, "uploaded", 2000),
    ]
    result = client.close_window(1)  # the records of window 1 survived the crash

    sensor = Sensor(1.0, ring.rs, rng=Randomness(3))
    runs = [
        run_protocol(ring.window(w), sensor, Analyst(ring.detector()), CorrectionServer(ring.w_o))
        for w in range(2)
    ]
    assert closed.outliers.tolist() == runs[0].outliers.tolist()
    assert result["outliers"] == runs[1].outliers.tolist()


def test_correction_server_restart_keeps_differences_and_progress(
    tmp_path: Path, servers, ring, secrets
) -> None:
    db = tmp_path / "cs-restart.sqlite"
    registry = TokenRegistry([("s0", secrets["s0"])], {"analyst": secrets["analyst"]})
    cs = ThreadedServer(create_correction_app(db, registry, outlier_layer_width=ring.w_o)).start()
    port = int(cs.url.rsplit(":", 1)[1])
    analyst = servers.analyst(cs.url)
    first = _send_two_windows(ring, 4, analyst.url, cs.url, secrets["s0"])
    cs.stop()

    # same file, same address; w_O and the split rule changed: window 0's parameters were
    # stored with its O'
    rule = SplitRule(max_fp_share=0.0)
    cs2 = ThreadedServer(
        create_correction_app(db, registry, outlier_layer_width=99.0, rule=rule), port=port
    ).start()
    try:
        statuses = CorrectionClient(cs2.url, secrets["s0"]).windows()
        assert [(w["window"], w["status"]) for w in statuses] == [
            (0, "corrected"),
            (1, "differences"),
        ]
        second = AnalystClient(analyst.url, secrets["s0"]).close_window(1)
        assert second["w_o"] == 99.0
        sensor = Sensor(1.0, ring.rs, rng=Randomness(4))
        run0 = run_protocol(
            ring.window(0), sensor, Analyst(ring.detector()), CorrectionServer(ring.w_o)
        )
        run1 = run_protocol(
            ring.window(1), sensor, Analyst(ring.detector()), CorrectionServer(99.0, rule)
        )
        assert first.outliers.tolist() == run0.outliers.tolist()
        assert second["outliers"] == run1.outliers.tolist()
    finally:
        cs2.stop()
