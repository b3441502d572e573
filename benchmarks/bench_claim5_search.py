"""Benchmark: Claim 5's upper bound by the box search against the 2r pass (issue 28).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_claim5_search.py --sizes 100000,284807
    .venv/bin/python benchmarks/bench_claim5_search.py --sizes 100000 --dims 2,6,12,20

Data: the Credit Fraud stand-in of ``bench_ball_counts.py`` (correlated Student-t(3)) with
``d`` features, r chosen so that the median ball holds about 1,000 records (as in
``bench_sp_split.py``). For each size this measures, after compiling every kernel:

* ``counts at r``: the self ball counts at r (the work the mechanism cannot avoid), whose
  maximum is the lower bound on m;
* ``2r pass``: the previous upper bound, ``max_t #{s : d(i_s, i_t) <= 2r}``, one full
  self-count pass at ``claim5_radius(r)``;
* the box search of :mod:`privad.geometry.depth` at several efforts (rounds x boxes per
  round; the default is marked), with the tree build: its bound and its time;
* ``claim5_bound``: the whole computation as the release path makes it (counts at r
  given), i.e. the search, the seeds' 2r counts, and the 2r pass only where the search
  does not beat them.

Times are wall seconds and CPU seconds of the process (the machine's load is printed: on
a shared machine compare ratios within one run). A benchmark, never a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ball_counts import make_data, radius_for_median  # noqa: E402

from privad.geometry import ball_counts  # noqa: E402
from privad.geometry.depth import PER_ROUND, ROUNDS, box_counts, depth_bound, root_box  # noqa: E402
from privad.geometry.kdtree import build_tree  # noqa: E402
from privad.geometry.warmup import compile_kernels  # noqa: E402
from privad.sensitive.accounting import claim5_bound, claim5_radius  # noqa: E402

EFFORTS = ((32, 16), (64, 16), (ROUNDS, PER_ROUND), (256, 16))


def timed(fn):
    """(result, wall seconds, CPU seconds) of ``fn()``."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def search(X: np.ndarray, r: float, lower: int, rounds: int, per_round: int) -> int:
    """The box search alone, with its tree build."""
    tree = build_tree(X)
    return depth_bound(
        lambda lo, hi: box_counts(tree, lo, hi, r, "euclidean"),
        root_box(X.min(axis=0), X.max(axis=0), r),
        lower,
        rounds=rounds,
        per_round=per_round,
    )


def run(n: int, d: int) -> None:
    X = make_data(n, d)
    r = radius_for_median(X)
    counts, w, c = timed(lambda: ball_counts(X, r))
    lower = int(counts.max())
    print(f"\nn = {n:,}, d = {d}, r = {r:.4g}: lower bound (max count at r) {lower:,}")
    print(f"  counts at r           {w:7.2f} s wall {c:7.2f} s CPU")
    two_r, w2, c2 = timed(lambda: int(ball_counts(X, claim5_radius(r)).max()))
    print(f"  2r pass               {w2:7.2f} s wall {c2:7.2f} s CPU  bound {two_r:>9,}")
    for rounds, per_round in EFFORTS:
        mark = " (default)" if (rounds, per_round) == (ROUNDS, PER_ROUND) else ""
        u, ws, cs = timed(lambda: search(X, r, lower, rounds, per_round))  # noqa: B023
        print(
            f"  search {rounds:>3} x {per_round:<3}      {ws:7.2f} s wall {cs:7.2f} s CPU  "
            f"bound {u:>9,}  {two_r / u:4.2f}x tighter than 2r, {u / lower:4.2f}x the lower{mark}"
        )
    b, wb, cb = timed(lambda: claim5_bound(X, r, ball_counts_at_r=counts))
    print(
        f"  claim5_bound          {wb:7.2f} s wall {cb:7.2f} s CPU  bound {b.upper:>9,}  "
        f"({wb / w:4.2f}x the counts at r; the 2r pass was {w2 / w:4.2f}x)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="100000,284807")
    p.add_argument("--dims", default="6")
    args = p.parse_args()
    compile_kernels()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for d in (int(s) for s in args.dims.split(",")):
        for n in (int(s) for s in args.sizes.split(",")):
            run(n, d)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
