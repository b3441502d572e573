"""The whole pipeline of section 7 in one call: sensitivity, perturbation, detection, correction.

:func:`run_pipeline` fixes the public parameters from historical data (RS by eq. 1, DBSCAN's
eps and minPts, w_O and the outlier layer's inner radius ρ), runs the three-party protocol
in-process
(:func:`~privad.relaxed.protocol.run_protocol`) and evaluates the result against the true
outliers ``O = f_outlier(𝒯)`` (an evaluation step no party performs):

* accuracy and subset size of the corrected output ``TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3``;
* the baseline: the same measures for O' (detection on 𝒯' without correction);
* timings per stage, the layer sizes, d_TP, d_FP, and the transcript.

:func:`calibrate` is its first step on its own (``f_outlier``, w_O and ρ from the scaled
history), shared with :class:`~privad.relaxed.RelaxedDPDetector`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from privad.accounting.guarantee import Guarantee
from privad.errors import DataError, ParameterError
from privad.relaxed.correction import (
    REDUCTIONS,
    SplitRule,
    check_percentile,
    check_split_rule,
    estimate_outlier_layer_radius,
    estimate_outlier_layer_width,
)
from privad.relaxed.detectors import (
    DBSCAN_SHARES,
    AdaptiveDBSCANDetector,
    DBSCANDetector,
    OutlierDetector,
    as_detector,
    dbscan_parameters,
)
from privad.relaxed.detectors import dbscan_candidates as dbscan_candidates_for
from privad.relaxed.distances import D_DIFF_CENTRES
from privad.relaxed.metrics import accuracy, subset_size
from privad.relaxed.parties import ANALYST_CENTRES, Analyst, CorrectionServer, Sensor
from privad.relaxed.protocol import Transcript, run_protocol
from privad.relaxed.scaling import column_divisors
from privad.relaxed.sensitivity import check_p_o, relaxed_sensitivity
from privad.relaxed.views import check_exchange
from privad.validation import check_array, check_choice, check_epsilon, check_nonnegative

__all__ = [
    "DBSCAN_CALIBRATIONS",
    "OUTLIER_RADIUS_SOURCES",
    "Calibration",
    "PipelineResult",
    "RelaxedExchange",
    "RelaxedReconstruction",
    "calibrate",
    "run_pipeline",
    "server_parameters",
]

DBSCAN_CALIBRATIONS: tuple[str, ...] = ("adaptive", "history")
"""How :func:`run_pipeline` fixes DBSCAN's parameters when no detector is given: a family
of history calibrations from which the analyst picks on 𝒯' (``"adaptive"``, default), or
the single history calibration of :func:`~privad.relaxed.detectors.dbscan_parameters`
(``"history"``, the previous default)."""

OUTLIER_RADIUS_SOURCES: tuple[str, ...] = ("history", "presumed")
"""Where the ``"radius"`` reduction's ρ comes from: the historical outliers (default) or the
analyst's own estimate from 𝒯' and O'."""


@dataclass(frozen=True, eq=False)
class PipelineResult:
    """What :func:`run_pipeline` measured.

    Attributes
    ----------
    epsilon
        ε of the sensor.
    n
        number of records.
    accuracy
        share of the true outliers O in the corrected output (NaN if O is empty).
    subset_size
        size of the corrected output as a share of n.
    baseline_accuracy, baseline_subset_size
        the same for O' (no correction).
    true_outliers
        O = f_outlier(𝒯) (sorted record indices).
    presumed_outliers
        O' = f_outlier(𝒯').
    outliers
        the corrected output TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3.
    tp, fp, fn_l1, fn_l2, fn_l3
        the sets of Fig. 2 (held by the correction server).
    d_tp, d_fp
        the thresholds of steps 3–5 (``None`` / ``inf`` when TP / FP is empty).
    relaxed_sensitivity
        RS_j (eq. 1, measurement units).
    divisors
        the step-1a divisors; noise_scale: Laplace scale per column (scaled space).
    w_o
        the outlier layer width given to the correction server.
    detector
        the f_outlier used on 𝒯' and 𝒯 (a :class:`DBSCANDetector` by default: for
        the adaptive calibration, the candidate the analyst chose on 𝒯').
    timings
        seconds per stage (see :func:`run_pipeline`).
    transcript
        every message of the protocol run.
    guarantee
        Theorem 2 as data, or ``None`` without ``global_sensitivity``.
    reduction
        the analyst's step-4 reduction (``"radius"`` or ``"notes"``).
    outlier_radius
        ρ as the analyst used it (given, from history or estimated from
        O'), ``None`` for ``"notes"`` or when TP was empty.
    thresholds
        the analyst's ``(t2, t3)`` of step 4, or ``None`` when TP was empty.
    dbscan_candidates
        the adaptive family (empty for a fixed detector).
    dbscan_noise_shares
        each candidate's noise share on 𝒯' (empty for a fixed
        detector).
    """

    epsilon: float
    n: int
    accuracy: float
    subset_size: float
    baseline_accuracy: float
    baseline_subset_size: float
    true_outliers: np.ndarray
    presumed_outliers: np.ndarray
    outliers: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn_l1: np.ndarray
    fn_l2: np.ndarray
    fn_l3: np.ndarray
    d_tp: float | None
    d_fp: float
    relaxed_sensitivity: np.ndarray
    divisors: np.ndarray
    noise_scale: np.ndarray
    w_o: float
    detector: OutlierDetector
    timings: dict[str, float] = field(default_factory=dict)
    transcript: Transcript = field(default_factory=Transcript)
    guarantee: Guarantee | None = None
    reduction: str = "notes"
    outlier_radius: float | None = None
    thresholds: tuple[float, float] | None = None
    dbscan_candidates: tuple[DBSCANDetector, ...] = ()
    dbscan_noise_shares: tuple[float, ...] = ()

    def summary(self) -> dict[str, Any]:
        """A flat, JSON-ready dict of the scalar results (no index arrays)."""
        out: dict[str, Any] = {
            "epsilon": self.epsilon,
            "n": self.n,
            "accuracy": self.accuracy,
            "subset_size": self.subset_size,
            "baseline_accuracy": self.baseline_accuracy,
            "baseline_subset_size": self.baseline_subset_size,
            "n_true_outliers": int(self.true_outliers.size),
            "n_presumed_outliers": int(self.presumed_outliers.size),
            "n_output": int(self.outliers.size),
            "n_tp": int(self.tp.size),
            "n_fp": int(self.fp.size),
            "n_fn_l1": int(self.fn_l1.size),
            "n_fn_l2": int(self.fn_l2.size),
            "n_fn_l3": int(self.fn_l3.size),
            "d_tp": self.d_tp,
            "d_fp": self.d_fp if np.isfinite(self.d_fp) else None,
            "w_o": self.w_o,
            "reduction": self.reduction,
            "outlier_radius": self.outlier_radius,
            "threshold_l2": None if self.thresholds is None else self.thresholds[0],
            "threshold_l3": None if self.thresholds is None else self.thresholds[1],
            "relaxed_sensitivity": self.relaxed_sensitivity.tolist(),
            "noise_scale": self.noise_scale.tolist(),
        }
        if isinstance(self.detector, DBSCANDetector):
            out["dbscan_eps"] = self.detector.eps
            out["dbscan_min_samples"] = self.detector.min_samples
        if self.dbscan_candidates:
            out["dbscan_candidates"] = [[c.eps, c.min_samples] for c in self.dbscan_candidates]
            out["dbscan_noise_shares"] = list(self.dbscan_noise_shares)
        out.update({f"time_{k}_s": v for k, v in self.timings.items()})
        return out


@dataclass(frozen=True, eq=False)
class Calibration:
    """The public parameters of the analyst and the correction server, fixed from history.

    Attributes
    ----------
    detector
        ``f_outlier`` (for the default, the DBSCAN calibration of
        :func:`calibrate`).
    w_o
        the outlier layer width w_O (scaled space).
    outlier_radius
        ρ of the ``"radius"`` reduction (scaled space): given, or estimated
        from the historical outliers; ``None`` where the analyst estimates it from O'
        (``"presumed"``) or the reduction is ``"notes"``.
    history_outliers
        ``(member, its outliers on the history)`` for each member of the
        detector's family (one pair for a fixed detector); empty when neither w_O nor ρ
        needed them.
    """

    detector: OutlierDetector
    w_o: float
    outlier_radius: float | None
    history_outliers: tuple[tuple[Any, np.ndarray], ...] = ()


def _radius_source(outlier_radius: float | str) -> str | float:
    """``outlier_radius`` checked: one of :data:`OUTLIER_RADIUS_SOURCES` or a number."""
    if isinstance(outlier_radius, str):
        return check_choice(outlier_radius, "outlier_radius", OUTLIER_RADIUS_SOURCES)
    return check_nonnegative(outlier_radius, "outlier_radius")


@dataclass(frozen=True)
class RelaxedReconstruction:
    """The reconstruction choices of the correction (Fig. 2), checked when built.

    The paper leaves the correction box and DBSCAN's calibration open;
    ``docs/relaxed_reproduction.md`` evaluates each choice on its grid. The defaults are the
    reconstruction closest to the paper's text: the ``"radius"`` reduction with ρ from the
    historical outliers, the paper's d_TP and d_FP (minima) and the adaptive DBSCAN family.
    The previous reading (docs/papers.md) is
    ``RelaxedReconstruction(reduction="notes", dbscan_calibration="history")``. One object
    serves :func:`calibrate`, :func:`run_pipeline` and the reproduction's options
    (:mod:`privad.experiments.relaxed`).

    Parameters
    ----------
    reduction : {"radius", "notes"}, default "radius"
        The analyst's step-4 reduction (:mod:`privad.relaxed.correction`).
    outlier_radius : "history", "presumed" or float >= 0, default "history"
        ρ for ``"radius"``: from the historical outliers
        (:func:`~privad.relaxed.correction.estimate_outlier_layer_radius` at
        ``outlier_radius_percentile``), estimated by the analyst from 𝒯' and O' at
        ``radius_percentile``, or a number (scaled space).
    outlier_radius_percentile : float in [0, 100], default 0
        Percentile of the historical outliers' centre distances for ρ (0: the layer's
        inner edge).
    radius_percentile : float in [0, 100], default 50
        Percentile of the analyst's own estimate (``outlier_radius="presumed"``).
    analyst_centre : "perturbed-mean" or array of d floats, default "perturbed-mean"
        The analyst's centre for step 4.
    d_diff_centres : {"separate", "original"}, default "separate"
        Step 1c centres (:data:`~privad.relaxed.distances.D_DIFF_CENTRES`).
    split : SplitRule, default SplitRule()
        The correction server's step-3 choices (:class:`~privad.relaxed.SplitRule`: the
        split at the largest gap, d_TP and d_FP; defaults: the paper's minima).
    outlier_layer_width : float >= 0 or None, default None
        w_O (scaled space); None: estimated from the history and its outliers with
        ``w_o_quantiles`` (for the adaptive family: the records any member labels as noise).
    w_o_quantiles : (float, float), default (0, 100)
        Percentiles of the w_O estimate (max − min).
    detector : OutlierDetector or None, default None
        ``f_outlier``, used as it is on 𝒯' and 𝒯; None: DBSCAN calibrated on the scaled
        history as ``dbscan_calibration`` says.
    dbscan_calibration : {"adaptive", "history"}, default "adaptive"
        :data:`DBSCAN_CALIBRATIONS`: a family from which the analyst picks on 𝒯'
        (:class:`~privad.relaxed.detectors.AdaptiveDBSCANDetector`) or the single history
        calibration.
    dbscan_shares : sequence of float
        The minPts shares of the adaptive family
        (:data:`~privad.relaxed.detectors.DBSCAN_SHARES`).
    dbscan_candidates : sequence of DBSCANDetector or None, default None
        A precomputed adaptive family (skips its calibration, e.g. when one history serves
        several ε).
    dbscan_options : dict or None, default None
        Keywords of :func:`~privad.relaxed.detectors.dbscan_parameters` (``tolerance``,
        ``backend``, ``geometry_engine``; ``min_samples`` / ``min_samples_share`` only with
        ``dbscan_calibration="history"``).

    Raises
    ------
    ParameterError
        a choice outside the allowed ones, named with what is allowed.

    Examples
    --------
    >>> from privad.relaxed import RelaxedReconstruction, SplitRule
    >>> rec = RelaxedReconstruction(reduction="notes", split=SplitRule(min_gap=0.5))
    >>> rec.reduction, rec.split.min_gap, rec.dbscan_calibration
    ('notes', 0.5, 'adaptive')
    """

    reduction: str = "radius"
    outlier_radius: float | str = "history"
    outlier_radius_percentile: float = 0.0
    radius_percentile: float = 50.0
    analyst_centre: Any = "perturbed-mean"
    d_diff_centres: Literal["separate", "original"] = "separate"
    split: SplitRule = SplitRule()
    outlier_layer_width: float | None = None
    w_o_quantiles: tuple[float, float] = (0.0, 100.0)
    detector: OutlierDetector | None = None
    dbscan_calibration: str = "adaptive"
    dbscan_shares: tuple[float, ...] = DBSCAN_SHARES
    dbscan_candidates: tuple[DBSCANDetector, ...] | None = None
    dbscan_options: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        checked = {
            "reduction": check_choice(self.reduction, "reduction", REDUCTIONS),
            "outlier_radius": _radius_source(self.outlier_radius),
            "outlier_radius_percentile": check_percentile(
                self.outlier_radius_percentile, "outlier_radius_percentile"
            ),
            "d_diff_centres": check_choice(self.d_diff_centres, "d_diff_centres", D_DIFF_CENTRES),
            "split": check_split_rule(self.split, "split"),
            "dbscan_calibration": check_choice(
                self.dbscan_calibration, "dbscan_calibration", DBSCAN_CALIBRATIONS
            ),
            "w_o_quantiles": tuple(float(q) for q in self.w_o_quantiles),
            "dbscan_shares": tuple(self.dbscan_shares),
            "dbscan_options": dict(self.dbscan_options or {}),
        }
        if isinstance(self.analyst_centre, str):
            check_choice(self.analyst_centre, "analyst_centre", ANALYST_CENTRES)
        if self.outlier_layer_width is not None:
            checked["outlier_layer_width"] = check_nonnegative(
                self.outlier_layer_width, "outlier_layer_width"
            )
        if self.detector is not None:
            checked["detector"] = as_detector(self.detector)
        if self.dbscan_candidates is not None:
            checked["dbscan_candidates"] = tuple(self.dbscan_candidates)
        if checked["dbscan_calibration"] == "adaptive" and (
            {"min_samples", "min_samples_share"} & set(checked["dbscan_options"])
        ):
            raise ParameterError(
                "dbscan_options min_samples / min_samples_share fix a single calibration: "
                "use dbscan_calibration='history' (the adaptive family takes its minPts from "
                "dbscan_shares)"
            )
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        # the parties check the rest of their options; built once here so that a bad value
        # fails before any expensive step
        self.analyst(DBSCANDetector(1.0, 1), None)
        self.correction_server(0.0)

    def analyst(self, detector: OutlierDetector, outlier_radius: float | None) -> Analyst:
        """The analyst of these choices with ``f_outlier`` and ρ (None: the analyst's own
        estimate from 𝒯' and O'; unused by ``"notes"``)."""
        return Analyst(
            detector,
            centre=self.analyst_centre,
            reduction=self.reduction,
            outlier_radius=None if self.reduction == "notes" else outlier_radius,
            radius_percentile=self.radius_percentile,
        )

    def correction_server(self, outlier_layer_width: float) -> CorrectionServer:
        """The correction server of these choices with w_O."""
        return CorrectionServer(outlier_layer_width, self.split)


@dataclass(frozen=True)
class RelaxedExchange:
    """How d_diff and d_TP leave the sensor: the paper's exact exchange or a protected one.

    Parameters
    ----------
    kind : {"unprotected", "protected"}, default "unprotected"
        ``"unprotected"``: the paper's (d_diff and d_TP exact); ``"protected"``: d_diff
        under ε_CS (:class:`~privad.relaxed.Sensor`, :mod:`privad.relaxed.views`).
    cs_epsilon, tp_epsilon : float > 0 or None
        ε_CS of the d_diff noise and the optional ε_TP of d_TP (protected only).

    Raises
    ------
    ParameterError
        an unknown kind, a bad ε, or an ε with the unprotected exchange
        (:func:`~privad.relaxed.views.check_exchange`).

    Examples
    --------
    >>> from privad.relaxed import RelaxedExchange
    >>> RelaxedExchange("protected", cs_epsilon=1.0)
    RelaxedExchange(kind='protected', cs_epsilon=1.0, tp_epsilon=None)
    """

    kind: Literal["protected", "unprotected"] = "unprotected"
    cs_epsilon: float | None = None
    tp_epsilon: float | None = None

    def __post_init__(self) -> None:
        kind, cs, tp = check_exchange(self.kind, self.cs_epsilon, self.tp_epsilon)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "cs_epsilon", cs)
        object.__setattr__(self, "tp_epsilon", tp)


def server_parameters(
    history: Any,
    p_o: float,
    *,
    scaling: Any = "relaxed-sensitivity",
    min_samples: int | None = None,
) -> dict[str, Any]:
    """The public parameters of a deployment, fixed from historical data before any run.

    Not private: like the paper's parameters, they are read in the clear from past data.
    RS_j by eq. (1) (:func:`~privad.relaxed.relaxed_sensitivity`), step 1a's divisors, then
    in the scaled space DBSCAN's ``eps`` and ``min_samples``
    (:func:`~privad.relaxed.dbscan_parameters`) and the outlier layer's width w_O
    (:func:`~privad.relaxed.correction.estimate_outlier_layer_width`) from the historical
    outliers: what the sensor, the analyst and the correction server are configured with
    (``privad sensor calibrate``).

    Returns
    -------
    dict
        ``n``, ``p_o``, ``scaling``, ``relaxed_sensitivity``, ``divisors``, ``eps``,
        ``min_samples``, ``outlier_layer_width``, ``historical_outliers``.

    Examples
    --------
    >>> from privad.datasets import make_sensor_ring
    >>> from privad.relaxed.pipeline import server_parameters
    >>> p = server_parameters(make_sensor_ring(600, rng=1).X, 10)
    >>> round(p["eps"], 4), p["min_samples"], p["historical_outliers"]
    (0.1585, 3, 57)
    """
    H = check_array(history, "history")
    p_o = check_p_o(p_o)
    rs = relaxed_sensitivity(H, p_o)
    divisors = column_divisors(scaling, rs)
    scaled = H / divisors
    eps, min_samples = dbscan_parameters(scaled, p_o, min_samples=min_samples)
    outliers = DBSCANDetector(eps, min_samples)(scaled)
    return {
        "n": int(H.shape[0]),
        "p_o": p_o,
        "scaling": scaling,
        "relaxed_sensitivity": rs.tolist(),
        "divisors": np.asarray(divisors).tolist(),
        "eps": eps,
        "min_samples": min_samples,
        "outlier_layer_width": estimate_outlier_layer_width(scaled, outliers),
        "historical_outliers": int(outliers.size),
    }


def calibrate(
    history: np.ndarray,
    p_o: float,
    reconstruction: RelaxedReconstruction | None = None,
) -> Calibration:
    """Fix ``f_outlier``, w_O and ρ from historical data, before any data are perturbed.

    ``history`` is already scaled by the sensor's step 1a (:meth:`Sensor.scale`);
    ``reconstruction`` says how (default :class:`RelaxedReconstruction`). For the adaptive
    DBSCAN family the historical outliers are every record that any member labels as noise
    (a conservative ρ: at most the inner edge of any member's layer).

    Examples
    --------
    >>> from privad.datasets import make_sensor_ring
    >>> from privad.relaxed import calibrate, relaxed_sensitivity
    >>> H = make_sensor_ring(600, rng=1).X
    >>> cal = calibrate(H / relaxed_sensitivity(H, 10), 10)  # in the scaled space of step 1a
    >>> round(cal.w_o, 3), round(cal.outlier_radius, 3)
    (3.437, 7.143)
    """
    H = check_array(history, "history")
    rec = RelaxedReconstruction() if reconstruction is None else reconstruction
    opts = dict(rec.dbscan_options or {})
    detector = rec.detector
    if detector is None:
        if rec.dbscan_calibration == "history":
            eps, min_samples = dbscan_parameters(H, p_o, **opts)
            detector = DBSCANDetector(
                eps,
                min_samples,
                backend=opts.get("backend", "auto"),
                geometry_engine=opts.get("geometry_engine", "auto"),
            )
        else:
            cands = (
                rec.dbscan_candidates
                if rec.dbscan_candidates is not None
                else tuple(dbscan_candidates_for(H, p_o, shares=rec.dbscan_shares, **opts))
            )
            detector = AdaptiveDBSCANDetector(cands, p_o)
    rho_source = rec.outlier_radius
    need_rho = rec.reduction == "radius" and rho_source == "history"
    hist_sets: list[tuple[Any, np.ndarray]] = []
    hist_outliers = np.zeros(0, dtype=np.int64)
    if rec.outlier_layer_width is None or need_rho:
        family = (
            detector.candidates if isinstance(detector, AdaptiveDBSCANDetector) else (detector,)
        )
        for member in family:
            hist_sets.append((member, np.unique(np.asarray(member(H), dtype=np.int64))))
        hist_outliers = np.unique(np.concatenate([o for _, o in hist_sets]))
    w_o = (
        estimate_outlier_layer_width(H, hist_outliers, quantiles=rec.w_o_quantiles)
        if rec.outlier_layer_width is None
        else rec.outlier_layer_width
    )
    rho: float | None = None
    if rec.reduction == "radius" and not isinstance(rho_source, str):
        rho = rho_source
    elif need_rho:
        if hist_outliers.size == 0:
            raise DataError(
                "the history has no outliers under f_outlier, so the outlier layer radius "
                "cannot be estimated; give outlier_radius or use outlier_radius='presumed'"
            )
        rho = estimate_outlier_layer_radius(
            H, hist_outliers, percentile=rec.outlier_radius_percentile
        )
    return Calibration(detector, w_o, rho, tuple(hist_sets))


def run_pipeline(
    data: Any,
    epsilon: float,
    *,
    p_o: float = 10.0,
    history: Any = None,
    scaling: Any = "relaxed-sensitivity",
    global_sensitivity: Any = None,
    reconstruction: RelaxedReconstruction | None = None,
    exchange: RelaxedExchange | None = None,
    rng: Any = None,
) -> PipelineResult:
    """Run sensitivity estimation, perturbation, detection and correction; evaluate against O.

    Every reconstruction choice is a field of ``reconstruction``
    (``docs/relaxed_reproduction.md`` evaluates them on the paper's grid); its defaults are
    the reconstruction we consider closest to the paper's text. The exchange defaults to
    the paper's (exact d_diff and d_TP), since this function reproduces its experiment;
    ``RelaxedExchange("protected", cs_epsilon, tp_epsilon)`` measures the protected
    variants.

    Parameters
    ----------
    data : array (n, d)
        𝒯, the sensor's data (measurement units).
    epsilon : float > 0
        ε of the sensor.
    p_o : float in (0, 100), default 10
        Outlier percentage for eq. (1) and the DBSCAN calibration.
    history : array (m, d) or None
        Historical data for RS, DBSCAN's parameters, w_O and ρ; default ``data`` itself, as
        in the paper's experiments (in a deployment, pass past data).
    scaling : str or array, default "relaxed-sensitivity"
        Step 1a, see :mod:`privad.relaxed.scaling`.
    global_sensitivity : float, array or None
        Domain widths GS_j for the guarantee's ε' (Theorem 2); None: no guarantee.
    reconstruction : RelaxedReconstruction or None
        The correction's reconstruction choices (default :class:`RelaxedReconstruction`).
    exchange : RelaxedExchange or None
        The exchange (default the paper's unprotected one).
    rng : Randomness, seed or None
        :class:`privad.noise.Randomness`, seed or ``None``.

    Returns
    -------
    PipelineResult
        ``timings`` holds seconds for ``"sensitivity"`` (eq. 1), ``"calibration"``
        (DBSCAN parameters, w_O and ρ from history), ``"detection_original"`` (O on 𝒯,
        evaluation only), ``"perturbation"``, ``"detection"`` (O' on 𝒯'), ``"split"``,
        ``"layers"``, ``"false_negatives"``, ``"correction"`` (steps 3–5) and ``"total"``.

    Examples
    --------
    >>> from privad.datasets import make_sensor_ring
    >>> from privad.relaxed import run_pipeline
    >>> result = run_pipeline(make_sensor_ring(600, rng=0).X, 1.0, rng=0)
    >>> result.accuracy
    1.0
    """
    clock = time.perf_counter
    start = clock()
    X = check_array(data, "data")
    epsilon = check_epsilon(epsilon)
    p_o = check_p_o(p_o)
    H = X if history is None else check_array(history, "history")
    rec = RelaxedReconstruction() if reconstruction is None else reconstruction
    ex = RelaxedExchange() if exchange is None else exchange
    timings: dict[str, float] = {}

    t0 = clock()
    rs = relaxed_sensitivity(H, p_o)
    timings["sensitivity"] = clock() - t0

    sensor = Sensor(
        epsilon,
        rs,
        scaling=scaling,
        d_diff_centres=rec.d_diff_centres,
        global_sensitivity=global_sensitivity,
        exchange=ex.kind,
        cs_epsilon=ex.cs_epsilon,
        tp_epsilon=ex.tp_epsilon,
        rng=rng,
    )
    T = sensor.scale(X)
    H_scaled = T if history is None else sensor.scale(H)

    t0 = clock()
    cal = calibrate(H_scaled, p_o, rec)
    detector, rho = cal.detector, cal.outlier_radius
    timings["calibration"] = clock() - t0

    analyst = rec.analyst(detector, rho)
    server = rec.correction_server(cal.w_o)
    run = run_protocol(X, sensor, analyst, server)
    timings.update(run.timings)

    # evaluation only: O = f_outlier(𝒯) with the parameters used on 𝒯'
    t0 = clock()
    eval_detector: OutlierDetector = detector
    if isinstance(detector, AdaptiveDBSCANDetector):
        assert detector.selected is not None
        eval_detector = detector.selected
    known = [o for member, o in cal.history_outliers if member is eval_detector]
    if history is None and known:  # the history is 𝒯: f_outlier(𝒯) is already known
        true_outliers = known[0]
    else:
        true_outliers = np.unique(np.asarray(eval_detector(T), dtype=np.int64))
    timings["detection_original"] = clock() - t0
    timings["total"] = clock() - start

    n = X.shape[0]
    split, layers = server.split, server.layers
    assert split is not None and layers is not None
    rho_used = rho
    if rec.reduction == "radius" and rho is None and analyst.thresholds is not None:
        rho_used = analyst.thresholds[0]
    return PipelineResult(
        epsilon=epsilon,
        n=n,
        accuracy=accuracy(run.outliers, true_outliers, n),
        subset_size=subset_size(run.outliers, n),
        baseline_accuracy=accuracy(run.presumed_outliers, true_outliers, n),
        baseline_subset_size=subset_size(run.presumed_outliers, n),
        true_outliers=true_outliers,
        presumed_outliers=run.presumed_outliers,
        outliers=run.outliers,
        tp=split.tp,
        fp=split.fp,
        fn_l1=layers.fn_l1,
        fn_l2=layers.fn_l2,
        fn_l3=layers.fn_l3,
        d_tp=split.d_tp,
        d_fp=split.d_fp,
        relaxed_sensitivity=rs,
        divisors=sensor.divisors,
        noise_scale=sensor.noise_scale,
        w_o=server.w_o,
        detector=eval_detector,
        timings=timings,
        transcript=run.transcript,
        guarantee=sensor.release_guarantee() if global_sensitivity is not None else None,
        reduction=rec.reduction,
        outlier_radius=None if rec.reduction == "notes" else rho_used,
        thresholds=analyst.thresholds,
        dbscan_candidates=(
            detector.candidates if isinstance(detector, AdaptiveDBSCANDetector) else ()
        ),
        dbscan_noise_shares=(
            detector.noise_shares or () if isinstance(detector, AdaptiveDBSCANDetector) else ()
        ),
    )
