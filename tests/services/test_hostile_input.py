"""Hostile requests to every privad server: deep or huge JSON, out-of-range ids, bad names.

All five servers (analyst, correction, oracle, RMP, curator) run as uvicorn threads on
127.0.0.1 with tiny data; every hostile request must get a 4xx with privad's JSON error
body, never a 5xx, and leave the stored data as it was.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privad.datasets import make_search_mixture
from privad.experiments.search_problems import problem_from_dataset
from privad.noise import Randomness
from privad.relaxed import DBSCANDetector
from privad.rmp import AANNTraining
from privad.sensitive import SPMechanism
from privad.services.analyst import create_analyst_app
from privad.services.app import ThreadedServer
from privad.services.auth import TokenRegistry
from privad.services.bodies import MAX_JSON_DEPTH, parse_json
from privad.services.correction import create_correction_app
from privad.services.curator import create_curator_app
from privad.services.errors import ServiceError
from privad.services.oracle import create_oracle_app
from privad.services.rmp import create_rmp_app

SENSOR = "sensor-secret-0123456789abcdef"
ANALYST = "analyst-secret-0123456789abcdef"
QUERIER = "querier-secret-0123456789abcdef"
OPERATOR = "operator-secret-0123456789abcdef"
PARTICIPANT = "participant-secret-0123456789abcdef"


BODIES = {"analyst": 1, "correction": 3, "oracle": 2, "rmp": 3, "curator": 1}
"""How many endpoints of each server read a JSON body."""


@dataclass
class Server:
    """One running server: its URL, the tokens that reach its endpoints, its files."""

    name: str
    url: str
    tokens: tuple[str, ...]
    files: tuple[Path, ...]

    def headers(self, k: int = 0) -> dict[str, str]:
        return {"authorization": f"Bearer {self.tokens[k]}"}

    def snapshot(self) -> str:
        """A digest of every row of every table of the server's SQLite files."""
        digest = hashlib.sha256()
        for path in self.files:
            with sqlite3.connect(path) as conn:
                tables = [
                    r[0]
                    for r in conn.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                    )
                ]
                for table in tables:
                    for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY 1'):
                        digest.update(repr(row).encode())
        return digest.hexdigest()


def records_body(X: np.ndarray) -> dict:
    """A sensor's step-2 message to the analyst for the records ``X``."""
    d = X.shape[1]
    return {
        "perturbed": X.tolist(),
        "divisors": [1.0] * d,
        "noise_scale": [1.0] * d,
        "epsilon": 1.0,
    }


def start_servers(tmp: Path) -> Iterator[dict[str, Server]]:
    """The five servers with a little stored data each (stopped when the generator ends)."""
    started: list[ThreadedServer] = []
    out: dict[str, Server] = {}

    def run(name: str, app: Any, tokens: tuple[str, ...], *files: str) -> str:
        srv = ThreadedServer(app).start()
        started.append(srv)
        out[name] = Server(name, srv.url, tokens, tuple(tmp / f for f in files))
        return srv.url

    rng = Randomness(0)
    sensors = TokenRegistry([("s1", SENSOR)], {"analyst": ANALYST})
    app = create_correction_app(tmp / "cs.sqlite", sensors, outlier_layer_width=0.5)
    cs = run("correction", app, (SENSOR, ANALYST), "cs.sqlite")
    app = create_analyst_app(
        tmp / "analyst.sqlite",
        TokenRegistry([("s1", SENSOR)]),
        correction_url=cs,
        correction_token=ANALYST,
        detector=DBSCANDetector(0.5, 5),
        retries=0,
    )
    analyst = run("analyst", app, (SENSOR,), "analyst.sqlite")
    problem = problem_from_dataset(make_search_mixture(n=60, threshold_ratio=1.0, rng=3))
    held = {"values": problem.values, "t_low": problem.t_low, "t_high": problem.t_high}
    querier = TokenRegistry([("s1", QUERIER)])
    app = create_oracle_app(
        tmp / "oracle.sqlite", querier, **held, epsilon=1.0, budget=100.0, rng=1
    )
    run("oracle", app, (QUERIER,), "oracle.sqlite")
    config = {"n": 5, "w": 4, "alpha": 0.2, "rng": 0, "training": AANNTraining(epochs=2)}
    app = create_rmp_app(tmp / "rmp.sqlite", [], operator_token=OPERATOR, **config)
    rmp = run("rmp", app, (OPERATOR, PARTICIPANT), "rmp.sqlite")
    stores = {"db": tmp / "curator.sqlite", "ledger": tmp / "ledger.sqlite"}
    querier = TokenRegistry([("q1", QUERIER)])
    app = create_curator_app(
        rng.uniform(size=(40, 2)),
        SPMechanism(5, 0.1, 0.1),
        **stores,
        tokens=querier,
        budget=50.0,
        rng=7,
    )
    curator = run("curator", app, (QUERIER,), "curator.sqlite", "ledger.sqlite")
    # a little stored data, so that "unchanged" means something
    with httpx.Client(timeout=30) as http:
        digest = hashlib.sha256(PARTICIPANT.encode()).hexdigest()
        assert (
            http.post(
                rmp + "/v1/participants", json={"name": "p1", "token_sha256": digest}
            ).status_code
            == 201
        )
        assert (
            http.post(
                curator + "/v1/ask", json={"ids": [1, 2]}, headers=out["curator"].headers()
            ).status_code
            == 200
        )
        assert (
            http.put(
                analyst + "/v1/windows/1/records",
                headers=out["analyst"].headers(),
                json=records_body(rng.uniform(size=(20, 2))),
            ).status_code
            == 201
        )
    try:
        yield out
    finally:
        for srv in started:
            srv.request_stop()
        for srv in started:
            srv.stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    yield from start_servers(tmp_path_factory.mktemp("servers"))


def body_endpoints(url: str) -> list[tuple[str, str, dict]]:
    """(method, path, JSON Schema of the body) of every endpoint of a server that declares a
    request body in its OpenAPI document, path parameters filled in (1, or ``s1``)."""
    doc = httpx.get(url + "/v1/openapi.json").json()
    out = []
    for path, ops in doc["paths"].items():
        concrete = path.replace("{sensor}", "s1")
        for key in ("window", "seq", "job", "ref"):
            concrete = concrete.replace("{" + key + "}", "1")
        for method, op in ops.items():
            if method in ("post", "put") and "requestBody" in op:  # (close takes no body)
                body = op["requestBody"]["content"]["application/json"]["schema"]
                out.append((method.upper(), concrete, body))
    return out


def assert_error(resp: httpx.Response, *statuses: int) -> None:
    assert resp.status_code in statuses, (resp.status_code, resp.text[:300])
    body = resp.json()
    assert set(body) == {"error", "detail"} and body["detail"], body


def test_parse_json_limits_depth_and_size_before_parsing() -> None:
    ok = b'{"a": [[1, 2]], "s": "' + b"[" * 100 + b'"}'  # brackets in a string do not count
    assert parse_json(ok)["a"] == [[1, 2]]
    for raw, limit, words in [
        (b"[" * 200_000 + b"]" * 200_000, 10**6, "200000 deep"),
        (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), 10**6, "at most 32"),
        (b'{"a": "' + b"x" * 2000 + b'"}', 2000, "2009 bytes"),
    ]:
        with pytest.raises(ServiceError, match=words) as info:
            parse_json(raw, max_bytes=limit)
        assert info.value.status_code == 413


@pytest.mark.parametrize("name", ["analyst", "correction", "oracle", "rmp", "curator"])
def test_deeply_nested_json_is_a_4xx_on_every_endpoint(servers, name) -> None:
    srv = servers[name]
    before = srv.snapshot()
    deep = b"[" * 200_000 + b"]" * 200_000
    endpoints = body_endpoints(srv.url)
    assert len(endpoints) == BODIES[name]  # every endpoint that reads a body declares it
    with httpx.Client(timeout=30) as http:
        for (method, path, _), k in itertools.product(endpoints, range(len(srv.tokens))):
            resp = http.request(method, srv.url + path, content=deep, headers=srv.headers(k))
            assert_error(resp, 403, 413)
        assert http.get(srv.url + "/v1/health").status_code == 200  # still serving
    assert srv.snapshot() == before


def test_huge_ids_are_404_or_422_on_the_rmp_server(servers) -> None:
    srv = servers["rmp"]
    huge = "999999999999999999999999999999"
    with httpx.Client(timeout=30, headers=srv.headers()) as http:
        for path in (
            f"/v1/models/{huge}",
            f"/v1/models/{huge}/npz",
            f"/v1/models/-{huge}",
            f"/v1/models/{2**62 + 1}",
            "/v1/models/1e9",
            f"/v1/jobs/{huge}",
        ):
            assert_error(http.get(srv.url + path), 404, 422)


@pytest.mark.parametrize(
    "name", ["alice\n", "alice\r\n", " alice", "a" * 65, "-a", "a/b", "ålice", "", 7, None]
)
def test_one_name_rule_refuses_odd_names(servers, name) -> None:
    srv = servers["rmp"]
    before = srv.snapshot()
    body = {"name": name} if name is not None else {"name": None, "x": 1}
    resp = httpx.post(srv.url + "/v1/participants", json=body, timeout=30)
    assert_error(resp, 422)
    assert srv.snapshot() == before


def test_correction_refuses_an_odd_sensor_name_in_the_path(servers) -> None:
    srv = servers["correction"]
    resp = httpx.post(
        srv.url + "/v1/sensors/s1%0A/windows/1/layers",
        json={},
        headers={"authorization": f"Bearer {ANALYST}"},
        timeout=30,
    )
    assert_error(resp, 422)


def test_window_numbers_beyond_the_range_are_422(servers) -> None:
    srv = servers["analyst"]
    resp = httpx.put(
        srv.url + f"/v1/windows/{2**70}/records",
        headers=srv.headers(),
        json=records_body(np.zeros((3, 2))),
        timeout=30,
    )
    assert_error(resp, 422)


def test_registration_is_safe_to_retry(servers) -> None:
    from privad.services.rmp_client import RMPClient

    url = servers["rmp"].url
    digest = hashlib.sha256(b"a-participant-secret-0123456789").hexdigest()
    with httpx.Client(timeout=30) as http:
        first = http.post(url + "/v1/participants", json={"name": "p9", "token_sha256": digest})
        again = http.post(url + "/v1/participants", json={"name": "p9", "token_sha256": digest})
        assert (first.status_code, again.status_code) == (201, 200)
        assert first.json()["participant"] == again.json()["participant"] == "p9"
        assert "token" not in first.json()  # the client made it; the server has its digest
        unnamed = http.post(url + "/v1/participants", json={"token_sha256": digest})
        assert (unnamed.status_code, unnamed.json()["participant"]) == (200, "p9")
        other = hashlib.sha256(b"another-secret-0123456789abcdef").hexdigest()
        assert_error(
            http.post(url + "/v1/participants", json={"name": "p9", "token_sha256": other}), 409
        )
        assert_error(
            http.post(url + "/v1/participants", json={"name": "p10", "token_sha256": digest}), 409
        )
        operator = hashlib.sha256(OPERATOR.encode()).hexdigest()
        assert_error(http.post(url + "/v1/participants", json={"token_sha256": operator}), 409)
        for bad in ("ABC", digest.upper(), 7, digest + "0"):
            assert_error(http.post(url + "/v1/participants", json={"token_sha256": bad}), 422)
    with RMPClient(url) as client:  # the client's own secret: a repeat gives the same answer
        who, secret = client.register("p11")
        assert client.register("p11", secret=secret) == (who, secret) == ("p11", secret)
        assert client.batches()["participant"] == "p11"  # the secret works as the token


# --------------------------------------------------------------------------------------------
# Property-based fuzzing of every endpoint, driven by its OpenAPI document
# --------------------------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)  # any JSON value, NaN and ±Infinity included (json.dumps writes them; servers refuse them)


_SCALARS = {
    "number": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10, 10),
    "integer": st.integers(-3, 10) | st.integers(),
    "string": st.text(max_size=70),
    "boolean": st.booleans(),
    "null": st.none(),
}


def from_schema(schema: dict) -> st.SearchStrategy:
    """Values of a JSON Schema in the subset the servers declare (object, array and scalar
    types, ``required``, ``minItems``; small sizes keep each request cheap)."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    options = []
    for kind in kinds:
        if kind == "object":
            props = {key: from_schema(sub) for key, sub in schema["properties"].items()}
            required = set(schema.get("required", ()))
            options.append(
                st.fixed_dictionaries(
                    {k: v for k, v in props.items() if k in required},
                    optional={k: v for k, v in props.items() if k not in required},
                )
            )
        elif kind == "array":
            options.append(
                st.lists(
                    from_schema(schema["items"]), min_size=schema.get("minItems", 0), max_size=6
                )
            )
        else:
            options.append(_SCALARS[kind])
    return st.one_of(options)


def _body_strategy(schema: dict) -> st.SearchStrategy:
    """Bodies of the declared shape, the same with one field replaced by any JSON value, and
    any JSON value at all."""
    shaped = from_schema(schema)
    props = sorted(schema.get("properties", {}))
    broken = st.tuples(shaped, st.sampled_from(props or ["x"]), _JSON).map(
        lambda t: {**t[0], t[1]: t[2]} if isinstance(t[0], dict) else t[0]
    )
    return st.one_of(shaped, broken, _JSON)


def fuzz(
    http: httpx.Client,
    srv: Server,
    method: str,
    path: str,
    k: int,
    schema: dict,
    seen: dict[int, int],
) -> None:
    """Send Hypothesis-drawn bodies to one endpoint with token ``k``: never a 5xx, and a
    refused request leaves every stored row as it was."""

    @settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(body=_body_strategy(schema))
    def check(body) -> None:
        before = srv.snapshot()
        resp = http.request(
            method,
            srv.url + path,
            content=json.dumps(body).encode(),
            headers={**srv.headers(k), "content-type": "application/json"},
        )
        seen[resp.status_code] = seen.get(resp.status_code, 0) + 1
        assert resp.status_code < 500, (method, path, body, resp.text[:300])
        if resp.status_code >= 400:
            assert_error(resp, resp.status_code)
            assert srv.snapshot() == before, (method, path, body, resp.status_code)

    check()


@pytest.mark.parametrize("name", ["analyst", "correction", "oracle", "rmp", "curator"])
def test_fuzzing_every_endpoint_gives_no_5xx_and_refusals_change_nothing(servers, name) -> None:
    srv = servers[name]
    endpoints = body_endpoints(srv.url)
    # training first: while no batch is stored it is refused after its body is checked, so
    # no training thread writes to the database behind the test's back
    endpoints.sort(key=lambda e: not e[1].endswith("/train"))
    seen: dict[int, int] = {}
    with httpx.Client(timeout=30) as http:
        for (method, path, schema), k in itertools.product(endpoints, range(len(srv.tokens))):
            fuzz(http, srv, method, path, k, schema, seen)
    assert any(400 <= code < 500 for code in seen), seen


HUGE_LITERALS = ("1" + "0" * 309, "-" + "9" * 400, "7" * 4300, "3" * 5000)
"""Integer literals beyond a float's range (1.8e308 has 309 digits), up to and past Python's
4,300-digit limit on converting a string to an int."""


def minimal_instance(schema: dict, keep: tuple[str, ...] = ()) -> object:
    """The smallest value of ``schema`` (required fields only, one item per array, numbers
    0.5), plus the optional field on the path ``keep`` (a path of keys, ``0`` for an item)."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    kind = next(k for k in kinds if k != "null")
    if kind == "object":
        names = [
            k for k in schema["properties"] if k in schema.get("required", ()) or keep[:1] == (k,)
        ]
        return {
            k: minimal_instance(schema["properties"][k], keep[1:] if keep[:1] == (k,) else ())
            for k in names
        }
    if kind == "array":
        return [minimal_instance(schema["items"], keep[1:])] * max(1, schema.get("minItems", 1))
    return {"number": 0.5, "integer": 1, "string": "x", "boolean": False}[kind]


def number_paths(schema: dict, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of every numeric field (at any depth): a float or an integer."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if {"number", "integer"} & set(kinds):
        yield path
    if "object" in kinds:
        for key, sub in schema["properties"].items():
            yield from number_paths(sub, (*path, key))
    if "array" in kinds:
        yield from number_paths(schema["items"], (*path, "0"))


def with_literal(body: object, path: tuple[str, ...], literal: str) -> bytes:
    """``body`` as JSON with the value at ``path`` written as the raw ``literal``."""
    marker = "__the_literal_under_test__"
    node = body
    for key in path[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = path[-1]
    if isinstance(node, list):
        node[int(last)] = marker
    else:
        node[last] = marker
    return json.dumps(body).replace(json.dumps(marker), literal).encode()


@pytest.mark.parametrize("name", ["analyst", "correction", "oracle", "rmp", "curator"])
def test_huge_integers_and_booleans_in_numeric_fields_are_4xx(servers, name) -> None:
    srv = servers[name]
    before = srv.snapshot()
    sent = 0
    with httpx.Client(timeout=30) as http:
        for method, path, schema in body_endpoints(srv.url):
            for field in number_paths(schema):
                for literal in (*HUGE_LITERALS, "true"):
                    for k in range(len(srv.tokens)):
                        raw = with_literal(minimal_instance(schema, field), field, literal)
                        resp = http.request(
                            method,
                            srv.url + path,
                            content=raw,
                            headers={**srv.headers(k), "content-type": "application/json"},
                        )
                        sent += 1
                        assert 400 <= resp.status_code < 500, (path, field, literal[:12], k)
                        assert_error(resp, resp.status_code)
                        if literal != "true" and resp.status_code != 403:
                            assert "beyond the range" in resp.json()["detail"], resp.text[:300]
        assert http.get(srv.url + "/v1/health").status_code == 200
    assert sent >= 2 * len(HUGE_LITERALS)
    assert srv.snapshot() == before


def test_a_boolean_is_not_a_number_for_the_curator(servers) -> None:
    srv = servers["curator"]
    before = srv.snapshot()
    resp = httpx.post(
        srv.url + "/v1/ask", json={"records": [[True, 0.5]]}, headers=srv.headers(), timeout=30
    )
    assert_error(resp, 422)
    assert "non-numbers (bool)" in resp.json()["detail"]
    assert srv.snapshot() == before
