"""The ledger's on-disk format: an SQLite file, opened and checked here.

A privad ledger is an SQLite database whose header carries ``application_id`` =
:data:`APPLICATION_ID` (the bytes ``"priv"``) and ``user_version`` = :data:`SCHEMA_VERSION`.
Any other SQLite file with tables in it, and any non-SQLite file, is refused with a
:class:`~privad.errors.LedgerError` rather than written to.

Tables
------
``budgets(scope, notion, total, spent, created_at, updated_at, delta, delta_spent)``
    One row per (scope, notion). ``total`` is the budget ε as decimal text (``repr`` of the
    float); ``spent`` is the exact sum of the ε of the live spends of that scope under that
    notion *and under every notion that implies it*
    (:func:`~privad.accounting.notions.implying_notions`), as ``"p/q"`` text
    (:func:`live_spent`); for an (ε, δ) budget each spend counts with its tight ε
    (``spends.tight_epsilon`` where set, else its pure ε). ``delta`` is NULL for a pure-ε
    budget, or the δ of an (ε, δ) budget; ``delta_spent`` the exact sum of the spends' δ
    (:func:`live_delta`). ``spent`` and ``delta_spent`` are a cache of ``spends`` that every
    writing transaction keeps up to date in the same transaction; :meth:`Ledger.verify`
    recomputes them.
``spends(id, created_at, committed_at, status, scope, notion, label, epsilon, k,
epsilon_outlier, guarantee, metadata, tight_epsilon, delta)``
    One row per charge. ``status`` is ``committed``, ``reserved`` (phase one of a two-phase
    spend: counted as spent) or ``cancelled`` (a reservation given back: not counted, kept
    for the record). ``epsilon`` is the decimal text charged (``"0"`` for ``rmp``);
    ``guarantee`` and ``metadata`` are JSON. ``tight_epsilon`` and ``delta`` (NULL and
    ``"0"`` for a spend charged only to pure budgets) are the (ε, δ) the spend was charged
    to (ε, δ) budgets (:mod:`privad.accounting.tight`). ``answers`` and ``block_id`` are
    NULL except for a stream's spends (:meth:`Ledger.spend` with ``stream=True``): a
    *prepaid block* has ``answers`` = the number of answers it prepays and ``block_id``
    NULL; a *draw* from it has ``block_id`` = the block's id and ``answers`` = how many of
    them it used. A draw counts toward no budget (its block paid for it), so
    :func:`live_spent` and :func:`live_delta` skip draws; the live draws of a block never
    use more than it prepaid.
``events(id, created_at, action, scope, notion, detail)``
    An audit trail of the actions that change budgets: ``set-budget``, ``default-budget``,
    ``reset``, ``cancel``, ``commit-partial``, ``migrate``.

Versions
--------
1. ``budgets.spent`` counted the spends of its own notion only.
2. ``budgets.spent`` also counts the spends of the notions that imply it (a ``pure-dp``
   spend counts toward the ``sensitive``, ``anomaly-restricted-dp`` and ``relaxed-dp``
   budgets of its scope). A version-1 file is migrated when it is opened: every budget's
   ``spent`` is recomputed, in one transaction, and a ``migrate`` event says which budgets,
   if any, the recomputed totals now exceed (those refuse every further spend).
3. (ε, δ) budgets: ``budgets.delta``, ``budgets.delta_spent``, ``spends.tight_epsilon`` and
   ``spends.delta`` are added (``ALTER TABLE``; existing budgets stay pure-ε, existing spends
   count with their pure ε).
4. Prepaid blocks of stream answers: ``spends.answers`` and ``spends.block_id`` are added
   (``ALTER TABLE``; NULL for every existing spend).
"""

from __future__ import annotations

import os
import sqlite3
import time
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from privad.accounting.exact import ZERO, fmt, fraction_text, parse_fraction
from privad.accounting.notions import implying_notions
from privad.accounting.paths import MEMORY
from privad.accounting.records import LIVE_STATUSES
from privad.errors import LedgerError
from privad.io import private_file, private_folder

APPLICATION_ID = int.from_bytes(b"priv", "big")
"""SQLite ``PRAGMA application_id`` of a privad ledger (0x70726976)."""

SCHEMA_VERSION = 4
"""SQLite ``PRAGMA user_version`` of the current ledger format (see "Versions" above)."""

TABLES = ("budgets", "spends", "events")

_DDL = """
CREATE TABLE IF NOT EXISTS budgets (
    scope       TEXT NOT NULL,
    notion      TEXT NOT NULL,
    total       TEXT NOT NULL,
    spent       TEXT NOT NULL DEFAULT '0',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    delta       TEXT,
    delta_spent TEXT NOT NULL DEFAULT '0',
    PRIMARY KEY (scope, notion)
);
CREATE TABLE IF NOT EXISTS spends (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at      TEXT NOT NULL,
    committed_at    TEXT,
    status          TEXT NOT NULL CHECK (status IN ('committed', 'reserved', 'cancelled')),
    scope           TEXT NOT NULL,
    notion          TEXT NOT NULL,
    label           TEXT NOT NULL,
    epsilon         TEXT NOT NULL,
    k               INTEGER,
    epsilon_outlier TEXT,
    guarantee       TEXT NOT NULL,
    metadata        TEXT NOT NULL,
    tight_epsilon   TEXT,
    delta           TEXT NOT NULL DEFAULT '0',
    answers         INTEGER,
    block_id        INTEGER
);
CREATE INDEX IF NOT EXISTS spends_by_scope ON spends (scope, notion, status);
CREATE INDEX IF NOT EXISTS spends_by_block ON spends (block_id);
CREATE TABLE IF NOT EXISTS events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at  TEXT NOT NULL,
    action      TEXT NOT NULL,
    scope       TEXT,
    notion      TEXT,
    detail      TEXT NOT NULL
);
"""


_V3_COLUMNS = (
    ("budgets", "delta", "TEXT"),
    ("budgets", "delta_spent", "TEXT NOT NULL DEFAULT '0'"),
    ("spends", "tight_epsilon", "TEXT"),
    ("spends", "delta", "TEXT NOT NULL DEFAULT '0'"),
)

_V4_COLUMNS = (("spends", "answers", "INTEGER"), ("spends", "block_id", "INTEGER"))


def spent_by_notion(
    conn: sqlite3.Connection, scope: str, notion: str, *, tight: bool = False
) -> dict[str, Fraction]:
    """The live ε of ``scope`` that counts toward ``notion``, by the notion it was spent under.

    Parameters
    ----------
    conn:
        An open ledger connection (inside the caller's transaction).
    scope, notion:
        The budget's key.
    tight:
        Count each spend with its tight ε (an (ε, δ) budget) instead of its pure ε.

    Returns
    -------
    dict of str to Fraction
        ``notion`` first, then every notion that implies it, each mapped to the exact sum of
        the ε of the scope's live (committed or reserved) spends under it (0 if none).
    """
    parts = dict.fromkeys((notion, *implying_notions(notion)), ZERO)
    column = "COALESCE(tight_epsilon, epsilon)" if tight else "epsilon"
    for name, eps in _live_rows(conn, scope, notion, f"notion, {column}"):
        parts[name] += parse_fraction(eps, "spend ε")
    return parts


def live_spent(
    conn: sqlite3.Connection, scope: str, notion: str, *, tight: bool = False
) -> Fraction:
    """What ``budgets.spent`` holds for ``scope`` and ``notion``, recomputed from ``spends``.

    The sum of :func:`spent_by_notion`: the scope's live ε under ``notion`` and under every
    notion that implies it (tight ε for an (ε, δ) budget).
    """
    return sum(spent_by_notion(conn, scope, notion, tight=tight).values(), ZERO)


def live_delta(conn: sqlite3.Connection, scope: str, notion: str) -> Fraction:
    """What ``budgets.delta_spent`` holds: the δ of the live spends counting toward ``notion``."""
    rows = _live_rows(conn, scope, notion, "delta")
    return sum((parse_fraction(d, "spend δ") for (d,) in rows), ZERO)


def _live_rows(conn: sqlite3.Connection, scope: str, notion: str, columns: str) -> list:
    """``columns`` of the live spends of ``scope`` under ``notion`` and the notions implying it
    (draws from prepaid blocks excluded: their block is the charge)."""
    names = (notion, *implying_notions(notion))
    return conn.execute(
        f"SELECT {columns} FROM spends WHERE scope = ? AND block_id IS NULL "
        f"AND notion IN ({','.join('?' for _ in names)}) "
        f"AND status IN ({','.join('?' for _ in LIVE_STATUSES)})",
        (scope, *names, *LIVE_STATUSES),
    ).fetchall()


def _connect(target: str, *, uri: bool, busy_timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(
        target,
        timeout=busy_timeout,
        isolation_level=None,  # autocommit: every transaction is an explicit BEGIN
        check_same_thread=False,  # the Ledger serialises access with its own lock
        uri=uri,
    )
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    return conn


def _retry_locked(conn: sqlite3.Connection, sql: str, busy_timeout: float) -> list:
    """Run a statement that SQLite may refuse with 'database is locked' without waiting."""
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def open_ledger_db(
    path: str | os.PathLike[str], *, create: bool, busy_timeout: float
) -> tuple[sqlite3.Connection, str]:
    """Open (creating if allowed) and check a ledger database; return it and its display name.

    Raises :class:`~privad.errors.LedgerError` if the file is missing and ``create`` is
    false, is a directory, cannot be read or written, is not an SQLite database, is some
    other application's SQLite database, or has a newer schema than this privad reads.
    """
    if str(path) == MEMORY:
        conn = _connect(MEMORY, uri=False, busy_timeout=busy_timeout)
        _initialise(conn, MEMORY)
        return conn, MEMORY

    p = Path(path).expanduser()
    name = str(p)
    if p.is_dir():
        raise LedgerError(f"ledger path {name} is a directory, not a ledger file")
    if not p.exists():
        if not create:
            raise LedgerError(
                f"no ledger at {name} (create one with 'privad budget set' or Ledger(path))"
            )
        try:  # private: a ledger and its -wal/-shm files are 0600, its new folders 0700
            private_file(private_folder(p.parent) / p.name)
        except OSError as exc:
            raise LedgerError(
                f"cannot create ledger {name} or its folder: {exc.strerror or exc}"
            ) from None
    elif not os.access(p, os.R_OK | os.W_OK):
        raise LedgerError(f"ledger {name} is not readable and writable by this user")

    mode = "rwc" if create else "rw"
    try:
        conn = _connect(f"{p.resolve().as_uri()}?mode={mode}", uri=True, busy_timeout=busy_timeout)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {name}: {exc}") from None
    try:
        _initialise(conn, name)
        # WAL lets readers run beside the one writer; FULL makes each commit durable.
        # (Where a file system cannot hold a WAL, SQLite keeps its rollback journal, which
        # is slower but just as correct: BEGIN IMMEDIATE still serialises the writers.)
        _retry_locked(conn, "PRAGMA journal_mode = WAL", busy_timeout)
        conn.execute("PRAGMA synchronous = FULL")
    except LedgerError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        raise LedgerError(f"cannot open ledger {name}: {_explain(exc)}") from None
    return conn, name


def _explain(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return "the file is not a privad ledger (not an SQLite database)"
    return text


def _header(conn: sqlite3.Connection) -> tuple[int, int, set[str]]:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {
        row[0]
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not row[0].startswith("sqlite_")
    }
    return app_id, version, tables


def _check_header(name: str, app_id: int, version: int, tables: set[str]) -> None:
    if app_id != APPLICATION_ID:
        raise LedgerError(
            f"{name} is an SQLite database but not a privad ledger "
            f"(application_id {app_id:#x}, expected {APPLICATION_ID:#x})"
        )
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"ledger {name} has format version {version}, newer than this privad reads "
            f"({SCHEMA_VERSION}); upgrade privad"
        )
    missing = [t for t in TABLES if t not in tables]
    if missing:
        raise LedgerError(f"ledger {name} is damaged: missing table(s) {', '.join(missing)}")


def _initialise(conn: sqlite3.Connection, name: str) -> None:
    try:
        app_id, version, tables = _header(conn)
    except sqlite3.DatabaseError as exc:
        raise LedgerError(f"cannot open ledger {name}: {_explain(exc)}") from None
    if app_id == APPLICATION_ID:
        _check_header(name, app_id, version, tables)
        if version < SCHEMA_VERSION:
            _migrate(conn)
        return
    # Not (yet) a ledger. Decide under the write lock: a read outside it can catch another
    # process between creating the tables and committing their application_id, and would
    # take a ledger being born for someone else's database. An empty database becomes a
    # ledger, unless another process made it one meanwhile.
    conn.execute("BEGIN IMMEDIATE")
    try:
        app_id, version, tables = _header(conn)
        if app_id == 0 and not tables:
            # One statement at a time: executescript() would COMMIT our transaction.
            for statement in _DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    app_id, version, tables = _header(conn)
    _check_header(name, app_id, version, tables)


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring an older ledger to the current version: add the version-3 and version-4
    columns, and (from version 1) recompute every budget's ``spent``.

    Runs in one ``BEGIN IMMEDIATE`` transaction and re-reads the version inside it, so
    several processes opening one old file migrate it exactly once.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < 4:
            for table, column, decl in (*_V3_COLUMNS, *_V4_COLUMNS):
                have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
            conn.execute("CREATE INDEX IF NOT EXISTS spends_by_block ON spends (block_id)")
        if version < 2:
            now = datetime.now(UTC).isoformat()
            over = []
            rows = conn.execute("SELECT scope, notion, total FROM budgets").fetchall()
            for scope, notion, total in rows:
                spent = live_spent(conn, scope, notion)
                conn.execute(
                    "UPDATE budgets SET spent = ? WHERE scope = ? AND notion = ?",
                    (fraction_text(spent), scope, notion),
                )
                if spent > parse_fraction(total, "budget total"):
                    over.append(f"scope {scope!r}, {notion!r}: spent {fmt(spent)} > {total}")
            detail = (
                f"format version {SCHEMA_VERSION}: {len(rows)} budget(s) now also count the "
                "spends of the notions that imply them"
            )
            if over:
                detail += "; over their total: " + "; ".join(over)
            conn.execute(
                "INSERT INTO events (created_at, action, scope, notion, detail) "
                "VALUES (?, 'migrate', NULL, NULL, ?)",
                (now, detail),
            )
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
