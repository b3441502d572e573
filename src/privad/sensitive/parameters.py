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

from privad.errors import DataError
from privad.sensitive.anomaly import METRICS
from privad.validation import check_array, check_choice, check_int, check_probability

__all__ = ["propose_parameters"]


def propose_parameters(
    X: Any,
    beta_fraction: float = 0.005,
    anomaly_share: float = 0.01,
    *,
    metric: str = "euclidean",
    min_beta: int = 1,
) -> tuple[int, float]:
    """Propose (β, r) for data ``X`` (reconstruction of Appendix A.2; see the module docstring).

    Parameters
    ----------
    X
        (n, d) data.
    beta_fraction
        β = max(min_beta, round(beta_fraction · n)); default 0.005, the β/n
        of Table 1.
    anomaly_share
        target share of records that are (β, r)-anomalies (default 0.01).
    metric
        ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.
    min_beta
        smallest β returned (≥ 1).

    Returns ``(beta, r)``. With D_i the distance from record i to its (β + 1)-th nearest record
    (itself first, duplicates one by one), record i is a (β, r)-anomaly iff D_i > r
    (B_x(i, r) ≤ β), exactly (:func:`privad.geometry.kth_neighbour_distance`). r is the
    smallest D_i such that at most ``anomaly_share``·n records have D_i > r; with ties the
    share can be lower. Not private (see the module docstring).
    """
    from privad import geometry

    X = check_array(X, "X")
    n = X.shape[0]
    beta_fraction = check_probability(beta_fraction, "beta_fraction", high_open=True)
    anomaly_share = check_probability(anomaly_share, "anomaly_share", high_open=True)
    metric = check_choice(metric, "metric", METRICS)
    min_beta = check_int(min_beta, "min_beta", minimum=1)
    beta = max(min_beta, int(round(beta_fraction * n)))
    if beta + 1 > n:
        raise DataError(
            f"need more than beta = {beta} records to propose r (got n = {n}); "
            "lower beta_fraction or min_beta"
        )
    d = np.sort(geometry.kth_neighbour_distance(X, beta + 1, metric=metric))
    allowed = math.floor(anomaly_share * n)  # records allowed above r
    r = float(d[n - 1 - allowed])
    return beta, r
