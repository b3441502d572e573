"""The whole pipeline of section 7 in one call: sensitivity, perturbation, detection, correction.

:func:`run_pipeline` fixes the public parameters from historical data (RS by eq. 1, DBSCAN's
eps and minPts, w_O), runs the three-party protocol in-process
(:func:`~privad.relaxed.protocol.run_protocol`) and evaluates the result against the true
outliers ``O = f_outlier(𝒯)`` (an evaluation step no party performs):

* accuracy and subset size of the corrected output ``TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3``;
* the baseline: the same measures for O' (detection on 𝒯' without correction);
* timings per stage, the layer sizes, d_TP, d_FP, and the transcript.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from privad.accounting.guarantee import Guarantee
from privad.relaxed.correction import estimate_outlier_layer_width
from privad.relaxed.detectors import (
    DBSCANDetector,
    OutlierDetector,
    as_detector,
    dbscan_parameters,
)
from privad.relaxed.metrics import accuracy, subset_size
from privad.relaxed.parties import Analyst, CorrectionServer, Sensor
from privad.relaxed.protocol import Transcript, run_protocol
from privad.relaxed.sensitivity import check_p_o, relaxed_sensitivity
from privad.validation import check_array, check_epsilon

__all__ = ["PipelineResult", "run_pipeline"]


@dataclass(frozen=True, eq=False)
class PipelineResult:
    """What :func:`run_pipeline` measured.

    Attributes:
        epsilon: ε of the sensor.
        n: number of records.
        accuracy: share of the true outliers O in the corrected output (NaN if O is empty).
        subset_size: size of the corrected output as a share of n.
        baseline_accuracy, baseline_subset_size: the same for O' (no correction).
        true_outliers: O = f_outlier(𝒯) (sorted record indices).
        presumed_outliers: O' = f_outlier(𝒯').
        outliers: the corrected output TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3.
        tp, fp, fn_l1, fn_l2, fn_l3: the sets of Fig. 2 (held by the correction server).
        d_tp, d_fp: the thresholds of steps 3–5 (``None`` / ``inf`` when TP / FP is empty).
        relaxed_sensitivity: RS_j (eq. 1, measurement units).
        divisors: the step-1a divisors; noise_scale: Laplace scale per column (scaled space).
        w_o: the outlier layer width given to the correction server.
        detector: the f_outlier used (a :class:`DBSCANDetector` by default).
        timings: seconds per stage (see :func:`run_pipeline`).
        transcript: every message of the protocol run.
        guarantee: Theorem 2 as data, or ``None`` without ``global_sensitivity``.
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
            "relaxed_sensitivity": self.relaxed_sensitivity.tolist(),
            "noise_scale": self.noise_scale.tolist(),
        }
        if isinstance(self.detector, DBSCANDetector):
            out["dbscan_eps"] = self.detector.eps
            out["dbscan_min_samples"] = self.detector.min_samples
        out.update({f"time_{k}_s": v for k, v in self.timings.items()})
        return out


def run_pipeline(
    data: Any,
    epsilon: float,
    *,
    p_o: float = 10.0,
    history: Any = None,
    scaling: Any = "relaxed-sensitivity",
    detector: OutlierDetector | None = None,
    outlier_layer_width: float | None = None,
    w_o_quantiles: tuple[float, float] = (0.0, 100.0),
    min_gap: float = 0.0,
    max_fp_share: float = 0.5,
    d_diff_centres: Literal["separate", "original"] = "separate",
    analyst_centre: Any = "perturbed-mean",
    global_sensitivity: Any = None,
    dbscan_options: dict[str, Any] | None = None,
    rng: Any = None,
) -> PipelineResult:
    """Run sensitivity estimation, perturbation, detection and correction; evaluate against O.

    Parameters
    ----------
    data:
        𝒯, the sensor's data (n × d, measurement units).
    epsilon:
        ε > 0.
    p_o:
        Outlier percentage for eq. (1) and the DBSCAN calibration (0 < p_o < 100).
    history:
        Historical data for RS, DBSCAN's parameters and w_O; default ``data`` itself, as in
        the paper's experiments (in a deployment, pass past data).
    scaling:
        Step 1a, see :mod:`privad.relaxed.scaling` (default ``"relaxed-sensitivity"``).
    detector:
        ``f_outlier``; default :class:`DBSCANDetector` with
        :func:`~privad.relaxed.detectors.dbscan_parameters` calibrated on the scaled history.
    outlier_layer_width:
        ``w_O`` in the scaled space; default
        :func:`~privad.relaxed.correction.estimate_outlier_layer_width` on the scaled
        history and ``f_outlier`` of it, with ``w_o_quantiles``.
    w_o_quantiles:
        Percentiles for the w_O estimate (default ``(0, 100)``: max − min).
    min_gap, max_fp_share:
        The correction server's split rule (step 3), see
        :func:`~privad.relaxed.correction.split_presumed_outliers`.
    d_diff_centres:
        Step 1c centres, ``"separate"`` (default) or ``"original"``.
    analyst_centre:
        The analyst's centre for step 4 (default ``"perturbed-mean"``).
    global_sensitivity:
        Optional domain widths GS_j for the guarantee's ε'.
    dbscan_options:
        Keyword arguments for :func:`~privad.relaxed.detectors.dbscan_parameters` (e.g.
        ``min_samples_share``, ``tolerance``, ``backend``, ``geometry_engine``) when
        ``detector`` is None.
    rng:
        :class:`privad.noise.Randomness`, seed or ``None``.

    Returns
    -------
    PipelineResult
        ``timings`` holds seconds for ``"sensitivity"`` (eq. 1), ``"calibration"``
        (DBSCAN parameters and w_O from history), ``"detection_original"`` (O on 𝒯,
        evaluation only), ``"perturbation"``, ``"detection"`` (O' on 𝒯'), ``"split"``,
        ``"layers"``, ``"false_negatives"``, ``"correction"`` (steps 3–5) and ``"total"``.
    """
    clock = time.perf_counter
    start = clock()
    X = check_array(data, "data")
    epsilon = check_epsilon(epsilon)
    p_o = check_p_o(p_o)
    H = X if history is None else check_array(history, "history")
    timings: dict[str, float] = {}

    t0 = clock()
    rs = relaxed_sensitivity(H, p_o)
    timings["sensitivity"] = clock() - t0

    sensor = Sensor(
        epsilon,
        rs,
        scaling=scaling,
        d_diff_centres=d_diff_centres,
        global_sensitivity=global_sensitivity,
        rng=rng,
    )
    T = sensor.scale(X)
    H_scaled = T if history is None else sensor.scale(H)

    t0 = clock()
    if detector is None:
        eps, min_samples = dbscan_parameters(H_scaled, p_o, **(dbscan_options or {}))
        opts = dbscan_options or {}
        detector = DBSCANDetector(
            eps,
            min_samples,
            backend=opts.get("backend", "auto"),
            geometry_engine=opts.get("geometry_engine", "auto"),
        )
    detector = as_detector(detector)
    t_cal = clock() - t0

    t0 = clock()
    true_outliers = np.unique(np.asarray(detector(T), dtype=np.int64))
    timings["detection_original"] = clock() - t0

    t0 = clock()
    if outlier_layer_width is None:
        hist_outliers = true_outliers if history is None else detector(H_scaled)
        outlier_layer_width = estimate_outlier_layer_width(
            H_scaled, hist_outliers, quantiles=w_o_quantiles
        )
    timings["calibration"] = t_cal + clock() - t0

    analyst = Analyst(detector, centre=analyst_centre)
    server = CorrectionServer(outlier_layer_width, min_gap=min_gap, max_fp_share=max_fp_share)
    run = run_protocol(X, sensor, analyst, server)
    timings.update(run.timings)
    timings["total"] = clock() - start

    n = X.shape[0]
    split, layers = server.split, server.layers
    assert split is not None and layers is not None
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
        detector=detector,
        timings=timings,
        transcript=run.transcript,
        guarantee=sensor.guarantee() if global_sensitivity is not None else None,
    )
