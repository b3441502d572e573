"""ball_counts: every engine equals the brute-force canonical oracle, exactly."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privad.geometry import (
    ENGINES,
    BallProblem,
    ball_counts,
    balls,
    dualtree,
    kernels,
    kth_neighbour_distance,
    multiplicities,
)
from privad.geometry.predicate import METRICS, threshold

ENGINE_NAMES = ["auto", "numba", "numpy", "scipy"]


def _datasets(rng, lattice):
    heavy = rng.standard_t(3, size=(600, 4))
    dup = np.repeat(np.round(rng.normal(size=(60, 3)), 1), rng.integers(1, 6, size=60), axis=0)
    return {
        "normal-3d": rng.normal(size=(500, 3)),
        "heavy-4d": heavy,
        "lattice-2d": lattice(12, 2),
        "lattice-3d": lattice(6, 3),
        "tenths-2d": lattice(9, 2) * 0.1,  # 0.1 * k is inexact: boundary by rounding
        "duplicates-3d": dup,
        "line-1d": np.round(rng.normal(size=(300, 1)), 1),
        "wide-12d": rng.normal(size=(300, 12)),
    }


RADII = [0.0, 0.1, 0.3, 1.0, np.sqrt(2.0), 2.0, 3.5]


@pytest.mark.parametrize("metric", METRICS)
def test_self_counts_equal_brute_force_for_every_engine(brute_counts, lattice, rng, metric):
    for name, X in _datasets(rng, lattice).items():
        for r in RADII:
            expected = brute_counts(X, r, metric=metric)
            for engine in ENGINE_NAMES:
                got = ball_counts(X, r, metric=metric, engine=engine)
                assert got.dtype == np.int64
                np.testing.assert_array_equal(got, expected, err_msg=f"{name} r={r} {engine}")


@pytest.mark.parametrize("metric", METRICS)
def test_query_counts_equal_brute_force_for_every_engine(brute_counts, lattice, rng, metric):
    for name, X in _datasets(rng, lattice).items():
        lo, hi = X.min(0), X.max(0)
        Q = np.concatenate([rng.uniform(lo - 1, hi + 1, size=(150, X.shape[1])), X[:20]])
        for r in RADII:
            expected = brute_counts(X, r, queries=Q, metric=metric)
            for engine in ENGINE_NAMES:
                got = ball_counts(X, r, queries=Q, metric=metric, engine=engine)
                np.testing.assert_array_equal(got, expected, err_msg=f"{name} r={r} {engine}")


def test_lattice_boundaries_match_exact_integer_arithmetic(lattice):
    """On an integer lattice the canonical predicate is real arithmetic: check it exactly."""
    X = lattice(7, 3)
    Xi = X.astype(np.int64)
    diff = Xi[:, None, :] - Xi[None, :, :]
    exact = {
        "euclidean": (diff**2).sum(-1),  # compared with r**2
        "manhattan": np.abs(diff).sum(-1),
        "chebyshev": np.abs(diff).max(-1),
    }
    for metric, r in itertools.product(METRICS, [0, 1, 2, 3]):
        bound = r * r if metric == "euclidean" else r
        expected = (exact[metric] <= bound).sum(1)
        for engine in ENGINE_NAMES:
            np.testing.assert_array_equal(
                ball_counts(X, float(r), metric=metric, engine=engine), expected
            )
    # points at exactly distance 1 are inside the closed ball, and just outside a smaller one
    centre = np.array([[3.0, 3.0, 3.0]])
    assert ball_counts(X, 1.0, queries=centre)[0] == 7
    assert ball_counts(X, np.nextafter(1.0, 0.0), queries=centre)[0] == 1


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("leaf_size", [1, 2, 5, 16])
def test_small_leaves_exercise_the_whole_traversal(brute_counts, lattice, rng, metric, leaf_size):
    X = np.concatenate([np.round(rng.normal(size=(250, 3)), 1), lattice(5, 3)])
    Q = rng.uniform(-3, 5, size=(120, 3))
    for r in [0.0, 0.5, 1.0, 2.5, 100.0]:
        thr = threshold(r, metric)
        expected = brute_counts(X, r, metric=metric)
        for strategy in ["sym", "cross"]:
            got = dualtree.count_self(X, thr, metric, None, leaf_size=leaf_size, strategy=strategy)
            np.testing.assert_array_equal(got, expected)
            for cap in [1, 7, 40]:
                got = dualtree.count_self(
                    X, thr, metric, cap, leaf_size=leaf_size, strategy=strategy
                )
                np.testing.assert_array_equal(got, np.minimum(expected, cap))
        expected_q = brute_counts(X, r, queries=Q, metric=metric)
        for cap in [None, 1, 9]:
            got = dualtree.count_queries(X, Q, thr, metric, cap, leaf_size=leaf_size)
            want = expected_q if cap is None else np.minimum(expected_q, cap)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_cap_reports_min_of_true_count_and_cap(brute_counts, rng, engine):
    X = np.concatenate([rng.normal(size=(400, 2)), np.zeros((30, 2))])
    Q = rng.normal(size=(50, 2))
    true = brute_counts(X, 0.5)
    true_q = brute_counts(X, 0.5, queries=Q)
    for cap in [1, 2, 10, 31, 10_000]:
        np.testing.assert_array_equal(
            ball_counts(X, 0.5, cap=cap, engine=engine), np.minimum(true, cap)
        )
        np.testing.assert_array_equal(
            ball_counts(X, 0.5, queries=Q, cap=cap, engine=engine), np.minimum(true_q, cap)
        )


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_radius_zero_gives_the_multiplicities(rng, engine):
    X = np.repeat(rng.integers(0, 3, size=(80, 2)).astype(float), 3, axis=0)
    X[::7] *= -1.0  # signed zeros
    np.testing.assert_array_equal(ball_counts(X, 0.0, engine=engine), multiplicities(X))
    Q = np.concatenate([X[:10], X[:10] + 0.5])
    np.testing.assert_array_equal(
        ball_counts(X, 0, queries=Q, engine=engine), multiplicities(X, queries=Q)
    )


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_tiny_inputs(engine):
    one = np.array([[1.0, 2.0]])
    assert ball_counts(one, 0.0, engine=engine).tolist() == [1]
    assert ball_counts(one, 5.0, queries=[[0.0, 0.0], [9.0, 9.0]], engine=engine).tolist() == [1, 0]
    assert ball_counts(one, 5.0, queries=np.zeros((0, 2)), engine=engine).shape == (0,)
    assert ball_counts([[0.0], [1.0], [3.0]], 1.0, engine=engine).tolist() == [2, 2, 1]
    assert ball_counts([[0.0], [1.0], [3.0]], 1.0, cap=1, engine=engine).tolist() == [1, 1, 1]


def test_huge_radius_counts_everything():
    X = np.array([[-1e150, 0.0], [1e150, 0.0], [0.0, 0.0]])
    assert ball_counts(X, 1e300).tolist() == [3, 3, 3]
    assert ball_counts(X, 1e300, engine="scipy").tolist() == [3, 3, 3]
    assert ball_counts(X, 1.0).tolist() == [1, 1, 1]


def test_large_leaves_at_default_size_match_brute_force(brute_counts, rng):
    """A few thousand heavy-tailed records: the default (large) leaves and the filters."""
    X = rng.standard_t(4, size=(3000, 6)) @ rng.normal(size=(6, 6))
    r = 1.5
    expected = brute_counts(X, r)
    np.testing.assert_array_equal(ball_counts(X, r), expected)
    np.testing.assert_array_equal(ball_counts(X, r, cap=50), np.minimum(expected, 50))
    Q = rng.uniform(X.min(0), X.max(0), size=(500, 6))
    np.testing.assert_array_equal(ball_counts(X, r, queries=Q), brute_counts(X, r, queries=Q))


def test_engines_are_pluggable(monkeypatch):
    seen = {}

    def fake(problem: BallProblem) -> np.ndarray:
        seen["problem"] = problem
        return np.full(problem.data.shape[0], 7)

    monkeypatch.setitem(ENGINES, "fake", fake)
    out = ball_counts([[0.0, 1.0], [2.0, 3.0]], 1.5, engine="fake", cap=3)
    assert out.tolist() == [7, 7] and out.dtype == np.int64
    p = seen["problem"]
    assert p.thr == 2.25 and p.r == 1.5 and p.cap == 3 and p.queries is None
    assert balls.AUTO_ENGINE in ENGINES


def test_parallel_kernels_match_the_serial_ones(brute_counts, lattice, rng, monkeypatch):
    """Force the multi-threaded kernels on small data (they only start at larger sizes)."""
    X = np.concatenate([rng.standard_t(3, size=(1500, 3)), lattice(6, 3)])
    Q = rng.uniform(-4, 4, size=(400, 3))
    r = 0.7
    thr = threshold(r, "euclidean")
    expected = brute_counts(X, r)
    expected_q = brute_counts(X, r, queries=Q)
    kth = kth_neighbour_distance(X, 9)
    monkeypatch.setattr(kernels, "PARALLEL_MIN_POINTS", 0)
    for leaf_size in [8, 64]:
        for strategy in ["sym", "cross"]:
            got = dualtree.count_self(X, thr, "euclidean", None, leaf_size, strategy)
            np.testing.assert_array_equal(got, expected)
            got = dualtree.count_self(X, thr, "euclidean", 5, leaf_size, strategy)
            np.testing.assert_array_equal(got, np.minimum(expected, 5))
        got = dualtree.count_queries(X, Q, thr, "euclidean", None, leaf_size)
        np.testing.assert_array_equal(got, expected_q)
    np.testing.assert_array_equal(kth_neighbour_distance(X, 9), kth)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
def test_ball_index_equals_ball_counts(metric) -> None:
    from privad.geometry import BallIndex

    rng = np.random.default_rng(11)
    X = np.round(rng.normal(size=(700, 3)), 1)  # ties at exactly r
    index = BallIndex(X, metric=metric)
    for m, r, cap in [(1, 0.5, None), (50, 0.3, None), (200, 1.0, 7), (3, 0.0, None)]:
        Q = np.round(rng.normal(size=(m, 3)), 1)
        np.testing.assert_array_equal(
            index.counts(Q, r, cap=cap), ball_counts(X, r, queries=Q, metric=metric, cap=cap)
        )
    from privad.errors import DataError

    with pytest.raises(DataError):
        index.counts(np.zeros((2, 4)), 0.5)


def test_ball_index_scans_the_records_once_and_checks_each_batch_with_them(monkeypatch) -> None:
    """The records' magnitude scan is O(n): a curator must not pay it per request. Each
    batch is still checked together with the records (a gap or a span across both)."""
    from privad.errors import DataError
    from privad.geometry import BallIndex, predicate

    tiny = 2.0**-470  # below 2**-459: legal alone, but a value within 2**-511 of it is not
    X = np.array([[0.0, 1.0], [tiny, 3.0], [1.0, 1.0]])
    Q = np.array([[0.5, 1.0], [1.0, 1.0]])  # by hand: both within 1 of X[0] and X[2] only
    index = BallIndex(X)
    scanned: list[int] = []
    scan = predicate.scan_columns
    monkeypatch.setattr(predicate, "scan_columns", lambda p: scanned.append(p.shape[0]) or scan(p))
    for _ in range(3):
        np.testing.assert_array_equal(index.counts(Q, 1.0), [2, 2])
    np.testing.assert_array_equal(index.around(Q, 1.0), [2, 0, 2])
    assert scanned == [3, 2, 2, 2, 2]  # the records once, then each batch of queries
    with pytest.raises(DataError, match="closer than 2"):
        index.counts(np.array([[tiny * (1 + 2.0**-52), 1.0]]), 1.0)
    with pytest.raises(DataError):
        index.around(np.array([[1e300, 1.0]]), 1.0)  # its span with the records overflows


@pytest.mark.parametrize("metric", METRICS)
def test_numpy_engine_equals_the_dual_tree_on_thyroid(metric):
    """The real data the quick start uses, self and query counts, with and without a cap."""
    from privad.datasets import load_thyroid

    X = load_thyroid().X[:1500]
    Q = X[::7] + 0.003
    for r in (0.02, 0.1):
        for cap in (None, 19):
            np.testing.assert_array_equal(
                ball_counts(X, r, metric=metric, cap=cap, engine="numpy"),
                ball_counts(X, r, metric=metric, cap=cap, engine="numba"),
            )
            np.testing.assert_array_equal(
                ball_counts(X, r, queries=Q, metric=metric, cap=cap, engine="numpy"),
                ball_counts(X, r, queries=Q, metric=metric, cap=cap, engine="numba"),
            )


def test_auto_picks_numpy_for_small_inputs_only(monkeypatch):
    from privad.geometry import blocked

    assert balls.auto_engine(100, None) == "numpy"
    assert balls.auto_engine(100, 5) == "numpy"
    assert balls.auto_engine(5_000, None) == "numpy"  # 12.5 million pairs
    assert balls.auto_engine(6_000, None) == "numba"  # 18 million pairs
    assert balls.auto_engine(5_000, 5_000) == "numba"  # 25 million pairs
    used = []
    monkeypatch.setitem(balls.ENGINES, "numpy", lambda p: used.append("numpy") or [1])
    monkeypatch.setitem(balls.ENGINES, "numba", lambda p: used.append("numba") or [1])
    ball_counts([[0.0]], 1.0)
    monkeypatch.setattr(blocked, "AUTO_PAIRS", 0)
    ball_counts([[0.0]], 1.0)
    assert used == ["numpy", "numba"]
