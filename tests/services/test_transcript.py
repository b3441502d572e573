"""Information flow over the network (section 6.2): record every message each server
receives and check that CS never gets 𝒯 or 𝒯' and A never gets the noise or d_diff."""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np

from privad.noise import Randomness
from privad.relaxed import Sensor
from privad.services.clients import AnalystClient, CorrectionClient
from privad.services.sensor_client import SensorUploader

SENSOR_TYPES = {"SensorToAnalyst", "SensorToCorrection"}


class Log:
    """Thread-safe transcript: (server, kind, route, parsed body)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, str, Any]] = []
        self._lock = threading.Lock()

    def recorder(self, server: str):  # type: ignore[no-untyped-def]
        def record(kind: str, route: str, body: bytes) -> None:
            parsed = json.loads(body) if body else None
            with self._lock:
                self.entries.append((server, kind, route, parsed))

        return record

    def of(self, server: str) -> list[tuple[str, str, Any]]:
        return [(k, r, b) for s, k, r, b in self.entries if s == server]


class CapturingSensor(Sensor):
    """A sensor that keeps what it sent (and the noise it added) for the checks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def perturb(self, data: Any):  # type: ignore[no-untyped-def]
        to_a, to_cs = super().perturb(data)
        T = self.scale(data)
        self.sent.append(
            (T, np.asarray(to_a.perturbed), to_a.perturbed - T, np.asarray(to_cs.d_diff))
        )
        return to_a, to_cs


def _floats(obj: Any) -> set[float]:
    out: set[float] = set()
    if isinstance(obj, float):
        out.add(obj)
    elif isinstance(obj, list):
        for x in obj:
            out |= _floats(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            out |= _floats(x)
    return out


def _keys(obj: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(obj, dict):
        out |= set(obj)
        for v in obj.values():
            out |= _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _keys(v)
    return out


def _has_matrix(obj: Any) -> bool:
    if isinstance(obj, list):
        return any(isinstance(x, list) for x in obj) or any(_has_matrix(x) for x in obj)
    if isinstance(obj, dict):
        return any(_has_matrix(v) for v in obj.values())
    return False


def test_correction_server_never_sees_records_and_analyst_never_sees_noise(
    servers, ring, secrets
) -> None:
    log = Log()
    analyst, cs = servers.pair(
        cs_recorder=log.recorder("correction"), analyst_recorder=log.recorder("analyst")
    )
    sensor = CapturingSensor(0.5, ring.rs, rng=Randomness(11))
    up = SensorUploader(
        sensor, AnalystClient(analyst.url, secrets["s0"]), CorrectionClient(cs.url, secrets["s0"])
    )
    reports = up.send([(0, ring.window(0)), (1, ring.window(1)[:1200])])
    assert [r.n for r in reports] == [2000, 1200]
    # the sensor also reads its result
    assert up.analyst.outliers(1)["outliers"] == reports[1].outliers.tolist()

    T = np.concatenate([s[0].ravel() for s in sensor.sent])
    T_raw = np.concatenate([ring.window(0).ravel(), ring.window(1)[:1200].ravel()])
    T_prime = np.concatenate([s[1].ravel() for s in sensor.sent])
    noise = np.concatenate([s[2].ravel() for s in sensor.sent])
    d_diff = np.concatenate([s[3] for s in sensor.sent])
    secret_of_cs = set(T.tolist()) | set(T_raw.tolist()) | set(T_prime.tolist())
    secret_of_a = set(noise.tolist()) | set(d_diff.tolist()) | set(T.tolist()) | set(T_raw.tolist())

    # --- correction server: only d_diff with indices and index sets, never 𝒯 or 𝒯'
    cs_log = log.of("correction")
    routes = sorted({r.split(" ")[0] + " " + r.split("/")[-1] for _, r, _ in cs_log})
    assert routes == ["POST layers", "POST presumed-outliers", "PUT differences"]
    types = {b.get("type") for _, _, b in cs_log}
    assert types == {"SensorToCorrection", "AnalystToCorrection", "AnalystToCorrection2"}
    for kind, route, body in cs_log:
        assert kind == "request"
        assert not _has_matrix(body), route
        assert not _keys(body) & {"perturbed", "divisors", "noise_scale", "epsilon"}, route
        assert not _floats(body) & secret_of_cs, route
    n_diff = sum(len(b["d_diff"]) for _, r, b in cs_log if r.endswith("/differences"))
    assert n_diff == 3200

    # --- analyst: 𝒯' from the sensor; d_TP, w_O and the result from CS; never noise/d_diff
    a_log = log.of("analyst")
    received = [(k, r, b) for k, r, b in a_log]
    types = {b.get("type") for _, _, b in received if isinstance(b, dict) and b.get("type")}
    assert types == {"SensorToAnalyst", "CorrectionToAnalyst", "CorrectionToAnalyst2"}
    d_tps = set()
    for _kind, route, body in received:
        assert not _keys(body) & {"d_diff", "noise", "indices", "i_l2", "i_l3"}, route
        if isinstance(body, dict) and body.get("type") == "CorrectionToAnalyst":
            d_tps.add(body["d_tp"])
            assert set(body) == {"type", "d_tp", "w_o"}
        leaked = _floats(body) & secret_of_a
        # the single value d_TP is a d_diff value the analyst may learn (section 6.2)
        assert leaked <= d_tps, (route, sorted(leaked)[:3])
    uploaded = [b for k, r, b in received if r.endswith("/records")]
    assert np.array_equal(np.asarray(uploaded[0]["perturbed"]).ravel(), sensor.sent[0][1].ravel())
    assert len(d_tps) == 2
