"""Guarantee: validation at the boundary and JSON round trips."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from privad.accounting import Guarantee
from privad.accounting.notions import NOTION_NAMES
from privad.errors import ParameterError

REL = "add or remove one record"


def test_pure_dp_fields_and_summary() -> None:
    g = Guarantee("pure-dp", 0.5, REL, description="noisy count")
    assert g.epsilon == 0.5 and g.k is None and g.epsilon_outlier is None
    assert g.cost == 0.5 and g.spends_budget
    assert "ε=0.5" in g.summary() and REL in str(g)


def test_numpy_and_int_inputs_are_normalised() -> None:
    g = Guarantee("sensitive", np.float64(1), REL, k=np.int64(3))
    assert type(g.epsilon) is float and g.epsilon == 1.0
    assert type(g.k) is int and g.k == 3


def test_guarantee_is_frozen() -> None:
    g = Guarantee("pure-dp", 1.0, REL)
    with pytest.raises(AttributeError):
        g.epsilon = 2.0  # type: ignore[misc]


@pytest.mark.parametrize("eps", [0, -1.0, math.inf, math.nan, None, "0.1", True])
def test_bad_epsilon_refused(eps: object) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        Guarantee("pure-dp", eps, REL)  # type: ignore[arg-type]


def test_unknown_notion_refused() -> None:
    with pytest.raises(ParameterError, match="notion must be one of"):
        Guarantee("approx-dp", 1.0, REL)


def test_empty_neighbouring_refused() -> None:
    with pytest.raises(ParameterError, match="neighbouring"):
        Guarantee("pure-dp", 1.0, "  ")


def test_sensitive_needs_integer_k() -> None:
    with pytest.raises(ParameterError, match="k is required"):
        Guarantee("sensitive", 1.0, REL)
    with pytest.raises(ParameterError, match="k must be an integer >= 1"):
        Guarantee("sensitive", 1.0, REL, k=0)
    with pytest.raises(ParameterError, match="k must be an integer"):
        Guarantee("sensitive", 1.0, REL, k=1.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="k applies only"):
        Guarantee("pure-dp", 1.0, REL, k=2)


def test_relaxed_dp_needs_outlier_epsilon_at_least_epsilon() -> None:
    g = Guarantee("relaxed-dp", 0.5, "change one reading", epsilon_outlier=2.0)
    assert g.epsilon_outlier == 2.0 and g.cost == 0.5
    with pytest.raises(ParameterError, match="epsilon_outlier .* is required"):
        Guarantee("relaxed-dp", 0.5, REL)
    with pytest.raises(ParameterError, match=">= epsilon"):
        Guarantee("relaxed-dp", 0.5, REL, epsilon_outlier=0.25)
    with pytest.raises(ParameterError, match="applies only"):
        Guarantee("pure-dp", 0.5, REL, epsilon_outlier=1.0)


@pytest.mark.parametrize("eps", [None, 0, 0.0])
def test_rmp_has_no_epsilon_and_costs_nothing(eps: object) -> None:
    g = Guarantee("rmp", eps, "one participant's record")  # type: ignore[arg-type]
    assert g.epsilon is None and g.cost == 0.0 and not g.spends_budget


def test_rmp_refuses_a_positive_epsilon() -> None:
    with pytest.raises(ParameterError, match="carries no ε"):
        Guarantee("rmp", 0.5, REL)


@pytest.mark.parametrize(
    "g",
    [
        Guarantee("pure-dp", 0.1, REL, description="count"),
        Guarantee("sensitive", 0.3, "k-sensitive graph", k=4),
        Guarantee("anomaly-restricted-dp", 1e-3, "one non-anomalous record"),
        Guarantee("relaxed-dp", 0.5, "one reading", epsilon_outlier=7.25),
        Guarantee("rmp", None, "one participant"),
    ],
)
def test_dict_round_trip_through_json(g: Guarantee) -> None:
    data = json.loads(json.dumps(g.to_dict()))
    assert Guarantee.from_dict(data) == g
    assert g.notion in NOTION_NAMES


def test_from_dict_rejects_unknown_and_missing_fields() -> None:
    with pytest.raises(ParameterError, match="unknown guarantee field"):
        Guarantee.from_dict({"notion": "pure-dp", "epsilon": 1.0, "neighbouring": REL, "x": 1})
    with pytest.raises(ParameterError, match="missing"):
        Guarantee.from_dict({"notion": "pure-dp", "epsilon": 1.0})
    with pytest.raises(ParameterError, match="epsilon"):
        Guarantee.from_dict({"notion": "pure-dp", "neighbouring": REL})
