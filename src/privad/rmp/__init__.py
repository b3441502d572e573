"""Random Multiparty Perturbation (RMP): collaborative anomaly detection on perturbed data.

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014). Participants perturb their records with private matrices
T_i = T + Δ_i after a double logistic (eq. 1-3); a mining server trains an auto-associative
neural network on what it receives (or any detector of :mod:`privad.rmp.detectors`);
end-users score their own records with the public T.
"""

from privad.rmp.aann import AANN, AANNTraining, threshold, train_aann
from privad.rmp.detectors import (
    DetectorModel,
    SklearnOutlierAdapter,
    check_detector,
    fit_detector_model,
)
from privad.rmp.estimator import AANNDetector, NotFittedError, RMPDetector
from privad.rmp.model import RMPModel, fit_model
from privad.rmp.perturbation import (
    beta_star,
    check_alpha,
    check_dimensions,
    double_logistic,
    guarantee,
    inverse_double_logistic,
    participant_matrix,
    perturb,
    public_matrix,
)
from privad.rmp.roles import EndUser, MiningServer, Participant, run_scheme

__all__ = [
    "AANN",
    "AANNDetector",
    "AANNTraining",
    "DetectorModel",
    "EndUser",
    "MiningServer",
    "NotFittedError",
    "Participant",
    "RMPDetector",
    "RMPModel",
    "SklearnOutlierAdapter",
    "check_detector",
    "fit_detector_model",
    "fit_model",
    "threshold",
    "train_aann",
    "beta_star",
    "check_alpha",
    "check_dimensions",
    "double_logistic",
    "guarantee",
    "inverse_double_logistic",
    "participant_matrix",
    "perturb",
    "public_matrix",
    "run_scheme",
]
