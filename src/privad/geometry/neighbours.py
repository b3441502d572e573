"""k-th nearest-neighbour distances, exact under the canonical predicate.

Convention: a record is its own first nearest neighbour (distance 0), and duplicates count
one by one, just as the ball count B_x(i, r) of Def. 2.2 counts the record itself and each
copy. With that convention, for every record i and every radius r >= 0 (float64)::

    kth_neighbour_distance(data, k)[i] <= r   if and only if   ball_counts(data, r)[i] >= k

exactly, including ties and points at distance exactly r (the euclidean value is the
smallest float64 radius whose canonical threshold ``r * r`` admits the k-th neighbour; see
:func:`privad.geometry.predicate.radius_from_value`). Hence record i is a (beta, r)-anomaly
(B_x(i, r) <= beta) exactly when its (beta + 1)-th neighbour distance is > r.

The search is compiled (:mod:`privad.geometry.knn`, loaded on first use).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.geometry.predicate import METRICS, check_magnitudes, radius_from_value
from privad.validation import check_array, check_choice, check_int


def kth_neighbour_distance(data: Any, k: int, *, metric: str = "euclidean") -> np.ndarray:
    """Distance from each record of ``data`` to its k-th nearest record, itself counted first.

    ``k = 1`` gives 0 for every record (the record itself); ``k = 2`` the distance to the
    nearest other record (0 if it has a duplicate). The defining property, exact in float64
    under the canonical predicate of :mod:`privad.geometry.predicate`::

        kth_neighbour_distance(data, k)[i] <= r  <=>  ball_counts(data, r)[i] >= k

    so a record is a (beta, r)-anomaly of Def. 2.2 iff its (beta + 1)-th distance exceeds r.

    Parameters
    ----------
    data:
        (n, d) array of finite numbers, n >= 1.
    k:
        Integer, 1 <= k <= n.
    metric:
        ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.

    Returns
    -------
    numpy.ndarray
        (n,) float64 distances, in the order of the rows of ``data``.

    Raises
    ------
    privad.errors.PrivadError
        ``DataError`` for malformed data (also data whose distances float64 cannot hold:
        :func:`privad.geometry.predicate.check_magnitudes`), ``ParameterError`` for ``k``
        or ``metric``.
    """
    X = check_array(data, "data")
    check_choice(metric, "metric", METRICS)
    k = check_int(k, "k", minimum=1, maximum=X.shape[0])
    check_magnitudes([X], metric)
    from privad.geometry import knn  # loads Numba and the compiled search

    return radius_from_value(knn.kth_values(X, k, metric), metric)
