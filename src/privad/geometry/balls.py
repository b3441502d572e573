"""Ball counts B_x(i, r) (Def. 2.2) behind one function, with pluggable engines.

An *engine* is a function ``(problem: BallProblem) -> np.ndarray[int64]`` registered in
:data:`ENGINES`. :func:`ball_counts` validates the input once, builds the
:class:`BallProblem` (with the canonical threshold already computed) and hands it to the
engine, so every engine sees the same validated arrays and the same ``thr``; an engine only
has to decide ``v(a, b) <= thr`` with the arithmetic of :mod:`privad.geometry.predicate` and
apply the cap. A new engine is one more entry in :data:`ENGINES`.

The ``"dask"`` engine (:mod:`privad.geometry.distributed`) is such an entry for in-memory
arrays; data or queries held as Dask collections are routed to it before validation, so
they are validated partition by partition and never brought to one machine.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.errors import ParameterError
from privad.geometry import blocked, reference
from privad.geometry.predicate import (
    METRICS,
    Magnitudes,
    check_magnitudes,
    check_prepared,
    magnitudes,
    threshold,
)
from privad.validation import (
    check_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_queries,
)


@dataclass(frozen=True)
class BallProblem:
    """A validated ball-count request, as engines receive it.

    ``queries`` is ``None`` for self counts (each record of ``data`` is a query and counts
    itself). ``thr`` is ``threshold(r, metric)``; ``cap`` is ``None`` or an int >= 1.
    """

    data: np.ndarray
    queries: np.ndarray | None
    r: float
    thr: float
    metric: str
    cap: int | None


def _numba_engine(p: BallProblem) -> np.ndarray:
    from privad.geometry import dualtree  # loads Numba and the compiled kernels

    if p.queries is None:
        return dualtree.count_self(p.data, p.thr, p.metric, p.cap)
    return dualtree.count_queries(p.data, p.queries, p.thr, p.metric, p.cap)


def _numpy_engine(p: BallProblem) -> np.ndarray:
    return blocked.count_blocked(p.data, p.queries, p.thr, p.metric, p.cap)


def _scipy_engine(p: BallProblem) -> np.ndarray:
    return reference.count(p.data, p.queries, p.r, p.thr, p.metric, p.cap)


def _dask_engine(p: BallProblem) -> np.ndarray:
    from privad.geometry.distributed import ball_counts_dask  # imports Dask only when used

    return ball_counts_dask(p.data, p.r, queries=p.queries, metric=p.metric, cap=p.cap).compute()


#: Registered engines by name; ``"auto"`` picks :data:`AUTO_ENGINE`.
ENGINES: dict[str, Callable[[BallProblem], np.ndarray]] = {
    "numba": _numba_engine,
    "numpy": _numpy_engine,
    "scipy": _scipy_engine,
    "dask": _dask_engine,
}
AUTO_ENGINE = "numba"
DISTRIBUTED_ENGINE = "dask"


def auto_engine(n: int, m: int | None) -> str:
    """The engine ``"auto"`` picks for ``n`` records and ``m`` queries (``None``: self
    counts): ``"numpy"`` up to :data:`privad.geometry.blocked.AUTO_PAIRS` pairs, where
    loading (or compiling) the dual tree would cost more than the counting; else
    :data:`AUTO_ENGINE`."""
    return "numpy" if blocked.pairs(n, m) <= blocked.AUTO_PAIRS else AUTO_ENGINE


def is_distributed(*inputs: Any) -> bool:
    """Whether any input is a Dask collection (without importing Dask if it is not loaded)."""
    mod = sys.modules.get("dask")
    return mod is not None and any(mod.is_dask_collection(x) for x in inputs)


def check_distributed_engine(engine: str) -> None:
    """Dask inputs go to the ``"dask"`` engine; refuse an explicit in-memory engine for them."""
    check_choice(engine, "engine", ("auto", *ENGINES))
    if engine not in ("auto", DISTRIBUTED_ENGINE):
        raise ParameterError(
            f"engine {engine!r} needs in-memory arrays; data held as a Dask collection needs "
            f"engine 'dask' or 'auto'"
        )


def ball_counts(
    data: Any,
    r: float,
    *,
    queries: Any = None,
    metric: str = "euclidean",
    cap: int | None = None,
    engine: str = "auto",
) -> np.ndarray:
    """Number of records of ``data`` within distance ``r`` of each query: B_x(i, r) of Def. 2.2.

    The ball is closed (distance <= r). Without ``queries`` every record of ``data`` is a
    query and is counted in its own ball together with its duplicates (d(i, i) = 0), which is
    the paper's convention. "Distance <= r" is decided by the canonical predicate of
    :mod:`privad.geometry.predicate` (for euclidean: the float64 sum over features, in
    order, of squared differences compared with ``r * r``), so all engines return
    identical counts, also for records at distance exactly ``r``.

    Parameters
    ----------
    data:
        (n, d) array of finite numbers, n >= 1.
    r:
        Radius, finite and >= 0. With ``r = 0`` the self counts are the multiplicities.
    queries:
        Optional (m, d) array of finite numbers (m may be 0); they need not be records of
        ``data`` and are not added to it.
    metric:
        ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.
    cap:
        Optional int >= 1. Counts are exact up to ``cap``; a true count >= ``cap`` is
        reported as ``cap`` (the result is ``min(true count, cap)``). Lets the engine skip
        work for points whose count is known to reach it.
    engine:
        ``"auto"`` (``"numpy"`` for at most 16 million pairs, else ``"numba"``; ``"dask"``
        for Dask collections), ``"numba"`` (compiled dual tree), ``"numpy"`` (every pair
        value, in blocks: :mod:`privad.geometry.blocked`), ``"scipy"`` (cKDTree
        reference, re-deciding pairs near ``r`` with the canonical predicate) or
        ``"dask"`` (:mod:`privad.geometry.distributed`: spatially partitioned, computed
        with the current Dask scheduler or ``distributed`` client). ``data`` and
        ``queries`` may be Dask arrays or DataFrames (for example Parquet partitions)
        with ``"auto"`` or ``"dask"``.

    Returns
    -------
    numpy.ndarray
        (m,) int64 counts (m = n without queries), in query order.

    Raises
    ------
    privad.errors.PrivadError
        ``DataError`` for malformed arrays (not 2-D, empty data, NaN/inf, column mismatch,
        coordinates spanning more than float64 distances can hold, or, for euclidean
        distances, two distinct values of a feature closer than 2**-511: see
        :func:`privad.geometry.predicate.check_magnitudes`); ``ParameterError`` for
        ``r``, ``cap``, ``metric`` or ``engine`` (also for an in-memory engine asked to
        count a Dask collection).
    """
    if is_distributed(data, queries):
        check_distributed_engine(engine)
        from privad.geometry.distributed import ball_counts_dask

        lazy = ball_counts_dask(data, r, queries=queries, metric=metric, cap=cap)
        return np.asarray(lazy.compute(), dtype=np.int64)
    X = check_array(data, "data")
    Q = check_queries(queries, X)
    r = check_nonnegative(r, "r")
    check_choice(metric, "metric", METRICS)
    if cap is not None:
        cap = check_int(cap, "cap", minimum=1)
    check_choice(engine, "engine", ("auto", *ENGINES))
    if Q is not None and Q.shape[0] == 0:
        return np.zeros(0, np.int64)
    check_magnitudes([X] if Q is None else [X, Q], metric)
    m = None if Q is None else Q.shape[0]
    name = auto_engine(X.shape[0], m) if engine == "auto" else engine
    problem = BallProblem(
        data=np.ascontiguousarray(X),
        queries=None if Q is None else np.ascontiguousarray(Q),
        r=r,
        thr=threshold(r, metric),
        metric=metric,
        cap=cap,
    )
    counts = ENGINES[name](problem)
    return np.asarray(counts, dtype=np.int64)


class BallIndex:
    """Records prepared once for many batches of query points (their kd-tree built once).

    ``BallIndex(data, metric=...).counts(queries, r, cap=...)`` equals
    ``ball_counts(data, r, queries=queries, metric=..., cap=..., engine="numba")`` exactly:
    the same validation (including :func:`~privad.geometry.predicate.check_magnitudes` on
    the data and the queries together), the same canonical predicate and the same compiled
    dual tree, but the data's tree is built, and the data scanned for the magnitude check,
    on the first call only. A service answering small batches about a large database (the
    sensitive-privacy curator) then pays for the queries' tree and the traversal, not for an
    O(n log n) build or an O(n) scan per request.

    Parameters
    ----------
    data : (n, d) array of finite numbers, n >= 1.
    metric : ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.
    """

    def __init__(self, data: Any, *, metric: str = "euclidean") -> None:
        self.data = np.ascontiguousarray(check_array(data, "data"))
        self.metric = check_choice(metric, "metric", METRICS)
        self._tree: Any = None
        self._magnitudes: Magnitudes | None = None

    def counts(self, queries: Any, r: float, *, cap: int | None = None) -> np.ndarray:
        """B_x(q, r) of each query point q (int64, query order; see :func:`ball_counts`)."""
        return self._cross(queries, r, cap, around=False)

    def around(self, points: Any, r: float) -> np.ndarray:
        """For each indexed record, how many of ``points`` lie within ``r`` of it (int64,
        data order): ``ball_counts(points, r, queries=data)``, with the data's tree reused.
        """
        return self._cross(points, r, None, around=True)

    def _cross(self, points: Any, r: float, cap: int | None, *, around: bool) -> np.ndarray:
        P = check_queries(points, self.data)
        r = check_nonnegative(r, "r")
        if cap is not None:
            cap = check_int(cap, "cap", minimum=1)
        if P is None or P.shape[0] == 0:
            raise ParameterError("give query points (an (m, d) array with m >= 1)")
        if self._magnitudes is None:  # the records' scan, once (O(n): not per request)
            self._magnitudes = magnitudes(self.data, self.metric)
        check_prepared([self._magnitudes, magnitudes(P, self.metric)], self.metric)
        from privad.geometry import dualtree
        from privad.geometry.kdtree import build_tree

        if self._tree is None:
            self._tree = build_tree(self.data)
        other = build_tree(np.ascontiguousarray(P))
        qtree, dtree = (self._tree, other) if around else (other, self._tree)
        counts = dualtree.count_cross_trees(
            qtree, dtree, threshold(r, self.metric), self.metric, cap
        )
        return np.asarray(counts, dtype=np.int64)
