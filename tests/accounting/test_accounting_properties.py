"""Property tests: whatever the sequence of operations, the ledger never overspends and its
remaining budget is exactly the total minus the accepted spends."""

from __future__ import annotations

from fractions import Fraction

import hypothesis.strategies as st
from hypothesis import given, settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
)

from privad.accounting import Guarantee, Ledger, NoBudgetError
from privad.errors import BudgetExceededError, ParameterError

REL = "add or remove one record"

# Decimal-looking values (the common case) and arbitrary floats (rounding corner cases).
epsilons = st.one_of(
    st.sampled_from([0.1, 0.2, 0.3, 0.05, 0.001, 0.25, 0.7, 1.0, 1 / 3]),
    st.floats(min_value=1e-6, max_value=2.0, allow_nan=False, allow_infinity=False),
)
totals = st.one_of(
    st.sampled_from([0.5, 1.0, 2.5, 3.0]),
    st.floats(min_value=1e-3, max_value=5.0, allow_nan=False, allow_infinity=False),
)


def exact(x: float) -> Fraction:
    """The reading of a float the ledger promises: its shortest round-trip decimal."""
    return Fraction(repr(x))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(total=totals, requests=st.lists(epsilons, max_size=40))
def test_greedy_spends_never_exceed_total(total: float, requests: list[float]) -> None:
    with Ledger(":memory:") as ledger:
        ledger.set_budget("s", "pure-dp", total)
        accepted: list[Fraction] = []
        for i, eps in enumerate(requests):
            g = Guarantee("pure-dp", eps, REL)
            would_fit = sum(accepted, Fraction(0)) + exact(eps) <= exact(total)
            try:
                ledger.spend("s", g, f"q{i}")
            except BudgetExceededError:
                assert not would_fit
            else:
                assert would_fit
                accepted.append(exact(eps))
            budget = ledger.budget("s", "pure-dp")
            assert budget.spent <= budget.total
            assert budget.spent == sum(accepted, Fraction(0))
            assert budget.remaining == exact(total) - sum(accepted, Fraction(0))
        assert len(ledger.history()) == len(accepted)
        ledger.verify()


class LedgerMachine(RuleBasedStateMachine):
    """A model of the ledger: per scope a total and the live (accepted) charges."""

    reservations = Bundle("reservations")

    def __init__(self) -> None:
        super().__init__()
        self.ledger = Ledger(":memory:")
        self.totals: dict[str, Fraction] = {}
        self.live: dict[str, dict[int, Fraction]] = {}

    def spent(self, scope: str) -> Fraction:
        return sum(self.live.get(scope, {}).values(), Fraction(0))

    @rule(scope=st.sampled_from(["a", "b"]), total=totals)
    def set_budget(self, scope: str, total: float) -> None:
        if exact(total) < self.spent(scope):
            try:
                self.ledger.set_budget(scope, "pure-dp", total)
            except ParameterError:
                return
            raise AssertionError("lowering a budget below spent must be refused")
        self.ledger.set_budget(scope, "pure-dp", total)
        self.totals[scope] = exact(total)
        self.live.setdefault(scope, {})

    def _charge(self, scope: str, eps: float, reserve: bool):
        g = Guarantee("pure-dp", eps, REL)
        try:
            if reserve:
                result = self.ledger.reserve(scope, g, "job")
                sid = result.id
            else:
                result = self.ledger.spend(scope, g, "query")
                sid = result.id
        except NoBudgetError:
            assert scope not in self.totals
            return None
        except BudgetExceededError:
            assert self.spent(scope) + exact(eps) > self.totals[scope]
            return None
        assert self.spent(scope) + exact(eps) <= self.totals[scope]
        self.live[scope][sid] = exact(eps)
        return (scope, sid) if reserve else None

    @rule(scope=st.sampled_from(["a", "b", "c"]), eps=epsilons)
    def spend(self, scope: str, eps: float) -> None:
        self._charge(scope, eps, reserve=False)

    @rule(target=reservations, scope=st.sampled_from(["a", "b"]), eps=epsilons)
    def reserve(self, scope: str, eps: float):
        return self._charge(scope, eps, reserve=True)

    @rule(r=consumes(reservations), commit=st.booleans())
    def finish(self, r, commit: bool) -> None:
        if r is None:
            return
        scope, sid = r
        if sid not in self.live.get(scope, {}):  # reset in between
            return
        if commit:
            self.ledger.commit(sid)
        else:
            self.ledger.cancel(sid)
            del self.live[scope][sid]

    @rule(scope=st.sampled_from(["a", "b", None]))
    def reset(self, scope: str | None) -> None:
        self.ledger.reset(scope)
        for s in self.live:
            if scope is None or s == scope:
                self.live[s] = {}

    @invariant()
    def budgets_match_model(self) -> None:
        for budget in self.ledger.budgets():
            assert budget.total == self.totals[budget.scope]
            assert budget.spent == self.spent(budget.scope)
            assert budget.spent <= budget.total
            assert budget.remaining == budget.total - self.spent(budget.scope)
            assert budget.remaining >= 0

    def teardown(self) -> None:
        self.ledger.verify()
        self.ledger.close()


LedgerMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None, derandomize=True
)
TestLedgerMachine = LedgerMachine.TestCase
