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
    ``spend(..., stream=True)`` charges a service's request (answers of one mechanism)
    from a prepaid block of the most answers the (ε, δ) budgets admit, charged once at its
    tight ε; the request is a draw from it that charges nothing
    (:mod:`privad.accounting.streams` says why this is valid). :meth:`Ledger.answers_left`
    says how many more answers of a mechanism a scope admits.
Reset
    :meth:`Ledger.reset` deletes spends and keeps the budgets (their spent goes back to 0)
    unless ``drop_budgets=True``. Every reset is written to the audit trail
    (:meth:`Ledger.events`), which reset does not delete.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any, Literal

from privad.accounting.charges import (
    NO_CHARGE,
    Unbudgeted,
    apply_charge,
    no_budget,
    plan_charge,
)
from privad.accounting.exact import ZERO, epsilon_text, fmt, fraction_text, to_fraction
from privad.accounting.guarantee import Guarantee
from privad.accounting.notions import BUDGETED_NOTIONS, NOTION_NAMES, NOTIONS
from privad.accounting.paths import MEMORY, default_ledger_path
from privad.accounting.records import COMMITTED, RESERVED, Budget, Event, Spend
from privad.accounting.reservations import (
    Reservation,
    cancel_reserved,
    commit_reserved,
    existing_spend,
)
from privad.accounting.rows import (
    BUDGET_COLUMNS,
    add_event,
    budget_row,
    budgets_in,
    events_in,
    history_in,
    inconsistencies,
    metadata_json,
    utc_now,
)
from privad.accounting.schema import live_delta, live_spent, open_ledger_db, spent_by_notion
from privad.accounting.statement import render_statement, spent_text
from privad.accounting.streams import PrepaidBlocks, per_answer
from privad.accounting.tight import check_delta
from privad.errors import LedgerError, ParameterError
from privad.validation import check_choice, check_epsilon, check_positive


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

    Examples
    --------
    >>> from privad.accounting import Guarantee, Ledger
    >>> g = Guarantee("pure-dp", 0.1, "add or remove one record", description="noisy count")
    >>> with Ledger(":memory:") as ledger:
    ...     _ = ledger.set_budget("census", "pure-dp", 1.0)
    ...     _ = ledger.spend("census", g, "count of anomalies")
    ...     print(ledger.remaining("census", "pure-dp"))
    0.9
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
        unbudgeted = check_choice(unbudgeted, "unbudgeted", ("refuse", "record"))  # type: ignore[assignment]
        if unbudgeted == "record" and default_budget is not None:
            raise ParameterError("unbudgeted='record' and default_budget exclude each other")
        if default_budget is not None:
            default_budget = check_epsilon(default_budget, "default_budget")
        self._rule = Unbudgeted(default_budget, unbudgeted)
        busy_timeout = check_positive(busy_timeout, "busy_timeout")
        if path is None:
            path = default_ledger_path()
        self._lock = threading.RLock()
        self._conn, self._name = open_ledger_db(path, create=create, busy_timeout=busy_timeout)
        self._busy_timeout = busy_timeout
        self._closed = False
        self._blocks = PrepaidBlocks(self._rule)

    @property
    def default_budget(self) -> float | None:
        """The total a spend gives the budget it finds missing (None: it has none)."""
        return self._rule.default_budget

    @property
    def unbudgeted(self) -> str:
        """What a spend without a budget does: ``"refuse"`` or ``"record"``."""
        return self._rule.unbudgeted

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

    def __exit__(self, *exc: object) -> None:
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
        now = utc_now()
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
            old = budget_row(conn, scope, notion)
            kind = "" if delta is None else f", δ {delta_text}"
            if old is None:
                conn.execute(
                    f"INSERT INTO budgets ({BUDGET_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
            add_event(conn, now, "set-budget", scope, notion, detail)
            budget = budget_row(conn, scope, notion)
        assert budget is not None
        return budget

    def budget(self, scope: str, notion: str) -> Budget:
        """The budget of ``scope`` under ``notion``; :class:`NoBudgetError` if none is set."""
        scope = _check_scope(scope)
        notion = _check_budgeted_notion(notion)
        with self._transaction(write=False) as conn:
            budget = budget_row(conn, scope, notion)
        if budget is None:
            raise no_budget(scope, notion)
        return budget

    def budgets(self, scope: str | None = None) -> list[Budget]:
        """All budgets (of one scope if given), ordered by scope and notion."""
        scope = None if scope is None else _check_scope(scope)
        with self._transaction(write=False) as conn:
            return budgets_in(conn, scope)

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
            budget = budget_row(conn, scope, notion)
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
            budget = budget_row(conn, scope, notion)
            if budget is None and self.default_budget is not None:
                spent = live_spent(conn, scope, notion)
                return float(max(ZERO, to_fraction(self.default_budget) - spent))
        if budget is None:
            raise no_budget(scope, notion)
        return float(budget.remaining)

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
            if stream and self._blocks.draw(conn, scope, guarantee, None, delta, None):
                budget = budget_row(conn, scope, guarantee.notion)
                return budget
            plan = plan_charge(conn, scope, guarantee, None, self._rule, delta)
        return plan.charges[0].budget if plan.charges else None

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
            return self._blocks.answers_left(conn, scope, one)

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
        meta_json = metadata_json(metadata)
        guarantee_json = json.dumps(guarantee.to_dict(), sort_keys=True)
        cost_text = epsilon_text(guarantee.cost) if guarantee.spends_budget else "0"
        eps_out = guarantee.epsilon_outlier
        with self._transaction(write=True) as conn:
            now = utc_now()
            draw = self._blocks.draw(conn, scope, guarantee, label, delta, now) if stream else None
            plan = (
                NO_CHARGE if draw else plan_charge(conn, scope, guarantee, label, self._rule, delta)
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
                apply_charge(conn, charge, now, self._rule)
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
        saves less than the ε of one of its answers (a single answer, a handful of them),
        the pure ε is charged with δ_i = 0 and δ is kept for later spends, unless only the
        tight ε fits; ``delta=0.0`` asks for the pure ε with δ_i = 0. Pure-ε budgets are
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

    def get_spend(self, spend_id: int) -> Spend:
        """The spend with id ``spend_id`` (any status); :class:`LedgerError` if there is none."""
        with self._transaction(write=False) as conn:
            return existing_spend(conn, int(spend_id), self._name)

    def commit(self, spend_id: int, guarantee: Guarantee | None = None) -> Spend:
        """Make reservation ``spend_id`` final (idempotent for a committed spend).

        ``guarantee`` (optional) is what the job actually used, when it stopped before the
        worst case it reserved (a search that halted early): same notion (and k), ε at most
        the reserved ε. The spend is then committed at that ε and the difference goes back
        to every budget it was charged to, in the same transaction (for the budgets charged
        its pure ε; an (ε, δ) charge stays the reserved one, see
        :mod:`privad.accounting.reservations`; a draw
        gives its unused answers back to its block). Without it the reserved ε is committed.
        """
        actual = None if guarantee is None else _check_guarantee(guarantee)
        with self._transaction(write=True) as conn:
            return commit_reserved(conn, spend_id, actual, self._rule, self._name)

    def cancel(self, spend_id: int) -> Spend:
        """Give back the ε of reservation ``spend_id`` (idempotent for a cancelled one).

        Only a ``reserved`` spend can be cancelled; a committed spend may have released its
        result and stays spent. The cancelled row is kept, marked ``cancelled``.
        """
        with self._transaction(write=True) as conn:
            return cancel_reserved(conn, spend_id, self._rule, self._name)

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
            return history_in(conn, scope, notion, include_cancelled)

    def events(self, scope: str | None = None) -> list[Event]:
        """The audit trail (budget set or created, resets, cancellations), oldest first."""
        scope = None if scope is None else _check_scope(scope)
        with self._transaction(write=False) as conn:
            return events_in(conn, scope)

    def statement(self, scope: str | None = None) -> str:
        """A readable multi-line account of the budgets and what was spent on what."""
        scope = None if scope is None else _check_scope(scope)
        with self._transaction(write=False) as conn:  # one snapshot for both tables
            budgets = budgets_in(conn, scope)
            spends = history_in(conn, scope, None, False)
        return render_statement(self._name, budgets, spends, utc_now())

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
            now = utc_now()
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
            add_event(conn, now, "reset", scope, None, detail)
        return int(deleted)

    def verify(self) -> None:
        """Recompute every budget's spent ε from the spends; raise LedgerError on a mismatch.

        A budget's spent must be the sum of the live spends of its scope under its notion
        and under the notions that imply it; every live spend of a notion with an ε must
        have a budget of its own notion; no budget may be spent beyond its total; the live
        draws of a prepaid block use at most the answers it prepaid.
        """
        with self._transaction(write=False) as conn:
            problems = inconsistencies(conn, uncapped=self.unbudgeted == "record")
        if problems:
            raise LedgerError(f"ledger {self._name} is inconsistent: " + "; ".join(problems))
