"""Benchmark: privad.search (DP noisy binary search) against n, and iterations against eq. (26).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_search.py            # n = 1e4 .. 1e7 (~1 minute)
    .venv/bin/python benchmarks/bench_search.py --quick    # n = 1e4 .. 1e6
    .venv/bin/python benchmarks/bench_search.py --runs 10 --json out.json

Data: :func:`privad.datasets.make_search_mixture` (normal mixture, threshold ratio 0.7,
one planted anomaly), ε = 1 per query, the paper's halting rule τ = 1(max f > 0.5) unless
stated. For each n and oracle it reports:

* ``total``: wall seconds of one whole search, best and median of ``--runs`` (the oracle's
  one-off O(n) pass per order, the O(n) draw of the permutation, every query and update,
  the top-|S| set and the dense posterior of the result, O(n));
* ``fixed``: the same with one query only (the O(n) part);
* ``per-iter``: the cost of one iteration (median split, query, Bayes update, halting
  check), timed directly over 200 iterations driven through the same components as the
  loop, after the first query has paid the O(n) work;
* ``T``: the mean number of iterations.

The target of the brief is one search at n = 1e6, ε = 1, ratio 0.7 in under 1 s: the
``target`` line checks it for each oracle.

Iterations against eq. (26): the binarized oracle with Burnashev-Zigangirov's stopping rule
(eq. 25, δ = 0.01) and the bound of eq. (26) (bits; see privad.search.theory), mean over
``--bound-runs`` runs.

Baseline: there is no existing library for this mechanism; the comparison is with Algorithm 1
verbatim (``selection="fresh"``: a new permutation and an O(n) dense update per iteration),
timed over a few iterations, reported as per-iteration seconds and the ratio to ours.

This is a benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np

from privad.datasets import make_search_mixture
from privad.experiments.search_problems import problem_from_dataset
from privad.noise import as_randomness
from privad.search import (
    LogOddsThreshold,
    MaxQueries,
    PosteriorThreshold,
    expected_queries_bound,
    make_oracle,
    search,
)
from privad.search.halting import SearchState
from privad.search.selection import FixedOrderSelection

EPSILON = 1.0
RATIO = 0.7
KINDS = ("laplace", "binarized", "randomized-response")


def _timed_search(oracle, **kwargs):
    t0 = time.perf_counter()
    res = search(oracle, **kwargs)
    _ = res.posterior  # materialise the dense posterior: part of the result
    return time.perf_counter() - t0, res


def per_iteration(oracle, seed: int, iters: int = 200) -> float:
    """Seconds per iteration of the loop's body, after the one-off O(n) work."""
    gen = as_randomness(seed)
    selector = FixedOrderSelection()
    post = selector.start(oracle.n_items, gen, None)
    model = oracle.model
    rule = PosteriorThreshold(0.5)

    def step() -> None:
        rule.fired(SearchState(0, model.epsilon, post))
        group = selector.propose(post, gen)
        a, b = model.log_likelihoods(model.check_answer(oracle.query(group)))
        post.update(group, a, b, None)

    step()  # pays the permutation and the oracle's prefix/suffix maxima
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    return (time.perf_counter() - t0) / iters


def bench_n(n: int, runs: int, seed: int) -> list[dict]:
    problem = problem_from_dataset(make_search_mixture(n=n, threshold_ratio=RATIO, rng=seed))
    rows = []
    for kind in KINDS:
        oracle = problem.oracle(kind, EPSILON, rng=seed + 1)
        gen = as_randomness(seed + 2)
        _timed_search(oracle, halting=MaxQueries(1), rng=gen)  # warm-up (Numba cache load)
        totals, iters, hits = [], [], 0
        for _ in range(runs):
            dt, res = _timed_search(oracle, rng=gen)
            totals.append(dt)
            iters.append(res.n_queries)
            hits += res.contains(problem.anomaly_index)
        fixed = min(_timed_search(oracle, halting=MaxQueries(1), rng=gen)[0] for _ in range(3))
        mean_t = statistics.fmean(iters)
        per_iter = min(per_iteration(oracle, seed + 7 + k) for k in range(3))
        rows.append(
            {
                "n": n,
                "oracle": kind,
                "runs": runs,
                "total_best_s": min(totals),
                "total_median_s": statistics.median(totals),
                "fixed_s": fixed,
                "per_iter_s": per_iter,
                "mean_T": mean_t,
                "successes": hits,
            }
        )
    return rows


def bench_bound(n: int, runs: int, seed: int, delta: float = 0.01) -> dict:
    problem = problem_from_dataset(make_search_mixture(n=n, threshold_ratio=RATIO, rng=seed))
    oracle = problem.oracle("binarized", EPSILON, rng=seed + 3)
    gen = as_randomness(seed + 4)
    counts, hits = [], 0
    for _ in range(runs):
        res = search(oracle, halting=LogOddsThreshold(delta), rng=gen)
        counts.append(res.n_queries)
        hits += res.argmax == problem.anomaly_index
    return {
        "n": n,
        "delta": delta,
        "p_eq24": oracle.model.p,
        "runs": runs,
        "mean_T": statistics.fmean(counts),
        "sd_T": statistics.pstdev(counts),
        "bound_eq26": expected_queries_bound(n, oracle.model.p, delta),
        "argmax_correct": hits,
    }


def bench_fresh(n: int, seed: int, iters: int = 10) -> dict:
    problem = problem_from_dataset(make_search_mixture(n=n, threshold_ratio=RATIO, rng=seed))
    oracle = make_oracle(
        "laplace", problem.values, problem.t_low, problem.t_high, EPSILON, rng=seed + 5
    )
    gen = as_randomness(seed + 6)
    t1 = min(
        _timed_search(oracle, halting=MaxQueries(1), selection="fresh", rng=gen)[0]
        for _ in range(2)
    )
    tk = min(
        _timed_search(oracle, halting=MaxQueries(iters), selection="fresh", rng=gen)[0]
        for _ in range(2)
    )
    return {"n": n, "fresh_per_iter_s": max(tk - t1, 0.0) / (iters - 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n up to 1e6 only")
    parser.add_argument("--runs", type=int, default=5, help="searches per (n, oracle)")
    parser.add_argument("--bound-runs", type=int, default=100, help="runs for eq. (26)")
    parser.add_argument("--seed", type=int, default=20240607)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    sizes = [10**4, 10**5, 10**6] + ([] if args.quick else [10**7])

    print(
        f"privad.search benchmark  python {platform.python_version()}  "
        f"numpy {np.__version__}  eps={EPSILON} ratio={RATIO}  runs={args.runs}"
    )
    print(
        f"{'n':>9} {'oracle':<20} {'T':>7} {'total best':>11} {'median':>9} "
        f"{'fixed O(n)':>11} {'per-iter':>10} {'hit':>5}"
    )
    rows = []
    for n in sizes:
        for row in bench_n(n, args.runs, args.seed):
            rows.append(row)
            print(
                f"{n:>9} {row['oracle']:<20} {row['mean_T']:>7.1f} "
                f"{row['total_best_s']:>10.4f}s {row['total_median_s']:>8.4f}s "
                f"{row['fixed_s']:>10.4f}s {row['per_iter_s'] * 1e6:>8.1f}us "
                f"{row['successes']:>2}/{row['runs']}"
            )
    target = [r for r in rows if r["n"] == 10**6]
    for r in target:
        verdict = "OK" if r["total_median_s"] < 1.0 else "SLOW"
        print(f"target n=1e6 {r['oracle']}: median {r['total_median_s']:.3f}s < 1 s: {verdict}")

    print("\niterations vs eq. (26): binarized oracle, stop at log-odds > log(1/delta)")
    print(
        f"{'n':>9} {'delta':>6} {'p (24)':>7} {'mean T':>8} {'sd':>6} {'bound (26)':>11} "
        f"{'ratio':>6} {'argmax ok':>10}"
    )
    bounds = []
    for n in sizes:
        runs = args.bound_runs if n <= 10**6 else max(args.bound_runs // 5, 5)
        b = bench_bound(n, runs, args.seed)
        bounds.append(b)
        print(
            f"{n:>9} {b['delta']:>6} {b['p_eq24']:>7.4f} {b['mean_T']:>8.1f} "
            f"{b['sd_T']:>6.1f} {b['bound_eq26']:>11.1f} "
            f"{b['mean_T'] / b['bound_eq26']:>6.2f} {b['argmax_correct']:>5}/{b['runs']}"
        )

    print("\nbaseline: Algorithm 1 verbatim (fresh permutation, dense O(n) update per query)")
    fresh = []
    for n in [s for s in sizes if s <= 10**6]:
        f = bench_fresh(n, args.seed)
        ours = next(r for r in rows if r["n"] == n and r["oracle"] == "laplace")
        f["ours_per_iter_s"] = ours["per_iter_s"]
        fresh.append(f)
        ratio = f["fresh_per_iter_s"] / max(ours["per_iter_s"], 1e-9)
        print(
            f"{n:>9} fresh {f['fresh_per_iter_s'] * 1e3:8.3f} ms/iter   ours "
            f"{ours['per_iter_s'] * 1e6:8.1f} us/iter   ratio {ratio:8.0f}x"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "bound": bounds, "fresh": fresh}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
