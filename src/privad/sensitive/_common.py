"""Shared boundary checks for :mod:`privad.sensitive` (private module).

The mechanisms of the sensitive-privacy paper depend on the database only through two
integers per queried record i: its multiplicity ``x_i`` and its ball count ``B_x(i, r)``.
Every public function of the package accepts them as scalars or NumPy arrays (broadcast
against each other) and validates them here, with integer arithmetic throughout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.validation import check_epsilon, check_int

__all__ = [
    "InvalidCountsError",
    "as_counts",
    "as_count_pair",
    "check_beta",
    "check_k",
    "check_cap",
    "scalar_or_array",
]


class InvalidCountsError(ParameterError, DataError):
    """A multiplicity ``x_i`` or ball count ``B_x(i, r)`` that is not a valid count.

    It is both a :class:`~privad.errors.ParameterError` (the counts are arguments of the
    closed-form functions) and a :class:`~privad.errors.DataError` (they describe the data),
    so either ``except`` clause catches it.

    Examples
    --------
    >>> from privad.sensitive import InvalidCountsError, SPMechanism
    >>> try:
    ...     SPMechanism(beta=2, r=0.5, epsilon=1.0).log_error_probability(-1, 3)
    ... except InvalidCountsError as error:
    ...     print(error)
    x_i must be >= 0 (a count), got -1
    """


_INT64_MAX = np.iinfo(np.int64).max


def as_counts(value: Any, name: str) -> np.ndarray:
    """``value`` as an int64 array of non-negative integer counts (any shape, 0-d allowed).

    Integer dtypes are taken as they are; floating values are accepted only when every
    entry is an exact integer (``3.0``); booleans, NaN, fractions and negatives are refused.
    """
    if isinstance(value, bool | np.bool_):
        raise InvalidCountsError(f"{name} must be an integer count, got the boolean {value!r}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # pragma: no cover - numpy rarely refuses
        raise InvalidCountsError(f"{name} must be integer counts: {exc}") from None
    if arr.dtype == bool:
        raise InvalidCountsError(f"{name} must hold integer counts, got booleans")
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise InvalidCountsError(
                f"{name} must hold integer counts, got non-numeric values"
            ) from None
    if np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.unsignedinteger) and arr.size and arr.max() > _INT64_MAX:
            raise InvalidCountsError(f"{name} holds a count too large for int64")
        out = arr.astype(np.int64)
    elif np.issubdtype(arr.dtype, np.floating):
        if arr.size and not np.isfinite(arr).all():
            raise InvalidCountsError(f"{name} must hold finite integer counts, got NaN or inf")
        if arr.size and not (arr == np.floor(arr)).all():
            bad = arr[arr != np.floor(arr)].flat[0]
            raise InvalidCountsError(f"{name} must hold integer counts, got {bad!r}")
        if arr.size and np.abs(arr).max() >= 2.0**62:
            raise InvalidCountsError(f"{name} holds a count too large (>= 2**62)")
        out = arr.astype(np.int64)
    else:
        raise InvalidCountsError(f"{name} must hold integer counts, got dtype {arr.dtype}")
    if out.size and out.min() < 0:
        raise InvalidCountsError(f"{name} must be >= 0 (a count), got {int(out.min())}")
    return out


def as_count_pair(x_i: Any, ball: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate and broadcast (x_i, B_x(i, r)): both counts, and ``ball >= x_i``.

    ``B_x(i, r)`` counts every record within distance r of i, and i's own copies are at
    distance 0, so a ball count below the multiplicity is impossible (Definition 2.2).
    """
    a = as_counts(x_i, "x_i")
    b = as_counts(ball, "ball")
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        raise InvalidCountsError(
            f"x_i and ball must have broadcastable shapes, got {a.shape} and {b.shape}"
        ) from None
    if a.size and (b < a).any():
        j = int(np.flatnonzero((b < a).ravel())[0])
        raise InvalidCountsError(
            "ball must be >= x_i (the ball B_x(i, r) contains i's own x_i copies); "
            f"entry {j} has x_i={int(a.ravel()[j])}, ball={int(b.ravel()[j])}"
        )
    return a, b


def check_beta(beta: Any) -> int:
    """β of the (β, r)-anomaly (Definition 2.2): an integer >= 1."""
    return check_int(beta, "beta", minimum=1)


def check_k(k: Any) -> int:
    """k of the k-sensitive neighbourhood graph (Definition 3.1): an integer >= 1.

    There is no upper limit: for k >= β + 1 every record is k-sensitive in every database
    (section 5), the k-sensitive graph is the full neighbourhood graph and λ_k = Δ_G, so the
    SP mechanism coincides with the optimal DP mechanism. That is allowed, not an error.
    """
    return check_int(k, "k", minimum=1)


def check_cap(cap: Any, beta: int) -> int | None:
    """A count cap c (see :func:`privad.sensitive.mdd.apply_count_cap`): None or c >= β + 2."""
    if cap is None:
        return None
    return check_int(cap, "count_cap", minimum=beta + 2)


def check_eps(epsilon: Any, *, per_answer: bool = False) -> float:
    """ε > 0, finite; ``per_answer``: a mechanism's ε, warned about above 20
    (:func:`privad.validation.check_epsilon`)."""
    return check_epsilon(epsilon, per_answer=per_answer)


def scalar_or_array(arr: np.ndarray) -> Any:
    """A 0-d result as a Python scalar, anything else as the array itself."""
    if arr.ndim == 0:
        return arr.item()
    return arr
