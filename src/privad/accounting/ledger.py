"""The persistent privacy-budget ledger: check, then spend, atomically.

A :class:`Ledger` keeps, per *scope* (a dataset, a user, a deployment: any name) and per
*notion*, a total ε and the spends charged against it, in an SQLite file (or in memory).

Check-then-spend
    :meth:`Ledger.spend` reads the budget, refuses with
    :class:`~privad.errors.BudgetExceededError` if ``spent + ε > total``, and otherwise records
    the spend, all inside one ``BEGIN IMMEDIATE`` transaction. ``BEGIN IMMEDIATE`` takes
    SQLite's write lock *before* the budget is read, so two processes (or threads) spending
    against one file are serialised: the second one reads the budget only after the first
    one's spend is committed, and neither can overspend. A refused spend writes nothing.
    Waiting for the lock is bounded by ``busy_timeout`` (default 30 s); the file is in WAL
    mode so readers (``privad budget show``) never block a spend.
Notions that imply each other
    A spend of notion N is checked and charged against N's budget *and* the budget of every
    notion N implies (``Notion.implies`` in :mod:`privad.accounting.notions`: an ε-DP release
    is an ε release under ``"sensitive"`` for every k, ``"anomaly-restricted-dp"`` and
    ``"relaxed-dp"`` too), in the same transaction; it is refused if any of them would be
    exceeded, naming that budget. N itself must have a budget (or ``default_budget``); an
    implied notion without a budget is not capped, but its spends are still counted: a
    budget set (or created by ``default_budget``) later starts from the scope's live spends
    under that notion and the notions implying it. Every budget's ``spent`` is that total,
    and cancelling or partially committing a reservation gives the ε back to each of them.
Exactness
    ε are summed as exact fractions of their decimal text (:mod:`privad.accounting.exact`):
    ten spends of 0.1 against a total of 1.0 all pass, and an eleventh is refused.
Missing budgets
    Spending against a (scope, notion) that has no budget raises :class:`NoBudgetError`
    (a :class:`~privad.errors.LedgerError`, deliberately *not* a BudgetExceededError, so that
    a forgotten budget is not mistaken for an exhausted one), unless the ledger was opened
    with ``default_budget=ε``: then the first spend creates the budget with that total, and
    the audit trail records it.
``"rmp"``
    RMP guarantees carry no ε. Their releases are recorded with ε 0, need no budget and
    are never refused.
Two-phase spends
    :meth:`Ledger.reserve` charges the budget at once (status ``reserved``, counted as spent)
    and returns a :class:`Reservation`; ``commit()`` makes it final, ``cancel()`` gives the ε
    back (only correct if no result computed under it has left the process). Used as a
    context manager it commits when the block succeeds and cancels when it raises. A process
    that dies while holding a reservation leaves it counted (the safe side); give it back
    with :meth:`Ledger.cancel` once you know nothing was released.
Streams: prepaid blocks under (ε, δ) budgets
    A service answers a stream of questions with one mechanism (an oracle's noisy group
    answers, a curator's noisy bits), one request at a time. Charged request by request,
    an (ε, δ) budget gains nothing: basic composition across spends adds the per-request
    ε, and the tight bound of one answer is its pure ε. ``spend(..., stream=True)`` (and
    ``reserve``) charge such a request from a *prepaid block* instead: when the scope's
    budgets include an (ε, δ) one and no open block of the same mechanism has room, the
    ledger opens a block of the most answers the budgets admit (found with the coarse
    accountant, charged with the exact one), charged once at its tight ε and δ_i; the
    request, and every later one, is recorded as a *draw* of the answers it uses, which
    charges nothing. Why this is valid: the block is one mechanism chosen before its first
    answer ("at most N answers of M"); whatever is asked of it and whenever the stream
    stops, what it releases is a post-processing of N answers of M, so it is
    (tight(N), δ_i)-DP, and across blocks and other spends basic composition holds for
    adaptively chosen spends. The block's charge never shrinks: how many of its answers
    were used depends on the answers, and charging only those (the tight bound of a
    data-dependent number of answers) is not a valid guarantee. A cancelled draw gives
    its answers back to the block (nothing was released under it). Without an (ε, δ)
    budget, stream requests are ordinary spends. :meth:`Ledger.answers_left` says how many
    more answers of a mechanism a scope admits.
Reset
    :meth:`Ledger.reset` deletes spends and keeps the budgets (their spent goes back to 0)
    unless ``drop_budgets=True``. Every reset is written to the audit trail
    (:meth:`Ledger.events`), which reset does not delete.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from fractions import Fraction
from types import TracebackType
from typing import Any, Literal

from privad.accounting.composition import scaled
from privad.accounting.exact import (
    ZERO,
    epsilon_text,
    fmt,
    fraction_text,
    parse_fraction,
    to_fraction,
)
from privad.accounting.guarantee import Guarantee
from privad.accounting.notions import BUDGETED_NOTIONS, NOTION_NAMES, NOTIONS
from privad.accounting.paths import MEMORY, default_ledger_path
from privad.accounting.records import (
    CANCELLED,
    COMMITTED,
    LIVE_STATUSES,
    RESERVED,
    Budget,
    Event,
    Spend,
)
from privad.accounting.schema import live_delta, live_spent, open_ledger_db, spent_by_notion
from privad.accounting.statement import render_statement, spent_text
from privad.accounting.tight import check_delta, tight_epsilon
from privad.errors import BudgetExceededError, LedgerError, ParameterError
from privad.validation import check_choice, check_epsilon, check_positive


class NoBudgetError(LedgerError, LookupError):
    """No budget is set for a scope and notion, and the ledger has no ``default_budget``."""


def _now() -> datetime:
    return datetime.now(UTC)


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _check_scope(scope: Any) -> str:
    if not isinstance(scope, str) or not scope.strip():
        raise ParameterError(f"scope must be a non-empty string, got {scope!r}")
    return scope.strip()


def _check_label(label: Any) -> str:
    if not isinstance(label, str) or not label.strip():
        raise ParameterError(
            f"label must be a non-empty string saying what was released, got {label!r}"
        )
    return label.strip()


def _check_guarantee(guarantee: Any) -> Guarantee:
    if not isinstance(guarantee, Guarantee):
        raise ParameterError(
            f"guarantee must be a privad.accounting.Guarantee, got {type(guarantee).__name__}"
        )
    return guarantee


def _check_budgeted_notion(notion: Any) -> str:
    notion = check_choice(notion, "notion", NOTION_NAMES)
    if not NOTIONS[notion].has_epsilon:
        allowed = ", ".join(repr(n) for n in BUDGETED_NOTIONS)
        raise ParameterError(
            f"notion {notion!r} carries no ε and never spends, so it has no budget; "
            f"budgets exist for {allowed}"
        )
    return notion


@dataclass(frozen=True)
class _Charge:
    """One budget a spend will be charged to, as checked: the row and its new spent."""

    budget: Budget
    is_new: bool
    """The budget does not exist yet: ``default_budget`` creates it with this spend."""
    new_spent: Fraction


@dataclass(frozen=True)
class _Plan:
    """A checked spend: the budgets it is charged to, and its (ε, δ) for (ε, δ) budgets."""

    charges: list[_Charge]
    tight: Fraction | None
    """The tight ε charged to (ε, δ) budgets (None: none is charged, or no gain)."""
    delta: Fraction


def _float_at_most(value: Fraction) -> float:
    """The largest float whose decimal text is at most ``value``."""
    x = float(value)
    while to_fraction(x) > value:
        x = math.nextafter(x, 0.0)
    return x


def _charged_notions(notion: str) -> tuple[str, ...]:
    """``notion`` and every notion it implies: the budgets a spend of it counts against."""
    return (notion, *NOTIONS[notion].implies)


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def _metadata_json(metadata: Mapping[str, Any] | None) -> str:
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping):
        raise ParameterError(f"metadata must be a mapping (dict) or None, got {metadata!r}")
    try:
        return json.dumps(dict(metadata), sort_keys=True, allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"metadata must be JSON-serialisable: {exc}") from None


_BUDGET_COLUMNS = "scope, notion, total, spent, created_at, updated_at, delta, delta_spent"


def _budget_from_row(row: sqlite3.Row | tuple) -> Budget:
    scope, notion, total, spent, created_at, updated_at, delta, delta_spent = row
    return Budget(
        scope=scope,
        notion=notion,
        total=parse_fraction(total, "budget total"),
        spent=parse_fraction(spent, "spent total"),
        created_at=_time(created_at),  # type: ignore[arg-type]
        updated_at=_time(updated_at),  # type: ignore[arg-type]
        delta=None if delta is None else parse_fraction(delta, "budget δ"),
        delta_spent=parse_fraction(delta_spent, "spent δ"),
    )


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
        timestamp=_time(created_at),  # type: ignore[arg-type]
        scope=scope,
        label=label,
        guarantee=g,
        epsilon=float(parse_fraction(epsilon, "spend ε")),
        status=status,
        metadata=meta,
        committed_at=_time(committed_at),
        tight_epsilon=None if tight is None else float(parse_fraction(tight, "spend ε")),
        delta=float(parse_fraction(delta, "spend δ")),
        answers=answers,
        block_id=block_id,
    )


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


def _stream_key(one: Guarantee) -> tuple:
    """What makes two answers the same mechanism for a prepaid block."""
    return (one.notion, one.k, one.neighbouring, one.accounting_components[0].key)


_LIVE = f"status IN ({','.join(repr(s) for s in LIVE_STATUSES)})"


class Ledger:
    """A persistent privacy-budget ledger (see the module docstring for the design).

    Parameters
    ----------
    path:
        ``":memory:"`` for a private in-memory ledger, or a file path. ``None`` (default)
        means :func:`~privad.accounting.paths.default_ledger_path` (``$PRIVAD_LEDGER`` or
        ``~/.privad/ledger.sqlite``).
    create:
        Create the file (and its parent directories) if it does not exist. With
        ``create=False`` a missing file is a :class:`~privad.errors.LedgerError`.
    default_budget:
        ``None`` (default): spending against a scope and notion without a budget raises
        :class:`NoBudgetError`. A number ε > 0: such a spend first creates the budget with
        total ε.
    busy_timeout:
        Seconds to wait for another process's transaction before giving up with a
        :class:`~privad.errors.LedgerError` (> 0, default 30).
    unbudgeted:
        What a spend against a scope and notion without a budget does: ``"refuse"``
        (default, :class:`NoBudgetError`) or ``"record"``: it is recorded with its ε and
        nothing caps it (an estimator's own ledger, which accounts for every release even
        when the user set no budget). Budgets that are set are enforced either way.

    A ledger is safe to share between threads, and any number of processes may open the
    same file. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        default_budget: float | None = None,
        busy_timeout: float = 30.0,
        unbudgeted: Literal["refuse", "record"] = "refuse",
    ) -> None:
        self.unbudgeted = check_choice(unbudgeted, "unbudgeted", ("refuse", "record"))
        if self.unbudgeted == "record" and default_budget is not None:
            raise ParameterError("unbudgeted='record' and default_budget exclude each other")
        self.default_budget: float | None = (
            None if default_budget is None else check_epsilon(default_budget, "default_budget")
        )
        busy_timeout = check_positive(busy_timeout, "busy_timeout")
        if path is None:
            path = default_ledger_path()
        self._lock = threading.RLock()
        self._conn, self._name = open_ledger_db(path, create=create, busy_timeout=busy_timeout)
        self._busy_timeout = busy_timeout
        self._closed = False
        self._block_sizes: dict[tuple, int] = {}  # (state of the budgets, mechanism) -> N

    # -- life cycle --------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        """Pickling (an estimator's own ``ledger_`` travels with it): an in-memory ledger
        is copied whole (SQLite's serialisation of the database), a file ledger by path."""
        with self._lock:
            if self._closed:
                raise LedgerError(f"ledger {self._name} is closed and cannot be pickled")
            image = self._conn.serialize() if self._name == MEMORY else None
        return {
            "path": self._name,
            "image": image,
            "default_budget": self.default_budget,
            "busy_timeout": self._busy_timeout,
            "unbudgeted": self.unbudgeted,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["path"],
            create=False,
            default_budget=state["default_budget"],
            busy_timeout=state["busy_timeout"],
            unbudgeted=state["unbudgeted"],
        )
        if state["image"] is not None:
            self._conn.deserialize(state["image"])

    @property
    def path(self) -> str:
        """The ledger file (``":memory:"`` for an in-memory ledger)."""
        return self._name

    def close(self) -> None:
        """Close the database connection (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " (closed)" if self._closed else ""
        return f"Ledger({self._name!r}){state}"

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[sqlite3.Connection]:
        """One SQLite transaction; ``write`` takes the write lock up front (BEGIN IMMEDIATE)."""
        with self._lock:
            if self._closed:
                raise LedgerError(f"ledger {self._name} is closed")
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    raise LedgerError(
                        f"ledger {self._name} is busy: another process held it for more "
                        f"than {self._busy_timeout:g} s"
                    ) from None
                raise LedgerError(f"ledger {self._name}: {exc}") from None
            try:
                yield conn
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise LedgerError(f"ledger {self._name}: {exc}") from None
            except BaseException:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise LedgerError(f"ledger {self._name}: commit failed: {exc}") from None

    def _event(
        self,
        conn: sqlite3.Connection,
        when: datetime,
        action: str,
        scope: str | None,
        notion: str | None,
        detail: str,
    ) -> None:
        conn.execute(
            "INSERT INTO events (created_at, action, scope, notion, detail) VALUES (?,?,?,?,?)",
            (when.isoformat(), action, scope, notion, detail),
        )

    @staticmethod
    def _budget_row(conn: sqlite3.Connection, scope: str, notion: str) -> Budget | None:
        row = conn.execute(
            f"SELECT {_BUDGET_COLUMNS} FROM budgets WHERE scope = ? AND notion = ?",
            (scope, notion),
        ).fetchone()
        return None if row is None else _budget_from_row(row)

    def _no_budget(self, scope: str, notion: str) -> NoBudgetError:
        return NoBudgetError(
            f"no budget is set for scope {scope!r} and notion {notion!r}; set one with "
            f"Ledger.set_budget({scope!r}, {notion!r}, epsilon) or "
            f"'privad budget set {scope} --epsilon E --notion {notion}'"
        )

    # -- budgets ------------------------------------------------------------------------------

    def set_budget(
        self, scope: str, notion: str, total_epsilon: float, *, delta: float | None = None
    ) -> Budget:
        """Set (create or change) the total ε (and δ) of ``scope`` under ``notion``.

        ``notion`` is one of the notions with an ε (not ``"rmp"``); ``total_epsilon`` is a
        finite number > 0 and may not be below what the scope has already spent under that
        notion (reset it first), counting the spends of the notions that imply it: a new
        budget starts from that total. ``delta`` (in (0, 1)) makes it an (ε, δ) budget:
        spends are then charged their tight ε (:mod:`privad.accounting.tight`), and their δ
        add up to at most ``delta``; ``None`` (default) keeps a pure-ε budget. Returns the
        budget as stored.
        """
        scope = _check_scope(scope)
        notion = _check_budgeted_notion(notion)
        total_epsilon = check_epsilon(total_epsilon, "total_epsilon")
        delta_text = None if delta is None else epsilon_text(check_delta(delta))
        total = to_fraction(total_epsilon)
        now = _now()
        with self._transaction(write=True) as conn:
            tight = delta is not None
            parts = spent_by_notion(conn, scope, notion, tight=tight)
            spent = sum(parts.values(), ZERO)
            if total < spent:
                raise ParameterError(
                    f"total_epsilon {total_epsilon!r} is below what scope {scope!r} has "
                    f"already spent under {notion!r} ({spent_text(notion, parts)}); reset the "
                    "scope first to start again"
                )
            used = live_delta(conn, scope, notion) if tight else ZERO
            if tight and to_fraction(delta) < used:  # type: ignore[arg-type]
                raise ParameterError(
                    f"delta {delta!r} is below the δ scope {scope!r} has already spent under "
                    f"{notion!r} ({fmt(used)}); reset the scope first to start again"
                )
            old = self._budget_row(conn, scope, notion)
            kind = "" if delta is None else f", δ {delta_text}"
            if old is None:
                conn.execute(
                    f"INSERT INTO budgets ({_BUDGET_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        scope,
                        notion,
                        epsilon_text(total_epsilon),
                        fraction_text(spent),
                        now.isoformat(),
                        now.isoformat(),
                        delta_text,
                        fraction_text(used),
                    ),
                )
                detail = f"total {fmt(total)}{kind}"
            else:
                conn.execute(
                    "UPDATE budgets SET total = ?, spent = ?, delta = ?, delta_spent = ?, "
                    "updated_at = ? WHERE scope = ? AND notion = ?",
                    (
                        epsilon_text(total_epsilon),
                        fraction_text(spent),
                        delta_text,
                        fraction_text(used),
                        now.isoformat(),
                        scope,
                        notion,
                    ),
                )
                was = "" if old.delta is None else f", δ {fmt(old.delta)}"
                detail = f"total {fmt(total)}{kind} (was {fmt(old.total)}{was})"
            self._event(conn, now, "set-budget", scope, notion, detail)
            budget = self._budget_row(conn, scope, notion)
        assert budget is not None
        return budget

    def budget(self, scope: str, notion: str) -> Budget:
        """The budget of ``scope`` under ``notion``; :class:`NoBudgetError` if none is set."""
        scope = _check_scope(scope)
        notion = _check_budgeted_notion(notion)
        with self._transaction(write=False) as conn:
            budget = self._budget_row(conn, scope, notion)
        if budget is None:
            raise self._no_budget(scope, notion)
        return budget

    def budgets(self, scope: str | None = None) -> list[Budget]:
        """All budgets (of one scope if given), ordered by scope and notion."""
        scope = None if scope is None else _check_scope(scope)
        with self._transaction(write=False) as conn:
            return self._budgets_in(conn, scope)

    @staticmethod
    def _budgets_in(conn: sqlite3.Connection, scope: str | None) -> list[Budget]:
        sql = f"SELECT {_BUDGET_COLUMNS} FROM budgets"
        args: tuple = ()
        if scope is not None:
            sql += " WHERE scope = ?"
            args = (scope,)
        rows = conn.execute(sql + " ORDER BY scope, notion", args).fetchall()
        return [_budget_from_row(r) for r in rows]

    def spent(self, scope: str, notion: str) -> float:
        """ε spent (committed and reserved) by ``scope`` under ``notion``; 0.0 if nothing.

        The total the ledger enforces: the spends under ``notion`` and under every notion
        that implies it, whether or not ``notion`` has a budget.
        """
        scope = _check_scope(scope)
        notion = check_choice(notion, "notion", NOTION_NAMES)
        if not NOTIONS[notion].has_epsilon:
            return 0.0
        with self._transaction(write=False) as conn:
            budget = self._budget_row(conn, scope, notion)
            spent = live_spent(conn, scope, notion) if budget is None else budget.spent
        return float(spent)

    def remaining(self, scope: str, notion: str) -> float:
        """ε left to ``scope`` under ``notion``: its total less :meth:`spent`.

        With no budget set, what the default budget would leave once created (it starts
        from the spends of the notions implying ``notion``; never below 0). Raises
        :class:`NoBudgetError` if no budget is set and there is no default.
        """
        scope = _check_scope(scope)
        notion = _check_budgeted_notion(notion)
        with self._transaction(write=False) as conn:
            budget = self._budget_row(conn, scope, notion)
            if budget is None and self.default_budget is not None:
                spent = live_spent(conn, scope, notion)
                return float(max(ZERO, to_fraction(self.default_budget) - spent))
        if budget is None:
            raise self._no_budget(scope, notion)
        return float(budget.remaining)

    # -- spending -----------------------------------------------------------------------------

    def _charge_plan(
        self,
        conn: sqlite3.Connection,
        scope: str,
        guarantee: Guarantee,
        label: str | None,
        delta: float | None = None,
        coarse: bool = False,
    ) -> _Plan:
        """Check a charge inside a transaction: one :class:`_Charge` per budget it counts
        against (its notion's first, then those of the implied notions that have one), and
        the tight (ε, δ) charged to the (ε, δ) budgets among them (``coarse``: with the
        coarse accountant, for searches only).
        Raises NoBudgetError or BudgetExceededError. Writes nothing."""
        if not guarantee.spends_budget:
            return _Plan([], None, ZERO)
        notion = guarantee.notion
        cost = to_fraction(guarantee.cost)
        budgets: list[tuple[Budget, bool]] = []
        for name in _charged_notions(notion):
            budget = self._budget_row(conn, scope, name)
            is_new = budget is None
            if budget is None:
                if name != notion or self.unbudgeted == "record":
                    continue  # counted, not capped (an implied notion, or a record-only ledger)
                if self.default_budget is None:
                    raise self._no_budget(scope, notion)
                now = _now()
                budget = Budget(
                    scope,
                    notion,
                    to_fraction(self.default_budget),
                    live_spent(conn, scope, notion),
                    now,
                    now,
                )
            budgets.append((budget, is_new))
        tight, spend_delta = self._tight_charge(
            guarantee, [b for b, _ in budgets if b.is_approximate], delta, coarse
        )
        plan = []
        for budget, is_new in budgets:
            step = cost if tight is None or not budget.is_approximate else tight
            new_spent = budget.spent + step
            if new_spent > budget.total or (
                budget.is_approximate and budget.delta_spent + spend_delta > budget.delta  # type: ignore[operator]
            ):
                raise self._refusal(conn, budget, guarantee, label, step, spend_delta)
            plan.append(_Charge(budget, is_new, new_spent))
        return _Plan(plan, tight, spend_delta)

    @staticmethod
    def _tight_charge(
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
            d = check_delta(delta)
        tight = tight_epsilon(guarantee.accounting_components, d, coarse=coarse)
        if tight >= to_fraction(guarantee.cost):
            return None, ZERO
        return tight, to_fraction(d)

    @staticmethod
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

    def check(
        self,
        scope: str,
        guarantee: Guarantee,
        *,
        delta: float | None = None,
        stream: bool = False,
    ) -> Budget | None:
        """Raise as :meth:`spend` would, without spending anything.

        Returns the budget of the guarantee's notion the spend would be charged to (``None``
        for ``"rmp"``); the budgets of the notions it implies are checked too. The answer
        can be stale by the time you spend: only :meth:`spend`/:meth:`reserve` are atomic.
        """
        scope = _check_scope(scope)
        guarantee = _check_guarantee(guarantee)
        with self._transaction(write=False) as conn:
            if stream and self._stream_draw(conn, scope, guarantee, None, delta, None):
                budget = self._budget_row(conn, scope, guarantee.notion)
                return budget
            plan = self._charge_plan(conn, scope, guarantee, None, delta)
        return plan.charges[0].budget if plan.charges else None

    # -- streams: prepaid blocks ------------------------------------------------------------

    def _open_blocks(
        self, conn: sqlite3.Connection, scope: str, one: Guarantee
    ) -> list[tuple[int, int]]:
        """(id, answers left) of the live prepaid blocks of ``scope`` for the mechanism of
        ``one`` that have room, oldest first."""
        rows = conn.execute(
            f"SELECT id, guarantee, answers FROM spends WHERE scope = ? AND notion = ? AND "
            f"block_id IS NULL AND answers IS NOT NULL AND {_LIVE} ORDER BY id",
            (scope, one.notion),
        ).fetchall()
        key, out = _stream_key(one), []
        for block_id, text, size in rows:
            if _stream_key(per_answer(Guarantee.from_dict(json.loads(text)))[0]) != key:
                continue
            used = conn.execute(
                f"SELECT COALESCE(SUM(answers), 0) FROM spends WHERE block_id = ? AND {_LIVE}",
                (block_id,),
            ).fetchone()[0]
            if size > used:
                out.append((int(block_id), int(size - used)))
        return out

    def _stream_budgets(self, conn: sqlite3.Connection, scope: str, notion: str) -> list:
        return [self._budget_row(conn, scope, name) for name in _charged_notions(notion)]

    def _block_size(
        self,
        conn: sqlite3.Connection,
        scope: str,
        one: Guarantee,
        n: int,
        label: str | None,
        delta: float | None,
    ) -> tuple[int, _Plan]:
        """The most answers of ``one`` (at least ``n``) the budgets admit, and the plan that
        charges them. Raises the refusal when not even ``n`` fit.

        Searched with the coarse accountant (doubling from the linear count, then
        bisection), charged with the exact one (never more, so the count found fits;
        checked). Cached per state of the budgets."""
        first = self._charge_plan(conn, scope, scaled(one, n), label, delta)
        state = tuple(
            None if b is None else (b.total, b.spent, b.delta, b.delta_spent)
            for b in self._stream_budgets(conn, scope, one.notion)
        )
        key = (scope, _stream_key(one), state, delta, n, self.default_budget)
        size = self._block_sizes.get(key)
        if size is None:
            size = self._search_size(conn, scope, one, n, delta, state)
            if len(self._block_sizes) > 256:
                self._block_sizes.clear()
            self._block_sizes[key] = size
        while size > n:
            try:
                return size, self._charge_plan(conn, scope, scaled(one, size), label, delta)
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
                self._charge_plan(conn, scope, scaled(one, k), None, delta, coarse=True)
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

    def _stream_draw(
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
        budgets = self._stream_budgets(conn, scope, guarantee.notion)
        if not any(b is not None and b.is_approximate for b in budgets):
            return None
        for block_id, room in self._open_blocks(conn, scope, one):
            if room >= n:
                return block_id, n
        if now is None:  # a check: n answers must fit a new block
            plan = self._charge_plan(conn, scope, scaled(one, n), label, delta)
            return None if plan.tight is None else (0, n)
        size, plan = self._block_size(conn, scope, one, n, label, delta)
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
            self._apply(conn, charge, now)
        return int(cursor.lastrowid), n  # type: ignore[arg-type]

    def answers_left(self, scope: str, guarantee: Guarantee) -> int | None:
        """How many more answers of ``guarantee``'s mechanism (one answer: its single
        component with count 1) ``scope`` admits as stream spends: the room of its open
        prepaid blocks plus the most answers the budgets could still pay for. None when no
        budget caps them (a ledger with ``unbudgeted="record"``). Raises
        :class:`NoBudgetError` as a spend would. May be stale by the time you spend."""
        scope = _check_scope(scope)
        one, _ = per_answer(_check_guarantee(guarantee))
        if not one.spends_budget:
            return None
        with self._transaction(write=False) as conn:
            budgets = self._stream_budgets(conn, scope, one.notion)
            if budgets[0] is None and self.default_budget is None:
                if self.unbudgeted == "refuse":
                    raise self._no_budget(scope, one.notion)
                if all(b is None for b in budgets):
                    return None
            approximate = any(b is not None and b.is_approximate for b in budgets)
            room = sum(r for _, r in self._open_blocks(conn, scope, one)) if approximate else 0
            try:
                more, _ = self._block_size(conn, scope, one, 1, None, None)
            except BudgetExceededError:
                more = 0
        return room + more

    def _charge(
        self,
        scope: str,
        guarantee: Guarantee,
        label: str,
        metadata: Mapping[str, Any] | None,
        status: str,
        delta: float | None = None,
        stream: bool = False,
    ) -> Spend:
        scope = _check_scope(scope)
        guarantee = _check_guarantee(guarantee)
        label = _check_label(label)
        meta_json = _metadata_json(metadata)
        guarantee_json = json.dumps(guarantee.to_dict(), sort_keys=True)
        cost_text = epsilon_text(guarantee.cost) if guarantee.spends_budget else "0"
        eps_out = guarantee.epsilon_outlier
        with self._transaction(write=True) as conn:
            now = _now()
            draw = self._stream_draw(conn, scope, guarantee, label, delta, now) if stream else None
            plan = (
                _Plan([], None, ZERO)
                if draw
                else self._charge_plan(conn, scope, guarantee, label, delta)
            )
            block_id, answers = draw or (None, None)
            tight_text = None if plan.tight is None else fraction_text(plan.tight)
            cursor = conn.execute(
                "INSERT INTO spends (created_at, committed_at, status, scope, notion, label, "
                "epsilon, k, epsilon_outlier, guarantee, metadata, tight_epsilon, delta, "
                "answers, block_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    now.isoformat(),
                    now.isoformat() if status == COMMITTED else None,
                    status,
                    scope,
                    guarantee.notion,
                    label,
                    cost_text,
                    guarantee.k,
                    None if eps_out is None else epsilon_text(eps_out),
                    guarantee_json,
                    meta_json,
                    tight_text,
                    fraction_text(plan.delta),
                    answers,
                    block_id,
                ),
            )
            spend_id = cursor.lastrowid
            for charge in plan.charges:
                self._apply(conn, charge, now)
        return Spend(
            id=int(spend_id),  # type: ignore[arg-type]
            timestamp=now,
            scope=scope,
            label=label,
            guarantee=guarantee,
            epsilon=guarantee.cost,
            status=status,
            metadata=json.loads(meta_json),
            committed_at=now if status == COMMITTED else None,
            tight_epsilon=None if plan.tight is None else float(plan.tight),
            delta=float(plan.delta),
            answers=answers,
            block_id=block_id,
        )

    def _apply(self, conn: sqlite3.Connection, charge: _Charge, now: datetime) -> None:
        """Write one checked charge: create the default budget or raise its spent."""
        budget = charge.budget
        if charge.is_new:
            conn.execute(
                "INSERT INTO budgets (scope, notion, total, spent, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    budget.scope,
                    budget.notion,
                    epsilon_text(self.default_budget),  # type: ignore[arg-type]
                    fraction_text(charge.new_spent),
                    now.isoformat(),
                    now.isoformat(),
                ),
            )
            self._event(
                conn,
                now,
                "default-budget",
                budget.scope,
                budget.notion,
                f"total {fmt(budget.total)} (default_budget, created by a spend)",
            )
        else:
            self._refresh(conn, budget, now)

    @staticmethod
    def _refresh(conn: sqlite3.Connection, budget: Budget, now: datetime) -> None:
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

    def _give_back(self, conn: sqlite3.Connection, spend: Spend, now: datetime) -> None:
        """Recompute every budget ``spend`` was charged to, after its row changed."""
        for name in _charged_notions(spend.notion):
            budget = self._budget_row(conn, spend.scope, name)
            if budget is None:
                if name == spend.notion and self.unbudgeted == "refuse":
                    raise LedgerError(
                        f"ledger {self._name} is inconsistent: spend #{spend.id} has no budget row"
                    )
                continue  # an implied notion that still has no budget
            self._refresh(conn, budget, now)

    def spend(
        self,
        scope: str,
        guarantee: Guarantee,
        label: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        delta: float | None = None,
        stream: bool = False,
    ) -> Spend:
        """Charge ``guarantee`` to ``scope``'s budget for its notion, or refuse.

        ``label`` says what was released (non-empty); ``metadata`` is any JSON-serialisable
        mapping stored with the spend. Raises :class:`~privad.errors.BudgetExceededError`
        if the spend would take the spent ε above the total of its notion's budget or of the
        budget of a notion it implies (the message names that budget and states its total,
        spent, remaining and requested), and :class:`NoBudgetError` if no budget is set (and no
        ``default_budget``); in both cases nothing is written. ``"rmp"`` guarantees are
        recorded with ε 0 and never refused.

        (ε, δ) budgets among those charged are charged the spend's *tight* ε at a δ_i
        (:func:`~privad.accounting.tight.tight_epsilon` of the guarantee's components): at
        ``delta`` if given, otherwise at the least δ those budgets have left (so a lone
        batch uses the whole δ; pass ``delta`` to keep some for later spends). When that
        gains nothing on the pure ε, the pure ε is charged with δ_i = 0. Pure-ε budgets are
        charged the pure ε as always. Spends add up by basic composition, Σ ε_i and Σ δ_i,
        which holds however each spend was chosen (Rogers, Roth, Ullman, Vadhan 2016).

        ``stream=True``: ``guarantee`` is a number of answers of one mechanism (one
        component) in a service's stream; under an (ε, δ) budget it is drawn from a prepaid
        block (see the module docstring) and the returned spend is the draw (``block_id``
        set, nothing charged by it). ``delta`` then applies to a block it opens.
        """
        return self._charge(scope, guarantee, label, metadata, COMMITTED, delta, stream)

    def reserve(
        self,
        scope: str,
        guarantee: Guarantee,
        label: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        on_error: Literal["cancel", "commit"] = "cancel",
        delta: float | None = None,
        stream: bool = False,
    ) -> Reservation:
        """Phase one of a two-phase spend: charge now (or refuse, as :meth:`spend` does).

        The ε counts as spent from this moment, so concurrent jobs cannot overspend. Finish
        with ``commit()`` once the result is about to be released, or ``cancel()`` if the job
        failed before anything left the process. As a context manager::

            with ledger.reserve("census", g, "anomaly scores") as r:
                scores = compute()          # may raise: then the ε is given back
            publish(scores)                 # the spend is committed before this line

        ``on_error="commit"`` keeps the charge when the block raises (for jobs that may have
        released partial results). ``delta`` and ``stream``: as for :meth:`spend` (a
        reserved draw holds its answers of the block; cancelling gives them back).
        """
        on_error = check_choice(on_error, "on_error", ("cancel", "commit"))  # type: ignore[assignment]
        spend = self._charge(scope, guarantee, label, metadata, RESERVED, delta, stream)
        return Reservation(self, spend, on_error=on_error)

    def _spend_row(self, conn: sqlite3.Connection, spend_id: int) -> Spend | None:
        row = conn.execute(
            f"SELECT {_SPEND_COLUMNS} FROM spends WHERE id = ?", (spend_id,)
        ).fetchone()
        return None if row is None else _spend_from_row(row)

    def get_spend(self, spend_id: int) -> Spend:
        """The spend with id ``spend_id`` (any status); :class:`LedgerError` if there is none."""
        with self._transaction(write=False) as conn:
            return self._existing_spend(conn, int(spend_id))

    def _existing_spend(self, conn: sqlite3.Connection, spend_id: int) -> Spend:
        spend = self._spend_row(conn, spend_id)
        if spend is None:
            raise LedgerError(
                f"spend #{spend_id} is not in ledger {self._name} (was the ledger reset?)"
            )
        return spend

    def commit(self, spend_id: int, guarantee: Guarantee | None = None) -> Spend:
        """Make reservation ``spend_id`` final (idempotent for a committed spend).

        ``guarantee`` (optional) is what the job actually used, when it stopped before the
        worst case it reserved (a search that halted early): same notion (and k), ε at most
        the reserved ε. The spend is then committed at that ε and the difference goes back
        to every budget it was charged to, in the same transaction (for the budgets charged
        its pure ε; an (ε, δ) charge stays the reserved one, see :meth:`_shrink`; a draw
        gives its unused answers back to its block). Without it the reserved ε is committed.
        """
        actual = None if guarantee is None else _check_guarantee(guarantee)
        with self._transaction(write=True) as conn:
            spend = self._existing_spend(conn, spend_id)
            if spend.status == CANCELLED:
                raise LedgerError(f"spend #{spend_id} was cancelled and cannot be committed")
            if spend.status == RESERVED:
                now = _now()
                if actual is not None:
                    self._shrink(conn, spend, actual, now)
                conn.execute(
                    "UPDATE spends SET status = ?, committed_at = ? WHERE id = ?",
                    (COMMITTED, now.isoformat(), spend_id),
                )
                spend = self._spend_row(conn, spend_id)
        assert spend is not None
        return spend

    def _shrink(
        self, conn: sqlite3.Connection, spend: Spend, actual: Guarantee, now: datetime
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
            if _stream_key(one) != _stream_key(per_answer(reserved)[0]):
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
            self._give_back(conn, spend, now)
        self._event(
            conn,
            now,
            "commit-partial",
            spend.scope,
            spend.notion,
            f"reservation #{spend.id} ({spend.label!r}) committed at ε = {fmt(actual.cost)} "
            f"of the {fmt(spend.epsilon)} reserved",
        )

    def cancel(self, spend_id: int) -> Spend:
        """Give back the ε of reservation ``spend_id`` (idempotent for a cancelled one).

        Only a ``reserved`` spend can be cancelled; a committed spend may have released its
        result and stays spent. The cancelled row is kept, marked ``cancelled``.
        """
        with self._transaction(write=True) as conn:
            spend = self._existing_spend(conn, spend_id)
            if spend.status == COMMITTED:
                raise LedgerError(
                    f"spend #{spend_id} is committed: its result may have been released, so "
                    "its ε cannot be given back"
                )
            if spend.status == RESERVED:
                now = _now()
                conn.execute("UPDATE spends SET status = ? WHERE id = ?", (CANCELLED, spend_id))
                if spend.guarantee.spends_budget:
                    self._give_back(conn, spend, now)
                self._event(
                    conn,
                    now,
                    "cancel",
                    spend.scope,
                    spend.notion,
                    f"reservation #{spend_id} ({spend.label!r}, ε = {fmt(spend.epsilon)}) "
                    "given back",
                )
                spend = self._spend_row(conn, spend_id)
        assert spend is not None
        return spend

    # -- reading ------------------------------------------------------------------------------

    def history(
        self,
        scope: str | None = None,
        *,
        notion: str | None = None,
        include_cancelled: bool = True,
    ) -> list[Spend]:
        """The spends, oldest first, optionally of one scope and/or notion."""
        scope = None if scope is None else _check_scope(scope)
        notion = None if notion is None else check_choice(notion, "notion", NOTION_NAMES)
        with self._transaction(write=False) as conn:
            return self._history_in(conn, scope, notion, include_cancelled)

    @staticmethod
    def _history_in(
        conn: sqlite3.Connection, scope: str | None, notion: str | None, include_cancelled: bool
    ) -> list[Spend]:
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
        rows = conn.execute(
            f"SELECT {_SPEND_COLUMNS} FROM spends{where} ORDER BY id", args
        ).fetchall()
        return [_spend_from_row(r) for r in rows]

    def events(self, scope: str | None = None) -> list[Event]:
        """The audit trail (budget set or created, resets, cancellations), oldest first."""
        sql = "SELECT id, created_at, action, scope, notion, detail FROM events"
        args: tuple = ()
        if scope is not None:
            sql += " WHERE scope = ? OR scope IS NULL"
            args = (_check_scope(scope),)
        with self._transaction(write=False) as conn:
            rows = conn.execute(sql + " ORDER BY id", args).fetchall()
        return [Event(r[0], _time(r[1]), r[2], r[3], r[4], r[5]) for r in rows]  # type: ignore[arg-type]

    def statement(self, scope: str | None = None) -> str:
        """A readable multi-line account of the budgets and what was spent on what."""
        scope = None if scope is None else _check_scope(scope)
        with self._transaction(write=False) as conn:  # one snapshot for both tables
            budgets = self._budgets_in(conn, scope)
            spends = self._history_in(conn, scope, None, False)
        return render_statement(self._name, budgets, spends, _now())

    # -- maintenance --------------------------------------------------------------------------

    def reset(self, scope: str | None = None, *, drop_budgets: bool = False) -> int:
        """Delete the spends of ``scope`` (of every scope if ``None``); return how many.

        Budgets are kept, with nothing spent, unless ``drop_budgets=True``. The reset is
        recorded in the audit trail, which is never deleted. Forgetting spends forgets privacy
        loss that really happened: reset only when the data behind the scope is replaced.
        """
        where, args = "", ()
        if scope is not None:
            scope = _check_scope(scope)
            where, args = " WHERE scope = ?", (scope,)
        with self._transaction(write=True) as conn:
            now = _now()
            deleted = conn.execute(f"DELETE FROM spends{where}", args).rowcount
            if drop_budgets:
                dropped = conn.execute(f"DELETE FROM budgets{where}", args).rowcount
                detail = f"{deleted} spend(s) deleted, {dropped} budget(s) dropped"
            else:
                conn.execute(
                    f"UPDATE budgets SET spent = '0', updated_at = ?{where}",
                    (now.isoformat(), *args),
                )
                detail = f"{deleted} spend(s) deleted, budgets kept"
            self._event(conn, now, "reset", scope, None, detail)
        return int(deleted)

    def verify(self) -> None:
        """Recompute every budget's spent ε from the spends; raise LedgerError on a mismatch.

        A budget's spent must be the sum of the live spends of its scope under its notion
        and under the notions that imply it; every live spend of a notion with an ε must
        have a budget of its own notion; no budget may be spent beyond its total; the live
        draws of a prepaid block use at most the answers it prepaid.
        """
        problems = []
        with self._transaction(write=False) as conn:
            budgets = self._budgets_in(conn, None)
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
                "SELECT id, answers, status FROM spends WHERE block_id IS NULL AND answers IS "
                "NOT NULL"
            ).fetchall()
            drawn = dict(
                conn.execute(
                    f"SELECT block_id, SUM(answers) FROM spends WHERE block_id IS NOT NULL AND "
                    f"{_LIVE} GROUP BY block_id"
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
            elif (
                NOTIONS[notion].has_epsilon
                and (scope, notion) not in sums
                and self.unbudgeted == "refuse"
            ):
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
        if problems:
            raise LedgerError(f"ledger {self._name} is inconsistent: " + "; ".join(problems))


class Reservation:
    """A charge made by :meth:`Ledger.reserve`, awaiting ``commit()`` or ``cancel()``.

    As a context manager it commits when the block ends normally and, when the block raises,
    cancels (or commits, if reserved with ``on_error="commit"``).
    """

    def __init__(
        self, ledger: Ledger, spend: Spend, *, on_error: Literal["cancel", "commit"] = "cancel"
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
