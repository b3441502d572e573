"""Halting rules (section 4.2), composable with ``|`` (stop when any fires) and ``&`` (all).

Algorithm 1 checks, before every query, the stopping time τ(f_{t-1}) and the budget:

* :class:`PrivacyBudget` (b): stop when (T + 1)ε > b, i.e. when one more query would take
  the total privacy risk Tε past b. Compared in exact rational arithmetic (ε and b read as
  their decimal text, as the ledger does), so b = 0.3 allows three queries of ε = 0.1.
* :class:`PosteriorThreshold` (α): τ = 1(max_i f(i) > α) (section 6: α = 0.5).
* :class:`BenOrHassidim`: the same with α = ε_par = (24 ln n)^(-1/2) (Ben-Or and Hassidim's
  pruning level; n = the number of items searched).
* :class:`LogOddsThreshold` (δ): Burnashev and Zigangirov's max_i log(f(i)/(1 - f(i))) >
  log(1/δ) (eq. 25), computed stably.
* :class:`MaxQueries` (T_max): a plain cap (a safety net; not in the paper).

A rule looks at a :class:`SearchState` and returns the names of the rules that fire
(:meth:`HaltingRule.fired`); :meth:`HaltingRule.query_limit` is the most queries a rule lets
happen whatever the answers (None if unbounded): the ex-ante privacy cost is that times ε.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

from privad.accounting.exact import to_fraction
from privad.errors import ParameterError
from privad.search.posterior import Posterior
from privad.search.theory import ben_or_hassidim_level
from privad.validation import check_epsilon, check_int, check_probability

__all__ = [
    "AllOf",
    "AnyOf",
    "BenOrHassidim",
    "HaltingRule",
    "LogOddsThreshold",
    "MaxQueries",
    "PosteriorThreshold",
    "PrivacyBudget",
    "SearchState",
]


@dataclass(frozen=True)
class SearchState:
    """What a halting rule sees before query T + 1: T queries made, ε each, the belief."""

    n_queries: int
    epsilon: float
    posterior: Posterior

    @property
    def n_items(self) -> int:
        """Number of items searched."""
        return self.posterior.n_items


class HaltingRule(ABC):
    """A stopping rule; combine with ``|`` and ``&``.

    Examples
    --------
    >>> from privad.search import MaxQueries, PosteriorThreshold, PrivacyBudget
    >>> rule = PosteriorThreshold(0.9) | (PrivacyBudget(3.0) & MaxQueries(5))
    >>> rule
    PosteriorThreshold(0.9) | (PrivacyBudget(3.0) & MaxQueries(5))
    >>> rule.query_limit(1.0)  # ex ante: both of the budget and the cap must fire
    5
    """

    name: str = ""

    @abstractmethod
    def fired(self, state: SearchState) -> tuple[str, ...]:
        """Names of the (leaf) rules that say stop now; empty to go on."""

    def query_limit(self, epsilon: float) -> int | None:
        """The most queries this rule allows whatever the answers; None if unbounded."""
        return None

    def __or__(self, other: HaltingRule) -> AnyOf:
        return AnyOf(self, other)

    def __and__(self, other: HaltingRule) -> AllOf:
        return AllOf(self, other)


def _check_rules(rules: tuple[HaltingRule, ...], what: str) -> tuple[HaltingRule, ...]:
    if not rules:
        raise ParameterError(f"{what} needs at least one halting rule")
    for r in rules:
        if not isinstance(r, HaltingRule):
            raise ParameterError(f"{what} takes HaltingRule objects, got {type(r).__name__}")
    return rules


def _flatten(rules: tuple[HaltingRule, ...], combination: type) -> tuple[HaltingRule, ...]:
    """The checked ``rules``, with the rules of nested ``combination`` s spliced in."""
    flat: list[HaltingRule] = []
    for r in _check_rules(rules, combination.__name__):
        flat.extend(r.rules if isinstance(r, combination) else (r,))
    return tuple(flat)


class AnyOf(HaltingRule):
    """Stop as soon as any of the rules fires (Algorithm 1's "τ or budget").

    Examples
    --------
    >>> from privad.search import AnyOf, MaxQueries, PrivacyBudget
    >>> AnyOf(PrivacyBudget(3.0), MaxQueries(5)).query_limit(1.0)  # the first to stop
    3
    """

    name = "any"

    def __init__(self, *rules: HaltingRule) -> None:
        self.rules = _flatten(rules, AnyOf)

    def fired(self, state: SearchState) -> tuple[str, ...]:
        return tuple(name for r in self.rules for name in r.fired(state))

    def query_limit(self, epsilon: float) -> int | None:
        limits = [x for x in (r.query_limit(epsilon) for r in self.rules) if x is not None]
        return min(limits) if limits else None

    def __repr__(self) -> str:
        return " | ".join(repr(r) for r in self.rules)


class AllOf(HaltingRule):
    """Stop only when every rule fires."""

    name = "all"

    def __init__(self, *rules: HaltingRule) -> None:
        self.rules = _flatten(rules, AllOf)

    def fired(self, state: SearchState) -> tuple[str, ...]:
        names: list[str] = []
        for r in self.rules:
            got = r.fired(state)
            if not got:
                return ()
            names.extend(got)
        return tuple(names)

    def query_limit(self, epsilon: float) -> int | None:
        limits = [r.query_limit(epsilon) for r in self.rules]
        if any(x is None for x in limits):
            return None
        return max(x for x in limits if x is not None)

    def __repr__(self) -> str:
        return "(" + " & ".join(repr(r) for r in self.rules) + ")"


class PrivacyBudget(HaltingRule):
    """Stop when (T + 1)ε > b (section 4.2): the total risk Tε never exceeds b.

    Examples
    --------
    >>> from privad.search import PrivacyBudget
    >>> PrivacyBudget(0.3).query_limit(0.1)  # exact: three queries of 0.1 fit in 0.3
    3
    """

    name = "budget"

    def __init__(self, budget: float) -> None:
        self.budget = check_epsilon(budget, "budget")
        self._b = to_fraction(self.budget)

    def query_limit(self, epsilon: float) -> int:
        eps = to_fraction(check_epsilon(epsilon))
        return int(self._b // eps)

    def fired(self, state: SearchState) -> tuple[str, ...]:
        eps = to_fraction(state.epsilon)
        return (self.name,) if (state.n_queries + 1) * eps > self._b else ()

    def __repr__(self) -> str:
        return f"PrivacyBudget({self.budget!r})"


class PosteriorThreshold(HaltingRule):
    """τ(f) = 1(max_i f(i) > α) (section 4.2; α = 0.5 in section 6).

    Examples
    --------
    τ = 1(max f > α) with the budget b as a cap (section 6 uses α = 0.5):

    >>> from privad.search import PosteriorThreshold, PrivacyBudget
    >>> PosteriorThreshold(0.9) | PrivacyBudget(50.0)
    PosteriorThreshold(0.9) | PrivacyBudget(50.0)
    """

    name = "posterior"

    def __init__(self, alpha: float = 0.5) -> None:
        self.alpha = check_probability(alpha, "alpha", low_open=True, high_open=True)
        self._log_alpha = math.log(self.alpha)

    def fired(self, state: SearchState) -> tuple[str, ...]:
        return (self.name,) if state.posterior.max_log_probability() > self._log_alpha else ()

    def __repr__(self) -> str:
        return f"PosteriorThreshold({self.alpha!r})"


class BenOrHassidim(HaltingRule):
    """τ(f) = 1(max_i f(i) > ε_par), ε_par = (24 ln n)^(-1/2) for the n items searched.

    A pruning level: it looks at the items only (not at a "no anomaly" hypothesis).

    Examples
    --------
    The level α = (24 ln n)^(-1/2) depends on the n items searched:

    >>> from privad.search import BenOrHassidim
    >>> from privad.search.theory import ben_or_hassidim_level
    >>> BenOrHassidim(), round(ben_or_hassidim_level(1024), 4)
    (BenOrHassidim(), 0.0775)
    """

    name = "ben-or-hassidim"

    def fired(self, state: SearchState) -> tuple[str, ...]:
        level = math.log(ben_or_hassidim_level(state.n_items))
        return (self.name,) if state.posterior.max_item_log_probability() > level else ()

    def __repr__(self) -> str:
        return "BenOrHassidim()"


class LogOddsThreshold(HaltingRule):
    """Burnashev-Zigangirov: stop when max_i log(f(i)/(1 - f(i))) > log(1/δ) (eq. 25).

    Examples
    --------
    Burnashev and Zigangirov's rule (eq. 25) stops once some item's log-odds pass
    log(1/δ); it sets no ex-ante cap:

    >>> from privad.search import LogOddsThreshold
    >>> LogOddsThreshold(0.01), LogOddsThreshold(0.01).query_limit(1.0)
    (LogOddsThreshold(0.01), None)
    """

    name = "log-odds"

    def __init__(self, delta: float) -> None:
        self.delta = check_probability(delta, "delta", low_open=True, high_open=True)
        self._level = -math.log(self.delta)

    def fired(self, state: SearchState) -> tuple[str, ...]:
        return (self.name,) if state.posterior.max_log_odds() > self._level else ()

    def __repr__(self) -> str:
        return f"LogOddsThreshold({self.delta!r})"


class MaxQueries(HaltingRule):
    """Stop after ``limit`` queries (a cap; not in the paper).

    Examples
    --------
    >>> from privad.search import MaxQueries
    >>> MaxQueries(5), MaxQueries(5).query_limit(1.0)
    (MaxQueries(5), 5)
    """

    name = "max-queries"

    def __init__(self, limit: int) -> None:
        self.limit = check_int(limit, "limit", minimum=0)

    def query_limit(self, epsilon: float) -> int:
        return self.limit

    def fired(self, state: SearchState) -> tuple[str, ...]:
        return (self.name,) if state.n_queries >= self.limit else ()

    def __repr__(self) -> str:
        return f"MaxQueries({self.limit})"
