"""The RMP mining server over HTTP (``privad serve rmp``, :mod:`privad.services.rmp`).

Servers run on 127.0.0.1 with a free port and a temporary SQLite file: as uvicorn threads in
this process, or as a ``privad serve rmp`` subprocess for the SIGKILL restart test. Tiny
problems (n = 5, w = 4, a few batches, a few epochs) keep the tests fast.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from privad.errors import ParameterError
from privad.noise import Randomness
from privad.rmp import AANNTraining
from privad.rmp.model import RMPModel
from privad.rmp.roles import MiningServer, Participant
from privad.services.analyst import AnalystStore
from privad.services.app import ThreadedServer
from privad.services.errors import ServiceError
from privad.services.rmp import create_rmp_app
from privad.services.rmp_client import RMPClient, upload_records
from privad.services.rmp_store import RMPStore, open_config

N, W, ALPHA = 5, 4, 0.2
OPERATOR = "operator-secret-0123456789abcdef"
USER = "end-user-secret-0123456789abcdef"
REGISTRAR = "registrar-secret-0123456789abcdef"


def bearer(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


def records(m: int, seed: int) -> np.ndarray:
    """m records in [0, 1]^N: a tight cluster with a few uniform anomalies."""
    rng = Randomness(seed)
    X = np.clip(0.5 + 0.05 * rng.normal(size=(m, N)), 0.0, 1.0)
    X[: max(1, m // 20)] = rng.uniform(0.0, 1.0, size=(max(1, m // 20), N))
    return X


class Mining:
    """Start threaded mining servers in ``server_pool`` (stopped at teardown)."""

    def __init__(self, tmp_path: Path, pool: Any) -> None:
        self.tmp_path = tmp_path
        self.pool = pool

    def start(self, db: str = "mining.sqlite", **kwargs: Any) -> ThreadedServer:
        for key, value in (
            ("n", N),
            ("w", W),
            ("alpha", ALPHA),
            ("rng", 0),
            ("training", AANNTraining(epochs=10)),
        ):
            kwargs.setdefault(key, value)
        app = create_rmp_app(
            self.tmp_path / db, [("alice", USER)], operator_token=OPERATOR, **kwargs
        )
        srv = self.pool.start_app(app)
        srv.app = app  # type: ignore[attr-defined]
        return srv

    def stop(self, srv: ThreadedServer) -> None:
        self.pool.stop(srv)


@pytest.fixture
def mining(tmp_path: Path, server_pool: Any) -> Mining:
    return Mining(tmp_path, server_pool)


def count(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def join(url: str, seed: int, X: np.ndarray, **kwargs: Any) -> tuple[RMPClient, Participant, Any]:
    """Register a participant, make its T_i, upload X; (client, participant, report)."""
    client = RMPClient(url)
    remote = client.config()
    client.register(**kwargs)
    party = Participant(remote.T, remote.config.alpha, Randomness(seed), beta=remote.config.beta)
    return client, party, upload_records(client, party, X, batch_size=30)


def train_and_wait(url: str, **options: Any) -> dict[str, Any]:
    with RMPClient(url, OPERATOR) as op:
        job = op.train(**options)
        return op.wait(int(job["job"]), timeout=60)


# --------------------------------------------------------------------------------------------
# The whole protocol
# --------------------------------------------------------------------------------------------


def test_register_upload_train_download_and_score_equal_in_process(mining) -> None:
    srv = mining.start()
    X1, X2 = records(70, 1), records(40, 2)
    c1, p1, r1 = join(srv.url, 11, X1)
    c2, p2, r2 = join(srv.url, 12, X2, name="clinic-2")
    assert (r1.batches, r1.stored, r1.records, r1.numbers) == (3, 3, 70, (1, 2, 3))
    assert (r2.batches, r2.records, r2.numbers) == (2, 40, (1, 2))

    final = train_and_wait(srv.url, epochs=15, seed=7)
    assert final["status"] == "done" and final["model"] == 1
    assert (final["n_records"], final["n_batches"], final["n_participants"]) == (110, 5, 2)

    with RMPClient(srv.url, USER) as user:
        meta, model = user.model()
        raw = httpx.get(srv.url + "/v1/models/latest/npz", headers=bearer(USER))
    assert raw.status_code == 200 and raw.headers["x-privad-model-id"] == "1"
    assert meta["id"] == 1 and meta["n_records"] == 110 and meta["size"] == len(raw.content)
    assert np.array_equal(model.T, c1.config().T)

    # the server trained on exactly what the participants sent, pooled in arrival order
    local = MiningServer(model.T, ALPHA, training=AANNTraining(epochs=15), rng=7, beta=model.beta)
    local.receive(np.hstack([*p1.batches(X1), *p2.batches(X2)]))
    expected = local.train()
    test = np.vstack([records(30, 3), np.full((1, N), 0.99)])
    scores = model.decision_function(test)
    assert np.allclose(scores, expected.decision_function(test), rtol=1e-12, atol=0.0)
    assert np.array_equal(scores, RMPModel.from_bytes(raw.content).decision_function(test))
    assert model.threshold == pytest.approx(expected.threshold, rel=1e-12)
    assert meta["threshold"] == model.threshold
    # a participant may download the model too
    assert c2.model("1")[0]["sha256"] == meta["sha256"]


def test_a_retried_or_repeated_batch_is_stored_once(mining) -> None:
    srv = mining.start()
    X = records(30, 4)
    client, party, first = join(srv.url, 5, X)
    again = upload_records(client, party, X)  # the same records, the same T_i: the same Z
    assert (first.stored, again.stored, again.duplicates, again.numbers) == (1, 0, 1, (1,))
    Z = next(party.batches(X))
    r = httpx.post(
        srv.url + "/v1/batches",
        json={"z": Z.tolist()},
        headers={"authorization": client._client.headers["authorization"]},
    )
    assert r.status_code == 200 and r.json()["status"] == "duplicate" and r.json()["batch"] == 1
    assert count(Path(srv.app.state.store.path), "batches") == 1


# --------------------------------------------------------------------------------------------
# Refused uploads change nothing
# --------------------------------------------------------------------------------------------


def _bad_uploads(Z: np.ndarray, secret: str) -> list[tuple[str, dict[str, str], bytes, int]]:
    good = {"authorization": f"Bearer {secret}", "content-type": "application/json"}
    text = json.dumps({"z": Z.tolist()})
    first = repr(float(Z[0, 0]))

    def body(arr: np.ndarray) -> bytes:
        return json.dumps({"z": arr.tolist()}).encode()

    unprocessable = {  # sent with a good token, refused with 422
        "wrong w": body(Z[:-1]),
        "w + 1": body(np.vstack([Z, Z[:1]])),
        "NaN": text.replace(first, "NaN", 1).encode(),
        "Infinity": text.replace(first, "-Infinity", 1).encode(),
        "empty z": b'{"z": []}',
        "empty rows": b'{"z": [[], [], [], []]}',
        "ragged": b'{"z": [[1.0, 2.0], [1.0], [1.0, 2.0], [1.0, 2.0]]}',
        "booleans": b'{"z": [[true], [1.0], [1.0], [1.0]]}',
        "strings": b'{"z": [["1"], [1.0], [1.0], [1.0]]}',
        "null": b'{"z": [[null], [1.0], [1.0], [1.0]]}',
        "out of range": b'{"z": [[1e9], [1.0], [1.0], [1.0]]}',
        "missing z": b'{"Z": [[1.0], [1.0], [1.0], [1.0]]}',
        "extra field": b'{"z": [[1.0], [1.0], [1.0], [1.0]], "owner": "x"}',
        "not an object": b"[[1.0], [1.0], [1.0], [1.0]]",
    }
    return [(what, good, raw, 422) for what, raw in unprocessable.items()] + [
        ("empty body", good, b"", 400),
        ("not JSON", good, b'{"z": [[1.0]', 400),
        ("too many records", good, body(np.hstack([Z] * 11)), 422),  # 330 > max batch 300
        ("body too large", good, b'{"z": [[' + b"1.0," * 40_000 + b"1.0]]}", 413),
        ("no token", {"content-type": "application/json"}, body(Z), 401),
        (
            "wrong token",
            {**good, "authorization": "Bearer not-a-real-token-0123456789"},
            body(Z),
            401,
        ),
        ("end-user token", {**good, "authorization": f"Bearer {USER}"}, body(Z), 403),
        ("operator token", {**good, "authorization": f"Bearer {OPERATOR}"}, body(Z), 403),
    ]


def test_bad_uploads_get_4xx_with_a_json_error_and_store_nothing(mining) -> None:
    srv = mining.start(max_batch=300, max_body_bytes=100_000)
    db = Path(srv.app.state.store.path)
    client, party, _ = join(srv.url, 6, records(30, 6))
    secret = client._client.headers["authorization"].split()[1]
    Z = next(party.batches(records(30, 7)))
    before = (count(db, "batches"), db.stat().st_size)
    for what, headers, body, status in _bad_uploads(Z, secret):
        r = httpx.post(srv.url + "/v1/batches", content=body, headers=headers)
        assert r.status_code == status, (what, r.status_code, r.text)
        error = r.json()
        assert set(error) == {"error", "detail"} and error["detail"], what
        assert count(db, "batches") == before[0], what
    assert client.batches()["n_records"] == 30
    # the good batch itself is fine
    assert (
        httpx.post(
            srv.url + "/v1/batches", json={"z": Z.tolist()}, headers=bearer(secret)
        ).status_code
        == 201
    )


def test_error_messages_say_what_is_wrong(mining) -> None:
    srv = mining.start()
    client, party, _ = join(srv.url, 8, records(30, 8))
    Z = next(party.batches(records(30, 9)))
    with pytest.raises(ServiceError, match=r"z has 3 row\(s\); this server takes w = 4") as exc:
        client.upload(Z[:3])
    assert exc.value.status_code == 422
    with pytest.raises(ServiceError, match="at most 30") as exc:
        client.upload(np.hstack([Z, Z[:, :1]]))
    with pytest.raises(ServiceError, match="impossible for T_i Y_i"):
        client.upload(Z * 100)


# --------------------------------------------------------------------------------------------
# Isolation, append-only
# --------------------------------------------------------------------------------------------


def test_participants_see_only_their_own_batches_and_cannot_change_any(mining) -> None:
    srv = mining.start()
    db = Path(srv.app.state.store.path)
    X = records(60, 10)
    a, pa, _ = join(srv.url, 13, X, name="a")
    b, pb, _ = join(srv.url, 14, records(30, 11), name="b")
    assert [x["batch"] for x in a.batches()["batches"]] == [1, 2]
    assert [x["batch"] for x in b.batches()["batches"]] == [1]
    assert b.batches()["participant"] == "b" and b.batches()["n_records"] == 30
    mine = a.batch(2)
    assert np.array_equal(np.array(mine["z"]), list(pa.batches(X))[1])
    assert not np.array_equal(np.array(b.batch(1)["z"]), np.array(a.batch(1)["z"]))
    # a's batch 2 does not exist for b: 404 like a batch nobody has
    hb = {"authorization": b._client.headers["authorization"]}
    other = httpx.get(srv.url + "/v1/batches/2", headers=hb)
    nobody = httpx.get(srv.url + "/v1/batches/99", headers=hb)
    assert other.status_code == nobody.status_code == 404
    assert other.json()["error"] == nobody.json()["error"] == "not_found"
    # no endpoint changes or deletes a batch
    before = count(db, "batches")
    for method in ("PUT", "DELETE", "PATCH"):
        r = httpx.request(method, srv.url + "/v1/batches/1", headers=hb, json={"z": [[0.0]] * W})
        assert r.status_code == 405, method
    # and the database refuses it too
    with sqlite3.connect(db) as conn:
        for sql in (
            "DELETE FROM batches",
            "UPDATE batches SET z = x'00'",
            "UPDATE config SET alpha = 0.5",
            "DELETE FROM participants",
        ):
            with pytest.raises(sqlite3.IntegrityError, match="append-only|never"):
                conn.execute(sql)
    assert count(db, "batches") == before
    # participants' lists are for the operator only
    assert httpx.get(srv.url + "/v1/participants", headers=hb).status_code == 403
    listed = httpx.get(srv.url + "/v1/participants", headers=bearer(OPERATOR)).json()
    assert [(p["participant"], p["n_batches"], p["n_records"]) for p in listed["participants"]] == [
        ("a", 2, 60),
        ("b", 1, 30),
    ]


def test_tokens_are_stored_only_as_digests_and_registration_rules(mining) -> None:
    srv = mining.start(registration_token=REGISTRAR)
    db = Path(srv.app.state.store.path)
    url = srv.url + "/v1/participants"
    assert httpx.post(url, json={}).status_code == 401
    assert httpx.post(url, json={}, headers=bearer(USER)).status_code == 403
    r = httpx.post(url, json={"name": "p1"}, headers=bearer(REGISTRAR))
    assert r.status_code == 201 and r.json()["participant"] == "p1"
    token = r.json()["token"]
    assert httpx.post(url, json={"name": "p1"}, headers=bearer(OPERATOR)).status_code == 409
    assert httpx.post(url, json={"name": "bad name!"}, headers=bearer(REGISTRAR)).status_code == 422
    assert httpx.post(url, json={"colour": "x"}, headers=bearer(REGISTRAR)).status_code == 422
    auto = httpx.post(url, headers=bearer(OPERATOR))
    assert auto.status_code == 201 and auto.json()["participant"] == "participant-2"
    assert count(db, "participants") == 2
    srv.app.state.store.close()  # flush, then look at the raw file
    raw = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
    assert token.encode() not in raw and auto.json()["token"].encode() not in raw


def test_public_configuration(mining) -> None:
    srv = mining.start(r=1, w=None)
    cfg = httpx.get(srv.url + "/v1/config").json()
    assert (cfg["n"], cfg["w"], cfg["r"], cfg["alpha"], cfg["max_batch"]) == (N, W, 1, ALPHA, 30)
    T = np.array(cfg["T"])
    assert T.shape == (W, N) and ((0 <= T) & (T < 1)).all()
    assert cfg["beta"] == pytest.approx(2.8124, abs=1e-4)
    with RMPClient(srv.url) as client:
        assert np.array_equal(client.config().T, T)


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


def test_training_rules(mining) -> None:
    srv = mining.start()
    op = bearer(OPERATOR)
    r = httpx.post(srv.url + "/v1/train", headers=op)
    assert r.status_code == 409 and "no batches" in r.json()["detail"]
    assert count(Path(srv.app.state.store.path), "jobs") == 0
    r = httpx.get(srv.url + "/v1/models/latest", headers=bearer(USER))
    assert r.status_code == 404 and "no model" in r.json()["detail"]
    assert httpx.get(srv.url + "/v1/models/latest").status_code == 401
    client, _, _ = join(srv.url, 15, records(40, 15))
    assert httpx.post(srv.url + "/v1/train", headers=bearer(USER)).status_code == 403
    hp = {"authorization": client._client.headers["authorization"]}
    assert httpx.post(srv.url + "/v1/train", headers=hp).status_code == 403
    for body in ('{"epochs": 0}', '{"epochs": "5"}', '{"lr": 1}', "[1]", '{"epochs": true}'):
        r = httpx.post(srv.url + "/v1/train", content=body, headers=op)
        assert r.status_code == 422, body
    assert httpx.get(srv.url + "/v1/jobs/5", headers=op).status_code == 404


def test_training_runs_in_the_background_one_job_at_a_time(mining, tmp_path: Path) -> None:
    srv = mining.start()
    op = bearer(OPERATOR)
    join(srv.url, 16, records(60, 16))
    r = httpx.post(srv.url + "/v1/train", json={"epochs": 1_000_000}, headers=op)
    assert r.status_code == 202 and r.json()["status"] == "running"
    job = r.json()["job"]
    assert httpx.get(srv.url + "/v1/config").status_code == 200  # answers while it trains
    again = httpx.post(srv.url + "/v1/train", headers=op)
    assert again.status_code == 409 and f"job {job} is still running" in again.json()["detail"]
    deadline = time.monotonic() + 120  # bounds a hang; progress comes after one epoch
    state: dict[str, Any] = {}
    while time.monotonic() < deadline and not state.get("progress"):
        state = httpx.get(srv.url + f"/v1/jobs/{job}", headers=op).json()
    assert state["progress"]["epochs"] == 1_000_000
    assert httpx.get(srv.url + "/v1/status", headers=op).json()["running_job"] == job
    mining.stop(srv)  # shutdown stops the job at its next epoch; nothing is stored
    srv2 = mining.start()
    state = httpx.get(srv2.url + f"/v1/jobs/{job}", headers=op).json()
    assert state["status"] == "interrupted" and state["model"] is None
    assert httpx.get(srv2.url + "/v1/models", headers=op).json()["models"] == []
    final = train_and_wait(srv2.url, epochs=5)
    assert final["status"] == "done" and final["job"] == job + 1


# --------------------------------------------------------------------------------------------
# Configuration and restarts
# --------------------------------------------------------------------------------------------


def test_configuration_is_fixed_at_creation(tmp_path: Path) -> None:
    store = RMPStore(tmp_path / "c.sqlite")
    try:
        with pytest.raises(ParameterError, match="holds no RMP configuration yet"):
            open_config(store, n=5)
        with pytest.raises(ParameterError, match="w must be smaller than n"):
            open_config(store, n=5, w=5, alpha=0.1)
        with pytest.raises(ParameterError, match="0 < alpha < 1"):
            open_config(store, n=5, w=4, alpha=1.0)
        with pytest.raises(ParameterError, match="disagree"):
            open_config(store, n=5, w=3, r=1, alpha=0.1)
        cfg, created = open_config(store, n=5, r=2, alpha=0.1, rng=3)
        assert created and (cfg.n, cfg.w, cfg.r) == (5, 3, 2)
        kept, created = open_config(store)
        assert not created and np.array_equal(kept.T, cfg.T)
        kept, _ = open_config(store, n=5, w=3, alpha=0.1, rng=99)  # same values: fine
        assert np.array_equal(kept.T, cfg.T)
        for bad in ({"n": 6}, {"w": 2}, {"alpha": 0.2}, {"beta": 3.0}, {"r": 1}):
            with pytest.raises(ParameterError, match="conflicts with"):
                open_config(store, **bad)
    finally:
        store.close()
    with pytest.raises(ParameterError, match="is a privad rmp database, not a analyst one"):
        AnalystStore(tmp_path / "c.sqlite")


def test_killed_server_restarts_with_batches_t_and_model(tmp_path: Path, spawn, run_cli) -> None:
    db = tmp_path / "rmp.sqlite"
    common = [
        "serve",
        "rmp",
        "--db",
        str(db),
        "--port",
        "0",
        "--token",
        f"alice={USER}",
        "--operator-token",
        OPERATOR,
        "--epochs",
        "5",
    ]
    first = spawn(*common, "--n", str(N), "--w", str(W), "--alpha", str(ALPHA), "--seed", "4")
    T = RMPClient(first.url).config().T
    X = records(45, 20)
    client, party, _ = join(first.url, 21, X)
    final = train_and_wait(first.url)
    with RMPClient(first.url, USER) as user:
        meta, npz = user.model_bytes()
    client.upload(np.full((W, 2), 0.5))  # acknowledged after the model: must survive too
    first.kill()  # SIGKILL: no graceful shutdown

    second = spawn(*common)  # no --n/--w/--alpha: the stored configuration is kept
    again = RMPClient(second.url, client._client.headers["authorization"].split()[1])
    assert np.array_equal(again.config().T, T)
    assert [(b["batch"], b["m"]) for b in again.batches()["batches"]] == [(1, 30), (2, 15), (3, 2)]
    assert np.array_equal(np.array(again.batch(2)["z"]), list(party.batches(X))[1])
    with RMPClient(second.url, USER) as user:
        meta2, npz2 = user.model_bytes()
    assert final["status"] == "done" and meta2 == meta and npz2 == npz
    second.stop()

    # a conflicting configuration is refused with one line, before anything is served
    code, out, err = run_cli(*common, "--n", "6", "--w", "5", "--alpha", "0.2")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1
    assert lines[0].startswith("privad: error: ") and "conflicts with --n 6" in lines[0]
