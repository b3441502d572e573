"""The curator's public query domain (privad.sensitive.domain): hand-computed limits, the
bounds' map, and refusals that read the record alone."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privad.errors import DataError, ParameterError
from privad.geometry.predicate import SMALL, check_magnitudes
from privad.sensitive.domain import QueryDomain, domain_limit


@pytest.mark.parametrize(
    ("d", "metric", "exponent"),
    [
        # euclidean: d·(2L)² = d·2^(2k+2) must stay below 2^1024
        (1, "euclidean", 510),  # 2^1022
        (2, "euclidean", 510),  # 2^1023
        (3, "euclidean", 510),  # 1.5·2^1023
        (4, "euclidean", 509),  # 2^1024 overflows at k = 510
        (1000, "euclidean", 506),  # 1000·2^1014 < 2^1024 <= 1000·2^1016
        # manhattan: d·2L; chebyshev: 2L
        (2, "manhattan", 1021),
        (3, "manhattan", 1021),  # 1.5·2^1023
        (5, "chebyshev", 1022),
    ],
)
def test_the_limit_is_the_largest_power_of_two_whose_box_is_finite(d, metric, exponent) -> None:
    assert domain_limit(d, metric) == 2.0**exponent


def test_every_pair_in_the_domain_passes_the_engines_checks() -> None:
    """Corners, tiny allowed values and zeros, in every combination: no refusal."""
    for metric in ("euclidean", "manhattan", "chebyshev"):
        dom = QueryDomain(2, metric)
        edge = [dom.limit, -dom.limit, SMALL, -SMALL, 0.0, -0.0, 1.0]
        points = np.array(list(itertools.product(edge, repeat=2)))
        check_magnitudes([dom.data(points), dom.questions(points)], metric)


def test_bounds_map_to_the_unit_interval_and_clip_only_the_data() -> None:
    dom = QueryDomain(2, "euclidean", bounds={0: (-2.0, 6.0)})
    data = dom.data(np.array([[-2.0, 1.0], [2.0, 1.0], [6.0, 1.0], [100.0, 1.0], [-7.0, 1.0]]))
    np.testing.assert_array_equal(data[:, 0], [0.0, 0.5, 1.0, 1.0, 0.0])  # (x + 2) / 8
    np.testing.assert_array_equal(data[:, 1], 1.0)
    np.testing.assert_array_equal(dom.questions([[2.0, 1.0]]), [[0.5, 1.0]])
    for value in (6.0 + 1e-15, -2.0 - 1e-15, 100.0):
        with pytest.raises(DataError, match=r"outside the declared public bounds \[-2, 6\]"):
            dom.questions([[value, 1.0]])
    with pytest.raises(DataError, match=r"value 8e-150 \(mapped 1e-150\) is outside"):
        QueryDomain(1, "euclidean", bounds={0: (0.0, 8.0)}).questions([[8e-150]])  # tiny after
    assert dom.to_dict() == {
        "bounds": {"0": [-2.0, 6.0]},
        "limit": 2.0**510,
        "smallest_nonzero": SMALL,
    }


def test_a_question_is_refused_for_its_own_values_only() -> None:
    dom = QueryDomain(3, "euclidean")
    cases = {
        (1.0, 1e-160, 0.0): r"record 1, feature 1: the value 1e-160 .*at least 2\*\*-459",
        (5e-324, 1.0, 0.0): r"record 1, feature 0: the value 5e-324 .*at least 2\*\*-459",
        (1.0, 1.0, 2.0**511): r"record 1, feature 2: .*at most 2\*\*510",
    }
    for row, message in cases.items():
        with pytest.raises(DataError, match=message):
            dom.questions([[1.0, 1.0, 1.0], row])
    with pytest.raises(DataError, match="records have 2 feature"):
        dom.questions([[1.0, 1.0]])
    with pytest.raises(DataError, match="NaN"):
        dom.questions([[np.nan, 1.0, 1.0]])
    # manhattan and chebyshev need no gap: tiny values are fine
    np.testing.assert_array_equal(QueryDomain(1, "manhattan").questions([[5e-324]]), [[5e-324]])


def test_the_data_is_refused_once_with_one_line_for_its_owner() -> None:
    dom = QueryDomain(2, "euclidean")
    with pytest.raises(DataError, match=r"cannot serve this data: record 1, feature 0 \(value"):
        dom.data([[1.0, 1.0], [1e-160, 1.0]])
    with pytest.raises(DataError, match="declare public bounds"):
        dom.data([[1.0, 1e300]])
    # a bound maps a huge feature into the domain (clipped values are the owner's business)
    np.testing.assert_array_equal(
        QueryDomain(2, "euclidean", bounds={1: (0.0, 1e300)}).data([[1.0, 1e300]]),
        [[1.0, 1.0]],
    )


@pytest.mark.parametrize(
    "bounds",
    [
        {2: (0.0, 1.0)},
        {-1: (0.0, 1.0)},
        {0: (1.0, 1.0)},
        {0: (0.0, np.inf)},
        {0: "ab"},
        {0: (-1e308, 1e308)},
        {"a": (0.0, 1.0), 0: (0.0, 1.0)},
        [(0.0, 1.0)],
    ],
)
def test_bad_bounds_are_parameter_errors(bounds) -> None:
    with pytest.raises(ParameterError, match="bounds"):
        QueryDomain(2, "euclidean", bounds=bounds)
