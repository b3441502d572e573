"""Equation (1) against hand-computed percentiles, Theorem 2 as data, and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privad.errors import DataError, ParameterError, PrivadWarning
from privad.relaxed.scaling import column_divisors, scale_columns, unscale_columns
from privad.relaxed.sensitivity import check_p_o, relaxed_guarantee, relaxed_sensitivity


def test_eq1_hand_computed_percentiles() -> None:
    # Column 0: 0, 1, ..., 10 (11 values). p_o = 20: q_max = 90, q_min = 10.
    # Linear (R type 7) percentile: position q/100 * (n - 1) = 9.0 and 1.0 -> values 9 and 1.
    # Column 1: 0, 2, ..., 20 -> 18 and 2.
    D = np.column_stack([np.arange(11.0), 2.0 * np.arange(11.0)])
    assert np.array_equal(relaxed_sensitivity(D, 20), [8.0, 16.0])


def test_eq1_interpolates_between_order_statistics() -> None:
    # n = 5 values 0, 10, 20, 30, 100; p_o = 10: q_max = 95 -> position 0.95 * 4 = 3.8
    # -> 30 + 0.8 * (100 - 30) = 86; q_min = 5 -> position 0.2 -> 0 + 0.2 * 10 = 2. RS = 84.
    D = np.array([[0.0], [10.0], [20.0], [30.0], [100.0]])
    assert relaxed_sensitivity(D, 10)[0] == pytest.approx(84.0, abs=1e-12)
    # "lower" percentiles: positions floor(3.8) = 3 -> 30 and floor(0.2) = 0 -> 0. RS = 30.
    assert relaxed_sensitivity(D, 10, method="lower")[0] == 30.0


def test_eq1_is_symmetric_in_order_and_shift_invariant() -> None:
    D = np.array([[3.0, -1.0], [1.0, 5.0], [7.0, 2.0], [4.0, 0.5]])
    rs = relaxed_sensitivity(D, 50)
    assert np.allclose(relaxed_sensitivity(D[::-1], 50), rs)
    assert np.allclose(relaxed_sensitivity(D + 1000.0, 50), rs)


@pytest.mark.parametrize("p_o", [0, 100, -1, 150, float("nan"), float("inf"), True, "10", None])
def test_p_o_outside_open_interval_is_refused(p_o: object) -> None:
    with pytest.raises(ParameterError, match="p_o"):
        relaxed_sensitivity(np.ones((4, 2)) * np.arange(4)[:, None], p_o)


def test_check_p_o_accepts_interior_values() -> None:
    assert check_p_o(10) == 10.0
    assert check_p_o(np.float64(0.5)) == 0.5


@pytest.mark.parametrize(
    "history",
    [np.arange(5.0), np.array([[1.0, np.nan], [2.0, 3.0]]), np.zeros((0, 2)), [["a", "b"]]],
)
def test_bad_history_is_refused(history: object) -> None:
    with pytest.raises(DataError):
        relaxed_sensitivity(history, 10)


def test_constant_column_has_no_noise_scale() -> None:
    D = np.column_stack([np.arange(10.0), np.full(10, 3.0)])
    with pytest.raises(DataError, match=r"column\(s\) \[1\]"):
        relaxed_sensitivity(D, 10)


def test_a_floor_or_a_fallback_sizes_a_constant_column() -> None:
    # column 0: 0..9, p_o = 20 -> percentiles 10 and 90 at positions 0.9 and 8.1 -> RS 7.2
    D = np.column_stack([np.arange(10.0), np.full(10, 3.0)])
    assert relaxed_sensitivity(D, 20, floor=0.5) == pytest.approx([7.2, 0.5])
    assert relaxed_sensitivity(D, 20, floor=[8.0, 1.0]) == pytest.approx([8.0, 1.0])
    with pytest.warns(PrivadWarning, match=r"column\(s\) \[1\].*fallback RS \[4\.0\]"):
        assert relaxed_sensitivity(D, 20, fallback=[9.0, 4.0]) == pytest.approx([7.2, 4.0])
    with pytest.raises(DataError, match="give a floor or a fallback"):
        relaxed_sensitivity(D, 20, floor=0.0)  # a zero floor raises nothing
    for bad in (-1.0, [1.0, 2.0, 3.0], float("nan"), "x", True):
        with pytest.raises(ParameterError, match="floor"):
            relaxed_sensitivity(D, 20, floor=bad)
    with pytest.raises(ParameterError, match="fallback"):
        relaxed_sensitivity(D, 20, fallback=0.0)


def test_theorem2_record_and_column_guarantees() -> None:
    rs = np.array([2.0, 4.0])
    gs = np.array([20.0, 8.0])
    g = relaxed_guarantee(0.5, rs, gs)  # per record: d * eps and sum of eps * GS/RS
    assert g.notion == "relaxed-dp"
    assert g.epsilon == pytest.approx(1.0)
    assert g.epsilon_outlier == pytest.approx(0.5 * 10 + 0.5 * 2)
    c = relaxed_guarantee(0.5, rs, gs, unit="column")  # the paper's per-column reading
    assert c.epsilon == pytest.approx(0.5)
    assert c.epsilon_outlier == pytest.approx(0.5 * 10)
    # GS < RS is impossible (the non-outlier range lies in the domain): a mistyped width
    with pytest.raises(ParameterError, match="smaller than its relaxed sensitivity"):
        relaxed_guarantee(1.0, [4.0], [2.0], unit="column")
    same = relaxed_guarantee(1.0, [4.0], [4.0], unit="column")  # GS = RS: eps' = eps
    assert same.epsilon_outlier == pytest.approx(1.0)
    assert "Theorem 2" in g.description


@pytest.mark.parametrize("epsilon", [0, -1.0, float("nan"), float("inf")])
def test_guarantee_refuses_bad_epsilon(epsilon: float) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        relaxed_guarantee(epsilon, [1.0], [2.0])


def test_guarantee_refuses_mismatched_or_nonpositive_sensitivities() -> None:
    with pytest.raises(ParameterError):
        relaxed_guarantee(1.0, [1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ParameterError):
        relaxed_guarantee(1.0, [0.0], [1.0])
    with pytest.raises(ParameterError):
        relaxed_guarantee(1.0, [1.0], [math.inf])


def test_scaling_choices() -> None:
    rs = np.array([2.0, 8.0])
    assert np.array_equal(column_divisors("relaxed-sensitivity", rs), rs)
    assert np.array_equal(column_divisors("isotropic", rs), [8.0, 8.0])
    assert np.array_equal(column_divisors("none", rs), [1.0, 1.0])
    assert np.array_equal(column_divisors([1.0, 4.0], rs), [1.0, 4.0])
    X = np.array([[2.0, 8.0], [4.0, -16.0]])
    s = column_divisors("relaxed-sensitivity", rs)
    assert np.array_equal(scale_columns(X, s), [[1.0, 1.0], [2.0, -2.0]])
    assert np.array_equal(unscale_columns(scale_columns(X, s), s), X)
    with pytest.raises(ParameterError, match="scaling"):
        column_divisors("standardise", rs)
    with pytest.raises(ParameterError):
        column_divisors([1.0, 0.0], rs)
    with pytest.raises(ParameterError):
        column_divisors([1.0], rs)
