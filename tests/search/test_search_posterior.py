"""Bayes updates (eqs. 6, 11, 12) by hand on tiny n, and the two belief representations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privad.errors import DataError, ParameterError
from privad.search.groups import QueryOrder
from privad.search.models import BinaryModel, LaplaceMaxModel
from privad.search.posterior import (
    DensePosterior,
    SegmentPosterior,
    binary_update,
    laplace_update,
    log_bayes_update,
)
from privad.search.selection import median_index, median_split_size


def test_eq6_by_hand():
    f = np.full(4, 0.25)
    q = np.array([True, True, False, False])
    # answer 1: R = Q; weights (1-p) on Q, p off Q; p = 0.2 -> (0.2, 0.2, 0.05, 0.05) / 0.5
    np.testing.assert_allclose(binary_update(f, q, 1, 0.2), [0.4, 0.4, 0.1, 0.1], rtol=1e-14)
    # answer 0: R = complement
    np.testing.assert_allclose(binary_update(f, q, 0, 0.2), [0.1, 0.1, 0.4, 0.4], rtol=1e-14)
    # non-uniform prior: f = (.5, .1, .2, .2), Q = {0}, answer 1, p = .25
    f2 = np.array([0.5, 0.1, 0.2, 0.2])
    z = 0.5 * 0.75 + 0.5 * 0.25
    expected = np.array([0.5 * 0.75, 0.1 * 0.25, 0.2 * 0.25, 0.2 * 0.25]) / z
    np.testing.assert_allclose(
        binary_update(f2, np.array([True, False, False, False]), True, 0.25), expected, rtol=1e-14
    )


def test_eq11_12_by_hand():
    f = np.array([0.5, 0.25, 0.25])
    q = np.array([True, False, False])
    t_low, t_high, lam = 1.0, 2.0, 0.5
    y, y_bar = 1.8, 0.9
    phi_in = math.exp(-(abs(y - t_high) + abs(y_bar - t_low)) / lam)  # exp(-0.6)
    phi_out = math.exp(-(abs(y - t_low) + abs(y_bar - t_high)) / lam)  # exp(-3.8)
    z = 0.5 * phi_in + 0.5 * phi_out
    expected = np.array([0.5 * phi_in, 0.25 * phi_out, 0.25 * phi_out]) / z
    got = laplace_update(f, q, (y, y_bar), t_low=t_low, t_high=t_high, scale=lam)
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    # the model gives the same two log-likelihoods (up to the shared constant)
    model = LaplaceMaxModel(2.0, t_low, t_high, scale=lam)
    a, b = model.log_likelihoods((y, y_bar))
    assert a == pytest.approx(-(0.2 + 0.1) / 0.5)
    assert a - b == pytest.approx(math.log(phi_in / phi_out))


def test_binary_model_likelihoods():
    m = BinaryModel(0.2, math.log(4), kind="randomized-response")
    assert m.log_likelihoods(True) == pytest.approx((math.log(0.8), math.log(0.2)), rel=1e-15)
    assert m.log_likelihoods(0) == pytest.approx((math.log(0.2), math.log(0.8)), rel=1e-15)
    assert m.log_likelihood_absent(1) == pytest.approx(math.log(0.2), rel=1e-15)
    with pytest.raises(DataError):
        m.log_likelihoods(2)


def test_log_space_survives_many_updates():
    # 3000 confident answers would underflow probabilities; log weights stay finite
    lf = np.log(np.full(8, 1 / 8))
    q = np.array([True] + [False] * 7)
    for _ in range(3000):
        lf = log_bayes_update(lf, q, 0.0, -5.0)
    assert np.isfinite(lf).all()
    assert lf[0] == pytest.approx(0.0, abs=1e-12)
    assert lf[1] == pytest.approx(-15000.0, rel=1e-12)


def _run_both(answers, seed=3, absent_prior=None):
    order = QueryOrder.random(10, seed)
    seg = SegmentPosterior(order, absent_prior=absent_prior)
    dense = DensePosterior(10, absent_prior=absent_prior)
    sizes = [5, 3, 8, 1, 9, 4]
    sides = [False, True, False, True, False, False]
    for size, (a, b), comp in zip(sizes, answers, sides, strict=True):
        g = order.prefix(size, complement=comp)
        c = None if absent_prior is None else -0.5
        seg.update(g, a, b, c)
        dense.update(g, a, b, c)
    return seg, dense


@pytest.mark.parametrize("absent_prior", [None, 0.3])
def test_segment_and_dense_agree(absent_prior):
    answers = [(-0.1, -1.3), (-2.0, -0.2), (-0.7, -0.9), (0.0, -3.0), (-1.1, -0.1), (-0.4, -0.4)]
    seg, dense = _run_both(answers, absent_prior=absent_prior)
    np.testing.assert_allclose(seg.log_probabilities(), dense.log_probabilities(), atol=1e-12)
    assert seg.max_log_odds() == pytest.approx(dense.max_log_odds(), abs=1e-12)
    assert seg.absent_probability == pytest.approx(dense.absent_probability, abs=1e-14)
    total = seg.probabilities().sum() + seg.absent_probability
    assert total == pytest.approx(1.0, abs=1e-12)
    assert seg.n_segments <= 7


def test_max_log_odds_by_hand():
    post = DensePosterior(4)
    post.update(np.array([True, False, False, False]), math.log(0.9), math.log(0.1))
    f = post.probabilities()
    assert post.max_log_odds() == pytest.approx(math.log(f[0] / (1 - f[0])), rel=1e-12)
    # far beyond double precision of 1 - f: log-odds 2000 nats stay exact
    for _ in range(100):
        post.update(np.array([True, False, False, False]), 0.0, -20.0)
    assert post.max_log_odds() > 1990


def test_top_k_order_and_ties():
    order = QueryOrder(np.array([3, 1, 0, 2, 4]))
    seg = SegmentPosterior(order)
    seg.update(order.prefix(2), 0.0, -1.0)  # items 3 and 1 tie on top
    top = seg.top(3)
    assert list(top[:2]) == [3, 1]  # ties broken by position in the random order
    assert top[2] in (0, 2, 4)
    dense = DensePosterior(5, tiebreak=order)
    dense.update(order.prefix(2), 0.0, -1.0)
    assert list(dense.top(2)) == [3, 1]


def test_median_index_eq10():
    # M(f) = max{m : S(m) < 1 - S(m)}
    assert median_index([0.1, 0.2, 0.3, 0.4]) == 2  # S(2) = .3 < .5 <= S(3) = .6
    assert median_index([0.25, 0.25, 0.25, 0.25]) == 1  # S(2) = .5 is not < .5
    assert median_index([0.6, 0.2, 0.2]) == 0
    assert median_split_size([0.6, 0.2, 0.2], "lower") == 1  # never empty
    assert median_split_size([0.1, 0.2, 0.3, 0.4], "lower") == 2
    assert median_split_size([0.1, 0.2, 0.3, 0.4], "nearest") == 3  # .6 is closer to .5 than .3
    assert median_split_size([0.45, 0.1, 0.45], "nearest") == 1
    assert median_split_size([0.0, 0.0, 0.9, 0.1], "lower") == 2  # the stall of eq. (10)
    assert median_split_size([0.0, 0.0, 0.9, 0.1], "nearest") == 3


def test_randomized_split_has_mean_half():
    masses = [0.1, 0.2, 0.3, 0.4]  # S(2) = .3, S(3) = .6: take 3 with prob 2/3
    from privad.noise import as_randomness

    rng = as_randomness(5)
    sizes = np.array([median_split_size(masses, "randomized", rng) for _ in range(3000)])
    mass = np.where(sizes == 3, 0.6, 0.3)
    assert abs(mass.mean() - 0.5) < 0.02


def test_posterior_validation():
    with pytest.raises(ParameterError):
        DensePosterior(1)
    with pytest.raises(ParameterError):
        DensePosterior(4, absent_prior=1.0)
    order = QueryOrder.random(6, 1)
    seg = SegmentPosterior(order)
    with pytest.raises(ParameterError):
        seg.update(np.ones(6, dtype=bool), 0.0, 0.0)  # not a prefix of its own order
    with pytest.raises(ParameterError):
        seg.update(QueryOrder.random(6, 2).prefix(3), 0.0, 0.0)
    with pytest.raises(DataError):
        seg.update(order.prefix(0), 0.0, 0.0)
    with pytest.raises(DataError):
        seg.update(order.prefix(2), float("nan"), 0.0)
    with pytest.raises(ParameterError):
        SegmentPosterior(order, absent_prior=0.5).update(order.prefix(2), 0.0, 0.0)
    with pytest.raises(DataError):
        binary_update([0.5, 0.6], [True, False], 1, 0.2)


@pytest.mark.parametrize("kind", ["randomized-response", "binarized", "laplace"])
def test_one_search_step_by_hand(kind):
    # one query through the loop, then eq. (6) or eqs. (11)-(12) by hand on n = 4
    from privad.search import MaxQueries, make_oracle, search

    x = np.array([0.2, 2.0, 0.9, 0.5])
    oracle = make_oracle(kind, x, 1.0, 1.6, 0.8, rng=3)
    res = search(oracle, halting=MaxQueries(1), max_queries=None, trace=True, rng=4)
    (entry,) = res.trace
    in_q = np.zeros(4, dtype=bool)
    in_q[res.belief.order.permutation[: entry.query_size]] = True
    f0 = np.full(4, 0.25)
    if kind == "laplace":
        expected = laplace_update(
            f0, in_q, entry.answer, t_low=1.0, t_high=1.6, scale=oracle.model.scale
        )
        lam = oracle.model.scale
        assert lam == pytest.approx(1.0 / 0.8, rel=1e-11)
    else:
        expected = binary_update(f0, in_q, entry.answer, oracle.model.p)
        if entry.answer:
            np.testing.assert_allclose(expected[in_q], 2 * (1 - oracle.model.p) / 4)
    np.testing.assert_allclose(res.posterior, expected, rtol=1e-12)
