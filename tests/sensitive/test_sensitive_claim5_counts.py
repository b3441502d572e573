"""claim5_bound with already computed ball counts at r: same bound, checked input."""

from __future__ import annotations

import numpy as np
import pytest

from privad.errors import ParameterError
from privad.geometry import ball_counts
from privad.sensitive.accounting import claim5_bound, claim5_radius


def test_reused_counts_give_the_same_bound():
    rng = np.random.default_rng(20240607)
    Q = np.round(rng.normal(size=(400, 3)), 1)
    for metric in ("euclidean", "manhattan", "chebyshev"):
        counts = ball_counts(Q, 0.4, metric=metric)
        bound = claim5_bound(Q, 0.4, metric=metric, ball_counts_at_r=counts)
        assert bound == claim5_bound(Q, 0.4, metric=metric)
        assert bound.lower == int(counts.max())
        assert bound.upper == int(ball_counts(Q, claim5_radius(0.4), metric=metric).max())


@pytest.mark.parametrize(
    "counts", [np.ones(3, np.int64), np.ones(4), np.zeros(4, np.int64), np.full(4, 5)]
)
def test_bad_counts_raise(counts):
    Q = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ParameterError, match="ball_counts_at_r"):
        claim5_bound(Q, 0.5, ball_counts_at_r=counts)
