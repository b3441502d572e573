"""The detector protocol: any anomaly detector that follows PyOD's convention plugs in.

Two schemes let the data user pick the anomaly detector that runs on the privatised data:
RMP's mining server trains it on the perturbed records (:mod:`privad.rmp.detectors`) and the
relaxed-DP analyst runs it on 𝒯' (:class:`privad.relaxed.detectors.ScoringOutlierDetector`).
Both take it through this module.

**The protocol** (PyOD's convention): an *instance* with

* ``fit(X)``: learns from the records X (rows);
* ``decision_function(X)``: one finite score per row, **higher = more anomalous**.

Every PyOD detector (``IForest()``, ``KNN()``, ``LOF()``, ...) follows it.
:func:`check_detector` validates an object at the boundary. scikit-learn's outlier
detectors (``IsolationForest``, ``LocalOutlierFactor(novelty=True)``, ``OneClassSVM``,
``EllipticEnvelope``) score the other way round (higher = more normal): wrap them in
:class:`SklearnOutlierAdapter`, which returns ``-score_samples``; passing one unwrapped is
a :class:`~privad.errors.ParameterError` rather than a silently inverted ranking.

**Randomness**: :func:`fit_clone` fits a :func:`sklearn.base.clone` of the detector (a deep
copy of an object without ``get_params``); every ``random_state`` parameter of the clone
(nested ones such as ``estimator__random_state`` included, as scikit-learn's ensembles do)
is set from :meth:`privad.noise.Randomness.derive_seed` of the caller's stream, so a seed
reproduces the run and the detector's own ``random_state`` is overridden.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import clone, is_outlier_detector

from privad.base import PrivadEstimator
from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike, as_randomness

__all__ = [
    "SklearnOutlierAdapter",
    "check_detector",
    "describe",
    "detector_scores",
    "fit_clone",
]

_SKLEARN_EXAMPLES = (
    "IsolationForest(), LocalOutlierFactor(novelty=True), OneClassSVM(), EllipticEnvelope()"
)


def describe(obj: Any) -> str:
    """The class name of ``obj`` (or ``obj``'s name if it is a class), for messages."""
    return obj.__name__ if isinstance(obj, type) else type(obj).__name__


def _check_methods(
    obj: Any, instance: str, methods: tuple[str, ...], message: Callable[[str], str]
) -> None:
    """Refuse a class where an instance is needed (a common slip: ``IForest`` for
    ``IForest()``; ``instance`` says what is needed), then an instance without callable
    ``methods``: ``message(lacks)``, with ``lacks`` naming the class and what it lacks."""
    if isinstance(obj, type):
        raise ParameterError(
            f"{instance}, got the class {obj.__name__}; write {obj.__name__}() instead"
        )
    missing = [name for name in methods if not callable(getattr(obj, name, None))]
    if missing:
        raise ParameterError(message(f"{describe(obj)} lacks {' and '.join(missing)}"))


def _check_sklearn_outlier(estimator: Any) -> Any:
    """A scikit-learn outlier detector instance with ``fit`` and ``score_samples``."""
    _check_methods(
        estimator,
        "SklearnOutlierAdapter needs an estimator instance",
        ("fit", "score_samples"),
        lambda lacks: (
            "SklearnOutlierAdapter needs a scikit-learn outlier detector with fit "
            f"and score_samples (higher = more normal), e.g. {_SKLEARN_EXAMPLES}; {lacks}"
        ),
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
    _check_methods(
        detector,
        f"{name} must be a detector instance",
        ("fit", "decision_function"),
        lambda lacks: (
            f"{name} must have callable fit(X) and decision_function(X) (higher = "
            f"more anomalous, PyOD's convention); {lacks}. For a scikit-learn outlier detector "
            "use SklearnOutlierAdapter(...)"
        ),
    )
    if isinstance(detector, SklearnOutlierAdapter):
        _check_sklearn_outlier(detector.estimator)
    elif _is_unwrapped_sklearn_outlier(detector):
        raise ParameterError(
            f"{name}: scikit-learn's {describe(detector)} scores higher = more normal; wrap "
            f"it as SklearnOutlierAdapter({describe(detector)}(...)) so that higher = more "
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


def detector_scores(detector: Any, rows: np.ndarray) -> np.ndarray:
    """The fitted detector's scores of ``rows``, checked: finite, shape (m,)."""
    try:
        scores = np.asarray(detector.decision_function(rows), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{describe(detector)}.decision_function failed or returned non-numbers: {exc}"
        ) from None
    if scores.shape != (rows.shape[0],):
        raise DataError(
            f"{describe(detector)}.decision_function must return one score per record, "
            f"shape ({rows.shape[0]},), got shape {scores.shape}"
        )
    if not np.isfinite(scores).all():
        raise DataError(f"{describe(detector)}.decision_function returned NaN or infinity")
    return scores


def _seed_random_states(detector: Any, randomness: Any) -> None:
    """Set every ``random_state`` parameter (nested too) from the caller's stream."""
    get_params = getattr(detector, "get_params", None)
    if not callable(get_params):
        return
    keys = sorted(
        k for k in get_params(deep=True) if k == "random_state" or k.endswith("__random_state")
    )
    if keys:
        detector.set_params(**{k: randomness.derive_seed() for k in keys})


def fit_clone(detector: Any, rows: np.ndarray, rng: RandomnessLike, what: str) -> Any:
    """A clone of ``detector`` (checked, not modified) with every ``random_state`` drawn
    from ``rng``, fitted on ``rows``; ``what`` names the rows in the error of a failed fit."""
    check_detector(detector)
    fitted = clone(detector, safe=False)
    _seed_random_states(fitted, as_randomness(rng))
    try:
        fitted.fit(rows)
    except ValueError as exc:
        raise DataError(f"{describe(detector)}.fit failed on {what}: {exc}") from None
    return fitted
