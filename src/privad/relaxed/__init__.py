"""Relaxed differential privacy for sensor streams, with a correction server.

Implements "Relaxed Differentially Private Outlier Detection and Correction" for sensor
data (the text is Böhler, Bernau, Kerschbaum, DBSec 2017; what it leaves out,
notably the Figure 2 algorithm box, is reconstructed in ``docs/papers.md``):

* relaxed sensitivity per column from historical data (eq. 1) and the guarantee it gives,
  ε for non-outliers and ε' = ε·GS/RS for outliers (Theorem 2):
  :mod:`privad.relaxed.sensitivity`;
* the sensor's perturbation at the source: scaling (step 1a, :mod:`~privad.relaxed.scaling`),
  per-column Laplace noise (1b, :mod:`~privad.relaxed.perturbation`), the distance
  differences d_diff (1c, Definition 4, :mod:`~privad.relaxed.distances`);
* outlier detectors f_outlier (exact DBSCAN by default, or any callable):
  :mod:`privad.relaxed.detectors`;
* the correction algorithm split by party (section 6.2), with its reconstruction options
  (the step-4 reduction by core distance, robust d_TP and d_FP):
  :mod:`privad.relaxed.correction`;
* the typed messages, the three parties and an in-process run with a transcript:
  :mod:`privad.relaxed.messages`, :mod:`privad.relaxed.parties`,
  :mod:`privad.relaxed.protocol`;
* the whole experiment pipeline with accuracy, subset size, baseline and timings:
  :mod:`privad.relaxed.pipeline`, :mod:`privad.relaxed.metrics`;
* the scheme as a scikit-learn estimator (perturb, detect with DBSCAN or any PyOD-style
  detector, correct; a ledger of every window): :class:`RelaxedDPDetector`
  (:mod:`privad.relaxed.estimator`).

Every choice the paper leaves open is a named parameter whose docstring says it is our
reading.
"""

from typing import Any

from privad.relaxed.correction import (
    D_FP_RULES,
    REDUCTIONS,
    CorrectionLayers,
    GapSplit,
    SplitRule,
    analyst_layers,
    corrected_outliers,
    estimate_outlier_layer_radius,
    estimate_outlier_layer_width,
    false_negative_layers,
    presumed_radius,
    reduction_thresholds,
    split_presumed_outliers,
)
from privad.relaxed.detectors import (
    DBSCAN_BACKENDS,
    DBSCAN_SHARES,
    AdaptiveDBSCANDetector,
    BallAnomalyDetector,
    DBSCANDetector,
    OutlierDetector,
    ScoringOutlierDetector,
    dbscan_candidates,
    dbscan_noise,
    dbscan_parameters,
    laplace_scores,
)
from privad.relaxed.distances import (
    D_DIFF_CENTRES,
    centre,
    centre_distances,
    distance_differences,
)
from privad.relaxed.distributed import perturb_archive
from privad.relaxed.messages import (
    MESSAGE_TYPES,
    AnalystToCorrection,
    AnalystToCorrection2,
    CorrectionToAnalyst,
    CorrectionToAnalyst2,
    Message,
    ProtocolError,
    SensorToAnalyst,
    SensorToCorrection,
)
from privad.relaxed.metrics import accuracy, subset_size
from privad.relaxed.parties import Analyst, CorrectionServer, Sensor
from privad.relaxed.perturbation import laplace_columns, noise_scales
from privad.relaxed.pipeline import (
    DBSCAN_CALIBRATIONS,
    OUTLIER_RADIUS_SOURCES,
    Calibration,
    PipelineResult,
    RelaxedExchange,
    RelaxedReconstruction,
    calibrate,
    run_pipeline,
)
from privad.relaxed.protocol import ProtocolRun, Transcript, TranscriptEntry, run_protocol
from privad.relaxed.scaling import SCALINGS, column_divisors, scale_columns, unscale_columns
from privad.relaxed.sensitivity import (
    relaxed_guarantee,
    relaxed_sensitivity,
    stream_sensitivities,
)

__all__ = [
    "DBSCAN_BACKENDS",
    "DBSCAN_CALIBRATIONS",
    "DBSCAN_SHARES",
    "D_DIFF_CENTRES",
    "D_FP_RULES",
    "MESSAGE_TYPES",
    "OUTLIER_RADIUS_SOURCES",
    "REDUCTIONS",
    "SCALINGS",
    "AdaptiveDBSCANDetector",
    "Analyst",
    "AnalystToCorrection",
    "AnalystToCorrection2",
    "BallAnomalyDetector",
    "Calibration",
    "CorrectionLayers",
    "CorrectionServer",
    "CorrectionToAnalyst",
    "CorrectionToAnalyst2",
    "DBSCANDetector",
    "GapSplit",
    "Message",
    "OutlierDetector",
    "PipelineResult",
    "ProtocolError",
    "ProtocolRun",
    "RelaxedDPDetector",
    "RelaxedExchange",
    "RelaxedReconstruction",
    "ScoringOutlierDetector",
    "Sensor",
    "SensorToAnalyst",
    "SensorToCorrection",
    "SplitRule",
    "Transcript",
    "TranscriptEntry",
    "accuracy",
    "analyst_layers",
    "calibrate",
    "centre",
    "centre_distances",
    "column_divisors",
    "corrected_outliers",
    "dbscan_candidates",
    "dbscan_noise",
    "dbscan_parameters",
    "distance_differences",
    "estimate_outlier_layer_radius",
    "estimate_outlier_layer_width",
    "false_negative_layers",
    "laplace_columns",
    "laplace_scores",
    "noise_scales",
    "perturb_archive",
    "presumed_radius",
    "reduction_thresholds",
    "relaxed_guarantee",
    "relaxed_sensitivity",
    "stream_sensitivities",
    "run_pipeline",
    "run_protocol",
    "scale_columns",
    "split_presumed_outliers",
    "subset_size",
    "unscale_columns",
]


_LAZY = ("RelaxedDPDetector",)


def __getattr__(name: str) -> Any:
    """The estimator is imported on first use: it needs scikit-learn, which the sensor's
    command line and services do not (importing it costs seconds)."""
    if name in _LAZY:
        from privad.relaxed import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
