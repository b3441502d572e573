"""The canonical predicate: one arithmetic in NumPy and in the compiled kernels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from numba import njit

from privad.errors import DataError
from privad.geometry import ENGINES, ball_counts, multiplicities, predicate
from privad.geometry.kernels import box_bounds, points_box_bounds, row_values
from privad.geometry.predicate import (
    METRICS,
    MIN_GAP,
    SMALL,
    check_magnitudes,
    pair_values,
    radius_from_value,
    threshold,
)


@njit
def _compiled_values(X, i, YT, metric):
    buf = np.empty(YT.shape[1])
    row_values(X, i, YT, 0, YT.shape[1], buf, metric)
    return buf


def _wide(rng, n, d):
    """Values over many magnitudes, so that any reordering of the sums would show."""
    return rng.normal(size=(n, d)) * 10.0 ** rng.integers(-8, 8, size=(n, d))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("d", [1, 3, 6, 12, 17])
def test_compiled_pair_values_are_bitwise_the_numpy_ones(rng, metric, d):
    X = _wide(rng, 40, d)
    Y = _wide(rng, 50, d)
    YT = np.ascontiguousarray(Y.T)
    code = predicate.metric_code(metric)
    expected = pair_values(X, Y, metric)
    for i in range(X.shape[0]):
        got = _compiled_values(X, i, YT, code)
        np.testing.assert_array_equal(got.view(np.int64), expected[i].view(np.int64))


@pytest.mark.parametrize("metric", METRICS)
def test_pair_values_are_symmetric_and_zero_on_the_diagonal(rng, metric):
    X = _wide(rng, 30, 5)
    V = pair_values(X, X, metric)
    np.testing.assert_array_equal(V, V.T)
    assert (np.diag(V) == 0).all()
    np.testing.assert_array_equal(predicate.paired_values(X, X[::-1], metric), np.diag(V[:, ::-1]))


@pytest.mark.parametrize("metric", METRICS)
def test_box_bounds_bracket_every_computed_pair_value(rng, metric):
    code = predicate.metric_code(metric)
    for _ in range(30):
        d = int(rng.integers(1, 7))
        A = np.round(rng.normal(size=(int(rng.integers(1, 9)), d)), 1)
        B = np.round(rng.normal(size=(int(rng.integers(1, 9)), d)) + rng.normal(), 1)
        lo = np.stack([A.min(0), B.min(0)])
        hi = np.stack([A.max(0), B.max(0)])
        mn, mx = box_bounds(lo, hi, 0, lo, hi, 1, code)
        V = pair_values(A, B, metric)
        assert mn <= V.min() and V.max() <= mx
        out_min = np.empty(A.shape[0])
        out_max = np.empty(A.shape[0])
        points_box_bounds(
            np.ascontiguousarray(A.T), 0, A.shape[0], lo[1], hi[1], code, out_min, out_max
        )
        assert (out_min <= V.min(axis=1)).all() and (V.max(axis=1) <= out_max).all()


def test_threshold_is_r_squared_for_euclidean_only():
    assert threshold(1.5, "euclidean") == 2.25
    assert threshold(1.5, "manhattan") == 1.5
    assert threshold(1.5, "chebyshev") == 1.5
    assert threshold(2.0**600, "euclidean") == np.inf


@pytest.mark.parametrize("metric", METRICS)
def test_radius_from_value_is_the_smallest_admitting_radius(rng, metric):
    values = np.concatenate([[0.0, 1.0, 2.0, 3.0, 5e-324], np.abs(_wide(rng, 500, 1)[:, 0])])
    r = radius_from_value(values, metric)
    thr = np.array([threshold(x, metric) for x in r])
    below = np.array([threshold(x, metric) for x in np.nextafter(r, 0.0)])
    assert (values <= thr).all()
    assert ((values > below) | (r == 0)).all()


# Values around every magnitude limit: subnormals, gaps below/at 2**-511, the SMALL edge,
# and values whose squares approach overflow.
EXTREME = [
    0.0,
    5e-324,
    -5e-324,
    1e-160,
    -1e-160,
    -(2.0**-512),
    2.0**-512,
    MIN_GAP,
    SMALL,
    np.nextafter(SMALL, 0.0),
    1e-150,
    1.0,
    1e150,
    np.nextafter(1e150, np.inf),
]


def _extreme_pairs() -> list[np.ndarray]:
    """Every pair of 1-D records from EXTREME and of 2-D records from part of it."""
    one = [np.array([[a], [b]]) for a, b in itertools.combinations(EXTREME, 2)]
    rows = list(itertools.product(EXTREME[::2], repeat=2))
    two = [np.array([a, b]) for a, b in itertools.combinations(rows, 2)]
    return one + two


@pytest.mark.parametrize("metric", METRICS)
def test_r0_means_duplicates_only_or_the_input_is_refused(metric):
    """Refused exactly when some feature has two distinct values closer than 2**-511
    (euclidean only); otherwise r = 0, and for euclidean any r with subnormal r*r, admits
    exactly the duplicates, and nonzero squared distances are normal floats."""
    refused = 0
    for A in _extreme_pairs():
        gaps = np.abs(A[0] - A[1])
        if metric == "euclidean" and ((gaps > 0) & (gaps < MIN_GAP)).any():
            with pytest.raises(DataError, match="closer than 2"):
                check_magnitudes([A], metric)
            refused += 1
            continue
        check_magnitudes([A], metric)
        v = pair_values(A[:1], A[1:], metric)[0, 0]
        same = bool((A[0] == A[1]).all())
        assert (v <= threshold(0.0, metric)) == same
        np.testing.assert_array_equal(ball_counts(A, 0.0, metric=metric), multiplicities(A))
        if metric == "euclidean":
            assert v == 0.0 or v >= 2.0**-1022
            assert (v <= threshold(1e-170, metric)) == same
    assert (refused > 0) == (metric == "euclidean")


def test_the_gap_limit_is_exactly_2_to_the_minus_511():
    assert ball_counts([[0.0], [MIN_GAP]], 0.0).tolist() == [1, 1]
    assert ball_counts([[-(2.0**-512)], [2.0**-512]], 0.0).tolist() == [1, 1]
    assert ball_counts([[SMALL], [np.nextafter(SMALL, np.inf)]], 0.0).tolist() == [1, 1]
    for bad in ([[0.0], [np.nextafter(MIN_GAP, 0.0)]], [[SMALL], [np.nextafter(SMALL, 0.0)]]):
        with pytest.raises(DataError, match=r"feature 0 has the distinct values"):
            ball_counts(bad, 0.0)
    with pytest.raises(DataError, match="data and queries together"):  # across the two
        ball_counts([[0.0, 1.0]], 0.0, queries=[[1e-160, 1.0]])
    assert ball_counts([[0.0]], 0.0, queries=[[1e-160]], metric="manhattan").tolist() == [0]


@pytest.mark.parametrize("scale", [2.0**-511, 1e-150, 1e150])
@pytest.mark.parametrize("metric", METRICS)
def test_engines_agree_at_extreme_scales(lattice, brute_counts, scale, metric):
    X = lattice(4, 3) * scale
    Q = (2.0 * lattice(3, 3) - 1.0) * scale  # odd: between and beyond the data
    for r in (0.0, scale, 1.5 * scale):
        expected = brute_counts(X, r, queries=Q, metric=metric)
        for engine in ENGINES:
            got = ball_counts(X, r, queries=Q, metric=metric, engine=engine)
            np.testing.assert_array_equal(got, expected)
