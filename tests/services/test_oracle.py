"""The noisy group oracle over HTTP (``privad serve oracle``, :mod:`privad.services.oracle`).

Servers run on 127.0.0.1 with a free port and a temporary ledger: as uvicorn threads in this
process, or as a ``privad serve oracle`` subprocess for the restart test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from privad.accounting import ANOMALY_RESTRICTED_DP, Ledger
from privad.datasets import make_search_mixture
from privad.errors import BudgetExceededError, ParameterError
from privad.experiments.search_problems import problem_from_dataset
from privad.search import make_oracle, search
from privad.search.groups import PrefixGroup, QueryOrder
from privad.search.models import MaxAnswer
from privad.services.app import ThreadedServer
from privad.services.auth import TokenRegistry
from privad.services.clients import OracleClient
from privad.services.oracle import create_oracle_app, order_id
from privad.services.remote_oracle import RemoteOracle

SECRET = "searcher-secret-0123456789abcdef"
OTHER = "second-searcher-secret-0123456789"
AUTH = {"authorization": f"Bearer {SECRET}"}


@pytest.fixture(scope="module")
def problem() -> Any:
    return problem_from_dataset(make_search_mixture(n=400, threshold_ratio=1.0, rng=3))


class Oracles:
    """Start threaded oracle servers in ``server_pool`` (stopped at teardown)."""

    def __init__(self, tmp_path: Path, problem: Any, pool: Any) -> None:
        self.tmp_path = tmp_path
        self.problem = problem
        self.pool = pool

    def start(self, *, db: str = "oracle.sqlite", **kwargs: Any) -> ThreadedServer:
        p = self.problem
        kwargs.setdefault("epsilon", 1.0)
        kwargs.setdefault("budget", 1000.0)
        app = create_oracle_app(
            self.tmp_path / db,
            TokenRegistry([("s1", SECRET), ("s2", OTHER)]),
            values=p.values,
            t_low=p.t_low,
            t_high=p.t_high,
            **kwargs,
        )
        return self.pool.start_app(app)


@pytest.fixture
def oracles(tmp_path: Path, problem: Any, server_pool: Any) -> Oracles:
    return Oracles(tmp_path, problem, server_pool)


def _spent(url: str) -> float:
    return httpx.get(url + "/v1/budget", headers=AUTH).json()["spent"]


@pytest.mark.parametrize("kind", ["laplace", "binarized", "rr"])
def test_remote_search_equals_local_search_with_the_same_seeds(oracles, problem, kind) -> None:
    srv = oracles.start(kind=kind, rng=11)
    with RemoteOracle(srv.url, SECRET) as remote:
        got = search(remote, budget=200.0, rng=5)
        assert remote.last_budget["spent"] == got.n_queries
    local = make_oracle(
        "randomized-response" if kind == "rr" else kind,
        problem.values,
        problem.t_low,
        problem.t_high,
        1.0,
        rng=11,
    )
    want = search(local, budget=200.0, rng=5)
    assert got.n_queries == want.n_queries > 0
    np.testing.assert_array_equal(got.top, want.top)
    np.testing.assert_array_equal(got.posterior, want.posterior)
    assert got.halted_by == want.halted_by == ("posterior",)
    assert got.contains(problem.anomaly_index)
    assert _spent(srv.url) == got.n_queries  # ε = 1 per answer, charged at the server


def test_model_description_is_public_and_rebuilds_the_answer_model(oracles, problem) -> None:
    srv = oracles.start(kind="laplace", budget=7.5, scope="data-1")
    info = httpx.get(srv.url + "/v1/model", headers=AUTH).json()
    assert info["n_items"] == problem.n_items and info["kind"] == "laplace"
    assert info["t_low"] == problem.t_low and info["t_high"] == problem.t_high
    assert info["model"]["scale"] >= problem.t_low  # λ = t_l/ε, rounded up
    assert info["guarantee"]["notion"] == ANOMALY_RESTRICTED_DP
    assert info["budget"] == {
        "scope": "data-1",
        "notion": ANOMALY_RESTRICTED_DP,
        "total": 7.5,
        "spent": 0.0,
        "remaining": 7.5,
        "epsilon_per_query": 1.0,
        "queries_left": 7,
    }
    assert "values" not in info and "anomaly_index" not in str(info)
    with RemoteOracle(srv.url, SECRET) as remote:
        assert remote.n_items == problem.n_items and remote.epsilon == 1.0
        answer = remote.query(np.arange(10))
        assert isinstance(answer, MaxAnswer)
    assert httpx.get(srv.url + "/v1/model").status_code == 401
    assert httpx.get(srv.url + "/v1/health").json() == {"status": "ok", "role": "oracle"}


def test_budget_refusal_is_429_and_spends_nothing(oracles, problem) -> None:
    srv = oracles.start(budget=3.0, epsilon=1.0)
    body = {"indices": [0, 1, 2]}
    for k in range(3):
        r = httpx.post(srv.url + "/v1/query", json=body, headers=AUTH)
        assert r.status_code == 200, r.text
        assert r.json()["budget"]["queries_left"] == 2 - k
    r = httpx.post(srv.url + "/v1/query", json=body, headers=AUTH)
    assert r.status_code == 429
    assert r.json()["error"] == "budget_exhausted"
    assert "remaining 0" in r.json()["detail"] and "nothing was spent" in r.json()["detail"]
    assert _spent(srv.url) == 3.0
    # the client raises BudgetExceededError; a search past the budget stops with it
    with RemoteOracle(srv.url, OTHER) as remote:  # budgets protect the data: shared by tokens
        with pytest.raises(BudgetExceededError, match="budget exhausted"):
            remote.query([0, 1])
        with pytest.raises(BudgetExceededError):
            search(remote, budget=10.0, rng=1)
    assert _spent(srv.url) == 3.0


def test_concurrent_clients_never_overspend(oracles) -> None:
    srv = oracles.start(budget=10.0)
    codes: list[int] = []
    lock = threading.Lock()

    def hammer(secret: str) -> None:
        with httpx.Client(headers={"authorization": f"Bearer {secret}"}) as client:
            for _ in range(8):
                r = client.post(srv.url + "/v1/query", json={"indices": [3, 4]})
                with lock:
                    codes.append(r.status_code)

    threads = [threading.Thread(target=hammer, args=(s,)) for s in (SECRET, OTHER)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [200] * 10 + [429] * 6
    assert _spent(srv.url) == 10.0


def test_bad_queries_get_4xx_and_spend_nothing(oracles, problem) -> None:
    srv = oracles.start()
    n = problem.n_items
    oid = httpx.post(
        srv.url + "/v1/orders", json={"permutation": list(range(n))}, headers=AUTH
    ).json()["order"]
    cases: list[tuple[Any, int, str]] = [
        ({"indices": []}, 422, "empty"),
        ({"indices": [0, n]}, 422, f"[0, {n - 1}]"),
        ({"indices": [-1, 2]}, 422, "outside"),
        ({"indices": [5, 5, 6]}, 422, "distinct"),
        ({"indices": list(range(n))}, 422, "non-empty complement"),
        ({"indices": [1.5, 2]}, 422, "integers"),
        ({"indices": [True, 2]}, 422, "integers"),
        ({"indices": [1], "size": 3}, 422, "unknown field"),
        ({"order": oid, "size": 0}, 422, "size must be in"),
        ({"order": oid, "size": n}, 422, "size must be in"),
        ({"order": oid, "size": True}, 422, "size must be an integer"),
        ({"order": oid, "size": 3, "complement": "yes"}, 422, "complement"),
        ({"order": "feedbeef", "size": 3}, 404, "unknown order"),
        ({"order": oid}, 422, "size must be an integer"),
        ({"what": 1}, 422, "needs 'indices'"),
        ([1, 2, 3], 422, "JSON object"),
    ]
    for body, status, words in cases:
        r = httpx.post(srv.url + "/v1/query", json=body, headers=AUTH)
        assert r.status_code == status, (body, r.text)
        assert words in r.json()["detail"], (body, r.text)
    for raw in (b'{"indices": [1, 2', b"", b'{"indices": [NaN]}'):
        r = httpx.post(srv.url + "/v1/query", content=raw, headers=AUTH)
        assert r.status_code in (400, 422), r.text
    bad_orders = [
        ({"permutation": list(range(n - 1))}, "entries"),
        ({"permutation": [0] * n}, "permutation of range"),
        ({"permutation": list(range(n)), "x": 1}, "unknown field"),
        ({}, "missing field"),
    ]
    for body, words in bad_orders:
        r = httpx.post(srv.url + "/v1/orders", json=body, headers=AUTH)
        assert r.status_code == 422 and words in r.json()["detail"], (body, r.text)
    r = httpx.post(srv.url + "/v1/query", json={"indices": [1, 2]})
    assert r.status_code == 401
    r = httpx.post(
        srv.url + "/v1/query",
        json={"indices": [1, 2]},
        headers={"authorization": "Bearer not-a-token-0123456789"},
    )
    assert r.status_code == 401
    assert _spent(srv.url) == 0.0
    # and a good query after all that is charged once
    r = httpx.post(
        srv.url + "/v1/query", json={"order": oid, "size": 3, "complement": True}, headers=AUTH
    )
    assert r.status_code == 200 and len(r.json()["answer"]) == 2
    assert _spent(srv.url) == 1.0


def test_orders_are_content_addressed_and_re_stored_when_forgotten(oracles, problem) -> None:
    srv = oracles.start(max_orders=1, kind="binarized", rng=2)
    n = problem.n_items
    perm = np.arange(n)[::-1].copy()
    r1 = httpx.post(srv.url + "/v1/orders", json={"permutation": perm.tolist()}, headers=AUTH)
    r2 = httpx.post(srv.url + "/v1/orders", json={"permutation": perm.tolist()}, headers=AUTH)
    assert (r1.status_code, r2.status_code) == (201, 200)
    assert r1.json()["order"] == r2.json()["order"] == order_id(perm)
    with OracleClient(srv.url, SECRET) as client:
        assert client.query_prefix(order_id(perm), 5)["answer"] in (0, 1)
    with RemoteOracle(srv.url, SECRET) as remote:
        a, b = QueryOrder.random(n, 1), QueryOrder.random(n, 2)
        remote.query(PrefixGroup(a, 10))
        remote.query(PrefixGroup(b, 10))  # evicts a at the server (max_orders=1)
        remote.query(PrefixGroup(a, 20))  # 404, stored again, answered
        assert remote.queries_sent == 3
        with pytest.raises(ParameterError, match="rng"):
            remote.query(PrefixGroup(a, 5), rng=3)
    assert _spent(srv.url) == 4.0


def test_spends_are_in_the_ledger_with_the_client_name(oracles, tmp_path, problem) -> None:
    srv = oracles.start(db="led.sqlite", scope="census", budget=5.0)
    with RemoteOracle(srv.url, OTHER) as remote:
        remote.query([1, 2, 3])
    with Ledger(tmp_path / "led.sqlite", create=False) as book:
        (spend,) = book.history("census")
        assert spend.metadata == {"client": "s2", "query": 1, "size": 3, "n_items": problem.n_items}
        assert spend.guarantee.notion == ANOMALY_RESTRICTED_DP and spend.epsilon == 1.0
        assert book.remaining("census", ANOMALY_RESTRICTED_DP) == 4.0


@pytest.mark.parametrize("kind", ["laplace", "binarized", "rr"])
def test_one_spend_per_answer(oracles, tmp_path, kind) -> None:
    """The oracle's release path is the server's only spend: no double charge."""
    srv = oracles.start(db=f"{kind}.sqlite", kind=kind, epsilon=0.5, budget=100.0)
    with RemoteOracle(srv.url, SECRET) as remote:
        res = search(remote, budget=20.0, rng=2)
        remote.query([0, 1])
        answers = res.n_queries + 1
    with Ledger(tmp_path / f"{kind}.sqlite", create=False) as book:
        spends = book.history("oracle")
        assert len(spends) == answers
        assert [s.metadata["query"] for s in spends] == list(range(1, answers + 1))
        assert book.spent("oracle", ANOMALY_RESTRICTED_DP) == 0.5 * answers


def test_invalid_configuration_is_refused_at_startup(tmp_path, problem) -> None:
    reg = TokenRegistry([("s1", SECRET)])
    kw = {
        "values": problem.values,
        "t_low": problem.t_low,
        "t_high": problem.t_high,
        "budget": 10.0,
    }
    for eps in (0.0, -1.0, float("nan")):
        with pytest.raises(ParameterError, match="epsilon"):
            create_oracle_app(tmp_path / "a.sqlite", reg, epsilon=eps, **kw)
    with pytest.raises(ParameterError, match="kind"):
        create_oracle_app(tmp_path / "a.sqlite", reg, epsilon=1.0, kind="gauss", **kw)
    with pytest.raises(Exception, match="strictly between"):
        create_oracle_app(
            tmp_path / "a.sqlite", reg, epsilon=1.0, **{**kw, "t_low": problem.t_low / 2}
        )
    (tmp_path / "not-a-ledger.sqlite").write_bytes(b"hello, I am not SQLite at all" * 100)
    with pytest.raises(Exception, match="ledger"):
        create_oracle_app(tmp_path / "not-a-ledger.sqlite", reg, epsilon=1.0, **kw)


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode in (0, -signal.SIGTERM), err
    assert "Traceback" not in err
    return err


def serve_oracle(problem: Any, data: Path, db: Path, options: str) -> list[str]:
    """``privad serve oracle`` on a free port over ``problem``'s values (saved to ``data``)
    and thresholds, s1's token, then ``options``."""
    np.save(data, problem.values)
    held = f"{data} --db {db} --port 0 --t-low {problem.t_low!r} --t-high {problem.t_high!r}"
    return [*f"serve oracle {held}".split(), "--token", f"s1={SECRET}", *options.split()]


def test_spent_budget_survives_a_server_restart(tmp_path, problem, spawn_server) -> None:
    data, db = tmp_path / "values.npy", tmp_path / "oracle-ledger.sqlite"
    args = serve_oracle(problem, data, db, "--epsilon 0.5 --budget 3 --kind rr")
    proc, url = spawn_server(args, "privad oracle")
    try:
        with RemoteOracle(url, SECRET) as remote:
            result = search(remote, budget=2.0, rng=0)  # 4 queries of ε = 0.5
        assert result.n_queries == 4 and result.halted_by == ("budget",)
    finally:
        err = _stop(proc)
    assert "spent 0, remaining 3 (6 queries" in err
    proc, url = spawn_server(args, "privad oracle")
    try:
        state = httpx.get(url + "/v1/budget", headers=AUTH).json()
        assert (state["spent"], state["remaining"], state["queries_left"]) == (2.0, 1.0, 2)
        for status in (200, 200, 429):
            r = httpx.post(url + "/v1/query", json={"indices": [0]}, headers=AUTH)
            assert r.status_code == status, r.text
    finally:
        err = _stop(proc)
    assert "spent 2, remaining 1 (2 queries" in err
    with Ledger(db, create=False) as book:
        assert book.spent(f"oracle/{data.stem}", ANOMALY_RESTRICTED_DP) == 3.0
    assert os.path.exists(db)


def test_an_approximate_budget_is_spent_tightly_and_refuses_with_429(oracles) -> None:
    """(ε = 0.9, δ = 0.05) with Laplace answers of ε = 1: linear composition admits none,
    the Laplace privacy-loss distribution admits one (δ(0.9) = 1 − e^{(0.9 − 1)/2} = 0.0488
    ≤ 0.05); the second query is refused with 429 and nothing is spent."""
    srv = oracles.start(budget=0.9, delta=0.05, kind="laplace")
    state = httpx.get(srv.url + "/v1/budget", headers=AUTH).json()
    assert (state["queries_left"], state["delta"], state["delta_spent"]) == (1, 0.05, 0.0)
    r = httpx.post(srv.url + "/v1/query", json={"indices": [0, 1]}, headers=AUTH)
    assert r.status_code == 200, r.text
    after = r.json()["budget"]
    assert after["queries_left"] == 0 and after["delta_spent"] == 0.05
    assert 0.89 < after["spent"] <= 0.9  # the block's tight ε, below the pure ε of 1
    r = httpx.post(srv.url + "/v1/query", json={"indices": [0, 1]}, headers=AUTH)
    assert r.status_code == 429 and r.json()["error"] == "budget_exhausted"
    assert "nothing was spent" in r.json()["detail"]
    assert httpx.get(srv.url + "/v1/budget", headers=AUTH).json() == after
    with Ledger(oracles.tmp_path / "oracle.sqlite", create=False) as book:
        rows = book.history()
        assert [(s.is_block, s.is_draw) for s in rows] == [(True, False), (False, True)]
        assert rows[1].metadata["client"] == "s1"
        book.verify()


def test_serve_oracle_takes_an_approximate_budget(tmp_path, problem, spawn_server) -> None:
    data, db = tmp_path / "values.npy", tmp_path / "l.sqlite"
    args = serve_oracle(problem, data, db, "--epsilon 1 --budget 0.9 --delta 0.05")
    proc, url = spawn_server(args, "privad oracle")
    try:
        codes = [
            httpx.post(url + "/v1/query", json={"indices": [0]}, headers=AUTH).status_code
            for _ in range(2)
        ]
    finally:
        err = _stop(proc)
    assert codes == [200, 429]
    assert "δ 0.05 (tight accounting)" in err and "(1 queries of ε = 1)" in err


def test_the_operator_is_told_when_not_exactly_one_value_reaches_t_high(tmp_path) -> None:
    """The oracle's notes (printed by ``privad serve oracle``) count the values >= t_h when
    they are not exactly the one anomaly the search assumes, before the budget line."""
    values = np.array([0.1, 0.2, 2.0, 3.0])
    for n, db in ((4, "two.sqlite"), (3, "one.sqlite")):
        notes: list[str] = []
        app = create_oracle_app(
            tmp_path / db,
            TokenRegistry([("s1", SECRET)]),
            values=values[:n],
            t_low=0.5,
            t_high=1.5,
            epsilon=1.0,
            budget=5.0,
            notes=notes,
        )
        app.state.ledger.close()
        assert notes[-1].startswith("scope 'oracle' (anomaly-restricted-dp) in ledger ")
        assert notes[:-1] == (
            [
                "note: 2 values are >= t_h; the search assumes exactly one anomaly (several: "
                "search disjoint groups, section 7, privad.search.multiple)"
            ]
            if n == 4
            else []
        )
