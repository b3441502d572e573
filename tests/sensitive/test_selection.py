"""The private selection of r (privad.sensitive.selection) and propose_parameters' contamination."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from privad.accounting import Ledger
from privad.errors import BudgetExceededError, ParameterError
from privad.noise import Randomness
from privad.sensitive import RadiusSelection, propose_parameters, select_radius
from privad.sensitive.selection import (
    _radius_index,
    block_votes,
    default_radii,
    permute_and_flip,
)

ALPHA = 1e-6

# 95 evenly spaced records in [0, 1] and 5 far ones: the far ones are the anomalies.
LINE = np.r_[np.linspace(0.0, 1.0, 95), [3.0, 5.0, 7.0, 9.0, 11.0]][:, None]


# -- propose_parameters: contamination and β ------------------------------------------------


def test_propose_parameters_aims_r_at_the_contamination() -> None:
    # β = 2: D_i is the distance to the 2nd other record. Inside the line 1/94, at its
    # two ends 2/94, for the far records 2 (4 for the last one). At c = 0.05 five records
    # may lie above r, so r is the 6th largest D_i = 2/94 and the far five are the anomalies.
    beta, r = propose_parameters(LINE, contamination=0.05, beta=2)
    assert (beta, r) == (2, pytest.approx(2 / 94))
    ball = np.abs(LINE - LINE.T).__le__(r).sum(axis=1)
    np.testing.assert_array_equal(np.flatnonzero(ball <= beta), [95, 96, 97, 98, 99])


def test_propose_parameters_contamination_and_anomaly_share_are_one_target() -> None:
    assert propose_parameters(LINE, anomaly_share=0.05, beta=2) == propose_parameters(
        LINE, contamination=0.05, beta=2
    )
    # the default target is still 1 %: one record above r (the last far one)
    assert propose_parameters(LINE, beta=2)[1] == 2.0
    with pytest.raises(ParameterError, match="not both"):
        propose_parameters(LINE, anomaly_share=0.05, contamination=0.05)
    for bad in (0.0, 0.6, True, "a"):
        with pytest.raises(ParameterError, match="contamination"):
            propose_parameters(LINE, contamination=bad)
    with pytest.raises(ParameterError, match="beta"):
        propose_parameters(LINE, contamination=0.05, beta=0)


def test_propose_parameters_beta_overrides_the_fraction() -> None:
    assert propose_parameters(LINE, 0.5, contamination=0.05, beta=2)[0] == 2
    assert propose_parameters(LINE, 0.03, contamination=0.05)[0] == 3


# -- the mechanism's parts --------------------------------------------------------------------


def test_default_radii_are_public_and_span_the_unit_cube() -> None:
    for metric, top in (("euclidean", 3.0), ("manhattan", 9.0), ("chebyshev", 1.0)):
        g = default_radii(9, metric)
        assert g[0] == pytest.approx(top / 100) and g[-1] == pytest.approx(top)
        assert np.all(np.diff(g) > 0)


def test_block_votes_by_hand() -> None:
    # Two blocks of the line 0, 0.1, ..., 0.9 (even positions in block 0, odd in 1), β = 2,
    # K = 2: τ = 1, j = 1, no scaling. Each block's records are 0.2 apart: nearest-other
    # distances 0.2 for all, so at c = 0.2 the block radius is 0.2 and the vote the index
    # of the first grid radius >= 0.2.
    X = np.linspace(0.0, 0.9, 10)[:, None]
    blocks = np.arange(10) % 2
    grid = np.array([0.05, 0.1, 0.19, 0.21, 0.5])
    np.testing.assert_array_equal(block_votes(X, blocks, 2, 2, 0.2, grid), [3, 3])
    # a block with fewer than 3 records votes for the last radius
    np.testing.assert_array_equal(block_votes(X, np.r_[np.zeros(9), 1], 2, 2, 0.2, grid)[1:], [4])


def test_permute_and_flip_probabilities() -> None:
    # Two candidates, utilities 0 and -2, ε = 1, Δu = 1: the worse one is visited first
    # with probability 1/2 and kept with probability exp(-1·2/2), so P(1) = e^-1 / 2.
    rng = Randomness(11)
    n = 8_000
    picks = sum(permute_and_flip([0.0, -2.0], 1.0, 1.0, rng) for _ in range(n))
    p = math.exp(-1.0) / 2
    assert binom.cdf(picks, n, p) > ALPHA / 2 and binom.sf(picks - 1, n, p) > ALPHA / 2


# -- the black-box neighbour test -------------------------------------------------------------


def _counts(mechanism, X: np.ndarray, n: int, seed: int, size: int) -> np.ndarray:
    rng = Randomness(seed)
    return np.bincount([mechanism(X, rng) for _ in range(n)], minlength=size)


def _smallest_p(a: np.ndarray, b: np.ndarray, eps: float) -> float:
    """The smallest p-value, over outputs and both directions, of H0: P_x(j) <= e^ε P_y(j).

    Given a_j + b_j = s, a_j is binomial with success probability P_x/(P_x + P_y) (equal run
    counts), at most e^ε/(1 + e^ε) under H0: an exact one-sided binomial test."""
    pi = math.exp(eps) / (1.0 + math.exp(eps))
    return min(
        float(binom.sf(u[j] - 1, u[j] + v[j], pi))
        for u, v in ((a, b), (b, a))
        for j in range(a.size)
        if u[j] + v[j]
    )


def test_selection_is_epsilon_dp_black_box() -> None:
    # x and its neighbour y = x plus one record; many runs of the mechanism on each. Read
    # off the data (β = 1, c = 0.5) r is 0.1 for x and 0.125 for y, on either side of 0.11.
    x = np.array([0.0, 0.1, 0.2, 0.45, 0.7, 0.95])[:, None]
    y = np.r_[x, [[0.575]]]
    grid = np.array([0.05, 0.11, 0.3, 0.6])
    eps = 1.0

    def private(D, rng):
        return _radius_index(D, 1, 0.5, eps, grid, 2, "euclidean", rng)

    def from_the_data(D, rng):  # propose_parameters snapped to the grid: not private
        r = propose_parameters(D, contamination=0.5, beta=1)[1]
        return min(int(np.searchsorted(grid, r)), grid.size - 1)

    n = 1000
    a, b = _counts(private, x, n, 1, grid.size), _counts(private, y, n, 2, grid.size)
    assert _smallest_p(a, b, eps) > ALPHA  # every ratio within e^ε (statistically)
    a, b = _counts(from_the_data, x, 50, 1, grid.size), _counts(from_the_data, y, 50, 2, grid.size)
    assert _smallest_p(a, b, eps) < ALPHA  # the harness catches a non-private choice


# -- select_radius: charged to the ledger -----------------------------------------------------


def test_select_radius_charges_its_own_spend() -> None:
    with Ledger(":memory:") as book:
        book.set_budget("s", "sensitive", 1.5)
        sel = select_radius(LINE / 11.0, 2, 0.05, 1.0, ledger=book, scope="s", k=2, rng=0)
        (spend,) = book.history()
        assert isinstance(sel, RadiusSelection) and sel.spend == spend
        assert spend.guarantee == sel.guarantee
        assert (spend.guarantee.notion, spend.guarantee.epsilon, spend.guarantee.k) == (
            "sensitive",
            1.0,
            2,
        )
        assert spend.label.startswith("private selection of r")
        assert sel.r == sel.radii[sel.index] and sel.r in default_radii(1)
        assert sel.provenance()["source"] == "private"
        assert sel.provenance()["spend_id"] == spend.id
        with pytest.raises(BudgetExceededError):  # 0.5 left: refused, nothing recorded
            select_radius(LINE / 11.0, 2, 0.05, 1.0, ledger=book, scope="s", rng=0)
        assert len(book.history()) == 1


def test_select_radius_pure_dp_and_bad_input() -> None:
    with Ledger(":memory:", unbudgeted="record") as book:
        sel = select_radius(LINE, 2, 0.05, 0.5, ledger=book, scope="s", notion="pure-dp", rng=0)
        assert sel.guarantee.notion == "pure-dp" and sel.guarantee.k is None
        for kwargs, match in (
            ({"radii": [0.2, 0.1]}, "radii"),
            ({"blocks": 1}, "blocks"),
            ({"notion": "relaxed-dp"}, "notion"),
        ):
            with pytest.raises(ParameterError, match=match):
                select_radius(LINE, 2, 0.05, 0.5, ledger=book, scope="s", **kwargs)
        with pytest.raises(ParameterError, match="contamination"):
            select_radius(LINE, 2, 0.7, 0.5, ledger=book, scope="s")
        with pytest.raises(ParameterError, match="Ledger"):
            select_radius(LINE, 2, 0.05, 0.5, ledger="book", scope="s")
