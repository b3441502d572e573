"""Storage of privad's services: one durable SQLite file per server, with group commit.

:class:`SQLiteStore`: stdlib :mod:`sqlite3`, WAL journal with ``synchronous=FULL``; each
request's writes are one savepoint of a group commit (concurrent requests share one
fsync). Handlers return only after the commit, so an acknowledged record survives a crash
or restart. Arrays are stored as little-endian bytes (:func:`pack`, :func:`unpack`) and
times as ISO 8601 UTC text (:func:`utc_now`).
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from privad.errors import ParameterError
from privad.io import check_output_path, open_sqlite
from privad.services.errors import Conflict, ServiceError, closed_on_error

__all__ = ["SQLiteStore", "pack", "unpack", "utc_now"]


def utc_now() -> str:
    """The current UTC time as ISO 8601 text (stored with every record)."""
    return datetime.now(UTC).isoformat()


def pack(arr: np.ndarray, dtype: str = "<f8") -> bytes:
    """An array's values as little-endian bytes (float64 ``<f8`` or int64 ``<i8``)."""
    return np.ascontiguousarray(arr, dtype=dtype).tobytes()


def unpack(blob: bytes, dtype: str = "<f8", shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The inverse of :func:`pack` (a new, writeable array)."""
    arr = np.frombuffer(blob, dtype=dtype).astype(dtype[1:], copy=True)
    return arr if shape is None else arr.reshape(shape)


class SQLiteStore:
    """A durable SQLite file for one server role, with group commit.

    WAL journal, ``synchronous=FULL`` (a commit is on disk before it returns), foreign keys
    on. Writes go through :meth:`write`: each is a function run inside a write transaction
    by one writer thread, which takes every write that is waiting, runs each in its own
    ``SAVEPOINT`` (a write that raises is rolled back alone and its caller gets the
    exception), commits them together and only then returns to the callers. So every
    acknowledged write is durable, and concurrent requests share one fsync instead of
    queueing for one each. :meth:`put_once` is the write of a record that is stored once
    (an identical repeat acknowledged, a different one refused). Reads use a second
    connection (:meth:`reading`, :meth:`read_one`, :meth:`read_all`), which sees committed
    data only and does not wait for the writer. The file is created private
    (0600) and claimed for ``role`` by :func:`privad.io.open_sqlite`: a correction server
    refuses an analyst's file and vice versa, and no server takes a ledger or another
    application's database for its store.

    Parameters
    ----------
    path:
        The database file (created 0600 if missing, in a folder that must exist:
        :func:`privad.io.check_output_path`).
    role:
        The server role that owns the file, e.g. ``"analyst"``.
    schema:
        ``CREATE TABLE IF NOT EXISTS ...`` statements separated by ``;`` (no ``;`` inside a
        statement), run in one transaction on every open.
    max_batch:
        The most writes committed together.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        role: str,
        schema: str,
        busy_timeout: float = 30.0,
        max_batch: int = 64,
    ) -> None:
        if str(path) == ":memory:":
            raise ParameterError(f"--db must be a file path (durable storage), got {str(path)!r}")
        p = check_output_path(path, "--db", "store")
        self.path = str(p)
        self.role = role
        self.max_batch = max(1, int(max_batch))
        self._conn = open_sqlite(p, role=role, schema=schema, busy_timeout=busy_timeout)
        with closed_on_error(self._conn):
            self._read = open_sqlite(p, role=role, schema=schema, busy_timeout=busy_timeout)
        self._read_lock = threading.Lock()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._writer = threading.Thread(
            target=self._write_loop, daemon=True, name=f"privad-{role}-writer"
        )
        self._writer.start()

    def write(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn(conn)`` in a write transaction; return its result once committed.

        If ``fn`` raises, its changes are rolled back (others in the same batch are not)
        and the exception is raised here. Blocks until the commit is on disk.
        """
        if threading.current_thread() is self._writer:
            raise RuntimeError("SQLiteStore.write called from inside a write")
        if self._closed:
            raise ServiceError(f"the store {self.path!r} is closed", status_code=503)
        done: Future[Any] = Future()
        self._queue.put((fn, done))
        return done.result()

    def _write_loop(self) -> None:
        conn = self._conn
        while True:
            item = self._queue.get()
            if item is None:
                break
            batch = [item]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._commit_batch(conn, batch)
            if stop:
                break
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    @staticmethod
    def _commit_batch(conn: sqlite3.Connection, batch: list[tuple[Any, Future[Any]]]) -> None:
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for fn, done in batch:
                if not done.set_running_or_notify_cancel():
                    continue
                conn.execute("SAVEPOINT request")
                try:
                    result = fn(conn)
                except BaseException as exc:  # handed to the caller
                    conn.execute("ROLLBACK TO request")
                    conn.execute("RELEASE request")
                    outcomes.append((done, None, exc))
                else:
                    conn.execute("RELEASE request")
                    outcomes.append((done, result, None))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            failed = ServiceError(
                f"the database write failed, nothing was stored: {exc}", status_code=503
            )
            for _fn, done in batch:
                if not done.done():
                    if not done.running():  # not reached before the failure
                        done.set_running_or_notify_cancel()
                    done.set_exception(failed)
            return
        for done, result, exc in outcomes:
            if exc is None:
                done.set_result(result)
            else:
                done.set_exception(exc)

    def put_once(
        self,
        table: str,
        key: Mapping[str, Any],
        values: Mapping[str, Any],
        conflict: str,
        check: Callable[[sqlite3.Connection], None] | None = None,
    ) -> bool:
        """Store a row of ``table`` that is written once per ``key`` (one write).

        True if stored now (with ``received_at``); False if the row under ``key`` already
        holds exactly ``values`` (a retry after a lost answer); :class:`Conflict` with the
        message ``conflict`` if it holds other values. ``check(conn)`` runs before a new row
        is inserted and refuses it by raising. Table and column names come from the caller's
        code, never from a request.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> schema = "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v, received_at)"
        >>> store = SQLiteStore(Path(tempfile.mkdtemp()) / "s.sqlite", role="demo", schema=schema)
        >>> store.put_once("t", {"k": 1}, {"v": "a"}, "k 1 holds another v")
        True
        >>> store.put_once("t", {"k": 1}, {"v": "a"}, "k 1 holds another v")  # a retry
        False
        >>> store.put_once("t", {"k": 1}, {"v": "b"}, "k 1 holds another v")
        Traceback (most recent call last):
        privad.services.errors.Conflict: k 1 holds another v
        >>> store.read_one("SELECT v FROM t WHERE k = ?", (1,))
        ('a',)
        >>> store.close()
        """
        where = " AND ".join(f"{name} = ?" for name in key)
        columns = (*key, *values, "received_at")

        def tx(conn: sqlite3.Connection) -> bool:
            old = conn.execute(
                f"SELECT {', '.join(values)} FROM {table} WHERE {where}", tuple(key.values())
            ).fetchone()
            if old is not None:
                if tuple(old) == tuple(values.values()):
                    return False
                raise Conflict(conflict)
            if check is not None:
                check(conn)
            conn.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})",
                (*key.values(), *values.values(), utc_now()),
            )
            return True

        return self.write(tx)

    def read_one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """The first row of one query on committed data (:meth:`reading`), or None."""
        with self.reading() as conn:
            return conn.execute(sql, params).fetchone()

    def read_all(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Every row of one query on committed data (:meth:`reading`)."""
        with self.reading() as conn:
            return conn.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent read of committed data (``BEGIN`` ... ``COMMIT``)."""
        with self._read_lock:
            conn = self._read
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("COMMIT")

    def close(self) -> None:
        """Finish the writes already submitted, then close (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join(30)
        with self._read_lock, contextlib.suppress(sqlite3.Error):
            self._read.close()
