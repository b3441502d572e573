"""The Dask engine equals the single-machine engine exactly, and never holds the whole data.

Most comparisons run on Dask's synchronous scheduler (the graph is the same, and it is
fast); the tests marked with the ``client`` fixture run on an in-process LocalCluster
(threads: Numba's OpenMP layer is not fork-safe), as CI would.
"""

from __future__ import annotations

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from privad.errors import DataError, ParameterError, PrivadError
from privad.geometry import ENGINES, ball_counts, multiplicities
from privad.geometry.distributed import (
    ball_counts_dask,
    multiplicities_dask,
    plan_ball_counts,
    shared_summaries,
)
from privad.geometry.predicate import METRICS, pair_values, threshold

UNEVEN = (1, 500, 3, 0, 96)  # 600 rows: tiny, large, empty partitions


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture
def sync():
    with dask.config.set(scheduler="synchronous"):
        yield


def _datasets(rng):
    centres = rng.normal(scale=4.0, size=(5, 3))
    clustered = centres[rng.integers(0, 5, 600)] + rng.normal(scale=0.3, size=(600, 3))
    dup = np.repeat(np.round(rng.normal(size=(40, 3)), 1), rng.integers(1, 30, 40), axis=0)[:600]
    dup[:, 0] = np.round(dup[:, 0])  # few distinct values in every candidate split feature
    return {
        "normal": rng.normal(size=(600, 3)),
        "clustered": clustered,
        "duplicates": np.resize(dup, (600, 3)),
    }


def _chunked(X, chunks=UNEVEN):
    return da.from_array(X, chunks=(chunks, X.shape[1]))


@pytest.mark.parametrize("metric", METRICS)
def test_self_and_query_counts_equal_the_numba_engine(rng, sync, metric):
    for name, X in _datasets(rng).items():
        Q = np.concatenate([rng.uniform(X.min(0) - 1, X.max(0) + 1, size=(150, 3)), X[:30]])
        Qd = da.from_array(Q, chunks=((0, 60, 1, 119), 3))
        for r in [0.0, 0.2, 0.7, 3.0, 1e3]:
            for cap in [None, 4]:
                want = ball_counts(X, r, metric=metric, cap=cap, engine="numba")
                got = ball_counts_dask(_chunked(X), r, metric=metric, cap=cap)
                assert got.dtype == np.int64 and got.chunks == (UNEVEN,)
                np.testing.assert_array_equal(got.compute(), want, err_msg=f"{name} r={r}")
                want_q = ball_counts(X, r, queries=Q, metric=metric, cap=cap, engine="numba")
                got_q = ball_counts_dask(_chunked(X), r, queries=Qd, metric=metric, cap=cap)
                assert got_q.chunks == Qd.chunks[:1]
                np.testing.assert_array_equal(got_q.compute(), want_q, err_msg=f"{name} r={r} q")


def test_cell_counts_and_partitions_do_not_change_the_result(rng, sync):
    X = rng.standard_t(3, size=(800, 4))
    want = ball_counts(X, 0.6)
    for k in [1, 2, 3, 7, 16, 50]:
        np.testing.assert_array_equal(ball_counts_dask(X, 0.6, partitions=k).compute(), want)
        plan = plan_ball_counts(_chunked(X[:600]), 0.6, partitions=k)
        assert plan.n_cells == k


@pytest.mark.parametrize(
    ("metric", "r"), [("euclidean", 5.0), ("manhattan", 5.0), ("chebyshev", 2.5)]
)
def test_points_exactly_at_distance_r_across_cell_borders(sync, lattice, metric, r):
    """Integer and half-integer coordinates: d == r holds exactly in float64 (3-4-5 too)."""
    X = lattice(24, 2) * (0.5 if metric == "chebyshev" else 1.0)
    plan = plan_ball_counts(X, r, metric=metric, partitions=9)
    assert plan.n_cells == 9
    v = pair_values(X, X, metric)
    cell = plan.cells_of(X)
    at_r = v == threshold(r, metric)
    crossing = at_r & (cell[:, None] != cell[None, :])
    assert crossing.sum() > 100  # many pairs at exactly r straddle a cell border
    want = (v <= threshold(r, metric)).sum(axis=1)
    np.testing.assert_array_equal(plan.counts().compute(), want)
    np.testing.assert_array_equal(ball_counts(X, r, metric=metric), want)
    # just below r those pairs are lost, on both engines
    below = np.nextafter(r, 0.0)
    np.testing.assert_array_equal(
        ball_counts_dask(X, below, metric=metric, partitions=9).compute(),
        want - at_r.sum(axis=1),
    )


def test_on_a_local_cluster_with_uneven_and_empty_partitions(rng, client, lattice):
    X = np.concatenate([rng.normal(size=(560, 2)), lattice(7, 2)[:40]])
    Q = rng.normal(size=(90, 2))
    for metric in METRICS:
        for r in [0.0, 1.0]:
            want = ball_counts(X, r, metric=metric, cap=None)
            np.testing.assert_array_equal(ball_counts(_chunked(X), r, metric=metric), want)
            got = ball_counts(
                X,
                r,
                queries=da.from_array(Q, chunks=((45, 0, 45), 2)),
                metric=metric,
                cap=3,
                engine="dask",
            )
            np.testing.assert_array_equal(got, ball_counts(X, r, queries=Q, metric=metric, cap=3))
    np.testing.assert_array_equal(ball_counts(X, 0.5, engine="dask"), ball_counts(X, 0.5))
    persisted = client.persist(_chunked(X))  # partitions already held by the workers
    np.testing.assert_array_equal(ball_counts(persisted, 0.5), ball_counts(X, 0.5))


def test_dataframe_with_unknown_partition_lengths(rng, client, tmp_path):
    X = np.round(rng.normal(size=(700, 3)), 1)
    pdf = pd.DataFrame(X, columns=["a", "b", "c"])
    ddf = client.persist(dd.from_pandas(pdf, npartitions=6))
    kept = ddf[ddf.a > -0.5]  # NaN chunk lengths, some partitions possibly empty
    Xk = X[X[:, 0] > -0.5]
    got = ball_counts_dask(kept, 0.4)
    assert got.chunks[0] and not any(np.isnan(got.chunks[0]))
    np.testing.assert_array_equal(got.compute(), ball_counts(Xk, 0.4))
    np.testing.assert_array_equal(multiplicities(kept), multiplicities(Xk))
    # a folder of Parquet partitions, one of them empty
    for i, part in enumerate(np.array_split(np.arange(700), 4)):
        pdf.iloc[part].to_parquet(tmp_path / f"part-{i}.parquet")
    pdf.iloc[:0].to_parquet(tmp_path / "part-9.parquet")
    folder = dd.read_parquet(str(tmp_path))
    np.testing.assert_array_equal(
        ball_counts(folder, 0.4, queries=kept, cap=6), ball_counts(X, 0.4, queries=Xk, cap=6)
    )


def test_radius_zero_gives_the_multiplicities(rng, sync):
    X = np.repeat(rng.integers(0, 4, size=(70, 2)).astype(float), 4, axis=0)[:280]
    X[::5] *= -1.0  # signed zeros
    Xd = _chunked(X, (1, 200, 0, 79))
    want = multiplicities(X)
    np.testing.assert_array_equal(ball_counts_dask(Xd, 0.0).compute(), want)
    np.testing.assert_array_equal(multiplicities_dask(Xd).compute(), want)
    np.testing.assert_array_equal(multiplicities(Xd), want)
    np.testing.assert_array_equal(multiplicities(X, engine="dask"), want)
    np.testing.assert_array_equal(multiplicities(X, engine="numba"), want)  # in memory
    Q = np.concatenate([X[:10], X[:10] + 0.5, -X[:5]])
    want_q = multiplicities(X, queries=Q)
    got_q = multiplicities_dask(Xd, queries=_chunked(Q, (0, 25)), partitions=3)
    assert got_q.chunks == ((0, 25),)
    np.testing.assert_array_equal(got_q.compute(), want_q)
    np.testing.assert_array_equal(ball_counts(Xd, 0, queries=Q), want_q)


def test_empty_queries_and_tiny_inputs(sync):
    X = da.from_array(np.array([[0.0], [1.0], [3.0]]), chunks=((2, 1), 1))
    empty = ball_counts_dask(X, 1.0, queries=da.zeros((0, 1), chunks=((0, 0), 1)))
    assert empty.chunks == ((0, 0),) and empty.compute().shape == (0,)
    assert ball_counts(X, 1.0).tolist() == [2, 2, 1]
    assert ball_counts(X, 1.0, cap=1).tolist() == [1, 1, 1]
    assert ball_counts_dask(np.array([[1.0, 2.0]]), 0.0).compute().tolist() == [1]
    assert ball_counts(X, 5.0, queries=np.zeros((0, 1))).shape == (0,)


def test_no_task_holds_the_whole_data(rng, sync):
    n = 20_000
    X = rng.uniform(size=(n, 3))
    plan = plan_ball_counts(_chunked(X, (2500,) * 8), 0.02)
    rows = plan.task_rows()
    assert plan.n_cells == 8 and rows[:, 0].sum() == n
    assert rows.sum(axis=1).max() <= n / 3  # ~ 1/8 of the data plus its halo
    # half the records are equal: their cell cannot be split and is cut into blocks
    Y = np.concatenate([X[: n // 2], np.full((n // 2, 3), 0.5)])
    plan = plan_ball_counts(_chunked(Y, (2500,) * 8), 0.02)
    rows = plan.task_rows()
    assert plan.data_layout.blocks.max() > 1 and rows.sum(axis=1).max() <= n / 2
    np.testing.assert_array_equal(plan.counts().compute(), ball_counts(Y, 0.02))
    assert plan_ball_counts(Y, 0.02, partitions=8).task_rows().sum(axis=1).max() <= n / 2
    # a radius beyond the data span: the block-pair scheme; only integers travel
    plan = plan_ball_counts(_chunked(X, (2500,) * 8), 10.0)
    rows = plan.task_rows()
    assert rows.sum(axis=1).max() <= n / 3 and rows[:, 1].sum() == 0
    assert (plan.counts().compute() == n).all()


BAD_DATA = [
    (np.full((4, 2), np.nan), "NaN or infinite"),
    (np.array([[0.0, 1.0], [np.inf, 2.0], [3.0, -np.inf]]), "NaN or infinite"),
    (np.zeros((0, 2)), "at least 1 row"),
    (np.zeros((3, 0)), "at least one column"),
    (np.arange(5.0), "2-D"),
    (np.array([[-1e308, 0.0], [1e308, 0.0]]), "rescale"),
    # 0.0 and 1e-160 in different partitions (chunks 1, 0, 2): squares underflow
    (np.array([[0.0, 1.0], [1e-160, 2.0], [3.0, 4.0]]), "closer than 2"),
]


@pytest.mark.parametrize(("data", "match"), BAD_DATA)
def test_bad_data_raises_the_single_machine_errors(sync, data, match):
    with pytest.raises(DataError, match=match) as single:
        ball_counts(data, 1.0)
    chunks = (
        (data.shape[0],)
        if data.ndim == 1
        else ((1, 0, data.shape[0] - 1) if data.shape[0] else (0,), data.shape[1])
    )
    for wrapped in [da.from_array(data, chunks=chunks), data]:
        with pytest.raises(DataError, match=match) as distributed:
            ball_counts_dask(wrapped, 1.0)
        assert str(distributed.value) == str(single.value)
        if match not in ("rescale", "closer than 2"):  # magnitudes: no distances there
            with pytest.raises(DataError) as mult:
                multiplicities_dask(wrapped)
            assert str(mult.value) == str(single.value)


def test_bad_queries_dataframes_and_parameters(client):
    X = da.from_array(np.arange(12.0).reshape(6, 2), chunks=(4, 2))
    cases = [
        (dict(queries=np.zeros((3, 3))), DataError, "same number of columns"),
        (dict(queries=da.from_array(np.array([[np.nan, 0.0]]))), DataError, "NaN"),
        (dict(queries=da.from_array(np.array([0.0, 1.0]))), DataError, "2-D"),
        (dict(r=-1.0), ParameterError, "r must"),
        (dict(r=np.inf), ParameterError, "r must"),
        (dict(cap=0), ParameterError, "cap must"),
        (dict(metric="cosine"), ParameterError, "metric must be one of"),
    ]
    for kwargs, error, match in cases:
        kwargs = {"r": 1.0, **kwargs}
        with pytest.raises(error, match=match) as single:
            ball_counts(X.compute(), **kwargs)
        with pytest.raises(error, match=match) as distributed:  # raised on the cluster's data
            ball_counts(X, **kwargs)
        assert str(distributed.value) == str(single.value)
        assert isinstance(distributed.value, PrivadError)
    with pytest.raises(ParameterError, match="partitions must"):
        ball_counts_dask(X, 1.0, partitions=0)
    with pytest.raises(ParameterError, match="engine 'numba' needs in-memory"):
        ball_counts(X, 1.0, engine="numba")
    with pytest.raises(ParameterError, match="engine must be one of"):
        multiplicities(X, engine="gpu")
    text = dd.from_pandas(pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]}), npartitions=2)
    with pytest.raises(DataError, match="data must be numeric, could not convert"):
        ball_counts(text, 1.0)
    holes = dd.from_pandas(pd.DataFrame({"a": [1.0, None, 3.0]}), npartitions=2)
    with pytest.raises(DataError, match="data contains 1 NaN"):
        ball_counts(holes, 1.0)


def test_the_engine_is_registered():
    assert "dask" in ENGINES


def test_shared_summaries_run_the_summary_pass_once_per_input(rng, sync, monkeypatch):
    import privad.geometry.dask_inputs as inputs

    X, Q = _chunked(rng.normal(size=(600, 3))), _chunked(rng.normal(size=(600, 3)))
    want = [
        ball_counts_dask(X, 0.4).compute(),
        multiplicities_dask(X).compute(),
        ball_counts_dask(X, 0.8, queries=Q).compute(),
    ]
    calls = []
    real = inputs._summarise
    monkeypatch.setattr(inputs, "_summarise", lambda *a: calls.append(1) or real(*a))
    with shared_summaries() as cache:
        got = [
            ball_counts_dask(X, 0.4).compute(),
            multiplicities_dask(X).compute(),
            ball_counts_dask(X, 0.8, queries=Q).compute(),
        ]
    assert len(cache) == 2 and len(calls) == 2 * len(UNEVEN)  # X once, Q once
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)
    ball_counts_dask(X, 0.4)  # outside the block: a fresh summary pass
    assert len(calls) == 3 * len(UNEVEN)
