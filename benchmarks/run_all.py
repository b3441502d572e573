"""Run the benchmarks and write docs/benchmarks.md from their output (one run, one file).

Usage (from the repository root)::

    .venv/bin/python benchmarks/run_all.py                       # every benchmark below
    .venv/bin/python benchmarks/run_all.py --only laplace,knn    # a subset (the file says so)
    .venv/bin/python benchmarks/run_all.py --out /tmp/bench.md   # somewhere else

Each benchmark script runs as its own process with the arguments listed in ``BENCHMARKS``;
its report (the tables it prints) is copied into the markdown verbatim under the exact
command that produced it, so every row can be reproduced by running that command. The
header records the date, the machine (CPU model, cores, memory, load average before and
after) and the library versions. Nothing is edited by hand afterwards: to change the
text, change this file and run it again.

A benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    args: tuple[str, ...]
    what: str


BENCHMARKS = (
    Benchmark(
        "first_run",
        "The first run in a fresh environment",
        ("bench_first_run.py", "--installed"),
        "`privad sp identify thyroid ...` in fresh processes: with an empty `NUMBA_CACHE_DIR` "
        "(every kernel it needs is compiled) and again with the cache filled; `privad --help` "
        "and `privad sp plan`, which need no kernel and must not import Numba; and the same "
        "command from an installed wheel without `NUMBA_CACHE_DIR` (where Numba puts the "
        "compiled kernels of an installed package).",
    ),
    Benchmark(
        "laplace",
        "Floating-point-safe Laplace",
        ("bench_laplace.py", "--repeats", "5"),
        "`privad.noise.laplace` (grid snapping plus exact discrete Laplace noise) against "
        "NumPy's `Generator.laplace` (`x + noise`, not safe against Mironov's attack), timed "
        "alternately at 10^6 and 10^7 values; ratios are of the medians.",
    ),
    Benchmark(
        "ball_counts",
        "Exact ball counts",
        ("bench_ball_counts.py", "--sizes", "284807", "--medians", "10,1000", "--repeats", "3"),
        "Self counts of the Credit Fraud stand-in (correlated Student-t(3), 6 features) at radii "
        "whose median ball holds about 10 and about 1,000 records, uncapped and capped at "
        "β + 1, and 56,961 new query points, against SciPy's "
        "`cKDTree.query_ball_point(..., return_length=True, workers=-1)`; every measurement in "
        "a fresh process, medians of the repeats; `mismatches` counts records whose count "
        "differs from cKDTree's (0 everywhere means identical counts).",
    ),
    Benchmark(
        "knn",
        "Exact k-th neighbour distances (`privad sp params`)",
        ("bench_knn.py", "--n", "284807", "--repeats", "3", "--methods", "privad,cKDTree"),
        "k = 1,425 (0.005 n + 1) at 284,807 × 6 against SciPy's cKDTree (all cores), medians "
        "of 3 runs each.",
    ),
    Benchmark(
        "knn_others",
        "Exact k-th neighbour distances: other libraries",
        ("bench_knn.py", "--n", "284807", "--repeats", "1", "--methods", "privad,sklearn,pykdtree"),
        "The same against scikit-learn's `NearestNeighbors(algorithm='kd_tree', n_jobs=-1)` "
        "and pykdtree (OpenMP), if installed; one run each (they are slower than cKDTree).",
    ),
    Benchmark(
        "search",
        "DP noisy binary search",
        ("bench_search.py",),
        "One search per n and oracle (ε = 1, threshold ratio 0.7); there is no other library "
        "for this mechanism, so the comparison is with Algorithm 1 verbatim.",
    ),
    Benchmark(
        "release",
        "What accounting costs",
        ("bench_release.py", "--repeats", "3"),
        "`SensitiveAnomalyIdentifier(...).fit(X).predict()` on 284,807 × 6 against the ball "
        "counts alone.",
    ),
    Benchmark(
        "curator",
        "The sensitive-privacy curator",
        ("bench_curator.py",),
        "`privad serve sp` under 8 querier threads: throughput and latency.",
    ),
    Benchmark(
        "rmp",
        "RMP: the AANN against PyOD",
        ("bench_rmp.py",),
        "privad's AANN against PyOD's AutoEncoder on the same perturbed data (needs the "
        "`bench` extra).",
    ),
    Benchmark(
        "dask",
        "Ball counts on Dask",
        ("bench_dask.py",),
        "10^7 × 6 records, the Dask engine with 1 and 2 workers against the in-memory engine.",
    ),
    Benchmark(
        "relaxed", "Relaxed-DP sensors", ("bench_relaxed.py",), "The relaxed-DP sensor pipeline."
    ),
    Benchmark(
        "services",
        "The sensor services",
        ("bench_services.py",),
        "8 sensors sending windows to the services.",
    ),
)


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(
            int(x.split()[1])
            for x in Path("/proc/meminfo").read_text().splitlines()
            if x.startswith("MemTotal")
        )
        mem = f", {mem_kb / 2**20:.0f} GiB memory"
    except (OSError, StopIteration):
        mem = ""
    return f"{cpu}, {os.cpu_count()} logical CPUs{mem}, {platform.system()} {platform.release()}"


def _versions() -> str:
    code = (
        "import sys, numpy, scipy, sklearn, numba; print(f'Python {sys.version.split()[0]}, "
        "NumPy {numpy.__version__}, SciPy {scipy.__version__}, scikit-learn "
        "{sklearn.__version__}, Numba {numba.__version__}')"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated names: " + ",".join(b.name for b in BENCHMARKS))
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only.split(",")]
    started = dt.datetime.now().astimezone()
    load_before = _load()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    sections: list[str] = []
    for b in chosen:
        cmd = [sys.executable, str(ROOT / "benchmarks" / b.args[0]), *b.args[1:]]
        shown = " ".join([".venv/bin/python", f"benchmarks/{b.args[0]}", *b.args[1:]])
        print(f"running {shown}", flush=True)
        t0 = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        took = time.perf_counter() - t0
        report = (
            res.stdout.strip()
            if res.returncode == 0
            else (f"FAILED (exit {res.returncode}):\n{res.stderr.strip()[-3000:]}")
        )
        sections.append(
            f"## {b.title} (`benchmarks/{b.args[0]}`)\n\n{b.what}\n\n"
            f"```bash\n{shown}\n```\n\nOutput ({took:.0f} s):\n\n"
            f"```text\n{report}\n```\n"
        )
        done = chosen[: len(sections)]
        skipped = [x.name for x in BENCHMARKS if x not in done]
        _write(Path(args.out), started, load_before, done, skipped, sections)  # after each
    print(f"wrote {args.out}")


def _write(
    out: Path,
    started: dt.datetime,
    load_before: str,
    done: list[Benchmark],
    skipped: list[str],
    sections: list[str],
) -> None:
    header = (
        "# Benchmarks\n\n"
        "Written by `benchmarks/run_all.py` from one run"
        + (f" of `--only {','.join(b.name for b in done)}`" if skipped else "")
        + "; nothing below is edited by hand. Each section gives the command that produced "
        "its table: run it to reproduce a row. Timings are wall-clock medians on the machine "
        "below, which other jobs were sharing (see the load averages): absolute times vary "
        "with the load; the ratios against the competing library, measured in the same run, "
        "are the point.\n\n"
        f"- date: {started:%Y-%m-%d %H:%M %Z}\n"
        f"- machine: {_machine()}\n"
        f"- software: {_versions()}\n"
        f"- load average (1, 5, 15 min) before: {load_before}; after: {_load()}\n"
        + (f"- not run this time: {', '.join(skipped)}\n" if skipped else "")
        + "\n"
    )
    out.write_text(header + "\n".join(sections))


if __name__ == "__main__":
    main()
