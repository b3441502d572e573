"""Composition rules against hand-computed values."""

from __future__ import annotations

import pytest

from privad.accounting import Guarantee, parallel, per_ball, scaled, sequential
from privad.errors import ParameterError

REL = "add or remove one record"


def dp(eps: float, rel: str = REL) -> Guarantee:
    return Guarantee("pure-dp", eps, rel)


def test_sequential_adds_epsilon_exactly() -> None:
    g = sequential([dp(0.1), dp(0.2)])
    assert g.epsilon == 0.3  # not 0.30000000000000004
    assert g.notion == "pure-dp" and g.neighbouring == REL
    assert sequential([dp(0.1)] * 10).epsilon == 1.0
    assert sequential([dp(0.5), dp(0.25), dp(1.0)]).epsilon == 1.75


def test_parallel_takes_the_maximum() -> None:
    assert parallel([dp(0.1), dp(0.7), dp(0.3)]).epsilon == 0.7
    assert parallel([dp(2.0)]).epsilon == 2.0


def test_scaled_multiplies() -> None:
    assert scaled(dp(0.1), 3).epsilon == 0.3
    assert scaled(dp(0.25), 1) == dp(0.25)
    with pytest.raises(ParameterError, match="m must be an integer >= 1"):
        scaled(dp(0.1), 0)
    with pytest.raises(ParameterError, match="m must be an integer"):
        scaled(dp(0.1), 1.5)  # type: ignore[arg-type]


def test_sensitive_takes_smallest_k() -> None:
    rel = "k-sensitive neighbourhood graph of (β, r)-anomalies"
    a = Guarantee("sensitive", 0.5, rel, k=3)
    b = Guarantee("sensitive", 0.25, rel, k=2)
    s = sequential([a, b])
    assert (s.epsilon, s.k) == (0.75, 2)
    p = parallel([a, b])
    assert (p.epsilon, p.k) == (0.5, 2)
    # Claim 5: n queries, at most m = 3 of the queried records in any ball: 3 · max ε.
    c = per_ball([a, b, Guarantee("sensitive", 0.1, rel, k=5)], 3)
    assert (c.notion, c.epsilon, c.k) == ("sensitive", 1.5, 2)
    assert scaled(a, 4).k == 3 and scaled(a, 4).epsilon == 2.0


def test_relaxed_dp_composes_both_parameters() -> None:
    a = Guarantee("relaxed-dp", 0.1, "one reading", epsilon_outlier=1.0)
    b = Guarantee("relaxed-dp", 0.2, "one reading", epsilon_outlier=0.5)
    s = sequential([a, b])
    assert (s.epsilon, s.epsilon_outlier) == (0.3, 1.5)
    p = parallel([a, b])
    assert (p.epsilon, p.epsilon_outlier) == (0.2, 1.0)
    t = scaled(a, 3)
    assert (t.epsilon, t.epsilon_outlier) == (0.3, 3.0)


def test_anomaly_restricted_search_total() -> None:
    # T queries of an ε-DP oracle: Tε in total (Bittner et al., halting rule (T+1)ε > b).
    g = Guarantee("anomaly-restricted-dp", 0.05, "one non-anomalous record")
    assert sequential([g] * 20).epsilon == 1.0


def test_rmp_composes_to_rmp_without_epsilon() -> None:
    r = Guarantee("rmp", None, "one participant")
    assert sequential([r, r]).epsilon is None
    assert parallel([r, r]).notion == "rmp"
    assert scaled(r, 5).epsilon is None


def test_mixing_notions_raises() -> None:
    with pytest.raises(ParameterError, match="different notions"):
        sequential([dp(0.1), Guarantee("sensitive", 0.1, REL, k=1)])
    with pytest.raises(ParameterError, match="different notions"):
        parallel([dp(0.1), Guarantee("rmp", None, REL)])


def test_differing_relations_need_an_explicit_one() -> None:
    a, b = dp(0.1, "add or remove one record"), dp(0.2, "change one record")
    with pytest.raises(ParameterError, match="neighbouring relations"):
        sequential([a, b])
    g = sequential([a, b], neighbouring="change one record")
    assert g.epsilon == 0.3 and g.neighbouring == "change one record"


def test_empty_and_non_guarantee_inputs_raise() -> None:
    with pytest.raises(ParameterError, match="at least one"):
        sequential([])
    with pytest.raises(ParameterError, match="Guarantee objects"):
        parallel([0.1])  # type: ignore[list-item]
    with pytest.raises(ParameterError, match="Guarantee"):
        scaled(0.1, 2)  # type: ignore[arg-type]


def test_description_defaults_and_override() -> None:
    assert sequential([dp(0.1), dp(0.1)]).description == "sequential composition of 2 mechanisms"
    assert sequential([dp(0.1)], description="x").description == "x"
