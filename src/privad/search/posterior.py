"""The belief f_t over the anomaly's location and its Bayesian updates (eqs. 6, 11, 12).

Every answer the oracles give has one likelihood for "i* ∈ Q" and one for "i* ∉ Q"
(eq. 6 for binary answers, eq. 11 for the noisy maxima), so one update multiplies the
weights of Q by φ_in and the rest by φ_out and renormalises (eq. 12). Everything is kept in
log space: weights are log-probabilities, normalised with a log-sum-exp.

Two representations of the same belief:

* :class:`DensePosterior`: one log-weight per item, O(n) per update. For arbitrary groups
  and for the fresh-permutation query selection of Algorithm 1.
* :class:`SegmentPosterior`: for queries that are prefixes of one fixed order σ (the
  selection the brief and section 5 analyse). Then the belief is constant on runs of
  consecutive positions of σ: after T queries it has at most T + 1 runs ("segments"), and
  an update only splits the run holding the split point and adds a constant to the runs on
  each side. Updates, the median split, max f and its log-odds cost O(T), independent of n.

Both may carry one extra hypothesis, "no anomaly among these items" (:attr:`absent`), used
by the section 7 searches to recognise a group without an anomaly (our extension).

The pure functions :func:`log_bayes_update`, :func:`binary_update` and
:func:`laplace_update` are eqs. (6), (11)-(12) on a plain vector, for checking by hand.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.search.groups import PrefixGroup, QueryOrder, group_mask
from privad.validation import check_int, check_positive, check_probability

__all__ = [
    "DensePosterior",
    "Posterior",
    "SegmentPosterior",
    "binary_update",
    "laplace_update",
    "log_bayes_update",
    "logsumexp",
]


def logsumexp(log_values: np.ndarray, counts: np.ndarray | None = None) -> float:
    """log Σ_k counts_k exp(log_values_k), stably (counts default to 1)."""
    a = np.asarray(log_values, dtype=np.float64)
    if a.size == 0:
        return -math.inf
    m = float(a.max())
    if m == -math.inf:
        return -math.inf
    e = np.exp(a - m)
    s = float(e.sum() if counts is None else np.dot(e, counts))
    return m + math.log(s)


def _check_loglik(value: Any, name: str) -> float:
    v = float(value)
    if math.isnan(v) or v == math.inf:
        raise DataError(f"{name} must be a finite log-likelihood or -inf, got {value!r}")
    return v


# --------------------------------------------------------------------------------------------
# the equations on a plain vector
# --------------------------------------------------------------------------------------------


def log_bayes_update(
    log_f: Any, in_group: Any, log_phi_in: float, log_phi_out: float
) -> np.ndarray:
    """Eq. (12) in log space: log f_t(i) = log f_{t-1}(i) + log φ(i) - log Σ_j f_{t-1}(j) φ(j),
    where φ(i) = φ_in for i ∈ Q (``in_group`` True) and φ_out otherwise."""
    lf = np.asarray(log_f, dtype=np.float64)
    mask = np.asarray(in_group, dtype=bool)
    if mask.shape != lf.shape:
        raise DataError(f"in_group has shape {mask.shape}, the belief {lf.shape}")
    a = _check_loglik(log_phi_in, "log_phi_in")
    b = _check_loglik(log_phi_out, "log_phi_out")
    out = lf + np.where(mask, a, b)
    return out - logsumexp(out)


def binary_update(f: Any, in_group: Any, answer: Any, p: float) -> np.ndarray:
    """Eq. (6): the update after a binary answer that is wrong with probability p.

    R_t = Q_t if the answer is 1 and Q̄_t if it is 0; items of R_t get weight (1 - p), the
    others p, and the result is normalised by Σ_{R_t} f(1 - p) + Σ_{not R_t} f p.
    """
    p = check_probability(p, "p", low_open=True, high_open=True)
    prob = np.asarray(f, dtype=np.float64)
    if (prob < 0).any() or not math.isclose(float(prob.sum()), 1.0, rel_tol=1e-9):
        raise DataError("f must be a probability vector (>= 0, summing to 1)")
    yes = bool(answer)
    right, wrong = math.log1p(-p), math.log(p)
    a, b = (right, wrong) if yes else (wrong, right)
    with np.errstate(divide="ignore"):
        return np.exp(log_bayes_update(np.log(prob), in_group, a, b))


def laplace_update(
    f: Any, in_group: Any, answer: Any, *, t_low: float, t_high: float, scale: float
) -> np.ndarray:
    """Eqs. (11)-(12): the update after noisy maxima (Y, Ȳ) with Laplace scale λ.

    φ(i ∈ Q) ∝ exp(-(|Y - t_h| + |Ȳ - t_ℓ|)/λ), φ(i ∉ Q) ∝ exp(-(|Y - t_ℓ| + |Ȳ - t_h|)/λ)
    (the shared factor ε²/(4t_ℓ²) of eq. 11 cancels in eq. 12); λ = t_ℓ/ε in the paper.
    """
    prob = np.asarray(f, dtype=np.float64)
    if (prob < 0).any() or not math.isclose(float(prob.sum()), 1.0, rel_tol=1e-9):
        raise DataError("f must be a probability vector (>= 0, summing to 1)")
    lam = check_positive(scale, "scale")
    y, y_bar = (float(v) for v in answer)
    a = -(abs(y - t_high) + abs(y_bar - t_low)) / lam
    b = -(abs(y - t_low) + abs(y_bar - t_high)) / lam
    with np.errstate(divide="ignore"):
        return np.exp(log_bayes_update(np.log(prob), in_group, a, b))


# --------------------------------------------------------------------------------------------
# the belief as an object
# --------------------------------------------------------------------------------------------


def _absent_prior(absent_prior: float | None) -> float | None:
    if absent_prior is None:
        return None
    return check_probability(absent_prior, "absent_prior", low_open=True, high_open=True)


class Posterior(ABC):
    """The belief f_t over which item is the anomaly (and, optionally, "none is").

    Start uniform (f_0(i) = 1/(n+1), section 4.2); with ``absent_prior`` a, the "no anomaly"
    hypothesis gets a and each item (1 - a)/n_items.
    """

    n_items: int

    @property
    @abstractmethod
    def has_absent(self) -> bool:
        """Whether the belief carries the "no anomaly" hypothesis."""

    @abstractmethod
    def log_probabilities(self) -> np.ndarray:
        """log f_t(i) for every item, in item order (O(n))."""

    def probabilities(self) -> np.ndarray:
        """f_t(i) for every item, in item order (O(n))."""
        return np.exp(self.log_probabilities())

    @property
    @abstractmethod
    def absent_log_probability(self) -> float:
        """log P(no anomaly); -inf when the belief has no such hypothesis."""

    @abstractmethod
    def max_log_probability(self) -> float:
        """log max f_t over the items and, if present, the "no anomaly" hypothesis."""

    @abstractmethod
    def max_item_log_probability(self) -> float:
        """log max_i f_t(i) over the items only."""

    @abstractmethod
    def max_log_odds(self) -> float:
        """log(f / (1 - f)) for the most probable hypothesis, computed stably (eq. 25)."""

    @abstractmethod
    def top(self, k: int) -> np.ndarray:
        """The ``k`` most probable items, most probable first (ties in a random order)."""

    @abstractmethod
    def update(
        self, group: Any, log_phi_in: float, log_phi_out: float, log_phi_absent: float | None
    ) -> None:
        """Bayes' rule (eq. 12) after an answer about ``group``."""

    def max_probability(self) -> float:
        """max f_t (over items and "no anomaly")."""
        return math.exp(self.max_log_probability())

    @property
    def absent_probability(self) -> float:
        """P(no anomaly); 0 when the belief has no such hypothesis."""
        return math.exp(self.absent_log_probability)


def _log_odds(log_top: float, log_rest: float) -> float:
    return log_top - log_rest


def _initial_log_weights(n_items: int, absent_prior: float | None) -> tuple[float, float | None]:
    """The uniform start: (log f_0(i) of each item, log P(no anomaly) or None)."""
    a = _absent_prior(absent_prior)
    item_mass = 1.0 if a is None else 1.0 - a
    return math.log(item_mass) - math.log(n_items), None if a is None else math.log(a)


class _LogWeightPosterior(Posterior):
    """What the two representations share: ``_logw`` holds per-item log-probabilities (one
    per item, or one per run of items) and ``_absent`` log P(no anomaly), or None."""

    _logw: np.ndarray
    _absent: float | None

    @property
    def has_absent(self) -> bool:
        return self._absent is not None

    @property
    def absent_log_probability(self) -> float:
        return -math.inf if self._absent is None else self._absent

    def max_log_probability(self) -> float:
        return max(float(self._logw.max()), self.absent_log_probability)

    def max_item_log_probability(self) -> float:
        return float(self._logw.max())

    def _absent_times_likelihood(self, log_phi_absent: float | None) -> float | None:
        """log P(no anomaly) + its log-likelihood (not normalised); None without it."""
        if self._absent is None:
            return None
        if log_phi_absent is None:
            raise ParameterError("this belief has a 'no anomaly' hypothesis: pass its likelihood")
        return self._absent + _check_loglik(log_phi_absent, "log_phi_absent")

    def _normalise(self, w: np.ndarray, log_items: float, absent: float | None) -> None:
        """Store the updated weights ``w`` (total log mass of the items ``log_items``) and
        ``absent``, normalised (eq. 12)."""
        total = log_items
        if absent is not None:
            total = float(np.logaddexp(total, absent))
        if not math.isfinite(total):
            raise DataError("the answer has likelihood 0 under every hypothesis")
        self._logw = w - total
        self._absent = None if absent is None else absent - total


class DensePosterior(_LogWeightPosterior):
    """One log-weight per item; O(n) per update. Accepts any group form.

    ``tiebreak`` (a random :class:`QueryOrder`, drawn by the caller) orders tied items in
    :meth:`top`; without one, ties go to the lower index.
    """

    def __init__(
        self,
        n_items: int,
        *,
        absent_prior: float | None = None,
        tiebreak: QueryOrder | None = None,
    ) -> None:
        self.n_items = check_int(n_items, "n_items", minimum=2)
        log_item, self._absent = _initial_log_weights(self.n_items, absent_prior)
        self._logw = np.full(self.n_items, log_item)
        if tiebreak is not None and tiebreak.n_items != self.n_items:
            raise ParameterError("tiebreak order has the wrong number of items")
        self.tiebreak = tiebreak

    def log_probabilities(self) -> np.ndarray:
        return self._logw.copy()

    @property
    def log_weights(self) -> np.ndarray:
        """The per-item log-probabilities (read-only view)."""
        view = self._logw.view()
        view.setflags(write=False)
        return view

    def max_log_odds(self) -> float:
        k = int(np.argmax(self._logw))
        top = float(self._logw[k])
        if self._absent is not None and self._absent >= top:
            return _log_odds(self._absent, logsumexp(self._logw))
        rest = np.delete(self._logw, k)
        log_rest = logsumexp(rest)
        if self._absent is not None:
            log_rest = np.logaddexp(log_rest, self._absent)
        return _log_odds(top, float(log_rest))

    def top(self, k: int) -> np.ndarray:
        k = check_int(k, "k", minimum=1, maximum=self.n_items)
        key = np.arange(self.n_items) if self.tiebreak is None else self.tiebreak.positions
        w = self._logw
        if k < self.n_items:
            kth = np.partition(w, self.n_items - k)[self.n_items - k]
            cand = np.flatnonzero(w >= kth)
        else:
            cand = np.arange(self.n_items)
        order = np.lexsort((key[cand], -w[cand]))
        return cand[order[:k]]

    def update(
        self,
        group: Any,
        log_phi_in: float,
        log_phi_out: float,
        log_phi_absent: float | None = None,
    ) -> None:
        mask = group_mask(group, self.n_items)
        a = _check_loglik(log_phi_in, "log_phi_in")
        b = _check_loglik(log_phi_out, "log_phi_out")
        w = self._logw + np.where(mask, a, b)
        absent = self._absent_times_likelihood(log_phi_absent)
        self._normalise(w, logsumexp(w), absent)


class SegmentPosterior(_LogWeightPosterior):
    """The belief for prefix queries on one fixed :class:`QueryOrder`, stored as runs.

    ``starts[k]`` is the first position (in the order) of run k and ``log_weights[k]`` the
    log-probability of *each* item of the run. Updates accept only
    :class:`~privad.search.groups.PrefixGroup` s of this order.
    """

    def __init__(self, order: QueryOrder, *, absent_prior: float | None = None) -> None:
        if not isinstance(order, QueryOrder):
            raise ParameterError(f"order must be a QueryOrder, got {type(order).__name__}")
        self.order = order
        self.n_items = check_int(order.n_items, "n_items", minimum=2)
        log_item, self._absent = _initial_log_weights(self.n_items, absent_prior)
        self._starts = np.zeros(1, dtype=np.int64)
        self._logw = np.array([log_item])

    @property
    def n_segments(self) -> int:
        """Number of runs (at most queries + 1)."""
        return int(self._starts.size)

    def segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(starts, lengths, per-item log-probabilities) of the runs, in query order."""
        lengths = np.diff(np.append(self._starts, self.n_items))
        return self._starts.copy(), lengths, self._logw.copy()

    def log_probabilities(self) -> np.ndarray:
        _, lengths, logw = self.segments()
        out = np.empty(self.n_items, dtype=np.float64)
        out[self.order.permutation] = np.repeat(logw, lengths)
        return out

    def max_log_odds(self) -> float:
        _, lengths, logw = self.segments()
        k = int(np.argmax(logw))
        top = float(logw[k])
        if self._absent is not None and self._absent >= top:
            return _log_odds(self._absent, logsumexp(logw, lengths))
        counts = lengths.astype(np.float64)
        counts[k] -= 1.0
        log_rest = logsumexp(logw, counts) if counts.any() else -math.inf
        if self._absent is not None:
            log_rest = float(np.logaddexp(log_rest, self._absent))
        return _log_odds(top, log_rest)

    def top(self, k: int) -> np.ndarray:
        k = check_int(k, "k", minimum=1, maximum=self.n_items)
        starts, lengths, logw = self.segments()
        picked: list[np.ndarray] = []
        need = k
        # most probable runs first; within a run, and between equal runs, by position in the
        # uniformly random order: a uniformly random tie-break
        for seg in np.lexsort((starts, -logw)):
            take = min(need, int(lengths[seg]))
            picked.append(np.arange(starts[seg], starts[seg] + take))
            need -= take
            if need == 0:
                break
        return self.order.permutation[np.concatenate(picked)]

    def update(
        self,
        group: Any,
        log_phi_in: float,
        log_phi_out: float,
        log_phi_absent: float | None = None,
    ) -> None:
        if not isinstance(group, PrefixGroup) or group.order is not self.order:
            raise ParameterError(
                "a SegmentPosterior takes only prefix groups of its own order "
                "(order.prefix(size)); use DensePosterior for other groups"
            )
        m = group.size
        if group.complement:  # Q is the suffix
            log_phi_in, log_phi_out = log_phi_out, log_phi_in
        if not 1 <= m <= self.n_items - 1:
            raise DataError(f"a query must hold 1 .. {self.n_items - 1} items, got {m}")
        a = _check_loglik(log_phi_in, "log_phi_in")
        b = _check_loglik(log_phi_out, "log_phi_out")
        absent = self._absent_times_likelihood(log_phi_absent)
        starts, w = self._starts, self._logw
        k = int(np.searchsorted(starts, m, side="right")) - 1
        if starts[k] != m:  # split run k at position m
            starts = np.insert(starts, k + 1, m)
            w = np.insert(w, k + 1, w[k])
        else:
            w = w.copy()
        cut = int(np.searchsorted(starts, m, side="left"))
        w[:cut] += a
        w[cut:] += b
        lengths = np.diff(np.append(starts, self.n_items))
        self._normalise(w, logsumexp(w, lengths), absent)
        self._starts = starts
