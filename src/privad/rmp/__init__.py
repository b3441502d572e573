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
>>> import numpy as np
>>> from privad.rmp import AANNTraining, run_scheme
>>> X = np.random.default_rng(0).uniform(0, 1, (60, 4))
>>> model = run_scheme(X, alpha=0.3, training=AANNTraining(epochs=5), rng=1)
>>> model.predict(X).shape
(60,)
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
