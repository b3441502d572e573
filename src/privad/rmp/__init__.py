"""Random Multiparty Perturbation (RMP): collaborative anomaly detection on perturbed data.

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014). Participants perturb their records with private matrices
T_i = T + Δ_i after a double logistic (eq. 1-3); a mining server trains an auto-associative
neural network on what it receives (or any detector of :mod:`privad.rmp.detectors`);
end-users score their own records with the public T.

The package exports the estimators, the three roles and the one-process scheme, the
model and its training, and the perturbation of eqs. (1)-(3); the detector adapters
(:mod:`privad.rmp.detectors`), the AANN itself (:mod:`privad.rmp.aann`) and the attacks of
section 5 (:mod:`privad.rmp.attacks`) are imported from their modules. The jobs against a
mining server are :mod:`privad.services.rmp_jobs`.

Examples
--------
A participant's records leave only as Z_i = T_i Y_i (eqs. 1-3), w < n rows:

>>> from privad.rmp import Participant, public_matrix
>>> records = [[0.1, 0.5, 0.9], [0.2, 0.4, 0.8]]
>>> Participant(public_matrix(2, 3, rng=1), alpha=0.3, rng=2).perturb(records).shape
(2, 2)
"""

from privad.rmp.aann import AANNTraining, train_aann
from privad.rmp.estimator import AANNDetector, RMPDetector
from privad.rmp.model import RMPModel, fit_model
from privad.rmp.perturbation import (
    beta_star,
    double_logistic,
    guarantee,
    participant_matrix,
    perturb,
    public_matrix,
)
from privad.rmp.roles import EndUser, MiningServer, Participant, run_scheme

__all__ = [
    "AANNDetector",
    "AANNTraining",
    "EndUser",
    "MiningServer",
    "Participant",
    "RMPDetector",
    "RMPModel",
    "beta_star",
    "double_logistic",
    "fit_model",
    "guarantee",
    "participant_matrix",
    "perturb",
    "public_matrix",
    "run_scheme",
    "train_aann",
]
