"""Fixtures shared by the geometry tests."""

from __future__ import annotations

import numpy as np
import pytest

from privad.geometry.predicate import threshold
from privad.geometry.reference import count_brute


@pytest.fixture
def rng():
    return np.random.default_rng(20240607)


def _brute_counts(data, r, *, queries=None, metric="euclidean", cap=None):
    """B_x(i, r) from all pairs with the canonical predicate (the definition, in NumPy)."""
    data = np.asarray(data, dtype=np.float64)
    q = None if queries is None else np.asarray(queries, dtype=np.float64)
    return count_brute(data, q, threshold(r, metric), metric, cap)


def _lattice(side: int, d: int) -> np.ndarray:
    """All points of {0, ..., side-1}^d: many pairs at exactly integer distances."""
    axes = np.meshgrid(*[np.arange(side)] * d, indexing="ij")
    return np.stack([a.ravel() for a in axes], axis=1).astype(np.float64)


# Session-scoped: Hypothesis tests may use them (it refuses function-scoped fixtures).
@pytest.fixture(scope="session")
def brute_counts():
    """``brute_counts(data, r, *, queries=None, metric="euclidean", cap=None)``: the
    brute-force oracle of the ball counts."""
    return _brute_counts


@pytest.fixture(scope="session")
def lattice():
    """``lattice(side, d)``: all points of {0, ..., side-1}^d."""
    return _lattice
