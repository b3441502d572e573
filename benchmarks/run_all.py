"""Run the benchmarks and write docs/benchmarks.md from their output (one run, one file).

Usage (from the repository root)::

    .venv/bin/python benchmarks/run_all.py                       # every benchmark below
    .venv/bin/python benchmarks/run_all.py --only laplace,knn    # a subset (the file says so)
    .venv/bin/python benchmarks/run_all.py --out /tmp/bench.md   # somewhere else
    .venv/bin/python benchmarks/run_all.py --list                # the commands, nothing run
    .venv/bin/python benchmarks/run_all.py --resume              # go on after an interruption

Each benchmark script runs as its own process with the arguments listed in ``BENCHMARKS``;
its report (the tables it prints) is copied into the markdown verbatim under the exact
command that produced it, so every row can be reproduced by running that command. The
header records the date, the machine (CPU model, cores, memory, load average before and
after) and the library versions. Nothing is edited by hand afterwards: to change the
text, change this file and run it again.

Each benchmark's raw output (stdout, stderr, exit status, time) is saved under
``benchmarks/results/run_all/`` (``--state``) as soon as it finishes, and the page is
written once, atomically, at the end. ``--resume`` reuses every saved output that
completed with the same command (the page lists them), so an interrupted run loses only
the benchmark it was in. Each benchmark gets ``--timeout`` seconds (its process group is
killed after them and the section says so).

A benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / "benchmarks" / "results" / "run_all"  # raw outputs, one JSON per benchmark


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
        ("bench_first_run.py", "--installed", "--real"),
        "`privad sp identify thyroid ...` in fresh processes: with an empty `NUMBA_CACHE_DIR` "
        "(every kernel it needs is compiled) and again with the cache filled; `privad --help` "
        "and `privad sp plan`, which need no kernel and must not import Numba; the real-size "
        "job (`sp identify` on 100,000 x 6 records, median ball about 100) cold, after "
        "`compile_kernels` alone (what `pip install -e .` leaves) and warm, with the kernels "
        "each run compiled; and the thyroid command from an installed wheel without "
        "`NUMBA_CACHE_DIR` (where Numba puts the compiled kernels of an installed package).",
    ),
    Benchmark(
        "laplace",
        "Floating-point-safe Laplace",
        ("bench_laplace.py", "--repeats", "5"),
        "`privad.noise.laplace` (grid snapping plus exact discrete Laplace noise) on all of "
        "Numba's threads and on one, against NumPy's `Generator.laplace` (`x + noise`, "
        "single-threaded and not safe against Mironov's attack: the speed floor), timed in "
        "turn at 10^6 and 10^7 values, ratios of the medians; privad draws 2^20 values or "
        "more in parallel chunks (10^6 is below that). OpenDP's vector Laplace, the safe "
        "library, at 2 x 10^4 values.",
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
        (
            "bench_knn.py",
            "--n",
            "100000",
            "--repeats",
            "3",
            "--methods",
            "privad,cKDTree,sklearn,pykdtree",
        ),
        "k = 501 (0.005 n + 1) at 100,000 × 6 against SciPy's cKDTree, scikit-learn's "
        "`NearestNeighbors(algorithm='kd_tree', n_jobs=-1)` and pykdtree (OpenMP), medians "
        "of 3 runs each (at 284,807 the two slower libraries alone would take about 12 minutes "
        "per run here); "
        "`max rel diff` compares each library's k-th distances with privad's.",
    ),
    Benchmark(
        "search",
        "DP noisy binary search",
        ("bench_search.py",),
        "One search per n (10^4 to 10^7) and oracle (Laplace, binarized, randomized "
        "response) at ε = 1, threshold ratio 0.7, best and median of 5, against the target "
        "of under 1 s at n = 10^6; the binarized oracle's mean number of iterations against "
        "the bound of eq. (26); and the cost per iteration against Algorithm 1 verbatim (a "
        "new permutation and a dense O(n) update per iteration), as no other library "
        "implements this mechanism.",
    ),
    Benchmark(
        "release",
        "What accounting costs",
        ("bench_release.py", "--repeats", "3"),
        "`SensitiveAnomalyIdentifier(...).fit(X).predict()` on the Credit Fraud stand-in "
        "(284,807 × 6, median ball about 1,000, ε = 0.1), with its own ledger and with an "
        "SQLite ledger file, and Claim 5's bound alone, against the ball counts alone (the "
        "work the mechanism cannot avoid); medians of 3, after compiling every kernel.",
    ),
    Benchmark(
        "sp_split",
        "Where `sp identify` spends its time",
        ("bench_sp_split.py", "--sizes", "100000,284807"),
        "One warm `privad sp identify` (a fresh process, kernels in the cache) on the Credit "
        "Fraud stand-in (median ball about 1,000, β = 0.005 n, ε = 0.1) split into imports "
        "(`-X importtime`), reading the CSV, the counts at r (with the multiplicities), "
        "Claim 5's bound at 2r, sampling, writing and the rest; `whole/counts` is the "
        "process's wall time over the counts.",
    ),
    Benchmark(
        "claim5_options",
        "Claim 5's 2r pass: what certificates would leave",
        ("bench_claim5_options.py", "--sizes", "100000,284807"),
        "The seed (exact 2r counts of the 8 densest r-balls) against the true maximum, and "
        "for five certificates that a record's 2r count cannot exceed the seed, the share of "
        "records they do not rule out (which an exact shortcut would still have to count).",
    ),
    Benchmark(
        "curator",
        "The sensitive-privacy curator",
        ("bench_curator.py",),
        "`privad serve sp` on loopback (uvicorn, SQLite store and ledger) under 8 querier "
        "threads for 20 s per dataset (Mammography and the 284,807 × 6 stand-in), requests "
        "of 10 questions (half record ids, half feature vectors near the data): questions "
        "and requests per second, p50 and p99 latency; then the online Claim 5 bound (one "
        "more vector) against recomputing `claim5_bound` for the querier's whole set.",
    ),
    Benchmark(
        "rmp",
        "RMP: the AANN against PyOD",
        ("bench_rmp.py", "--records", "100000"),
        "On the same RMP-perturbed data (α = 0.1, r = 1, 500 epochs; Abalone, Digits and "
        "Gas when its file is found) privad's AANN against PyOD's AutoEncoder (as shipped "
        "and with the AANN's architecture), IsolationForest and PCA: training and scoring "
        "time and ROC AUC; then the end-user's scoring throughput on 10^5 records (best of "
        "3) against PyOD's scoring (needs the `bench` extra; 10^6 records, the script's "
        "default, add about 4 minutes here).",
    ),
    Benchmark(
        "dask",
        "Ball counts on Dask",
        ("bench_dask.py", "--sizes", "2000000"),
        "2 × 10^6 × 6 standard-normal records generated inside the tasks, r = 0.3: ball "
        "counts, multiplicities and the release with the Dask engine on a fresh local "
        "cluster of 1 and of 2 workers against the in-memory Numba engine (a fresh process) "
        "on the same records: time per stage (Claim 5's bound at 2r is part of `predict()`), "
        "peak memory per process, bytes the workers sent, and whether counts and labels are "
        "identical (`--sizes 10000000`, the script's default, takes about five times as long).",
    ),
    Benchmark(
        "relaxed",
        "Relaxed-DP sensors",
        ("bench_relaxed.py",),
        "The relaxed-DP pipeline on 100,000 points of the sensor ring (separation 220) at "
        "ε = 0.1, 0.5 and 1, stage by stage, each in a fresh process (time and peak "
        "memory): privad's exact DBSCAN on 𝒯 and 𝒯' against `sklearn.cluster.DBSCAN` "
        "with the same parameters (skipped where its neighbour lists would need more than "
        "4 GB), and the correction steps 3–5 (median of 50).",
    ),
    Benchmark(
        "relaxed_sklearn",
        "Relaxed-DP sensors: DBSCAN against scikit-learn",
        ("bench_relaxed.py", "--n", "20000", "--epsilons", "1"),
        "The same at 20,000 points and ε = 1, where `sklearn.cluster.DBSCAN` fits in its "
        "4 GB budget (at 100,000 points above its neighbour lists would need tens of GB): "
        "privad's DBSCAN against scikit-learn's on 𝒯 and 𝒯', time and peak memory, and "
        "whether the two find the same noise set.",
    ),
    Benchmark(
        "services",
        "The sensor services",
        ("bench_services.py",),
        "Records per second the relaxed-DP analyst (`privad serve analyst` in its own "
        "process, SQLite in WAL mode with `synchronous=FULL`) accepts over loopback from 8 "
        "sensor threads sending 50 windows of 2,000 records each (bodies prepared before "
        "the clock starts): request latency (median, 95th percentile) and a check that the "
        "database holds exactly the acknowledged windows; an absolute figure, as no other "
        "library offers this service.",
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
    """Python and the version of every library a benchmark runs or compares with."""
    code = (
        "import sys\n"
        "from importlib.metadata import PackageNotFoundError, version\n"
        "names = {'numpy': 'NumPy', 'scipy': 'SciPy', 'scikit-learn': 'scikit-learn', "
        "'numba': 'Numba', 'dask': 'Dask', 'pyod': 'PyOD', 'torch': 'PyTorch', "
        "'pykdtree': 'pykdtree'}\n"
        "out = [f'Python {sys.version.split()[0]}']\n"
        "for dist, name in names.items():\n"
        "    try:\n"
        "        out.append(f'{name} {version(dist)}')\n"
        "    except PackageNotFoundError:\n"
        "        out.append(f'{name} not installed')\n"
        "print(', '.join(out))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _command(b: Benchmark) -> tuple[list[str], str]:
    """The command run (this interpreter, absolute paths) and the command shown."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / b.args[0]), *b.args[1:]]
    return cmd, " ".join([".venv/bin/python", f"benchmarks/{b.args[0]}", *b.args[1:]])


def _run(b: Benchmark, env: dict[str, str], timeout: float) -> dict:
    """Run one benchmark in its own process group; its raw output, time and exit status.

    On a timeout the whole group is killed (the scripts start workers and clusters of their
    own, which would otherwise keep the pipes open)."""
    cmd, shown = _command(b)
    load = _load()
    started = dt.datetime.now().astimezone()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        status = f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        status = f"timed out after {timeout:.0f} s"
    except BaseException:  # Ctrl-C: the group is in its own session and would go on
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return {
        "name": b.name,
        "command": shown,
        "ok": status == "exit 0",
        "status": status,
        "seconds": time.perf_counter() - t0,
        "started": started.isoformat(),
        "load_before": load,
        "stdout": stdout,
        "stderr": stderr,
    }


def _section(b: Benchmark, raw: dict) -> str:
    report = (
        raw["stdout"].strip()
        if raw["ok"]
        else "\n".join(
            [f"FAILED ({raw['status']}); the end of its output:", raw["stdout"].strip()[-3000:]]
            + ["stderr:", raw["stderr"].strip()[-3000:]]
        )
    )
    return (
        f"## {b.title} (`benchmarks/{b.args[0]}`)\n\n{b.what}\n\n"
        f"```bash\n{raw['command']}\n```\n\nOutput ({raw['seconds']:.0f} s):\n\n"
        f"```text\n{report}\n```\n"
    )


def _saved(state: Path, b: Benchmark) -> dict | None:
    """The saved output of ``b`` if it ran to completion with today's command."""
    try:
        raw = json.loads((state / f"{b.name}.json").read_text())
    except (OSError, ValueError):
        return None
    return raw if raw.get("ok") and raw.get("command") == _command(b)[1] else None


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated names: " + ",".join(b.name for b in BENCHMARKS))
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument(
        "--state",
        default=str(STATE),
        help="folder for each benchmark's raw output, saved as soon as it finishes",
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help="reuse the saved output of every benchmark that completed with the same command",
    )
    ap.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds per benchmark (default 3600)"
    )
    ap.add_argument("--list", action="store_true", help="print the commands and exit")
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else [b.name for b in BENCHMARKS]
    unknown = sorted(set(names) - {b.name for b in BENCHMARKS})
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}")
    chosen = [b for b in BENCHMARKS if b.name in names]
    if args.list:
        width = max(len(b.name) for b in chosen)
        for b in chosen:
            print(f"{b.name:<{width}}  {_command(b)[1]}")
        return
    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    raws: list[dict] = []
    resumed: list[str] = []
    for b in chosen:
        raw = _saved(state, b) if args.resume else None
        if raw is not None:
            print(f"{b.name}: saved output of {raw['started']} reused", flush=True)
            resumed.append(b.name)
        else:
            print(f"running {_command(b)[1]}", flush=True)
            raw = _run(b, env, args.timeout)
            _write_atomically(state / f"{b.name}.json", json.dumps(raw, indent=1))
            print(f"  {raw['status']} ({raw['seconds']:.0f} s)", flush=True)
        raws.append(raw)
    skipped = [b.name for b in BENCHMARKS if b not in chosen]
    sections = [_section(b, raw) for b, raw in zip(chosen, raws, strict=True)]
    _write_atomically(Path(args.out), _header(chosen, raws, skipped, resumed) + "\n".join(sections))
    print(f"wrote {args.out}")


def _header(done: list[Benchmark], raws: list[dict], skipped: list[str], resumed: list[str]) -> str:
    starts = [dt.datetime.fromisoformat(raw["started"]) for raw in raws]
    ends = [
        dt.datetime.fromisoformat(r["started"]) + dt.timedelta(seconds=r["seconds"]) for r in raws
    ]
    return (
        "# Benchmarks\n\n"
        "Written by `benchmarks/run_all.py` from one run"
        + (f" of `--only {','.join(b.name for b in done)}`" if skipped else "")
        + "; nothing below is edited by hand. Each section gives the command that produced "
        "its table: run it to reproduce a row. Timings are wall-clock medians on the machine "
        "below; the load averages say whether other jobs shared it. Load changes the ratios "
        "too, not only the times: on a loaded machine (load 2-6) cKDTree, which splits its "
        "queries evenly over its workers, took 2.3-4.9 times as long as on an idle one and "
        "privad's dynamically scheduled engines 1.4-1.8 times, so the ratios that count are "
        "those measured on an idle machine.\n\n"
        f"- date: {min(starts):%Y-%m-%d %H:%M} to {max(ends):%Y-%m-%d %H:%M %Z}\n"
        f"- machine: {_machine()}\n"
        f"- software: {_versions()}\n"
        f"- load average (1, 5, 15 min) before: {raws[0]['load_before']}; after: {_load()}\n"
        + (f"- not run this time: {', '.join(skipped)}\n" if skipped else "")
        + (
            f"- saved outputs of an earlier invocation reused (`--resume`, the same commands; "
            f"each section's own time is in its raw output): {', '.join(resumed)}; run in "
            f"this invocation: {', '.join(b.name for b in done if b.name not in resumed)}\n"
            if resumed
            else ""
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
