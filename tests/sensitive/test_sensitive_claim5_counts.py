"""claim5_bound against brute force, and with already computed ball counts at r (same bound,
checked input)."""

from __future__ import annotations

import numpy as np
import pytest

from privad.datasets import load
from privad.errors import ParameterError
from privad.geometry import ball_counts
from privad.geometry.depth import box_counts_brute, depth_bound, root_box
from privad.geometry.predicate import pair_values, threshold
from privad.sensitive.accounting import (
    GIVE_UP,
    claim5_bound,
    claim5_radius,
    seeds,
)


def test_reused_counts_give_the_same_bound():
    rng = np.random.default_rng(20240607)
    Q = np.round(rng.normal(size=(400, 3)), 1)
    for metric in ("euclidean", "manhattan", "chebyshev"):
        counts = ball_counts(Q, 0.4, metric=metric)
        bound = claim5_bound(Q, 0.4, metric=metric, ball_counts_at_r=counts)
        assert bound == claim5_bound(Q, 0.4, metric=metric)
        assert bound.lower == int(counts.max())
        assert bound.upper <= int(ball_counts(Q, claim5_radius(0.4), metric=metric).max())


@pytest.mark.parametrize(
    "counts", [np.ones(3, np.int64), np.ones(4), np.zeros(4, np.int64), np.full(4, 5)]
)
def test_bad_counts_raise(counts):
    Q = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ParameterError, match="ball_counts_at_r"):
        claim5_bound(Q, 0.5, ball_counts_at_r=counts)


def _brute_max(Q: np.ndarray, radius: float, metric: str) -> int:
    """max_t #{s : v(t, s) <= threshold(radius)} from every pair value (canonical predicate)."""
    return int((pair_values(Q, Q, metric) <= threshold(radius, metric)).sum(axis=1).max())


def _brute_upper(Q: np.ndarray, r: float, metric: str, lower: int) -> int:
    """Claim 5's upper bound with every count taken from all the pair values and box gaps
    (no tree): the seeds' 2r counts, the box search, the 2r maximum."""
    pairs_2r = pair_values(Q, Q, metric) <= threshold(claim5_radius(r), metric)
    by_r = (pair_values(Q, Q, metric) <= threshold(r, metric)).sum(axis=1)
    seeds_2r = int(pairs_2r[seeds(by_r)].sum(axis=1).max())
    search = depth_bound(
        lambda los, his: box_counts_brute(Q, los, his, r, metric),
        root_box(Q.min(axis=0), Q.max(axis=0), r),
        lower,
        give_up=GIVE_UP * seeds_2r,
    )
    if search is not None and search <= seeds_2r:  # the search beats the seeds: no 2r pass
        return search
    two_r = int(pairs_2r.sum(axis=1).max())
    return two_r if search is None else min(search, two_r)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
def test_bound_equals_brute_force_on_small_random_inputs(metric):
    """Both bounds, bit for bit, against every pair and every box gap on 100 inputs per
    metric: lattice points (ties at r and at 2r, duplicates), d = 1..4, radii taken from the
    pair distances. The upper bound is min(search, 2r maximum), never above the latter."""
    rng = np.random.default_rng(20261128)
    for _ in range(100):
        n = int(rng.integers(1, 41))
        d = int(rng.integers(1, 5))
        Q = rng.integers(-3, 4, size=(n, d)) * 0.5
        Q[rng.random(n) < 0.2] = Q[0]  # duplicates of one record
        radii = np.unique(np.abs(Q[:, None, :] - Q[None, :, :]).max(axis=2))
        r = float(rng.choice(np.concatenate([radii, radii / 2, [0.0, 0.3]])))
        bound = claim5_bound(Q, r, metric=metric)
        lower = _brute_max(Q, r, metric)
        two_r = _brute_max(Q, claim5_radius(r), metric)
        assert bound.lower == lower
        assert bound.upper == _brute_upper(Q, r, metric, lower)
        assert lower <= bound.upper <= two_r
        assert bound.m == max(1, min(bound.upper, n))
        given = claim5_bound(Q, r, metric=metric, ball_counts_at_r=ball_counts(Q, r, metric=metric))
        assert given == bound


def test_thyroid_bound_equals_brute_force():
    """Thyroid at r = 0.1, whose m the CLI and release tests take from claim5_bound: lower
    bound 549, 2r bound 1,825, and the upper bound the brute-force box search's (from every
    box gap), tighter than the 2r bound."""
    X = load("thyroid").X
    lower = _brute_max(X, 0.1, "euclidean")
    two_r = _brute_max(X, claim5_radius(0.1), "euclidean")
    assert (lower, two_r) == (549, 1825)
    search = depth_bound(  # every box counted from all its gaps (no tree)
        lambda los, his: box_counts_brute(X, los, his, 0.1, "euclidean"),
        root_box(X.min(axis=0), X.max(axis=0), 0.1),
        lower,
    )
    bound = claim5_bound(X, 0.1)
    assert (bound.lower, bound.upper) == (lower, min(search, two_r))
    assert lower <= bound.m == search < two_r
