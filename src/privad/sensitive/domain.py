"""The public domain of a curator's records and questions: refusals that read no data.

A curator (:class:`privad.sensitive.Curator`) answers questions about feature vectors it
does not hold. Its distance engines refuse inputs whose pair values float64 cannot
represent (:func:`privad.geometry.predicate.check_magnitudes`): a span that overflows, or
two distinct values of a feature closer than ``2**-511`` (euclidean). Those checks look at
the data and the queries *together*, so a refusal of a question would depend on the
stored records (the audit case: ``[1e-160, 5]`` answered on X, refused on X plus the
record ``[0, 5]``, with the stored value in the message), and a querier would learn about
the data from it, off the ledger.

:class:`QueryDomain` replaces them with a rule on each record alone, fixed before any
question (public configuration: the number of features, the metric and the declared
bounds):

* **bounds** (optional, per feature ``(lo, hi)``, from knowledge about the domain): a
  bounded feature is mapped to [0, 1] by ``(x − lo)/(hi − lo)``, the map of
  :func:`privad.datasets.scale_to_bounds`. Stored values outside the bounds are clipped
  (a function of the record and the bounds only); a *question* outside them is refused.
* **limit** L: every mapped value has magnitude at most L, the largest power of two for
  which the box ``[−L, L]^d`` has a finite pair value (:func:`check_span`); a sub-box has
  a smaller one (rounding is monotone), so no pair of records in the domain overflows.
* **no tiny values** (euclidean only): every nonzero mapped value has magnitude at least
  :data:`~privad.geometry.predicate.SMALL` ``= 2**-459``; distinct values of that size
  differ by at least ``2**-511``, so no pair underflows.

Every pair of records in the domain passes the engines' checks, whatever else is stored or
asked. The data is checked against the domain once, when the curator starts (a refusal is
the data owner's business: one error naming the feature); a question is checked against it
alone, and its refusal names only what the querier sent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.geometry.predicate import METRICS, SMALL, check_span
from privad.validation import check_array, check_choice, check_int, check_interval

__all__ = ["QueryDomain"]


def domain_limit(d: int, metric: str) -> float:
    """The largest power of two L such that records in ``[−L, L]^d`` have finite pair
    values under ``metric`` (bisection on the exponent with :func:`check_span`)."""
    lo, hi = 0, 1023  # 2**0 always passes for d < 2**1000; 2**1023 never does (2L overflows)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        box = np.vstack([np.full(d, -(2.0**mid)), np.full(d, 2.0**mid)])
        try:
            check_span([box], metric)
        except DataError:
            hi = mid
        else:
            lo = mid
    return 2.0**lo


class QueryDomain:
    """The public domain of a curator's records and questions (see the module docstring).

    Parameters
    ----------
    n_features : int
        d, the number of features.
    metric : str
        The mechanism's metric ("euclidean", "manhattan" or "chebyshev").
    bounds : mapping {feature position: (lower, upper)}, optional
        Public bounds of some features, lower < upper, both finite; those features are
        mapped to [0, 1]. They must come from knowledge about the domain, never from the
        data.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.errors import DataError
    >>> dom = QueryDomain(2, "euclidean", bounds={1: (0.0, 10.0)})
    >>> dom.limit == 2.0**510
    True
    >>> dom.data(np.array([[1.0, 5.0], [2.0, 12.0]])).tolist()  # clipped, then mapped
    [[1.0, 0.5], [2.0, 1.0]]
    >>> dom.questions(np.array([[1.0, 5.0]])).tolist()
    [[1.0, 0.5]]
    >>> try:
    ...     dom.questions(np.array([[1e-160, 5.0]]))
    ... except DataError as exc:
    ...     print(str(exc)[:76])
    record 0, feature 0: the value 1e-160 is outside the curator's public domain
    """

    def __init__(
        self,
        n_features: int,
        metric: str,
        bounds: Mapping[int, tuple[float, float]] | None = None,
    ) -> None:
        self.n_features = check_int(n_features, "n_features", minimum=1)
        self.metric = check_choice(metric, "metric", METRICS)
        self.bounds = _check_bounds(bounds or {}, self.n_features)
        self.limit = domain_limit(self.n_features, self.metric)

    def to_dict(self) -> dict[str, Any]:
        """The public description a querier needs (JSON-ready)."""
        out: dict[str, Any] = {
            "bounds": {str(j): list(b) for j, b in self.bounds.items()},
            "limit": self.limit,
        }
        if self.metric == "euclidean":
            out["smallest_nonzero"] = SMALL
        return out

    def _mapped(self, X: np.ndarray) -> np.ndarray:
        """Bounded features mapped to [0, 1] as ``(clip(x, lo, hi) − lo)/(hi − lo)``: the
        arithmetic of :func:`privad.datasets.scale_to_bounds`, so a question equal to a
        stored record maps to the same vector."""
        out = X.copy()
        for j, (lo, hi) in self.bounds.items():
            out[:, j] = (np.clip(X[:, j], lo, hi) - lo) / (hi - lo)
        return out

    def _first_outside(self, X: np.ndarray) -> tuple[int, int, str] | None:
        """(row, feature, rule) of the first value of the mapped ``X`` outside the domain."""
        size = np.abs(X)
        huge = size > self.limit
        bad = huge.copy()
        if self.metric == "euclidean":  # tiny nonzero values could underflow
            bad |= (size < SMALL) & (size > 0.0)
        if not bad.any():
            return None
        i, j = (int(v) for v in np.unravel_index(np.argmax(bad), bad.shape))
        if huge[i, j]:
            return i, j, f"values must have magnitude at most 2**{int(math.log2(self.limit))}"
        rule = "nonzero values must have magnitude at least 2**-459 (~6.6e-139) for euclidean "
        return i, j, rule + "distances (smaller ones could underflow)"

    def data(self, X: Any) -> np.ndarray:
        """The stored records, mapped: refused (DataError, for the data owner) when one
        lies outside the domain, so that no question can meet a pair the engines refuse."""
        X = self._checked(X, "the data")
        mapped = self._mapped(X)
        where = self._first_outside(mapped)
        if where is not None:
            i, j, rule = where
            raise DataError(
                f"the curator cannot serve this data: record {i}, feature {j} "
                f"(value {float(X[i, j])!r}, mapped {float(mapped[i, j])!r}) is outside its "
                f"public domain ({rule}); declare public bounds for the feature (they map it "
                "to [0, 1]) or rescale the data (and r) by a power of two"
            )
        return mapped

    def questions(self, Q: Any) -> np.ndarray:
        """The question vectors, mapped; refused (DataError) when one lies outside the
        bounds or the domain. The check reads ``Q`` and the public domain only."""
        Q = self._checked(Q, "records")
        for j, (lo, hi) in self.bounds.items():
            out = (Q[:, j] < lo) | (Q[:, j] > hi)
            if out.any():
                i = int(np.argmax(out))
                raise DataError(
                    f"record {i}, feature {j}: the value {float(Q[i, j])!r} is outside the "
                    f"declared public bounds [{lo:g}, {hi:g}] of the feature; questions must "
                    "lie within them"
                )
        mapped = self._mapped(Q)
        where = self._first_outside(mapped)
        if where is not None:
            i, j, rule = where
            shown = f" (mapped {float(mapped[i, j])!r})" if j in self.bounds else ""
            raise DataError(
                f"record {i}, feature {j}: the value {float(Q[i, j])!r}{shown} is outside the "
                f"curator's public domain: {rule}"
            )
        return mapped

    def _checked(self, X: Any, name: str) -> np.ndarray:
        X = check_array(X, name)
        if X.shape[1] != self.n_features:
            raise DataError(f"{name} have {X.shape[1]} feature(s); the data has {self.n_features}")
        return X


def _check_bounds(bounds: Mapping[Any, Any], d: int) -> dict[int, tuple[float, float]]:
    """``bounds`` as {position: (lo, hi)} with finite lo < hi and a finite hi − lo."""
    if not isinstance(bounds, Mapping):
        raise ParameterError("bounds must be a mapping {feature position: (lower, upper)}")
    out: dict[int, tuple[float, float]] = {}
    for j, pair in bounds.items():
        if type(j) is not int or not 0 <= j < d:
            raise ParameterError(f"bounds: {j!r} is not a feature position 0 .. {d - 1}")
        out[j] = check_interval(pair, f"bounds: feature {j}", finite_width=True)
    return dict(sorted(out.items()))
