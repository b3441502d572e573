"""A ledger's budgets and spends read once, as a report for a program or a person.

:func:`ledger_report` reads one scope (or every scope) of a :class:`~privad.accounting.Ledger`
into a :class:`LedgerReport`: its accounts (:func:`~privad.accounting.statement.accounts`:
a scope's total under a notion counts the spends of the notions that imply it), its data
(:meth:`LedgerReport.summary`, :meth:`LedgerReport.to_dict`: what ``privad budget show
--json`` and ``privad budget statement --json`` print), its two tables as rows of text
(:meth:`LedgerReport.budget_rows`, :meth:`LedgerReport.spend_rows`) and the readable
statement (:func:`~privad.accounting.statement.render_statement`). :func:`cancel_reservation`
gives back the ε of a run killed between its reservation and its commit, and says what the
scope has left (``privad budget cancel``); :func:`reset_ledger` deletes spends (``privad
budget reset``). Both ask ``confirm(question)`` first, if given.

Examples
--------
>>> from privad.accounting import Guarantee, Ledger
>>> book = Ledger(":memory:", default_budget=1.0)  # a budget made on first spend
>>> spend = book.spend("census", Guarantee("pure-dp", 0.25, "one record"), "noisy count")
>>> ledger_report(book).budget_rows()[1][0]
('census', 'pure-dp', '1.0', '0.25', '0.75', '1')
>>> book.close()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from privad.accounting.exact import fmt
from privad.accounting.ledger import Ledger
from privad.accounting.notions import NOTIONS
from privad.accounting.records import CANCELLED, RESERVED, Budget, Spend
from privad.accounting.statement import (
    NotionAccount,
    account_summary,
    accounts,
    render_statement,
    when,
)

__all__ = [
    "Cancellation",
    "LedgerReport",
    "Reset",
    "cancel_reservation",
    "ledger_report",
    "reset_ledger",
]

Rows = tuple[list[str], list[tuple[str, ...]]]


@dataclass(frozen=True)
class LedgerReport:
    """The budgets and live spends (committed or reserved, oldest first) of ``scope`` (None:
    every scope) in the ledger named ``ledger``, read at ``as_of`` (UTC).

    Examples
    --------
    >>> from privad.accounting import Ledger
    >>> with Ledger(":memory:") as book:
    ...     _ = book.set_budget("census", "pure-dp", 2.0)
    ...     report = ledger_report(book, "census")
    >>> report.summary()["budgets"][0]["remaining"], report.summary()["spends"]
    (Fraction(2, 1), [])
    """

    ledger: str
    scope: str | None
    budgets: list[Budget]
    spends: list[Spend]
    as_of: datetime

    @property
    def accounts(self) -> list[NotionAccount]:
        """One account per scope and notion with a budget or a live spend (own or implied)."""
        return accounts(self.budgets, self.spends)

    @property
    def statement(self) -> str:
        """The readable statement, as :meth:`privad.accounting.Ledger.statement` writes it."""
        return render_statement(self.ledger, self.budgets, self.spends, self.as_of)

    def priced(self) -> list[NotionAccount]:
        """The accounts of the notions that spend ε (those a budget can cap)."""
        return [a for a in self.accounts if NOTIONS[a.notion].has_epsilon]

    def latest(self, last: int = 0) -> list[Spend]:
        """The ``last`` most recent spends (0: all)."""
        return self.spends if last == 0 else self.spends[-last:]

    def summary(self, last: int = 0) -> dict[str, Any]:
        """The priced accounts and the ``last`` most recent spends (0: all), as data."""
        shown = self.latest(last)
        return {
            "ledger": self.ledger,
            "scope": self.scope,
            "budgets": [account_summary(a) for a in self.priced()],
            "spends": [s.to_dict() for s in shown],
            "spends_not_shown": len(self.spends) - len(shown),
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything: the statement, every account and every live spend, as data."""
        return {
            "ledger": self.ledger,
            "scope": self.scope,
            "statement": self.statement,
            "accounts": [account_summary(a) for a in self.accounts],
            "spends": [s.to_dict() for s in self.spends],
        }

    def budget_rows(self) -> Rows:
        """The budgets as a table of text: its columns and one row per priced account.

        A (ε, δ) budget's spent ε is by tight accounting (the pure total beside it) and it
        has a column ``δ; δ spent``, shown when any budget of the report has a δ.
        """
        columns = ["scope", "notion", "total ε", "spent ε", "remaining ε", "spends"]
        with_delta = any(b.delta is not None for b in self.budgets)
        rows = []
        for a in self.priced():
            budget, remaining = a.budget, account_summary(a)["remaining"]
            approx = budget is not None and budget.delta is not None
            cells = [
                a.scope,
                a.notion,
                "—" if budget is None else fmt(budget.total),
                f"{fmt(a.tight_spent)} tight (pure {a.spent_text()})" if approx else a.spent_text(),
                "—" if remaining is None else fmt(remaining),
                str(len(a.own)),
            ]
            if with_delta:
                cells.append(f"{fmt(budget.delta)}; {fmt(a.delta_spent)}" if approx else "")  # type: ignore[union-attr]
            rows.append(tuple(cells))
        return columns + ["δ; δ spent"] * with_delta, rows

    def spend_rows(self, last: int = 0) -> Rows:
        """The ``last`` most recent spends (0: all) as a table of text: its columns and one
        row per spend; ``ε' outliers`` and ``status`` are columns only when some spend has
        an ε' or is reserved."""
        shown = self.latest(last)
        with_outlier = any(s.epsilon_outlier is not None for s in shown)
        with_status = any(s.status == RESERVED for s in shown)
        columns = ["id", "when", "scope", "label", "notion", "ε", "k"]
        columns += ["ε' outliers"] * with_outlier + ["status"] * with_status
        rows = []
        for s in shown:
            row = [
                str(s.id),
                when(s.timestamp),
                s.scope,
                s.label,
                s.notion,
                fmt(s.epsilon) if s.guarantee.epsilon is not None else "— (0)",
                "" if s.k is None else str(s.k),
            ]
            if with_outlier:
                row.append(fmt(s.epsilon_outlier) if s.epsilon_outlier is not None else "")
            rows.append(tuple(row + [s.status] * with_status))
        return columns, rows


def ledger_report(ledger: Ledger, scope: str | None = None) -> LedgerReport:
    """Read the budgets and the live spends of ``scope`` (None: every scope) of ``ledger``.

    Parameters
    ----------
    ledger:
        An open ledger.
    scope:
        One scope (a non-empty name), or None for every scope.

    Returns
    -------
    LedgerReport
        What was read, stamped with the time it was read.

    Examples
    --------
    >>> from privad.accounting import Guarantee, Ledger
    >>> with Ledger(":memory:", default_budget=1.0) as book:
    ...     _ = book.spend("census", Guarantee("pure-dp", 0.5, "one record"), "noisy count")
    ...     report = ledger_report(book)
    >>> [a.notion for a in report.accounts][:2], report.spend_rows()[1][0][3]
    (['pure-dp', 'sensitive'], 'noisy count')
    """
    budgets = ledger.budgets(scope)
    spends = ledger.history(scope, include_cancelled=False)
    return LedgerReport(ledger.path, scope, budgets, spends, datetime.now(UTC))


def _written_output(spend: Spend) -> Path | None:
    """The output a spend's metadata names, if it exists and was modified at or after the
    spend was reserved (published by the release the spend pays for)."""
    context = spend.metadata.get("context")
    out = spend.metadata.get("out") or (context.get("out") if isinstance(context, dict) else None)
    if not out:
        return None
    path = Path(out)
    try:
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:  # not there (never published, or moved away)
        return None
    return path if modified >= spend.timestamp else None


@dataclass(frozen=True)
class Cancellation:
    """A reservation given back (or found cancelled already) and what its scope has left,
    by notion, in the ledger named ``ledger``.

    Examples
    --------
    >>> from privad.accounting import Guarantee, Ledger
    >>> with Ledger(":memory:", default_budget=1.0) as book:
    ...     held = book.reserve("census", Guarantee("pure-dp", 0.5, "one record"), "count")
    ...     done = cancel_reservation(book, held.id)
    >>> done.to_dict()["remaining"]["pure-dp"], done.text()[:33]
    (Fraction(1, 1), "Cancelled reservation #1 ('count'")
    """

    ledger: str
    spend: Spend
    already_cancelled: bool
    remaining: dict[str, Fraction]

    @property
    def what(self) -> str:
        """The reservation in one line (id, label, scope, notion, ε, when)."""
        s = self.spend
        return (
            f"reservation #{s.id} ({s.label!r}, scope {s.scope!r}, {s.notion}, "
            f"ε = {fmt(s.epsilon)}, {when(s.timestamp)} UTC)"
        )

    def to_dict(self) -> dict[str, Any]:
        """As data: the ledger, the spend's id and scope, and the remaining ε by notion."""
        return {
            "ledger": self.ledger,
            "spend": self.spend.id,
            "scope": self.spend.scope,
            "cancelled": True,
            "already_cancelled": self.already_cancelled,
            "remaining": self.remaining,
        }

    def text(self) -> str:
        """One sentence: what was cancelled and what the scope has left."""
        if self.already_cancelled:
            return f"{self.what[0].upper()}{self.what[1:]} was already cancelled."
        left = ", ".join(f"{k} {fmt(v)}" for k, v in self.remaining.items()) or "no budget"
        return (
            f"Cancelled {self.what}; remaining ε of scope {self.spend.scope!r}: {left} "
            f"(ledger {self.ledger})."
        )


def cancel_reservation(
    ledger: Ledger, spend_id: int, confirm: Callable[[str], None] | None = None
) -> Cancellation:
    """Give back the ε of reservation ``spend_id`` (:meth:`Ledger.cancel
    <privad.accounting.Ledger.cancel>`); one cancelled already is reported as such.

    Parameters
    ----------
    ledger:
        An open ledger.
    spend_id:
        The reservation's id.
    confirm:
        Called with a question naming the reservation (:attr:`Cancellation.what`) and the
        ledger before a reserved spend is cancelled; it raises to stop. None: no question.

    Returns
    -------
    Cancellation
        The spend and the remaining ε of its scope, by notion.

    Raises
    ------
    LedgerError
        No spend has that id, or it is committed (its result may have been released).

    Notes
    -----
    When the output a reservation names (``metadata["out"]`` or
    ``metadata["context"]["out"]``, as the release paths record it; a relative path is
    looked up from the current folder) exists and was written after the reservation, the
    question to ``confirm`` says so: the process may have been stopped after publishing its
    answers and before committing. A later job writing the same output looks the same, so
    this is a caution, not a refusal.
    """
    spend = ledger.get_spend(spend_id)
    already = spend.status == CANCELLED
    if spend.status == RESERVED and confirm is not None:
        what = Cancellation(ledger.path, spend, already, {}).what
        written = _written_output(spend)
        caution = (
            ""
            if written is None
            else f" Its output {written} was written after it was reserved, so its answers "
            "may have been published and read."
        )
        confirm(
            f"Give back the ε of {what} in ledger {ledger.path}?{caution} Only if nothing it "
            "computed was released."
        )
    if not already:
        spend = ledger.cancel(spend_id)
    remaining = {b.notion: b.remaining for b in ledger.budgets(spend.scope)}
    return Cancellation(ledger.path, spend, already, remaining)


@dataclass(frozen=True)
class Reset:
    """Spends deleted from the ledger named ``ledger``: of ``scope`` (None: every scope),
    how many, and whether the budgets went too.

    Examples
    --------
    >>> Reset("l.sqlite", None, 3, False).text()
    'Reset every scope: 3 spend(s) deleted, budgets kept (ledger l.sqlite).'
    """

    ledger: str
    scope: str | None
    spends_deleted: int
    budgets_dropped: bool

    def to_dict(self) -> dict[str, Any]:
        """As data."""
        return {
            "ledger": self.ledger,
            "scope": self.scope,
            "reset": True,
            "spends_deleted": self.spends_deleted,
            "budgets_dropped": self.budgets_dropped,
        }

    def text(self) -> str:
        """One sentence: what was deleted."""
        after = "budgets dropped" if self.budgets_dropped else "budgets kept"
        what = _scopes(self.scope)
        return (
            f"Reset {what}: {self.spends_deleted} spend(s) deleted, {after} (ledger {self.ledger})."
        )


def _scopes(scope: str | None) -> str:
    return f"scope {scope!r}" if scope is not None else "every scope"


def reset_ledger(
    ledger: Ledger,
    scope: str | None = None,
    *,
    drop_budgets: bool = False,
    confirm: Callable[[str], None] | None = None,
) -> Reset:
    """Delete the recorded spends of ``scope`` (None: every scope), so its budgets are full
    again (:meth:`Ledger.reset <privad.accounting.Ledger.reset>`): it forgets privacy loss
    that did happen, so only for data that was replaced.

    Parameters
    ----------
    ledger:
        An open ledger.
    scope:
        One scope, or None for every scope.
    drop_budgets:
        Also delete the budgets.
    confirm:
        Called with a question saying how many spends (and budgets) would go, before
        anything is deleted; it raises to stop. None: no question.

    Returns
    -------
    Reset
        What was deleted.

    Examples
    --------
    >>> from privad.accounting import Guarantee, Ledger
    >>> with Ledger(":memory:", default_budget=1.0) as book:
    ...     _ = book.spend("census", Guarantee("pure-dp", 0.5, "one record"), "count")
    ...     done = reset_ledger(book, "census", confirm=print)
    ...     left = book.remaining("census", "pure-dp")
    Delete 1 spend(s) of scope 'census' from ledger :memory:, keeping 1 budget(s)?
    >>> done.spends_deleted, left
    (1, 1.0)
    """
    if confirm is not None:
        confirm(
            f"Delete {len(ledger.history(scope))} spend(s) of {_scopes(scope)} from ledger "
            f"{ledger.path}, {'and delete' if drop_budgets else 'keeping'} "
            f"{len(ledger.budgets(scope))} budget(s)?"
        )
    deleted = ledger.reset(scope, drop_budgets=drop_budgets)
    return Reset(ledger.path, scope, deleted, drop_budgets)
