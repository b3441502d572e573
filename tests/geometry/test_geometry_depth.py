"""The box search's bound on the depth of a ball arrangement (privad.geometry.depth)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privad.geometry.depth import box_counts, box_counts_brute, depth_bound, root_box
from privad.geometry.kdtree import build_tree
from privad.geometry.predicate import pair_values, threshold

METRICS = ["euclidean", "manhattan", "chebyshev"]


def _tree_search(Q: np.ndarray, r: float, metric: str, lower: int, **effort) -> int | None:
    tree = build_tree(Q, leaf_size=8)
    return depth_bound(
        lambda lo, hi: box_counts(tree, lo, hi, r, metric),
        root_box(Q.min(axis=0), Q.max(axis=0), r),
        lower,
        **effort,
    )


def _ball_max(Q: np.ndarray, r: float, metric: str) -> int:
    return int((pair_values(Q, Q, metric) <= threshold(r, metric)).sum(axis=1).max())


@pytest.mark.parametrize("metric", METRICS)
def test_box_counts_equal_every_gap(metric):
    """The tree's counts (pruning, whole nodes, leaves) equal the gaps of every point, for
    boxes whose sides fall on lattice values (ties at exactly r), degenerate boxes included."""
    rng = np.random.default_rng(7)
    Q = rng.integers(-6, 7, size=(3000, 3)) * 0.25
    tree = build_tree(Q, leaf_size=16)
    a = rng.integers(-8, 9, size=(200, 3)) * 0.25
    b = a + rng.integers(0, 5, size=(200, 3)) * 0.25
    b[:20] = a[:20]  # points as boxes
    for r in (0.0, 0.5, 1.25):
        got = box_counts(tree, a, b, r, metric)
        assert got.tolist() == box_counts_brute(Q, a, b, r, metric).tolist()


def _exact_depth_chebyshev(Q: np.ndarray, r: float) -> int:
    """max over every x of #{q : max_k |q_k - x_k| <= r}: a deepest x can take, in each
    feature, a value q_k + r (the upper end of the window its points allow)."""
    cands = [np.unique(Q[:, k] + r) for k in range(Q.shape[1])]
    best = 0
    for x in itertools.product(*cands):
        best = max(best, int((np.abs(Q - np.array(x)).max(axis=1) <= r).sum()))
    return best


@pytest.mark.parametrize("metric", METRICS)
def test_bound_is_at_least_the_exact_depth(metric):
    """Against the exact depth where it is computable: one feature (every metric is |x - q|)
    and chebyshev balls (cubes) in 2-3 features; lattice data with ties at r."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        d = 1 if metric != "chebyshev" else int(rng.integers(1, 4))
        n = int(rng.integers(1, 30))
        Q = rng.integers(-4, 5, size=(n, d)) * 0.5
        r = float(rng.choice([0.0, 0.25, 0.5, 1.0, 1.5]))
        exact = _exact_depth_chebyshev(Q, r)  # in 1-D, every metric's ball is this window
        lower = _ball_max(Q, r, metric)
        bound = _tree_search(Q, r, metric, lower)
        assert lower <= exact <= bound


@pytest.mark.parametrize("metric", METRICS)
def test_bound_holds_for_random_centres(metric):
    """No centre anywhere (probed at random, near and between the points) holds more than
    the bound, in 2-5 features."""
    rng = np.random.default_rng(3)
    for d in (2, 3, 5):
        Q = rng.standard_t(3.0, size=(2000, d))
        r = 0.6
        bound = _tree_search(Q, r, metric, _ball_max(Q, r, metric), rounds=8, per_round=8)
        probes = np.concatenate(
            [Q[:500] + rng.normal(scale=0.3, size=(500, d)), rng.uniform(-2, 2, size=(500, d))]
        )
        depth = (pair_values(probes, Q, metric) <= threshold(r, metric)).sum(axis=1)
        assert depth.max() <= bound


def test_search_tightens_with_effort_and_stops_exact():
    """More rounds never loosen the bound here, and a set whose boxes all fall to the lower
    bound returns it exactly (the depth is then known)."""
    rng = np.random.default_rng(5)
    Q = rng.normal(size=(5000, 2))
    lower = _ball_max(Q, 0.2, "euclidean")
    bounds = [_tree_search(Q, 0.2, "euclidean", lower, rounds=k, per_round=8) for k in (1, 8, 64)]
    assert bounds[0] >= bounds[1] >= bounds[2] >= lower
    far = np.array([[0.0], [10.0], [20.0]])
    assert _tree_search(far, 1.0, "euclidean", 1) == 1


def test_a_search_far_behind_gives_up():
    """After a quarter of the rounds, a bound still above ``give_up`` returns None; one at or
    below it finishes with the same value as without ``give_up``."""
    rng = np.random.default_rng(9)
    Q = rng.normal(size=(3000, 4))
    lower = _ball_max(Q, 0.1, "euclidean")
    full = _tree_search(Q, 0.1, "euclidean", lower, rounds=16, per_round=8)
    assert _tree_search(Q, 0.1, "euclidean", lower, rounds=16, per_round=8, give_up=lower) is None
    kept = _tree_search(Q, 0.1, "euclidean", lower, rounds=16, per_round=8, give_up=len(Q))
    assert kept == full


def test_root_box_covers_every_reachable_centre():
    lo, hi = root_box(np.array([0.0, 1e10]), np.array([1.0, 1e10]), 0.0)
    assert lo[0] < 0.0 and hi[0] > 1.0 and lo[1] < 1e10 < hi[1]
    lo, hi = root_box(np.array([0.0]), np.array([1.0]), 2.0)
    assert lo[0] < -4.0 and hi[0] > 5.0
    assert root_box(np.array([0.0]), np.array([1.0]), 1e308) is None
    assert depth_bound(lambda lo, hi: np.zeros(len(lo), int), None, 3) is None
