"""Relaxed sensitivity (Definition 2, eq. 1) and the guarantee it buys (Theorem 2).

Section 4.2 of the paper approximates the relaxed sensitivity of the identity function
``f_id`` per column from historical data ``D`` in which a share ``p_o`` (in percent) of the
records are outliers:

    q_max = 100 − p_o/2,   q_min = 100 − q_max = p_o/2,
    RS_j  = ρ_{q_max}(D[, j]) − ρ_{q_min}(D[, j])                        (eq. 1)

where ρ_q is the q-th percentile. The Laplace mechanism with scale ``RS_j/ε`` per column is
then ε-DP for records whose values lie in the implied non-outlier range 𝒩' and ε'-DP for
every record, with ε' = ε·GS_j/RS_j ≥ ε where GS_j is the width of the column's whole domain
(Theorem 2). Without a domain bound there is no finite ε' for outliers.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np

from privad.accounting.guarantee import Guarantee
from privad.accounting.notions import RELAXED_DP
from privad.errors import DataError, ParameterError, PrivacyWarning, PrivadWarning
from privad.validation import check_array, check_choice, check_epsilon

__all__ = [
    "GUARANTEE_UNITS",
    "PERCENTILE_METHODS",
    "check_p_o",
    "check_global_sensitivity",
    "check_relaxed_sensitivity",
    "column_sensitivities",
    "relaxed_guarantee",
    "relaxed_sensitivity",
    "stream_sensitivities",
]

PERCENTILE_METHODS: tuple[str, ...] = (
    "linear",
    "lower",
    "higher",
    "midpoint",
    "nearest",
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "median_unbiased",
    "normal_unbiased",
)
"""Percentile definitions accepted by :func:`relaxed_sensitivity` (those of ``numpy.percentile``).

The default ``"linear"`` is R's ``quantile(type = 7)``, the default of the R 3.3.1 the
paper's implementation used (section 7)."""

GUARANTEE_UNITS: tuple[str, ...] = ("record", "column")
"""What one neighbouring step changes in :func:`relaxed_guarantee`: a whole record (row of d
columns) or a single column value (the paper's per-column reading of Theorem 2)."""


def check_p_o(p_o: Any, name: str = "p_o") -> float:
    """The outlier percentage p_o of section 4.2: a finite number in the open interval (0, 100)."""
    if isinstance(p_o, bool) or not isinstance(p_o, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a percentage in (0, 100), got {p_o!r}")
    value = float(p_o)
    if not np.isfinite(value) or not 0.0 < value < 100.0:
        raise ParameterError(
            f"{name} must be a percentage in the open interval (0, 100) "
            f"(the share of outliers in percent, e.g. 10), got {p_o!r}"
        )
    return value


def relaxed_sensitivity(
    history: Any,
    p_o: Any,
    *,
    method: str = "linear",
    floor: Any = None,
    fallback: Any = None,
) -> np.ndarray:
    """Equation (1): the approximated relaxed sensitivity ``RS_j`` of ``f_id`` per column.

    Parameters
    ----------
    history:
        Historical data ``D`` (n × d, finite), one column per measured attribute. In the
        paper's experiments this is the data set itself; in a deployment it should be past
        data, so that the noise scale does not depend on the data it protects.
    p_o:
        The percentage of outliers in ``D`` (0 < p_o < 100), for example ``10`` for 10 %.
        ``q_max = 100 − p_o/2`` and ``q_min = p_o/2``.
    method:
        The percentile definition, one of :data:`PERCENTILE_METHODS`; default ``"linear"``
        (R type 7).
    floor:
        None (default), or a lower bound per column (a number for every column, or d
        numbers ≥ 0, measurement units): ``RS_j = max(eq. 1, floor_j)``. Any RS_j at least
        the width of the non-outlier range keeps Theorem 2's ε for non-outliers, and a floor
        caps the outliers' ε' = ε·GS_j/RS_j at ε·GS_j/floor_j; the price is more noise in
        the columns it raises.
    fallback:
        None (default), or RS_j for the columns whose value is still 0 after the floor (a
        number or d numbers > 0; e.g. the domain widths GS_j, which make those columns
        ordinary ε-DP). They are named in a :class:`~privad.errors.PrivadWarning`.

    Returns
    -------
    numpy.ndarray
        ``RS`` of shape (d,), ``RS_j = ρ_{q_max}(D[, j]) − ρ_{q_min}(D[, j]) > 0`` (with the
        floor and the fallback applied).

    Raises
    ------
    DataError
        If ``history`` is not a finite 2-D array, or, without ``fallback``, a column has
        ``RS_j = 0`` (its central ``100 − p_o`` percent is constant and no floor raises it),
        which leaves no noise scale to use.
    ParameterError
        If ``p_o`` is not in (0, 100), ``method`` is unknown, or ``floor`` or ``fallback``
        is not a number or d numbers (≥ 0 and > 0 respectively).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import relaxed_sensitivity
    >>> D = np.column_stack([np.arange(11.0), np.zeros(11)])  # column 1 is constant
    >>> relaxed_sensitivity(D, 20, floor=0.5).tolist()
    [8.0, 0.5]
    """
    D = check_array(history, "history")
    p_o = check_p_o(p_o)
    method = check_choice(method, "method", PERCENTILE_METHODS)
    q_max = 100.0 - p_o / 2.0
    q_min = 100.0 - q_max
    hi, lo = np.percentile(D, [q_max, q_min], axis=0, method=method)
    rs = np.asarray(hi - lo, dtype=np.float64)
    if floor is not None:
        rs = np.maximum(rs, _per_column(floor, rs.size, "floor", minimum=0.0))
    bad = np.flatnonzero(~(rs > 0))
    if bad.size and fallback is None:
        raise DataError(
            f"history column(s) {bad.tolist()} have relaxed sensitivity 0: the values between "
            f"the {q_min:g}th and {q_max:g}th percentiles are constant, so eq. (1) gives no "
            "noise scale; give a floor or a fallback (e.g. the domain widths), drop constant "
            "columns or give RS explicitly"
        )
    if bad.size:
        rs[bad] = _per_column(fallback, rs.size, "fallback", minimum=None)[bad]
        warnings.warn(
            f"history column(s) {bad.tolist()} have relaxed sensitivity 0 by eq. (1) (constant "
            f"between the {q_min:g}th and {q_max:g}th percentiles); they are perturbed with the "
            f"fallback RS {rs[bad].tolist()} instead",
            PrivadWarning,
            stacklevel=2,
        )
    return rs


def _per_column(value: Any, d: int, name: str, *, minimum: float | None) -> np.ndarray:
    """``value`` as d finite numbers, each ≥ ``minimum`` (None: each > 0)."""
    if minimum is None:
        return check_relaxed_sensitivity(value, d, name=name)
    try:
        arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (d,))
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number or {d} numbers, got {value!r}") from None
    if isinstance(value, bool) or not (np.isfinite(arr).all() and (arr >= minimum).all()):
        raise ParameterError(f"{name} must be finite and >= {minimum:g}, got {value!r}")
    return arr


def stream_sensitivities(
    first_window: Any,
    p_o: Any,
    *,
    given: Any = None,
    history: Any = None,
    name: str = "relaxed_sensitivity",
) -> np.ndarray:
    """The relaxed sensitivities a sensor perturbs a stream with: the noise policy of a stream.

    In order: ``given`` (public knowledge, checked by :func:`check_relaxed_sensitivity`);
    else eq. (1) on ``history`` (past data, :func:`relaxed_sensitivity`); else eq. (1) on
    the stream's first window, as in the paper's experiments (section 7), with a
    :class:`~privad.errors.PrivacyWarning`: the noise scale then depends on the data it
    protects, so a deployment should give past data or public values.

    Parameters
    ----------
    first_window:
        The first window's records (n × d), used only when neither ``given`` nor
        ``history`` is.
    p_o:
        The outlier percentage of eq. (1), in (0, 100).
    given:
        RS_j per column (or one value for every column), or None.
    history:
        Historical records with the stream's columns, or None.
    name:
        What ``given`` is called in an error (the CLI passes its option's name).

    Returns
    -------
    numpy.ndarray
        ``RS`` of shape (d,).

    Raises
    ------
    ParameterError
        If both ``given`` and ``history`` are given, or ``p_o`` is not in (0, 100).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import stream_sensitivities
    >>> first = np.column_stack([np.arange(11.0), np.arange(11.0) * 2])
    >>> stream_sensitivities(first, 20, given=2.0).tolist()  # public values win
    [2.0, 2.0]
    >>> stream_sensitivities(first, 20, history=first).tolist()  # eq. (1) on past data
    [8.0, 16.0]
    """
    if given is not None and history is not None:
        raise ParameterError("give the relaxed sensitivities or a history, not both")
    p_o = check_p_o(p_o)
    window = check_array(first_window, "first_window")
    if given is not None:
        return check_relaxed_sensitivity(given, window.shape[1], name=name)
    if history is not None:
        return relaxed_sensitivity(history, p_o)
    warnings.warn(
        "no history: the relaxed sensitivities are estimated from the first window "
        f"({window.shape[0]} records), so the noise scale depends on the data it protects "
        "(as in the paper's experiments)",
        PrivacyWarning,
        stacklevel=2,
    )
    return relaxed_sensitivity(window, p_o)


def check_relaxed_sensitivity(
    relaxed_sensitivity: Any, n_columns: int | None = None, name: str = "relaxed_sensitivity"
) -> np.ndarray:
    """A vector of per-column relaxed sensitivities: finite, > 0, of length ``n_columns``.

    A scalar is accepted and broadcast when ``n_columns`` is given.
    """
    try:
        arr = np.asarray(relaxed_sensitivity)
    except (TypeError, ValueError):
        arr = np.asarray(None)
    if arr.dtype.kind not in "iuf":
        raise ParameterError(
            f"{name} must be a positive number or a vector of them, got {relaxed_sensitivity!r}"
        )
    arr = arr.astype(np.float64)
    if arr.ndim == 0:
        if n_columns is None:
            arr = arr.reshape(1)
        else:
            arr = np.full(n_columns, float(arr))
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(
            f"{name} must be a non-empty 1-D vector (one value per column), got shape {arr.shape}"
        )
    if n_columns is not None and arr.size != n_columns:
        raise ParameterError(
            f"{name} has {arr.size} value(s) but the data has {n_columns} column(s)"
        )
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        raise ParameterError(f"{name} must be finite and > 0 in every column, got {arr.tolist()}")
    return arr


def column_sensitivities(relaxed_sensitivity: Any, n_columns: int, source: str) -> np.ndarray:
    """RS given for a table of ``n_columns`` columns: one value for every column, or one per
    column (:func:`check_relaxed_sensitivity`); another count is a
    :class:`~privad.errors.DataError` naming ``source``.

    Examples
    --------
    >>> from privad.relaxed.sensitivity import column_sensitivities
    >>> column_sensitivities(2.0, 3, "archive").tolist()
    [2.0, 2.0, 2.0]
    """
    rs = check_relaxed_sensitivity(relaxed_sensitivity)
    if rs.size == 1:
        return np.full(n_columns, rs[0])
    if rs.size != n_columns:
        raise DataError(
            f"{source} has {n_columns} column(s) but {rs.size} relaxed sensitivities were given"
        )
    return rs


def check_global_sensitivity(global_sensitivity: Any, relaxed_sensitivity: Any) -> np.ndarray:
    """``GS_j`` per column, checked against ``RS_j``: the non-outlier range (width RS_j) lies
    inside the domain (width GS_j), so GS_j >= RS_j; a smaller GS_j (a mistyped domain width)
    would state a guarantee for outliers that is not the true one, and is refused."""
    rs = check_relaxed_sensitivity(relaxed_sensitivity)
    gs = check_relaxed_sensitivity(global_sensitivity, rs.size, name="global_sensitivity")
    small = np.flatnonzero(gs < rs)
    if small.size:
        j = int(small[0])
        raise ParameterError(
            f"global_sensitivity {gs[j]!r} of column {j} is smaller than its relaxed "
            f"sensitivity {rs[j]!r}: the domain's width must be at least the non-outlier "
            "range's (GS_j >= RS_j); check the domain width"
        )
    return gs


def relaxed_guarantee(
    epsilon: Any,
    relaxed_sensitivity: Any,
    global_sensitivity: Any,
    *,
    unit: Literal["record", "column"] = "record",
) -> Guarantee:
    """Theorem 2 as data: ε for non-outliers, ε' = ε·GS/RS for outliers.

    The sensor adds ``Lap(RS_j/ε)`` to column j. For two values of column j that both lie
    in the non-outlier range 𝒩' (width ``RS_j``) the privacy loss is at most ε; for any two
    values of the domain (width ``GS_j``) it is at most ``ε·GS_j/RS_j``. ``GS_j < RS_j`` is
    refused (:func:`check_global_sensitivity`): the non-outlier range lies in the domain.

    Parameters
    ----------
    epsilon:
        The privacy parameter ε of the sensor (> 0).
    relaxed_sensitivity:
        ``RS_j`` per column (from :func:`relaxed_sensitivity`), in measurement units.
    global_sensitivity:
        ``GS_j`` per column: the width of the column's physically possible domain
        (``max − min``), in measurement units, or a scalar for every column. Required: an
        unbounded domain leaves outliers without any finite guarantee.
    unit:
        ``"record"`` (default): neighbouring data sets differ in one whole record (one row,
        all d columns). Each column is an independent Laplace mechanism, so by sequential
        composition the record-level guarantee is ``Σ_j ε = d·ε`` for non-outliers and
        ``Σ_j ε·GS_j/RS_j`` for outliers. ``"column"``: the paper's per-column reading
        ("sensitivity and perturbation are calculated per column", section 4.1):
        neighbours differ in one value of one column; ε for non-outliers and
        ``max_j ε·GS_j/RS_j`` for outliers.

    Examples
    --------
    >>> from privad.relaxed import relaxed_guarantee
    >>> g = relaxed_guarantee(0.5, [2.0, 4.0], [20.0, 40.0])  # per record: d·ε, Σ_j ε·GS_j/RS_j
    >>> g.epsilon, g.epsilon_outlier
    (1.0, 10.0)
    >>> relaxed_guarantee(0.5, [2.0, 4.0], [20.0, 40.0], unit="column").epsilon_outlier
    5.0
    """
    epsilon = check_epsilon(epsilon)
    rs = check_relaxed_sensitivity(relaxed_sensitivity)
    gs = check_global_sensitivity(global_sensitivity, rs)
    unit = check_choice(unit, "unit", GUARANTEE_UNITS)
    eps_out_col = epsilon * np.maximum(gs / rs, 1.0)
    d = rs.size
    if unit == "record":
        eps_in = epsilon * d
        eps_out = float(eps_out_col.sum())
        neighbouring = (
            "replace one record (one row of all d columns); non-outliers: both records lie in "
            "the non-outlier range implied by the relaxed sensitivity"
        )
    else:
        eps_in = epsilon
        eps_out = float(eps_out_col.max())
        neighbouring = (
            "change one value of one column; non-outliers: both values lie in the column's "
            "non-outlier range implied by the relaxed sensitivity"
        )
    description = (
        f"relaxed-sensitivity Laplace mechanism (Theorem 2), {d} column(s), per-column noise "
        f"Lap(RS_j/ε) with ε={epsilon!r}, RS={rs.tolist()}, GS={gs.tolist()}; guarantee per "
        f"{unit}"
    )
    return Guarantee(
        notion=RELAXED_DP,
        epsilon=eps_in,
        neighbouring=neighbouring,
        epsilon_outlier=max(eps_out, eps_in),
        description=description,
    )
