"""``SensitiveAnomalyIdentifier(engine="dask")`` gives exactly the single-machine results.

On an in-process LocalCluster (two single-threaded workers): the same counts (x_i, B), the
same noisy labels with a fixed seed, the same error probabilities and the same Claim 5
guarantee as ``engine="numba"``, for uneven and empty partitions and for records exactly at
distance r from each other in different partitions.
"""

from __future__ import annotations

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from privad.accounting import Ledger
from privad.distributed import dask_client
from privad.errors import DataError, ParameterError
from privad.sensitive import SensitiveAnomalyIdentifier


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2, processes=False) as c:
        yield c


def _pair(X, chunks, **params):
    """(numba estimator, dask estimator) fitted on the same records with the same seed."""
    params = {"beta": 4, "r": 2.0, "epsilon": 0.5, "rng": 11, **params}
    local = SensitiveAnomalyIdentifier(engine="numba", **params).fit(X)
    dist = SensitiveAnomalyIdentifier(engine="dask", **params).fit(
        da.from_array(X, chunks=(chunks, X.shape[1]))
    )
    return local, dist


def _assert_same(local, dist, Q=None) -> None:
    a, b = local.statistics(Q), dist.statistics(Q)
    np.testing.assert_array_equal(a.ball, b.ball)
    np.testing.assert_array_equal(a.x_i, b.x_i)
    np.testing.assert_array_equal(a.capped, b.capped)
    np.testing.assert_array_equal(local.true_labels(Q), dist.true_labels(Q))
    np.testing.assert_array_equal(local.log_error_probability(Q), dist.log_error_probability(Q))
    np.testing.assert_array_equal(local.error_probability(Q), dist.error_probability(Q))
    np.testing.assert_array_equal(local.predict(Q), dist.predict(Q))
    np.testing.assert_array_equal(local.predict(Q), dist.predict(Q))  # the streams stay equal


@pytest.fixture(scope="module")
def grid_data() -> np.ndarray:
    """Integer records with duplicates: many pairs exactly at distance r = 2, 3, 5."""
    rng = np.random.default_rng(20260801)
    return rng.integers(0, 12, size=(400, 3)).astype(np.float64)


@pytest.mark.parametrize(
    ("chunks", "params"),
    [
        ((400,), {}),
        ((7, 0, 250, 0, 0, 143), {}),  # uneven, empty partitions
        ((100, 100, 100, 100), {"mechanism": "dp", "metric": "manhattan", "r": 3.0}),
        ((1, 399), {"mechanism": "compiled", "metric": "chebyshev", "k": 2}),
        ((150, 0, 250), {"count_cap": "auto", "beta": 3}),
        ((200, 200), {"r": 5.0, "beta": 30, "count_cap": 32}),
    ],
)
def test_dask_engine_equals_numba(client, grid_data, chunks, params) -> None:
    local, dist = _pair(grid_data, chunks, **params)
    _assert_same(local, dist)
    assert local.guarantee() == dist.guarantee()
    assert local.claim5_bound() == dist.claim5_bound()


def test_points_exactly_at_r_across_partition_borders(client) -> None:
    # 3-4-5 triangles and unit steps: distances exactly 5 (euclidean, r*r = 25 exactly),
    # each pair split between two partitions of sizes 1, 2, 1, ...
    base = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0], [3.0, 0.0], [0.0, 4.0], [3.0, 4.0]])
    X = np.concatenate([base + 100.0 * i for i in range(6)])
    chunks = (1, 2, 1, 0, 5, 3, 7, 4, 0, 3, 2, 2, 6)
    local, dist = _pair(X, chunks, beta=2, r=5.0)
    _assert_same(local, dist)
    assert dist.statistics().ball[:6].tolist() == [5, 6, 3, 5, 5, 6]  # counted at exactly r
    # just below r, the pairs at distance 5 drop out, in both engines
    local, dist = _pair(X, chunks, beta=2, r=np.nextafter(5.0, 0.0))
    _assert_same(local, dist)
    assert dist.statistics().ball[:6].tolist() == [3, 4, 1, 4, 4, 4]


def test_queries_footnote_variant_and_dataframes(client, grid_data) -> None:
    local, dist = _pair(grid_data, (50, 0, 350), add_query_to_data=True)
    Q = np.vstack([grid_data[:30] + 0.5, grid_data[30:40]])
    _assert_same(local, dist, Q)
    _assert_same(local, dist, da.from_array(Q, chunks=((0, 25, 15), 3)))
    assert local.guarantee(Q) == dist.guarantee(Q)
    assert dist.predict(np.zeros((0, 3))).shape == (0,)
    # a Dask DataFrame (e.g. Parquet partitions) as the data
    frame = dd.from_pandas(pd.DataFrame(grid_data, columns=list("abc")), npartitions=3)
    dist_df = SensitiveAnomalyIdentifier(4, 2.0, 0.5, engine="dask", rng=11).fit(frame)
    local_df = SensitiveAnomalyIdentifier(4, 2.0, 0.5, engine="numba", rng=11).fit(grid_data)
    _assert_same(local_df, dist_df)
    assert dist_df.n_records_ == 400 and dist_df.n_features_in_ == 3


def test_predict_spends_once_on_the_ledger(client, grid_data) -> None:
    local, dist = _pair(grid_data, (90, 0, 310))
    with Ledger(":memory:") as book:
        book.set_budget("s", "sensitive", 1000)
        labels = dist.predict(ledger=book, scope="s")
        (spend,) = book.history("s")
        assert spend.status == "committed"
        assert spend.epsilon == pytest.approx(local.guarantee().epsilon)
    np.testing.assert_array_equal(labels, local.predict())


def test_validation_and_unavailable_methods(client) -> None:
    est = SensitiveAnomalyIdentifier(2, 1.0, 1.0, engine="dask")
    with pytest.raises(DataError, match="2-D"):
        est.fit(da.zeros(5, chunks=2))
    with pytest.raises(DataError, match="numeric"):
        est.fit(da.from_array(np.array([["a"], ["b"]])))
    X = np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]])
    est.fit(da.from_array(X, chunks=(1, 2)))  # values are checked by the workers, lazily
    with pytest.raises(DataError, match="NaN or infinite"):
        est.predict()
    est.fit(np.ones((4, 2)))
    with pytest.raises(DataError, match="feature"):
        est.predict(np.ones((2, 3)))
    with pytest.raises(ParameterError, match="one machine"):
        est.privacy_loss()
    # Dask data: "auto" keeps it distributed; an in-memory engine is refused, not a download
    auto = SensitiveAnomalyIdentifier(2, 1.0, 1.0).fit(da.ones((6, 2), chunks=3))
    assert auto.engine_ == "dask" and isinstance(auto.X_, da.Array)
    with pytest.raises(ParameterError, match="in-memory"):
        SensitiveAnomalyIdentifier(2, 1.0, 1.0, engine="numba").fit(da.ones((6, 2), chunks=3))


def test_fit_persists_on_the_workers_and_counts_queries_once(client, grid_data, monkeypatch):
    import distributed

    import privad.geometry.distributed as gd

    local, dist = _pair(grid_data, (150, 0, 250))
    assert distributed.futures_of(dist.X_)  # held by the workers
    Q = da.from_array(grid_data[:40] + 1.0, chunks=((15, 0, 25), 3))
    calls = []
    real = gd.multiplicities_dask
    monkeypatch.setattr(gd, "multiplicities_dask", lambda *a, **k: calls.append(1) or real(*a, **k))
    _assert_same(local, dist, Q)
    assert len(calls) == 1  # statistics, labels and error probabilities of Q: one count
    assert local.claim5_bound(grid_data[:40] + 1.0) == dist.claim5_bound(Q)
