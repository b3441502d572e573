"""Output files that are either complete or absent, at paths checked before any work; the
content digest of a block of records.

Every file privad writes goes through :func:`atomic_write`: the content is written to a
temporary file beside the target and renamed over it only when writing succeeded, so a
failure (bad input found half-way, Ctrl-C, a full disk) never leaves a partial output file.

Every output path a user names (``--out``, ``--output``, ``--ledger``, ``--db``,
``--key-file``, ...) is checked by :func:`check_output_path` before the command does any
work, by one rule: the path's folder must already exist and be writable (privad never
creates a folder for a path it was given, so a mistyped path is an error, not a new empty
ledger somewhere), an output file is not a folder, and a folder output does not exist yet.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from privad.errors import ParameterError

__all__ = ["atomic_write", "check_output_path", "rows_digest"]

OutputKind = Literal["file", "folder", "store"]


def check_output_path(path: str | os.PathLike[str], option: str,
                      kind: OutputKind = "file") -> Path:  # fmt: skip
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
        When the path is empty, its folder is missing, not a folder or not writable, or the
        path itself has the wrong kind.
    """
    text = os.fspath(path)
    if not str(text).strip():
        raise ParameterError(f"{option} is empty; give a path")
    target = Path(text).expanduser()
    if kind == "folder":
        if target.exists() or target.is_symlink():
            what = "folder" if target.is_dir() else "file"
            raise ParameterError(f"{option} {text!r} already exists (a {what}); give a new "
                                 "folder name: privad never writes over existing files")
    elif target.is_dir():
        raise ParameterError(f"{option} {text!r} is a folder; give a file name")
    parent = target.parent
    if not parent.is_dir():
        why = "is not a folder" if parent.exists() else "does not exist"
        raise ParameterError(f"{option} {text!r}: its folder {str(parent)!r} {why}; create the "
                             "folder first (privad creates no folder for a path it is given)")
    if kind == "store" and target.exists():
        if not os.access(target, os.R_OK | os.W_OK):
            raise ParameterError(f"{option} {text!r} is not readable and writable by this user")
        return target
    try:  # a real probe: os.access says yes to root even on a read-only file system
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=parent)
    except OSError as exc:
        raise ParameterError(f"{option} {text!r}: cannot write in the folder {str(parent)!r} "
                             f"({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)
    return target


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", *, private: bool = False, **kwargs
) -> Iterator[IO]:
    """Open ``path`` for writing; the file appears (atomically) only if the block succeeds.

    ``private=True`` keeps the file readable and writable by its owner only (mode 0600) from
    creation on, for secrets such as an RMP participant's key or a service token.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates the file 0600; unless private, give it the mode a plain open()
        # would have.
        if not private:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
