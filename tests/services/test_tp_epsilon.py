"""ε_TP on the wire: the d_TP noise in the sensor's message to the correction server, stored
with d_diff, added to the d_TP the analyst receives, and ``privad sensor send --tp-epsilon``
(statement, ledger, journal)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from privad.accounting import Ledger
from privad.relaxed import Sensor
from privad.services.correction import CorrectionStore

DIFF = {"indices": [0, 1, 2, 3], "d_diff": [0.5, -0.25, 1.0, 3.0]}
# O' = {0, 2, 3}: d_diff 0.5, 1.0, 3.0; the largest gap (1.0 → 3.0) puts record 3 in FP
# (1 of 3 <= half), so TP = {0, 2} and d_TP = min(0.5, 1.0) = 0.5, plus the noise.
PRESUMED = {"presumed_outliers": [0, 2, 3]}


def test_tp_noise_is_stored_and_added_to_d_tp(servers, auth) -> None:
    cs = servers.correction()
    put = "/v1/windows/{}/differences"
    r = httpx.put(cs.url + put.format(0), json={**DIFF, "tp_noise": 0.75}, headers=auth("s0"))
    assert r.status_code == 201
    again = httpx.put(cs.url + put.format(0), json={**DIFF, "tp_noise": 0.75}, headers=auth("s0"))
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    # the same d_diff with other d_TP noise is another release of the window: refused
    other = httpx.put(cs.url + put.format(0), json={**DIFF, "tp_noise": 0.5}, headers=auth("s0"))
    assert other.status_code == 409
    assert httpx.put(cs.url + put.format(1), json=DIFF, headers=auth("s0")).status_code == 201
    answers = {}
    for w in (0, 1):
        r = httpx.post(
            cs.url + f"/v1/sensors/s0/windows/{w}/presumed-outliers",
            json=PRESUMED,
            headers=auth("analyst"),
        )
        assert r.status_code == 200, r.text
        answers[w] = r.json()["d_tp"]
    assert answers == {0: 1.25, 1: 0.5}  # 0.5 + 0.75, and no noise without the field
    # the layers step replays the stored noise: FN_L2 = {i ∉ O' : 0 < d_diff < d_TP}
    r = httpx.post(
        cs.url + "/v1/sensors/s0/windows/0/layers",
        json={"i_l2": [0, 1, 2, 3], "i_l3": []},
        headers=auth("analyst"),
    )
    assert r.status_code == 200 and r.json()["outliers"] == [0, 1, 2]  # TP, FN_L1 = {1}
    for bad, words in (
        ("true", "number"),
        ('"0.5"', "number"),
        ("null", "number"),
        ("1e400", "finite"),
        ("NaN", "NaN"),
    ):
        body = '{"indices": [0], "d_diff": [1.0], "tp_noise": ' + bad + "}"
        r = httpx.put(cs.url + put.format(5), content=body, headers=auth("s0"))
        assert r.status_code == 422 and words in r.json()["detail"], (bad, r.text)
    spec = httpx.get(cs.url + "/v1/openapi.json").json()
    schema = spec["paths"]["/v1/windows/{window}/differences"]["put"]["requestBody"]["content"][
        "application/json"
    ]["schema"]
    assert "tp_noise" in schema["properties"] and "tp_noise" not in schema["required"]


def test_a_file_from_before_tp_noise_gets_the_column(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as conn:  # the previous schema, one stored window
        conn.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('role', 'correction'), ('schema_version', '1');"
            "CREATE TABLE differences (sensor TEXT NOT NULL, win INTEGER NOT NULL, "
            "n INTEGER NOT NULL, d_diff BLOB NOT NULL, received_at TEXT NOT NULL, "
            "PRIMARY KEY (sensor, win));"
            "INSERT INTO differences VALUES ('s0', 0, 1, x'000000000000f03f', 'then');"
        )
    store = CorrectionStore(db)
    store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT win, tp_noise FROM differences").fetchall() == [(0, 0.0)]


def test_send_with_tp_epsilon(
    servers, ring, run_cli, secrets, to_csv, send_args, tmp_path: Path
) -> None:
    analyst, cs = servers.pair()
    data = to_csv(tmp_path / "d.csv", ring.data[:1000])
    rs = ",".join(repr(v) for v in ring.rs.tolist())
    ledger = tmp_path / "ledger.sqlite"
    options = f"--epsilon 1 --window 500 --relaxed-sensitivity {rs} --tp-epsilon 0.5"
    to = (analyst.url, cs.url, secrets["s0"])
    code, out, err = run_cli(*send_args(data, *to, options), "--ledger", str(ledger))
    assert code == 0, err
    # the statement: ε_CS defaults to dε = 2; d_TP alone min(0.5, 2); each view ε_T + ε_CS = 4
    assert "exchange: protected (ε_CS = 2, ε_TP = 0.5)" in out
    assert "analyst's view: relaxed-dp (ε=4" in out and "d_TP: relaxed-dp (ε=0.5" in out
    assert "charged (the whole release): relaxed-dp (ε=4" in out
    with Ledger(ledger, create=False) as book:
        spends = book.history()
    g = Sensor(1.0, ring.rs, global_sensitivity=400, tp_epsilon=0.5).release_guarantee()
    assert [s.epsilon for s in spends] == [pytest.approx(g.epsilon)] * 2 == [4.0, 4.0]
    assert spends[0].metadata["views"]["tp_epsilon"] == 0.5
    with sqlite3.connect(tmp_path / "cs.sqlite") as conn:
        noise = [v for (v,) in conn.execute("SELECT tp_noise FROM differences")]
    assert len(noise) == 2 and all(v != 0.0 for v in noise)
    code, _, err = run_cli(*send_args(data, *to, options), "--exchange", "unprotected")
    lines = [x for x in err.strip().splitlines() if not x.startswith("privad: warning")]
    assert (
        code == 2 and len(lines) == 1 and "--tp-epsilon applies to --exchange protected" in lines[0]
    )
