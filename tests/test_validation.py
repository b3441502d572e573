"""Property-based tests of the boundary validators in :mod:`privad.validation`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privad.errors import DataError, ParameterError, PrivadError
from privad.validation import (
    check_array,
    check_choice,
    check_epsilon,
    check_int,
    check_interval,
    check_nonnegative,
    check_positive,
    check_probability,
)

finite = st.floats(allow_nan=False, allow_infinity=False)
anything = st.one_of(
    st.none(), st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2)
)


@given(finite)
def test_epsilon_accepts_exactly_the_positive_reals(value):
    if value > 0:
        assert check_epsilon(value) == value
    else:
        with pytest.raises(ParameterError, match="epsilon must be > 0"):
            check_epsilon(value)


@given(st.sampled_from([math.nan, math.inf, -math.inf]))
def test_nonfinite_parameters_are_refused(value):
    checks = (check_epsilon, lambda v: check_positive(v, "r"), lambda v: check_nonnegative(v, "r"))
    for check in checks:
        with pytest.raises(ParameterError, match="finite"):
            check(value)


@given(anything)
def test_non_numbers_are_refused_with_the_parameter_name(value):
    with pytest.raises(ParameterError, match="epsilon"):
        check_epsilon(value)


@given(finite)
def test_nonnegative(value):
    if value >= 0:
        assert check_nonnegative(value, "r") == value
    else:
        with pytest.raises(ParameterError, match="r must be >= 0"):
            check_nonnegative(value, "r")


@given(finite, st.booleans(), st.booleans())
def test_probability_interval(value, low_open, high_open):
    inside = (value > 0 if low_open else value >= 0) and (value < 1 if high_open else value <= 1)
    if inside:
        assert check_probability(value, "p", low_open=low_open, high_open=high_open) == value
    else:
        with pytest.raises(ParameterError, match="p must be in"):
            check_probability(value, "p", low_open=low_open, high_open=high_open)


@given(st.integers(-(10**6), 10**6), st.integers(-100, 100))
def test_int_minimum(value, minimum):
    if value >= minimum:
        assert check_int(value, "beta", minimum=minimum) == value
    else:
        with pytest.raises(ParameterError, match=f"beta must be an integer >= {minimum}"):
            check_int(value, "beta", minimum=minimum)


def test_int_accepts_integral_floats_and_refuses_fractions_and_bools():
    assert check_int(3.0, "k") == 3
    assert isinstance(check_int(np.int64(4), "k"), int)
    for bad in (2.5, True, "3", None):
        with pytest.raises(ParameterError, match="k must be an integer"):
            check_int(bad, "k")


def test_choice_lists_the_allowed_values():
    assert check_choice("sp", "mechanism", ["sp", "dp"]) == "sp"
    with pytest.raises(ParameterError, match="'sp', 'dp'"):
        check_choice("xx", "mechanism", ["sp", "dp"])


def test_interval_needs_two_ordered_finite_numbers():
    assert check_interval(("-1", 2.5), "b") == (-1.0, 2.5)
    assert check_interval((-1e308, 1e308), "b") == (-1e308, 1e308)  # width: only if asked
    for pair, message in [
        ((1,), "b needs two numbers"),
        ((1, "x"), "b needs two numbers"),
        (None, "b needs two numbers"),
        ((2, 2), "lower < upper, got 2:2"),
        ((0, math.inf), "finite bounds"),
        ((math.nan, 1), "finite bounds"),
    ]:
        with pytest.raises(ParameterError, match=message):
            check_interval(pair, "b")
    with pytest.raises(ParameterError, match=r"\(and a finite width\), got -1e\+308:1e\+308"):
        check_interval((-1e308, 1e308), "b", finite_width=True)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6)))
def test_array_is_refused_exactly_when_it_has_a_nonfinite_value(arr):
    if np.isfinite(arr).all():
        out = check_array(arr)
        assert out.dtype == np.float64 and out.shape == arr.shape
    else:
        with pytest.raises(DataError, match="NaN or infinite"):
            check_array(arr)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.zeros(3), "must be a 2-D array"),
        (np.zeros((0, 3)), "at least 1 row"),
        (np.zeros((3, 0)), "at least one column"),
        ([["a", "b"]], "must be numeric"),
    ],
)
def test_array_shape_errors(value, message):
    with pytest.raises(DataError, match=message):
        check_array(value)


def test_every_error_is_a_privad_error():
    for cls in (ParameterError, DataError):
        assert issubclass(cls, PrivadError)


# --------------------------------------------------------------------------------------------
# Out-of-range values are ParameterErrors with the real reason (issue 16)
# --------------------------------------------------------------------------------------------


def test_huge_integers_are_parameter_errors_not_overflows() -> None:
    from privad.sensitive import SensitiveAnomalyIdentifier
    from privad.validation import MAX_INT, check_int

    assert check_int(MAX_INT, "n") == MAX_INT
    with pytest.raises(ParameterError, match="<= 4611686018427387904"):
        check_int(MAX_INT + 1, "n")
    assert check_int(2**70, "n", maximum=2**80) == 2**70  # a caller may allow more
    for kwargs in ({"beta": 10**30}, {"k": 10**30}, {"beta": 1e30}):
        with pytest.raises(ParameterError, match="beta|k"):
            SensitiveAnomalyIdentifier(**{"beta": 5, "r": 0.1, "epsilon": 1.0, **kwargs}).fit(
                np.zeros((3, 2))
            )


def test_laplace_scale_names_the_grid_cost_and_never_overflows() -> None:
    from privad.noise import laplace_scale_for

    for eps in (1e-300, 1e-13, 4.5e-13):
        with pytest.raises(ParameterError, match="below the grid's own cost"):
            laplace_scale_for(1, eps)
    assert laplace_scale_for(1, 5e-13) > 0  # above the grid's cost: a scale exists
    with pytest.raises(ParameterError, match="exceeds the largest double"):
        laplace_scale_for(1e308, 1e-10)


def test_an_epsilon_that_protects_nothing_warns() -> None:
    import warnings

    from privad.errors import PrivacyWarning
    from privad.noise import LaplaceMechanism
    from privad.sensitive import SPMechanism
    from privad.validation import check_epsilon

    with pytest.warns(PrivacyWarning, match="protects"):
        LaplaceMechanism(1.0, 1e308)
    with pytest.warns(PrivacyWarning, match="e\\^21"):
        SPMechanism(5, 0.1, 21.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LaplaceMechanism(1.0, 20.0)  # at the limit: no warning
        assert check_epsilon(1e308, "budget") == 1e308  # a total budget is not one answer
