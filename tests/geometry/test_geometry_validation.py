"""Bad input to the geometry functions raises PrivadErrors with useful messages."""

from __future__ import annotations

import numpy as np
import pytest

from privad.errors import DataError, ParameterError, PrivadError
from privad.geometry import ball_counts, kth_neighbour_distance, multiplicities

X = np.arange(12.0).reshape(6, 2)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (np.arange(5.0), "2-D"),
        (np.zeros((0, 2)), "at least 1 row"),
        (np.zeros((3, 0)), "at least one column"),
        ([[0.0, np.nan]], "NaN or infinite"),
        ([[0.0, np.inf]], "NaN or infinite"),
        ([["a", "b"]], "numeric"),
        ([[-1e308, 0.0], [1e308, 0.0]], "rescale"),
        ([[0.0, 1.0], [1e-160, 1.0]], "closer than 2"),
    ],
)
def test_bad_data(data, match):
    with pytest.raises(DataError, match=match):
        ball_counts(data, 1.0)
    if match not in ("rescale", "closer than 2"):  # magnitudes: no distances there
        with pytest.raises(DataError, match=match):
            multiplicities(data)
    with pytest.raises(DataError, match=match):
        kth_neighbour_distance(data, 1)


def test_euclidean_overflow_is_refused_but_not_for_chebyshev():
    data = [[-1e200, 0.0], [1e200, 0.0]]
    with pytest.raises(DataError, match="rescale"):
        ball_counts(data, 1.0)
    assert ball_counts(data, 1.0, metric="chebyshev").tolist() == [1, 1]


def test_bad_queries():
    with pytest.raises(DataError, match="same number of columns"):
        ball_counts(X, 1.0, queries=np.zeros((3, 3)))
    with pytest.raises(DataError, match="same number of columns"):
        multiplicities(X, queries=np.zeros((3, 1)))
    with pytest.raises(DataError, match="NaN"):
        ball_counts(X, 1.0, queries=[[np.nan, 0.0]])
    with pytest.raises(DataError, match="2-D"):
        ball_counts(X, 1.0, queries=[0.0, 1.0])


@pytest.mark.parametrize("r", [-1.0, np.nan, np.inf, "1", None, True, [1.0]])
def test_bad_radius(r):
    with pytest.raises(ParameterError, match="r must"):
        ball_counts(X, r)


@pytest.mark.parametrize("cap", [0, -3, 1.5, "2", True])
def test_bad_cap(cap):
    with pytest.raises(ParameterError, match="cap must"):
        ball_counts(X, 1.0, cap=cap)


def test_bad_choices_and_k():
    with pytest.raises(ParameterError, match="metric must be one of"):
        ball_counts(X, 1.0, metric="cosine")
    with pytest.raises(ParameterError, match="engine must be one of"):
        ball_counts(X, 1.0, engine="gpu")
    with pytest.raises(ParameterError, match="metric must be one of"):
        kth_neighbour_distance(X, 1, metric="minkowski")
    for k in [0, 7, 2.5, "3"]:
        with pytest.raises(ParameterError, match="k must"):
            kth_neighbour_distance(X, k)


def test_all_are_privad_errors():
    assert issubclass(DataError, PrivadError) and issubclass(ParameterError, PrivadError)
    assert ball_counts(X, 3.0, cap=2.0).tolist() == [2] * 6  # an integral float cap is fine
