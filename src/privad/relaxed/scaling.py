"""Step 1a of the correction algorithm (Fig. 2): the sensor scales its data.

Figure 2 is missing from the paper's text; section 6.1 only says that "S scales the data in
line 1a". **Reconstruction** (``docs/papers.md``): scaling is a configurable, public,
data-independent step given by one positive divisor per column, ``T_s[, j] = T[, j] / s_j``.
Everything after it (noise, distances, detection, correction) happens in the scaled space.

* ``"relaxed-sensitivity"`` (default): ``s_j = RS_j``. Every column then has relaxed
  sensitivity 1 and receives ``Lap(1/ε)``, and one DBSCAN radius fits all columns.
* ``"isotropic"``: ``s_j = max_k RS_k`` for every column: one common unit, so Euclidean
  distances keep the geometry of the measurements (column j gets ``Lap((RS_j/s_j)/ε)``).
* ``"none"``: ``s_j = 1``; the data stay in measurement units and column j gets
  ``Lap(RS_j/ε)``.
* An explicit vector of d positive divisors (public constants, e.g. physical units).

The divisors depend only on the relaxed sensitivities (fixed from historical data) or on
constants, never on the data being perturbed, so publishing them to the analyst costs no
privacy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.errors import ParameterError
from privad.relaxed.sensitivity import check_relaxed_sensitivity

__all__ = ["SCALINGS", "column_divisors", "scale_columns", "unscale_columns"]

SCALINGS: tuple[str, ...] = ("relaxed-sensitivity", "isotropic", "none")
"""The named scalings of step 1a; an explicit vector of divisors is also accepted."""


def column_divisors(scaling: Any, relaxed_sensitivity: Any) -> np.ndarray:
    """The per-column divisors ``s_j`` of step 1a for a scaling choice.

    Parameters
    ----------
    scaling:
        One of :data:`SCALINGS`, or a vector of d finite divisors > 0.
    relaxed_sensitivity:
        ``RS_j`` per column (eq. 1), which fixes d.

    Returns
    -------
    numpy.ndarray
        ``s`` of shape (d,), all finite and > 0.
    """
    rs = check_relaxed_sensitivity(relaxed_sensitivity)
    if isinstance(scaling, str):
        if scaling == "relaxed-sensitivity":
            return rs.copy()
        if scaling == "isotropic":
            return np.full(rs.size, float(rs.max()))
        if scaling == "none":
            return np.ones(rs.size)
        allowed = ", ".join(repr(s) for s in SCALINGS)
        raise ParameterError(
            f"scaling must be one of {allowed} or a vector of positive divisors, got {scaling!r}"
        )
    return check_relaxed_sensitivity(scaling, rs.size, name="scaling divisors")


def scale_columns(X: np.ndarray, divisors: np.ndarray) -> np.ndarray:
    """Step 1a: ``X[, j] / s_j`` (a new array; ``X`` must already be validated, n × d)."""
    return X / divisors


def unscale_columns(X: np.ndarray, divisors: np.ndarray) -> np.ndarray:
    """The inverse of :func:`scale_columns`: back to measurement units, ``X[, j] · s_j``."""
    return X * divisors
