"""What a spend charges: every budget it counts toward, checked, written and given back.

A spend of notion N is charged to N's budget and to the budget of every notion N implies
(:func:`charged_notions`), its pure ε to pure-ε budgets and its tight ε at a δ_i
(:func:`tight_charge`) to (ε, δ) budgets, where that saves at least one of its answers
(:func:`buys_an_answer`; otherwise its pure ε with δ_i = 0). :func:`plan_charge` checks
all of them inside the ledger's write transaction and writes nothing; :func:`apply_charge`
writes a checked charge; :func:`give_back` recomputes the budgets after a reservation is
cancelled or committed at less than it reserved.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Literal

from privad.accounting.exact import ZERO, epsilon_text, fmt, fraction_text, to_fraction
from privad.accounting.guarantee import Guarantee
from privad.accounting.notions import NOTIONS
from privad.accounting.records import Budget, Spend
from privad.accounting.rows import add_event, budget_row, refresh_budget, utc_now
from privad.accounting.schema import live_spent, spent_by_notion
from privad.accounting.statement import spent_text
from privad.accounting.tight import tight_epsilon
from privad.errors import BudgetExceededError, LedgerError
from privad.validation import check_probability


class NoBudgetError(LedgerError, LookupError):
    """No budget is set for a scope and notion, and the ledger has no ``default_budget``.

    Examples
    --------
    >>> from privad.accounting import Guarantee, Ledger, NoBudgetError
    >>> g = Guarantee("pure-dp", 0.5, "add or remove one record")
    >>> with Ledger(":memory:") as ledger:
    ...     try:
    ...         ledger.spend("census", g, "noisy count")
    ...     except NoBudgetError as exc:
    ...         print(str(exc).split(";")[0])
    no budget is set for scope 'census' and notion 'pure-dp'
    """


def no_budget(scope: str, notion: str) -> NoBudgetError:
    """The error for a scope and notion without a budget, saying how to set one."""
    return NoBudgetError(
        f"no budget is set for scope {scope!r} and notion {notion!r}; set one with "
        f"Ledger.set_budget({scope!r}, {notion!r}, epsilon) or "
        f"'privad budget set {scope} --epsilon E --notion {notion}'"
    )


@dataclass(frozen=True)
class Unbudgeted:
    """What a spend against a scope and notion without a budget does (a ledger's setting).

    ``default_budget`` (not None): the spend first creates the budget with that total.
    ``unbudgeted``: ``"refuse"`` (:class:`NoBudgetError`) or ``"record"`` (recorded with
    its ε, capped by nothing). See :class:`~privad.accounting.ledger.Ledger`.
    """

    default_budget: float | None
    unbudgeted: Literal["refuse", "record"]


@dataclass(frozen=True)
class Charge:
    """One budget a spend will be charged to, as checked: the row and its new spent."""

    budget: Budget
    is_new: bool
    """The budget does not exist yet: ``default_budget`` creates it with this spend."""
    new_spent: Fraction


@dataclass(frozen=True)
class Plan:
    """A checked spend: the budgets it is charged to, and its (ε, δ) for (ε, δ) budgets."""

    charges: list[Charge]
    tight: Fraction | None
    """The tight ε charged to (ε, δ) budgets (None: none is charged, or no gain)."""
    delta: Fraction


NO_CHARGE = Plan([], None, ZERO)
"""The plan of a spend that charges no budget (an ``"rmp"`` release, a draw)."""


def _float_at_most(value: Fraction) -> float:
    """The largest float whose decimal text is at most ``value``."""
    x = float(value)
    while to_fraction(x) > value:
        x = math.nextafter(x, 0.0)
    return x


def check_spend_delta(delta: object) -> float:
    """A spend's ``delta=``: δ_i in [0, 1); 0 asks for the pure ε with δ_i = 0."""
    return check_probability(delta, "delta", high_open=True)


def charged_notions(notion: str) -> tuple[str, ...]:
    """``notion`` and every notion it implies: the budgets a spend of it counts against."""
    return (notion, *NOTIONS[notion].implies)


def plan_charge(
    conn: sqlite3.Connection,
    scope: str,
    guarantee: Guarantee,
    label: str | None,
    rule: Unbudgeted,
    delta: float | None = None,
    coarse: bool = False,
) -> Plan:
    """Check a charge inside a transaction: one :class:`Charge` per budget it counts
    against (its notion's first, then those of the implied notions that have one), and
    the tight (ε, δ) charged to the (ε, δ) budgets among them (``coarse``: with the
    coarse accountant, for searches only).
    Raises NoBudgetError or BudgetExceededError. Writes nothing."""
    if not guarantee.spends_budget:
        return NO_CHARGE
    notion = guarantee.notion
    cost = to_fraction(guarantee.cost)
    budgets: list[tuple[Budget, bool]] = []
    for name in charged_notions(notion):
        budget = budget_row(conn, scope, name)
        is_new = budget is None
        if budget is None:
            if name != notion or rule.unbudgeted == "record":
                continue  # counted, not capped (an implied notion, or a record-only ledger)
            if rule.default_budget is None:
                raise no_budget(scope, notion)
            now = utc_now()
            budget = Budget(
                scope,
                notion,
                to_fraction(rule.default_budget),
                live_spent(conn, scope, notion),
                now,
                now,
            )
        budgets.append((budget, is_new))
    tight, spend_delta = tight_charge(
        guarantee, [b for b, _ in budgets if b.is_approximate], delta, coarse
    )
    if tight is not None and not buys_an_answer(guarantee, tight):
        if not any(_exceeds(b, cost, ZERO) for b, _ in budgets):
            tight, spend_delta = None, ZERO  # δ would buy less than one answer: keep it
    plan = []
    for budget, is_new in budgets:
        step = cost if tight is None or not budget.is_approximate else tight
        if _exceeds(budget, step, spend_delta):
            raise _refusal(conn, budget, guarantee, label, step, spend_delta)
        plan.append(Charge(budget, is_new, budget.spent + step))
    return Plan(plan, tight, spend_delta)


def _exceeds(budget: Budget, step: Fraction, delta: Fraction) -> bool:
    """Whether charging (``step``, ``delta``) would take ``budget`` past its total."""
    if budget.spent + step > budget.total:
        return True
    return budget.is_approximate and budget.delta_spent + delta > budget.delta  # type: ignore[operator]


def buys_an_answer(guarantee: Guarantee, tight: Fraction) -> bool:
    """Whether charging ``tight`` instead of the pure ε saves at least the ε of one of the
    spend's answers (the cheapest of its components).

    The δ_i a spend is charged is gone for every later spend, and any ε-DP answer gains a
    little from any δ > 0: one answer of ε is (ln(e^ε − δ(1 + e^ε)), δ)-DP, about
    ε − 2δ. A spend whose tight ε saves less than one of its own answers (a single answer;
    a handful of them, where optimal composition has nothing to trade yet) keeps δ for a
    later spend that can use it and is charged its pure ε with δ_i = 0, unless the pure ε
    does not fit and the tight one does (:func:`plan_charge`).

    Examples
    --------
    >>> from privad.accounting import Guarantee, scaled
    >>> from privad.accounting.tight import optimal_epsilon
    >>> one = Guarantee("pure-dp", 0.1, "add or remove one record")
    >>> buys_an_answer(scaled(one, 1), optimal_epsilon(0.1, 1, 1e-6))  # 0.099999
    False
    >>> buys_an_answer(scaled(one, 334), optimal_epsilon(0.1, 334, 1e-6))  # 9.777433
    True
    """
    cheapest = min(to_fraction(c.epsilon) for c in guarantee.accounting_components)
    return to_fraction(guarantee.cost) - tight >= cheapest


def tight_charge(
    guarantee: Guarantee,
    approximate: list[Budget],
    delta: float | None,
    coarse: bool = False,
) -> tuple[Fraction | None, Fraction]:
    """The (ε, δ) charged to (ε, δ) budgets: at ``delta``, or by default at the least δ
    they have left; (None, 0) when there are none or it gains nothing on the pure ε."""
    if not approximate:
        return None, ZERO
    if delta is None:
        left = min(b.delta_remaining for b in approximate)
        if left <= 0:
            return None, ZERO
        d = _float_at_most(left)
    else:
        d = check_spend_delta(delta)
        if d == 0.0:
            return None, ZERO
    tight = tight_epsilon(guarantee.accounting_components, d, coarse=coarse)
    if tight >= to_fraction(guarantee.cost):
        return None, ZERO
    return tight, to_fraction(d)


def _refusal(
    conn: sqlite3.Connection,
    budget: Budget,
    guarantee: Guarantee,
    label: str | None,
    cost: Fraction,
    delta: Fraction = ZERO,
) -> BudgetExceededError:
    """The error for a charge of ``guarantee`` that ``budget`` cannot take."""
    what = f"{label!r} " if label else ""
    which = "the budget"
    if budget.notion != guarantee.notion:
        which += (
            f" of {budget.notion!r} ({guarantee.notion!r} implies it, so the spend counts "
            "against that budget too)"
        )
    parts = spent_by_notion(conn, budget.scope, budget.notion, tight=budget.is_approximate)
    spent = spent_text(budget.notion, parts)
    if budget.is_approximate:
        pure = fmt(guarantee.cost)
        return BudgetExceededError(
            f"refused: {what}needs (ε = {fmt(cost)}, δ = {fmt(delta)}) (pure ε {pure}) "
            f"under {guarantee.notion!r} in scope {budget.scope!r}, which would exceed "
            f"{which}: total (ε {fmt(budget.total)}, δ {fmt(budget.delta)}), spent "
            f"(ε {spent}, δ {fmt(budget.delta_spent)}), remaining (ε "
            f"{fmt(budget.remaining)}, δ {fmt(budget.delta_remaining)}); nothing was spent"
        )
    return BudgetExceededError(
        f"refused: {what}needs ε = {fmt(cost)} under {guarantee.notion!r} in scope "
        f"{budget.scope!r}, which would exceed {which}: total {fmt(budget.total)}, spent "
        f"{spent}, remaining {fmt(budget.remaining)}, requested {fmt(cost)}; nothing was "
        "spent"
    )


def apply_charge(conn: sqlite3.Connection, charge: Charge, now: datetime, rule: Unbudgeted) -> None:
    """Write one checked charge: create the default budget or raise its spent."""
    budget = charge.budget
    if charge.is_new:
        conn.execute(
            "INSERT INTO budgets (scope, notion, total, spent, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                budget.scope,
                budget.notion,
                epsilon_text(rule.default_budget),  # type: ignore[arg-type]
                fraction_text(charge.new_spent),
                now.isoformat(),
                now.isoformat(),
            ),
        )
        add_event(
            conn,
            now,
            "default-budget",
            budget.scope,
            budget.notion,
            f"total {fmt(budget.total)} (default_budget, created by a spend)",
        )
    else:
        refresh_budget(conn, budget, now)


def give_back(
    conn: sqlite3.Connection, spend: Spend, now: datetime, rule: Unbudgeted, ledger: str
) -> None:
    """Recompute every budget ``spend`` was charged to, after its row changed."""
    for name in charged_notions(spend.notion):
        budget = budget_row(conn, spend.scope, name)
        if budget is None:
            if name == spend.notion and rule.unbudgeted == "refuse":
                raise LedgerError(
                    f"ledger {ledger} is inconsistent: spend #{spend.id} has no budget row"
                )
            continue  # an implied notion that still has no budget
        refresh_budget(conn, budget, now)
