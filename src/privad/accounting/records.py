"""What the ledger hands back: budgets, spends and audit events, as frozen records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from privad.accounting.guarantee import Guarantee

COMMITTED = "committed"
RESERVED = "reserved"
CANCELLED = "cancelled"
LIVE_STATUSES = (COMMITTED, RESERVED)
"""Spends in these states count against the budget (a reservation is counted at once)."""


@dataclass(frozen=True)
class Budget:
    """The budget of one scope and notion. ``total`` and ``spent`` are exact.

    A pure-ε budget has ``delta`` None. An (ε, δ) budget has ``delta`` (its total δ) and
    ``delta_spent``; its ``spent`` is then the sum of the spends' *tight* ε
    (:mod:`privad.accounting.tight`), and the spends' δ add up in ``delta_spent`` (basic
    composition of (ε_i, δ_i) releases, valid for adaptively chosen spends).

    Examples
    --------
    >>> from privad.accounting import Ledger
    >>> with Ledger(":memory:") as ledger:
    ...     budget = ledger.set_budget("census", "pure-dp", 1.0)
    >>> budget.total, budget.remaining
    (Fraction(1, 1), Fraction(1, 1))
    """

    scope: str
    notion: str
    total: Fraction
    spent: Fraction
    created_at: datetime
    updated_at: datetime
    delta: Fraction | None = None
    delta_spent: Fraction = Fraction(0)

    @property
    def is_approximate(self) -> bool:
        """Whether this is an (ε, δ) budget."""
        return self.delta is not None

    @property
    def delta_remaining(self) -> Fraction:
        """``delta - delta_spent`` (0 for a pure-ε budget)."""
        return Fraction(0) if self.delta is None else self.delta - self.delta_spent

    @property
    def remaining(self) -> Fraction:
        """``total - spent``, exactly.

        Never negative for spends the ledger accepted (it refuses overspending); negative
        only where migrating a version-1 file found an implied total already above the
        budget (:mod:`privad.accounting.schema`).
        """
        return self.total - self.spent

    @property
    def total_epsilon(self) -> float:
        """``total`` as a float."""
        return float(self.total)

    @property
    def spent_epsilon(self) -> float:
        """``spent`` as a float."""
        return float(self.spent)

    @property
    def remaining_epsilon(self) -> float:
        """``remaining`` as a float."""
        return float(self.remaining)

    def to_dict(self) -> dict[str, Any]:
        """The budget's amounts by name (exact Fractions; ``delta_spent`` None for a pure-ε
        budget), as ``privad budget set --json`` prints them."""
        return {
            "scope": self.scope,
            "notion": self.notion,
            "total": self.total,
            "spent": self.spent,
            "remaining": self.remaining,
            "delta": self.delta,
            "delta_spent": self.delta_spent if self.delta is not None else None,
        }


@dataclass(frozen=True)
class Spend:
    """One charge to the ledger: what was released, under which guarantee, when.

    Examples
    --------
    >>> from privad.accounting import Guarantee, Ledger
    >>> ledger = Ledger(":memory:", default_budget=1.0)   # a budget made on first spend
    >>> spend = ledger.spend(
    ...     "census", Guarantee("pure-dp", 0.5, "add or remove one record"), "noisy count"
    ... )
    >>> ledger.close()
    >>> spend.id, spend.label, spend.epsilon, spend.status
    (1, 'noisy count', 0.5, 'committed')
    """

    id: int
    timestamp: datetime
    scope: str
    label: str
    guarantee: Guarantee
    epsilon: float
    """The ε charged: ``guarantee.epsilon``, or 0.0 for ``"rmp"``."""
    status: str
    """``"committed"``, ``"reserved"`` (counted, awaiting commit) or ``"cancelled"``."""
    metadata: dict[str, Any] = field(default_factory=dict)
    committed_at: datetime | None = None
    tight_epsilon: float | None = None
    """The ε charged to (ε, δ) budgets, at :attr:`delta` (None: the pure ε was charged)."""
    delta: float = 0.0
    """The δ charged to (ε, δ) budgets (0 when :attr:`tight_epsilon` is None)."""
    answers: int | None = None
    """A prepaid block: the answers it prepays; a draw: the answers it used; else None."""
    block_id: int | None = None
    """A draw: the id of the prepaid block that paid for it (it charges nothing itself)."""

    @property
    def is_block(self) -> bool:
        """Whether this spend prepays a block of a stream's answers."""
        return self.answers is not None and self.block_id is None

    @property
    def is_draw(self) -> bool:
        """Whether this spend used answers of a prepaid block (and so charged nothing)."""
        return self.block_id is not None

    @property
    def notion(self) -> str:
        """The guarantee's notion."""
        return self.guarantee.notion

    @property
    def k(self) -> int | None:
        """The guarantee's k (sensitive privacy only)."""
        return self.guarantee.k

    @property
    def epsilon_outlier(self) -> float | None:
        """The guarantee's ε' for outliers (relaxed DP only)."""
        return self.guarantee.epsilon_outlier

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the spend."""
        return {
            "id": self.id,
            "timestamp": self.timestamp.isoformat(),
            "committed_at": self.committed_at.isoformat() if self.committed_at else None,
            "status": self.status,
            "scope": self.scope,
            "label": self.label,
            "notion": self.notion,
            "epsilon": self.epsilon,
            "k": self.k,
            "epsilon_outlier": self.epsilon_outlier,
            "guarantee": self.guarantee.to_dict(),
            "metadata": self.metadata,
            "tight_epsilon": self.tight_epsilon,
            "delta": self.delta,
            "answers": self.answers,
            "block_id": self.block_id,
        }


@dataclass(frozen=True)
class Event:
    """One entry of the audit trail: a budget set, created by default, reset or cancelled."""

    id: int
    timestamp: datetime
    action: str
    scope: str | None
    notion: str | None
    detail: str
