"""The ``"numpy"`` engine: exact ball counts from blocks of pair values, nothing compiled.

For small inputs the compiled dual tree costs more to load than to run: a fresh process
imports Numba and loads (or, in a fresh environment, compiles for about 20 s) its kernels,
while the 3,772 x 6 Thyroid data has only 7.1 million distinct pairs. This engine computes
every pair value with NumPy, a block of query rows at a time, with the arithmetic of
:mod:`privad.geometry.predicate` (feature order, one IEEE operation per step, as
:func:`~privad.geometry.predicate.pair_values`), so its counts are identical to the other
engines', also for pairs at distance exactly ``r``. Self counts visit each unordered pair
once (pair values are symmetric bit for bit). Work is O(n m d), so ``ball_counts`` picks it
automatically only below :data:`AUTO_PAIRS` pairs (measured in ``benchmarks/bench_first_run.py``).
"""

from __future__ import annotations

import numpy as np

#: ``engine="auto"`` uses this engine when the pairs to examine (n (n + 1) / 2 for self
#: counts, n m for queries) are at most this many: about 0.1 s of NumPy work, less than a
#: fresh process needs to load the compiled kernels from Numba's cache.
AUTO_PAIRS = 16_000_000

_BLOCK_VALUES = 1 << 17  # pair values per block (1 MiB of float64: stays in cache)


def _values(a: np.ndarray, b: np.ndarray, metric: str, s: np.ndarray, t: np.ndarray) -> None:
    """``s[i, k] = v(a[i], b[k])`` in place (``t``: scratch of the same shape).

    The canonical arithmetic of :func:`privad.geometry.predicate.pair_values` without its
    temporaries; the first feature step starts from ``0.0``, which adds nothing: ``0.0 +
    t * t``, ``0.0 + |t|`` and ``max(0.0, |t|)`` all equal their second operand exactly.
    """
    for j in range(a.shape[1]):
        out = s if j == 0 else t
        np.subtract(a[:, j, None], b[None, :, j], out=out)
        if metric == "euclidean":
            np.multiply(out, out, out=out)
        else:
            np.abs(out, out=out)
        if j > 0:
            if metric == "chebyshev":
                np.maximum(s, t, out=s)
            else:
                np.add(s, t, out=s)


def count_blocked(
    data: np.ndarray, queries: np.ndarray | None, thr: float, metric: str, cap: int | None
) -> np.ndarray:
    """Ball counts (int64) of ``queries`` (``None``: self counts of ``data``) in ``data``:
    the number of records ``j`` with ``v(q, data[j]) <= thr``, at most ``cap``."""
    own = queries is None
    q = data if own else queries
    n, m = data.shape[0], q.shape[0]
    counts = np.zeros(m, dtype=np.int64)
    rows = max(1, _BLOCK_VALUES // n)
    s_buf = np.empty(min(rows, m) * n)
    t_buf = np.empty_like(s_buf)
    for lo in range(0, m, rows):
        hi = min(m, lo + rows)
        first = lo if own else 0  # self counts: records lo, lo + 1, ... (each pair once)
        s = s_buf[: (hi - lo) * (n - first)].reshape(hi - lo, n - first)
        t = t_buf[: s.size].reshape(s.shape)
        _values(q[lo:hi], data[first:], metric, s, t)
        inside = s <= thr
        counts[lo:hi] += np.count_nonzero(inside, axis=1)
        if own:  # the block's pairs with the later records, counted for those records
            counts[hi:] += np.count_nonzero(inside[:, hi - lo :], axis=0)
    if cap is not None:
        np.minimum(counts, cap, out=counts)
    return counts


def pairs(n: int, m: int | None) -> int:
    """The pairs :func:`count_blocked` examines: n (n + 1) / 2 for self counts, else n m."""
    return n * (n + 1) // 2 if m is None else n * m
