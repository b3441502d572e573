"""The ledger's rows: budgets, spends and audit events, read and written in a transaction.

Every function here takes the open SQLite connection of a transaction that
:class:`~privad.accounting.ledger.Ledger` holds; none commits. The table layout is
:mod:`privad.accounting.schema`'s.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from privad.accounting.exact import ZERO, fmt, fraction_text, parse_fraction
from privad.accounting.guarantee import Guarantee
from privad.accounting.notions import NOTIONS
from privad.accounting.records import CANCELLED, LIVE_STATUSES, Budget, Event, Spend
from privad.accounting.schema import live_delta, live_spent
from privad.errors import LedgerError, ParameterError

LIVE = f"status IN ({','.join(repr(s) for s in LIVE_STATUSES)})"
"""The SQL condition of a live spend (counted against its budgets)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def parse_time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def metadata_json(metadata: Mapping[str, Any] | None) -> str:
    """A spend's metadata as the JSON text stored with it (``ParameterError`` if it cannot be)."""
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping):
        raise ParameterError(f"metadata must be a mapping (dict) or None, got {metadata!r}")
    try:
        return json.dumps(dict(metadata), sort_keys=True, allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"metadata must be JSON-serialisable: {exc}") from None


# -- budgets ---------------------------------------------------------------------------------

BUDGET_COLUMNS = "scope, notion, total, spent, created_at, updated_at, delta, delta_spent"


def _budget_from_row(row: sqlite3.Row | tuple) -> Budget:
    scope, notion, total, spent, created_at, updated_at, delta, delta_spent = row
    return Budget(
        scope=scope,
        notion=notion,
        total=parse_fraction(total, "budget total"),
        spent=parse_fraction(spent, "spent total"),
        created_at=parse_time(created_at),  # type: ignore[arg-type]
        updated_at=parse_time(updated_at),  # type: ignore[arg-type]
        delta=None if delta is None else parse_fraction(delta, "budget δ"),
        delta_spent=parse_fraction(delta_spent, "spent δ"),
    )


def budget_row(conn: sqlite3.Connection, scope: str, notion: str) -> Budget | None:
    """The budget of ``scope`` under ``notion``, or None."""
    row = conn.execute(
        f"SELECT {BUDGET_COLUMNS} FROM budgets WHERE scope = ? AND notion = ?",
        (scope, notion),
    ).fetchone()
    return None if row is None else _budget_from_row(row)


def budgets_in(conn: sqlite3.Connection, scope: str | None) -> list[Budget]:
    """Every budget (of ``scope`` if given), ordered by scope and notion."""
    sql = f"SELECT {BUDGET_COLUMNS} FROM budgets"
    args: tuple = ()
    if scope is not None:
        sql += " WHERE scope = ?"
        args = (scope,)
    rows = conn.execute(sql + " ORDER BY scope, notion", args).fetchall()
    return [_budget_from_row(r) for r in rows]


def refresh_budget(conn: sqlite3.Connection, budget: Budget, now: datetime) -> None:
    """Recompute ``budget``'s spent ε and δ from the live spends (same transaction)."""
    tight = budget.is_approximate
    used = live_delta(conn, budget.scope, budget.notion) if tight else ZERO
    conn.execute(
        "UPDATE budgets SET spent = ?, delta_spent = ?, updated_at = ? "
        "WHERE scope = ? AND notion = ?",
        (
            fraction_text(live_spent(conn, budget.scope, budget.notion, tight=tight)),
            fraction_text(used),
            now.isoformat(),
            budget.scope,
            budget.notion,
        ),
    )


# -- spends ----------------------------------------------------------------------------------

_SPEND_COLUMNS = (
    "id, created_at, committed_at, status, scope, label, epsilon, guarantee, metadata, "
    "tight_epsilon, delta, answers, block_id"
)


def _spend_from_row(row: tuple) -> Spend:
    (
        sid,
        created_at,
        committed_at,
        status,
        scope,
        label,
        epsilon,
        guarantee,
        metadata,
        tight,
        delta,
        answers,
        block_id,
    ) = row
    try:
        g = Guarantee.from_dict(json.loads(guarantee))
        meta = json.loads(metadata)
    except (ValueError, ParameterError) as exc:
        raise LedgerError(f"ledger spend #{sid} is damaged: {exc}") from None
    return Spend(
        id=sid,
        timestamp=parse_time(created_at),  # type: ignore[arg-type]
        scope=scope,
        label=label,
        guarantee=g,
        epsilon=float(parse_fraction(epsilon, "spend ε")),
        status=status,
        metadata=meta,
        committed_at=parse_time(committed_at),
        tight_epsilon=None if tight is None else float(parse_fraction(tight, "spend ε")),
        delta=float(parse_fraction(delta, "spend δ")),
        answers=answers,
        block_id=block_id,
    )


def spend_row(conn: sqlite3.Connection, spend_id: int) -> Spend | None:
    """The spend with id ``spend_id``, or None."""
    row = conn.execute(f"SELECT {_SPEND_COLUMNS} FROM spends WHERE id = ?", (spend_id,)).fetchone()
    return None if row is None else _spend_from_row(row)


def history_in(
    conn: sqlite3.Connection, scope: str | None, notion: str | None, include_cancelled: bool
) -> list[Spend]:
    """The spends, oldest first, optionally of one scope and/or notion."""
    clauses: list[str] = []
    args: list[Any] = []
    if scope is not None:
        clauses.append("scope = ?")
        args.append(scope)
    if notion is not None:
        clauses.append("notion = ?")
        args.append(notion)
    if not include_cancelled:
        clauses.append("status != ?")
        args.append(CANCELLED)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(f"SELECT {_SPEND_COLUMNS} FROM spends{where} ORDER BY id", args).fetchall()
    return [_spend_from_row(r) for r in rows]


# -- the audit trail -------------------------------------------------------------------------


def add_event(
    conn: sqlite3.Connection,
    when: datetime,
    action: str,
    scope: str | None,
    notion: str | None,
    detail: str,
) -> None:
    """Append one action that changed budgets to the audit trail."""
    conn.execute(
        "INSERT INTO events (created_at, action, scope, notion, detail) VALUES (?,?,?,?,?)",
        (when.isoformat(), action, scope, notion, detail),
    )


def events_in(conn: sqlite3.Connection, scope: str | None) -> list[Event]:
    """The audit trail (of ``scope`` and of every scope if given), oldest first."""
    sql = "SELECT id, created_at, action, scope, notion, detail FROM events"
    args: tuple = ()
    if scope is not None:
        sql += " WHERE scope = ? OR scope IS NULL"
        args = (scope,)
    rows = conn.execute(sql + " ORDER BY id", args).fetchall()
    return [Event(r[0], parse_time(r[1]), r[2], r[3], r[4], r[5]) for r in rows]  # type: ignore[arg-type]


# -- consistency -----------------------------------------------------------------------------


def inconsistencies(conn: sqlite3.Connection, *, uncapped: bool) -> list[str]:
    """What is wrong in the ledger's rows (empty: nothing), recomputed from the spends.

    A budget's spent must be the sum of the live spends of its scope under its notion and
    under the notions that imply it; every live spend of a notion with an ε must have a
    budget of its own notion (unless ``uncapped``: the ledger records spends without one);
    no budget may be spent beyond its total; the live draws of a prepaid block use at most
    the answers it prepaid.
    """
    problems = []
    budgets = budgets_in(conn, None)
    sums = {
        (b.scope, b.notion): live_spent(conn, b.scope, b.notion, tight=b.is_approximate)
        for b in budgets
    }
    deltas = {
        (b.scope, b.notion): live_delta(conn, b.scope, b.notion)
        for b in budgets
        if b.is_approximate
    }
    blocks = conn.execute(
        "SELECT id, answers, status FROM spends WHERE block_id IS NULL AND answers IS NOT NULL"
    ).fetchall()
    drawn = dict(
        conn.execute(
            f"SELECT block_id, SUM(answers) FROM spends WHERE block_id IS NOT NULL AND "
            f"{LIVE} GROUP BY block_id"
        ).fetchall()
    )
    placeholders = ",".join("?" for _ in LIVE_STATUSES)
    spent_keys = conn.execute(
        f"SELECT DISTINCT scope, notion FROM spends WHERE status IN ({placeholders})",
        LIVE_STATUSES,
    ).fetchall()
    for scope, notion in spent_keys:
        if NOTIONS.get(notion) is None:
            problems.append(f"unknown notion {notion!r} in scope {scope!r}")
        elif NOTIONS[notion].has_epsilon and (scope, notion) not in sums and not uncapped:
            problems.append(f"spends of scope {scope!r}, {notion!r} have no budget")
    for b in budgets:
        total = sums[(b.scope, b.notion)]
        if b.spent != total:
            problems.append(
                f"scope {b.scope!r}, {b.notion!r}: recorded spent {fmt(b.spent)} != sum "
                f"of spends {fmt(total)}"
            )
        if b.spent > b.total:
            problems.append(
                f"scope {b.scope!r}, {b.notion!r}: spent {fmt(b.spent)} > total {fmt(b.total)}"
            )
        if b.is_approximate and (
            b.delta_spent != deltas[(b.scope, b.notion)] or b.delta_spent > b.delta  # type: ignore[operator]
        ):
            problems.append(
                f"scope {b.scope!r}, {b.notion!r}: spent δ {fmt(b.delta_spent)} does not "
                f"match its spends ({fmt(deltas[(b.scope, b.notion)])}) or its total"
            )
    sizes = {bid: size for bid, size, status in blocks if status in LIVE_STATUSES}
    for bid, used in drawn.items():
        if bid not in sizes or used > sizes[bid]:
            problems.append(
                f"draws of {used} answer(s) from prepaid block #{bid}, which "
                f"prepaid {sizes.get(bid, 0)}"
            )
    return problems
