"""A search problem: values with one anomaly and the thresholds of eq. (1).

:class:`SearchProblem` is what the search is run on: the values x_1..x_{n+1}, t_ℓ < t_h and
where the anomaly is (for scoring). Making one from data (section 6.1's reduction of a
labelled series, the synthetic mixture) and the repeated trials of section 6.2 are
experiment code and live in :mod:`privad.experiments.search_problems`, above the data
layer; this package never imports :mod:`privad.datasets`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.errors import ParameterError
from privad.noise import RandomnessLike
from privad.search.models import check_search_data
from privad.search.oracles import Oracle, make_oracle
from privad.validation import check_int

__all__ = ["SearchProblem"]


@dataclass(frozen=True, eq=False)
class SearchProblem:
    """Values with one anomaly and the thresholds of eq. (1).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones(64); x[17] = 9.0  # one anomaly above t_h = 8, the rest below t_l = 2
    >>> from privad.search import SearchProblem, search
    >>> problem = SearchProblem("demo", x, 2.0, 8.0, anomaly_index=17, threshold_ratio=3.0)
    >>> result = search(problem.oracle("laplace", 1.0, rng=1), budget=20.0, rng=2)
    >>> problem.n_items, int(result.argmax) == problem.anomaly_index
    (64, True)
    """

    name: str
    values: np.ndarray
    t_low: float
    t_high: float
    anomaly_index: int
    threshold_ratio: float
    source_index: np.ndarray | None = None
    """Position in the original series of each value (None: the values are the series)."""

    def __post_init__(self) -> None:
        x, lo, hi = check_search_data(self.values, self.t_low, self.t_high)
        object.__setattr__(self, "values", x)
        object.__setattr__(self, "t_low", lo)
        object.__setattr__(self, "t_high", hi)
        idx = check_int(self.anomaly_index, "anomaly_index", minimum=0, maximum=x.size - 1)
        object.__setattr__(self, "anomaly_index", idx)
        if self.source_index is not None:
            src = np.asarray(self.source_index, dtype=np.int64).reshape(-1)
            if src.shape != x.shape:
                raise ParameterError(f"source_index has {src.size} entries for {x.size} values")
            object.__setattr__(self, "source_index", src)

    @property
    def n_items(self) -> int:
        """Number of values."""
        return int(self.values.size)

    def oracle(
        self,
        kind: str = "laplace",
        epsilon: float = 1.0,
        *,
        rng: RandomnessLike = None,
        **ledger_options: Any,
    ) -> Oracle:
        """A local oracle over these values (:func:`~privad.search.make_oracle`).

        ``ledger_options``: ``ledger``, ``scope``, ``budget`` of
        :func:`~privad.search.make_oracle` (default: the oracle's own in-memory ledger).
        """
        return make_oracle(
            kind, self.values, self.t_low, self.t_high, epsilon, rng=rng, **ledger_options
        )
