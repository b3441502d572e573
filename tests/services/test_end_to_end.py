"""End to end through the command line: ``privad serve correction``, ``privad serve analyst``
(real subprocesses on loopback) and ``privad sensor send/result`` on a 3-window sensor ring;
the corrected outliers equal those of the in-process :func:`privad.relaxed.run_protocol`
for the same seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privad.accounting import Ledger
from privad.io import rows_digest
from privad.noise import Randomness
from privad.relaxed import Analyst, CorrectionServer, Sensor, run_protocol


def test_cli_end_to_end_matches_in_process_protocol(
    tmp_path: Path, ring, processes, run_cli, to_csv, secrets, send_args
) -> None:
    data = to_csv(tmp_path / "ring.csv", ring.data)
    history = to_csv(tmp_path / "history.csv", ring.history)

    # public parameters from history, as an operator would fix them
    code, out, err = run_cli("sensor", "calibrate", str(history), "--p-o", "10", "--format", "json")
    assert code == 0, err
    params = json.loads(out)
    assert params["eps"] == ring.eps and params["min_samples"] == ring.min_samples
    assert params["outlier_layer_width"] == ring.w_o
    assert params["relaxed_sensitivity"] == ring.rs.tolist()

    cs, analyst = processes.pair(
        params["outlier_layer_width"], params["eps"], params["min_samples"], ("s0", "s1")
    )

    ledger = tmp_path / "ledger.sqlite"
    to = (analyst.url, cs.url, secrets["s0"])
    seeded = f"--history {history} --p-o 10 --seed 7 --ledger {ledger} --global-sensitivity 400"
    code, out, err = run_cli(*send_args(data, *to, f"--epsilon 1 --window 2000 {seeded}"))
    assert code == 0, err
    assert "sent 3 window(s), 6000 record(s)" in out
    assert "--seed makes the noise reproducible" in err

    code, out, err = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s0"], "--format", "json"
    )
    assert code == 0, err
    results = json.loads(out)
    assert [r["window"] for r in results] == [0, 1, 2]

    # the same protocol in-process, same seed, window by window
    sensor = Sensor(1.0, ring.rs, rng=Randomness(7))
    for w, got in enumerate(results):
        run = run_protocol(
            ring.window(w), sensor, Analyst(ring.detector()), CorrectionServer(ring.w_o)
        )
        assert got["outliers"] == run.outliers.tolist()
        assert got["presumed_outliers"] == run.presumed_outliers.tolist()
        assert got["n"] == 2000

    # CSV output of one window
    code, out, _ = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s0"], "--window", "1"
    )
    lines = out.strip().splitlines()
    assert lines[0] == "window,index"
    assert [int(x.split(",")[1]) for x in lines[1:]] == results[1]["outliers"]

    # per-window privacy: one spend per window, each in its own scope (parallel composition)
    with Ledger(ledger, create=False) as book:
        spends = book.history()
    # one scope per window, keyed by the content digest of its records
    assert [s.scope for s in spends] == [
        f"relaxed-sensor/rows-{rows_digest(ring.data[w * 2000 : (w + 1) * 2000])[:32]}"
        for w in range(3)
    ]
    g = Sensor(1.0, ring.rs, global_sensitivity=400).release_guarantee()
    for s in spends:
        assert s.guarantee.notion == "relaxed-dp"
        # record unit: d·ε = 2 for T', and ε_CS = 2 (default) for the noisy d_diff
        assert s.epsilon == pytest.approx(4.0) == g.epsilon
        assert s.epsilon_outlier == pytest.approx(g.epsilon_outlier)
        assert s.metadata["views"]["correction"]["guarantee"] is not None

    again = f"--epsilon 1 --window 2000 --history {history} --global-sensitivity 400"
    send = send_args(data, *to, again)
    # sending the stream again releases nothing: the journal knows these rows, whatever the
    # window size
    for size in ("2000", "700"):
        code, out, err = run_cli(*send, "--ledger", str(ledger), "--window", size)
        assert code == 0 and "0 window(s), 0 record(s)" in out, err
        assert "rows 0..5999: already released (window(s) 0..2)" in out
        assert "6000 record(s) already released" in out
    # with another journal the ledger still recognises the records (one release each)
    code, _, err = run_cli(
        *send, "--ledger", str(ledger), "--journal", str(tmp_path / "other.sqlite")
    )
    assert code == 2 and "exceed the budget" in err
    # ... and with neither, the servers refuse a second noisy copy of the same window
    code, _, err = run_cli(
        *send, "--ledger", str(tmp_path / "l2.sqlite"), "--journal", str(tmp_path / "j2.sqlite")
    )
    assert code == 2 and "(409)" in err and "--first-window 3" in err
    # another sensor (its own journal) has windows independent of s0's; with the journal
    # that sent s0's rows they count as released, whoever's token is used
    rs = ",".join(repr(v) for v in ring.rs.tolist())
    quiet = f"--epsilon 1 --window 3000 --quiet --relaxed-sensitivity {rs}"
    s1 = send_args(data, analyst.url, cs.url, secrets["s1"], quiet)
    code, out, err = run_cli(*s1)
    assert code == 0 and out == "" and "6000" not in err
    code, out, _ = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s1"], "--format", "json"
    )
    assert json.loads(out) == []
    code, out, err = run_cli(*s1, "--journal", str(tmp_path / "s1.sqlite"))
    assert code == 0, err
    assert out == ""
    code, out, _ = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s1"], "--format", "json"
    )
    assert [r["n"] for r in json.loads(out)] == [3000, 3000]
    assert np.all(np.diff([r["window"] for r in json.loads(out)]) == 1)
