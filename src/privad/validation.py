"""Validation at the boundary: one function per kind of parameter.

Each function returns the value converted to its canonical type, or raises a
:class:`~privad.errors.PrivadError` subclass whose message names the parameter, the value
received, and what is allowed.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError, PrivacyWarning


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return value


def check_positive(value: Any, name: str) -> float:
    """A finite real number > 0 (a scale, a radius, a privacy parameter)."""
    value = _real(value, name)
    if value <= 0:
        raise ParameterError(f"{name} must be > 0, got {value!r}")
    return value


def check_nonnegative(value: Any, name: str) -> float:
    """A finite real number >= 0."""
    value = _real(value, name)
    if value < 0:
        raise ParameterError(f"{name} must be >= 0, got {value!r}")
    return value


MAX_INT = 2**62
"""The default upper bound of :func:`check_int`: no count, size or id privad takes is larger,
and NumPy's int64 and SQLite's INTEGER overflow beyond 2^63."""

MEANINGFUL_EPSILON = 20.0
"""ε per answer above which :func:`check_epsilon` warns (:class:`PrivacyWarning`): e^20 ≈
5 × 10^8, a likelihood ratio that protects nothing in practice."""


def check_epsilon(value: Any, name: str = "epsilon", *, per_answer: bool = False) -> float:
    """A privacy parameter ε: a finite real number > 0.

    Parameters
    ----------
    value:
        The ε given.
    name:
        The parameter's name for the message.
    per_answer:
        True where ``value`` is what one answer costs (a mechanism's ε, not a total
        budget): then an ε above :data:`MEANINGFUL_EPSILON` (20) issues a
        :class:`~privad.errors.PrivacyWarning`, since it protects nothing in practice.

    Returns
    -------
    float
        ``value`` as a float.
    """
    eps = check_positive(value, name)
    if per_answer and eps > MEANINGFUL_EPSILON:
        warnings.warn(
            f"{name} = {eps:g} per answer protects (almost) nothing: an answer may be e^{eps:g} "
            f"times likelier on one database than on its neighbour; privad warns above "
            f"{MEANINGFUL_EPSILON:g}",
            PrivacyWarning,
            stacklevel=3,
        )
    return eps


def check_probability(
    value: Any, name: str, *, low_open: bool = False, high_open: bool = False
) -> float:
    """A probability in [0, 1]; ``low_open``/``high_open`` exclude the end points."""
    value = _real(value, name)
    low_ok = value > 0 if low_open else value >= 0
    high_ok = value < 1 if high_open else value <= 1
    if not (low_ok and high_ok):
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise ParameterError(f"{name} must be in {interval}, got {value!r}")
    return value


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int = MAX_INT) -> int:
    """An integer in [minimum, maximum]; ``minimum`` may be omitted, ``maximum`` defaults to
    :data:`MAX_INT` (2^62), so a huge value is a :class:`ParameterError`, never an
    OverflowError further on."""
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    if not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise ParameterError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value}")
    if value > maximum:
        raise ParameterError(f"{name} must be an integer <= {maximum}, got {value}")
    return value


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """One of a fixed set of strings."""
    choices = tuple(choices)
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ParameterError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_interval(pair: Any, name: str, *, finite_width: bool = False) -> tuple[float, float]:
    """``pair`` as two finite numbers ``(lower, upper)`` with lower < upper (and, with
    ``finite_width``, a finite upper − lower): public bounds of a feature.

    Examples
    --------
    >>> check_interval(["0", 2], "bounds: feature 0")
    (0.0, 2.0)
    >>> check_interval((5, 1), "bounds: x")
    Traceback (most recent call last):
    ...
    privad.errors.ParameterError: bounds: x needs finite bounds with lower < upper, got 5:1
    """
    try:
        lower, upper = (float(v) for v in pair)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} needs two numbers (lower, upper), got {pair!r}") from None
    ordered = math.isfinite(lower) and math.isfinite(upper) and lower < upper
    if not ordered or (finite_width and not math.isfinite(upper - lower)):
        width = " (and a finite width)" if finite_width else ""
        raise ParameterError(
            f"{name} needs finite bounds with lower < upper{width}, got {lower:g}:{upper:g}"
        )
    return lower, upper


def check_array(
    X: Any,
    name: str = "X",
    *,
    ndim: int = 2,
    min_rows: int = 1,
    allow_nonfinite: bool = False,
) -> np.ndarray:
    """A finite float64 array with ``ndim`` dimensions and at least ``min_rows`` rows.

    A 1-D input is accepted where ``ndim == 2`` only if it is unambiguous: it is refused,
    because a 1-D vector could be one record or one feature.
    """
    arr = _float_array(X, name)
    if arr.ndim != ndim:
        hint = ""
        if ndim == 2 and arr.ndim == 1:
            hint = " (reshape a single feature with X.reshape(-1, 1))"
        raise DataError(f"{name} must be a {ndim}-D array, got shape {arr.shape}{hint}")
    if arr.shape[0] < min_rows:
        raise DataError(f"{name} must have at least {min_rows} row(s), got {arr.shape[0]}")
    if ndim == 2 and arr.shape[1] < 1:
        raise DataError(f"{name} must have at least one column, got shape {arr.shape}")
    if not allow_nonfinite:
        _check_finite(arr, name)
    return arr


def check_finite_array(X: Any, name: str = "X") -> np.ndarray:
    """A finite float64 array of any shape (data to perturb, for instance)."""
    arr = _float_array(X, name)
    _check_finite(arr, name)
    return arr


def _float_array(X: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be numeric, could not convert: {exc}") from None


def _check_finite(arr: np.ndarray, name: str) -> None:
    if not np.isfinite(arr).all():
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise DataError(
            f"{name} contains {bad} NaN or infinite value(s); only finite values are allowed"
        )


def check_queries(queries: Any, data: np.ndarray) -> np.ndarray | None:
    """Optional query rows against validated ``data``: ``None``, or a finite float64 (m, d)
    array (m may be 0) with the same number of columns as ``data``."""
    if queries is None:
        return None
    Q = check_array(queries, "queries", min_rows=0)
    if Q.shape[1] != data.shape[1]:
        raise DataError(
            f"queries must have the same number of columns as data ({data.shape[1]}), "
            f"got {Q.shape[1]}"
        )
    return Q
