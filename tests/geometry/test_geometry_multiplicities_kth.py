"""multiplicities (x_i) and kth_neighbour_distance."""

from __future__ import annotations

import numpy as np
import pytest

from privad.geometry import ball_counts, kth_neighbour_distance, multiplicities
from privad.geometry.predicate import METRICS, pair_values, radius_from_value


def test_multiplicities_count_exact_copies():
    X = np.array([[0.0, 1.0], [0.0, 1.0], [-0.0, 1.0], [1.0, 0.0], [0.0, 1.0 + 1e-16 * 2]])
    assert multiplicities(X).tolist() == [3, 3, 3, 1, 1]
    Q = [[0.0, 1.0], [5.0, 5.0], [1.0, -0.0]]
    assert multiplicities(X, queries=Q).tolist() == [3, 0, 1]
    assert multiplicities(X, queries=np.zeros((0, 2))).shape == (0,)
    assert multiplicities([[3]]).tolist() == [1]


def test_multiplicities_match_a_dictionary_count(rng):
    X = rng.integers(0, 3, size=(500, 3)).astype(float)
    counts = {}
    for row in map(tuple, X):
        counts[row] = counts.get(row, 0) + 1
    assert multiplicities(X).tolist() == [counts[tuple(row)] for row in X]


def _oracle_kth(X, k, metric):
    return radius_from_value(np.sort(pair_values(X, X, metric), axis=1)[:, k - 1], metric)


@pytest.mark.parametrize("metric", METRICS)
def test_kth_neighbour_distance_equals_sorted_pair_values(lattice, rng, metric):
    for X in [
        rng.normal(size=(400, 3)),
        lattice(6, 2),
        np.round(rng.normal(size=(200, 1)), 1),
        rng.standard_t(3, size=(300, 7)),
    ]:
        for k in [1, 2, 3, 17, X.shape[0]]:
            got = kth_neighbour_distance(X, k, metric=metric)
            np.testing.assert_array_equal(got, _oracle_kth(X, k, metric))
    assert (kth_neighbour_distance(X, 1, metric=metric) == 0).all()


@pytest.mark.parametrize("metric", METRICS)
def test_kth_distance_and_ball_counts_agree_exactly(lattice, rng, metric):
    """kth(i, k) <= r  <=>  B(i, r) >= k, tested right at and just below each kth value."""
    X = np.concatenate([np.round(rng.normal(size=(300, 2)), 1), lattice(4, 2)])
    for k in [2, 5, 30]:
        kth = kth_neighbour_distance(X, k, metric=metric)
        for i in range(0, X.shape[0], 37):
            at = ball_counts(X, kth[i], queries=X[i : i + 1], metric=metric)[0]
            assert at >= k
            if kth[i] > 0:
                below = np.nextafter(kth[i], 0.0)
                assert ball_counts(X, below, queries=X[i : i + 1], metric=metric)[0] < k


def test_kth_is_the_paper_anomaly_test(rng):
    """i is a (beta, r)-anomaly (B(i, r) <= beta) iff its (beta + 1)-th distance is > r."""
    X = rng.standard_t(3, size=(500, 3))
    beta, r = 10, 0.8
    anomalous = ball_counts(X, r) <= beta
    np.testing.assert_array_equal(anomalous, kth_neighbour_distance(X, beta + 1) > r)


def test_duplicates_are_neighbours_at_distance_zero():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0]])
    assert kth_neighbour_distance(X, 2).tolist() == [0.0, 0.0, 5.0]
    assert kth_neighbour_distance(X, 3).tolist() == [5.0, 5.0, 5.0]
    assert kth_neighbour_distance(X, 2, metric="manhattan").tolist() == [0.0, 0.0, 7.0]
    assert kth_neighbour_distance(X, 2, metric="chebyshev").tolist() == [0.0, 0.0, 4.0]


def _sampled_data(rng):
    """Heavy tails, plus rounded records: duplicates and ties at exactly the k-th value."""
    return np.concatenate(
        [rng.standard_t(3, size=(1400, 3)), np.round(rng.normal(size=(600, 3)), 1)]
    )


@pytest.mark.parametrize("metric", METRICS)
def test_kth_through_the_sample_estimate_equals_sorted_pair_values(rng, metric, monkeypatch):
    """k >= 128 with n >= 8 k: the sampled estimate, the range search and the selection of
    privad.geometry.knn, on one thread and on several."""
    from privad.geometry import kernels, knn

    X = _sampled_data(rng)
    for k in [128, 250]:
        assert knn._stride(X.shape[0], k) > 1  # the sampled path, not the heap search alone
        want = _oracle_kth(X, k, metric)
        np.testing.assert_array_equal(kth_neighbour_distance(X, k, metric=metric), want)
        monkeypatch.setattr(kernels, "PARALLEL_MIN_POINTS", 0)
        np.testing.assert_array_equal(kth_neighbour_distance(X, k, metric=metric), want)
        monkeypatch.undo()


def test_kth_falls_back_when_the_estimate_holds_too_few(rng, monkeypatch):
    """An estimate from the nearest sampled record holds fewer than k records for most
    queries: they take the exact heap search over all records, same values."""
    from privad.geometry import knn

    X = _sampled_data(rng)
    k = 200
    monkeypatch.setattr(knn, "_sample_size", lambda k, s, n: 1)
    np.testing.assert_array_equal(kth_neighbour_distance(X, k), _oracle_kth(X, k, "euclidean"))


def test_kth_collects_overflowing_records_alone(rng, monkeypatch):
    """Rows of the per-leaf buffer hold few values: records whose values overflow them are
    collected again one by one (and fall back when even that holds fewer than k), same
    values."""
    from privad.geometry import knn

    X = _sampled_data(rng)
    k = 200
    want = _oracle_kth(X, k, "euclidean")
    monkeypatch.setattr(knn, "_capacity", lambda n, s, j, leaf_max: leaf_max + 100)
    np.testing.assert_array_equal(kth_neighbour_distance(X, k), want)
    monkeypatch.setattr(knn, "_sample_size", lambda k, s, n: 2)
    np.testing.assert_array_equal(kth_neighbour_distance(X, k), want)


def test_select_returns_the_kth_smallest(rng):
    from privad.geometry import knn

    for m in [1, 2, 7, 100]:
        a = np.round(rng.normal(size=m), 1)  # many equal values
        for k in sorted({1, (m + 1) // 2, m}):
            assert knn._select(a.copy(), m, k) == np.sort(a)[k - 1]


def test_rows_whose_hashes_collide_are_still_told_apart() -> None:
    """Two different rows with the same 64-bit hash (constructed: the second coordinate
    cancels the first's difference) are two classes, not one: the hash only groups."""
    from privad.geometry.multiplicity import equal_rows, row_hash

    def state(value: float) -> int:  # the hash after a row's first coordinate
        return int(row_hash(np.array([[value]]).view(np.uint64))[0])

    a, b = 1.0, 3.0
    for a2 in np.arange(2.0, 200.0):  # the first a2 whose colliding partner b2 is finite
        word = state(a) ^ state(float(a2)) ^ int(np.float64(b).view(np.uint64))
        b2 = float(np.uint64(word).view(np.float64))
        if np.isfinite(b2):
            break
    rows = np.array([[a, b], [a2, b2], [a, b]])
    h = row_hash(rows.view(np.uint64))
    assert h[0] == h[1] and rows[0].tolist() != rows[1].tolist()  # the hashes do collide
    inverse, counts = equal_rows(rows)
    assert counts[inverse].tolist() == [2, 1, 2]
    assert multiplicities(rows).tolist() == [2, 1, 2]
