"""A readable account of a ledger: budgets and what was spent on what.

The totals here are the ones the ledger enforces: a scope's total under a notion counts
its own spends and the spends of every notion that implies it
(:data:`~privad.accounting.notions.NOTIONS`, ``Notion.implies``), and each total says what it
is made of, e.g. ``2.0 (1.0 own + 1.0 implied by pure-dp)``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any

from privad.accounting.exact import ZERO, fmt, to_fraction
from privad.accounting.notions import NOTION_NAMES, NOTIONS, implying_notions
from privad.accounting.records import RESERVED, Budget, Spend


def when(t: datetime) -> str:
    """A timestamp to the second, in UTC: ``2025-11-22 03:40:01``."""
    return t.strftime("%Y-%m-%d %H:%M:%S")


def spent_text(notion: str, parts: Mapping[str, Fraction]) -> str:
    """A spent total and what it is made of.

    Parameters
    ----------
    notion:
        The notion the total is for.
    parts:
        The live ε counting toward it, by the notion it was spent under (``notion`` itself
        and the notions that imply it).

    Returns
    -------
    str
        ``"2.0 (1.0 own + 1.0 implied by pure-dp)"``, ``"1.0 (1.0 implied by pure-dp)"``
        when nothing was spent under ``notion`` itself, or just ``"0.3"`` when nothing is
        implied.
    """
    total = sum(parts.values(), ZERO)
    implied = [
        f"{fmt(eps)} implied by {name}" for name, eps in parts.items() if name != notion and eps
    ]
    if not implied:
        return fmt(total)
    own = parts.get(notion, ZERO)
    pieces = ([f"{fmt(own)} own"] if own else []) + implied
    return f"{fmt(total)} ({' + '.join(pieces)})"


@dataclass(frozen=True)
class NotionAccount:
    """What one scope has spent under one notion: its own spends and the implied ones."""

    scope: str
    notion: str
    budget: Budget | None
    own: list[Spend]
    """The live spends made under ``notion``."""
    implied: list[Spend]
    """The scope's live spends under the notions that imply ``notion``."""

    @property
    def charged(self) -> list[Spend]:
        """The spends that charge the total: own and implied, less draws from prepaid blocks
        (their block is the charge)."""
        return [s for s in (*self.own, *self.implied) if not s.is_draw]

    @property
    def parts(self) -> dict[str, Fraction]:
        """The ε counting toward the total, by notion: ``notion`` first, then the implying."""
        parts = dict.fromkeys((self.notion, *implying_notions(self.notion)), ZERO)
        for s in self.charged:
            parts[s.notion] = parts.get(s.notion, ZERO) + to_fraction(s.epsilon)
        return parts

    @property
    def spent(self) -> Fraction:
        """The total the ledger enforces: own plus implied ε."""
        return sum(self.parts.values(), ZERO)

    @property
    def remaining(self) -> Fraction | None:
        """``budget.total - spent``, or ``None`` without a budget."""
        return None if self.budget is None else self.budget.total - self.spent

    def spent_text(self) -> str:
        """:func:`spent_text` of this account."""
        return spent_text(self.notion, self.parts)

    @property
    def tight_spent(self) -> Fraction:
        """What an (ε, δ) budget is charged: each spend's tight ε, or its pure ε."""
        return sum(
            (
                to_fraction(s.epsilon if s.tight_epsilon is None else s.tight_epsilon)
                for s in self.charged
            ),
            ZERO,
        )

    @property
    def delta_spent(self) -> Fraction:
        """The δ of the spends counting toward this notion."""
        return sum((to_fraction(s.delta) for s in self.charged), ZERO)


def account_summary(account: NotionAccount) -> dict[str, Any]:
    """One scope and notion as data (``privad budget show --json`` and the console).

    An (ε, δ) budget's ``spent`` and ``remaining`` are by tight accounting (``pure_spent``
    keeps the linear total); ``spent_by_notion`` is :attr:`NotionAccount.parts`.

    Examples
    --------
    >>> from privad.accounting import Guarantee, Ledger
    >>> with Ledger(":memory:") as book:
    ...     _ = book.set_budget("d", "pure-dp", 1.0)
    ...     _ = book.spend("d", Guarantee("pure-dp", 0.25, "one record"), "q")
    ...     row = account_summary(accounts(book.budgets(), book.history())[0])
    >>> row["spent"], row["remaining"], row["spends"]
    (Fraction(1, 4), Fraction(3, 4), 1)
    """
    budget = account.budget
    approx = budget is not None and budget.delta is not None
    if approx:
        remaining: Fraction | None = budget.total - account.tight_spent  # type: ignore[union-attr]
    else:
        remaining = account.remaining
    return {
        "scope": account.scope,
        "notion": account.notion,
        "total": None if budget is None else budget.total,
        "spent": account.tight_spent if approx else account.spent,
        "spent_by_notion": account.parts,
        "pure_spent": account.spent,
        "remaining": remaining,
        "spends": len(account.own),
        "delta": None if budget is None else budget.delta,
        "delta_spent": account.delta_spent if approx else None,
    }


def _group_key(key: tuple[str, str]) -> tuple[str, int]:
    scope, notion = key
    order = NOTION_NAMES.index(notion) if notion in NOTION_NAMES else len(NOTION_NAMES)
    return scope, order


def accounts(budgets: list[Budget], spends: list[Spend]) -> list[NotionAccount]:
    """One :class:`NotionAccount` per scope and notion that has a budget or a live spend.

    Parameters
    ----------
    budgets:
        The ledger's budgets.
    spends:
        Its live spends (committed or reserved).

    Returns
    -------
    list of NotionAccount
        By scope, then notion in documentation order. A notion with neither a budget nor
        spends of its own appears when spends of a notion implying it were made in the scope.
    """
    own: dict[tuple[str, str], list[Spend]] = {}
    implied: dict[tuple[str, str], list[Spend]] = {}
    for s in spends:
        own.setdefault((s.scope, s.notion), []).append(s)
        info = NOTIONS.get(s.notion)
        for name in () if info is None else info.implies:
            implied.setdefault((s.scope, name), []).append(s)
    budget_of = {(b.scope, b.notion): b for b in budgets}
    keys = sorted(set(own) | set(implied) | set(budget_of), key=_group_key)
    return [
        NotionAccount(key[0], key[1], budget_of.get(key), own.get(key, []), implied.get(key, []))
        for key in keys
    ]


def _spend_line(s: Spend, width: int, relation: bool, used: Mapping[int, int]) -> str:
    parts = [f"  {when(s.timestamp)}  {s.label:<{width}}"]
    if s.is_draw:
        parts.append(f"{s.answers} answer(s) from prepaid block #{s.block_id}")
    elif s.is_block:
        parts.append(f"#{s.id}: {used.get(s.id, 0)} of {s.answers} answers used")
    if s.guarantee.epsilon is not None:
        parts.append(f"ε {fmt(s.epsilon)}" + (" (paid by its block)" if s.is_draw else ""))
    if s.k is not None:
        parts.append(f"k {s.k}")
    if s.epsilon_outlier is not None:
        parts.append(f"ε' {fmt(s.epsilon_outlier)} (outliers)")
    if s.tight_epsilon is not None:
        parts.append(f"→ (ε {fmt(s.tight_epsilon)}, δ {fmt(s.delta)}) tight")
    if s.status == RESERVED:
        parts.append("[reserved, not yet committed]")
    if relation:
        parts.append(f"— {s.guarantee.neighbouring}")
    return "  ".join(parts)


def per_record_lines(summary: Mapping[str, Any]) -> list[str]:
    """The statement's lines for a spend's per-record exposure (metadata ``"per_record"``,
    :meth:`privad.sensitive.RecordExposure.summary`): curator-only information."""
    eps, delta = float(summary["epsilon"]), summary.get("delta")
    at_m = (
        ""
        if delta is None
        else (f", optimal {_short(summary['loss_optimal_m'])} at δ {fmt(delta)}")
    )
    at_max = "" if delta is None else f", optimal {_short(summary['loss_optimal_max'])}"
    bins = "; ".join(f"{lo if lo == hi else f'{lo}–{hi}'}: {n}" for lo, hi, n in summary["bins"])
    return [
        f"    per record (curator only: depends on the data): charged m = {summary['m']} "
        f"answers per record, ε {_short(summary['m'] * eps)} linear{at_m}; the "
        f"{summary['records']} stored records are touched by at most {summary['max']} "
        f"(ε {_short(summary['max'] * eps)} linear{at_max}), median {summary['median']}, "
        f"90% ≤ {summary['p90']}, 99% ≤ {summary['p99']}",
        f"    records by answers that can move with them: {bins}",
    ]


def _short(value: float) -> str:
    return f"{float(value):.6g}"


def _block(account: NotionAccount) -> list[str]:
    """The statement's lines for one scope and notion."""
    group = account.own
    info = NOTIONS.get(account.notion)
    title = info.title if info else account.notion
    lines = [f"Scope {account.scope!r}: {title} ({account.notion})"]
    budget = account.budget
    count = f"{len(group)} spend{'s' if len(group) != 1 else ''}"
    spent = account.spent_text()
    if info is not None and not info.has_epsilon:
        lines.append(f"  {count} recorded with ε 0 (no budget applies): {info.summary}")
    elif budget is not None and budget.delta is not None:
        lines.append(
            f"  budget (ε {fmt(budget.total)}, δ {fmt(budget.delta)}); spent (ε "
            f"{fmt(account.tight_spent)}, δ {fmt(account.delta_spent)}) by tight accounting, "
            f"pure ε {spent} by linear composition; remaining (ε "
            f"{fmt(budget.total - account.tight_spent)}, δ "
            f"{fmt(budget.delta - account.delta_spent)}); {count}"
        )
    elif budget is not None:
        lines.append(
            f"  budget ε {fmt(budget.total)}; spent {spent}; "
            f"remaining {fmt(account.remaining)}; {count}"
        )
    else:
        lines.append(f"  no budget set (not capped); spent {spent}; {count}")
    relations = list(dict.fromkeys(s.guarantee.neighbouring for s in group))
    if len(relations) == 1:
        lines.append(f"  neighbouring: {relations[0]}")
    width = min(max((len(s.label) for s in group), default=0), 40)
    used: dict[int, int] = {}
    for s in group:
        if s.is_draw:
            used[s.block_id] = used.get(s.block_id, 0) + s.answers  # type: ignore[index,operator]
    for s in group:
        lines.append(_spend_line(s, width, len(relations) > 1, used))
        if isinstance(s.metadata.get("per_record"), Mapping):
            lines += per_record_lines(s.metadata["per_record"])
    ks = [s.k for s in group if s.k is not None]
    if ks:
        lines.append(
            f"  together: ε {fmt(account.spent)} for k = {min(ks)} (the smallest k; the "
            "intersection of the graphs)"
        )
    outlier = [to_fraction(s.epsilon_outlier) for s in group if s.epsilon_outlier is not None]
    if outlier:
        # An implied ε-DP spend gives its ε to the outliers too (ε' = ε).
        outlier += [to_fraction(s.epsilon) for s in account.implied]
        lines.append(f"  outliers: ε' {fmt(sum(outlier, ZERO))} in total (recorded, not budgeted)")
    return lines


def render_statement(
    ledger_name: str, budgets: list[Budget], spends: list[Spend], now: datetime
) -> str:
    """The text of :meth:`Ledger.statement`: one block per scope and notion."""
    implications = "; ".join(
        f"a {name} spend of ε is also one under {', '.join(info.implies)}"
        for name, info in NOTIONS.items()
        if info.implies
    )
    lines = [
        f"Privacy statement of ledger {ledger_name} (as of {when(now)} UTC)",
        *textwrap.wrap(
            "Within one scope and notion, spends compose sequentially: their ε add up. A "
            "notion's total also counts the scope's spends under the notions that imply it "
            f"({implications}); other notions' ε are never added together.",
            width=88,
        ),
    ]
    blocks = accounts(budgets, spends)
    if not blocks:
        lines += ["", "No budgets are set and nothing has been spent."]
        return "\n".join(lines)
    for account in blocks:
        lines += ["", *_block(account)]
    return "\n".join(lines)
