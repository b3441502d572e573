"""Query selection: the median split of eq. (10).

With f̃ the belief listed in a uniformly random order σ, the paper's median is
M(f̃) = max{m : Σ_{i<=m} f̃(i) < Σ_{i>m} f̃(i)} and the query is the first M(f̃) items,
Q_t = {i : σ(i) <= M(f̃)}. Its mass q is at most 1/2.

Two strategies (``selection=`` of :func:`privad.search.search`):

* ``"fixed"`` (default): draw σ once, before the first query, and split every belief on
  that order. This is Burnashev and Zigangirov's scheme after the initial uniform
  permutation of section 4.1 ("we can initialize by uniformly permuting the indices to use
  their result") and the variant Proposition 3 analyses. The belief then stays constant on
  runs of σ, so each step costs O(queries) with a :class:`~privad.search.posterior.
  SegmentPosterior`, independent of n.
* ``"fresh"``: a new σ before every query, step 3 of Algorithm 1 verbatim; O(n) per query
  (a permutation, a gather, a cumulative sum) with a :class:`~privad.search.posterior.
  DensePosterior`.

The split point (``split=``; a **reconstruction**, see below):

* ``"lower"``: eq. (10) verbatim, |Q| = M(f̃), so q <= 1/2 ("Note that q <= 1/2"). M(f̃) is 0
  when the first item holds at least half of the mass, which would make Q empty; we then
  take that item alone, |Q| = max(M, 1).
* ``"nearest"`` (default): M or M + 1, whichever prefix has mass closer to 1/2.
* ``"randomized"``: M + 1 with probability (1/2 - S(M)) / f(M + 1), else M, so the expected
  mass of Q is exactly 1/2: Burnashev and Zigangirov's randomized median.

Why the default departs from eq. (10): once one item holds more than half of the mass, the
lower median stops just before it, and with a fixed order the query is then the same
near-empty prefix over and over: its answers carry (almost) no information and a search that
must go on past max f = 1/2 (the log-odds rule of eq. 25, or α > 1/2) stalls. Section 4.1
asks only for "a query with posterior probability close to 1/2 (i.e. a median split)",
which "nearest" and "randomized" satisfy. Under the paper's default τ = 1(max f > 1/2) the
three rules differ only by which side of the median item goes into Q.

With the "no anomaly" hypothesis of the section 7 searches, the split halves the items'
mass only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Final

import numpy as np

from privad.errors import ParameterError
from privad.noise import Randomness, RandomnessLike, as_randomness
from privad.search.groups import PrefixGroup, QueryOrder
from privad.search.posterior import DensePosterior, Posterior, SegmentPosterior
from privad.validation import check_choice

__all__ = [
    "SELECTIONS",
    "SPLITS",
    "FixedOrderSelection",
    "FreshPermutationSelection",
    "QuerySelection",
    "as_selection",
    "median_index",
    "median_split_size",
]

SELECTIONS: Final[tuple[str, ...]] = ("fixed", "fresh")
"""Query-order strategies."""

SPLITS: Final[tuple[str, ...]] = ("nearest", "lower", "randomized")
"""Rules for the split point around the median (:func:`median_split_size`)."""


def median_index(masses: Any) -> int:
    """M(f) = max{m : Σ_{i<=m} f(i) < Σ_{i>m} f(i)} for masses listed in query order (eq. 10).

    ``masses`` need not sum to 1 (the split halves their total). Returns a value in
    [0, len - 1]: the number of leading items whose mass stays strictly below half.
    """
    f = np.asarray(masses, dtype=np.float64)
    if f.ndim != 1 or f.size == 0:
        raise ParameterError("masses must be a non-empty 1-D array")
    cum = np.cumsum(f)
    half = 0.5 * float(cum[-1])
    # cum[j] = S(j + 1); S(m) < half exactly for m <= first j with cum[j] >= half
    return min(int(np.searchsorted(cum, half, side="left")), f.size - 1)


def _pick(
    m: int, below: float, next_mass: float, half: float, n: int, split: str, rng: Randomness
) -> int:
    """Choose |Q| from the median M = m (S(M) = below < half <= S(M) + next_mass)."""
    if split == "lower":
        size = m
    elif split == "nearest":
        size = m + 1 if (below + next_mass) - half < half - below else m
    else:  # "randomized": E[f(Q)] = half exactly (Burnashev-Zigangirov)
        lam = (half - below) / next_mass if next_mass > 0 else 0.0
        size = m + 1 if float(rng.random()) < lam else m
    return min(max(size, 1), n - 1)


def median_split_size(masses: Any, split: str = "nearest", rng: RandomnessLike = None) -> int:
    """|Q_t| for masses listed in query order, by the rule ``split`` (see :data:`SPLITS`).

    ``"lower"`` is eq. (10) verbatim, max(M(f), 1); ``"nearest"`` takes M or M + 1,
    whichever prefix mass is closer to half; ``"randomized"`` takes M + 1 with the
    probability that makes the expected prefix mass exactly half. Always in [1, len - 1].
    """
    split = check_choice(split, "split", SPLITS)
    f = np.asarray(masses, dtype=np.float64)
    if f.ndim != 1 or f.size < 2:
        raise ParameterError("masses must be a 1-D array of at least 2 items")
    m = median_index(f)
    cum = np.cumsum(f)
    half = 0.5 * float(cum[-1])
    below = float(cum[m - 1]) if m > 0 else 0.0
    gen = as_randomness(rng) if split == "randomized" else None
    return _pick(m, below, float(f[m]), half, f.size, split, gen)  # type: ignore[arg-type]


def _segment_split(post: SegmentPosterior, split: str, rng: Randomness) -> int:
    starts, lengths, logw = post.segments()
    per_item = np.exp(logw)
    seg_mass = per_item * lengths
    cum = np.cumsum(seg_mass)
    half = 0.5 * float(cum[-1])
    k = min(int(np.searchsorted(cum, half, side="left")), starts.size - 1)
    before = float(cum[k - 1]) if k > 0 else 0.0
    w = float(per_item[k])
    n_k = int(lengths[k])
    # largest j in [0, n_k - 1] with before + j * w < half
    with np.errstate(divide="ignore", over="ignore"):
        steps = (half - before) / w if w > 0 else np.inf
    j = int(np.ceil(steps)) - 1 if steps < n_k else n_k - 1
    j = min(max(j, 0), n_k - 1)
    while j + 1 <= n_k - 1 and before + (j + 1) * w < half:
        j += 1
    while j > 0 and before + j * w >= half:
        j -= 1
    m = int(starts[k]) + j
    return _pick(m, before + j * w, w, half, post.n_items, split, rng)


class QuerySelection(ABC):
    """How the searcher starts its belief and picks each query.

    ``split`` chooses between the two prefixes around the median (see
    :func:`median_split_size`); default ``"nearest"``.
    """

    name: str = ""

    def __init__(self, split: str = "nearest") -> None:
        self.split = check_choice(split, "split", SPLITS)

    @abstractmethod
    def start(self, n_items: int, rng: Randomness, absent_prior: float | None) -> Posterior:
        """The uniform prior f_0 in the representation this strategy updates."""

    @abstractmethod
    def propose(self, posterior: Posterior, rng: Randomness) -> PrefixGroup:
        """The next query Q_t (eq. 10) given the belief f_{t-1}."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(split={self.split!r})"


class FixedOrderSelection(QuerySelection):
    """One uniformly random order σ up front; every query is a median prefix of σ."""

    name = "fixed"

    def start(self, n_items: int, rng: Randomness, absent_prior: float | None) -> Posterior:
        return SegmentPosterior(QueryOrder.random(n_items, rng), absent_prior=absent_prior)

    def propose(self, posterior: Posterior, rng: Randomness) -> PrefixGroup:
        if not isinstance(posterior, SegmentPosterior):
            raise ParameterError("fixed-order selection needs a SegmentPosterior")
        size = _segment_split(posterior, self.split, rng)
        # With a "no anomaly" hypothesis, ask about the prefix or the suffix at random: with
        # prefixes only, the last item of the order would never be in Q, and randomized
        # response could not tell "it is the last item" from "there is none".
        side = posterior.has_absent and float(rng.random()) < 0.5
        return posterior.order.prefix(size, complement=side)


class FreshPermutationSelection(QuerySelection):
    """A new uniformly random σ before every query (Algorithm 1, step 3)."""

    name = "fresh"

    def start(self, n_items: int, rng: Randomness, absent_prior: float | None) -> Posterior:
        return DensePosterior(
            n_items, absent_prior=absent_prior, tiebreak=QueryOrder.random(n_items, rng)
        )

    def propose(self, posterior: Posterior, rng: Randomness) -> PrefixGroup:
        if not isinstance(posterior, DensePosterior):
            raise ParameterError("fresh-permutation selection needs a DensePosterior")
        order = QueryOrder.random(posterior.n_items, rng)
        masses = np.exp(posterior.log_weights[order.permutation])
        return order.prefix(median_split_size(masses, self.split, rng))


def as_selection(selection: Any, split: str = "nearest") -> QuerySelection:
    """A :class:`QuerySelection` from a name in :data:`SELECTIONS` (with ``split``) or an
    instance (returned as is)."""
    if isinstance(selection, QuerySelection):
        return selection
    name = check_choice(selection, "selection", SELECTIONS)
    cls = FixedOrderSelection if name == "fixed" else FreshPermutationSelection
    return cls(split)
