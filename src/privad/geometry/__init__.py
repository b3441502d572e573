"""Geometry for (beta, r)-anomalies: ball counts, multiplicities, k-th neighbour distances.

The sensitive-privacy mechanisms depend on the database only through two integers per
query record i (Def. 2.2 and section 2 of the paper): the multiplicity x_i and the ball
count B_x(i, r) = sum of x_j over records j with d(i, j) <= r, the record itself included.

* :func:`ball_counts`: B_x(i, r) for every record or for arbitrary query points, exact (or
  exact up to a cap), with a compiled dual-tree engine, a blocked NumPy engine for small
  inputs (no compilation) and a SciPy reference engine that agree bit for bit through one
  canonical distance predicate (:mod:`privad.geometry.predicate`).
* :class:`BallIndex`: the same counts for many batches of query points against one
  database, its tree built once (a service's many small requests).
* :func:`multiplicities`: x_i.
* :func:`kth_neighbour_distance`: the distance to the k-th nearest record (the record itself
  is the first), with ``kth <= r  <=>  B_x(i, r) >= k`` exactly.
* :func:`ball_counts_dask`, :func:`multiplicities_dask` (:mod:`privad.geometry.distributed`):
  the same numbers for data held as Dask arrays or DataFrames, as lazy Dask arrays; also
  reached through ``ball_counts(..., engine="dask")``, ``multiplicities(..., engine="dask")``
  and by passing a Dask collection. Dask is imported only when they are first used.
"""

from typing import Any

from privad.geometry.balls import ENGINES, BallIndex, BallProblem, ball_counts
from privad.geometry.multiplicity import multiplicities
from privad.geometry.neighbours import kth_neighbour_distance
from privad.geometry.predicate import METRICS

__all__ = [
    "ENGINES",
    "METRICS",
    "BallIndex",
    "BallProblem",
    "ball_counts",
    "ball_counts_dask",
    "kth_neighbour_distance",
    "multiplicities",
    "multiplicities_dask",
]

_DISTRIBUTED = ("ball_counts_dask", "multiplicities_dask", "plan_ball_counts")


def __getattr__(name: str) -> Any:
    """The Dask engine's functions, imported on first use (Dask is slow to import)."""
    if name in _DISTRIBUTED:
        from privad.geometry import distributed

        return getattr(distributed, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
