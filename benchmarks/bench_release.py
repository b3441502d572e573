"""Benchmark: what accounting costs on top of the ball counts (one release path).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_release.py            # n = 284,807 x 6 (~3 minutes)
    .venv/bin/python benchmarks/bench_release.py --n 100000

Data: the Credit Fraud stand-in of ``bench_ball_counts.py`` (correlated Student-t(3)), r
chosen so that the median ball holds about 1000 records, β = 0.005·n, ε = 0.1. Measured, in
one process after a warm-up on a small sample (Numba compiled), median of ``--repeats``:

* ``ball counts``: :func:`privad.geometry.ball_counts` of every record (the work the
  mechanism needs, and the reference of the ratios);
* ``fit + predict (ledger_)``: :class:`privad.sensitive.SensitiveAnomalyIdentifier` ``fit``
  then ``predict()``: counts, multiplicities, Claim 5's bound, the reservation in the
  estimator's own ledger, the exact sampling, the commit, the answer record;
* ``fit + predict (SQLite ledger)``: the same charged to a ledger file;
* ``Claim 5 bound alone``: :func:`privad.sensitive.accounting.claim5_bound` given the counts at r.

The answer of a second ``predict()`` is the recorded one (no new release), timed too. This
is a benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ball_counts import BETA_SHARE, make_data, radius_for_median  # noqa: E402


def _timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=284_807)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from privad.accounting import Ledger
    from privad.geometry import ball_counts
    from privad.sensitive import SensitiveAnomalyIdentifier
    from privad.sensitive.accounting import claim5_bound

    X = make_data(args.n)
    r = radius_for_median(X)
    beta = max(1, round(BETA_SHARE * args.n))
    # Compile every kernel on the way: 5,000 records (25 million pairs) so that
    # engine="auto" takes the compiled dual tree, as it does at full size (at most 16
    # million pairs go to the NumPy engine, and the reference would pay the compilation).
    warm = SensitiveAnomalyIdentifier(beta, r, 0.1, rng=0).fit(X[:5000])
    warm.predict()
    claim5_bound(X[:5000], r)

    t_counts, counts = _timed(lambda: ball_counts(X, r), args.repeats)
    t_bound, bound = _timed(lambda: claim5_bound(X, r, ball_counts_at_r=counts), args.repeats)

    def fit_predict() -> object:
        est = SensitiveAnomalyIdentifier(beta, r, 0.1, rng=0).fit(X)
        est.predict(fresh=True)  # the records' answers are recorded per process: release anew
        return est

    t_own, est = _timed(fit_predict, args.repeats)
    t_again, _ = _timed(est.predict, args.repeats)

    with tempfile.TemporaryDirectory() as td:

        def fit_predict_file() -> object:
            with Ledger(Path(td) / "l.sqlite") as book:
                book.set_budget("s", "sensitive", 1e9)
                est = SensitiveAnomalyIdentifier(beta, r, 0.1, rng=0).fit(X)
                return est.predict(ledger=book, scope="s", fresh=True)

        t_file, _ = _timed(fit_predict_file, args.repeats)

    spend = est.ledger_.history()[-1]
    print(
        f"n = {args.n:,} x {X.shape[1]}, r = {r:.4f}, β = {beta}, ε = 0.1; "
        f"median ball {int(np.median(counts))}; m = {bound.m} (lower {bound.lower}, "
        f"upper {bound.upper}); charged ε = {spend.epsilon:g}; median of {args.repeats}"
    )
    print(f"{'what':<34} {'seconds':>8} {'× ball counts':>14}")
    for what, t in [
        ("ball counts (reference)", t_counts),
        ("Claim 5 bound (counts at r given)", t_bound),
        ("fit + predict (ledger_)", t_own),
        ("fit + predict (SQLite ledger)", t_file),
        ("predict again (recorded)", t_again),
    ]:
        print(f"{what:<34} {t:8.2f} {t / t_counts:14.2f}")


if __name__ == "__main__":
    main()
