"""Geometry for (beta, r)-anomalies: ball counts, multiplicities, k-th neighbour distances.

The sensitive-privacy mechanisms depend on the database only through two integers per
query record i (Def. 2.2 and section 2 of the paper): the multiplicity x_i and the ball
count B_x(i, r) = sum of x_j over records j with d(i, j) <= r, the record itself included.

* :func:`ball_counts`: B_x(i, r) for every record or for arbitrary query points, exact (or
  exact up to a cap), with a compiled dual-tree engine and a SciPy reference engine that
  agree bit for bit through one canonical distance predicate
  (:mod:`privad.geometry.predicate`).
* :func:`multiplicities`: x_i.
* :func:`kth_neighbour_distance`: the distance to the k-th nearest record (the record itself
  is the first), with ``kth <= r  <=>  B_x(i, r) >= k`` exactly.
"""

from privad.geometry.balls import ENGINES, BallProblem, ball_counts
from privad.geometry.multiplicity import multiplicities
from privad.geometry.neighbours import kth_neighbour_distance
from privad.geometry.predicate import METRICS

__all__ = [
    "ENGINES",
    "METRICS",
    "BallProblem",
    "ball_counts",
    "kth_neighbour_distance",
    "multiplicities",
]
