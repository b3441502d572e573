"""Choosing (β, r) from data: our reconstruction of the paper's missing Appendix A.2.

**This is a reconstruction, not the paper's protocol.** Appendix A.2 of the paper (how β and
r were chosen per dataset) is not in the text. What is known (``docs/papers.md``): it
follows Knorr and Ng's DB(p, D) outliers, with r = D and β ≈ (1 − p)·n, and β/n in Table 1
is close to 0.005 for four of the five datasets. So :func:`propose_parameters` fixes β as a
fraction of n and picks r as a quantile of the distance to the (β + 1)-th nearest record
(the record itself counted first), which makes a chosen small share of the records
(β, r)-anomalies.

Privacy: the proposal is computed from the raw data and is **not** differentially private.
The paper notes β and r may be given by domain experts or found with DP methods; use this
helper on public or held-out data, or account for it separately.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privad.base import check_contamination
from privad.errors import DataError, ParameterError
from privad.sensitive.anomaly import METRICS
from privad.validation import check_array, check_choice, check_int, check_probability

__all__ = ["DEFAULT_ANOMALY_SHARE", "propose_parameters", "target_share"]

DEFAULT_ANOMALY_SHARE = 0.01
"""The target share of :func:`propose_parameters` when no contamination is given."""


def propose_parameters(
    X: Any,
    beta_fraction: float = 0.005,
    anomaly_share: float | None = None,
    *,
    contamination: float | None = None,
    beta: int | None = None,
    metric: str = "euclidean",
    min_beta: int = 1,
) -> tuple[int, float]:
    """Propose (β, r) for data ``X`` (reconstruction of Appendix A.2; see the module docstring).

    Knorr and Ng's DB(p, D) outliers with D = r and β = (1 − p)·n: β is a share of n (or
    given), and r is read from the data so that about a share c of the records are
    (β, r)-anomalies, c being the expected contamination (PyOD's ``contamination``).

    Parameters
    ----------
    X
        (n, d) data.
    beta_fraction
        β = max(min_beta, round(beta_fraction · n)); default 0.005, the β/n
        of Table 1. Ignored when ``beta`` is given.
    anomaly_share
        target share of records that are (β, r)-anomalies, in [0, 1); default 0.01 when
        ``contamination`` is not given either.
    contamination
        the same target share under PyOD's name and range (0, 0.5]
        (:func:`privad.base.check_contamination`); give it or ``anomaly_share``, not both.
        Aim it at the share of anomalies you expect: the 1 % default makes r far too large
        when the data hold more anomalies than that.
    beta
        β itself, an integer ≥ 1 (for example PyOD's ``n_neighbors``); overrides
        ``beta_fraction`` and ``min_beta``.
    metric
        ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.
    min_beta
        smallest β returned (≥ 1).

    Returns ``(beta, r)``. With D_i the distance from record i to its (β + 1)-th nearest record
    (itself first, duplicates one by one), record i is a (β, r)-anomaly iff D_i > r
    (B_x(i, r) ≤ β), exactly (:func:`privad.geometry.kth_neighbour_distance`). r is the
    smallest D_i such that at most share·n records have D_i > r; with ties the
    share can be lower. Not private (see the module docstring; :mod:`privad.sensitive.selection`
    chooses r privately).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive import propose_parameters
    >>> X = np.r_[np.linspace(0.0, 1.0, 95), [3.0, 5.0, 7.0, 9.0, 11.0]][:, None]
    >>> beta, r = propose_parameters(X, contamination=0.05, beta=2)
    >>> beta, round(r, 4)
    (2, 0.0213)
    """
    from privad import geometry

    X = check_array(X, "X")
    n = X.shape[0]
    share = target_share(anomaly_share, contamination)
    metric = check_choice(metric, "metric", METRICS)
    if beta is None:
        beta_fraction = check_probability(beta_fraction, "beta_fraction", high_open=True)
        min_beta = check_int(min_beta, "min_beta", minimum=1)
        beta = max(min_beta, int(round(beta_fraction * n)))
    else:
        beta = check_int(beta, "beta", minimum=1)
    if beta + 1 > n:
        raise DataError(
            f"need more than beta = {beta} records to propose r (got n = {n}); "
            "lower beta (or beta_fraction, min_beta)"
        )
    d = np.sort(geometry.kth_neighbour_distance(X, beta + 1, metric=metric))
    allowed = math.floor(share * n)  # records allowed above r
    r = float(d[n - 1 - allowed])
    return beta, r


def target_share(anomaly_share: float | None, contamination: float | None) -> float:
    """The target share of (β, r)-anomalies from ``anomaly_share`` or ``contamination``
    (give one; neither: :data:`DEFAULT_ANOMALY_SHARE`).

    Examples
    --------
    >>> from privad.sensitive.parameters import target_share
    >>> target_share(None, 0.05), target_share(0.2, None), target_share(None, None)
    (0.05, 0.2, 0.01)
    """
    if contamination is not None:
        if anomaly_share is not None:
            raise ParameterError(
                "give the target share once: anomaly_share or contamination, not both"
            )
        return check_contamination(contamination)
    if anomaly_share is None:
        return DEFAULT_ANOMALY_SHARE
    return check_probability(anomaly_share, "anomaly_share", high_open=True)
