"""Choosing (β, r) from data: our reconstruction of the paper's missing Appendix A.2.

**This is a reconstruction, not the paper's protocol.** Appendix A.2 of the paper (how β and
r were chosen per dataset) is not in the text. What is known (``docs/papers.md``): it
follows Knorr and Ng's DB(p, D) outliers, with r = D and β ≈ (1 − p)·n, and β/n in Table 1
is close to 0.005 for four of the five datasets.

The neighbour count β
---------------------
A record is a DB(p, D) outlier when at most a share 1 − p of the records lie within D of
it. Given the share c of anomalies expected (PyOD's ``contamination``), we take 1 − p = c:
β = max(1, round(c·n)) (:func:`default_beta`). Read as a neighbour count, a record is an
anomaly when its r-ball holds no more records than there are anomalies in all, so a group
of anomalies, even all of them together, is still anomalous (a smaller β masks anomalies
that come in groups). β = k gives PyOD's KNN rule (below) with ``n_neighbors = k``; give
``beta`` to use another k. Without a target share the default stays the paper's
β = 0.005·n.

The radius r and PyOD's KNN
---------------------------
With D_i the distance from record i to its (β + 1)-th nearest record (itself first),
record i is a (β, r)-anomaly iff D_i > r, exactly. :func:`propose_parameters` takes r the
smallest D_i that leaves at most ⌊c·n⌋ records above it, so the exact (β, r)-labels are
the records whose β-th nearest *other* record is farthest: PyOD's
``KNN(n_neighbors=β, method="largest", contamination=c)`` labels, up to ties.

Privacy: the proposal of r is computed from the raw data and is **not** differentially
private. β from c and n reads nothing but the number of records n: under "add or remove
one record" n itself is not protected, so give a public n (the planned or published size
of the data), as the benchmark does; privad has no private count of n yet. The paper
notes β and r may be given by domain experts or found with DP methods; use this helper on
public or held-out data, or account for it separately, or choose r privately
(:func:`privad.sensitive.select_radius`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privad.base import check_contamination
from privad.errors import DataError, ParameterError
from privad.sensitive.anomaly import METRICS
from privad.validation import check_array, check_choice, check_int, check_probability

__all__ = [
    "DEFAULT_ANOMALY_SHARE",
    "TABLE1_BETA_FRACTION",
    "default_beta",
    "propose_parameters",
    "target_share",
]

DEFAULT_ANOMALY_SHARE = 0.01
"""The target share of :func:`propose_parameters` when no contamination is given."""

TABLE1_BETA_FRACTION = 0.005
"""β/n of the paper's Table 1: :func:`propose_parameters`' β when no target share is given."""


def default_beta(share: float, n_records: int) -> int:
    """β = max(1, round(c·n)) for a target share c of anomalies among n records.

    Knorr and Ng's DB(p, D) with 1 − p = c (the module docstring): a record is an anomaly
    when its r-ball holds at most as many records as the anomalies expected in all. Reads
    nothing but c and n.

    Parameters
    ----------
    share
        c, the expected share of anomalies, in [0, 1) (PyOD's ``contamination``).
    n_records
        n, the number of records (≥ 1): public input.

    Returns
    -------
    int
        β, at least 1.

    Examples
    --------
    >>> from privad.sensitive.parameters import default_beta
    >>> default_beta(0.05, 378), default_beta(0.35, 768), default_beta(0.001, 100)
    (19, 269, 1)
    """
    c = check_probability(share, "share", high_open=True)
    n = check_int(n_records, "n_records", minimum=1)
    return max(1, int(round(c * n)))


def propose_parameters(
    X: Any,
    beta_fraction: float | None = None,
    anomaly_share: float | None = None,
    *,
    contamination: float | None = None,
    beta: int | None = None,
    metric: str = "euclidean",
    min_beta: int = 1,
) -> tuple[int, float]:
    """Propose (β, r) for data ``X`` (reconstruction of Appendix A.2; see the module docstring).

    Knorr and Ng's DB(p, D) outliers with D = r and β = (1 − p)·n: β from the target share
    c (:func:`default_beta`), a share of n or given, and r read from the data so that about
    a share c of the records are (β, r)-anomalies, c being the expected contamination
    (PyOD's ``contamination``). The exact (β, r)-labels are then PyOD's
    ``KNN(n_neighbors=β, method="largest")`` labels at contamination c, up to ties.

    Parameters
    ----------
    X
        (n, d) data.
    beta_fraction
        β = max(min_beta, round(beta_fraction · n)), in [0, 1). Default: with a target
        share c (``contamination`` or ``anomaly_share``), β = max(min_beta, round(c·n))
        (:func:`default_beta`); without, 0.005, the β/n of Table 1. Ignored when ``beta``
        is given.
    anomaly_share
        target share of records that are (β, r)-anomalies, in [0, 1); default 0.01 when
        ``contamination`` is not given either.
    contamination
        the same target share under PyOD's name and range (0, 0.5]
        (:func:`privad.base.check_contamination`); give it or ``anomaly_share``, not both.
        Aim it at the share of anomalies you expect: the 1 % default makes r far too large
        when the data hold more anomalies than that.
    beta
        β itself, an integer ≥ 1 (PyOD's ``n_neighbors``); overrides ``beta_fraction``,
        the target share's β and ``min_beta``.
    metric
        ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.
    min_beta
        smallest β returned (≥ 1).

    Returns
    -------
    tuple of (int, float)
        ``(beta, r)``. With D_i the distance from record i to its (β + 1)-th nearest record
        (itself first, duplicates one by one), record i is a (β, r)-anomaly iff D_i > r
        (B_x(i, r) ≤ β), exactly (:func:`privad.geometry.kth_neighbour_distance`). r is
        the smallest D_i such that at most ⌊share·n⌋ records have D_i > r; with ties the
        share can be lower. Not private (see the module docstring;
        :mod:`privad.sensitive.selection` chooses r privately).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive import propose_parameters
    >>> X = np.r_[np.linspace(0.0, 1.0, 95), [3.0, 5.0, 7.0, 9.0, 11.0]][:, None]
    >>> beta, r = propose_parameters(X, contamination=0.05, beta=2)
    >>> beta, round(r, 4)
    (2, 0.0213)
    >>> beta, r = propose_parameters(X, contamination=0.05)  # β = round(0.05 · 100)
    >>> beta, round(r, 4)  # the five isolated records are the (5, r)-anomalies
    (5, 0.0532)
    """
    from privad import geometry

    X = check_array(X, "X")
    n = X.shape[0]
    share = target_share(anomaly_share, contamination)
    metric = check_choice(metric, "metric", METRICS)
    if beta is None:
        min_beta = check_int(min_beta, "min_beta", minimum=1)
        if beta_fraction is None and (anomaly_share, contamination) != (None, None):
            beta = max(min_beta, default_beta(share, n))
        else:
            fraction = TABLE1_BETA_FRACTION if beta_fraction is None else beta_fraction
            fraction = check_probability(fraction, "beta_fraction", high_open=True)
            beta = max(min_beta, int(round(fraction * n)))
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
