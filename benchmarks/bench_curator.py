"""Benchmark: the sensitive-privacy curator (``privad serve sp``) under concurrent queriers.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_curator.py                 # Mammography and 284,807 x 6
    .venv/bin/python benchmarks/bench_curator.py --quick         # Mammography only

For each dataset a curator runs on loopback (uvicorn in this process, its own SQLite store and
ledger); 8 querier threads, each with its own token and HTTP client, send requests of
``--batch`` questions for ``--seconds`` seconds: record ids (charged ε per new id) and feature
vectors (records of the data moved by a small offset, charged online by Claim 5). Reported:
answered questions per second, requests per second, p50 and p99 request latency.

Then the online Claim 5 bound alone (:class:`privad.sensitive.curator.OnlineClaim5`): the
time to add one more vector to a querier's set of 10^3, 10^4 and 10^5 vectors (median of
20 additions), against recomputing :func:`privad.sensitive.accounting.claim5_bound` for the
whole set.

This is a benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ball_counts import make_data, radius_for_median  # noqa: E402


def _load(name: str) -> tuple[np.ndarray, int, float]:
    """The data, β and r of a workload."""
    if name == "mammography":
        from privad.datasets import load

        X = load("mammography").X
        return X, 55, 0.2  # Table 1 of the paper
    X = make_data(284_807)
    return X, round(0.005 * X.shape[0]), radius_for_median(X)


def serve(name: str, args: argparse.Namespace) -> dict:
    from privad.noise import Randomness
    from privad.sensitive import SPMechanism
    from privad.services.app import ThreadedServer
    from privad.services.auth import TokenRegistry
    from privad.services.clients import CuratorClient
    from privad.services.curator import create_curator_app

    X, beta, r = _load(name)
    secrets = {f"q{i}": f"querier-{i}-secret-0123456789" for i in range(args.queriers)}
    gen = Randomness(1)
    with tempfile.TemporaryDirectory() as tmp:
        app = create_curator_app(
            X,
            SPMechanism(beta, r, 0.01),
            db=Path(tmp) / "c.sqlite",
            ledger=Path(tmp) / "l.sqlite",
            tokens=TokenRegistry(list(secrets.items())),
            budget=1e9,
            rng=gen,
        )
        latencies: list[float] = []
        answered = [0]
        lock = threading.Lock()
        stop = time.monotonic() + args.seconds

        def querier(i: int, secret: str) -> None:
            rng = np.random.default_rng(i)
            with CuratorClient(srv.url, secret) as client:
                while time.monotonic() < stop:
                    ids = rng.integers(0, X.shape[0], args.batch)
                    t0 = time.perf_counter()
                    if rng.random() < 0.5:
                        client.ask_ids(ids)
                    else:
                        client.ask_records(X[ids] + rng.normal(0, r / 10, (args.batch, X.shape[1])))
                    dt = time.perf_counter() - t0
                    with lock:
                        latencies.append(dt)
                        answered[0] += args.batch

        with ThreadedServer(app) as srv:
            CuratorClient(srv.url, secrets["q0"]).ask_ids([0])  # warm up (Numba, counts)
            t0 = time.monotonic()
            threads = [
                threading.Thread(target=querier, args=(i, s))
                for i, s in enumerate(secrets.values())
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.monotonic() - t0
    lat = np.asarray(latencies)
    return {
        "data": f"{name} {X.shape[0]:,} x {X.shape[1]}",
        "requests": lat.size,
        "questions/s": answered[0] / wall,
        "requests/s": lat.size / wall,
        "p50 ms": 1e3 * float(np.percentile(lat, 50)),
        "p99 ms": 1e3 * float(np.percentile(lat, 99)),
    }


def online_bound() -> list[tuple[int, float, float]]:
    from privad.sensitive.accounting import claim5_bound
    from privad.sensitive.curator import OnlineClaim5

    X = make_data(110_000)
    r = radius_for_median(X[:100_000], 20)
    rows = []
    for n in (1_000, 10_000, 100_000):
        online = OnlineClaim5(r, "euclidean", X.shape[1])
        online.add(X[:n], online.with_new(X[:n])[1])
        times = []
        for j in range(20):
            new = X[n + j : n + j + 1]
            t0 = time.perf_counter()
            _, counts = online.with_new(new)
            times.append(time.perf_counter() - t0)
            online.add(new, counts)
        t0 = time.perf_counter()
        claim5_bound(online.points, r)
        rows.append((n, statistics.median(times), time.perf_counter() - t0))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="Mammography only")
    ap.add_argument("--queriers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=10, help="questions per request")
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    names = ["mammography"] if args.quick else ["mammography", "fraud-standin"]
    print(
        f"{args.queriers} queriers, {args.batch} questions per request (half ids, half "
        f"vectors), {args.seconds:g} s each"
    )
    print(
        f"{'data':<30} {'requests':>8} {'questions/s':>12} {'requests/s':>11} "
        f"{'p50 ms':>8} {'p99 ms':>8}"
    )
    for name in names:
        res = serve(name, args)
        print(
            f"{res['data']:<30} {res['requests']:>8} {res['questions/s']:>12.0f} "
            f"{res['requests/s']:>11.1f} {res['p50 ms']:>8.1f} {res['p99 ms']:>8.1f}"
        )
    print("\nonline Claim 5 bound: one more vector vs the whole set again")
    print(f"{'vectors so far':>14} {'add one (ms)':>13} {'recompute all (ms)':>19}")
    for n, t_add, t_all in online_bound():
        print(f"{n:>14,} {1e3 * t_add:>13.2f} {1e3 * t_all:>19.1f}")


if __name__ == "__main__":
    main()
