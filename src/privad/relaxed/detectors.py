"""Outlier detectors ``f_outlier`` (section 5): anything that maps data to outlier indices.

``f_outlier: 𝒯 → {1, …, |𝒯|}`` returns the row numbers of the outliers. The paper uses
DBSCAN (fpc package in R) with the same ``eps`` and ``minPts`` on 𝒯 and 𝒯' and calls the
noise points outliers (section 7). Any callable with the :class:`OutlierDetector` signature
can be plugged in, for example :class:`BallAnomalyDetector` ((β, r)-anomalies through
:mod:`privad.geometry`), or :class:`ScoringOutlierDetector`, which turns any detector that
scores (PyOD's convention, :mod:`privad.detectors`: ``IForest()``, ``KNN()``, a wrapped
scikit-learn detector) into ``f_outlier`` by flagging the top p_o percent of its scores.

:class:`DBSCANDetector` is exact DBSCAN. For two columns its default backend is the ``dbscan``
package (the exact parallel grid DBSCAN of Wang, Gu and Shun, SIGMOD 2020): on 100,000 2-D
points it takes milliseconds and a few hundred MB where scikit-learn's neighbourhood-list
DBSCAN takes seconds and gigabytes; it does not materialise neighbourhoods, so it stays
within memory for any noise level. Otherwise the ``"geometry"`` engine (capped ball counts of
:mod:`privad.geometry`, O(n) memory) is used. scikit-learn's DBSCAN is the reference: all
engines return the same noise set (tested).

The DBSCAN parameters of the paper's experiment are not published. **Reconstruction**:
:func:`dbscan_parameters` fixes them from historical data in the scaled space of step 1a
(see its docstring); both are ordinary parameters of :class:`DBSCANDetector`.

:class:`AdaptiveDBSCANDetector` (option d, the default of
:func:`~privad.relaxed.pipeline.run_pipeline`) holds a small family of such calibrations,
one per ``minPts`` share (:data:`DBSCAN_SHARES`, :func:`dbscan_candidates`). Every member
labels about p_o percent of the unperturbed history as noise, so all of them define the same
outliers O on unperturbed data; the analyst uses the member whose noise share on the data
it is given (𝒯') is closest to p_o. The choice is post-processing of 𝒯' by its holder
(no privacy cost), uses only the public p_o of eq. (1) (assumption 2 of section 4.2: the
outlier percentage is known), and keeps section 7's rule that the same parameters are used
on 𝒯 and 𝒯' (the pipeline evaluates O with the member chosen on 𝒯'). Why: one minPts share
cannot serve every noise level: with ``minPts`` = 0.5 % of n and the radius calibrated on 𝒯,
DBSCAN labels all of 𝒯' as noise at ε = 0.1 for the paper's separation 50 (the perturbed
core is too sparse for that small radius), while larger shares make the perturbed outlier
layer a cluster at ε = 1.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from privad.errors import ParameterError
from privad.validation import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_probability,
)

__all__ = [
    "DBSCAN_BACKENDS",
    "DBSCAN_SHARES",
    "AdaptiveDBSCANDetector",
    "BallAnomalyDetector",
    "DBSCANDetector",
    "OutlierDetector",
    "ScoringOutlierDetector",
    "as_detector",
    "dbscan_candidates",
    "dbscan_noise",
    "dbscan_parameters",
    "has_dbscan_package",
    "laplace_scores",
    "projection_scores",
]

DBSCAN_SHARES: tuple[float, ...] = (0.005, 0.01, 0.02, 0.05)
"""**Reconstruction**: the ``minPts`` shares of n (0.5 %, 1 %, 2 %, 5 %) whose calibrations
form the family of :class:`AdaptiveDBSCANDetector`; the first is the single calibration
of :func:`dbscan_parameters` (its default ``min_samples_share``)."""

DBSCAN_BACKENDS: tuple[str, ...] = ("auto", "dbscan", "geometry", "sklearn")
"""Exact DBSCAN engines, all returning the same noise set:

* ``"dbscan"``: the Wang–Gu–Shun package, fastest; two columns only (see below);
* ``"geometry"``: two capped ball-count passes of :func:`privad.geometry.ball_counts`
  (core points: ``B(i, eps) >= min_samples``; noise: non-core with no core point within
  eps); memory stays O(n) for any eps;
* ``"sklearn"``: scikit-learn's DBSCAN, the reference (its neighbourhood lists need memory
  proportional to the number of pairs within eps: gigabytes on dense data);
* ``"auto"``: ``"dbscan"`` for two columns when it is installed, else ``"geometry"``.

The package accepts 2 to 20 columns, but in our checks its 1.0.0 wheel missed core points
in 3 to 5 columns (points with ``min_samples`` neighbours well inside eps labelled noise),
while in two columns it matched exact DBSCAN on every test (also with ties at distance
exactly eps). privad therefore uses it for two columns only."""

_PACKAGE_DIMS = (2, 2)


@runtime_checkable
class OutlierDetector(Protocol):
    """``f_outlier``: given data (n × d float64), return the outliers' row indices."""

    def __call__(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - protocol
        ...


def has_dbscan_package() -> bool:
    """Whether the ``dbscan`` package (exact grid DBSCAN) is importable."""
    return importlib.util.find_spec("dbscan") is not None


def dbscan_noise(
    X: Any,
    eps: float,
    min_samples: int,
    *,
    backend: str = "auto",
    geometry_engine: str = "auto",
) -> np.ndarray:
    """The noise points of exact DBSCAN (Ester et al. 1996) as sorted int64 row indices.

    A point is a core point if at least ``min_samples`` points (itself included) lie within
    distance ``<= eps``; noise is every point that is neither core nor within ``eps`` of a
    core point. This set does not depend on the order of traversal, so every exact
    engine of :data:`DBSCAN_BACKENDS` returns the same noise set.

    ``geometry_engine`` is the ``engine`` of :func:`privad.geometry.ball_counts` for the
    ``"geometry"`` backend (``"auto"``, ``"numba"`` or ``"scipy"``).
    """
    X = check_array(X, "X")
    eps = check_positive(eps, "eps")
    min_samples = check_int(min_samples, "min_samples", minimum=1)
    backend = check_choice(backend, "backend", DBSCAN_BACKENDS)
    d = X.shape[1]
    fits = _PACKAGE_DIMS[0] <= d <= _PACKAGE_DIMS[1]
    if backend == "dbscan":
        if not fits:
            raise ParameterError(
                f"backend='dbscan' is used for 2 columns only (the package is not exact in "
                f"more), got {d}; use backend='geometry' or 'auto'"
            )
        if not has_dbscan_package():
            raise ParameterError(
                "backend='dbscan' needs the 'dbscan' package (pip install dbscan); "
                "use backend='geometry' or 'auto'"
            )
    if backend == "auto":
        backend = "dbscan" if fits and has_dbscan_package() else "geometry"
    if backend == "dbscan":
        from dbscan import DBSCAN as grid_dbscan

        labels, _core = grid_dbscan(np.ascontiguousarray(X), eps, min_samples=min_samples)
        return np.flatnonzero(labels == -1).astype(np.int64)
    if backend == "sklearn":
        from sklearn.cluster import DBSCAN

        labels = DBSCAN(eps=eps, min_samples=min_samples).fit(X).labels_
        return np.flatnonzero(labels == -1).astype(np.int64)
    from privad.geometry import ball_counts

    core = ball_counts(X, eps, cap=min_samples, engine=geometry_engine) >= min_samples
    candidates = np.flatnonzero(~core)
    if candidates.size == 0:
        return candidates.astype(np.int64)
    if not core.any():
        return candidates.astype(np.int64)
    near_core = ball_counts(X[core], eps, queries=X[candidates], cap=1, engine=geometry_engine) >= 1
    return candidates[~near_core].astype(np.int64)


@dataclass(frozen=True)
class DBSCANDetector:
    """``f_outlier`` = the noise points of exact DBSCAN with fixed ``eps`` and ``min_samples``.

    The same object (the same parameters) is used on 𝒯 and 𝒯' (section 7). Parameters are in
    the units of the data it is called on (the scaled space of step 1a in the protocol).

    Attributes
    ----------
    eps
        neighbourhood radius (> 0), distances ``<= eps`` count.
    min_samples
        ``minPts``, the point itself included (>= 1).
    backend
        one of :data:`DBSCAN_BACKENDS`.
    geometry_engine
        ball-count engine of the ``"geometry"`` backend.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import DBSCANDetector
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1], [5.0, 5.0]])
    >>> DBSCANDetector(eps=0.2, min_samples=3)(X).tolist()  # the noise points
    [4]
    """

    eps: float
    min_samples: int
    backend: str = "auto"
    geometry_engine: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", check_positive(self.eps, "eps"))
        object.__setattr__(
            self, "min_samples", check_int(self.min_samples, "min_samples", minimum=1)
        )
        object.__setattr__(self, "backend", check_choice(self.backend, "backend", DBSCAN_BACKENDS))
        object.__setattr__(
            self, "geometry_engine", _check_engine(self.geometry_engine, "geometry_engine")
        )

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """The outliers of X: DBSCAN's noise points (sorted int64 row indices)."""
        return dbscan_noise(
            X,
            self.eps,
            self.min_samples,
            backend=self.backend,
            geometry_engine=self.geometry_engine,
        )


@dataclass(frozen=True)
class BallAnomalyDetector:
    """``f_outlier`` = the (β, r)-anomalies: rows with at most β records within distance r.

    Definition 2.2 of the sensitive-privacy paper: i is an anomaly iff ``B(i, r) <= β``,
    where the ball counts i itself. Counting uses :func:`privad.geometry.ball_counts`
    (``engine`` is passed on).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import BallAnomalyDetector
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1], [5.0, 5.0]])
    >>> BallAnomalyDetector(beta=1, r=0.2)(X).tolist()  # B(i, 0.2) <= 1: alone in its ball
    [4]
    """

    beta: int
    r: float
    engine: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "beta", check_int(self.beta, "beta", minimum=0))
        object.__setattr__(self, "r", check_positive(self.r, "r"))
        object.__setattr__(self, "engine", _check_engine(self.engine, "engine"))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """The (β, r)-anomalies of X (sorted int64 row indices)."""
        from privad.geometry import ball_counts

        X = check_array(X, "X")
        # exact up to β + 1, which is all the test needs
        counts = np.asarray(ball_counts(X, self.r, cap=self.beta + 1, engine=self.engine))
        return np.flatnonzero(counts <= self.beta).astype(np.int64)


class ScoringOutlierDetector:
    """``f_outlier`` from a detector that scores: the records above its (100 − p_o)th percentile.

    Called on X (the analyst's 𝒯', or a history), it fits a clone of ``detector`` on X
    (:func:`privad.detectors.fit_clone`: every ``random_state`` drawn from ``rng``), scores
    every row with ``decision_function`` (higher = more anomalous) and returns the rows whose
    score exceeds θ = the (100 − p_o)th percentile of those scores: the share p_o of
    eq. (1), which the scheme assumes known (assumption 2 of section 4.2), as PyOD's
    ``contamination = p_o/100`` sets its ``threshold_``. Each call is a run of its own on
    the data it is given, like DBSCAN's; the last call's fitted clone, scores and θ are kept
    in :attr:`fitted`, :attr:`scores` and :attr:`threshold`. A detector's own
    ``contamination`` and ``threshold_`` are not used.

    Parameters
    ----------
    detector:
        Follows :mod:`privad.detectors`' protocol (``fit``, ``decision_function``); not
        modified.
    p_o:
        The outlier percentage (0 < p_o < 100).
    rng:
        Seeds the clones' ``random_state`` (:class:`privad.noise.Randomness`, a seed or
        ``None``).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import ScoringOutlierDetector
    >>> from privad.detectors import SklearnOutlierAdapter
    >>> from sklearn.neighbors import LocalOutlierFactor
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1], [5.0, 5.0]])
    >>> lof = SklearnOutlierAdapter(LocalOutlierFactor(n_neighbors=2, novelty=True))
    >>> f = ScoringOutlierDetector(lof, p_o=20)
    >>> f(X).tolist()  # the rows scored above the 80th percentile
    [4]
    """

    def __init__(self, detector: Any, p_o: Any, rng: Any = None) -> None:
        from privad.detectors import check_detector  # scikit-learn only when used
        from privad.noise import as_randomness
        from privad.relaxed.sensitivity import check_p_o

        self.detector = check_detector(detector)
        self.p_o = check_p_o(p_o)
        self._rng = as_randomness(rng)
        self.fitted: Any = None
        self.scores: np.ndarray | None = None
        self.threshold: float | None = None

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """The outliers of X: rows scored above θ (sorted int64 row indices)."""
        from privad.detectors import detector_scores, fit_clone

        X = check_array(X, "X")
        fitted = fit_clone(self.detector, X, self._rng, "the records it is run on")
        scores = detector_scores(fitted, X)
        theta = float(np.percentile(scores, 100.0 - self.p_o))
        self.fitted, self.scores, self.threshold = fitted, scores, theta
        return np.flatnonzero(scores > theta).astype(np.int64)

    def __repr__(self) -> str:
        return f"ScoringOutlierDetector({self.detector!r}, p_o={self.p_o:g})"


def laplace_scores(perturbed: Any, noise_scale: Any) -> np.ndarray:
    """A noise-aware outlier score of each row of 𝒯': its Laplace distance to the median.

    ``score_i = Σ_j |𝒯'[i, j] − med_j| / b_j`` with ``med_j`` the median of column j of 𝒯'
    and ``b_j`` the sensor's Laplace scale of column j (public, sent with 𝒯' in
    :class:`~privad.relaxed.messages.SensorToAnalyst`). It is the negative log-likelihood
    (up to a constant) of the perturbed record under the hypothesis that the record sits at
    the typical value of every column and the sensor added ``Lap(b_j)`` per column
    (Definition 3): each column is weighed by how much noise it carries, so a column whose
    perturbation drowns the data counts as little as its noise allows. The median is robust
    to the outliers and to the noise's heavy tails, where the mean and Euclidean distance of
    the step-4 centre distance let one large noise draw dominate a record's score.

    It reads only 𝒯' and the public noise scales, so it is post-processing (no privacy
    cost). ``docs/relaxed.md`` compares it with the centre distance on twelve public sets.

    Parameters
    ----------
    perturbed:
        𝒯' (n × d), in the scaled space of step 1a.
    noise_scale:
        ``b_j`` (d values > 0), or one value for every column.

    Returns
    -------
    numpy.ndarray
        n float64 scores, higher = more anomalous.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import laplace_scores
    >>> T = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [5.0, 4.0], [0.0, 0.0]])
    >>> laplace_scores(T, [1.0, 2.0]).tolist()  # medians (0, 0)
    [0.0, 1.0, 1.0, 7.0, 0.0]
    """
    T = check_array(perturbed, "perturbed")
    b = _check_noise_scale(noise_scale, T.shape[1])
    return np.asarray(np.abs(T - np.median(T, axis=0)) @ (1.0 / b), dtype=np.float64)


def projection_scores(perturbed: Any, noise_scale: Any, p_o: Any = 10.0) -> np.ndarray:
    """A noise-aware outlier score of each row of 𝒯': Laplace distance and skewed projections.

    The mean rank of two post-processings of 𝒯' that use the public noise scales ``b_j``:

    ``score_i = (rank_i(L) + rank_i(S)) / (2 n)``,

    with ``L`` = :func:`laplace_scores` (distance to the column medians, two-sided, column
    by column) and ``S`` a one-sided projection score (ranks: scipy's ``rankdata``, ties
    averaged; the score lies in (0, 1], higher = more anomalous). ``S`` is computed from the
    sample covariance Σ' of 𝒯' and its eigenpairs (λ_k, v_k):

    1. the noise adds ``diag(2 b_j²)`` to the data's covariance (independent Laplace noise,
       Definition 3), so along v_k it adds ``ν_k = Σ_j v_kj² · 2 b_j²``; a component is kept
       when ``λ_k > ν_k (1 + √(d/n))²``, above the largest eigenvalue that pure noise of that
       variance reaches in a sample of n records (the Marchenko–Pastur edge);
    2. on each kept component, ``p_ik = (𝒯'[i] − med) · v_k`` (med: the column medians),
       its quantile skewness at the percentiles of eq. (1),
       ``g_k = (ρ_{100−p_o/2} + ρ_{p_o/2} − 2 ρ_50) / (ρ_{100−p_o/2} − ρ_{p_o/2})`` of
       ``p_k``, and its signal share ``s_k = (λ_k − ν_k) / λ_k``;
    3. ``S_i = Σ_k s_k · g_k · p_ik / √λ_k``.

    Why: the Laplace noise is symmetric, so a skewed projection owes its skew to the data;
    a minority share c < 1/2 of records shifted by δ along a direction skews it towards δ
    (third cumulant c(1 − c)(1 − 2c)δ³), so ``g_k`` gives the side the outliers are on and
    how clearly. A signed projection averages the noise of the columns it combines, where
    :func:`laplace_scores` adds up their absolute values; ``L`` keeps the outliers that are
    far out in a few columns on either side. With no component
    above the noise (small ε), ``S`` is constant and the ranking is that of ``L``.

    It reads only 𝒯', the public noise scales and the public p_o (the outlier percentage of
    eq. 1, assumption 2 of section 4.2), so it is post-processing of the release (no
    privacy cost). ``docs/relaxed.md`` measures it on twelve public sets.

    Parameters
    ----------
    perturbed:
        𝒯' (n × d, n ≥ 2), in the scaled space of step 1a.
    noise_scale:
        ``b_j`` (d values > 0), or one value for every column.
    p_o:
        The outlier percentage (0 < p_o < 100) whose percentiles measure the skew.

    Returns
    -------
    numpy.ndarray
        n float64 scores in (0, 1], higher = more anomalous.

    Examples
    --------
    >>> from privad.relaxed.detectors import projection_scores
    >>> T = [[0.0], [1.0], [2.0], [4.0], [10.0]]  # one column: L and S both from the median 2
    >>> projection_scores(T, 0.5, p_o=50).tolist()  # L ranks 3.5 2 1 3.5 5, S ranks 1 to 5
    [0.45, 0.4, 0.4, 0.75, 1.0]
    """
    from scipy.stats import rankdata

    from privad.relaxed.sensitivity import check_p_o

    T = check_array(perturbed, "perturbed", min_rows=2)
    b = _check_noise_scale(noise_scale, T.shape[1])
    n = T.shape[0]
    both = rankdata(laplace_scores(T, b)) + rankdata(_skew_projection(T, b, check_p_o(p_o)))
    return np.asarray(both / (2.0 * n), dtype=np.float64)


def _skew_projection(T: np.ndarray, b: np.ndarray, p_o: float) -> np.ndarray:
    """``S`` of :func:`projection_scores` (steps 1 to 3), n values."""
    n, d = T.shape
    lam, V = np.linalg.eigh(np.atleast_2d(np.cov(T, rowvar=False)))
    noise = (V**2).T @ (2.0 * b**2)
    keep = lam > noise * (1.0 + math.sqrt(d / n)) ** 2
    P = (T - np.median(T, axis=0)) @ V[:, keep]
    low, mid, high = np.percentile(P, [p_o / 2.0, 50.0, 100.0 - p_o / 2.0], axis=0)
    spread = high - low
    skew = np.divide(high + low - 2.0 * mid, spread, out=np.zeros_like(spread), where=spread > 0)
    share = (lam[keep] - noise[keep]) / lam[keep]
    return np.asarray((P / np.sqrt(lam[keep])) @ (share * skew), dtype=np.float64)


def _check_noise_scale(noise_scale: Any, d: int) -> np.ndarray:
    from privad.relaxed.sensitivity import check_relaxed_sensitivity

    return check_relaxed_sensitivity(noise_scale, d, name="noise_scale")


def _check_engine(engine: Any, name: str) -> str:
    from privad.geometry import ENGINES

    return check_choice(engine, name, ("auto", *ENGINES))


def as_detector(detector: Any) -> OutlierDetector:
    """Check that ``detector`` is callable (the :class:`OutlierDetector` protocol)."""
    if not callable(detector):
        raise ParameterError(
            "detector must be a callable f_outlier(X) -> outlier row indices, got "
            f"{type(detector).__name__}"
        )
    return detector


def dbscan_parameters(
    history: Any,
    p_o: Any,
    *,
    min_samples: int | None = None,
    min_samples_share: float = 0.005,
    tolerance: float = 0.1,
    eps_grid: Any = None,
    backend: str = "auto",
    geometry_engine: str = "auto",
) -> tuple[float, int]:
    """Fix DBSCAN's ``(eps, min_samples)`` from historical data (a documented reconstruction).

    Section 7 uses DBSCAN "with the same parameters for the unperturbed and perturbed data"
    but does not publish them. **Reconstruction**: calibrate once, on historical data in
    the scaled space of step 1a, before any data are perturbed:

    1. ``min_samples = max(2, ⌈min_samples_share · n⌉)`` (default 0.5 % of the records)
       unless given;
    2. ``eps`` = the **largest** value of ``eps_grid`` for which DBSCAN still labels at least
       ``(1 − tolerance) · p_o`` percent of the historical records as noise.

    DBSCAN's noise set shrinks as eps grows, so this is a binary search (about six DBSCAN
    runs). The largest such eps keeps the historical outlier layer as noise while smoothing
    the density estimate as much as possible, which is what makes DBSCAN usable on the much
    sparser perturbed data 𝒯' (larger eps, fewer core points lost to noise). In the paper's
    experiments the historical data are the data set itself (as for eq. 1); in a deployment
    pass past data, so that the parameters do not depend on the data being protected.

    Parameters
    ----------
    history:
        Historical data (n × d), already scaled by step 1a.
    p_o:
        Percentage of outliers (0 < p_o < 100), as in eq. (1).
    min_samples:
        ``minPts`` (>= 1); default from ``min_samples_share``.
    min_samples_share:
        Share of n used for ``min_samples`` when it is not given, in (0, 1).
    tolerance:
        In [0, 1): how far below p_o the noise share may fall.
    eps_grid:
        Increasing candidate radii (> 0). Default 41 log-spaced values from 10⁻³ to 10
        times the median column width ``ρ_{100−p_o/2} − ρ_{p_o/2}`` of the history (one
        relaxed-sensitivity unit: 1 in the default scaled space).
    backend, geometry_engine:
        DBSCAN engine, see :func:`dbscan_noise`.

    Returns
    -------
    (eps, min_samples)
        If even the smallest grid value leaves less than the target as noise, the smallest
        value is returned.

    Examples
    --------
    >>> from privad.datasets import make_sensor_ring
    >>> from privad.relaxed import dbscan_parameters, relaxed_sensitivity
    >>> H = make_sensor_ring(600, rng=1).X  # past data
    >>> eps, min_samples = dbscan_parameters(H / relaxed_sensitivity(H, 10), 10)
    >>> round(eps, 4), min_samples
    (0.1585, 3)
    """
    from privad.relaxed.sensitivity import check_p_o

    X = check_array(history, "history")
    p_o = check_p_o(p_o)
    n = X.shape[0]
    if min_samples is None:
        share = check_probability(
            min_samples_share, "min_samples_share", low_open=True, high_open=True
        )
        min_samples = max(2, math.ceil(share * n))
    min_samples = check_int(min_samples, "min_samples", minimum=1)
    tolerance = check_probability(tolerance, "tolerance", high_open=True)
    if eps_grid is None:
        hi, lo = np.percentile(X, [100.0 - p_o / 2.0, p_o / 2.0], axis=0)
        width = float(np.median(hi - lo))
        if not width > 0:
            width = float(np.median(X.max(axis=0) - X.min(axis=0))) or 1.0
        grid = np.geomspace(1e-3, 10.0, 41) * width
    else:
        grid = np.asarray(eps_grid, dtype=np.float64).reshape(-1)
        if (
            grid.size == 0
            or not (np.isfinite(grid).all() and (grid > 0).all())
            or (np.diff(grid) <= 0).any()
        ):
            raise ParameterError(
                "eps_grid must be a non-empty increasing vector of finite values > 0"
            )
    target = (1.0 - tolerance) * p_o / 100.0

    def enough_noise(eps: float) -> bool:
        noise = dbscan_noise(X, eps, min_samples, backend=backend, geometry_engine=geometry_engine)
        return noise.size >= target * n

    if enough_noise(float(grid[-1])):
        return float(grid[-1]), min_samples
    if not enough_noise(float(grid[0])):
        return float(grid[0]), min_samples
    lo_i, hi_i = 0, grid.size - 1  # enough_noise(grid[lo_i]) and not enough_noise(grid[hi_i])
    while hi_i - lo_i > 1:
        mid = (lo_i + hi_i) // 2
        if enough_noise(float(grid[mid])):
            lo_i = mid
        else:
            hi_i = mid
    return float(grid[lo_i]), min_samples


def dbscan_candidates(
    history: Any,
    p_o: Any,
    *,
    shares: Any = DBSCAN_SHARES,
    **options: Any,
) -> tuple[DBSCANDetector, ...]:
    """One :func:`dbscan_parameters` calibration per ``minPts`` share, as detectors.

    Parameters
    ----------
    history:
        Historical data (n × d), already scaled by step 1a.
    p_o:
        Percentage of outliers (0 < p_o < 100).
    shares:
        ``min_samples_share`` values, each in (0, 1); default :data:`DBSCAN_SHARES`.
        Duplicate calibrations (same eps and minPts, possible on small n) are dropped.
    options:
        Passed to :func:`dbscan_parameters` (``tolerance``, ``eps_grid``, ``backend``,
        ``geometry_engine``); not ``min_samples`` or ``min_samples_share``.

    Returns
    -------
    tuple of DBSCANDetector
        In the order of ``shares``.
    """
    if "min_samples" in options or "min_samples_share" in options:
        raise ParameterError(
            "dbscan_candidates takes minPts from shares; do not pass "
            "min_samples or min_samples_share"
        )
    share_list = [float(s) for s in np.asarray(shares, dtype=np.float64).reshape(-1)]
    if not share_list:
        raise ParameterError("shares must hold at least one minPts share")
    backend = options.get("backend", "auto")
    geometry_engine = options.get("geometry_engine", "auto")
    out: list[DBSCANDetector] = []
    for share in share_list:
        eps, min_samples = dbscan_parameters(history, p_o, min_samples_share=share, **options)
        det = DBSCANDetector(eps, min_samples, backend=backend, geometry_engine=geometry_engine)
        if det not in out:
            out.append(det)
    return tuple(out)


class AdaptiveDBSCANDetector:
    """``f_outlier`` = DBSCAN with the calibration whose noise share is closest to p_o.

    See the module docstring (option d). Calling it on X runs every candidate on X and
    returns the noise of the one whose noise share ``|noise|/n`` is closest to
    ``p_o/100`` (ties: the earlier candidate, i.e. the smaller minPts). The chosen
    candidate of the last call is kept in :attr:`selected`, so that the same parameters
    can be used again (on 𝒯 for the evaluation); :attr:`noise_shares` and
    :attr:`noise_sets` hold every candidate's result of that call.

    Parameters
    ----------
    candidates:
        :class:`DBSCANDetector` objects (e.g. from :func:`dbscan_candidates`).
    p_o:
        The outlier percentage (0 < p_o < 100).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import AdaptiveDBSCANDetector, DBSCANDetector
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1], [5.0, 5.0]])
    >>> f = AdaptiveDBSCANDetector([DBSCANDetector(0.2, 3), DBSCANDetector(0.2, 5)], p_o=20)
    >>> f(X).tolist(), f.noise_shares  # the first candidate's share is p_o/100
    ([4], (0.2, 1.0))
    >>> f.selected.min_samples
    3
    """

    def __init__(self, candidates: Any, p_o: Any) -> None:
        from privad.relaxed.sensitivity import check_p_o

        cands = tuple(candidates)
        if not cands or not all(isinstance(c, DBSCANDetector) for c in cands):
            raise ParameterError("candidates must be a non-empty sequence of DBSCANDetector")
        self.candidates: tuple[DBSCANDetector, ...] = cands
        self.p_o = check_p_o(p_o)
        self.selected: DBSCANDetector | None = None
        self.noise_shares: tuple[float, ...] | None = None
        self.noise_sets: tuple[np.ndarray, ...] | None = None

    def select(self, X: Any) -> tuple[DBSCANDetector, np.ndarray]:
        """The candidate chosen on X and its noise set (sorted int64 row indices)."""
        X = check_array(X, "X")
        n = X.shape[0]
        target = self.p_o / 100.0
        best: tuple[float, int, np.ndarray] | None = None
        shares, sets = [], []
        for k, cand in enumerate(self.candidates):
            noise = cand(X)
            share = noise.size / n
            shares.append(share)
            sets.append(noise)
            score = abs(share - target)
            if best is None or score < best[0]:
                best = (score, k, noise)
        assert best is not None
        self.selected = self.candidates[best[1]]
        self.noise_shares = tuple(shares)
        self.noise_sets = tuple(sets)
        return self.selected, best[2]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """The outliers of X under the selected candidate (sorted int64 row indices)."""
        return self.select(X)[1]

    def __repr__(self) -> str:
        inner = ", ".join(f"({c.eps:.4g}, {c.min_samples})" for c in self.candidates)
        return f"AdaptiveDBSCANDetector([{inner}], p_o={self.p_o:g})"
