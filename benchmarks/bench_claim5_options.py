"""Benchmark: could Claim 5's 2r pass be cut by certificates and stay exact? (issue 28)

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_claim5_options.py --sizes 100000,284807

Claim 5's upper bound is ``M = max_t #{s : d(i_t, i_s) <= 2r}`` (radius ``claim5_radius``),
today one full self-count pass at 2r. An exact shortcut needs a seed (a record whose 2r
count is the maximum or close to it) and, for every other record, a certificate that its
count cannot exceed the seed's; only the records without one would be counted exactly.
On the Credit Fraud stand-in of ``bench_ball_counts.py`` (r for a median ball of about
1,000 records, as in ``bench_release.py``) this measures:

* the two passes: the ball counts at r and the full pass at 2r (the reference);
* the seed: the exact 2r counts of the 8 records with the largest counts at r (one query
  pass), against the true maximum;
* for each certificate, the share of records it does not rule out (bound > seed), i.e.
  that would still need an exact count, and the time it took:

  - ``leaf box``: per query leaf of the kd-tree (512 records), the records in data nodes
    whose boxes are not entirely beyond 2r of the leaf's box (node-level bound);
  - ``record box, leaves L``: the same per record against data leaves of L records;
  - ``axis slabs``: per record, the fewest records within 2r on one feature alone;
  - ``chebyshev box``: per record, the records in the cube of half-side 2r (exact count);
  - ``64 pivots``: per record, ``min_q #{s : d(q, s) <= 2r + d(q, t)}`` over 64 pivots
    (triangle inequality; pair values from the sorted distances of each pivot).

A benchmark, never a test; the certificates here decide nothing that is released (the
triangle-inequality margins are generous because only their pruning power is measured).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ball_counts import make_data, radius_for_median  # noqa: E402

from privad.geometry import ball_counts  # noqa: E402
from privad.geometry.kdtree import build_tree  # noqa: E402
from privad.geometry.kernels import box_bounds  # noqa: E402
from privad.geometry.predicate import EUCLIDEAN, threshold  # noqa: E402
from privad.sensitive.accounting import claim5_radius  # noqa: E402


@njit(parallel=True)
def _walk_bounds(qlo, qhi, items, lo, hi, start, end, left, right, thr):
    """Per item (a row of ``qlo``/``qhi``: a box, or a point as a degenerate box), the
    records in the data nodes whose boxes are not entirely beyond ``thr`` of it."""
    out = np.zeros(items.shape[0], np.int64)
    for t in prange(items.shape[0]):
        a = items[t]
        stack = np.empty(256, np.int64)
        stack[0] = 0
        sp = 1
        u = 0
        while sp > 0:
            sp -= 1
            b = stack[sp]
            mn, mx = box_bounds(qlo, qhi, a, lo, hi, b, EUCLIDEAN)
            if mn > thr:
                continue
            if mx <= thr or left[b] < 0:
                u += end[b] - start[b]
            else:
                stack[sp] = left[b]
                stack[sp + 1] = right[b]
                sp += 2
        out[t] = u
    return out


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _slabs(X: np.ndarray, R: float) -> np.ndarray:
    u = np.full(X.shape[0], X.shape[0])
    for column in X.T:
        s = np.sort(column)
        within = np.searchsorted(s, column + R, "right") - np.searchsorted(s, column - R, "left")
        u = np.minimum(u, within)
    return u


def _pivots(X: np.ndarray, R: float, k: int = 64) -> np.ndarray:
    u = np.full(X.shape[0], X.shape[0])
    for q in X[np.linspace(0, X.shape[0] - 1, k).astype(np.int64)]:
        dist = np.sqrt(((X - q) ** 2).sum(axis=1))
        u = np.minimum(u, np.searchsorted(np.sort(dist), (dist + R) * (1 + 1e-6), "right"))
    return u


def measure(n: int) -> None:
    X = make_data(n)
    r = radius_for_median(X)
    R = claim5_radius(r)
    thr = threshold(R, "euclidean")
    counts, t_r = _timed(lambda: ball_counts(X, r))
    full, t_2r = _timed(lambda: ball_counts(X, R))
    top = np.argsort(-counts, kind="stable")[:8]
    seed_counts, t_seed = _timed(lambda: ball_counts(X, R, queries=X[top]))
    M = int(seed_counts.max())
    print(
        f"n = {n:,}: counts at r {t_r:.2f} s, full pass at 2r {t_2r:.2f} s "
        f"({t_2r / t_r:.2f}x); 2r balls: median {np.median(full) / n:.1%}, max "
        f"{full.max() / n:.1%} of the records; seed {M} in {t_seed:.2f} s "
        f"(the maximum: {M == full.max()}); records above 0.9 M: {np.mean(full > 0.9 * M):.1%}"
    )
    tree = build_tree(X)
    leaves = np.flatnonzero(tree.left < 0)
    size = tree.end[leaves] - tree.start[leaves]
    node = (tree.lo, tree.hi, tree.start, tree.end, tree.left, tree.right, thr)
    _walk_bounds(tree.lo, tree.hi, leaves[:1], *node)  # compile
    rows = []
    u, t = _timed(lambda: _walk_bounds(tree.lo, tree.hi, leaves, *node))
    rows.append(("leaf box", size[u > M].sum() / n, t))
    pts = np.arange(n)
    for leaf in (512, 64):
        small = build_tree(X, leaf)
        data = (small.lo, small.hi, small.start, small.end, small.left, small.right, thr)
        P = small.points
        u, t = _timed(lambda d=data, P=P: _walk_bounds(P, P, pts, *d))
        rows.append((f"record box, leaves {leaf}", np.mean(u > M), t))
    u, t = _timed(lambda: _slabs(X, R))
    rows.append(("axis slabs", np.mean(u > M), t))
    u, t = _timed(lambda: ball_counts(X, R, metric="chebyshev"))
    rows.append(("chebyshev box", np.mean(u > M), t))
    u, t = _timed(lambda: _pivots(X, R))
    rows.append(("64 pivots", np.mean(u > M), t))
    print(f"  {'certificate':<24} {'not ruled out':>13} {'seconds':>8}")
    for name, share, t in rows:
        print(f"  {name:<24} {share:>13.1%} {t:8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,284807")
    args = ap.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for n in (int(s) for s in args.sizes.split(",")):
        measure(n)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
