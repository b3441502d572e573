"""The :class:`PrivadError` hierarchy.

Every public function validates its input at the boundary and raises one of these with a
message that says what was wrong and what is allowed. The command line catches
:class:`PrivadError`, prints its message on one line and exits with status 2.
"""

from __future__ import annotations

from typing import Any


class PrivadError(Exception):
    """Base class of every error privad raises on purpose."""


class ParameterError(PrivadError, ValueError):
    """A parameter is out of its allowed range (for example ``epsilon <= 0``)."""


class DataError(PrivadError, ValueError):
    """Input data is malformed: wrong shape, NaN/inf, empty, or wrong type."""


class DatasetNotFoundError(PrivadError, LookupError):
    """An unknown dataset name, file, or column."""


class BudgetExceededError(PrivadError):
    """A privacy spend was refused because it would exceed the ledger's total budget."""


class LedgerError(PrivadError):
    """The privacy ledger could not be opened or is inconsistent."""


class PrivadWarning(UserWarning):
    """Something privad did or noticed that the user should know, though nothing failed
    (the command line prints it as one line, ``privad: warning: ...``)."""


class PrivacyWarning(PrivadWarning):
    """A parameter is allowed but protects (almost) nothing, e.g. ε > 20 for one answer
    (e^20 ≈ 5 × 10^8: the answer may be that many times likelier on one database than on its
    neighbour). Issued by :func:`privad.validation.check_epsilon` with ``per_answer=True``."""


def __getattr__(name: str) -> Any:
    """``NotFittedError`` lives in :mod:`privad.base` (it subclasses scikit-learn's, and
    importing scikit-learn here would slow every ``privad`` command down by seconds)."""
    if name == "NotFittedError":
        from privad.base import NotFittedError

        return NotFittedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
