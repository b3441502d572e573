"""Benchmark: records per second the relaxed-DP analyst accepts from 8 concurrent sensors.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_services.py                 # 8 sensors x 50 x 2000 records
    .venv/bin/python benchmarks/bench_services.py --windows 10 --window 5000
    .venv/bin/python benchmarks/bench_services.py --close         # also detection + correction

Setup, all on 127.0.0.1: the analyst server runs in its own process (uvicorn, one worker,
SQLite in WAL mode with ``synchronous=FULL`` in a temporary folder: every acknowledged
window is on disk), exactly as ``privad serve analyst`` runs it. With ``--close`` a
correction server runs in a second process and every window is also closed (DBSCAN on 𝒯',
the two correction round trips). The sensors are threads of this process; each perturbs
its windows of a sensor ring (:func:`privad.datasets.make_sensor_ring`) with
:class:`privad.relaxed.Sensor` and serialises the JSON bodies *before* the clock starts, so
the measurement is the server's ingest (HTTP + JSON parsing + validation + durable commit),
not the sensors' perturbation.

Measured: wall time from the first upload to the last acknowledgement; records/s and
windows/s accepted; per-request latency (median and 95th percentile); and a check that the
database holds exactly the acknowledged windows. Bounded: ``--windows`` per sensor and
``--max-seconds`` (the sensors stop starting new uploads after it).

This is a benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

from privad.services.clients import SOCKET_OPTIONS

SEED = 20240607
ANALYST_SECRET = "bench-analyst-peer-secret-0123456789"

SERVER = r"""
import sys, json
from privad.relaxed import DBSCANDetector
from privad.services.app import run_service
from privad.services.auth import TokenRegistry
role, db, tokens_json, peer_url, w_o, peer = sys.argv[1:7]
tokens = [tuple(t) for t in json.loads(tokens_json)]
if role == "analyst":
    from privad.services.analyst import create_analyst_app
    app = create_analyst_app(db, TokenRegistry(tokens), correction_url=peer_url,
                             correction_token=peer, detector=DBSCANDetector(0.63, 10))
else:
    from privad.services.correction import create_correction_app
    app = create_correction_app(db, TokenRegistry(tokens, {"analyst": peer}),
                                outlier_layer_width=float(w_o))
run_service(app, name=role, host="127.0.0.1", port=0, announce=lambda s: print(s, flush=True))
"""


def start_server(
    role: str, db: Path, tokens: list[tuple[str, str]], peer_url: str = "", w_o: float = 0.8
) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SERVER,
            role,
            str(db),
            json.dumps(tokens),
            peer_url or "http://x",
            repr(w_o),
            ANALYST_SECRET,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if " listening on " not in line:
        proc.kill()
        raise RuntimeError(f"{role} did not start: {line!r}")
    url = line.split()[-1]
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url + "/v1/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{role} not healthy")
        time.sleep(0.05)


def prepare(
    n_sensors: int, windows: int, size: int, epsilon: float
) -> list[list[tuple[bytes, bytes]]]:
    """Per sensor and window: the JSON bodies for A and CS (perturbed before the clock)."""
    from privad.datasets import make_sensor_ring
    from privad.relaxed import Sensor, relaxed_sensitivity

    history = make_sensor_ring(size, separation=120, rng=SEED).X
    rs = relaxed_sensitivity(history, 10)
    out = []
    for i in range(n_sensors):
        data = make_sensor_ring(windows * size, separation=120, rng=SEED + 1 + i).X
        sensor = Sensor(epsilon, rs, rng=SEED + 100 + i)
        bodies = []
        for w in range(windows):
            to_a, to_cs = sensor.perturb(data[w * size : (w + 1) * size])
            bodies.append(
                (
                    json.dumps(to_a.to_dict(), allow_nan=False).encode(),
                    json.dumps(to_cs.to_dict(), allow_nan=False).encode(),
                )
            )
        out.append(bodies)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sensors", type=int, default=8)
    ap.add_argument("--windows", type=int, default=50, help="windows per sensor")
    ap.add_argument("--window", type=int, default=2000, help="records per window")
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument(
        "--close",
        action="store_true",
        help="also close every window (detection + correction with a CS process)",
    )
    args = ap.parse_args()
    if not (1 <= args.sensors <= 64 and 1 <= args.windows <= 1000 and 1 <= args.window <= 200_000):
        ap.error("out of bounds: 1-64 sensors, 1-1000 windows, 1-200000 records per window")

    secrets = [(f"s{i}", f"bench-sensor-{i}-secret-0123456789") for i in range(args.sensors)]
    t0 = time.perf_counter()
    bodies = prepare(args.sensors, args.windows, args.window, 1.0)
    prep_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="privad-bench-") as tmp:
        procs = []
        cs_url = ""
        if args.close:
            cs_proc, cs_url = start_server("correction", Path(tmp) / "cs.sqlite", secrets)
            procs.append(cs_proc)
        a_proc, a_url = start_server("analyst", Path(tmp) / "analyst.sqlite", secrets, cs_url)
        procs.append(a_proc)
        try:
            latencies: list[float] = []
            accepted = [0] * args.sensors
            accepted_bytes = [0] * args.sensors
            errors: list[str] = []
            lock = threading.Lock()
            barrier = threading.Barrier(args.sensors + 1)
            deadline = [0.0]

            def sensor(i: int) -> None:
                name, secret = secrets[i]
                transport = httpx.HTTPTransport(socket_options=SOCKET_OPTIONS)
                with httpx.Client(
                    base_url=a_url,
                    timeout=120,
                    transport=transport,
                    headers={
                        "authorization": f"Bearer {secret}",
                        "content-type": "application/json",
                    },
                ) as client:
                    cs_client = httpx.Client(
                        base_url=cs_url or a_url,
                        timeout=120,
                        headers=client.headers,
                        transport=httpx.HTTPTransport(socket_options=SOCKET_OPTIONS),
                    )
                    barrier.wait()
                    for w, (body, diff) in enumerate(bodies[i]):
                        if time.perf_counter() > deadline[0]:
                            break
                        t = time.perf_counter()
                        if args.close:  # the sensor's order: d_diff to CS, 𝒯' to A, close
                            cs_client.put(
                                f"/v1/windows/{w}/differences", content=diff
                            ).raise_for_status()
                        r = client.put(f"/v1/windows/{w}/records", content=body)
                        if args.close and r.status_code == 201:
                            r2 = client.post(f"/v1/windows/{w}/close", content=b"{}")
                            if r2.status_code != 200:
                                errors.append(f"{name} close {w}: {r2.status_code} {r2.text}")
                        dt = time.perf_counter() - t
                        with lock:
                            if r.status_code == 201:
                                accepted[i] += 1
                                accepted_bytes[i] += len(body)
                                latencies.append(dt)
                            else:
                                errors.append(f"{name} window {w}: {r.status_code} {r.text}")
                    cs_client.close()

            threads = [threading.Thread(target=sensor, args=(i,)) for i in range(args.sensors)]
            for t in threads:
                t.start()
            deadline[0] = time.perf_counter() + args.max_seconds
            barrier.wait()
            start = time.perf_counter()
            for t in threads:
                t.join(args.max_seconds + 300)
            wall = time.perf_counter() - start
        finally:
            for p in procs:
                p.terminate()
                p.wait(30)
        with sqlite3.connect(Path(tmp) / "analyst.sqlite") as conn:
            stored_windows, stored_records = conn.execute(
                "SELECT count(*), coalesce(sum(n), 0) FROM windows"
            ).fetchone()

    n_windows = sum(accepted)
    n_records = n_windows * args.window
    lat = np.array(latencies) if latencies else np.array([np.nan])
    result = {
        "benchmark": (
            "analyst ingest"
            + (" + close" if args.close else "")
            + " over loopback, durable SQLite (WAL, synchronous=FULL)"
        ),
        "sensors": args.sensors,
        "window_records": args.window,
        "windows_accepted": n_windows,
        "records_accepted": n_records,
        "stored_windows": stored_windows,
        "stored_records": stored_records,
        "close": args.close,
        "wall_s": round(wall, 3),
        "records_per_s": round(n_records / wall, 1),
        "windows_per_s": round(n_windows / wall, 2),
        "json_mb_per_s": round(sum(accepted_bytes) / wall / 1e6, 2),
        "latency_median_ms": round(float(np.median(lat)) * 1e3, 1),
        "latency_p95_ms": round(float(np.percentile(lat, 95)) * 1e3, 1),
        "prepare_s": round(prep_s, 2),
        "errors": errors[:5],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    print(json.dumps(result, indent=1))
    if errors or stored_windows != n_windows:
        sys.exit(1)


if __name__ == "__main__":
    main()
