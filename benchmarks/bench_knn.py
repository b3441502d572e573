"""Benchmark: exact k-th neighbour distances (``privad sp params``) against kd-tree libraries.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_knn.py                          # 284,807 x 6, k = 1,425
    .venv/bin/python benchmarks/bench_knn.py --n 100000 --k 501 --repeats 3

Data: the Credit Fraud stand-in of ``bench_ball_counts.py`` (284,807 x 6, correlated
Student-t(3)); k = 0.005 n, the (β + 1) of ``privad sp params``. Methods, each in a fresh
process (median of ``--repeats`` runs in it, after a warm-up on 10,000 records):

* ``privad``: :func:`privad.geometry.kth_neighbour_distance` (all cores);
* ``cKDTree``: ``scipy.spatial.cKDTree(X).query(X, k, workers=-1)``;
* ``sklearn``: ``sklearn.neighbors.NearestNeighbors(n_neighbors=k, algorithm="kd_tree",
  n_jobs=-1).fit(X).kneighbors(X)``;
* ``pykdtree``: ``pykdtree.kdtree.KDTree(X).query(X, k)`` (OpenMP), if it is installed.

The libraries return all k distances per record; they are asked for 20,000 records at a
time (the same total work; all at once would need 284,807 x 1,425 x 16 bytes = 6.5 GB) and
only the k-th column is kept. Every library's k-th distances are compared with privad's
(they compute distances with their own arithmetic, so the last bit may differ: the report
gives the largest relative difference; privad's exactness is what the tests check).

A benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ball_counts import make_data  # noqa: E402

CHUNK = 20_000
METHODS = ("privad", "cKDTree", "sklearn", "pykdtree")


def _kth_function(method: str, k: int):  # noqa: ANN202
    if method == "privad":
        from privad.geometry import kth_neighbour_distance

        return lambda X: kth_neighbour_distance(X, k)
    if method == "cKDTree":
        from scipy.spatial import cKDTree

        def ckdtree(X: np.ndarray) -> np.ndarray:
            tree = cKDTree(X)
            return np.concatenate(
                [
                    tree.query(X[s : s + CHUNK], k, workers=-1)[0][:, -1]
                    for s in range(0, X.shape[0], CHUNK)
                ]
            )

        return ckdtree
    if method == "sklearn":
        from sklearn.neighbors import NearestNeighbors

        def sklearn(X: np.ndarray) -> np.ndarray:
            nn = NearestNeighbors(n_neighbors=k, algorithm="kd_tree", n_jobs=-1).fit(X)
            return np.concatenate(
                [nn.kneighbors(X[s : s + CHUNK])[0][:, -1] for s in range(0, X.shape[0], CHUNK)]
            )

        return sklearn
    from pykdtree.kdtree import KDTree  # ImportError: not installed

    def pykdtree(X: np.ndarray) -> np.ndarray:
        tree = KDTree(X)
        return np.concatenate(
            [tree.query(X[s : s + CHUNK], k=k)[0][:, -1] for s in range(0, X.shape[0], CHUNK)]
        )

    return pykdtree


def worker(method: str, data: str, k: int, repeats: int, out: str) -> None:
    X = np.load(data)
    fn = _kth_function(method, k)
    # Warm-up (privad: compiles or loads its kernels) on 10,000 records, above
    # geometry.kernels.PARALLEL_MIN_POINTS, so that the parallel kernel the timed runs use is
    # ready too (a smaller sample only readies the serial one).
    warm = max(10_000, 4 * k)
    fn(X[:warm] if X.shape[0] > warm else X)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        kth = fn(X)
        times.append(time.perf_counter() - t0)
    np.save(out, np.asarray(kth, dtype=np.float64))
    print(json.dumps({"times": times}))


def measure(method: str, data: Path, k: int, repeats: int, tmp: Path) -> dict | None:
    out = tmp / f"kth-{method}.npy"
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        method,
        "--data",
        str(data),
        "--k",
        str(k),
        "--repeats",
        str(repeats),
        "--out",
        str(out),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        if "ModuleNotFoundError" in res.stderr:
            return None
        raise SystemExit(f"{method} failed:\n{res.stderr}")
    info = json.loads(res.stdout.strip().splitlines()[-1])
    info["kth"] = np.load(out)
    info["median"] = statistics.median(info["times"])
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=284_807)
    ap.add_argument("--k", type=int, default=None, help="default: 0.005 n rounded, plus 1")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.data, args.k, args.repeats, args.out)
    k = args.k if args.k is not None else int(round(0.005 * args.n)) + 1
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        data = tmp / "X.npy"
        np.save(data, make_data(args.n))
        results = {}
        for method in args.methods.split(","):
            res = measure(method, data, k, args.repeats, tmp)
            if res is None:
                print(f"{method}: not installed, skipped")
                continue
            results[method] = res
    ours = results["privad"]
    print(f"\nk-th neighbour distances, n = {args.n:,} x 6, k = {k:,}; median of {args.repeats}")
    print(
        f"{'method':<10} {'median s':>9}  {'runs s':<24} {'privad faster':>13} {'max rel diff':>13}"
    )
    for method, res in results.items():
        runs = ", ".join(f"{t:.2f}" for t in res["times"])
        diff = np.max(np.abs(res["kth"] - ours["kth"]) / np.maximum(ours["kth"], 1e-300))
        speed = "" if method == "privad" else f"{res['median'] / ours['median']:.1f}x"
        print(f"{method:<10} {res['median']:9.2f}  {runs:<24} {speed:>13} {diff:13.1e}")


if __name__ == "__main__":
    main()
