"""The oracles of the paper behind one interface (``dp-noisy-binary-search.txt``, section 4).

An oracle holds the data X = (x_1, ..., x_{n+1}) and answers group queries
``query(group, rng=None) -> answer``. The searcher never sees X; it sees only the answers,
and it needs, to update its belief, the *likelihood* of an answer given that the anomaly is
in Q or in its complement. That public half lives in an
:class:`~privad.search.models.AnswerModel` (:mod:`privad.search.models`: the oracle's ε, its
:class:`~privad.accounting.Guarantee`, how to check an answer, and its likelihood), so that a
remote oracle (an HTTP client) is a subclass of :class:`Oracle` whose ``query`` sends the
group and whose ``model`` is rebuilt from the server's public parameters with
:func:`~privad.search.models.model_from_description`; the search loop needs nothing else.

Three oracles:

* :class:`RandomizedResponseOracle`: Y_t = 1(i* ∈ Q_t) ⊕ z_t, z_t ~ Bern(p) (eq. 5),
  ln((1 - p)/p)-DP (Proposition 1); binary likelihood (eq. 6).
* :class:`LaplaceMaxOracle`: Y_t = max_{i∈Q} x_i + Z, Ȳ_t = max_{i∉Q} x_i + Z̄ with
  Z, Z̄ ~ Lap(t_ℓ/ε) (eqs. 8-9); ε-DP because the pair has anomaly-restricted L1
  sensitivity t_ℓ and only one of its two coordinates can change (Lemma 1, Proposition 2).
  Noise is :func:`privad.noise.laplace` (grid-snapped, exact discrete Laplace) with the
  scale of :func:`privad.noise.laplace_scale_for` (t_ℓ, ε, one coordinate), so the grid
  rounding is charged and the release is ε-DP as stated. Likelihood: eq. (11).
* :class:`BinarizedOracle`: Z_t = 1(Y_t > Ȳ_t) computed from a Laplace max oracle's answer
  (post-processing, so the same ε), with error probability at most p of eq. (24); binary
  likelihood (eq. 6) with that p.

Every oracle's randomness is its own (given at construction; OS entropy by default): the
searcher's random permutation and the oracle's noise must not come from one stream in a
real deployment. ``rng=`` on :meth:`Oracle.query` overrides it for simulations.

Accounting. Nothing is released unrecorded: a local oracle charges every answer's ε
(:attr:`Oracle.guarantee`) to its ledger before the noise is drawn (:meth:`Oracle._release`,
the one release path of all three oracles), as a stream: under an (ε, δ) budget the answers
are drawn from a prepaid block charged at its tight ε (:class:`~privad.accounting.Ledger`),
and :meth:`Oracle.answers_left` says how many more the scope admits. The ledger is the
oracle's own in-memory one (``oracle.ledger``, scope ``"oracle"``, ``unbudgeted="record"``:
the total is always in ``oracle.ledger.history()``), or the ``ledger=`` and ``scope=``
given at construction;
``budget=`` caps the own ledger (a query past it raises
:class:`~privad.errors.BudgetExceededError` and draws nothing). Answers drawn with an
``rng=`` override are charged the same; oracles made by :meth:`Oracle.restrict` and the
binarized oracle charge their parent's (base's) ledger. A repeated group query is a fresh,
independent, charged answer, never the recorded one: repeating queries is how noisy
binary search gains confidence.

Privacy notion: ``"anomaly-restricted-dp"``, neighbours as in Definition 1 (they share the
anomaly and differ in one non-anomalous record whose value stays in [0, t_ℓ]).
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import numpy as np

from privad.accounting import Guarantee, Ledger, Spend
from privad.errors import DataError, ParameterError
from privad.noise import (
    GRANULARITY_BITS,
    Randomness,
    RandomnessLike,
    as_randomness,
    bernoulli,
    bernoulli_logistic,
    laplace,
)
from privad.search.groups import PrefixGroup, QueryOrder, resolve_group
from privad.search.models import (
    ORACLE_KINDS,
    AnswerModel,
    BinaryModel,
    LaplaceMaxModel,
    MaxAnswer,
    binarized_model,
    check_search_data,
)
from privad.search.theory import (
    randomized_response_epsilon,
    randomized_response_p,
)
from privad.validation import check_choice, check_epsilon

__all__ = [
    "DEFAULT_SCOPE",
    "BinarizedOracle",
    "LaplaceMaxOracle",
    "Oracle",
    "RandomizedResponseOracle",
    "make_oracle",
]

DEFAULT_SCOPE: Final[str] = "oracle"
"""The ledger scope a local oracle records its answers under unless given one."""

_T = TypeVar("_T")
_O = TypeVar("_O", bound="Oracle")


def _check_items(items: Any, n_items: int) -> np.ndarray:
    arr = np.asarray(items)
    if arr.dtype == np.bool_:
        if arr.shape != (n_items,):
            raise DataError(f"an item mask must have length {n_items}, got shape {arr.shape}")
        arr = np.flatnonzero(arr)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise DataError("items must be a 1-D array of item indices or a boolean mask")
    arr = arr.astype(np.int64)
    if arr.size < 2:
        raise DataError(f"a restricted oracle needs at least 2 items, got {arr.size}")
    if arr.min() < 0 or arr.max() >= n_items:
        raise DataError(f"item indices must lie in [0, {n_items - 1}]")
    if np.unique(arr).size != arr.size:
        raise DataError("item indices must be distinct")
    return arr


def _group_size(resolved: PrefixGroup | np.ndarray) -> int:
    """|Q| of a group resolved by :func:`~privad.search.groups.resolve_group`."""
    return resolved.n_in if isinstance(resolved, PrefixGroup) else int(np.count_nonzero(resolved))


class _Account:
    """Where a local oracle records its answers: one ledger and scope, shared with the
    oracles :meth:`Oracle.restrict` makes (same data, same people).

    Without a given ledger, the oracle's own in-memory ledger
    (``Ledger(":memory:", unbudgeted="record")``, with ``budget`` set for the scope if given)
    is created on the first answer or the first look at it, so that simulations building
    many oracles pay nothing for the ones they never query.
    """

    __slots__ = ("_ledger", "budget", "guarantee", "label", "last", "released", "scope")

    def __init__(
        self,
        model: AnswerModel,
        *,
        ledger: Ledger | None,
        scope: str,
        budget: float | None,
    ) -> None:
        if ledger is not None and not isinstance(ledger, Ledger):
            raise ParameterError(
                f"ledger must be a privad.accounting.Ledger, got {type(ledger).__name__}"
            )
        if not isinstance(scope, str) or not scope.strip():
            raise ParameterError(f"scope must be a non-empty name, got {scope!r}")
        if budget is not None:
            if ledger is not None:
                raise ParameterError(
                    "budget= is the total of the oracle's own ledger; with ledger= set the "
                    "scope's budget on that ledger (Ledger.set_budget)"
                )
            budget = check_epsilon(budget, "budget")
        self._ledger = ledger
        self.scope = scope.strip()
        self.budget = budget
        self.guarantee = model.guarantee
        self.label = f"noisy group query ({model.kind})"
        self.released = 0
        self.last: Spend | None = None

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            book = Ledger(":memory:", unbudgeted="record")
            if self.budget is not None:
                book.set_budget(self.scope, self.guarantee.notion, self.budget)
            self._ledger = book
        return self._ledger

    def charge(self, size: int, n_items: int, metadata: Mapping[str, Any] | None) -> Spend:
        """Spend one answer's ε (check-then-spend, one transaction), or raise and record
        nothing. The answers are a stream: under an (ε, δ) budget they are drawn from a
        prepaid block (:meth:`~privad.accounting.Ledger.spend`)."""
        spend = self.ledger.spend(
            self.scope,
            self.guarantee,
            self.label,
            metadata={
                **(metadata or {}),
                "query": self.released + 1,
                "size": size,
                "n_items": n_items,
            },
            stream=True,
        )
        self.released += 1
        self.last = spend
        return spend


class Oracle(ABC):
    """The interface every oracle implements (local, or a client of a remote one).

    Subclasses provide :attr:`model`, :attr:`n_items` and :meth:`query`; the rest delegates
    to the model. A remote oracle implements ``query`` by sending the group (a mask, the
    indices, or for a :class:`~privad.search.groups.PrefixGroup` the order once and then the
    prefix size) and returning the checked answer; its server keeps the account.

    A local oracle (one holding the data in this process) owns its release path: every
    answer leaves ``query`` only through :meth:`_release`, which first records the answer's
    ε in :attr:`ledger` under :attr:`scope` (refused past a budget, with nothing drawn).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.search import Oracle, make_oracle
    >>> oracle = make_oracle("laplace", np.r_[np.ones(7), 9.0], 2.0, 8.0, 1.0, rng=1)
    >>> isinstance(oracle, Oracle), oracle.n_items, oracle.epsilon, oracle.guarantee.notion
    (True, 8, 1.0, 'anomaly-restricted-dp')
    """

    _account: _Account | None = None

    def _subset(self: _O, **arrays: np.ndarray) -> _O:
        """A copy that holds ``arrays`` (read-only) for a subset of the items and shares
        the model, the randomness and the account (:meth:`restrict`)."""
        sub = copy.copy(self)
        for name, array in arrays.items():
            array.setflags(write=False)
            setattr(sub, name, array)
        sub._cached = None  # type: ignore[attr-defined]
        return sub

    _model: Any

    @property
    def model(self) -> AnswerModel:
        """The public answer model."""
        return self._model

    @property
    @abstractmethod
    def n_items(self) -> int:
        """Number of items the oracle holds (the paper's n + 1)."""

    @abstractmethod
    def query(self, group: Any, rng: RandomnessLike = None) -> Any:
        """Answer the group query ``group`` (mask, indices or PrefixGroup).

        ``rng`` overrides the oracle's own randomness (for simulations only).
        """

    @property
    def epsilon(self) -> float:
        """ε of one query (the model's)."""
        return self.model.epsilon

    @property
    def guarantee(self) -> Guarantee:
        """The guarantee of one query (the model's)."""
        return self.model.guarantee

    def log_likelihoods(self, answer: Any) -> tuple[float, float]:
        """The model's (log φ(answer | i* ∈ Q), log φ(answer | i* ∉ Q))."""
        return self.model.log_likelihoods(answer)

    def restrict(self, items: Any) -> Oracle:
        """An oracle over the sub-data ``items`` only (items renumbered 0 .. len - 1).

        Used by the section 7 searches. Local oracles implement it; a remote oracle may.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot be restricted to a subset")

    @property
    def ledger(self) -> Ledger | None:
        """The ledger every answer is recorded in before it is released.

        A local oracle's own in-memory ledger (created on first use; ``unbudgeted="record"``
        so its total is always visible: ``oracle.ledger.history()``,
        ``oracle.ledger.statement()``) or the one given at construction. None for an oracle
        that keeps no account in this process (a remote one: its server records).
        """
        return None if self._account is None else self._account.ledger

    @property
    def scope(self) -> str | None:
        """The scope of :attr:`ledger` the answers are charged to (None without a ledger)."""
        return None if self._account is None else self._account.scope

    def answers_left(self) -> int | None:
        """How many more answers :attr:`ledger` admits in :attr:`scope` (the room of a
        prepaid block under an (ε, δ) budget plus what the budget could still pay for;
        :meth:`~privad.accounting.Ledger.answers_left`); None when nothing caps them or the
        oracle keeps no account here (a remote one)."""
        if self._account is None:
            return None
        return self._account.ledger.answers_left(self._account.scope, self._account.guarantee)

    @property
    def last_spend(self) -> Spend | None:
        """The ledger row of the latest answer released here (None before the first)."""
        return None if self._account is None else self._account.last

    def _randomness(self, rng: RandomnessLike) -> Randomness:
        own: Randomness = self._rng  # type: ignore[attr-defined]
        return own if rng is None else as_randomness(rng)

    def _release(
        self,
        size: int,
        draw: Callable[[Randomness], _T],
        rng: RandomnessLike,
        metadata: Mapping[str, Any] | None,
    ) -> _T:
        """The one release path of a local oracle: record the answer, then draw it.

        ``size`` is |Q| of the already validated group. One check-then-spend of the
        per-query guarantee (ε, ``"anomaly-restricted-dp"``) in :attr:`ledger`, with
        ``metadata`` plus the query number, |Q| and n; past the budget it raises
        :class:`~privad.errors.BudgetExceededError` and neither a spend nor noise is drawn.
        Only then ``draw(randomness)`` makes the answer (``rng`` overrides the oracle's
        randomness and is charged the same).
        """
        if self._account is None:
            raise NotImplementedError(f"{type(self).__name__} keeps no account to release from")
        randomness = self._randomness(rng)
        self._account.charge(size, self.n_items, metadata)
        return draw(randomness)


class RandomizedResponseOracle(Oracle):
    """Randomized response about the anomaly's location: Y_t = 1(i* ∈ Q_t) ⊕ z_t (eq. 5).

    z_t ~ Bern(p) exactly: with ``epsilon`` given, p = 1/(1 + e^ε) is sampled exactly as
    :func:`privad.noise.bernoulli_logistic` (ε), so ln((1 - p)/p) = ε with no rounding; with
    ``p`` given, :func:`privad.noise.bernoulli` (p) and ε = ln((1 - p)/p) rounded up.

    Privacy. Proposition 1 states ln((1 - p)/p)-DP; that is the guarantee declared. Note
    that under anomaly-restricted neighbours the true bit does not depend on any
    non-anomalous record at all, so the answer's law is identical on neighbours (the check
    in the tests finds a ratio of exactly 1); the ε of Proposition 1 is what protects the
    anomaly's *location* (moving the anomaly in or out of Q changes the law by exactly e^ε).

    Parameters
    ----------
    anomalous:
        Boolean mask of the anomalous items (the true bit is 1 when Q holds any of them;
        with exactly one, as in the paper, it is 1(i* ∈ Q)).
    epsilon, p:
        Exactly one: ε > 0, or the flip probability p in (0, 1/2).
    rng:
        The oracle's own randomness (default: OS entropy).
    ledger, scope:
        Record every answer in this :class:`~privad.accounting.Ledger` under ``scope``
        (default: the oracle's own in-memory ledger, scope ``"oracle"``).
    budget:
        Total ε of the oracle's own ledger: a query past it raises
        :class:`~privad.errors.BudgetExceededError` and releases nothing. With ``ledger=``,
        set the scope's budget on that ledger instead.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.search import RandomizedResponseOracle
    >>> anomalous = np.zeros(64, dtype=bool); anomalous[17] = True
    >>> oracle = RandomizedResponseOracle(anomalous, epsilon=1.0, rng=1)
    >>> answer = oracle.query(np.arange(32))  # 1(i* in Q) flipped with p = 1/(1 + e)
    >>> oracle.model.kind, oracle.epsilon, len(oracle.ledger.history())
    ('randomized-response', 1.0, 1)
    """

    def __init__(
        self,
        anomalous: Any,
        *,
        epsilon: float | None = None,
        p: float | None = None,
        rng: RandomnessLike = None,
        ledger: Ledger | None = None,
        scope: str = DEFAULT_SCOPE,
        budget: float | None = None,
    ) -> None:
        mask = np.asarray(anomalous)
        if mask.dtype != np.bool_ or mask.ndim != 1 or mask.size < 2:
            raise DataError("anomalous must be a 1-D boolean mask over at least 2 items")
        if (epsilon is None) == (p is None):
            raise ParameterError("give exactly one of epsilon and p")
        if epsilon is not None:
            eps = check_epsilon(epsilon)
            flip_p = randomized_response_p(eps)
            self._flip_logit: float | None = eps
        else:
            flip_p = float(p)  # type: ignore[arg-type]
            eps = math.nextafter(randomized_response_epsilon(flip_p), math.inf)
            self._flip_logit = None
        self._model = BinaryModel(flip_p, eps, kind="randomized-response")
        self._anomalous = mask.copy()
        self._anomalous.setflags(write=False)
        self._anomaly_items = np.flatnonzero(mask)
        self._rng = as_randomness(rng)
        self._account = _Account(self._model, ledger=ledger, scope=scope, budget=budget)
        self._cached: tuple[QueryOrder, int, int] | None = None

    @classmethod
    def from_values(
        cls, values: Any, t_low: float, t_high: float, **options: Any
    ) -> RandomizedResponseOracle:
        """From data satisfying eq. (1): the anomalous items are those with x >= t_h;
        ``options`` are the keywords of the constructor (``epsilon`` or ``p``, ``rng``,
        ``ledger``, ``scope``, ``budget``)."""
        x, _, hi = check_search_data(values, t_low, t_high)
        return cls(x >= hi, **options)

    @property
    def n_items(self) -> int:
        return int(self._anomalous.size)

    def true_bit(self, group: Any) -> bool:
        """1(Q holds an anomaly): the bit before the flip (data-holder side)."""
        return self._truth(resolve_group(group, self.n_items))

    def _truth(self, resolved: PrefixGroup | np.ndarray) -> bool:
        if isinstance(resolved, PrefixGroup):
            if self._anomaly_items.size == 0:
                return False
            if self._cached is None or self._cached[0] is not resolved.order:
                where = resolved.order.positions[self._anomaly_items]
                self._cached = (resolved.order, int(where.min()), int(where.max()))
            _, first, last = self._cached
            if resolved.complement:
                return last >= resolved.size
            return first < resolved.size
        return bool(resolved[self._anomalous].any())

    def query(
        self,
        group: Any,
        rng: RandomnessLike = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        """The noisy bit for ``group``, recorded in :attr:`ledger` (with ``metadata``) first."""
        resolved = resolve_group(group, self.n_items)
        truth = self._truth(resolved)
        return self._release(_group_size(resolved), lambda r: truth != self._flip(r), rng, metadata)

    def _flip(self, r: Randomness) -> bool:
        if self._flip_logit is not None:
            return bool(bernoulli_logistic(self._flip_logit, r))
        return bool(bernoulli(self._model.p, r))

    def restrict(self, items: Any) -> RandomizedResponseOracle:
        anomalous = self._anomalous[_check_items(items, self.n_items)]
        return self._subset(_anomalous=anomalous, _anomaly_items=np.flatnonzero(anomalous))

    def __repr__(self) -> str:
        return f"RandomizedResponseOracle(n_items={self.n_items}, {self._model!r})"


class LaplaceMaxOracle(Oracle):
    """Noisy maxima of Q and its complement (eqs. 8-9), ε-DP per query (Proposition 2).

    Parameters
    ----------
    values:
        The data x_1, ..., x_{n+1}: finite, >= 0, each in [0, t_ℓ] or [t_h, ∞) (eq. 1;
        checked by :func:`check_search_data`).
    t_low, t_high:
        The thresholds t_ℓ < t_h of eq. (1). t_ℓ is the sensitivity (Lemma 1).
    epsilon:
        ε per query.
    rng:
        The oracle's own randomness (default: OS entropy).
    granularity_bits:
        G of the Laplace grid (:func:`privad.noise.laplace`).
    ledger, scope, budget:
        Where every answer is recorded before it is released, and the own ledger's total
        ε, as for :class:`RandomizedResponseOracle`.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones(64); x[17] = 9.0  # one anomaly above t_h = 8, the rest below t_l = 2
    >>> from privad.search import LaplaceMaxOracle
    >>> oracle = LaplaceMaxOracle(x, 2.0, 8.0, epsilon=1.0, rng=1)
    >>> answer = oracle.query(np.arange(32))  # noisy max of Q and of its complement (eq. 9)
    >>> answer.y > answer.y_complement, len(oracle.ledger.history())  # recorded, then released
    (True, 1)
    """

    def __init__(
        self,
        values: Any,
        t_low: float,
        t_high: float,
        epsilon: float,
        *,
        rng: RandomnessLike = None,
        granularity_bits: int = GRANULARITY_BITS,
        ledger: Ledger | None = None,
        scope: str = DEFAULT_SCOPE,
        budget: float | None = None,
    ) -> None:
        x, lo, hi = check_search_data(values, t_low, t_high)
        self._values = x
        self._model = LaplaceMaxModel(epsilon, lo, hi, granularity_bits=granularity_bits)
        self._rng = as_randomness(rng)
        self._account = _Account(self._model, ledger=ledger, scope=scope, budget=budget)
        self._cached: tuple[QueryOrder, np.ndarray, np.ndarray] | None = None

    @property
    def n_items(self) -> int:
        return int(self._values.size)

    def exact_answer(self, group: Any) -> tuple[float, float]:
        """(H(Q), H(Q̄)) of eq. (8) before noise (data-holder side; for tests)."""
        return self._exact(resolve_group(group, self.n_items))

    def _exact(self, resolved: PrefixGroup | np.ndarray) -> tuple[float, float]:
        if isinstance(resolved, PrefixGroup):
            if self._cached is None or self._cached[0] is not resolved.order:
                ordered = self._values[resolved.order.permutation]
                prefix_max = np.maximum.accumulate(ordered)
                suffix_max = np.maximum.accumulate(ordered[::-1])[::-1]
                self._cached = (resolved.order, prefix_max, suffix_max)
            _, prefix_max, suffix_max = self._cached
            head, tail = float(prefix_max[resolved.size - 1]), float(suffix_max[resolved.size])
            return (tail, head) if resolved.complement else (head, tail)
        return float(self._values[resolved].max()), float(self._values[~resolved].max())

    def query(
        self,
        group: Any,
        rng: RandomnessLike = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> MaxAnswer:
        """The noisy maxima for ``group``, recorded in :attr:`ledger` (with ``metadata``)
        first."""
        resolved = resolve_group(group, self.n_items)
        h = np.array(self._exact(resolved), dtype=np.float64)

        def draw(r: Randomness) -> MaxAnswer:
            noisy = laplace(h, self._model.scale, r, granularity_bits=self._model.granularity_bits)
            return MaxAnswer(float(noisy[0]), float(noisy[1]))

        return self._release(_group_size(resolved), draw, rng, metadata)

    def restrict(self, items: Any) -> LaplaceMaxOracle:
        return self._subset(_values=self._values[_check_items(items, self.n_items)])

    def __repr__(self) -> str:
        return f"LaplaceMaxOracle(n_items={self.n_items}, {self._model!r})"


class BinarizedOracle(Oracle):
    """Z_t = 1(Y_t > Ȳ_t) from a max oracle (section 5), error at most p of eq. (24).

    ``base`` is any oracle whose model is a :class:`LaplaceMaxModel` (a local
    :class:`LaplaceMaxOracle` or a remote one): binarizing is post-processing done on the
    searcher's side, so the guarantee is the base oracle's ε, and the base records each
    answer (:attr:`ledger` and :attr:`scope` are the base's).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones(64); x[17] = 9.0  # one anomaly above t_h = 8, the rest below t_l = 2
    >>> from privad.search import BinarizedOracle, LaplaceMaxOracle
    >>> oracle = BinarizedOracle(LaplaceMaxOracle(x, 2.0, 8.0, epsilon=1.0, rng=1))
    >>> oracle.query(np.arange(32)), oracle.model.kind  # the bit 1(Y > Ybar), eq. 24
    (True, 'binarized')
    """

    def __init__(self, base: Oracle) -> None:
        if not isinstance(base, Oracle) or not isinstance(base.model, LaplaceMaxModel):
            raise ParameterError("BinarizedOracle needs an oracle with a LaplaceMaxModel")
        self.base = base
        self._model = binarized_model(base.model)
        self._account = base._account

    @classmethod
    def from_values(cls, *args: Any, **kwargs: Any) -> BinarizedOracle:
        """Binarize a local :class:`LaplaceMaxOracle` built from these arguments (those of
        :class:`LaplaceMaxOracle`: values, t_ℓ, t_h, ε, and its keywords)."""
        return cls(LaplaceMaxOracle(*args, **kwargs))

    @property
    def n_items(self) -> int:
        return self.base.n_items

    def query(
        self,
        group: Any,
        rng: RandomnessLike = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        """Z = 1(Y > Ȳ) from the base's answer (which the base records, with ``metadata``:
        only a local base takes it)."""
        raw = (
            self.base.query(group, rng)
            if metadata is None
            else self.base.query(group, rng, metadata=metadata)  # type: ignore[call-arg]
        )
        answer = self.base.model.check_answer(raw)
        return bool(answer.y > answer.y_complement)

    def restrict(self, items: Any) -> BinarizedOracle:
        return BinarizedOracle(self.base.restrict(items))

    def __repr__(self) -> str:
        return f"BinarizedOracle({self.base!r}, p={self._model.p!r})"


def make_oracle(
    kind: str,
    values: Any,
    t_low: float,
    t_high: float,
    epsilon: float,
    *,
    rng: RandomnessLike = None,
    ledger: Ledger | None = None,
    scope: str = DEFAULT_SCOPE,
    budget: float | None = None,
) -> Oracle:
    """A local oracle by name: ``"laplace"`` (eq. 9), ``"binarized"`` (Z_t, eq. 24) or
    ``"randomized-response"`` (eq. 5), all ε per query over the same data.

    ``rng``, ``ledger``, ``scope`` and ``budget`` are passed to the oracle: every answer is
    recorded in its ledger (its own in-memory one unless ``ledger`` is given).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones(64); x[17] = 9.0  # one anomaly above t_h = 8, the rest below t_l = 2
    >>> from privad.search import make_oracle
    >>> oracle = make_oracle("binarized", x, 2.0, 8.0, 0.5, rng=3)
    >>> type(oracle).__name__, oracle.epsilon, oracle.n_items
    ('BinarizedOracle', 0.5, 64)
    """
    kind = check_choice(kind, "kind", ORACLE_KINDS)
    if kind == "laplace":
        return LaplaceMaxOracle(
            values, t_low, t_high, epsilon, rng=rng, ledger=ledger, scope=scope, budget=budget
        )
    if kind == "binarized":
        return BinarizedOracle.from_values(
            values, t_low, t_high, epsilon, rng=rng, ledger=ledger, scope=scope, budget=budget
        )
    return RandomizedResponseOracle.from_values(
        values, t_low, t_high, epsilon=epsilon, rng=rng, ledger=ledger, scope=scope, budget=budget
    )
