"""Other anomaly detectors in place of RMP's AANN.

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014), train an auto-associative neural network on the perturbed records
(section 6), but nothing in the scheme depends on it: the perturbation (eq. 1-3) and the
end-user's path (double logistic and the public T, section 4) are the same for any
detector the server trains on the rows of Z_all.

**The protocol** is :mod:`privad.detectors` (PyOD's convention: ``fit(X)`` on the server's
perturbed records, X of shape m x w, and ``decision_function(X)``, higher = more
anomalous); :func:`~privad.detectors.check_detector` and
:class:`~privad.detectors.SklearnOutlierAdapter` (for scikit-learn's outlier detectors,
which score the other way round) are re-exported here.

**The threshold** is always the paper's θ = μ + 3σ of the detector's scores on the
training records (:func:`privad.rmp.aann.threshold`), whatever the detector: a PyOD
detector's own ``threshold_`` (set from its ``contamination``) is ignored, so every
detector is thresholded by one rule and results stay comparable with the AANN's.

**Randomness**: the server fits a clone of the detector whose every ``random_state`` is
drawn from the scheme's stream (:func:`privad.detectors.fit_clone`), so a seed reproduces
the run and the detector's own ``random_state`` is overridden.

**No model file**: :class:`DetectorModel` (what the server returns) cannot be saved. The
model file (:class:`~privad.rmp.model.RMPModel`, NPZ + JSON) holds only the AANN's
arrays, and storing an arbitrary detector would need pickle, which runs code when a
downloaded model is loaded. ``to_bytes``/``save`` raise ``ParameterError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privad.detectors import (
    SklearnOutlierAdapter,
    check_detector,
    describe,
    detector_scores,
    fit_clone,
)
from privad.errors import ParameterError
from privad.noise import RandomnessLike
from privad.rmp.aann import threshold
from privad.rmp.model import EndUserPath, check_training_matrix
from privad.rmp.perturbation import beta_star, check_alpha, check_public_matrix
from privad.validation import check_positive

__all__ = [
    "DetectorModel",
    "SklearnOutlierAdapter",
    "check_detector",
    "fit_detector_model",
]


@dataclass(frozen=True, eq=False)
class DetectorModel(EndUserPath):
    """The model M of RMP with a detector other than the AANN; in-process only.

    Attributes
    ----------
    T, beta
        the public matrix (w x n, w < n) and β of eq. (2), as in
        :class:`~privad.rmp.model.RMPModel`.
    detector
        the fitted detector (protocol of :mod:`privad.detectors`).
    threshold
        θ = μ + 3σ of the detector's scores on the training records.
    metadata
        JSON-able facts (``detector``, ``n_training_records``, ``alpha``).

    The end-user's methods match :class:`~privad.rmp.model.RMPModel`'s; ``to_bytes`` and
    ``save`` raise :class:`~privad.errors.ParameterError` (no pickle, see the module).
    """

    detector: Any
    threshold: float
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check_public()
        check_detector(self.detector)

    def decision_function(self, X_rows: Any) -> np.ndarray:
        """The detector's score of :meth:`transform` (m,); larger is more anomalous."""
        Z = self.transform(X_rows)
        if Z.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        return detector_scores(self.detector, Z)

    def to_bytes(self) -> bytes:
        """Always raises :class:`~privad.errors.ParameterError`: see :meth:`save`."""
        raise ParameterError(
            f"a model with a custom detector ({describe(self.detector)}) cannot be saved: "
            f"the RMP model file (NPZ + JSON) holds only the AANN, and storing an arbitrary "
            f"detector would need pickle, which runs code when a downloaded model is "
            f"loaded. Use detector=None (the AANN) for a model file to serve, or keep this "
            f"model in process"
        )

    def save(self, path: Any) -> Any:
        """Always raises :class:`~privad.errors.ParameterError` (no pickle, ever)."""
        return self.to_bytes()


def fit_detector_model(
    T: Any,
    Z_all: Any,
    detector: Any,
    *,
    alpha: float | None = None,
    beta: float | None = None,
    rng: RandomnessLike = None,
) -> DetectorModel:
    """The mining server's job with another detector: fit a clone on the rows of Z_all.

    Parameters
    ----------
    T
        the public matrix, w x n.
    Z_all
        the perturbed records, **w x m_total** (records as columns, as received).
    detector
        follows the protocol (:func:`check_detector`); not modified.
    alpha
        the public α (recorded in the metadata only).
    beta
        β the participants used in eq. 2 (default β*).
    rng
        every ``random_state`` parameter of the clone is drawn from it.

    θ is μ + 3σ of the fitted clone's scores on the training records.
    """
    T = check_public_matrix(T)
    rows = check_training_matrix(T, Z_all).T
    alpha = None if alpha is None else check_alpha(alpha)
    beta = beta_star() if beta is None else check_positive(beta, "beta")
    fitted = fit_clone(detector, rows, rng, "the perturbed records")
    metadata = {
        "detector": describe(detector),
        "n_training_records": int(rows.shape[0]),
        "alpha": alpha,
    }
    theta = threshold(detector_scores(fitted, rows))
    return DetectorModel(T=T, beta=beta, detector=fitted, threshold=theta, metadata=metadata)
