"""Output files that are either complete or absent, private to their owner, at paths checked
before any work; SQLite files that belong to one role; the content digest of a block of
records.

Every file privad writes goes through :func:`atomic_write`, and every output folder through
:func:`atomic_folder`: the content is written to a hidden staging file or folder beside the
target, ``.NAME.XXXXXXXX.part``, and renamed onto the target only when writing succeeded, so
a failure (bad input found half-way, Ctrl-C, a full disk) never leaves a partial output.

Durable before published
    The staged content is flushed and ``fsync``-ed (every file of a staged folder, and the
    folder) before the rename, and the target's folder is ``fsync``-ed after it, so an
    output that has appeared survives a crash, and every write error (ENOSPC, EIO, most of
    which surface only at the flush or the ``fsync``) is raised while the output is still
    unpublished: as an :class:`~privad.errors.OutputError` (a ``PrivadError`` and an
    ``OSError``) naming the path and the reason, after the staging is deleted. A release
    publishes its output this way *before* it commits its spend
    (:mod:`privad.sensitive.release`), so an output that could not be written is never
    charged for.

Leftovers of killed runs
    A process killed outright (SIGKILL, a power cut) cannot delete its staging, which may
    hold unpublished results (noisy labels whose spend is still only reserved). Staging is
    therefore private to its owner (mode 0600/0700) until it is renamed, and its writer holds
    an exclusive ``flock`` on it for as long as it exists; the kernel releases the lock when
    the writer dies. The next :func:`check_output_path` of the same target finds the
    target's staging entries, removes those whose lock it can take (their writer is gone;
    a :class:`~privad.errors.PrivadWarning` names each), and leaves those of a live writer
    alone (for a folder, which two jobs cannot both create, that is an error naming the
    other job's staging folder). Where the file system cannot lock (some network file
    systems), a leftover is an error that names it and the command that removes it.

Private files
    Everything privad creates holds data, answers, ledgers or journals, so every file it
    creates is readable and writable by its owner only (mode 0600) and every folder it
    creates is 0700 (:func:`private_file`, :func:`private_folder`): outputs keep their
    staging mode when they are published, and an SQLite file is created 0600 before SQLite
    opens it, so its ``-wal`` and ``-shm`` files, which SQLite gives the database file's
    mode, are private too. Files that already exist keep their mode.

Every output path a user names (``--out``, ``--output``, ``--ledger``, ``--db``,
``--key-file``, ...) is checked by :func:`check_output_path` before the command does any
work, by one rule: the path's folder must already exist and be writable (privad never
creates a folder for a path it was given, so a mistyped path is an error, not a new empty
ledger somewhere), an output file is not a folder, and a folder output does not exist yet.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import sqlite3
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from privad.errors import OutputError, ParameterError, PrivadError, PrivadWarning

__all__ = [
    "atomic_folder",
    "atomic_write",
    "check_output_path",
    "open_sqlite",
    "private_file",
    "private_folder",
    "remove_leftovers",
    "rows_digest",
]

OutputKind = Literal["file", "folder", "store"]

_STAGING_SUFFIX = ".part"
_HELD: set[str] = set()
"""The staging paths this process holds (locked), which :func:`remove_leftovers` skips."""


def check_output_path(path: str | os.PathLike[str], option: str, kind: OutputKind = "file") -> Path:
    """``path`` as an output the command may write, checked before any work is done.

    The one rule for every output path a user gives: its folder must exist (privad creates
    no folder for it) and be writable. A failure is one :class:`ParameterError` naming
    ``option`` and the reason, raised before anything is read, computed or spent.

    Parameters
    ----------
    path:
        The path as given (``~`` is expanded).
    option:
        The option's name for the message, e.g. ``"--out"``.
    kind:
        ``"file"``: a file written whole (an existing file is replaced atomically; a folder
        is refused). ``"folder"``: a folder the command creates (it must not exist yet).
        ``"store"``: a file opened for update, such as a ledger or a server's database (an
        existing file is used; a new one is created only where its folder exists).

    Returns
    -------
    Path
        The expanded path.

    Raises
    ------
    ParameterError
        When the path is empty, its folder is missing, not a folder or not writable, the
        path itself has the wrong kind, or a staging entry of the target cannot be cleared
        (:func:`remove_leftovers`).
    """
    text = os.fspath(path)
    if not str(text).strip():
        raise ParameterError(f"{option} is empty; give a path")
    target = Path(text).expanduser()
    if kind == "folder":
        if target.exists() or target.is_symlink():
            what = "folder" if target.is_dir() else "file"
            raise ParameterError(
                f"{option} {text!r} already exists (a {what}); give a new "
                "folder name: privad never writes over existing files"
            )
    elif target.is_dir():
        raise ParameterError(f"{option} {text!r} is a folder; give a file name")
    parent = target.parent
    if not parent.is_dir():
        why = "is not a folder" if parent.exists() else "does not exist"
        raise ParameterError(
            f"{option} {text!r}: its folder {str(parent)!r} {why}; create the "
            "folder first (privad creates no folder for a path it is given)"
        )
    if kind == "store" and target.exists():
        if not os.access(target, os.R_OK | os.W_OK):
            raise ParameterError(f"{option} {text!r} is not readable and writable by this user")
        return target
    try:  # a real probe: os.access says yes to root even on a read-only file system
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=parent)
    except OSError as exc:
        raise ParameterError(
            f"{option} {text!r}: cannot write in the folder {str(parent)!r} ({exc.strerror or exc})"
        ) from None
    os.close(fd)
    os.unlink(probe)
    if kind != "store":
        remove_leftovers(target, option, refuse_live=kind == "folder")
    return target


def _is_staging_of(name: str, target: Path) -> bool:
    """Whether ``name`` is a staging name of ``target``: ``.NAME.XXXX.part``, the middle
    part without dots (so ``.labels.csv.XXXX.part`` belongs to ``labels.csv``, not to
    ``labels``)."""
    prefix = f".{target.name}."
    middle = name[len(prefix) : -len(_STAGING_SUFFIX)]
    return (
        name.startswith(prefix)
        and name.endswith(_STAGING_SUFFIX)
        and bool(middle)
        and "." not in middle
    )


def _refuse(entry: Path, option: str, why: str) -> ParameterError:
    return ParameterError(
        f"{option}: {str(entry)!r} is the unfinished output of an earlier privad run and "
        f"{why}; if no privad run is writing it, remove it with: rm -r -- "
        f"{shlex.quote(str(entry))}"
    )


def remove_leftovers(
    target: str | os.PathLike[str], option: str = "the output", *, refuse_live: bool = False
) -> list[Path]:
    """Remove the staging entries of ``target`` left by privad runs that were killed.

    Each entry's writer holds a ``flock`` on it while it lives (:func:`atomic_write`,
    :func:`atomic_folder`); an entry whose lock this process can take has no writer and is
    removed (with a :class:`~privad.errors.PrivadWarning` naming it). An entry locked by a
    live writer is left alone, or with ``refuse_live`` is a :class:`ParameterError` naming
    it. An entry whose lock cannot be tried (a file system without locks), or that cannot
    be removed, is a :class:`ParameterError` naming it and the command that removes it.

    Returns
    -------
    list of Path
        The entries removed.
    """
    target = Path(target).expanduser()
    removed: list[Path] = []
    try:
        names = sorted(os.listdir(target.parent))
    except OSError:
        return removed
    for name in names:
        entry = target.parent / name
        if not _is_staging_of(name, target) or os.path.abspath(entry) in _HELD:
            continue
        try:
            info = os.lstat(entry)
        except FileNotFoundError:
            continue
        is_dir = stat.S_ISDIR(info.st_mode)
        if not (is_dir or stat.S_ISREG(info.st_mode)):
            continue  # a link or a device: never privad's staging
        flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_DIRECTORY if is_dir else 0)
        try:
            fd = os.open(entry, flags)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _refuse(entry, option, f"cannot be opened ({exc.strerror or exc})") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if refuse_live:
                    raise ParameterError(
                        f"{option} {str(target)!r} is being written by another privad run "
                        f"right now (its staging {str(entry)!r}); wait for it to finish or "
                        "choose another path"
                    ) from None
                continue
            except OSError as exc:
                raise _refuse(
                    entry,
                    option,
                    "this file system cannot tell whether that run "
                    f"is still going (no locks: {exc.strerror or exc})",
                ) from None
            try:
                if is_dir:
                    shutil.rmtree(entry)
                else:
                    os.unlink(entry)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _refuse(entry, option, f"cannot be removed ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
        removed.append(entry)
        warnings.warn(
            PrivadWarning(
                f"removed {str(entry)!r}, the unfinished output of a privad run that was killed "
                "before it finished (it was never published). If that run had reserved a privacy "
                "spend, the spend is still counted: 'privad budget show' lists it as reserved, "
                "and 'privad budget cancel ID' gives it back once you know that nobody read the "
                "removed files"
            ),
            stacklevel=2,
        )
    return removed


@contextlib.contextmanager
def _staging(
    make: Callable[[], tuple[int | None, str]], is_dir: bool
) -> Iterator[tuple[int | None, Path]]:
    """A new staging entry made by ``make()`` (an open descriptor or None, and its path),
    locked for as long as it exists; deleted if the block raises.

    The lock is taken right after creation; an entry removed in between by another
    process's :func:`remove_leftovers` (it found it unlocked) is made again.
    """
    while True:
        fd, path = make()
        lock_fd = fd if fd is not None else os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process is removing it as a leftover
            os.close(lock_fd)
            continue
        except OSError:  # no locks on this file system: remove_leftovers will refuse, not guess
            pass
        if os.fstat(lock_fd).st_nlink > 0:
            break
        os.close(lock_fd)  # removed before we locked it
    held = os.path.abspath(path)
    _HELD.add(held)
    try:
        yield (fd, Path(path))
    except BaseException:
        if is_dir:
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        raise
    finally:
        _HELD.discard(held)
        if fd is None:
            os.close(lock_fd)  # a file's descriptor is closed by its owner


def private_folder(path: str | os.PathLike[str]) -> Path:
    """Create the folder ``path`` and its missing parents, each private to its owner (0700);
    folders that exist already are left as they are.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> oct(private_folder(root / "a" / "b").stat().st_mode & 0o777)
    '0o700'
    >>> oct((root / "a").stat().st_mode & 0o777)
    '0o700'
    """
    target = Path(path).expanduser()
    missing = [p for p in (target, *target.parents) if not p.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    return target


def private_file(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` as an empty file private to its owner (0600) if it does not exist (an
    existing file, or a link, is left as it is); its folder must exist.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "store.sqlite"
    >>> oct(private_file(path).stat().st_mode & 0o777)
    '0o600'
    """
    target = Path(path).expanduser()
    with contextlib.suppress(FileExistsError):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    return target


@contextlib.contextmanager
def _failures_as_output_errors(target: Path) -> Iterator[None]:
    """Turn an ``OSError`` met while writing ``target`` into an :class:`OutputError` (one
    line: the path, the reason, and that nothing was published)."""
    try:
        yield
    except PrivadError:
        raise
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise OutputError(f"cannot write {str(target)!r}: {why}; nothing was published") from exc


def _fsync_path(path: str | os.PathLike[str], is_dir: bool) -> None:
    """``fsync`` a file or folder by path (a folder: its entries, e.g. a rename)."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if is_dir else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(folder: Path) -> None:
    """``fsync`` every file and folder under ``folder``, the folders after their entries."""
    for root, _dirs, files in os.walk(folder, topdown=False):
        for name in files:
            _fsync_path(os.path.join(root, name), is_dir=False)
        _fsync_path(root, is_dir=True)


def _sync_published(target: Path) -> None:
    """``fsync`` the folder of a just-renamed ``target``. The output is published by now,
    so an error here is not raised: it must not cancel the spend of what was released."""
    with contextlib.suppress(OSError):
        _fsync_path(target.parent, is_dir=True)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open ``path`` for writing; the file appears (atomically) only if the block succeeds.

    The content is flushed and ``fsync``-ed before the rename and the folder after it; a
    write error (a full disk, an I/O error) is an :class:`~privad.errors.OutputError` and
    nothing appears. The file is readable and writable by its owner only (mode 0600) from
    creation on, and a missing folder is created private (:func:`private_folder`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_write(folder / "labels.csv") as handle:
    ...     _ = handle.write("index,label\\n0,1\\n")
    >>> (folder / "labels.csv").read_text()
    'index,label\\n0,1\\n'
    """
    target = Path(path)
    private_folder(target.parent)

    def make() -> tuple[int, str]:
        return tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=_STAGING_SUFFIX, dir=target.parent
        )

    with _failures_as_output_errors(target), _staging(make, is_dir=False) as (fd, tmp):
        with os.fdopen(fd, mode, **kwargs) as handle:  # type: ignore[arg-type]
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
            os.replace(tmp, target)  # still locked: the descriptor closes after the rename
        _sync_published(target)


@contextlib.contextmanager
def atomic_folder(target: str | os.PathLike[str], option: str = "--out") -> Iterator[Path]:
    """A new folder ``target`` that appears (renamed into place) only if the block succeeds.

    The staging folder ``.NAME.XXXXXXXX.part`` is created beside ``target`` (same file
    system, so the rename is atomic), private to its owner (0700, kept after the rename);
    on any exception it is deleted with everything in it. Everything in it is ``fsync``-ed
    before the rename and the parent folder after it; a write error is an
    :class:`~privad.errors.OutputError`. ``target`` must not exist when the block starts or
    ends (:func:`check_output_path`, kind ``"folder"``).
    """
    final = check_output_path(target, option, kind="folder")

    def make() -> tuple[None, str]:
        return None, tempfile.mkdtemp(
            prefix=f".{final.name}.", suffix=_STAGING_SUFFIX, dir=final.parent
        )

    with _failures_as_output_errors(final), _staging(make, is_dir=True) as (_, tmp):
        yield tmp
        check_output_path(final, option, kind="folder")  # appeared meanwhile: refuse
        _fsync_tree(tmp)
        os.rename(tmp, final)
        _sync_published(final)


def rows_digest(rows: Any) -> str:
    """SHA-256 (hex) of a block of records: shape and float64 little-endian values.

    Identifies records by content wherever they come from: the relaxed sensor's journal and
    ledger scopes (:mod:`privad.relaxed.journal`) and the estimators' record of released
    windows (:meth:`privad.base.PrivadEstimator._released`).
    """
    arr = np.ascontiguousarray(np.asarray(rows, dtype="<f8"))
    h = hashlib.sha256(f"{arr.shape}".encode())
    h.update(arr.tobytes())
    return h.hexdigest()


_CREATED_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS\s+(\w+)", re.IGNORECASE)


def open_sqlite(
    path: str | os.PathLike[str],
    *,
    role: str,
    schema: str,
    option: str = "--db",
    busy_timeout: float = 30.0,
) -> sqlite3.Connection:
    """Open the SQLite file of one ``role`` (a server's store, the curator's store), created
    private (:func:`private_file`) and refused with one :class:`ParameterError` when it is
    not that role's.

    The connection is in autocommit mode (every transaction an explicit ``BEGIN``), usable
    from any thread, with a WAL journal, ``synchronous=FULL`` and foreign keys on. In one
    write transaction the file is claimed: a file without tables becomes ``role``'s (a
    ``meta`` table records the role); a file whose ``meta`` names ``role`` is used; a file
    of an earlier privad without a role is claimed only if every table it holds is one
    ``schema`` creates. Anything else (another server's store, a privad ledger, another
    application's database, a file that is not SQLite) is refused before anything is
    written. Then ``schema`` (``CREATE TABLE IF NOT EXISTS ...`` statements separated by
    ``;``) runs in the same transaction.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "store.sqlite"
    >>> schema = "CREATE TABLE IF NOT EXISTS items (x INTEGER)"
    >>> open_sqlite(path, role="demo", schema=schema).close()
    >>> oct(path.stat().st_mode & 0o777)
    '0o600'
    >>> open_sqlite(path, role="other", schema=schema)
    Traceback (most recent call last):
    ...
    privad.errors.ParameterError: --db '...' is a privad demo database, not a other one; give \
each server its own --db file
    """
    name = str(Path(path).expanduser())
    if name == ":memory:":
        raise ParameterError(f"{option} must be a file path (durable storage), got {name!r}")
    try:
        private_file(name)
        conn = sqlite3.connect(
            name, isolation_level=None, check_same_thread=False, timeout=busy_timeout
        )
    except (OSError, sqlite3.Error) as exc:
        raise ParameterError(f"cannot open {option} {name!r}: {exc}") from None
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise ParameterError(f"cannot use a WAL journal on {option} {name!r} (got {mode!r})")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            _claim(conn, name, role, schema, option)
            for statement in schema.split(";"):  # executescript would COMMIT early
                if statement.strip():
                    conn.execute(statement)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.DatabaseError):
            raise ParameterError(
                f"{option} {name!r} is not a usable SQLite database ({exc}); give this "
                "server its own --db file"
            ) from None
        raise
    return conn


def _claim(conn: sqlite3.Connection, name: str, role: str, schema: str, option: str) -> None:
    """Make an SQLite file ``role``'s or check that it is (see :func:`open_sqlite`)."""
    tables = {
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    owner = None
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'role'").fetchone()
        owner = None if row is None else row[0]
    if owner is not None and owner != role:
        raise ParameterError(
            f"{option} {name!r} is a privad {owner} database, not a {role} one; give each server "
            f"its own {option} file"
        )
    foreign = sorted(tables - set(_CREATED_TABLE.findall(schema)) - {"meta"})
    application = conn.execute("PRAGMA application_id").fetchone()[0]
    if owner is None and (foreign or application):
        what = "a privad ledger" if {"budgets", "spends"} <= tables else "another database"
        raise ParameterError(
            f"{option} {name!r} is {what} (it holds {', '.join(foreign[:5]) or 'no table'}), "
            f"not a {role} store; give the server its own {option} file, apart from the ledger"
        )
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        "INSERT OR IGNORE INTO meta VALUES ('role', ?), ('created_at', ?)",
        (role, datetime.now(UTC).isoformat()),
    )
