"""Per-record exposure of a sensitive-privacy release (curator-only information)."""

from __future__ import annotations

import numpy as np
import pytest

from privad.accounting import Ledger
from privad.accounting.tight import optimal_epsilon
from privad.sensitive import SensitiveAnomalyIdentifier
from privad.sensitive.accounting import RecordExposure, record_exposure

# 1-D records: a cluster of three within r = 0.1 of each other, and two loners.
X = np.array([[0.0], [0.05], [0.1], [1.0], [3.0]])


def test_every_record_asked_once_reads_the_own_ball_counts() -> None:
    est = SensitiveAnomalyIdentifier(beta=2, r=0.1, epsilon=0.5, rng=0).fit(X)
    rel = est.release()
    # record j can move the answers of the records within 0.1 of it: 3, 3, 3, 1, 1
    np.testing.assert_array_equal(rel.exposure.counts, [3, 3, 3, 1, 1])
    assert rel.exposure.m == 3 and rel.bound.m == 3  # the charge: Claim 5's m
    s = rel.spend.metadata["per_record"]
    assert (s["records"], s["max"], s["median"], s["untouched"]) == (5, 3, 3, 0)
    assert s["bins"] == [[1, 1, 2], [2, 3, 3]]
    assert s["loss_linear_m"] == 1.5 and s["loss_linear_max"] == 1.5
    assert s["delta"] is None and s["loss_optimal_m"] is None


def test_query_records_are_counted_around_the_records() -> None:
    est = SensitiveAnomalyIdentifier(beta=2, r=0.1, epsilon=0.5, rng=0).fit(X)
    Q = np.array([[0.05], [0.95], [0.96]])
    rel = est.release(Q)
    # 0, 0.05, 0.1 each have the query 0.05 within 0.1; 1.0 has 0.95 and 0.96; 3.0 none
    np.testing.assert_array_equal(rel.exposure.counts, [1, 1, 1, 2, 0])
    assert rel.exposure.m == 2  # 0.95 and 0.96 lie within 2r of each other
    s = rel.spend.metadata["per_record"]
    assert s["bins"] == [[0, 0, 1], [1, 1, 3], [2, 2, 1]]
    assert (s["max"], s["untouched"], s["m"]) == (2, 1, 2)


def test_a_count_cap_does_not_cap_the_exposure() -> None:
    four = np.vstack([X, [[0.02]]])  # the cluster has four records: capped at 3 below
    capped = SensitiveAnomalyIdentifier(beta=1, r=0.1, epsilon=0.5, count_cap=3, rng=0)
    rel = capped.fit(four).release()
    assert rel.statistics.ball.max() == 3  # the mechanism reads capped counts
    np.testing.assert_array_equal(rel.exposure.counts, [4, 4, 4, 1, 1, 4])


def test_the_optimal_loss_is_at_the_scopes_delta() -> None:
    est = SensitiveAnomalyIdentifier(beta=2, r=0.1, epsilon=0.5, rng=0).fit(X)
    with Ledger(":memory:") as book:
        book.set_budget("s", "sensitive", 10.0, delta=0.05)
        rel = est.release(ledger=book, scope="s")
        s = book.history("s")[0].metadata["per_record"]
        text = book.statement("s")
    assert rel.exposure.delta == s["delta"] == 0.05
    assert s["loss_optimal_m"] == float(optimal_epsilon(0.5, 3, 0.05))
    # at δ = 0.05 three answers of ε = 0.5 are (1.0, 0.05)-DP: δ_3(1.0) =
    # (e^1.5 − e^1) / (1 + e^0.5)^3 = 0.0979 > 0.05, so the optimal ε lies in (1.0, 1.5]
    assert 1.0 < s["loss_optimal_m"] <= 1.5
    assert "per record (curator only" in text and "1: 2; 2–3: 3" in text


def test_summary_of_hand_counts() -> None:
    e = RecordExposure(np.array([0, 1, 2, 3, 4, 9]), 0.1, 12, delta=1e-3)
    assert e.worst == 9 and e.bins() == [(0, 0, 1), (1, 1, 1), (2, 3, 2), (4, 7, 1), (8, 9, 1)]
    np.testing.assert_allclose(e.linear_loss(), [0.0, 0.1, 0.2, 0.3, 0.4, 0.9])
    # one answer at δ: (e^ε − e^g)/(1 + e^ε) = δ, g = ln(e^0.1 − 0.001 (1 + e^0.1)) = 0.098094
    assert e.optimal_loss(0) == 0.0
    assert e.optimal_loss(1) == pytest.approx(
        np.log(np.exp(0.1) - 1e-3 * (1 + np.exp(0.1))), abs=1e-6
    )
    s = e.summary()
    assert (s["median"], s["p90"], s["p99"], s["loss_linear_m"]) == (3, 9, 9, pytest.approx(1.2))
    empty = record_exposure(X, 0.1, epsilon=0.1, m=1, queries=np.array([[10.0]]))
    assert empty.worst == 0 and empty.bins() == [(0, 0, 5)]
