"""Benchmark: the first privad command in a fresh environment against later runs.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_first_run.py                 # cold and warm, median of 3
    .venv/bin/python benchmarks/bench_first_run.py --installed     # also as an installed wheel
    .venv/bin/python benchmarks/bench_first_run.py --real --repeats 1  # also the 100,000-row job

Every run is a fresh ``privad`` process (``python -c "from privad.cli import main; ..."``):

* ``cold``: ``privad sp identify thyroid --beta 18 --r 0.1 --epsilon 0.1`` (the README's
  quick start) with ``NUMBA_CACHE_DIR`` pointing to a new empty folder, so every kernel it
  needs is compiled (Thyroid is small enough for the NumPy ball counts and the Python
  noise kernels, so it needs none: "Numba imported: False"); each cold run gets its own
  empty folder;
* ``warm``: the same command again with that folder filled;
* ``privad --help`` and ``privad sp plan``: wall time, peak memory and whether Numba was
  imported (commands that need no kernel must not import it).

* the real-size job (``--real``): ``privad sp identify`` on a 100,000 × 6 CSV
  (:func:`privad.datasets.make_sensitive_mixture` with d = 6 and no PCA, seed 0; r chosen
  so that the median ball holds about 100 records) three ways, each in a new empty
  ``NUMBA_CACHE_DIR``: ``cold`` (nothing cached: every kernel compiles on the job's path),
  ``installed`` (the cache filled by :func:`privad.geometry.warmup.compile_kernels` alone,
  which is what ``pip install -e .`` runs; timed apart as the install's cost) and ``warm``
  (the job again). Each job runs with ``NUMBA_DEBUG_CACHE=1``, and the report counts the
  kernels it saved to the cache, i.e. compiled: after ``compile_kernels`` it must be 0.

``--installed`` builds a wheel of this checkout, installs it into a temporary folder
(``pip install --target``, no dependencies: they come from this interpreter) and runs the
same command without ``NUMBA_CACHE_DIR`` twice: it shows where Numba writes the compiled
kernels of an installed package (the package's ``__pycache__`` when it is writable) and
that the second process loads them.

Reports medians and the ratio cold / warm. A benchmark, never a test.
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
REAL_N = 100_000
_WARMUP = "from privad.geometry.warmup import compile_kernels; compile_kernels()"
IDENTIFY = ["sp", "identify", "thyroid", "--beta", "18", "--r", "0.1", "--epsilon", "0.1"]
_CHILD = (
    "import atexit, json, resource, sys\n"
    "from privad.cli import main\n"
    "atexit.register(lambda: print('RESULT ' + json.dumps({'numba': 'numba' in sys.modules,"
    " 'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), file=sys.stderr))\n"
    "main(sys.argv[1:])\n"
)


def run_privad(args: list[str], env: dict[str, str], cwd: Path) -> dict:
    """One fresh ``privad ARGS`` process: wall seconds, peak RSS, whether Numba loaded."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], env=env, cwd=cwd, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    lines = [x for x in proc.stderr.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"privad {' '.join(args)} failed:\n{proc.stderr}")
    compiled = compiled_kernels(proc.stdout)
    return {"wall_s": wall, "compiled": compiled, **json.loads(lines[-1][len("RESULT ") :])}


def identify(tmp: Path, env: dict[str, str], tag: str, job: list[str] = IDENTIFY) -> dict:
    out = tmp / f"labels-{tag}.csv"
    ledger = tmp / f"ledger-{tag}.sqlite"
    for p in (out, ledger):
        p.unlink(missing_ok=True)
    args = [*job, "--ledger", str(ledger), "--budget", "1e6", "--out", str(out)]
    return run_privad(args, env, tmp)


def cold_and_warm(tmp: Path, base_env: dict[str, str], repeats: int) -> tuple[list, list]:
    cold, warm = [], []
    for i in range(repeats):
        cache = tmp / f"numba-cache-{i}"
        cache.mkdir()
        env = dict(base_env, NUMBA_CACHE_DIR=str(cache))
        cold.append(identify(tmp, env, f"cold{i}"))
        warm.append(identify(tmp, env, f"warm{i}"))
    return cold, warm


def real_size_job(tmp: Path) -> list[str]:
    """The 100,000 × 6 CSV of the real-size job, and the ``sp identify`` arguments for it."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_ball_counts import radius_for_median

    from privad.datasets import make_sensitive_mixture

    X = make_sensitive_mixture(REAL_N, d=6, n_components=None, rng=0).X
    r = radius_for_median(X, 100)
    data = tmp / "real.csv"
    header = ",".join(f"x{j}" for j in range(X.shape[1]))
    np.savetxt(data, X, delimiter=",", header=header, comments="", fmt="%.17g")
    return ["sp", "identify", str(data), "--beta", "20", "--r", f"{r:.17g}", "--epsilon", "0.1"]


def compiled_kernels(stdout: str) -> list[str]:
    """Kernels a process compiled: the cache files ``NUMBA_DEBUG_CACHE=1`` reports saved."""
    saved = [line for line in stdout.splitlines() if line.startswith("[cache] data saved")]
    return [Path(line.split(" to ", 1)[1].strip("'\"")).name for line in saved]


def real_size(tmp: Path, base_env: dict[str, str]) -> None:
    """Cold, installed and warm runs of the real-size job (module docstring)."""
    job = real_size_job(tmp)
    runs = {}
    for tag in ("cold", "installed"):
        cache = tmp / f"real-cache-{tag}"
        cache.mkdir()
        env = dict(base_env, NUMBA_CACHE_DIR=str(cache), NUMBA_DEBUG_CACHE="1")
        if tag == "installed":
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", _WARMUP], env=env, check=True, capture_output=True
            )
            print(
                f"  compile_kernels into an empty cache (the install's cost): "
                f"{time.perf_counter() - t0:.1f} s"
            )
        runs[tag] = identify(tmp, env, f"real-{tag}", job)
        if tag == "installed":
            runs["warm"] = identify(tmp, env, "real-warm", job)
    print(f"privad sp identify on {REAL_N:,} x 6 (median ball ~100), one run each:")
    print(f"  kernels the job compiled after compile_kernels: {runs['installed']['compiled']}")
    for tag, run in runs.items():
        print(
            f"  {tag:<9} {run['wall_s']:7.2f} s, {len(run['compiled'])} kernel(s) compiled, "
            f"peak RSS {run['rss_mb']:.0f} MB, {run['wall_s'] / runs['warm']['wall_s']:.2f}x warm"
        )


def installed(tmp: Path) -> None:
    """Install a wheel of this checkout into a folder and run from there, cache unset."""
    wheels = tmp / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
    )
    site = tmp / "site"
    wheel = next(wheels.glob("privad-*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    first = identify(tmp, env, "installed-1")
    second = identify(tmp, env, "installed-2")
    index = sorted(p.relative_to(site) for p in site.rglob("*.nbi"))
    folders = sorted({str(p.parent) for p in index})
    print(
        f"\ninstalled wheel ({wheel.name}), NUMBA_CACHE_DIR unset: first run "
        f"{first['wall_s']:.2f} s, second {second['wall_s']:.2f} s; {len(index)} cache "
        f"index files written under {site.name}/: {', '.join(folders) or 'none'}"
    )


def _walls(runs: list[dict]) -> str:
    return ", ".join(f"{r['wall_s']:.2f}" for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--installed", action="store_true", help="also run as an installed wheel")
    ap.add_argument("--real", action="store_true", help="also the real-size job (100,000 x 6)")
    args = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        cache = tmp / "light-cache"
        cache.mkdir()
        light_env = dict(env, NUMBA_CACHE_DIR=str(cache))
        for name, cmd in [
            ("privad --help", ["--help"]),
            ("privad sp plan", ["sp", "plan", "--beta", "18", "--epsilon", "0.1"]),
        ]:
            runs = [run_privad(cmd, light_env, tmp) for _ in range(args.repeats)]
            print(
                f"{name:<16} median {statistics.median(r['wall_s'] for r in runs):.2f} s, "
                f"peak RSS {statistics.median(r['rss_mb'] for r in runs):.0f} MB, "
                f"Numba imported: {any(r['numba'] for r in runs)}"
            )
        cold, warm = cold_and_warm(tmp, env, args.repeats)
        c = statistics.median(r["wall_s"] for r in cold)
        w = statistics.median(r["wall_s"] for r in warm)
        print(f"privad {' '.join(IDENTIFY)}:")
        print(
            f"  cold (empty NUMBA_CACHE_DIR): median {c:.2f} s "
            f"({_walls(cold)}), "
            f"peak RSS {statistics.median(r['rss_mb'] for r in cold):.0f} MB, "
            f"Numba imported: {any(r['numba'] for r in cold)}"
        )
        print(
            f"  warm (cache filled):          median {w:.2f} s "
            f"({_walls(warm)}), "
            f"peak RSS {statistics.median(r['rss_mb'] for r in warm):.0f} MB, "
            f"Numba imported: {any(r['numba'] for r in warm)}"
        )
        print(f"  cold / warm: {c / w:.2f}x")
        if args.real:
            real_size(tmp, env)
        if args.installed:
            installed(tmp)


if __name__ == "__main__":
    main()
