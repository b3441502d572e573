"""The correction algorithm (Fig. 2, reconstructed) on hand-constructed examples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privad.errors import DataError, ParameterError
from privad.relaxed.correction import (
    SplitRule,
    analyst_layers,
    corrected_outliers,
    estimate_outlier_layer_radius,
    estimate_outlier_layer_width,
    false_negative_layers,
    index_mask,
    presumed_radius,
    reduction_thresholds,
    split_presumed_outliers,
)
from privad.relaxed.distances import centre_distances, distance_differences
from privad.relaxed.metrics import accuracy, subset_size

# --- a hand example with every case ---------------------------------------------------------
#
# O' = {0, 1, 2, 3, 4}; d_diff over O' sorted: 0.5, 0.6, 0.7 | 5.0, 5.2 (gaps .1 .1 4.3 .2):
# TP = {0, 1, 2}, FP = {3, 4}, d_TP = 0.5, d_FP = 5.0. w_O = 1, so I_L2 = {dist >= 0.5},
# I_L3 = {dist >= 1.5}. Records outside O':
#   5: d_diff -0.3                -> FN_L1
#   6: d_diff 0.2, dist 0.6       -> FN_L2 (0 < 0.2 < 0.5, in I_L2)
#   7: d_diff 0.2, dist 0.4       -> nothing (not in I_L2)
#   8: d_diff 1.0, dist 2.0       -> FN_L3 (0.5 <= 1 <= 5, in I_L3)
#   9: d_diff 1.0, dist 1.0       -> nothing (in I_L2 but not in I_L3)
#  10: d_diff 6.0, dist 3.0       -> nothing (above d_FP)
#  11: d_diff 0.0, dist 3.0       -> nothing (L2 needs > 0, L3 needs >= d_TP)
#  12: d_diff 0.5 = d_TP, dist 3  -> FN_L3 (closed at d_TP)
#  13: d_diff 5.0 = d_FP, dist 3  -> FN_L3 (closed at d_FP)
#  14: d_diff 0.5 = d_TP, dist 1  -> nothing (L2 is open at d_TP, not in I_L3)
D_DIFF = np.array([0.5, 0.7, 0.6, 5.0, 5.2, -0.3, 0.2, 0.2, 1.0, 1.0, 6.0, 0.0, 0.5, 5.0, 0.5])
DIST = np.array([3.0, 3.0, 3.0, 3.0, 3.0, 0.1, 0.6, 0.4, 2.0, 1.0, 3.0, 3.0, 3.0, 3.0, 1.0])
O_PRIME = np.array([0, 1, 2, 3, 4])
W_O = 1.0
N = D_DIFF.size


def test_split_at_largest_gap() -> None:
    s = split_presumed_outliers(D_DIFF, O_PRIME)
    assert s.tp.tolist() == [0, 1, 2]
    assert s.fp.tolist() == [3, 4]
    assert s.d_tp == 0.5
    assert s.d_fp == 5.0
    assert s.gap == pytest.approx(4.3)


def test_analyst_layers_from_distances() -> None:
    i_l2, i_l3 = analyst_layers(np.zeros((N, 2)), 0.5, W_O, distances=DIST)
    assert i_l2.tolist() == [0, 1, 2, 3, 4, 6, 8, 9, 10, 11, 12, 13, 14]
    assert i_l3.tolist() == [0, 1, 2, 3, 4, 8, 10, 11, 12, 13]


def test_each_false_negative_layer_and_output() -> None:
    s = split_presumed_outliers(D_DIFF, O_PRIME)
    i_l2, i_l3 = analyst_layers(np.zeros((N, 2)), s.d_tp, W_O, distances=DIST)
    layers = false_negative_layers(D_DIFF, index_mask(O_PRIME, N, "O'"), i_l2, i_l3, s.d_tp, s.d_fp)
    assert layers.fn_l1.tolist() == [5]
    assert layers.fn_l2.tolist() == [6]
    assert layers.fn_l3.tolist() == [8, 12, 13]
    out = corrected_outliers(s.tp, layers, N)
    assert out.tolist() == [0, 1, 2, 5, 6, 8, 12, 13]
    assert accuracy(out, [0, 5, 6, 7], N) == 0.75
    assert subset_size(out, N) == 8 / N


def test_analyst_layers_measure_from_the_perturbed_mean_by_default() -> None:
    T_prime = np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0], [10.0, 0.0]])  # c' = (4, 0)
    i_l2, i_l3 = analyst_layers(T_prime, 2.0, 3.0)
    assert i_l2.tolist() == [0, 1, 3]  # distances 4, 2, 0, 6
    assert i_l3.tolist() == [3]  # >= 5
    i_l2, _ = analyst_layers(T_prime, 2.0, 3.0, centre=np.zeros(2))  # a public centre
    assert i_l2.tolist() == [1, 2, 3]


def test_when_in_doubt_keep_in_tp() -> None:
    d = np.array([0.0, 1.0, 2.0])  # two equal gaps: split at the higher one
    s = split_presumed_outliers(d, np.arange(3))
    assert s.tp.tolist() == [0, 1] and s.fp.tolist() == [2]
    s = split_presumed_outliers(d, np.arange(3), SplitRule(min_gap=1.0))  # gap must exceed min_gap
    assert s.tp.tolist() == [0, 1, 2] and s.fp.size == 0 and s.d_fp == np.inf
    s = split_presumed_outliers(np.full(4, 2.5), np.arange(4))  # all equal: no split
    assert s.tp.tolist() == [0, 1, 2, 3] and s.fp.size == 0 and s.d_tp == 2.5
    s = split_presumed_outliers(np.array([7.0, 1.0]), np.array([0]))  # one point: TP
    assert s.tp.tolist() == [0] and s.d_tp == 7.0 and s.d_fp == np.inf


def test_empty_presumed_outliers_leave_only_layer_one() -> None:
    d = np.array([-1.0, 0.5, 2.0])
    s = split_presumed_outliers(d, np.zeros(0, dtype=np.int64))
    assert s.d_tp is None and s.tp.size == 0 and s.fp.size == 0
    i_l2, i_l3 = analyst_layers(np.zeros((3, 2)), None, 1.0)
    assert i_l2.size == 0 and i_l3.size == 0
    layers = false_negative_layers(d, np.zeros(3, dtype=bool), i_l2, i_l3, None, s.d_fp)
    assert layers.fn_l1.tolist() == [0]
    assert corrected_outliers(s.tp, layers, 3).tolist() == [0]


def test_no_false_positives_means_no_upper_bound() -> None:
    d = np.array([1.0, 1.0, 3.0, 50.0, 0.5])
    s = split_presumed_outliers(d, np.array([0, 1]))  # equal values: TP = {0, 1}, FP empty
    assert s.d_fp == np.inf
    layers = false_negative_layers(
        d, index_mask(np.array([0, 1]), 5, "O'"), np.arange(5), np.arange(5), s.d_tp, s.d_fp
    )
    assert layers.fn_l3.tolist() == [2, 3]
    assert layers.fn_l2.tolist() == [4]


def test_index_mask_refuses_bad_indices() -> None:
    with pytest.raises(DataError, match="outside"):
        index_mask(np.array([0, 3]), 3, "x")
    with pytest.raises(DataError, match="duplicate"):
        index_mask(np.array([1, 1]), 3, "x")


def test_d_diff_hand_example() -> None:
    # T: (0, 0), (2, 0), (4, 0) -> c = (2, 0); distances 2, 0, 2.
    # T': (0, 0), (2, 3), (7, 0) -> c' = (3, 1); distances sqrt(10), sqrt(5), sqrt(17).
    T = np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0]])
    Tp = np.array([[0.0, 0.0], [2.0, 3.0], [7.0, 0.0]])
    expected = np.array([np.sqrt(10.0) - 2.0, np.sqrt(5.0) - 0.0, np.sqrt(17.0) - 2.0])
    assert np.allclose(distance_differences(T, Tp), expected, rtol=0, atol=1e-15)
    # Definition 4 as printed: c for both terms -> distances of T' from (2, 0): 2, 3, 5
    assert np.allclose(distance_differences(T, Tp, centres="original"), [0.0, 3.0, 3.0])
    assert np.allclose(centre_distances(np.array([[3.0, 4.0, 12.0]]), np.zeros(3)), [13.0])


def test_d_diff_refuses_mismatched_shapes() -> None:
    with pytest.raises(DataError, match="same shape"):
        distance_differences(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(DataError):
        distance_differences(np.zeros(3), np.zeros(3))
    with pytest.raises(DataError, match="NaN"):
        distance_differences(np.zeros((2, 2)), np.array([[0.0, np.nan], [1.0, 1.0]]))
    with pytest.raises(ParameterError, match="centres"):
        distance_differences(np.zeros((2, 2)), np.zeros((2, 2)), centres="median")


def test_outlier_layer_width_estimate() -> None:
    # centre (0, 0); outliers at distances 10, 12 and 13 -> w_O = 3.
    H = np.array(
        [
            [10.0, 0.0],
            [-12.0, 0.0],
            [0.0, 13.0],
            [0.0, -11.0],
            [1.0, 0.0],
            [-1.0, 0.0],
            [0.0, 1.0],
            [0.0, -1.0],
        ]
    )
    c = np.zeros(2)
    assert estimate_outlier_layer_width(H, [0, 1, 2], centre=c) == pytest.approx(3.0)
    mask = np.zeros(8, dtype=bool)
    mask[[0, 1, 2]] = True
    assert estimate_outlier_layer_width(H, mask, centre=c) == pytest.approx(3.0)
    # (0, 50) percentiles: 12 - 10 = 2
    assert estimate_outlier_layer_width(H, [0, 1, 2], quantiles=(0, 50), centre=c) == 2.0
    # default centre: the column means (-0.25, 0.25)
    d = np.hypot(H[:3, 0] + 0.25, H[:3, 1] - 0.25)
    assert estimate_outlier_layer_width(H, [0, 1, 2]) == pytest.approx(d.max() - d.min())
    assert estimate_outlier_layer_width(H, [0]) == 0.0
    with pytest.raises(ParameterError):
        estimate_outlier_layer_width(H, [0, 1], quantiles=(50, 50))
    with pytest.raises(DataError):
        estimate_outlier_layer_width(H, [0, 8])


def test_false_positives_are_at_most_a_share_of_presumed_outliers() -> None:
    # the largest gap (11) is below all but one value: splitting there would call four of
    # five presumed outliers false positives. With the default max_fp_share = 0.5 only the
    # upper gaps are candidates (1.2 -> 5.0); with 1.0 the unrestricted largest gap is used.
    d = np.array([-10.0, 1.0, 1.1, 1.2, 5.0])
    s = split_presumed_outliers(d, np.arange(5))
    assert s.tp.tolist() == [0, 1, 2, 3] and s.fp.tolist() == [4] and s.d_fp == 5.0
    s = split_presumed_outliers(d, np.arange(5), SplitRule(max_fp_share=1.0))
    assert s.tp.tolist() == [0] and s.fp.tolist() == [1, 2, 3, 4] and s.d_fp == 1.0
    s = split_presumed_outliers(d, np.arange(5), SplitRule(max_fp_share=0.0))
    assert s.fp.size == 0 and s.gap == 0.0
    with pytest.raises(ParameterError, match="max_fp_share"):
        SplitRule(max_fp_share=1.5)
    with pytest.raises(ParameterError, match="min_gap"):
        SplitRule(min_gap=-1.0)


# --- the vectorised functions against a literal, set-based reading of the formulas -------


def _reference(d_diff, dist, o_prime, w_o):  # type: ignore[no-untyped-def]
    """Fig. 2 as reconstructed in NOTES.md, written with Python sets and loops."""
    o = sorted(o_prime)
    if not o:
        tp, fp, d_tp, d_fp = set(), set(), None, float("inf")
    else:
        vals = sorted(d_diff[i] for i in o)
        m = len(vals)
        k_min = max(0, m - 1 - (m // 2))  # max_fp_share = 0.5
        best, split = 0.0, m
        for k in range(k_min, m - 1):
            g = vals[k + 1] - vals[k]
            if g > 0 and g >= best:  # ">=": the highest of equal gaps
                best, split = g, k + 1
        thr = vals[split - 1]
        tp = {i for i in o if d_diff[i] <= thr}
        fp = set(o) - tp
        d_tp = min(d_diff[i] for i in tp)
        d_fp = min((d_diff[i] for i in fp), default=float("inf"))
    n = len(d_diff)
    i_l2 = set() if d_tp is None else {j for j in range(n) if dist[j] >= d_tp}
    i_l3 = set() if d_tp is None else {j for j in range(n) if dist[j] >= d_tp + w_o}
    rest = set(range(n)) - set(o)
    fn1 = {i for i in rest if d_diff[i] < 0}
    fn2 = set() if d_tp is None else {i for i in i_l2 & rest if 0 < d_diff[i] < d_tp}
    fn3 = set() if d_tp is None else {i for i in i_l3 & rest if d_tp <= d_diff[i] <= d_fp}
    return tp, fp, fn1, fn2, fn3, tp | fn1 | fn2 | fn3


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-8, 8), min_size=1, max_size=30),
    st.data(),
    st.integers(0, 3),
)
def test_matches_set_based_reference(values: list[int], data, w_o: int) -> None:  # type: ignore[no-untyped-def]
    n = len(values)
    d_diff = np.array(values, dtype=np.float64) / 2.0  # many ties, on purpose
    dist = np.array(data.draw(st.lists(st.integers(0, 10), min_size=n, max_size=n)), float)
    o_prime = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1)))), dtype=np.int64)
    tp, fp, fn1, fn2, fn3, out = _reference(d_diff, dist, o_prime, float(w_o))
    s = split_presumed_outliers(d_diff, o_prime)
    assert set(s.tp.tolist()) == tp and set(s.fp.tolist()) == fp
    i_l2, i_l3 = analyst_layers(np.zeros((n, 2)), s.d_tp, float(w_o), distances=dist)
    layers = false_negative_layers(d_diff, index_mask(o_prime, n, "O'"), i_l2, i_l3, s.d_tp, s.d_fp)
    assert set(layers.fn_l1.tolist()) == fn1
    assert set(layers.fn_l2.tolist()) == fn2
    assert set(layers.fn_l3.tolist()) == fn3
    assert set(corrected_outliers(s.tp, layers, n).tolist()) == out


# --- reconstruction options of steps 3 and 4 ---------------------------------------------------


def test_d_tp_percentile_floor_and_d_fp_rules() -> None:
    # TP values 0.5, 0.6, 0.7 (record 0, 2, 1); FP 5.0, 5.2
    s = split_presumed_outliers(D_DIFF, O_PRIME, SplitRule(d_tp_percentile=50.0))
    assert s.d_tp == pytest.approx(0.6) and s.tp.tolist() == [0, 1, 2]
    s = split_presumed_outliers(D_DIFF, O_PRIME, SplitRule(d_tp_percentile=100.0))
    assert s.d_tp == pytest.approx(0.7)
    d = np.array([-3.0, 1.0, 1.1, 9.0])
    assert split_presumed_outliers(d, np.arange(4)).d_tp == -3.0
    assert split_presumed_outliers(d, np.arange(4), SplitRule(d_tp_floor=0.0)).d_tp == 0.0
    assert split_presumed_outliers(D_DIFF, O_PRIME, SplitRule(d_tp_floor=0.0)).d_tp == 0.5
    s = split_presumed_outliers(
        D_DIFF, O_PRIME, SplitRule(d_fp_rule="percentile", d_fp_percentile=50.0)
    )
    assert s.d_fp == pytest.approx(5.1) and s.fp.tolist() == [3, 4]
    assert split_presumed_outliers(D_DIFF, O_PRIME, SplitRule(d_fp_rule="none")).d_fp == float(
        "inf"
    )
    s = split_presumed_outliers(D_DIFF, O_PRIME, SplitRule(d_fp_rule="layer"), w_o=1.5)
    assert s.d_fp == pytest.approx(2.0) and s.fp.tolist() == [3, 4]  # d_TP + w_O
    layer_floor = SplitRule(d_fp_rule="layer", d_tp_floor=0.0)
    s = split_presumed_outliers(d, np.arange(4), layer_floor, w_o=1.0)
    assert s.d_fp == 1.0
    with pytest.raises(ParameterError, match="w_o"):
        split_presumed_outliers(D_DIFF, O_PRIME, SplitRule(d_fp_rule="layer"))


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("min_gap", -0.1, ">= 0"),
        ("max_fp_share", 1.5, r"\[0, 1\]"),
        ("d_tp_percentile", 101.0, r"\[0, 100\]"),
        ("d_tp_percentile", -1.0, ">= 0"),
        ("d_tp_floor", float("inf"), "finite number or None"),
        ("d_tp_floor", "0", "finite number or None"),
        ("d_tp_floor", True, "finite number or None"),
        ("d_fp_rule", "max", "percentile"),
        ("d_fp_percentile", 200.0, r"\[0, 100\]"),
    ],
)
def test_split_rule_names_the_bad_field_and_what_is_allowed(
    field: str, value: object, allowed: str
) -> None:
    with pytest.raises(ParameterError, match=field) as err:
        SplitRule(**{field: value})
    assert err.match(allowed)


def test_split_rule_is_checked_frozen_and_required() -> None:
    rule = SplitRule(min_gap=1, d_tp_floor=np.float32(0.0))
    assert rule == SplitRule(min_gap=1.0, d_tp_floor=0.0)  # normalised to float
    assert type(rule.min_gap) is float and type(rule.d_tp_floor) is float
    assert SplitRule() == SplitRule(0.0, 0.5, 0.0, None, "min", 0.0)  # the paper's minima
    with pytest.raises(AttributeError):
        rule.min_gap = 2.0  # type: ignore[misc]
    with pytest.raises(ParameterError, match="rule must be a SplitRule"):
        split_presumed_outliers(D_DIFF, O_PRIME, {"min_gap": 1.0})  # type: ignore[arg-type]


def test_reduction_thresholds() -> None:
    assert reduction_thresholds(0.5, 1.0) == (0.5, 1.5)  # "notes"
    assert reduction_thresholds(-2.0, 1.0, reduction="notes") == (-2.0, -1.0)
    assert reduction_thresholds(0.5, 1.0, reduction="radius", outlier_radius=2.5) == (2.5, 3.0)
    # the negative part of FN_L3's band belongs to FN_L1: no lowering below ρ
    assert reduction_thresholds(-2.0, 1.0, reduction="radius", outlier_radius=2.5) == (2.5, 2.5)
    with pytest.raises(ParameterError):
        reduction_thresholds(0.5, 1.0, reduction="radius")
    with pytest.raises(ParameterError):
        reduction_thresholds(0.5, 1.0, reduction="box")


def test_radius_reduction_on_the_hand_example() -> None:
    # ρ = 2: t2 = 2, t3 = 2.5. Record 6 (dist 0.6) leaves FN_L2, 8 (dist 2.0) leaves FN_L3
    i_l2, i_l3 = analyst_layers(
        np.zeros((N, 2)), 0.5, W_O, distances=DIST, reduction="radius", outlier_radius=2.0
    )
    assert i_l2.tolist() == [0, 1, 2, 3, 4, 8, 10, 11, 12, 13]
    assert i_l3.tolist() == [0, 1, 2, 3, 4, 10, 11, 12, 13]
    layers = false_negative_layers(D_DIFF, index_mask(O_PRIME, N, "O'"), i_l2, i_l3, 0.5, 5.0)
    assert layers.fn_l1.tolist() == [5]
    assert layers.fn_l2.tolist() == []
    assert layers.fn_l3.tolist() == [12, 13]
    # without a radius the analyst estimates it from O': median dist over O' (3.0) − w_O
    assert presumed_radius(DIST, O_PRIME, W_O) == pytest.approx(2.0)
    assert presumed_radius(DIST, np.zeros(0, dtype=np.int64), W_O) is None
    est = analyst_layers(
        np.zeros((N, 2)), 0.5, W_O, distances=DIST, reduction="radius", presumed_outliers=O_PRIME
    )
    assert [a.tolist() for a in est] == [i_l2.tolist(), i_l3.tolist()]
    with pytest.raises(ParameterError):
        analyst_layers(np.zeros((N, 2)), 0.5, W_O, distances=DIST, reduction="radius")
    empty = analyst_layers(np.zeros((N, 2)), None, W_O, reduction="radius")
    assert [a.size for a in empty] == [0, 0]


def test_notes_reduction_takes_every_record_when_a_true_positive_moved_inwards() -> None:
    # the failure mode of the NOTES reading on the paper's data: one detected outlier moved
    # towards the centre (d_diff = -3), so d_TP < 0 and d_TP + w_O < 0 <= every distance
    core = np.linspace(0.0, 1.0, 50)  # unperturbed core distances of true negatives
    d_core = np.full(50, 0.3)  # they moved outwards by 0.3
    ring = np.array([10.0, 10.0, 10.0])
    d_ring = np.array([-3.0, 0.4, 0.5])  # record 50 is a detected outlier pushed inwards
    d_diff = np.concatenate([d_core, d_ring])
    dist = np.concatenate([core, ring]) + d_diff  # d_{c'}(T') = d_c(T) + d_diff
    o_prime = np.array([50, 52])  # record 51 (an outlier) was missed
    s = split_presumed_outliers(d_diff, o_prime)  # TP = {50}, FP = {52} (gap 3.5)
    assert s.d_tp == -3.0 and s.d_fp == 0.5
    mask = index_mask(o_prime, 53, "O'")
    notes = analyst_layers(np.zeros((53, 2)), s.d_tp, 1.0, distances=dist)
    out_notes = corrected_outliers(
        s.tp, false_negative_layers(d_diff, mask, *notes, s.d_tp, s.d_fp), 53
    )
    assert out_notes.tolist() == [k for k in range(53) if k != 52]  # all but the FP
    radius = analyst_layers(
        np.zeros((53, 2)), s.d_tp, 1.0, distances=dist, reduction="radius", outlier_radius=9.0
    )
    out_radius = corrected_outliers(
        s.tp, false_negative_layers(d_diff, mask, *radius, s.d_tp, s.d_fp), 53
    )
    assert out_radius.tolist() == [50, 51]  # the true negatives are reduced away


def test_outlier_layer_radius_estimate() -> None:
    H = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, -5.0], [1.0, 1.0], [-1.0, -1.0]])
    c = H.mean(axis=0)
    d = centre_distances(H, c)
    assert estimate_outlier_layer_radius(H, [1, 2]) == pytest.approx(d[[1, 2]].min())
    assert estimate_outlier_layer_radius(H, [1, 2], percentile=100) == pytest.approx(
        d[[1, 2]].max()
    )
    mask = np.zeros(5, dtype=bool)
    mask[[1, 2]] = True
    assert estimate_outlier_layer_radius(H, mask) == pytest.approx(d[[1, 2]].min())
    assert estimate_outlier_layer_radius(H, [1], centre=[0.0, 0.0]) == pytest.approx(3.0)
    with pytest.raises(DataError):
        estimate_outlier_layer_radius(H, [])
    with pytest.raises(DataError):
        estimate_outlier_layer_radius(H, [9])
    with pytest.raises(ParameterError):
        estimate_outlier_layer_radius(H, [1], percentile=-1)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(5, 40), st.floats(0.0, 3.0))
def test_radius_reduction_keeps_every_reachable_outlier(data, n: int, w_o: float) -> None:  # type: ignore[no-untyped-def]
    """With ρ at most the outliers' core distance, the reduction loses no false negative.

    Every outlier outside O' whose d_diff is at most d_FP is in FN_L1 ∪ FN_L2 ∪ FN_L3,
    because d_{c'}(𝒯'[j]) = d_c(𝒯[j]) + d_diff[j] (Definition 4 with the step-1c centres).
    """
    r = np.array(data.draw(st.lists(st.floats(0.0, 20.0), min_size=n, max_size=n)))
    d_diff = np.array(data.draw(st.lists(st.floats(-20.0, 20.0), min_size=n, max_size=n)))
    d_diff = np.maximum(d_diff, -r)  # a distance cannot become negative
    dist = r + d_diff
    o_prime = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1)))), dtype=np.int64)
    rho = data.draw(st.floats(0.0, 20.0))
    outliers = np.flatnonzero(r >= rho)
    s = split_presumed_outliers(d_diff, o_prime)
    i_l2, i_l3 = analyst_layers(
        np.zeros((n, 2)), s.d_tp, w_o, distances=dist, reduction="radius", outlier_radius=rho
    )
    layers = false_negative_layers(d_diff, index_mask(o_prime, n, "O'"), i_l2, i_l3, s.d_tp, s.d_fp)
    out = set(corrected_outliers(s.tp, layers, n).tolist())
    if s.d_tp is None:
        return
    for j in outliers:
        if j in set(o_prime.tolist()) or d_diff[j] > s.d_fp:
            continue
        if d_diff[j] == 0.0:  # the paper's open bands: 0 is in no layer unless d_TP <= 0
            continue
        assert j in out, (j, r[j], d_diff[j], s.d_tp, s.d_fp)
