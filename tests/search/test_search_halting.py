"""Halting rules stop where they should; the budget rule never exceeds b."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privad.errors import ParameterError
from privad.search import (
    AnyOf,
    BenOrHassidim,
    LogOddsThreshold,
    MaxQueries,
    PosteriorThreshold,
    PrivacyBudget,
    make_oracle,
    search,
)
from privad.search.halting import AllOf, SearchState
from privad.search.posterior import DensePosterior
from privad.search.theory import ben_or_hassidim_level


def _data(n=200, anomaly=37):
    x = np.linspace(0.0, 1.0, n)
    x[anomaly] = 1.8
    return x


@pytest.mark.parametrize(
    ("epsilon", "budget", "expected"),
    [(0.1, 0.3, 3), (0.1, 1.0, 10), (0.3, 1.0, 3), (0.25, 1.0, 4), (0.7, 0.5, 0), (1.0, 2.5, 2)],
)
def test_budget_rule_exact(epsilon, budget, expected):
    # stop when (T + 1) eps > b, in exact decimal arithmetic: 3 x 0.1 fits in 0.3
    oracle = make_oracle("binarized", _data(), 1.0, 1.5, epsilon, rng=1)
    res = search(oracle, halting=PosteriorThreshold(0.999999), budget=budget, rng=2)
    assert res.n_queries == expected
    assert res.halted_by == ("budget",)
    assert PrivacyBudget(budget).query_limit(epsilon) == expected
    if expected:
        assert res.guarantee.epsilon <= budget
        assert res.worst_case_guarantee.epsilon <= budget


def test_budget_never_exceeded():
    oracle = make_oracle("laplace", _data(), 1.0, 1.5, 0.37, rng=3)
    for b in (0.37, 0.5, 1.11, 2.0, 3.7, 5.0):
        res = search(oracle, halting=LogOddsThreshold(1e-9), budget=b, rng=4)
        assert res.n_queries * 0.37 <= b + 1e-12
        assert (res.n_queries + 1) * 0.37 > b  # and it used what it could
        assert res.epsilon_spent <= b


def test_posterior_threshold_stops_at_first_crossing():
    oracle = make_oracle("laplace", _data(), 1.0, 1.5, 1.0, rng=5)
    for alpha in (0.3, 0.5, 0.9):
        res = search(oracle, halting=PosteriorThreshold(alpha), trace=True, rng=6)
        maxima = [e.max_probability for e in res.trace]
        assert maxima[-1] > alpha
        assert all(m <= alpha for m in maxima[:-1])
        assert res.halted_by == ("posterior",)


def test_log_odds_rule_eq25():
    oracle = make_oracle("binarized", _data(), 1.0, 1.5, 1.0, rng=7)
    res = search(oracle, halting=LogOddsThreshold(0.01), trace=True, rng=8)
    f = res.max_probability
    assert math.log(f / (1 - f)) > math.log(100)
    before = res.trace[-2].max_probability
    assert math.log(before / (1 - before)) <= math.log(100) + 1e-9


def test_ben_or_hassidim_rule():
    oracle = make_oracle("binarized", _data(), 1.0, 1.5, 1.0, rng=9)
    res = search(oracle, halting=BenOrHassidim(), trace=True, rng=10)
    level = ben_or_hassidim_level(200)
    assert res.max_probability > level
    assert res.trace[-2].max_probability <= level
    assert res.halted_by == ("ben-or-hassidim",)


def test_max_queries_and_combinations():
    oracle = make_oracle("binarized", _data(), 1.0, 1.5, 0.2, rng=11)
    res = search(oracle, halting=PosteriorThreshold(0.99) | MaxQueries(7), rng=12)
    assert res.n_queries == 7 and res.halted_by == ("max-queries",)
    res = search(oracle, halting=MaxQueries(5) & MaxQueries(9), max_queries=None, rng=12)
    assert res.n_queries == 9
    rule = AnyOf(PrivacyBudget(1.0), MaxQueries(3)) | PosteriorThreshold(0.5)
    assert len(rule.rules) == 3 and rule.query_limit(0.25) == 3
    assert AllOf(PrivacyBudget(1.0), MaxQueries(3)).query_limit(0.25) == 4
    assert AllOf(PrivacyBudget(1.0), PosteriorThreshold(0.5)).query_limit(0.25) is None
    res = search(oracle, halting=PosteriorThreshold(0.5), budget=0.4, max_queries=2, rng=1)
    assert res.n_queries == 2 and set(res.halted_by) == {"budget", "max-queries"}


def test_rules_on_a_state():
    post = DensePosterior(4)
    post.update(np.array([True, False, False, False]), math.log(0.9), math.log(0.1))
    state = SearchState(n_queries=1, epsilon=0.5, posterior=post)  # f = (.75, 1/12 ...)
    assert PosteriorThreshold(0.7).fired(state) == ("posterior",)
    assert PosteriorThreshold(0.75 + 1e-9).fired(state) == ()
    assert LogOddsThreshold(0.34).fired(state) == ("log-odds",)  # log 3 > log(1/.34)
    assert LogOddsThreshold(0.33).fired(state) == ()
    assert PrivacyBudget(1.0).fired(state) == ()  # 2 x 0.5 = 1.0 is not > 1.0
    assert PrivacyBudget(0.99).fired(state) == ("budget",)
    assert MaxQueries(1).fired(state) == ("max-queries",)


def test_halting_validation():
    with pytest.raises(ParameterError):
        PosteriorThreshold(1.0)
    with pytest.raises(ParameterError):
        LogOddsThreshold(0.0)
    with pytest.raises(ParameterError):
        PrivacyBudget(0.0)
    with pytest.raises(ParameterError):
        MaxQueries(-1)
    with pytest.raises(ParameterError):
        AnyOf()
    with pytest.raises(ParameterError):
        AnyOf(PosteriorThreshold(0.5), "budget")  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        search(make_oracle("laplace", _data(), 1.0, 1.5, 1.0), halting="budget")  # type: ignore[arg-type]
