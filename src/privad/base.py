"""scikit-learn plumbing shared by privad's estimators.

Every privad estimator is a real scikit-learn estimator: it inherits
:class:`sklearn.base.BaseEstimator` (parameters read from the ``__init__`` signature, so
``clone``, ``Pipeline`` and grid searches work), validates with scikit-learn's
``validate_data`` (``n_features_in_``, ``feature_names_in_``) and checks fitted state with
``check_is_fitted``. :class:`PrivadEstimator` adds privad's errors: an unknown parameter is a
:class:`~privad.errors.ParameterError`, a call before ``fit`` a
:class:`~privad.errors.NotFittedError` (which is also scikit-learn's ``NotFittedError``),
and malformed input a :class:`~privad.errors.DataError` (also a ``ValueError``) whose message
says what was wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.utils.validation import check_is_fitted, validate_data

from privad.errors import DataError, NotFittedError, ParameterError

__all__ = ["InputTypeError", "NotFittedError", "PrivadEstimator"]


class InputTypeError(DataError, TypeError):
    """Input of a type that cannot be read as numbers (also a TypeError, as scikit-learn
    raises for it)."""


class PrivadEstimator(BaseEstimator):
    """:class:`sklearn.base.BaseEstimator` with privad's errors and input validation."""

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
            return validate_data(self, X, reset=reset, dtype=np.float64,
                                 ensure_min_samples=min_rows)  # fmt: skip
        except DataError:
            raise
        except ValueError as exc:
            raise DataError(f"X: {exc}") from None
        except TypeError as exc:
            raise InputTypeError(f"X: {exc}") from None
