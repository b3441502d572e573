"""A ledger's budgets and spends read once, as a report for a program or a person.

:func:`ledger_report` reads one scope (or every scope) of a :class:`~privad.accounting.Ledger`
into a :class:`LedgerReport`: its accounts (:func:`~privad.accounting.statement.accounts`:
a scope's total under a notion counts the spends of the notions that imply it), its data
(:meth:`LedgerReport.summary`, :meth:`LedgerReport.to_dict`: what ``privad budget show
--json`` and ``privad budget statement --json`` print), its two tables as rows of text
(:meth:`LedgerReport.budget_rows`, :meth:`LedgerReport.spend_rows`) and the readable
statement (:func:`~privad.accounting.statement.render_statement`).

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

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from privad.accounting.exact import fmt
from privad.accounting.ledger import Ledger
from privad.accounting.notions import NOTIONS
from privad.accounting.records import RESERVED, Budget, Spend
from privad.accounting.statement import (
    NotionAccount,
    account_summary,
    accounts,
    render_statement,
    when,
)

__all__ = ["LedgerReport", "ledger_report"]

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
