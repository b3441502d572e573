"""A readable account of a ledger: budgets and what was spent on what."""

from __future__ import annotations

from datetime import datetime
from fractions import Fraction

from privad.accounting.exact import ZERO, fmt, to_fraction
from privad.accounting.notions import NOTION_NAMES, NOTIONS
from privad.accounting.records import RESERVED, Budget, Spend


def when(t: datetime) -> str:
    """A timestamp to the second, in UTC: ``2025-11-22 03:40:01``."""
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _group_key(key: tuple[str, str]) -> tuple[str, int]:
    scope, notion = key
    order = NOTION_NAMES.index(notion) if notion in NOTION_NAMES else len(NOTION_NAMES)
    return scope, order


def render_statement(
    ledger_name: str, budgets: list[Budget], spends: list[Spend], now: datetime
) -> str:
    """The text of :meth:`Ledger.statement`: one block per scope and notion."""
    lines = [
        f"Privacy statement of ledger {ledger_name} (as of {when(now)} UTC)",
        "Within one scope and notion, spends compose sequentially: their ε add up. Different",
        "notions are budgeted separately; their ε are never added together.",
    ]
    by_key: dict[tuple[str, str], list[Spend]] = {}
    for s in spends:
        by_key.setdefault((s.scope, s.notion), []).append(s)
    budget_of = {(b.scope, b.notion): b for b in budgets}
    keys = sorted(set(by_key) | set(budget_of), key=_group_key)
    if not keys:
        lines += ["", "No budgets are set and nothing has been spent."]
        return "\n".join(lines)
    for key in keys:
        scope, notion = key
        group = by_key.get(key, [])
        info = NOTIONS.get(notion)
        title = info.title if info else notion
        lines += ["", f"Scope {scope!r}: {title} ({notion})"]
        budget = budget_of.get(key)
        count = f"{len(group)} spend{'s' if len(group) != 1 else ''}"
        if info is not None and not info.has_epsilon:
            lines.append(f"  {count} recorded with ε 0 (no budget applies): {info.summary}")
        elif budget is not None:
            lines.append(
                f"  budget ε {fmt(budget.total)}; spent {fmt(budget.spent)}; "
                f"remaining {fmt(budget.remaining)}; {count}"
            )
        else:
            lines.append(f"  no budget set; {count}")
        relations = list(dict.fromkeys(s.guarantee.neighbouring for s in group))
        if len(relations) == 1:
            lines.append(f"  neighbouring: {relations[0]}")
        width = min(max((len(s.label) for s in group), default=0), 40)
        for s in group:
            parts = [f"  {when(s.timestamp)}  {s.label:<{width}}"]
            if s.guarantee.epsilon is not None:
                parts.append(f"ε {fmt(s.epsilon)}")
            if s.k is not None:
                parts.append(f"k {s.k}")
            if s.epsilon_outlier is not None:
                parts.append(f"ε' {fmt(s.epsilon_outlier)} (outliers)")
            if s.status == RESERVED:
                parts.append("[reserved, not yet committed]")
            if len(relations) > 1:
                parts.append(f"— {s.guarantee.neighbouring}")
            lines.append("  ".join(parts))
        ks = [s.k for s in group if s.k is not None]
        if ks:
            lines.append(
                f"  together: ε {fmt(sum((to_fraction(s.epsilon) for s in group), ZERO))} "
                f"for k = {min(ks)} (the smallest k; the intersection of the graphs)"
            )
        outlier = [s.epsilon_outlier for s in group if s.epsilon_outlier is not None]
        if outlier:
            total_out: Fraction = sum((to_fraction(e) for e in outlier), ZERO)
            lines.append(f"  outliers: ε' {fmt(total_out)} in total (recorded, not budgeted)")
    return "\n".join(lines)
