"""Malformed, non-finite, wrongly shaped and oversized payloads: a clear 4xx, nothing stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

GOOD = {
    "perturbed": [[0.5, 1.5], [2.0, -1.0], [0.0, 0.25]],
    "divisors": [1.0, 2.0],
    "noise_scale": [1.0, 1.0],
    "epsilon": 1.0,
}
GOOD_DIFF = {"indices": [2, 0, 1], "d_diff": [0.5, -0.25, 1.0]}


def _body(**changes: object) -> dict:
    return {**GOOD, **changes}


ANALYST_BAD = [
    # (raw body, expected status, words in the message)
    (
        b'{"perturbed": [[NaN, 1.0]], "divisors": [1, 1], "noise_scale": [1, 1], "epsilon": 1}',
        422,
        "NaN",
    ),
    (
        b'{"perturbed": [[Infinity, 1.0]], "divisors": [1, 1], "noise_scale": [1, 1], '
        b'"epsilon": 1}',
        422,
        "Infinity",
    ),
    (
        b'{"perturbed": [[1e999, 1.0]], "divisors": [1, 1], "noise_scale": [1, 1], "epsilon": 1}',
        422,
        "infinite",
    ),
    (
        b'{"perturbed": [[-Infinity, 1.0]], "divisors": [1, 1], "noise_scale": [1, 1], '
        b'"epsilon": 1}',
        422,
        "Infinity",
    ),
    (_body(perturbed=[1.0, 2.0]), 422, "list of rows"),  # 1-D: wrong shape
    (_body(perturbed=[[[1.0]], [[2.0]]]), 422, "non-numbers"),  # 3-D
    (_body(perturbed=[[1.0, 2.0], [3.0]]), 422, "different lengths"),
    (_body(divisors=[1.0, 2.0, 3.0]), 422, "one per column"),  # wrong column count
    (_body(noise_scale=[1.0]), 422, "one per column"),
    (_body(perturbed=[]), 422, "non-empty"),
    (_body(perturbed=[[], []]), 422, "empty"),
    (_body(perturbed=[[True, 1.0]]), 422, "non-numbers"),
    (_body(perturbed=[["1.0", 1.0]]), 422, "non-numbers"),
    (_body(perturbed=[[None, 1.0]]), 422, "non-numbers"),
    (_body(epsilon=0), 422, "epsilon"),
    (_body(epsilon="1"), 422, "epsilon"),
    (_body(divisors=[1.0, -2.0]), 422, "divisors"),
    (_body(d_diff=[1.0]), 422, "unknown field"),
    ({k: v for k, v in GOOD.items() if k != "epsilon"}, 422, "missing field"),
    (_body(type="SensorToCorrection"), 422, "expected a SensorToAnalyst"),
    ([GOOD], 422, "JSON object"),
    (b"", 400, "empty"),
    (b"{not json", 400, "not valid JSON"),
    (b'{"perturbed": [[1, 2]]', 400, "not valid JSON"),
]


def _send(url: str, path: str, body: object, headers: dict, method: str = "PUT") -> httpx.Response:
    if isinstance(body, bytes):
        return httpx.request(method, url + path, content=body, headers=headers)
    return httpx.request(method, url + path, json=body, headers=headers)


def _rows(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


@pytest.fixture
def pair(servers):
    return servers.pair()


def test_analyst_rejects_bad_records_and_stores_nothing(pair, auth, tmp_path: Path) -> None:
    analyst, _ = pair
    for body, status, words in ANALYST_BAD:
        r = _send(analyst.url, "/v1/windows/0/records", body, auth("s0"))
        assert r.status_code == status, (body, r.text)
        detail = r.json()["detail"]
        assert words in detail, (words, detail)
        assert r.json()["error"]
    assert httpx.get(analyst.url + "/v1/windows", headers=auth("s0")).json()["windows"] == []
    assert _rows(tmp_path / "analyst.sqlite", "windows") == 0
    # a good body after all that is stored
    r = _send(analyst.url, "/v1/windows/0/records", GOOD, auth("s0"))
    assert r.status_code == 201 and r.json()["status"] == "stored"
    assert _rows(tmp_path / "analyst.sqlite", "windows") == 1


def test_column_count_must_match_earlier_windows_and_configuration(servers, auth) -> None:
    cs = servers.correction()
    analyst = servers.analyst(cs.url, columns=2, db="a2.sqlite")
    wide = _body(perturbed=[[1.0, 2.0, 3.0]], divisors=[1, 1, 1], noise_scale=[1, 1, 1])
    r = _send(analyst.url, "/v1/windows/0/records", wide, auth("s0"))
    assert r.status_code == 422 and "takes 2" in r.json()["detail"]
    free = servers.analyst(cs.url, db="a3.sqlite")
    assert _send(free.url, "/v1/windows/0/records", GOOD, auth("s0")).status_code == 201
    r = _send(free.url, "/v1/windows/1/records", wide, auth("s0"))
    assert r.status_code == 422 and "earlier windows have 2" in r.json()["detail"]
    windows = httpx.get(free.url + "/v1/windows", headers=auth("s0")).json()["windows"]
    assert [w["window"] for w in windows] == [0]


def test_bad_window_numbers(pair, auth) -> None:
    analyst, cs = pair
    for window in ("-1", "x", "1.5", str(2**63)):
        r = _send(analyst.url, f"/v1/windows/{window}/records", GOOD, auth("s0"))
        assert r.status_code == 422 and "window" in r.json()["detail"], r.text
        r = _send(cs.url, f"/v1/windows/{window}/differences", GOOD_DIFF, auth("s0"))
        assert r.status_code == 422, r.text


CS_BAD = [
    ({"indices": [0, 0, 1], "d_diff": [1.0, 2.0, 3.0]}, 422, "permutation"),
    ({"indices": [0, 1, 5], "d_diff": [1.0, 2.0, 3.0]}, 422, "permutation"),
    ({"indices": [0, 1], "d_diff": [1.0, 2.0, 3.0]}, 422, "same length"),
    ({"indices": [0.0, 1.0], "d_diff": [1.0, 2.0]}, 422, "integers"),
    ({"indices": [-1, 0], "d_diff": [1.0, 2.0]}, 422, "outside"),
    ({"indices": [0, 1], "d_diff": [[1.0], [2.0]]}, 422, "non-numbers"),
    ({"indices": [], "d_diff": []}, 422, "at least 1"),
    ({"indices": [0, 1], "d_diff": [1.0, True]}, 422, "non-numbers"),
    (b'{"indices": [0, 1], "d_diff": [1.0, 1e400]}', 422, "infinite"),
    (b'{"indices": [0, 1], "d_diff": [1.0, NaN]}', 422, "NaN"),
    ({"indices": [0, 1], "d_diff": [1.0, 2.0], "perturbed": [[1.0]]}, 422, "unknown field"),
    ({"d_diff": [1.0]}, 422, "missing field"),
    (b"[1, 2", 400, "not valid JSON"),
]


def test_correction_rejects_bad_differences_and_stores_nothing(pair, auth, tmp_path: Path) -> None:
    _, cs = pair
    for body, status, words in CS_BAD:
        r = _send(cs.url, "/v1/windows/0/differences", body, auth("s0"))
        assert r.status_code == status, (body, r.text)
        assert words in r.json()["detail"], (words, r.json())
    assert _rows(tmp_path / "cs.sqlite", "differences") == 0
    assert httpx.get(cs.url + "/v1/windows", headers=auth("s0")).json()["windows"] == []


def test_duplicates_identical_is_acknowledged_different_is_409(pair, auth, tmp_path: Path) -> None:
    analyst, cs = pair
    assert _send(analyst.url, "/v1/windows/3/records", GOOD, auth("s0")).status_code == 201
    again = _send(analyst.url, "/v1/windows/3/records", GOOD, auth("s0"))
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    other = _body(perturbed=[[0.5, 1.5], [2.0, -1.0], [0.0, 0.26]])
    r = _send(analyst.url, "/v1/windows/3/records", other, auth("s0"))
    assert r.status_code == 409 and "released once" in r.json()["detail"]

    assert _send(cs.url, "/v1/windows/3/differences", GOOD_DIFF, auth("s0")).status_code == 201
    # the same d_diff sent in another order is the same content
    same = {"indices": [0, 1, 2], "d_diff": [-0.25, 1.0, 0.5]}
    r = _send(cs.url, "/v1/windows/3/differences", same, auth("s0"))
    assert r.status_code == 200 and r.json()["status"] == "duplicate"
    r = _send(
        cs.url,
        "/v1/windows/3/differences",
        {"indices": [0, 1, 2], "d_diff": [-0.25, 1.0, 0.75]},
        auth("s0"),
    )
    assert r.status_code == 409
    assert _rows(tmp_path / "analyst.sqlite", "windows") == 1
    assert _rows(tmp_path / "cs.sqlite", "differences") == 1


def test_analyst_steps_at_the_correction_server_are_checked(
    pair, auth, ring, tmp_path: Path
) -> None:
    _, cs = pair
    base = cs.url + "/v1/sensors/s0/windows/0"
    a = auth("analyst")
    r = httpx.post(base + "/presumed-outliers", json={"presumed_outliers": [0]}, headers=a)
    assert r.status_code == 404 and "no distance differences" in r.json()["detail"]
    r = httpx.post(base + "/layers", json={"i_l2": [], "i_l3": []}, headers=a)
    assert r.status_code == 409 and "before O'" in r.json()["detail"]
    assert _send(cs.url, "/v1/windows/0/differences", GOOD_DIFF, auth("s0")).status_code == 201
    r = httpx.post(base + "/presumed-outliers", json={"presumed_outliers": [3]}, headers=a)
    assert r.status_code == 422 and "outside 0..2" in r.json()["detail"]
    r = httpx.post(base + "/presumed-outliers", json={"presumed_outliers": [1, 1]}, headers=a)
    assert r.status_code == 422 and "duplicate" in r.json()["detail"]
    r = httpx.post(base + "/presumed-outliers?n=4", json={"presumed_outliers": [1]}, headers=a)
    assert r.status_code == 409 and "holds 4 record(s)" in r.json()["detail"]
    r = httpx.post(
        cs.url + "/v1/sensors/bad%20name/windows/0/presumed-outliers",
        json={"presumed_outliers": [1]},
        headers=a,
    )
    assert r.status_code == 422
    assert _rows(tmp_path / "cs.sqlite", "presumed") == 0
    r = httpx.post(base + "/presumed-outliers?n=3", json={"presumed_outliers": [2]}, headers=a)
    assert r.status_code == 200
    assert r.json() == {"type": "CorrectionToAnalyst", "d_tp": 0.5, "w_o": ring.w_o}  # record 2
    # idempotent for the same O', 409 for another
    assert (
        httpx.post(base + "/presumed-outliers", json={"presumed_outliers": [2]}, headers=a).json()
        == r.json()
    )
    r2 = httpx.post(base + "/presumed-outliers", json={"presumed_outliers": [1]}, headers=a)
    assert r2.status_code == 409
    r = httpx.post(base + "/layers", json={"i_l2": [0, 7], "i_l3": []}, headers=a)
    assert r.status_code == 422
    assert _rows(tmp_path / "cs.sqlite", "results") == 0
    r = httpx.post(base + "/layers", json={"i_l2": [0, 2], "i_l3": [2]}, headers=a)
    assert r.status_code == 200 and r.json()["type"] == "CorrectionToAnalyst2"
    assert (
        httpx.post(base + "/layers", json={"i_l2": [0, 2], "i_l3": [2]}, headers=a).json()
        == r.json()
    )
    assert (
        httpx.post(base + "/layers", json={"i_l2": [2], "i_l3": [2]}, headers=a).status_code == 409
    )


def test_close_without_differences_is_a_clear_409(pair, auth, tmp_path: Path) -> None:
    analyst, _ = pair
    r = httpx.post(analyst.url + "/v1/windows/0/close", headers=auth("s0"))
    assert r.status_code == 404 and "no window 0" in r.json()["detail"]
    assert _send(analyst.url, "/v1/windows/0/records", GOOD, auth("s0")).status_code == 201
    r = httpx.get(analyst.url + "/v1/windows/0/outliers", headers=auth("s0"))
    assert r.status_code == 409 and "not closed" in r.json()["detail"]
    r = httpx.post(analyst.url + "/v1/windows/0/close", headers=auth("s0"))
    assert r.status_code == 409 and "no distance differences" in r.json()["detail"]
    assert _rows(tmp_path / "analyst.sqlite", "results") == 0


def test_body_over_the_limit_is_413_and_nothing_is_stored(servers, auth, tmp_path: Path) -> None:
    cs = servers.correction(max_body_bytes=2048)
    analyst = servers.analyst(cs.url, max_body_bytes=2048)
    big = _body(perturbed=[[0.123456789, 1.23456789]] * 200)
    r = _send(analyst.url, "/v1/windows/0/records", big, auth("s0"))
    assert r.status_code == 413 and "2048 bytes" in r.json()["detail"]

    def chunks():  # no Content-Length: the limit is enforced while reading
        yield b'{"perturbed": ['
        for _ in range(200):
            yield b"[0.123456789, 1.23456789],"
        yield b'[1, 2]], "divisors": [1, 1], "noise_scale": [1, 1], "epsilon": 1}'

    r = httpx.put(analyst.url + "/v1/windows/0/records", content=chunks(), headers=auth("s0"))
    assert r.status_code == 413
    big_diff = {"indices": list(range(400)), "d_diff": [0.123456789] * 400}
    r = _send(cs.url, "/v1/windows/0/differences", big_diff, auth("s0"))
    assert r.status_code == 413
    assert _rows(tmp_path / "analyst.sqlite", "windows") == 0
    assert _rows(tmp_path / "cs.sqlite", "differences") == 0
    # a small body still passes
    assert _send(analyst.url, "/v1/windows/0/records", GOOD, auth("s0")).status_code == 201
