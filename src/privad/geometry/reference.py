"""The ``"scipy"`` reference engine: :class:`scipy.spatial.cKDTree`, made exact.

cKDTree computes distances with its own arithmetic, so for a pair at (or within rounding of)
distance ``r`` its decision may differ from the canonical predicate of
:mod:`privad.geometry.predicate`. This engine therefore asks cKDTree twice, with radii
slightly below and above ``r`` (relative margin ``1e-8 + 16 d eps`` plus an absolute margin
far above the float64 underflow level). Where both counts agree no pair lies in the band,
and both engines must agree with real arithmetic, so the count is final. For the other
queries the candidates within the larger radius are fetched and re-decided with the
canonical predicate, a bounded number of queries at a time.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from privad.geometry.predicate import pair_values, paired_values

_P = {"euclidean": 2.0, "manhattan": 1.0, "chebyshev": math.inf}
_CANDIDATES_PER_BLOCK = 2_000_000  # pairs re-decided at a time (bounds memory)


def _band(r: float, d: int) -> tuple[float, float]:
    rel = 1e-8 + 16.0 * d * np.finfo(np.float64).eps
    absolute = 1e-150 * math.sqrt(d)
    r_hi = r * (1.0 + rel) + absolute
    r_lo = r * (1.0 - rel) - absolute
    return r_lo, r_hi


def count(
    data: np.ndarray, queries: np.ndarray | None, r: float, thr: float, metric: str, cap: int | None
) -> np.ndarray:
    """Ball counts of ``queries`` (default: the data) with the canonical predicate."""
    q = data if queries is None else queries
    if q.shape[0] == 0:
        return np.zeros(0, np.int64)
    tree = cKDTree(data)
    p = _P[metric]
    r_lo, r_hi = _band(r, data.shape[1])
    hi = np.asarray(
        tree.query_ball_point(q, r_hi, p=p, return_length=True, workers=-1), dtype=np.int64
    )
    if r_lo > 0:
        lo = np.asarray(
            tree.query_ball_point(q, r_lo, p=p, return_length=True, workers=-1), dtype=np.int64
        )
    else:
        lo = np.full_like(hi, -1)
    counts = hi.copy()
    ambiguous = np.flatnonzero(hi != lo)
    k = 0
    while k < ambiguous.shape[0]:
        # take as many queries as fit in the candidate budget (at least one)
        cum = np.cumsum(hi[ambiguous[k:]])
        stop = k + max(1, int(np.searchsorted(cum, _CANDIDATES_PER_BLOCK, side="right")))
        block = ambiguous[k:stop]
        lists = tree.query_ball_point(q[block], r_hi, p=p, workers=-1)
        lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
        if lengths.sum() > 0:
            idx = np.concatenate([np.asarray(x, dtype=np.int64) for x in lists])
            owner = np.repeat(np.arange(block.shape[0]), lengths)
            within = paired_values(q[block][owner], data[idx], metric) <= thr
            counts[block] = np.bincount(owner[within], minlength=block.shape[0])
        else:
            counts[block] = 0
        k = stop
    if cap is not None:
        np.minimum(counts, cap, out=counts)
    return counts


def count_brute(
    data: np.ndarray,
    queries: np.ndarray | None,
    thr: float,
    metric: str,
    cap: int | None,
    block: int = 1024,
) -> np.ndarray:
    """Brute-force counts with the canonical predicate, O(n m) time, O(block n) memory."""
    q = data if queries is None else queries
    out = np.empty(q.shape[0], np.int64)
    for s in range(0, q.shape[0], block):
        out[s : s + block] = (pair_values(q[s : s + block], data, metric) <= thr).sum(axis=1)
    if cap is not None:
        np.minimum(out, cap, out=out)
    return out
