"""The sensitive-privacy curator over HTTP (``privad serve sp``, :mod:`privad.services.curator`).

Threaded servers on 127.0.0.1 for most tests; a ``privad serve sp`` subprocess killed with
SIGKILL for the durability test.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import numpy as np
import pytest

from privad.accounting import Ledger
from privad.datasets import load
from privad.errors import BudgetExceededError
from privad.geometry import ball_counts
from privad.sensitive import SensitiveAnomalyIdentifier, SPMechanism
from privad.sensitive.accounting import claim5_bound
from privad.services.auth import TokenRegistry
from privad.services.clients import CuratorClient
from privad.services.curator import create_curator_app
from privad.services.errors import ServiceError

ALICE = "alice-querier-secret-0123456789"
BOB = "bob-querier-secret-0123456789ab"
MECH = SPMechanism(18, 0.1, 0.1)


@pytest.fixture(scope="module")
def thyroid() -> np.ndarray:
    return load("thyroid").X


def _start(pool, tmp_path: Path, X: np.ndarray, *, budget: float = 50.0, recorder=None):
    app = create_curator_app(
        X,
        MECH,
        db=tmp_path / "curator.sqlite",
        ledger=tmp_path / "ledger.sqlite",
        tokens=TokenRegistry([("alice", ALICE), ("bob", BOB)]),
        budget=budget,
        rng=7,
        recorder=recorder,
        max_body_bytes=1 << 20,
    )
    return pool.start_app(app)


def test_answers_charges_and_repeats_over_http(
    server_pool, tmp_path, thyroid, online_claim5_m
) -> None:
    srv = _start(server_pool, tmp_path, thyroid, budget=1000)
    with CuratorClient(srv.url, ALICE) as alice, CuratorClient(srv.url, BOB) as bob:
        model = alice.model()
        assert model["n_records"] == thyroid.shape[0] and model["mechanism"] == "sp"
        reply = alice.ask_ids(list(range(thyroid.shape[0])))
        lib = SensitiveAnomalyIdentifier(18, 0.1, 0.1, rng=7).fit(thyroid).predict()
        np.testing.assert_array_equal(reply["answers"], lib)  # same draws as the library
        assert reply["charged"] == pytest.approx(377.2)  # ε per distinct id, data-independent
        assert alice.ask_ids([3, 2, 1])["charged"] == 0.0  # repeats: recorded, free
        Q = np.unique(thyroid[::37] + 0.003, axis=0)
        total = sum(bob.ask_records(Q[s : s + 10])["charged"] for s in range(0, len(Q), 10))
        m = online_claim5_m(Q, 0.1)  # the 2r bound of the final set, whatever the batches
        assert total == pytest.approx(m * 0.1) and m >= claim5_bound(Q, 0.1).m
        assert bob.budget()["spent"] == pytest.approx(total)
        assert alice.budget()["querier"] == "alice"


def test_refusals_and_bad_input_spend_nothing(server_pool, tmp_path, thyroid) -> None:
    srv = _start(server_pool, tmp_path, thyroid, budget=0.5)
    auth = {"authorization": f"Bearer {ALICE}"}
    bad = [
        b"{",
        b"[]",
        b'{"ids": [3772]}',
        b'{"ids": [-1]}',
        b'{"ids": []}',
        b'{"ids": [1.5]}',
        b'{"ids": [true]}',
        b'{"records": [[1, 2]]}',
        b'{"records": [[NaN, 0, 0, 0, 0, 0]]}',
        b'{"records": [[true, 0, 0, 0, 0, 0]]}',  # a boolean is not the number 1
        b'{"records": [["0.5", 0, 0, 0, 0, 0]]}',
        b'{"records": [[1e-160, 0, 0, 0, 0, 0]]}',  # outside the public query domain
        b'{"records": []}',
        b'{"ids": [1], "records": [[0, 0, 0, 0, 0, 0]]}',
        b'{"ids": [1], "extra": 1}',
        b'{"ids": [99999999999999999999999]}',
        json.dumps({"ids": list(range(100_001))}).encode(),
    ]
    for body in bad:
        r = httpx.post(srv.url + "/v1/ask", content=body, headers=auth)
        assert 400 <= r.status_code < 500, (body[:40], r.status_code, r.text)
    r = httpx.post(srv.url + "/v1/ask", json={"ids": [1]})
    assert r.status_code == 401
    with CuratorClient(srv.url, ALICE) as alice:
        assert alice.budget()["spent"] == 0.0
        alice.ask_ids([0, 1, 2, 3])
        with pytest.raises(BudgetExceededError, match="429"):
            alice.ask_ids([4, 5])  # 0.2 > 0.1 left
        assert alice.budget()["spent"] == pytest.approx(0.4)
        assert alice.ask_ids([4])["charged"] == pytest.approx(0.1)
        with pytest.raises(ServiceError):
            alice.ask_ids([10**6])
    with Ledger(tmp_path / "ledger.sqlite") as book:
        assert len(book.history()) == 2


def test_the_querier_sees_noisy_bits_and_its_budget_only(server_pool, tmp_path, thyroid) -> None:
    """Transcript: every response body a querier receives holds answers (0/1), ε charged and
    its own budget; nothing derived from counts, probabilities or distances."""
    seen: list[tuple[str, bytes]] = []
    srv = _start(server_pool, tmp_path, thyroid)
    with CuratorClient(
        srv.url, ALICE, recorder=lambda kind, route, body: seen.append((route, body))
    ) as alice:
        alice.model()
        alice.budget()
        alice.ask_ids([0, 1, 2])
        alice.ask_records(thyroid[:3] + 0.01, add_query_to_data=True)
    allowed_ask = {"answers", "charged", "budget"}
    public = {
        "mechanism",
        "beta",
        "r",
        "epsilon",
        "k",
        "metric",
        "count_cap",
        "n_records",
        "n_features",
        "guarantee",
        "budget_per_querier",
        "max_batch",
        "query_domain",
    }
    assert [route for route, _ in seen] == [
        "GET /v1/model",
        "GET /v1/budget",
        "POST /v1/ask",
        "POST /v1/ask",
    ]
    for route, body in seen:
        data = json.loads(body)
        if route == "GET /v1/model":
            assert set(data) == public  # the parameters the operator published
            continue
        text = body.decode().lower()
        for word in ("ball", "count", "probab", "distance", "x_i", "error", "log"):
            assert word not in text, (route, word)
        if route == "POST /v1/ask":
            assert set(data) == allowed_ask and set(data["answers"]) <= {0, 1}
            assert set(data["budget"]) == {"notion", "total", "spent", "remaining"}


def test_the_per_record_exposure_stays_with_the_curator(
    server_pool, tmp_path, thyroid, online_claim5_m
) -> None:
    """The curator's ledger records how many of a querier's answers can move with each
    record (it reads the data); no response the querier receives carries any of it."""
    seen: list[bytes] = []
    srv = _start(server_pool, tmp_path, thyroid)
    Q = thyroid[:3] + 0.01
    with CuratorClient(
        srv.url, ALICE, recorder=lambda kind, route, body: seen.append(body)
    ) as alice:
        alice.model()
        alice.ask_ids([0, 1, 2])
        alice.ask_records(Q)
        alice.budget()
    with Ledger(tmp_path / "ledger.sqlite") as book:
        kept = [s.metadata["per_record"] for s in book.history("curator/alice")]
        statement = book.statement("curator/alice")
    expected = ball_counts(np.vstack([thyroid[:3], Q]), 0.1, queries=thyroid)  # c_j, by hand
    assert len(kept) == 2 and kept[-1]["max"] == int(expected.max()) > 1
    assert kept[-1]["untouched"] == int((expected == 0).sum())
    assert kept[-1]["m"] == 3 + online_claim5_m(Q, 0.1)  # 3 ids + the vectors' online m
    assert "per record (curator only" in statement
    assert seen and len(seen) == 4
    for body in seen:
        text = body.decode()
        for word in ("per_record", "untouched", "median", "p90", "bins", "loss"):
            assert word not in text, word


def test_an_approximate_budget_per_querier_over_http(server_pool, tmp_path, thyroid) -> None:
    """ε = 0.5 per answer under (2, 0.1) per querier: 8 distinct ids (δ_8(2) = 0.0886 ≤ 0.1 <
    δ_9(2) = 0.1455, the optimal composition theorem) where linear composition allows 4; the
    ninth is refused with 429 and nothing is spent."""
    mech = SPMechanism(18, 0.1, 0.5)
    srv = server_pool.start_curator(
        thyroid, mech, ALICE, tmp_path, querier="alice", budget=2.0, delta=0.1, rng=7
    )
    with CuratorClient(srv.url, ALICE) as alice:
        assert alice.model()["budget_delta_per_querier"] == 0.1
        assert alice.budget()["answers_left"] == 8
        assert alice.ask_ids([0, 1, 2])["charged"] == pytest.approx(1.5)  # its pure ε
        assert alice.ask_ids(list(range(3, 8)))["budget"]["answers_left"] == 0
        before = alice.budget()
        assert before["delta_spent"] == 0.1 and before["spent"] < 2.0
        with pytest.raises(BudgetExceededError, match="429"):
            alice.ask_ids([8])
        assert alice.budget() == before
        assert len(alice.ask_ids([7, 0])["answers"]) == 2  # recorded: free
    with Ledger(tmp_path / "l.sqlite") as book:
        assert [s.answers for s in book.history("curator/alice")] == [8, 3, 5]
        book.verify()


def serve_sp(tmp_path: Path, options: str) -> list[str]:
    """``privad serve sp OPTIONS`` on a free port, its store and ledger in the test's folder,
    alice's token last."""
    stores = f"--db {tmp_path / 'c.sqlite'} --ledger {tmp_path / 'l.sqlite'} --port 0"
    return [*f"serve sp {options} {stores}".split(), "--token", f"alice={ALICE}"]


def test_serve_sp_takes_an_approximate_budget(tmp_path, spawn_server) -> None:
    args = serve_sp(tmp_path, "thyroid --beta 18 --r 0.1 --epsilon 0.5 --budget 2 --delta 0.1")
    proc, url = spawn_server(args, "privad curator")
    try:
        with CuratorClient(url, ALICE) as alice:
            alice.ask_ids(list(range(8)))
            with pytest.raises(BudgetExceededError, match="429"):
                alice.ask_ids([8])
            assert alice.budget()["answers_left"] == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert "Traceback" not in err and "2, δ 0.1 per querier" in err


def test_sigkill_loses_no_charged_answer(tmp_path, spawn_server) -> None:
    args = serve_sp(tmp_path, "thyroid --beta 18 --r 0.1 --epsilon 0.1 --budget 5")
    proc, url = spawn_server(args, "privad curator")
    try:
        with CuratorClient(url, ALICE) as alice:
            first = alice.ask_ids([10, 11, 12])["answers"]
            vec = alice.ask_records([[0.5] * 6, [0.1] * 6])["answers"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=20)
    proc, url = spawn_server(
        [*args[:-2], "--token", f"alice={ALICE}", "--seed", "1"], "privad curator"
    )
    try:
        with CuratorClient(url, ALICE) as alice:
            assert alice.budget()["spent"] == pytest.approx(0.4)  # 3 ids + m = 1
            assert alice.ask_ids([12, 11, 10])["answers"] == first[::-1]
            assert alice.ask_records([[0.1] * 6, [0.5] * 6])["answers"] == vec[::-1]
            assert alice.budget()["spent"] == pytest.approx(0.4)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert "Traceback" not in err


def test_serve_sp_bounds_exclude_and_id(tmp_path, spawn_server) -> None:
    """``privad serve sp --bounds/--bound/--exclude/--id`` (issue 29 item 6): the id and the
    excluded column are not features; the declared bounds are the public query domain,
    published in /v1/model; a question outside them is refused (422) on its own values, a
    question inside is mapped like the data and answered."""
    data = tmp_path / "d.csv"
    rng = np.random.default_rng(4)
    rows = rng.uniform(0.0, 10.0, size=(60, 2))
    data.write_text(
        "name,stamp,x,y\n"
        + "".join(f"r{i},{1000 + i},{x!r},{y!r}\n" for i, (x, y) in enumerate(rows.tolist()))
    )
    (tmp_path / "b.json").write_text('{"x": [0, 10]}')
    args = serve_sp(tmp_path, f"{data} --beta 2 --r 0.2 --epsilon 0.5 --budget 5")
    args += ["--id", "name", "--exclude", "stamp", "--bounds", str(tmp_path / "b.json")]
    args += ["--bound", "y=0:20"]
    proc, url = spawn_server(args, "privad curator")
    try:
        with CuratorClient(url, ALICE) as alice:
            model = alice.model()
            assert model["n_features"] == 2 and model["n_records"] == 60
            assert model["query_domain"]["bounds"] == {"0": [0.0, 10.0], "1": [0.0, 20.0]}
            with pytest.raises(ServiceError, match=r"422.*declared public bounds \[0, 20\]"):
                alice.ask_records([[5.0, 20.5]])
            assert alice.budget()["spent"] == 0.0
            reply = alice.ask_records([[5.0, 10.0]])  # mapped to (0.5, 0.5)
            assert reply["charged"] == 0.5 and len(reply["answers"]) == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert "Traceback" not in err
    assert "public bounds on 2 column(s)" in err and "0 value(s) outside" in err
