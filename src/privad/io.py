"""Output files that are either complete or absent.

Every file privad writes goes through :func:`atomic_write`: the content is written to a
temporary file beside the target and renamed over it only when writing succeeded, so a
failure (bad input found half-way, Ctrl-C, a full disk) never leaves a partial output file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


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
