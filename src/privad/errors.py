"""The :class:`PrivadError` hierarchy.

Every public function validates its input at the boundary and raises one of these with a
message that says what was wrong and what is allowed. The command line catches
:class:`PrivadError`, prints its message on one line and exits with status 2.
"""

from __future__ import annotations

import functools
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


class OutputError(PrivadError, OSError):
    """An output could not be written durably (a full disk, an I/O error): nothing was
    published, and a release that was to write it is cancelled, not committed."""


class PrivadWarning(UserWarning):
    """Base class of the warnings privad issues (the command line prints each on one line,
    ``privad: warning: ...``)."""


class FeatureScaleWarning(PrivadWarning):
    """One feature column carries most of the variance of the features used, so distances
    (and a radius r) are essentially in its units. Issued by
    :func:`privad.datasets.check_feature_scales`; the cure is scaling from public bounds
    (:func:`privad.datasets.scale_to_bounds`), never from the data (``docs/scaling.md``)."""


class PrivacyWarning(PrivadWarning):
    """A parameter is allowed but protects (almost) nothing, e.g. ε > 20 for one answer
    (e^20 ≈ 5 × 10^8: the answer may be that many times likelier on one database than on its
    neighbour). Issued by :func:`privad.validation.check_epsilon` with ``per_answer=True``."""


def __getattr__(name: str) -> Any:
    """``NotFittedError`` is made on first use: it subclasses scikit-learn's, and importing
    scikit-learn here would slow every ``privad`` command down by seconds."""
    if name == "NotFittedError":
        return _not_fitted_error()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _not_fitted_error() -> type[PrivadError]:
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    class NotFittedError(PrivadError, SklearnNotFittedError):
        """An estimator method that needs the data was called before ``fit`` (also
        scikit-learn's ``NotFittedError``, so a ValueError and an AttributeError)."""

    NotFittedError.__module__ = __name__
    NotFittedError.__qualname__ = "NotFittedError"  # pickled by name, found again here
    return NotFittedError
