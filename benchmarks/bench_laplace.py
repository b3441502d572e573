"""Benchmark: floating-point-safe Laplace noise, ns per value.

Compares, in the same run:

* ``privad.noise.laplace`` (grid snapping + exact discrete Laplace, CKS 2020 Alg. 2,
  Numba kernels computing PCG64DXSM words from the generator state) on 10**6 and
  10**7 values (``--sizes``), on all of Numba's threads (draws of 2**20 values or more
  run in chunks, one stream each) and on one;
* ``numpy.random.Generator.laplace`` (textbook floating-point Laplace, *not* safe against
  Mironov's attack) on the same values, ``x + noise``: the speed floor;
* OpenDP's vector Laplace (``opendp.prelude.m.make_laplace`` on a float vector domain,
  exact and floating-point safe, big-integer arithmetic in Rust) on 2 * 10**4 values.

Also reports the first-call time of privad (loading or compiling the Numba kernels) in a
fresh process, with the on-disk cache and, with ``--cold``, with an empty cache.

Usage::

    .venv/bin/python benchmarks/bench_laplace.py [--repeats 7] [--sizes 1000000,10000000] [--cold]

privad (all threads), privad (one thread) and NumPy are timed in turn, so all see the same
load; the ratios of the medians are reported per size. NumPy's sampler is single-threaded.

Never gates CI: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np

from privad import noise

N_FAST = 1_000_000
N_OPENDP = 20_000
SCALE = 2.5


def _time(fn, n: int, repeats: int) -> tuple[float, float]:  # noqa: ANN001
    """(best, median) ns per value over ``repeats`` runs."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e9 / n)
    return min(times), statistics.median(times)


def _first_call_seconds(cache_dir: str | None) -> float:
    code = (
        "import time, numpy as np; t = time.perf_counter(); import privad.noise as N; "
        "N.laplace(np.zeros(10), 1.0, 0); print(time.perf_counter() - t)"
    )
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def _import_seconds() -> float:
    code = (
        "import time, sys; t = time.perf_counter(); import privad.noise; "
        "print(time.perf_counter() - t, 'numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds, numba_loaded = out.stdout.split()
    assert numba_loaded == "False", "import privad.noise must not import numba"
    return float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--sizes", default=f"{N_FAST},{10 * N_FAST}")
    parser.add_argument("--cold", action="store_true", help="also time a cold Numba compile")
    args = parser.parse_args()

    print(f"import privad.noise (fresh process, Numba not loaded): {_import_seconds():.3f} s")
    warm = _first_call_seconds(None)
    print(f"first laplace call, fresh process, warm disk cache: {warm:.2f} s")
    if args.cold:
        with tempfile.TemporaryDirectory() as tmp:
            cold = _first_call_seconds(tmp)
        print(f"first laplace call, fresh process, EMPTY cache:     {cold:.2f} s")

    rng = noise.Randomness(2024)
    gen = np.random.Generator(np.random.PCG64DXSM(2024))
    noise.laplace(np.zeros(100), SCALE, rng)  # load kernels
    rows = []
    ratios = []
    threads = numba.get_num_threads()
    for n in [int(v) for v in args.sizes.split(",")]:
        x = np.linspace(-1000.0, 1000.0, n)
        ours_t, one_t, base_t = [], [], []
        for _ in range(args.repeats):  # alternate, so all see the same load
            ours_t.append(_time(lambda: noise.laplace(x, SCALE, rng), n, 1)[0])  # noqa: B023
            numba.set_num_threads(1)
            one_t.append(_time(lambda: noise.laplace(x, SCALE, rng), n, 1)[0])  # noqa: B023
            numba.set_num_threads(threads)
            base_t.append(_time(lambda: x + gen.laplace(0.0, SCALE, n), n, 1)[0])  # noqa: B023
        ours = (min(ours_t), statistics.median(ours_t))
        one = (min(one_t), statistics.median(one_t))
        base = (min(base_t), statistics.median(base_t))
        rows += [
            (f"privad.noise.laplace, {threads} threads", n, ours),
            ("privad.noise.laplace, 1 thread", n, one),
            ("numpy Generator.laplace (x + noise, unsafe)", n, base),
        ]
        ratios.append((n, f"{threads} threads", ours[1] / base[1]))
        ratios.append((n, "1 thread", one[1] / base[1]))
    x = np.linspace(-1000.0, 1000.0, N_FAST)
    dlap = _time(lambda: noise.discrete_laplace(3, 2, N_FAST, rng), N_FAST, args.repeats)
    bern = _time(lambda: noise.bernoulli(0.3, rng, size=N_FAST), N_FAST, args.repeats)
    bexp = _time(lambda: noise.bernoulli_exp(2.5, rng, size=N_FAST), N_FAST, args.repeats)

    ours = rows[0][2]
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        meas = dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)),
            dp.l1_distance(T=float),
            scale=SCALE,
        )
        xs = x[:N_OPENDP].tolist()
        meas(xs[:10])
        theirs = _time(lambda: meas(xs), N_OPENDP, max(2, args.repeats // 3))
        rows.append(("opendp make_laplace (float vector)", N_OPENDP, theirs))
    except ImportError:
        theirs = None
        print("opendp not installed: skipped")

    print(f"\n{'sampler':48s} {'n':>9s} {'best ns/value':>14s} {'median':>9s}")
    for name, n, (best, med) in rows:
        print(f"{name:48s} {n:9d} {best:14.1f} {med:9.1f}")
    for n, how, ratio in ratios:
        print(f"privad ({how}) / numpy at n = {n:,} (medians of {args.repeats}): {ratio:.2f}x")
    if theirs is not None:
        print(f"opendp / privad (best, n = 10**6): {theirs[0] / ours[0]:.0f}x")
    print("\nother exact samplers (best / median ns per value, n = 10**6):")
    print(f"  discrete_laplace(3/2)   {dlap[0]:7.1f} {dlap[1]:7.1f}")
    print(f"  bernoulli(0.3)          {bern[0]:7.1f} {bern[1]:7.1f}")
    print(f"  bernoulli_exp(2.5)      {bexp[0]:7.1f} {bexp[1]:7.1f}")


if __name__ == "__main__":
    main()
