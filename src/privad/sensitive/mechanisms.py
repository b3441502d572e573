"""The (β, r)-AIQ mechanisms as objects that carry their privacy.

A (β, r)-anomaly identification query (AIQ) asks "is record i a (β, r)-anomaly?". Each
mechanism below is a small frozen object holding its parameters; it states what one answer
guarantees (:attr:`AIQMechanism.guarantee`) and what a batch guarantees
(:meth:`AIQMechanism.batch_guarantee`, Claims 3 and 5), and it computes its exact error
(:meth:`AIQMechanism.log_error_probability`) and samples its answers
(:meth:`AIQMechanism.sample`) from the two counts it reads, the multiplicity x_i and the
ball count B_x(i, r):

* :class:`SPMechanism`: U_{λ_k}, Construction 1 with λ_k (section 4.1.2), (ε, k)-SP
  (Theorem 4.6);
* :class:`DPMechanism`: U_{Δ_G}, Construction 1 with Δ_G (section 4.1.1), the
  Pareto-optimal ε-DP mechanism (Theorem 4.4);
* :class:`CompiledSPMechanism`: Construction 2 applied to the optimal ε/2-DP mechanism with
  δ = λ_k − Δ_G, (ε, k)-SP (Theorem 4.7; the paper's Figure 5b instance for k = 1).

:func:`aiq_mechanism` turns a name (``"sp"``, ``"dp"``, ``"compiled"``: what a command-line
option or an estimator parameter holds) into the object; it is the only place a name is
dispatched. With a count cap c ≥ β + 2 a mechanism reads min(B, c) and keeps its guarantee
(:mod:`privad.sensitive.mdd`, "Count caps").
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privad.accounting import Guarantee, per_ball, scaled, sequential
from privad.errors import ParameterError
from privad.sensitive._common import as_count_pair, check_beta, check_cap, check_eps, check_k
from privad.sensitive.anomaly import METRICS, anomaly_label
from privad.sensitive.compiler import _builtin_compiled
from privad.sensitive.constructions import (
    MECHANISMS,
    claim2_log_error,
    mechanism_lambda,
    sample_construction1,
)
from privad.validation import check_choice, check_int, check_nonnegative

__all__ = [
    "MECHANISMS",
    "AIQMechanism",
    "CompiledSPMechanism",
    "DPMechanism",
    "SPMechanism",
    "aiq_mechanism",
    "auto_count_cap",
    "neighbouring_relation",
]

DP_RELATION = "add or remove one record"


def neighbouring_relation(*, beta: int, r: float, k: int, metric: str = "euclidean") -> str:
    """The k-sensitive neighbourhood graph of (β, r)-anomaly, in words (Definition 3.1)."""
    return (
        f"add or remove one {k}-sensitive record: edges of the {k}-sensitive neighbourhood "
        f"graph of ({beta}, {r!r})-anomaly, {metric} metric (Definition 3.1)"
    )


@dataclass(frozen=True)
class AIQMechanism:
    """A (β, r)-AIQ mechanism: its parameters, its guarantee, its error and its sampler.

    Parameters
    ----------
    beta : int ≥ 1
        β of Definition 2.2.
    r : float ≥ 0
        The radius (part of the query, and of the neighbouring relation of the guarantee).
    epsilon : float > 0
        ε of one answer.
    k : int ≥ 1, default 1
        k of the k-sensitive neighbourhood graph (unused by :class:`DPMechanism`).
    metric : {"euclidean", "manhattan", "chebyshev"}
    count_cap : int ≥ β + 2 or None
        Read min(B, c) instead of B (same guarantee; capped records get the capped error).

    Use a subclass, or :func:`aiq_mechanism` with a name.

    Examples
    --------
    Every mechanism states what one answer and a batch cost (Claims 3 and 5):

    >>> from privad.sensitive import AIQMechanism, SPMechanism
    >>> m = SPMechanism(beta=2, r=0.5, epsilon=1.0)
    >>> isinstance(m, AIQMechanism), m.notion, m.guarantee.epsilon
    (True, 'sensitive', 1.0)
    >>> m.batch_guarantee(10, m=3).epsilon  # 10 answers, at most 3 within r of a record
    3.0
    """

    beta: int
    r: float
    epsilon: float
    k: int = 1
    metric: str = "euclidean"
    count_cap: int | None = None

    name: ClassVar[str] = ""
    """``"sp"``, ``"dp"`` or ``"compiled"``."""

    def __post_init__(self) -> None:
        if not self.name:
            raise TypeError("use SPMechanism, DPMechanism, CompiledSPMechanism or aiq_mechanism")
        beta = check_beta(self.beta)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "r", check_nonnegative(self.r, "r"))
        object.__setattr__(self, "epsilon", check_eps(self.epsilon, per_answer=True))
        object.__setattr__(self, "k", check_k(self.k))
        object.__setattr__(self, "metric", check_choice(self.metric, "metric", METRICS))
        object.__setattr__(self, "count_cap", check_cap(self.count_cap, beta))

    # -- privacy ---------------------------------------------------------------------------

    @property
    def notion(self) -> str:
        """The ledger notion one answer is charged under."""
        return self.guarantee.notion

    @property
    def guarantee(self) -> Guarantee:
        """What one answer guarantees."""
        raise NotImplementedError

    def batch_guarantee(self, n_queries: int, m: int | None = None) -> Guarantee:
        """The guarantee of answering ``n_queries`` queries: min(n, m)·ε.

        Without ``m`` this is sequential composition (Claim 3: n·ε). With Claim 5's m (at
        most m of the queried records in any closed ball of radius r, see
        :func:`privad.sensitive.accounting.claim5_bound`) it is m·ε: every answer reads only the
        records within r of its query, so one differing record changes at most m answers.
        """
        one = self.guarantee
        n = check_int(n_queries, "n_queries", minimum=1)
        m_used = n if m is None else min(check_int(m, "m", minimum=1), n)
        if n == 1:
            return one
        if m_used < n:
            return per_ball(
                [one],
                m_used,
                description=f"{n} queries, at most m={m_used} in any ball of radius r "
                f"(Claim 5): {m_used} × ({one.description})",
            )
        return scaled(
            sequential([one]),
            n,
            description=f"{n} queries, sequential composition (Claim 3): {n} × ({one.description})",
        )

    # -- answers ---------------------------------------------------------------------------

    def log_error_probability(self, x_i: Any, ball: Any) -> np.ndarray:
        """log P(answer ≠ g(i, x)) for counts (x_i, B_x(i, r)): exact, in log space."""
        raise NotImplementedError

    def sample(self, x_i: Any, ball: Any, rng: Any = None) -> np.ndarray:
        """Private 0/1 answers (1 = anomaly), int64, one independent draw per entry."""
        raise NotImplementedError

    def _sensitive(self, construction: str) -> Guarantee:
        """(ε, k)-SP on the k-sensitive graph of (β, r)-anomaly; ``construction`` names it."""
        return Guarantee(
            "sensitive",
            self.epsilon,
            neighbouring_relation(beta=self.beta, r=self.r, k=self.k, metric=self.metric),
            k=self.k,
            description=f"(ε, k)-SP (β={self.beta}, r={self.r!r})-AIQ, {construction}",
        )

    def _lambda(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        k = None if self.name == "dp" else self.k
        return mechanism_lambda(a, b, self.beta, k, self.count_cap)

    def at_radius(self, r: float) -> AIQMechanism:
        """The same mechanism at radius ``r`` (a radius chosen after the mechanism was made,
        e.g. privately); only ``r`` is checked again, so a warning about ε is not repeated.

        Examples
        --------
        >>> from privad.sensitive import SPMechanism
        >>> SPMechanism(beta=5, r=0.0, epsilon=0.5).at_radius(0.25).r
        0.25
        """
        moved = copy.copy(self)
        object.__setattr__(moved, "r", check_nonnegative(r, "r"))
        return moved

    def params(self) -> dict[str, Any]:
        """The parameters as a JSON-ready dict (with the name), for ledger metadata."""
        return {
            "mechanism": self.name,
            "beta": self.beta,
            "r": self.r,
            "epsilon": self.epsilon,
            "k": self.k,
            "metric": self.metric,
            "count_cap": self.count_cap,
        }


class _Construction1Mechanism(AIQMechanism):
    """Construction 1 (U_λ): error t = e^{−ε(λ − 1)}/(1 + e^ε) (Claim 2), sampled exactly."""

    def log_error_probability(self, x_i: Any, ball: Any) -> np.ndarray:
        a, b = as_count_pair(x_i, ball)
        return claim2_log_error(self._lambda(a, b), self.epsilon)

    def sample(self, x_i: Any, ball: Any, rng: Any = None) -> np.ndarray:
        a, b = as_count_pair(x_i, ball)
        truth = np.asarray(anomaly_label(a, b, self.beta), dtype=bool)
        return sample_construction1(truth, self._lambda(a, b), self.epsilon, rng)


@dataclass(frozen=True)
class SPMechanism(_Construction1Mechanism):
    """U_{λ_k}: (ε, k)-sensitively private (Theorem 4.6).

    Construction 1 with λ_k (section 4.1.2): the answer is wrong with probability
    e^{−ε(λ_k − 1)}/(1 + e^ε) (Claim 2), exponentially small in the distance λ_k of the
    record from the set of k-sensitive records.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive import SPMechanism
    >>> m = SPMechanism(beta=2, r=0.5, epsilon=1.0)
    >>> np.round(np.exp(m.log_error_probability([1, 1], [1, 10])), 5).tolist()
    [0.09894, 0.00025]
    >>> m.sample([1, 1, 1], [1, 10, 10], rng=0).tolist()  # (x_i, B) of an anomaly, then normals
    [1, 0, 0]
    """

    name: ClassVar[str] = "sp"

    @property
    def guarantee(self) -> Guarantee:
        return self._sensitive("U_λk (Theorem 4.6)")


@dataclass(frozen=True)
class DPMechanism(_Construction1Mechanism):
    """U_{Δ_G}: the Pareto-optimal ε-DP mechanism (Theorem 4.4). ``k`` is not used.

    Construction 1 with Δ_G (section 4.1.1, equation (2)): every record is protected, and a
    lone anomaly's answer is wrong far more often than under :class:`SPMechanism`.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive import DPMechanism
    >>> m = DPMechanism(beta=2, r=0.5, epsilon=1.0)
    >>> m.notion, round(float(np.exp(m.log_error_probability(1, 1))), 4)
    ('pure-dp', 0.2689)
    """

    name: ClassVar[str] = "dp"

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(
            "pure-dp",
            self.epsilon,
            DP_RELATION,
            description=f"optimal ε-DP (β={self.beta}, r={self.r!r})-AIQ, U_ΔG (Theorem 4.4)",
        )


@dataclass(frozen=True)
class CompiledSPMechanism(AIQMechanism):
    """Construction 2 on the optimal ε/2-DP mechanism: (ε, k)-SP (Theorem 4.7).

    Examples
    --------
    >>> from privad.sensitive import CompiledSPMechanism
    >>> CompiledSPMechanism(beta=2, r=0.5, epsilon=1.0).guarantee.description
    '(ε, k)-SP (β=2, r=0.5)-AIQ, compiled U_δ (Theorem 4.7, Construction 2)'
    """

    name: ClassVar[str] = "compiled"

    @property
    def guarantee(self) -> Guarantee:
        return self._sensitive("compiled U_δ (Theorem 4.7, Construction 2)")

    def _compiled(self) -> Any:
        return _builtin_compiled(self.beta, self.epsilon, self.k, "optimal-dp", self.count_cap)

    def log_error_probability(self, x_i: Any, ball: Any) -> np.ndarray:
        a, b = as_count_pair(x_i, ball)
        return np.asarray(self._compiled().log_error_probability(a, b), dtype=np.float64)

    def sample(self, x_i: Any, ball: Any, rng: Any = None) -> np.ndarray:
        a, b = as_count_pair(x_i, ball)
        out = self._compiled().sample(a, b, rng)
        return np.asarray(out, dtype=np.int64).reshape(np.shape(a))


_BY_NAME: dict[str, type[AIQMechanism]] = {
    cls.name: cls for cls in (SPMechanism, DPMechanism, CompiledSPMechanism)
}


def aiq_mechanism(
    mechanism: str,
    *,
    beta: int,
    r: float,
    epsilon: float,
    k: int = 1,
    metric: str = "euclidean",
    count_cap: int | None = None,
) -> AIQMechanism:
    """The mechanism object for a name in :data:`MECHANISMS` (``"sp"``, ``"dp"``,
    ``"compiled"``), the one place where a mechanism is chosen by name.

    Examples
    --------
    >>> from privad.sensitive import aiq_mechanism
    >>> aiq_mechanism("dp", beta=2, r=0.5, epsilon=1.0)
    DPMechanism(beta=2, r=0.5, epsilon=1.0, k=1, metric='euclidean', count_cap=None)
    """
    name = check_choice(mechanism, "mechanism", MECHANISMS)
    return _BY_NAME[name](beta, r, epsilon, k=k, metric=metric, count_cap=count_cap)


def auto_count_cap(
    beta: int, epsilon: float, *, mechanism: str = "sp", tolerance: float = 1e-30
) -> int:
    """The count cap c = β + 1 + L of ``count_cap="auto"``.

    L is the smallest integer ≥ 1 such that the capped mechanism's error on a capped record,
    e^{−ε'L}/(1 + e^{ε'}), is ≤ ``tolerance`` (ε' = ε, or ε/2 for the compiled mechanism,
    whose input runs at ε/2). Records with B ≥ c then get exactly that error, which is an
    upper bound of the uncapped mechanism's error there; the privacy guarantee is unchanged
    (:mod:`privad.sensitive.mdd`, "Count caps").

    Examples
    --------
    >>> from privad.sensitive.mechanisms import auto_count_cap
    >>> auto_count_cap(beta=5, epsilon=1.0)
    74
    """
    beta = check_beta(beta)
    epsilon = check_eps(epsilon)
    if not (0.0 < tolerance < 0.5):
        raise ParameterError(f"count_cap tolerance must be in (0, 0.5), got {tolerance!r}")
    eps = epsilon / 2.0 if mechanism == "compiled" else epsilon
    L = math.ceil((-math.log(tolerance) - float(np.logaddexp(0.0, eps))) / eps)
    return beta + 1 + max(1, L)
