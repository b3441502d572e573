"""Tokens: 401 without a valid one, 403 for the wrong role, a sensor sees only its own windows."""

from __future__ import annotations

import sqlite3

import httpx
import pytest

from privad.noise import Randomness
from privad.relaxed import Sensor
from privad.services.clients import AnalystClient, CorrectionClient
from privad.services.errors import ServiceError, UpstreamError
from privad.services.sensor_client import SensorUploader

RECORDS = {
    "perturbed": [[0.5, 1.5], [2.0, -1.0]],
    "divisors": [1.0, 1.0],
    "noise_scale": [1.0, 1.0],
    "epsilon": 1.0,
}
DIFFS = {"indices": [0, 1], "d_diff": [0.5, -0.5]}


@pytest.fixture
def pair(servers):
    return servers.pair()


HEADERS = [
    None,
    "Bearer",
    "Bearer wrong-secret-0123456789abcdef",
    "Basic czA6eA==",
    "sensor-0-secret-abcdefghijklmnop",
]  # the last: the right secret without the scheme


def test_missing_or_invalid_token_is_401(pair, tmp_path) -> None:
    analyst, cs = pair
    for header in HEADERS:
        h = {} if header is None else {"authorization": header}
        for url, path, body in (
            (analyst.url, "/v1/windows/0/records", RECORDS),
            (cs.url, "/v1/windows/0/differences", DIFFS),
        ):
            r = httpx.put(url + path, json=body, headers=h)
            assert r.status_code == 401, (header, r.text)
            assert r.headers["www-authenticate"] == "Bearer"
            assert r.json()["error"] == "unauthorized"
        for path in ("/v1/windows", "/v1/windows/0/outliers"):
            assert httpx.get(analyst.url + path, headers=h).status_code == 401
        assert httpx.post(analyst.url + "/v1/windows/0/close", headers=h).status_code == 401
    with sqlite3.connect(tmp_path / "analyst.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM windows").fetchone()[0] == 0
    # health needs no token
    assert httpx.get(analyst.url + "/v1/health").json() == {"status": "ok", "role": "analyst"}
    assert httpx.get(cs.url + "/v1/health").json() == {"status": "ok", "role": "correction"}


def test_roles_are_separate(pair, auth) -> None:
    analyst, cs = pair
    # a sensor may not play the analyst at the correction server (nor fetch its answers)
    r = httpx.post(
        cs.url + "/v1/sensors/s0/windows/0/presumed-outliers",
        json={"presumed_outliers": []},
        headers=auth("s0"),
    )
    assert r.status_code == 403 and "sensor token" in r.json()["detail"]
    r = httpx.post(
        cs.url + "/v1/sensors/s0/windows/0/layers",
        json={"i_l2": [], "i_l3": []},
        headers=auth("s0"),
    )
    assert r.status_code == 403
    # the analyst's token cannot upload sensor data at CS, and is unknown at the analyst
    assert (
        httpx.put(
            cs.url + "/v1/windows/0/differences", json=DIFFS, headers=auth("analyst")
        ).status_code
        == 403
    )
    assert (
        httpx.put(
            analyst.url + "/v1/windows/0/records", json=RECORDS, headers=auth("analyst")
        ).status_code
        == 401
    )


def test_a_sensor_reads_and_writes_only_its_own_windows(pair, auth) -> None:
    analyst, cs = pair
    assert (
        httpx.put(
            analyst.url + "/v1/windows/0/records", json=RECORDS, headers=auth("s0")
        ).status_code
        == 201
    )
    # the sensor id comes from the token: s1's window 0 is another window
    other = {**RECORDS, "perturbed": [[9.0, 9.0], [8.0, 8.0]]}
    r = httpx.put(analyst.url + "/v1/windows/0/records", json=other, headers=auth("s1"))
    assert r.status_code == 201 and r.json()["sensor"] == "s1"
    assert [
        w["window"]
        for w in httpx.get(analyst.url + "/v1/windows", headers=auth("s2")).json()["windows"]
    ] == []
    r = httpx.get(analyst.url + "/v1/windows/0/outliers", headers=auth("s2"))
    assert r.status_code == 404
    assert httpx.post(analyst.url + "/v1/windows/0/close", headers=auth("s2")).status_code == 404
    # there is no way to name another sensor in a sensor's request
    r = httpx.put(
        analyst.url + "/v1/windows/1/records", json={**RECORDS, "sensor": "s0"}, headers=auth("s1")
    )
    assert r.status_code == 422 and "unknown field" in r.json()["detail"]
    assert (
        httpx.put(cs.url + "/v1/windows/0/differences", json=DIFFS, headers=auth("s3")).status_code
        == 201
    )
    assert httpx.get(cs.url + "/v1/windows", headers=auth("s4")).json()["windows"] == []


def test_wrong_analyst_token_at_the_correction_server_is_a_clear_502(servers, ring, auth) -> None:
    cs = servers.correction()
    analyst = servers.analyst(cs.url, correction_token="not-the-analyst-secret-xyz")
    up = SensorUploader(
        Sensor(1.0, ring.rs, rng=Randomness(1)),
        AnalystClient(analyst.url, _secret(auth, "s0"), retries=0),
        CorrectionClient(cs.url, _secret(auth, "s0")),
    )
    with pytest.raises(ServiceError) as info:
        up.send_window(0, ring.window(0)[:300])
    assert info.value.status_code == 502
    assert "correction server refused" in str(info.value) and "(401)" in str(info.value)
    w = up.analyst.windows()
    assert w[0]["status"] == "uploaded"  # records kept, no result stored


def test_unreachable_correction_server_is_502(servers, ring, auth) -> None:
    cs = servers.correction()
    url = cs.url
    analyst = servers.analyst(url, retries=0)
    sensor = Sensor(1.0, ring.rs, rng=Randomness(2))
    up = SensorUploader(
        sensor,
        AnalystClient(analyst.url, _secret(auth, "s0")),
        CorrectionClient(url, _secret(auth, "s0")),
        close=False,
    )
    up.send_window(0, ring.window(0)[:300])
    servers.stop(cs)
    r = httpx.post(analyst.url + "/v1/windows/0/close", headers=auth("s0"), timeout=30)
    assert r.status_code == 502 and "cannot reach the correction server" in r.json()["detail"]
    with pytest.raises(UpstreamError, match="cannot reach"):
        CorrectionClient(url, _secret(auth, "s0"), retries=0).windows()


def _secret(auth, name: str) -> str:
    return auth(name)["authorization"].split(" ", 1)[1]
