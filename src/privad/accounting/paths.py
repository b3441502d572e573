"""Where the ledger lives by default."""

from __future__ import annotations

import os
from pathlib import Path

LEDGER_ENV = "PRIVAD_LEDGER"
"""Environment variable naming the default ledger file."""

MEMORY = ":memory:"
"""The path that opens a private in-memory ledger (gone when the object is closed)."""


def default_ledger_path() -> Path:
    """The default ledger file: ``$PRIVAD_LEDGER`` if set and non-empty, else
    ``~/.privad/ledger.sqlite``. (``~`` is expanded; the file need not exist yet.)

    Examples
    --------
    >>> from privad.accounting import default_ledger_path
    >>> default_ledger_path().suffix   # ~/.privad/ledger.sqlite unless $PRIVAD_LEDGER is set
    '.sqlite'
    """
    env = os.environ.get(LEDGER_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".privad" / "ledger.sqlite"
