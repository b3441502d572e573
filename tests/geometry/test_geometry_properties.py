"""Hypothesis properties of ball counts (small inputs, deterministic database)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privad.geometry import ball_counts, multiplicities
from privad.geometry.predicate import METRICS, SMALL

# Coordinates on a coarse grid (many ties and exact-boundary pairs) or arbitrary floats
# (none so tiny that two of them could be refused as closer than MIN_GAP; see
# test_geometry_validation.py and the exhaustive tests for those).
coords = st.one_of(
    st.integers(-4, 4).map(float),
    st.integers(-40, 40).map(lambda v: v / 10),
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False).filter(
        lambda v: v == 0 or abs(v) > SMALL
    ),
)
datasets = st.integers(1, 4).flatmap(
    lambda d: hnp.arrays(np.float64, st.tuples(st.integers(1, 40), st.just(d)), elements=coords)
)
radii = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), st.floats(0, 50))
common = settings(max_examples=60, deadline=None, database=None, derandomize=True)


@common
@given(datasets, radii, radii, st.sampled_from(METRICS))
def test_counts_are_monotone_in_r(X, r1, r2, metric):
    lo, hi = sorted([r1, r2])
    assert (ball_counts(X, lo, metric=metric) <= ball_counts(X, hi, metric=metric)).all()


@common
@given(datasets, radii, st.sampled_from(METRICS))
def test_self_count_at_least_multiplicity_at_least_one(X, r, metric):
    counts = ball_counts(X, r, metric=metric)
    mult = multiplicities(X)
    assert (counts >= mult).all() and (mult >= 1).all()


@common
@given(datasets, radii, st.sampled_from(METRICS), st.one_of(st.none(), st.integers(1, 10)))
def test_engines_agree_with_brute_force(brute_counts, X, r, metric, cap):
    expected = brute_counts(X, r, metric=metric, cap=cap)
    for engine in ("numba", "scipy"):
        got = ball_counts(X, r, metric=metric, cap=cap, engine=engine)
        np.testing.assert_array_equal(got, expected)
    Q = X[::-1] + 0.5
    expected_q = brute_counts(X, r, queries=Q, metric=metric, cap=cap)
    for engine in ("numba", "scipy"):
        got = ball_counts(X, r, queries=Q, metric=metric, cap=cap, engine=engine)
        np.testing.assert_array_equal(got, expected_q)
