"""Streams of answers under (ε, δ) budgets: prepaid blocks, the draws from them, answers left.

A service answers a stream of questions with one mechanism (an oracle's noisy group
answers, a curator's noisy bits), one request at a time. Charged request by request, an
(ε, δ) budget gains nothing: basic composition across spends adds the per-request ε, and
the tight bound of one answer is its pure ε. ``Ledger.spend(..., stream=True)`` (and
``reserve``) charge such a request from a *prepaid block* instead: when the scope's
budgets include an (ε, δ) one and no open block of the same mechanism has room, the
ledger opens a block of the most answers the budgets admit (found with the coarse
accountant, charged with the exact one), charged once at its tight ε and δ_i; the
request, and every later one, is recorded as a *draw* of the answers it uses, which
charges nothing. Why this is valid: the block is one mechanism chosen before its first
answer ("at most N answers of M"); whatever is asked of it and whenever the stream stops,
what it releases is a post-processing of N answers of M, so it is (tight(N), δ_i)-DP, and
across blocks and other spends basic composition holds for adaptively chosen spends. The
block's charge never shrinks: how many of its answers were used depends on the answers,
and charging only those (the tight bound of a data-dependent number of answers) is not a
valid guarantee. A cancelled draw gives its answers back to the block (nothing was
released under it). Without an (ε, δ) budget, stream requests are ordinary spends.
``Ledger.answers_left`` says how many more answers of a mechanism a scope admits.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from datetime import datetime

from privad.accounting.charges import (
    Plan,
    Unbudgeted,
    apply_charge,
    charged_notions,
    no_budget,
    plan_charge,
)
from privad.accounting.composition import scaled
from privad.accounting.exact import epsilon_text, fraction_text, to_fraction
from privad.accounting.guarantee import Guarantee
from privad.accounting.records import COMMITTED, Budget
from privad.accounting.rows import LIVE, budget_row
from privad.errors import BudgetExceededError, ParameterError


def per_answer(guarantee: Guarantee) -> tuple[Guarantee, int]:
    """(the guarantee of one answer, the number of answers) of a stream request.

    A stream request is ``count`` answers of one mechanism: its guarantee has exactly one
    component (one answer's mechanism, used ``count`` times) and no ε' for outliers.
    """
    parts = guarantee.accounting_components
    if len(parts) != 1 or guarantee.epsilon_outlier is not None:
        raise ParameterError(
            "a stream spend is a number of answers of one mechanism (a guarantee with one "
            f"component, no ε' for outliers), got {guarantee.summary()} with components "
            f"{[c.to_dict() for c in parts]}"
        )
    (c,) = parts
    one = replace(c, count=1)
    return Guarantee(
        guarantee.notion,
        one.epsilon,
        guarantee.neighbouring,
        k=guarantee.k,
        description=guarantee.description,
        components=(one,),
    ), c.count


def stream_key(one: Guarantee) -> tuple:
    """What makes two answers the same mechanism for a prepaid block."""
    return (one.notion, one.k, one.neighbouring, one.accounting_components[0].key)


def _stream_budgets(conn: sqlite3.Connection, scope: str, notion: str) -> list[Budget | None]:
    return [budget_row(conn, scope, name) for name in charged_notions(notion)]


class PrepaidBlocks:
    """The prepaid blocks of one ledger's streams (and the sizes found for them).

    Parameters
    ----------
    rule:
        What a spend without a budget does (the ledger's ``default_budget`` and
        ``unbudgeted``).
    """

    def __init__(self, rule: Unbudgeted) -> None:
        self.rule = rule
        self._sizes: dict[tuple, int] = {}  # (state of the budgets, mechanism) -> N

    def open_blocks(
        self, conn: sqlite3.Connection, scope: str, one: Guarantee
    ) -> list[tuple[int, int]]:
        """(id, answers left) of the live prepaid blocks of ``scope`` for the mechanism of
        ``one`` that have room, oldest first."""
        rows = conn.execute(
            f"SELECT id, guarantee, answers FROM spends WHERE scope = ? AND notion = ? AND "
            f"block_id IS NULL AND answers IS NOT NULL AND {LIVE} ORDER BY id",
            (scope, one.notion),
        ).fetchall()
        key, out = stream_key(one), []
        for block_id, text, size in rows:
            if stream_key(per_answer(Guarantee.from_dict(json.loads(text)))[0]) != key:
                continue
            used = conn.execute(
                f"SELECT COALESCE(SUM(answers), 0) FROM spends WHERE block_id = ? AND {LIVE}",
                (block_id,),
            ).fetchone()[0]
            if size > used:
                out.append((int(block_id), int(size - used)))
        return out

    def block_size(
        self,
        conn: sqlite3.Connection,
        scope: str,
        one: Guarantee,
        n: int,
        label: str | None,
        delta: float | None,
    ) -> tuple[int, Plan]:
        """The most answers of ``one`` (at least ``n``) the budgets admit, and the plan that
        charges them. Raises the refusal when not even ``n`` fit.

        Searched with the coarse accountant (doubling from the linear count, then
        bisection), charged with the exact one (never more, so the count found fits;
        checked). Cached per state of the budgets."""
        first = plan_charge(conn, scope, scaled(one, n), label, self.rule, delta)
        state = tuple(
            None if b is None else (b.total, b.spent, b.delta, b.delta_spent)
            for b in _stream_budgets(conn, scope, one.notion)
        )
        key = (scope, stream_key(one), state, delta, n, self.rule.default_budget)
        size = self._sizes.get(key)
        if size is None:
            size = self._search_size(conn, scope, one, n, delta, state)
            if len(self._sizes) > 256:
                self._sizes.clear()
            self._sizes[key] = size
        while size > n:
            try:
                return size, plan_charge(conn, scope, scaled(one, size), label, self.rule, delta)
            except BudgetExceededError:
                size -= 1  # the coarse accountant is never below the exact one; a safety net
        return n, first

    def _search_size(
        self,
        conn: sqlite3.Connection,
        scope: str,
        one: Guarantee,
        n: int,
        delta: float | None,
        state: tuple,
    ) -> int:
        def fits(k: int) -> bool:
            try:
                plan_charge(conn, scope, scaled(one, k), None, self.rule, delta, coarse=True)
            except BudgetExceededError:
                return False
            return True

        eps = to_fraction(one.cost)
        left = [s[0] - s[1] for s in state if s is not None]
        lo = max(n, int(min(left) // eps)) if left else n  # linear: never more than tight
        if not fits(lo):
            lo = n
        elif left and all(s is None or s[2] is None for s in state):
            return lo  # pure budgets only: the linear count is exact
        hi = 2 * lo
        while fits(hi):
            lo, hi = hi, 2 * hi
            if hi > 2**40:
                return lo  # nothing caps this stream
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    def draw(
        self,
        conn: sqlite3.Connection,
        scope: str,
        guarantee: Guarantee,
        label: str | None,
        delta: float | None,
        now: datetime | None,
    ) -> tuple[int, int] | None:
        """(block id, answers) to draw a stream request from, opening a block if needed
        (only when ``now`` is given; a check passes 0 as the id), or None: the request is
        an ordinary spend (no (ε, δ) budget applies, or a block would gain nothing)."""
        if not guarantee.spends_budget:
            return None
        one, n = per_answer(guarantee)
        budgets = _stream_budgets(conn, scope, guarantee.notion)
        if not any(b is not None and b.is_approximate for b in budgets):
            return None
        for block_id, room in self.open_blocks(conn, scope, one):
            if room >= n:
                return block_id, n
        if now is None:  # a check: n answers must fit a new block
            plan = plan_charge(conn, scope, scaled(one, n), label, self.rule, delta)
            return None if plan.tight is None else (0, n)
        size, plan = self.block_size(conn, scope, one, n, label, delta)
        if plan.tight is None:
            return None  # no gain from δ: ordinary spends, charged as they come
        block = scaled(
            one,
            size,
            description=f"prepaid block of {size} stream answers, each {one.summary()} "
            f"({one.description})",
        )
        cursor = conn.execute(
            "INSERT INTO spends (created_at, committed_at, status, scope, notion, label, "
            "epsilon, k, guarantee, metadata, tight_epsilon, delta, answers) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                now.isoformat(),
                now.isoformat(),
                COMMITTED,
                scope,
                one.notion,
                f"prepaid block: {size} answers of the stream of {label!r}",
                epsilon_text(block.cost),
                one.k,
                json.dumps(block.to_dict(), sort_keys=True),
                json.dumps({"prepaid_for": label}),
                fraction_text(plan.tight),  # type: ignore[arg-type]
                fraction_text(plan.delta),
                size,
            ),
        )
        for charge in plan.charges:
            apply_charge(conn, charge, now, self.rule)
        return int(cursor.lastrowid), n  # type: ignore[arg-type]

    def answers_left(self, conn: sqlite3.Connection, scope: str, one: Guarantee) -> int | None:
        """How many more answers of ``one`` (one answer's guarantee) ``scope`` admits: the
        room of its open blocks plus the most answers the budgets could still pay for; None
        when no budget caps them. Raises :class:`NoBudgetError` as a spend would."""
        budgets = _stream_budgets(conn, scope, one.notion)
        if budgets[0] is None and self.rule.default_budget is None:
            if self.rule.unbudgeted == "refuse":
                raise no_budget(scope, one.notion)
            if all(b is None for b in budgets):
                return None
        approximate = any(b is not None and b.is_approximate for b in budgets)
        room = sum(r for _, r in self.open_blocks(conn, scope, one)) if approximate else 0
        try:
            more, _ = self.block_size(conn, scope, one, 1, None, None)
        except BudgetExceededError:
            more = 0
        return room + more
