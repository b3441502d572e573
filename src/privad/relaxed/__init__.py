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
* the release path of an archive perturbed on a Dask cluster, :func:`perturb_archive`
  (:mod:`privad.relaxed.distributed`); a stream's windows are sent to the servers by
  ``privad.services.sensor_client.send_file``;
* the scheme as a scikit-learn estimator (perturb, detect with DBSCAN or any PyOD-style
  detector, correct; a ledger of every window): :class:`RelaxedDPDetector`
  (:mod:`privad.relaxed.estimator`).

Every choice the paper leaves open is a named parameter whose docstring says it is our
reading. The package exports what a user needs (the estimator, the detectors, the parties,
the jobs and the named parameter sets); the rest is imported from its submodule.
"""

from typing import Any

from privad.relaxed.correction import SplitRule
from privad.relaxed.detectors import (
    AdaptiveDBSCANDetector,
    BallAnomalyDetector,
    DBSCANDetector,
    ScoringOutlierDetector,
    dbscan_parameters,
    laplace_scores,
)
from privad.relaxed.distributed import perturb_archive
from privad.relaxed.messages import ProtocolError
from privad.relaxed.parties import Analyst, CorrectionServer, Sensor
from privad.relaxed.pipeline import (
    RelaxedExchange,
    RelaxedReconstruction,
    calibrate,
    run_pipeline,
)
from privad.relaxed.protocol import run_protocol
from privad.relaxed.sensitivity import (
    relaxed_guarantee,
    relaxed_sensitivity,
    stream_sensitivities,
)

__all__ = [
    # the estimator and the detectors f_outlier a user picks
    "RelaxedDPDetector",
    "DBSCANDetector",
    "AdaptiveDBSCANDetector",
    "BallAnomalyDetector",
    "ScoringOutlierDetector",
    "dbscan_parameters",
    "laplace_scores",
    # the parties of the protocol (section 6) and an in-process run
    "Sensor",
    "Analyst",
    "CorrectionServer",
    "run_protocol",
    "ProtocolError",
    # the archive's release path (the stream's is privad.services.sensor_client.send_file)
    "perturb_archive",
    # relaxed sensitivity (eq. 1) and its guarantee (Theorem 2)
    "relaxed_sensitivity",
    "relaxed_guarantee",
    "stream_sensitivities",
    # the reconstruction's named parameter sets and the experiment pipeline
    "SplitRule",
    "RelaxedReconstruction",
    "RelaxedExchange",
    "calibrate",
    "run_pipeline",
]


_LAZY = ("RelaxedDPDetector",)


def __getattr__(name: str) -> Any:
    """The estimator is imported on first use: it needs scikit-learn, which the sensor's
    command line and services do not (importing it costs seconds)."""
    if name in _LAZY:
        from privad.relaxed import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
