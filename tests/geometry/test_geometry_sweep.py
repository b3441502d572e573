"""The sort-and-sweep windows of the dual-tree leaf kernels (privad.geometry.sweep) take the
canonical decision, including for points one ulp either side of the radius on the sweep
feature."""

from __future__ import annotations

import numpy as np
import pytest

from privad.geometry import dualtree
from privad.geometry.kdtree import build_tree, widest_feature
from privad.geometry.predicate import METRICS, metric_code, threshold
from privad.geometry.sweep import upper_end, window


def _terms(x: float, y: np.ndarray, metric: str) -> np.ndarray:
    """Single-feature terms of ``x - y`` as the canonical arithmetic computes them."""
    t = x - y
    return t * t if metric == "euclidean" else np.abs(t)


def _outside(x: float, run: np.ndarray, side: int, thr: float, metric: str) -> np.ndarray:
    """Points of ``run`` outside ``x`` on one side (1: below it, -1: above it)."""
    return (side * (x - run) > 0) & (_terms(x, run, metric) > thr)


def _near_radius(centres: np.ndarray, r: float) -> np.ndarray:
    """``fl(c + r)``, ``fl(c - r)`` and the floats one ulp either side of each."""
    edges = np.concatenate([centres + r, centres - r])
    return np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf)])


@pytest.mark.parametrize("metric", METRICS)
def test_window_keeps_exactly_the_points_whose_single_feature_term_is_within(metric, rng):
    r = 0.3  # inexact in binary: fl(x - fl(x + r)) is not always -r
    thr = threshold(r, metric)
    code = metric_code(metric)
    for _ in range(200):
        lo, hi = np.sort(np.round(rng.uniform(0, 1, 2), 2))
        y = np.sort(np.concatenate([_near_radius(np.array([lo, hi]), r), rng.uniform(-1, 2, 8)]))
        YT = np.vstack([rng.normal(size=y.size), y])  # the sweep feature is feature 1
        s = int(rng.integers(0, y.size))
        e = int(rng.integers(s, y.size + 1))

        run = y[s:e]
        kept = (
            np.flatnonzero(~_outside(lo, run, 1, thr, metric) & ~_outside(hi, run, -1, thr, metric))
            + s
        )
        k0, k1 = window(lo, hi, YT, 1, s, e, thr, code)
        np.testing.assert_array_equal(np.arange(k0, k1), kept)
        for x in (lo, hi):
            above = _outside(x, run, -1, thr, metric)
            first = s + int(np.argmax(above)) if above.any() else e
            assert upper_end(x, YT, 1, s, e, thr, code) == first


def test_leaves_are_sorted_by_their_widest_feature(rng):
    tree = build_tree(rng.standard_t(3, size=(2000, 4)), leaf_size=32)
    for node in np.flatnonzero(tree.left < 0):
        w = widest_feature(tree.lo, tree.hi, node)[0]
        run = tree.points[tree.start[node] : tree.end[node], w]
        assert np.all(np.diff(run) >= 0)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("leaf_size", [4, 16, 64, 512])
def test_points_one_ulp_around_the_radius_on_the_sweep_feature(
    brute_counts, rng, metric, leaf_size
):
    """Pairs whose difference on the widest feature is fl(r), or one ulp more or less, with
    the other features equal or nearly so: every leaf kernel (self pairs, box windows,
    queries, caps) must count them as the brute force does."""
    r = 0.3
    centres = np.round(np.linspace(0.0, 1.0, 41), 3)
    x = np.concatenate([centres, _near_radius(centres, r)])
    other = np.where(rng.random(x.size) < 0.5, 0.0, rng.uniform(0, 1e-3, x.size))
    X = np.column_stack([x, other])
    Q = X[rng.permutation(x.size)[:60]] + np.array([0.0, 1e-3])
    thr = threshold(r, metric)
    expected = brute_counts(X, r, metric=metric)
    expected_q = brute_counts(X, r, queries=Q, metric=metric)
    for strategy in ["sym", "cross"]:
        for cap in [None, 3, 25]:
            want = expected if cap is None else np.minimum(expected, cap)
            got = dualtree.count_self(X, thr, metric, cap, leaf_size=leaf_size, strategy=strategy)
            np.testing.assert_array_equal(got, want)
    for cap in [None, 4]:
        want = expected_q if cap is None else np.minimum(expected_q, cap)
        got = dualtree.count_queries(X, Q, thr, metric, cap, leaf_size=leaf_size)
        np.testing.assert_array_equal(got, want)
