"""Benchmark: exact ball counts B_x(i, r) with privad.geometry against SciPy's cKDTree.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_ball_counts.py               # full run (~5 minutes)
    .venv/bin/python benchmarks/bench_ball_counts.py --quick       # 20k and 100k only
    .venv/bin/python benchmarks/bench_ball_counts.py --sklearn     # also scikit-learn's KDTree
    .venv/bin/python benchmarks/bench_ball_counts.py --sizes 284807 --medians 10,1000

Data: :func:`privad.datasets.make_fraud_standin` (284,807 x 6, correlated Student-t(3),
the Credit Fraud stand-in), falling back to a local generator drawn through
:class:`privad.noise.Randomness` if the datasets package is missing. For each size n, r is
chosen (bisection on the counts of a fixed sample of records) so that the median ball holds
about 1000 records (``--medians``: other sizes, e.g. 10). "Future queries" are 20% of n
drawn uniformly from the data's bounding box (the reading of NOTES.md); with Student-t
tails that box is mostly empty, so a second set is drawn from the box between the 1% and
99% quantiles of each feature.

Every measurement runs in a fresh subprocess, which repeats it ``--repeats`` times and reports
the median wall time (speed-ups are ratios of medians) and the process's peak resident
memory (``resource.getrusage`` maxrss, which, unlike tracemalloc, sees Numba's and SciPy's
allocations; it includes the interpreter and imported libraries). Counts of every method
are compared with cKDTree's. First-call compile time is measured in a subprocess with an
empty Numba cache directory.

This is a benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SEED = 20240607
MEDIAN_TARGET = 1000
BETA_SHARE = 0.005  # beta / n close to Table 1 of the paper; cap = beta + 1 identifies


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def make_data(n: int, d: int = 6) -> np.ndarray:
    """The Credit Fraud stand-in (heavy-tailed, correlated), deterministic in SEED."""
    try:
        from privad.datasets import make_fraud_standin
    except ImportError:
        from privad.noise import Randomness

        rng = Randomness(SEED)
        lags = np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
        chol = np.linalg.cholesky(0.5**lags)
        return np.asarray(rng.standard_t(3.0, (n, d))) @ chol.T
    return np.asarray(make_fraud_standin(n, d, rng=SEED).X, dtype=np.float64)


def uniform_queries(X: np.ndarray, m: int, q: float = 0.0) -> np.ndarray:
    """m points uniform over the box between the q- and (1-q)-quantiles of each feature."""
    from privad.noise import Randomness

    rng = Randomness(SEED + 1)
    lo, hi = np.quantile(X, q, axis=0), np.quantile(X, 1.0 - q, axis=0)
    return np.asarray(rng.uniform(lo, hi, (m, X.shape[1])))


def radius_for_median(X: np.ndarray, target: int = MEDIAN_TARGET) -> float:
    """r with median ball count ~ target over a fixed sample of 2000 records (bisection)."""
    from privad.geometry import ball_counts

    sample = X[np.linspace(0, X.shape[0] - 1, 2000).astype(np.int64)]
    lo, hi = 0.0, float(np.max(X.max(axis=0) - X.min(axis=0)))
    for _ in range(30):
        r = 0.5 * (lo + hi)
        med = np.median(ball_counts(X, r, queries=sample))
        lo, hi = (r, hi) if med < target else (lo, r)
    return hi


# --------------------------------------------------------------------------------------------
# worker: one measurement in a fresh process
# --------------------------------------------------------------------------------------------


def _maxrss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def worker(args: argparse.Namespace) -> None:
    X = np.load(args.data)
    Q = np.load(args.queries) if args.queries else None
    r = args.r
    cap = args.cap
    rss_loaded = _maxrss_mb()
    if args.method.startswith("privad"):
        from privad.geometry import ball_counts

        # Load the compiled kernels the timed calls use (the parallel ones need at least
        # PARALLEL_MIN_POINTS = 8,192 points; below 16 M pairs "auto" would pick NumPy), so
        # the times are of warm calls, as cKDTree's are; the first call is bench_first_run's.
        warm = slice(0, 10_000)
        ball_counts(X[warm], r, queries=None if Q is None else Q[warm], cap=cap, engine="numba")

        def run():
            return ball_counts(X, r, queries=Q, cap=cap)

    elif args.method == "ckdtree":
        from scipy.spatial import cKDTree

        def run():
            tree = cKDTree(X)
            return tree.query_ball_point(X if Q is None else Q, r, return_length=True, workers=-1)

    elif args.method == "sklearn":
        from sklearn.neighbors import KDTree

        def run():
            return KDTree(X).query_radius(X if Q is None else Q, r, count_only=True)

    else:
        raise SystemExit(f"unknown method {args.method}")
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        counts = run()
        times.append(time.perf_counter() - t0)
    np.save(args.out, np.asarray(counts, dtype=np.int64))
    print(json.dumps({"times": times, "rss_mb": _maxrss_mb(), "rss_loaded_mb": rss_loaded}))


def compile_worker() -> None:
    """First calls with an empty Numba cache (set by the parent), then warm calls."""
    t0 = time.perf_counter()
    from privad.geometry import ball_counts, kernels, kth_neighbour_distance

    t_import = time.perf_counter() - t0
    X = make_data(3000)
    Q = X[:500] + 0.1
    calls = {
        "self": lambda: ball_counts(X, 0.5),
        "self+cap": lambda: ball_counts(X, 0.5, cap=10),
        "queries": lambda: ball_counts(X, 0.5, queries=Q),
        "kth": lambda: kth_neighbour_distance(X, 10),
    }
    out = {"import_s": t_import}
    for kind, min_points in [("serial", kernels.PARALLEL_MIN_POINTS), ("parallel", 0)]:
        kernels.PARALLEL_MIN_POINTS = min_points  # 0: the multi-threaded kernels
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            call()
            out[f"{name} ({kind})"] = {"first_s": first, "warm_s": time.perf_counter() - t0}
    print(json.dumps(out))


# --------------------------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------------------------


def measure(
    tmp: Path,
    method: str,
    data: Path,
    r: float,
    repeats: int,
    *,
    queries: Path | None = None,
    cap: int | None = None,
) -> dict:
    out = tmp / f"counts-{method}-{time.monotonic_ns()}.npy"
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--method",
        method,
        "--data",
        str(data),
        "--r",
        repr(r),
        "--repeats",
        str(repeats),
        "--out",
        str(out),
    ]
    if queries is not None:
        cmd += ["--queries", str(queries)]
    if cap is not None:
        cmd += ["--cap", str(cap)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    info = json.loads(res.stdout.strip().splitlines()[-1])
    info["counts"] = np.load(out)
    info["best"] = min(info["times"])
    info["median"] = float(np.median(info["times"]))
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only n = 20k and 100k")
    ap.add_argument("--sklearn", action="store_true", help="also time scikit-learn KDTree")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", default=None, help="comma-separated n (default 20k,100k,284,807)")
    ap.add_argument(
        "--medians",
        default=str(MEDIAN_TARGET),
        help="median ball sizes to choose r for, e.g. 10,1000",
    )
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time probe")
    # worker mode
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compile-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--method", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--queries", help=argparse.SUPPRESS)
    ap.add_argument("--r", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--cap", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.compile_worker:
        return compile_worker()

    import numba

    print(
        f"machine: {os.cpu_count()} logical CPUs, numba {numba.__version__} "
        f"({numba.get_num_threads()} threads), load average at start "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; median of {args.repeats}"
    )
    sizes = [20_000, 100_000] if args.quick else [20_000, 100_000, 284_807]
    if args.sizes:
        sizes = [int(v) for v in args.sizes.split(",")]
    medians = [int(v) for v in args.medians.split(",")]
    full = make_data(max(sizes))
    rows = []
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        for n in sizes:
            X = full[:n] if n < full.shape[0] else full
            data = tmp / f"X{n}.npy"
            np.save(data, X)
            beta = int(round(BETA_SHARE * n))
            for target in medians:
                r = radius_for_median(X, target)
                ref = measure(tmp, "ckdtree", data, r, args.repeats)
                runs = [("privad (exact)", measure(tmp, "privad", data, r, args.repeats))]
                capped = measure(tmp, "privad", data, r, args.repeats, cap=beta + 1)
                runs.append((f"privad cap=beta+1={beta + 1}", capped))
                if args.sklearn:
                    runs.append(("sklearn KDTree", measure(tmp, "sklearn", data, r, 1)))
                truth = ref["counts"]
                label = f"self n={n:,}"
                rows.append((label, r, int(np.median(truth)), "cKDTree", ref, 0, ""))
                for name, res in runs:
                    want = np.minimum(truth, beta + 1) if "cap" in name else truth
                    bad = int(np.count_nonzero(res["counts"] != want))
                    rows.append(
                        (
                            label,
                            r,
                            int(np.median(truth)),
                            name,
                            res,
                            bad,
                            f"{ref['median'] / res['median']:.1f}x",
                        )
                    )
            if n == max(sizes):
                r = radius_for_median(X, MEDIAN_TARGET)
                m = n // 5
                for q, what in [(0.0, "bounding box"), (0.01, "1%-99% box")]:
                    qfile = tmp / f"Q{n}-{q}.npy"
                    np.save(qfile, uniform_queries(X, m, q))
                    refq = measure(tmp, "ckdtree", data, r, args.repeats, queries=qfile)
                    resq = measure(tmp, "privad", data, r, args.repeats, queries=qfile)
                    label = f"{m:,} queries, {what}"
                    med = int(np.median(refq["counts"]))
                    rows.append((label, r, med, "cKDTree", refq, 0, ""))
                    bad = int(np.count_nonzero(resq["counts"] != refq["counts"]))
                    rows.append(
                        (
                            label,
                            r,
                            med,
                            "privad (exact)",
                            resq,
                            bad,
                            f"{refq['median'] / resq['median']:.1f}x",
                        )
                    )

    print()
    print(
        f"{'workload':<30} {'r':>7} {'median B':>8}  {'method':<26} {'median s':>8} "
        f"{'all runs s':<22} {'peak RSS MB':>11} {'speed-up':>8} {'mismatches':>10}"
    )
    for label, r, med, name, res, bad, speed in rows:
        runs = ", ".join(f"{t:.2f}" for t in res["times"])
        print(
            f"{label:<30} {r:7.4f} {med:8d}  {name:<26} {res['median']:8.2f} {runs:<22} "
            f"{res['rss_mb']:11.0f} {speed:>8} {bad:>10d}"
        )
    print(
        "peak RSS includes the interpreter, NumPy/SciPy/Numba and the data "
        f"(about {rows[0][4]['rss_loaded_mb']:.0f} MB before the first call)."
    )

    if not args.no_compile:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            res = subprocess.run(
                [sys.executable, __file__, "--compile-worker"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            info = json.loads(res.stdout.strip().splitlines()[-1])
        total = sum(v["first_s"] for k, v in info.items() if k != "import_s")
        print(
            f"\nfirst calls with an empty Numba cache: {total:.1f} s in all "
            f"(import {info['import_s']:.2f} s); "
            + ", ".join(
                f"{k} {v['first_s']:.1f} s (then {v['warm_s'] * 1000:.0f} ms)"
                for k, v in info.items()
                if k != "import_s"
            )
        )


if __name__ == "__main__":
    main()
