"""Benchmark: where the time of one ``privad sp identify`` goes (issue 28's split).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_sp_split.py --sizes 100000,284807 --repeats 1

Data: the Credit Fraud stand-in of ``bench_ball_counts.py`` (correlated Student-t(3), 6
features, deterministic), written to a CSV; r chosen so that the median ball holds about
1,000 records, β = 0.005·n, ε = 0.1. Each run is a fresh ``privad sp identify`` process
with the Numba cache already filled (a warm run: the kernels were compiled beforehand, as
after the install), started with ``python -X importtime``. The child wraps, in place, the
functions the job calls for each stage and adds up their wall time:

* ``imports``: the sum of the top-level ``-X importtime`` entries (every module the job
  imported, also those imported lazily on the way);
* ``load``: reading the CSV (``privad.cli._data.load_table``);
* ``counts``: the ball counts at r and the multiplicities (``ball_statistics`` as the
  release path calls it);
* ``Claim 5``: the bound at 2r (``claim5_bound`` as the release path calls it);
* ``sampling``: the mechanism's exact sampler (``sample`` of the mechanism classes);
* ``writing``: the labels file (``CsvLabels.write`` and its atomic staging);
* ``other``: the rest of the process's wall time (interpreter start, validation, the
  ledger, rendering).

``whole / counts`` is the process's wall time over the counts stage. A benchmark, never a
test: the numbers depend on the machine and its load (printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_ball_counts import BETA_SHARE, make_data, radius_for_median  # noqa: E402

STAGES = ("imports", "load", "counts", "claim5", "sampling", "writing")
_CHILD = r"""
import atexit, json, sys, time
from privad.cli import main
import privad.cli._sp_identify as job
import privad.sensitive.mechanisms as mech
import privad.sensitive.release as rel

spent = dict.fromkeys(("load", "counts", "claim5", "sampling", "writing"), 0.0)

def timed(stage, fn):
    def wrapper(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            spent[stage] += time.perf_counter() - t0
    return wrapper

job.load_table = timed("load", job.load_table)
rel.ball_statistics = timed("counts", rel.ball_statistics)
rel.claim5_bound = timed("claim5", rel.claim5_bound)
for cls in vars(mech).values():
    if isinstance(cls, type) and "sample" in vars(cls):
        cls.sample = timed("sampling", vars(cls)["sample"])
rel.CsvLabels.write = timed("writing", rel.CsvLabels.write)
atexit.register(lambda: print("SPLIT " + json.dumps(spent), file=sys.stderr))
main(sys.argv[1:])
"""


def import_seconds(stderr: str) -> float:
    """The sum of the top-level ``-X importtime`` entries (cumulative microseconds)."""
    total = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if not name.startswith("  "):  # one space after the bar: a top-level import
            total += int(cumulative)
    return total / 1e6


def run_once(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """One fresh ``privad ARGS`` process: its wall time and the time of each stage."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _CHILD, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    lines = [x for x in proc.stderr.splitlines() if x.startswith("SPLIT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"privad {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    out = {"whole": wall, "imports": import_seconds(proc.stderr)}
    out.update(json.loads(lines[-1][len("SPLIT ") :]))
    out["other"] = wall - sum(out[s] for s in STAGES)
    return out


def job_args(tmp: Path, n: int) -> tuple[list[str], float, int]:
    """The CSV of ``n`` stand-in records and the ``sp identify`` arguments for it."""
    X = make_data(n)
    r = radius_for_median(X)
    beta = max(1, round(BETA_SHARE * n))
    data = tmp / f"standin-{n}.csv"
    header = ",".join(f"x{j}" for j in range(X.shape[1]))
    np.savetxt(data, X, delimiter=",", header=header, comments="", fmt="%.17g")
    args = ["sp", "identify", str(data), "--beta", str(beta), "--r", f"{r:.17g}"]
    return [*args, "--epsilon", "0.1"], r, beta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,284807")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cols = ("whole", *STAGES, "other")
    print(f"{'n':>8} {'r':>7} {'beta':>5} " + " ".join(f"{c:>9}" for c in cols) + "  whole/counts")
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        subprocess.run(  # the kernels compiled (or loaded) before any timed run
            [sys.executable, "-c", "from privad.geometry.warmup import compile_kernels as c; c()"],
            env=env,
            check=True,
        )
        for n in (int(s) for s in args.sizes.split(",")):
            cmd, r, beta = job_args(tmp, n)
            runs = []
            for i in range(args.repeats):
                out = tmp / f"labels-{n}-{i}.csv"
                ledger = tmp / f"ledger-{n}-{i}.sqlite"
                extra = ["--ledger", str(ledger), "--budget", "1e9", "--out", str(out)]
                runs.append(run_once([*cmd, *extra], env, tmp))
            med = {c: statistics.median(run[c] for run in runs) for c in cols}
            print(
                f"{n:>8,} {r:7.4f} {beta:>5} "
                + " ".join(f"{med[c]:9.2f}" for c in cols)
                + f"  {med['whole'] / med['counts']:.2f}"
            )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
