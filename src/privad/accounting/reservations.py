"""Two-phase spends: a reservation committed (perhaps at less than it held) or cancelled.

:meth:`~privad.accounting.ledger.Ledger.reserve` charges at once and hands back a
:class:`Reservation`; the functions here finish it inside the ledger's write transaction.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from types import TracebackType
from typing import Literal, Protocol

from privad.accounting.charges import Unbudgeted, give_back
from privad.accounting.exact import epsilon_text, fmt, to_fraction
from privad.accounting.guarantee import Guarantee
from privad.accounting.records import CANCELLED, COMMITTED, RESERVED, Spend
from privad.accounting.rows import add_event, spend_row, utc_now
from privad.accounting.streams import per_answer, stream_key
from privad.errors import LedgerError


def existing_spend(conn: sqlite3.Connection, spend_id: int, ledger: str) -> Spend:
    """The spend with id ``spend_id``; :class:`LedgerError` naming ``ledger`` if none."""
    spend = spend_row(conn, spend_id)
    if spend is None:
        raise LedgerError(f"spend #{spend_id} is not in ledger {ledger} (was the ledger reset?)")
    return spend


def commit_reserved(
    conn: sqlite3.Connection,
    spend_id: int,
    actual: Guarantee | None,
    rule: Unbudgeted,
    ledger: str,
) -> Spend:
    """Make reservation ``spend_id`` final, at ``actual`` when given (see
    :meth:`~privad.accounting.ledger.Ledger.commit`); a committed spend is returned as is."""
    spend = existing_spend(conn, spend_id, ledger)
    if spend.status == CANCELLED:
        raise LedgerError(f"spend #{spend_id} was cancelled and cannot be committed")
    if spend.status == RESERVED:
        now = utc_now()
        if actual is not None:
            _shrink(conn, spend, actual, now, rule, ledger)
        conn.execute(
            "UPDATE spends SET status = ?, committed_at = ? WHERE id = ?",
            (COMMITTED, now.isoformat(), spend_id),
        )
        spend = spend_row(conn, spend_id)  # type: ignore[assignment]
    assert spend is not None
    return spend


def _shrink(
    conn: sqlite3.Connection,
    spend: Spend,
    actual: Guarantee,
    now: datetime,
    rule: Unbudgeted,
    ledger: str,
) -> None:
    """Lower reserved ``spend`` to ``actual`` and give the difference back (partial commit).

    The pure ε shrinks to ``actual``'s: each answer is ε-DP and was covered when it was
    released, so a pure budget is a valid filter for answers that stop early. An (ε, δ)
    charge does not shrink: the reservation's tight ε holds for up to the answers it
    reserved, whatever stopped them, but the tight ε of the answers actually used is a
    bound on a data-dependent number of answers, which is not a guarantee (stopping when
    the answers so far happen to say much beats it), so giving the difference back
    could let the scope overspend. A draw gives its unused answers back to its block.
    """
    reserved = spend.guarantee
    if (actual.notion, actual.k) != (reserved.notion, reserved.k):
        raise LedgerError(
            f"spend #{spend.id} reserved {reserved.summary()}; it can only be committed "
            f"with a guarantee of the same notion and k, got {actual.summary()}"
        )
    used, held = to_fraction(actual.cost), to_fraction(spend.epsilon)
    if used > held:
        raise LedgerError(
            f"spend #{spend.id} reserved ε = {fmt(spend.epsilon)}; it cannot be committed "
            f"at the larger ε = {fmt(actual.cost)} (reserve the worst case up front)"
        )
    answers = spend.answers
    if spend.is_draw:
        one, answers = per_answer(actual)
        if stream_key(one) != stream_key(per_answer(reserved)[0]):
            raise LedgerError(
                f"spend #{spend.id} drew answers of another mechanism than {actual.summary()}"
            )
    conn.execute(
        "UPDATE spends SET epsilon = ?, epsilon_outlier = ?, guarantee = ?, answers = ? "
        "WHERE id = ?",
        (
            epsilon_text(actual.cost) if actual.spends_budget else "0",
            None if actual.epsilon_outlier is None else epsilon_text(actual.epsilon_outlier),
            json.dumps(actual.to_dict(), sort_keys=True),
            answers,
            spend.id,
        ),
    )
    if actual.spends_budget:
        give_back(conn, spend, now, rule, ledger)
    add_event(
        conn,
        now,
        "commit-partial",
        spend.scope,
        spend.notion,
        f"reservation #{spend.id} ({spend.label!r}) committed at ε = {fmt(actual.cost)} "
        f"of the {fmt(spend.epsilon)} reserved",
    )


def cancel_reserved(
    conn: sqlite3.Connection, spend_id: int, rule: Unbudgeted, ledger: str
) -> Spend:
    """Give back the ε of reservation ``spend_id`` (see
    :meth:`~privad.accounting.ledger.Ledger.cancel`); a cancelled spend is returned as is."""
    spend = existing_spend(conn, spend_id, ledger)
    if spend.status == COMMITTED:
        raise LedgerError(
            f"spend #{spend_id} is committed: its result may have been released, so "
            "its ε cannot be given back"
        )
    if spend.status == RESERVED:
        now = utc_now()
        conn.execute("UPDATE spends SET status = ? WHERE id = ?", (CANCELLED, spend_id))
        if spend.guarantee.spends_budget:
            give_back(conn, spend, now, rule, ledger)
        add_event(
            conn,
            now,
            "cancel",
            spend.scope,
            spend.notion,
            f"reservation #{spend_id} ({spend.label!r}, ε = {fmt(spend.epsilon)}) given back",
        )
        spend = spend_row(conn, spend_id)  # type: ignore[assignment]
    assert spend is not None
    return spend


class _Finishes(Protocol):
    """What a reservation needs of its ledger (a :class:`~privad.accounting.Ledger`)."""

    def commit(self, spend_id: int, guarantee: Guarantee | None = None) -> Spend: ...

    def cancel(self, spend_id: int) -> Spend: ...


class Reservation:
    """A charge made by :meth:`Ledger.reserve`, awaiting ``commit()`` or ``cancel()``.

    As a context manager it commits when the block ends normally and, when the block raises,
    cancels (or commits, if reserved with ``on_error="commit"``).

    Examples
    --------
    >>> from privad.accounting import Guarantee, Ledger
    >>> g = Guarantee("pure-dp", 0.5, "add or remove one record")
    >>> with Ledger(":memory:") as ledger:
    ...     _ = ledger.set_budget("census", "pure-dp", 1.0)
    ...     with ledger.reserve("census", g, "noisy count") as reservation:
    ...         held = ledger.remaining("census", "pure-dp")   # counted while reserved
    ...     print(held, reservation.status)
    0.5 committed
    """

    def __init__(
        self, ledger: _Finishes, spend: Spend, *, on_error: Literal["cancel", "commit"] = "cancel"
    ) -> None:
        self.ledger = ledger
        self.spend = spend
        self.on_error = on_error

    @property
    def id(self) -> int:
        """The spend's id in the ledger."""
        return self.spend.id

    @property
    def status(self) -> str:
        """``"reserved"``, ``"committed"`` or ``"cancelled"`` (as last seen by this object)."""
        return self.spend.status

    def commit(self, guarantee: Guarantee | None = None) -> Spend:
        """Make the charge final. Call before releasing anything computed under it.

        ``guarantee``: what the job actually used, if less than reserved (see
        :meth:`Ledger.commit`).
        """
        self.spend = self.ledger.commit(self.spend.id, guarantee)
        return self.spend

    def cancel(self) -> Spend:
        """Give the ε back. Only correct if no result computed under it was released."""
        self.spend = self.ledger.cancel(self.spend.id)
        return self.spend

    def __enter__(self) -> Reservation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.spend.status != RESERVED:
            return
        if exc_type is None or self.on_error == "commit":
            self.commit()
        else:
            self.cancel()

    def __repr__(self) -> str:
        return (
            f"Reservation(#{self.spend.id}, scope={self.spend.scope!r}, "
            f"ε={self.spend.epsilon!r}, {self.spend.status})"
        )
