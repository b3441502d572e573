"""Other anomaly detectors in place of RMP's AANN: the protocol and a scikit-learn adapter.

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014), train an auto-associative neural network on the perturbed records
(section 6), but nothing in the scheme depends on it: the perturbation (eq. 1-3) and the
end-user's path (double logistic and the public T, section 4) are the same for any
detector the server trains on the rows of Z_all.

**The protocol** (PyOD's convention): an *instance* with

* ``fit(X)``: learns from the server's perturbed records, X of shape m x w (rows);
* ``decision_function(X)``: one finite score per row, **higher = more anomalous**.

:func:`check_detector` validates an object at the boundary. scikit-learn's outlier
detectors (``IsolationForest``, ``LocalOutlierFactor(novelty=True)``, ``OneClassSVM``,
``EllipticEnvelope``) score the other way round (higher = more normal): wrap them in
:class:`SklearnOutlierAdapter`, which returns ``-score_samples``; passing one unwrapped is
a :class:`~privad.errors.ParameterError` rather than a silently inverted ranking.

**The threshold** is always the paper's θ = μ + 3σ of the detector's scores on the
training records (:func:`privad.rmp.aann.threshold`), whatever the detector: a PyOD
detector's own ``threshold_`` (set from its ``contamination``) is ignored, so every
detector is thresholded by one rule and results stay comparable with the AANN's.

**Randomness**: the server fits a :func:`sklearn.base.clone` of the detector (a deep copy
of an object without ``get_params``); every ``random_state`` parameter of the clone
(nested ones such as ``estimator__random_state`` included, as scikit-learn's ensembles
do) is set from :meth:`privad.noise.Randomness.derive_seed` of the scheme's stream, so a
seed reproduces the run and the detector's own ``random_state`` is overridden.

**No model file**: :class:`DetectorModel` (what the server returns) cannot be saved. The
model file (:class:`~privad.rmp.model.RMPModel`, NPZ + JSON) holds only the AANN's
arrays, and storing an arbitrary detector would need pickle, which runs code when a
downloaded model is loaded. ``to_bytes``/``save`` raise ``ParameterError``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone, is_outlier_detector

from privad.base import PrivadEstimator
from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike, as_randomness
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

_SKLEARN_EXAMPLES = (
    "IsolationForest(), LocalOutlierFactor(novelty=True), OneClassSVM(), EllipticEnvelope()"
)


def _describe(obj: Any) -> str:
    return obj.__name__ if isinstance(obj, type) else type(obj).__name__


def _missing_methods(obj: Any, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if not callable(getattr(obj, name, None))]


def _check_instance(obj: Any, requirement: str) -> None:
    """Refuse a class where an instance is needed (a common slip: ``IForest`` for
    ``IForest()``)."""
    if isinstance(obj, type):
        raise ParameterError(
            f"{requirement}, got the class {obj.__name__}; write {obj.__name__}() instead"
        )


def _check_sklearn_outlier(estimator: Any) -> Any:
    """A scikit-learn outlier detector instance with ``fit`` and ``score_samples``."""
    _check_instance(estimator, "SklearnOutlierAdapter needs an estimator instance")
    missing = _missing_methods(estimator, ("fit", "score_samples"))
    if missing:
        raise ParameterError(
            f"SklearnOutlierAdapter needs a scikit-learn outlier detector with fit and "
            f"score_samples (higher = more normal), e.g. {_SKLEARN_EXAMPLES}; "
            f"{_describe(estimator)} lacks {' and '.join(missing)}"
        )
    return estimator


def _is_unwrapped_sklearn_outlier(detector: Any) -> bool:
    return type(detector).__module__.partition(".")[0] == "sklearn" and bool(
        is_outlier_detector(detector)
    )


def check_detector(detector: Any, name: str = "detector") -> Any:
    """Check that ``detector`` follows the protocol; return it unchanged.

    Raises :class:`~privad.errors.ParameterError` for a class instead of an instance, an
    object without callable ``fit`` and ``decision_function``, or an unwrapped
    scikit-learn outlier detector (its ``decision_function`` is higher = more normal).
    """
    _check_instance(detector, f"{name} must be a detector instance")
    missing = _missing_methods(detector, ("fit", "decision_function"))
    if missing:
        raise ParameterError(
            f"{name} must have callable fit(X) and decision_function(X) (higher = more "
            f"anomalous, PyOD's convention); {_describe(detector)} lacks "
            f"{' and '.join(missing)}. For a scikit-learn outlier detector use "
            f"SklearnOutlierAdapter(...)"
        )
    if isinstance(detector, SklearnOutlierAdapter):
        _check_sklearn_outlier(detector.estimator)
    elif _is_unwrapped_sklearn_outlier(detector):
        raise ParameterError(
            f"{name}: scikit-learn's {_describe(detector)} scores higher = more normal; wrap "
            f"it as SklearnOutlierAdapter({_describe(detector)}(...)) so that higher = more "
            f"anomalous"
        )
    return detector


class SklearnOutlierAdapter(PrivadEstimator):
    """A scikit-learn outlier detector behind the protocol: scores are ``-score_samples``.

    Parameters
    ----------
    estimator : a scikit-learn outlier detector instance
        Anything with ``fit`` and ``score_samples`` (higher = more normal), e.g.
        ``IsolationForest()``, ``LocalOutlierFactor(novelty=True)``, ``OneClassSVM()``,
        ``EllipticEnvelope()``, or a ``Pipeline`` ending in one.

    Fitted attribute: ``estimator_``, a fitted clone of ``estimator``. ``get_params`` and
    ``set_params`` expose the estimator's parameters as ``estimator__<name>``, as
    scikit-learn's meta-estimators do.
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator

    def fit(self, X: Any, y: Any = None) -> SklearnOutlierAdapter:
        """Fit a clone of ``estimator`` on the rows of ``X``; ``y`` is ignored."""
        self.estimator_ = clone(_check_sklearn_outlier(self.estimator)).fit(
            self._validate(X, reset=True)
        )
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """``-score_samples(X)``: higher = more anomalous."""
        self._require_fitted("estimator_")
        Z = self._validate(X, reset=False)
        return -np.asarray(self.estimator_.score_samples(Z), dtype=np.float64)


def _scores(detector: Any, Z_rows: np.ndarray) -> np.ndarray:
    """The detector's scores of the rows of ``Z_rows``, checked: finite, shape (m,)."""
    try:
        scores = np.asarray(detector.decision_function(Z_rows), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{_describe(detector)}.decision_function failed or returned non-numbers: {exc}"
        ) from None
    if scores.shape != (Z_rows.shape[0],):
        raise DataError(
            f"{_describe(detector)}.decision_function must return one score per record, "
            f"shape ({Z_rows.shape[0]},), got shape {scores.shape}"
        )
    if not np.isfinite(scores).all():
        raise DataError(f"{_describe(detector)}.decision_function returned NaN or infinity")
    return scores


def _seed_random_states(detector: Any, randomness: Any) -> None:
    """Set every ``random_state`` parameter (nested too) from the scheme's stream."""
    get_params = getattr(detector, "get_params", None)
    if not callable(get_params):
        return
    keys = sorted(
        k for k in get_params(deep=True) if k == "random_state" or k.endswith("__random_state")
    )
    if keys:
        detector.set_params(**{k: randomness.derive_seed() for k in keys})


@dataclass(frozen=True, eq=False)
class DetectorModel(EndUserPath):
    """The model M of RMP with a detector other than the AANN; in-process only.

    Attributes:
        T: the public matrix, w x n (w < n).
        beta: β of the double logistic (eq. 2) the participants used.
        detector: the fitted detector (protocol of :mod:`privad.rmp.detectors`).
        threshold: θ = μ + 3σ of the detector's scores on the training records.
        metadata: JSON-able facts (``detector``, ``n_training_records``, ``alpha``).

    The end-user's methods match :class:`~privad.rmp.model.RMPModel`'s; ``to_bytes`` and
    ``save`` raise :class:`~privad.errors.ParameterError` (no pickle, see the module).
    """

    T: np.ndarray
    beta: float
    detector: Any
    threshold: float
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        T = np.array(check_public_matrix(self.T), dtype=np.float64)
        T.setflags(write=False)
        object.__setattr__(self, "T", T)
        object.__setattr__(self, "beta", check_positive(self.beta, "beta"))
        check_detector(self.detector)
        theta = float(self.threshold)
        if not math.isfinite(theta):
            raise DataError(f"threshold must be finite, got {theta!r}")
        object.__setattr__(self, "threshold", theta)

    def decision_function(self, X_rows: Any) -> np.ndarray:
        """The detector's score of :meth:`transform` (m,); larger is more anomalous."""
        Z = self.transform(X_rows)
        if Z.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        return _scores(self.detector, Z)

    def to_bytes(self) -> bytes:
        """Always raises :class:`~privad.errors.ParameterError`: see :meth:`save`."""
        raise ParameterError(
            f"a model with a custom detector ({_describe(self.detector)}) cannot be saved: "
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

    Args:
        T: the public matrix, w x n.
        Z_all: the perturbed records, **w x m_total** (records as columns, as received).
        detector: follows the protocol (:func:`check_detector`); not modified.
        alpha: the public α (recorded in the metadata only).
        beta: β the participants used in eq. 2 (default β*).
        rng: every ``random_state`` parameter of the clone is drawn from it.

    θ is μ + 3σ of the fitted clone's scores on the training records.
    """
    T = check_public_matrix(T)
    rows = check_training_matrix(T, Z_all).T
    check_detector(detector)
    alpha = None if alpha is None else check_alpha(alpha)
    beta = beta_star() if beta is None else check_positive(beta, "beta")
    fitted = clone(detector, safe=False)
    _seed_random_states(fitted, as_randomness(rng))
    try:
        fitted.fit(rows)
    except ValueError as exc:
        raise DataError(
            f"{_describe(detector)}.fit failed on the perturbed records: {exc}"
        ) from None
    metadata = {
        "detector": _describe(detector),
        "n_training_records": int(rows.shape[0]),
        "alpha": alpha,
    }
    theta = threshold(_scores(fitted, rows))
    return DetectorModel(T=T, beta=beta, detector=fitted, threshold=theta, metadata=metadata)
