"""scikit-learn plumbing shared by privad's estimators.

Every privad estimator is a real scikit-learn estimator: it inherits
:class:`sklearn.base.BaseEstimator` (parameters read from the ``__init__`` signature, so
``clone``, ``Pipeline`` and grid searches work), validates with scikit-learn's
``validate_data`` (``n_features_in_``, ``feature_names_in_``) and checks fitted state with
``check_is_fitted``. :class:`PrivadEstimator` adds privad's errors: an unknown parameter is a
:class:`~privad.errors.ParameterError`, a call before ``fit`` a
:class:`~privad.errors.NotFittedError` (which is also scikit-learn's ``NotFittedError``),
and malformed input a :class:`~privad.errors.DataError` (also a ``ValueError``) whose message
says what was wrong. Estimators that release a noisy result per block of records (a window,
a series) keep what they released by the block's content (:meth:`PrivadEstimator._released`),
so asking again returns the same answers and spends nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.utils.validation import check_is_fitted, validate_data

from privad.errors import DataError, NotFittedError, ParameterError
from privad.io import rows_digest

__all__ = [
    "InputTypeError",
    "NotFittedError",
    "PrivadEstimator",
    "check_contamination",
    "contamination_threshold",
]

_T = TypeVar("_T")


def check_contamination(contamination: Any, name: str = "contamination") -> float:
    """PyOD's ``contamination``: the share of records to flag, a number in (0, 0.5]."""
    try:
        value = float(contamination)
    except (TypeError, ValueError):
        value = float("nan")
    if isinstance(contamination, bool) or not 0.0 < value <= 0.5:
        raise ParameterError(f"{name} must be a number in (0, 0.5], got {contamination!r}")
    return value


def contamination_threshold(scores: np.ndarray, contamination: float) -> float:
    """PyOD's threshold: the ``100 (1 - contamination)`` percentile of ``scores``.

    A record is flagged when its score is *above* the threshold (``scores > threshold``),
    as PyOD's ``BaseDetector._process_decision_scores`` does. The scores are released
    (noisy) scores, so the threshold and the labels are post-processing: no privacy cost.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.base import contamination_threshold
    >>> scores = np.arange(10.0)
    >>> t = contamination_threshold(scores, 0.2)
    >>> int((scores > t).sum())
    2
    """
    c = check_contamination(contamination)
    return float(np.percentile(np.asarray(scores, dtype=np.float64), 100.0 * (1.0 - c)))


class InputTypeError(DataError, TypeError):
    """Input of a type that cannot be read as numbers (also a TypeError, as scikit-learn
    raises for it)."""


class PrivadEstimator(BaseEstimator):
    """:class:`sklearn.base.BaseEstimator` with privad's errors and input validation."""

    _releases: dict[str, Any]  # released results by block digest (see _released)

    def set_params(self, **params: Any) -> Any:
        """Set constructor parameters (scikit-learn convention); refit afterwards."""
        allowed = self._get_param_names()
        for name in params:
            if name.partition("__")[0] not in allowed:  # "estimator__x": a nested parameter
                raise ParameterError(f"unknown parameter {name!r}; allowed: {', '.join(allowed)}")
        return super().set_params(**params)

    def _require_fitted(self, attribute: str) -> None:
        """Raise :class:`~privad.errors.NotFittedError` unless ``attribute`` was fitted."""
        try:
            check_is_fitted(self, attribute)
        except SklearnNotFittedError:
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X) first"
            ) from None

    def _validate(self, X: Any, *, reset: bool, min_rows: int = 1) -> np.ndarray:
        """``X`` as a finite float64 (n, d) array through scikit-learn's ``validate_data``
        (which records ``n_features_in_`` and ``feature_names_in_`` on ``reset`` and checks
        them otherwise); its ValueErrors become :class:`~privad.errors.DataError`."""
        try:
            return validate_data(
                self, X, reset=reset, dtype=np.float64, ensure_min_samples=min_rows
            )
        except DataError:
            raise
        except ValueError as exc:
            raise DataError(f"X: {exc}") from None
        except TypeError as exc:
            raise InputTypeError(f"X: {exc}") from None

    def _released(
        self, data: np.ndarray, release: Callable[[np.ndarray], _T]
    ) -> tuple[_T, np.ndarray]:
        """The result released before for the same records as ``data`` (the same rows, in
        any order, by :func:`~privad.io.rows_digest` of the sorted rows), else
        ``release(data)``, recorded for next time.

        A noisy release is made once per block of records: asking again for the same
        records (or a permutation of them) returns the same answers without new noise or
        spend, so repeated calls cannot average the noise away. Returns the result and
        ``where``: row i of ``data`` is row ``where[i]`` of the block the result was
        released for (per-record arrays of the result are read as ``array[where]``).
        ``fit`` starts an empty record (``self._releases = {}``).
        """
        order = np.lexsort(data.T[::-1])  # rows sorted; ties (equal rows) keep their order
        key = rows_digest(data[order])
        if key not in self._releases:
            self._releases[key] = (release(data), order)
        result, first_order = self._releases[key]
        return result, first_order[np.argsort(order)]
