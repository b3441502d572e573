"""Compile (or load from Numba's cache) every kernel privad's jobs use, ahead of a job.

A kernel is compiled the first time a process calls it with a new type signature, and
written to Numba's on-disk cache (``cache=True``), so later processes load it. A process
that must not compile on its request path (a server before it listens, a test session
before it starts subprocesses) calls :func:`compile_kernels` once: it runs each code path
of the geometry and noise kernels on a tiny deterministic input, above the size at which
the NumPy/plain-Python twins would take it, and returns the seconds it took.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["compile_kernels"]


def _points(n: int, d: int) -> np.ndarray:
    """A deterministic ``(n, d)`` cloud with duplicates (no randomness needed)."""
    i = np.arange(n, dtype=np.float64)[:, None]
    j = np.arange(1, d + 1, dtype=np.float64)[None, :]
    return np.round(np.sin(i * j * 0.7) * 10.0) / 4.0


def compile_kernels() -> float:
    """Run every Numba kernel once so that a later job neither compiles nor waits.

    Covers the dual-tree ball counts (symmetric and capped cross traversals, serial and
    parallel, query points), the box counts of Claim 5's search, the k-th neighbour
    distances, and the exact samplers of :mod:`privad.noise` (the compiled kernels, serial
    and in parallel chunks). The results are discarded; the kernels' outputs never depend
    on having been warmed.

    Returns
    -------
    float
        Seconds spent: a second or two when the kernels are in Numba's cache, about
        2.5 minutes on an idle 2-core machine when every kernel must be compiled (measured:
        148 s; splitting the work between two processes saved nothing, since the serial
        and parallel traversals compile the same inlined leaf kernels).

    Examples
    --------
    >>> from privad.geometry.warmup import compile_kernels
    >>> compile_kernels() >= 0.0
    True
    """
    from privad.geometry import ball_counts, kth_neighbour_distance
    from privad.geometry.depth import box_counts
    from privad.geometry.dualtree import count_cross_trees, count_self_tree
    from privad.geometry.kdtree import build_tree
    from privad.geometry.kernels import PARALLEL_MIN_POINTS
    from privad.noise import (
        Randomness,
        bernoulli,
        bernoulli_exp,
        bernoulli_exp_times,
        bernoulli_log,
        bernoulli_logistic,
        discrete_laplace,
        laplace,
    )
    from privad.noise._engine import PARALLEL_MIN, PYTHON_SAMPLES

    start = time.perf_counter()
    for n in (300, PARALLEL_MIN_POINTS):  # serial and parallel traversals
        X = _points(n, 3)
        tree = build_tree(X)
        count_self_tree(tree, 1.0, "euclidean")
        count_cross_trees(tree, tree, 1.0, "euclidean", 5)
        count_cross_trees(tree, tree, 1.0, "euclidean", None)
        ball_counts(X, 1.0, engine="numba", cap=5)
        ball_counts(X, 1.0, queries=X[:50] + 0.5, engine="numba")
        kth_neighbour_distance(X, 5)
        box_counts(tree, X[:4], X[:4] + 0.5, 1.0, "euclidean")
    rng = Randomness(0)
    m = PYTHON_SAMPLES + 1  # above the plain-Python twins' share
    for size in (m, PARALLEL_MIN):
        laplace(np.zeros(size), 1.0, rng)
        discrete_laplace(3, 1, size, rng)
    bernoulli(np.full(m, 0.3), rng)
    bernoulli_exp(np.full(m, 0.3), rng)
    bernoulli_log(np.full(m, -2.0), rng)
    bernoulli_exp_times(np.full(m, 3, np.int64), np.full(m, 0.2), rng)
    bernoulli_logistic(np.full(m, 0.3), rng)
    return time.perf_counter() - start
