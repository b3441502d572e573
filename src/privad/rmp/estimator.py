"""RMP behind scikit-learn conventions: :class:`RMPDetector` and the baseline :class:`AANNDetector`.

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014).

* :class:`RMPDetector` plays the whole scheme in one process (section 6): ``fit`` cuts the
  records into batches of ``batch_size`` (30), each perturbed by a separate participant
  with its own T_i (eq. 1-3); the server trains the AANN on what it received; scoring is
  the end-user's path with the public T (section 4).
* :class:`AANNDetector` is the same AANN trained on the unperturbed records: the "Raw"
  column of Table 1.

``RMPDetector(detector=...)`` replaces the AANN by any detector that follows PyOD's
convention (:mod:`privad.rmp.detectors`); the scheme is otherwise unchanged.

The AANN's parameters are flat (scikit-learn's convention, so that ``get_params`` and
``set_params`` see them) and become one :class:`~privad.rmp.aann.AANNTraining` in ``fit``.

Both take records as rows (m x n). ``decision_function`` is the reconstruction error
(larger = more anomalous); ``predict`` is 1 where it exceeds ``threshold_``, else 0.

**Thresholds** (issue 27). ``threshold="contamination"`` (the default) is PyOD's
convention: ``threshold_`` is the ``100 (1 - contamination)`` percentile of the training
records' released scores (:func:`privad.base.contamination_threshold`), so ``labels_``
flags the top ``contamination`` share (0.1 by default, as in PyOD). It reads only the
scores an end-user computes with the public T and the model M: post-processing, no
privacy cost. ``threshold="mu+3sigma"`` is the paper's θ = μ + 3σ of the server's
training errors (section 4), which flagged 0-1.8 % of the records on eleven ODDS sets
(``docs/rmp.md``); the model file and the mining server keep that θ whatever the estimator
uses.

Defaults (our measurements, ``docs/rmp.md``): ``epochs`` 300 (the paper: 300 to 1000),
SGD mini-batches of 32 records, the squared error averaged over the outputs
(``loss="mean"``), ``input_scaling="minmax"``. ``loss="sum", sgd_batch_size=128`` trains as
the former defaults did.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import OutlierMixin

from privad.accounting import Guarantee
from privad.base import (
    NotFittedError,
    PrivadEstimator,
    check_contamination,
    contamination_threshold,
)
from privad.errors import DataError, ParameterError
from privad.rmp.aann import (
    AANN,
    DEFAULT_BATCH_SIZE,
    DEFAULT_EPOCHS,
    DEFAULT_LOSS,
    AANNTraining,
    Progress,
    train_aann,
)
from privad.rmp.aann import threshold as paper_threshold
from privad.rmp.detectors import DetectorModel, check_detector
from privad.rmp.model import RMPModel
from privad.rmp.perturbation import check_alpha, guarantee
from privad.rmp.roles import PARTICIPANT_BATCH, EndUser, run_scheme
from privad.validation import check_choice, check_int, check_positive

__all__ = ["THRESHOLDS", "AANNDetector", "NotFittedError", "RMPDetector"]

THRESHOLDS = ("contamination", "mu+3sigma")
"""The estimators' threshold rules: PyOD's top-``contamination`` share of the released
training scores, or the paper's θ = μ + 3σ (section 4)."""


class _AANNEstimator(OutlierMixin, PrivadEstimator):
    """Shared scikit-learn plumbing and the AANN's parameters.

    PyOD's detector contract: after ``fit``, ``decision_scores_`` (the training records'
    scores, higher = more anomalous), ``threshold_`` (by the ``threshold`` rule, one of
    :data:`THRESHOLDS`) and ``labels_`` (``decision_scores_ > threshold_`` as 0/1,
    1 = anomaly). ``predict`` returns 0/1 with 1 = anomaly (PyOD's convention, not
    scikit-learn's ±1).
    """

    def _threshold_rule(self) -> tuple[str, float]:
        """The validated ``threshold`` rule and ``contamination`` (checked before training,
        whichever rule is chosen)."""
        rule = check_choice(self.threshold, "threshold", THRESHOLDS)
        return rule, check_contamination(self.contamination)

    def _label_training_records(
        self, data: np.ndarray, rule: str, contamination: float, theta: float
    ) -> None:
        """PyOD's fitted attributes from the training records' released scores; ``theta``
        is the paper's μ + 3σ, used with ``threshold="mu+3sigma"``."""
        self.decision_scores_ = self.decision_function(data)
        if rule == "contamination":
            theta = contamination_threshold(self.decision_scores_, contamination)
        self.threshold_ = float(theta)
        self.labels_ = (self.decision_scores_ > self.threshold_).astype(np.int64)

    def predict(self, X: Any) -> np.ndarray:
        """0/1 per row, 1 = anomaly: ``decision_function(X) > threshold_``."""
        return (self.decision_function(X) > self.threshold_).astype(np.int64)

    def _training(self) -> AANNTraining:
        """The flat AANN parameters as the one :class:`~privad.rmp.aann.AANNTraining` (which
        validates them; ``sgd_batch_size`` is its ``batch_size``)."""
        return AANNTraining(
            hidden=self.hidden,
            epochs=self.epochs,
            learning_rate=self.learning_rate,
            momentum=self.momentum,
            init_range=self.init_range,
            batch_size=check_int(self.sgd_batch_size, "sgd_batch_size", minimum=1),
            activation=self.activation,
            input_scaling=self.input_scaling,
            loss=self.loss,
        )

    def _check_X(self, X: Any) -> np.ndarray:
        return self._validate(X, reset=False, min_rows=0)

    n_features_in_: int


class RMPDetector(_AANNEstimator):
    """Privacy-preserving collaborative anomaly detection with RMP (sections 3-4, 6).

    Parameters
    ----------
    alpha : float in (0, 1), default 0.01
        α of eq. (1): each participant's T_i = T + U(−α, α).
    r : int in [1, n − 1], default 1
        n − w, the dimensions RMP drops (r = 1 in Table 1; w < n is enforced).
    hidden : int >= 1 or None
        Hidden units of the AANN; default about w / 2 (section 6).
    epochs : int >= 1, default :data:`DEFAULT_EPOCHS` (300)
    learning_rate : float > 0, default 0.25
    momentum : float in [0, 1), default 0.85
    batch_size : int >= 1, default 30
        Records per participant: "partitioned horizontally among the participants in
        batches of 30 records" (section 6). Each batch gets its own T_i.
    sgd_batch_size : int >= 1, default 32
        Records per SGD step of the AANN's training (our reconstruction).
    init_range : float > 0, default 0.1
        Initial weights and biases U(−init_range, init_range) (section 6).
    activation : str, default "logistic"
        Hidden activation (reconstruction; see :mod:`privad.rmp.aann`).
    input_scaling : {"minmax", "zscore", "none"}, default "minmax"
        Server-side scaling of the perturbed records (reconstruction; no effect on privacy).
    loss : {"mean", "sum"}, default "mean"
        A record's training loss: its squared error averaged over the w outputs, or summed
        (scikit-learn's gradient; unstable for w above about 110 with the paper's learning
        rate and momentum; see :mod:`privad.rmp.aann`).
    shuffle : bool, default True
        Permute the records before cutting them into participants' batches.
    beta : float > 0 or None
        β of eq. (2); default β* ≈ 2.8124.
    random_state : seed, ``privad.noise.Randomness`` or None
        T, the partition, every Δ_i and the training draw from it.
    contamination : float in (0, 0.5], default 0.1
        PyOD's ``contamination``: with ``threshold="contamination"``, ``labels_`` flags
        this share of the training records (the top of ``decision_scores_``).
    threshold : {"contamination", "mu+3sigma"}, default "contamination"
        ``"contamination"``: ``threshold_`` is the ``100 (1 - contamination)`` percentile
        of ``decision_scores_`` (post-processing of released scores, no privacy cost).
        ``"mu+3sigma"``: the paper's θ = μ + 3σ of the server's training errors on the
        perturbed records (section 4), the θ of the model file.
    detector : None or a detector instance, default None
        ``None``: the paper's AANN (section 6). Otherwise the server trains a
        :func:`sklearn.base.clone` of this detector on the perturbed records (rows,
        m x w) instead, and end-users score ``model_.transform(X)`` (double logistic and
        the public T) with it; participants, T_i and the guarantee are unchanged. It must
        follow PyOD's convention: ``fit(X)`` and ``decision_function(X)``, higher = more
        anomalous (any PyOD detector; a scikit-learn outlier detector wrapped in
        :class:`~privad.rmp.detectors.SklearnOutlierAdapter`). Every ``random_state`` of
        the clone is drawn from ``random_state``, so a seed reproduces the run. The
        detector's own ``threshold_`` is not used (``threshold`` decides). The
        AANN's parameters (``hidden`` … ``loss``) are then unused, ``fit``'s
        ``progress`` is not called, and ``model_`` is a
        :class:`~privad.rmp.detectors.DetectorModel`, which cannot be saved (the model
        file holds only the AANN; no pickle).

    Fitted attributes
    -----------------
    ``model_`` (:class:`~privad.rmp.model.RMPModel`, or
    :class:`~privad.rmp.detectors.DetectorModel` with a ``detector``), ``T_`` (the public
    matrix), ``decision_scores_`` (the training records' scores on the end-user's path),
    ``threshold_``, ``labels_``, ``n_features_in_`` (n), ``w_``, ``n_participants_``.

    Examples
    --------
    >>> from privad.datasets import inject_uniform_anomalies, load
    >>> from privad.rmp import RMPDetector
    >>> data = inject_uniform_anomalies(load("abalone"), 0.05, n_first=300, rng=0)
    >>> d = RMPDetector(alpha=0.1, contamination=0.05, epochs=20, random_state=0).fit(data.X)
    >>> round(float(d.labels_.mean()), 2)
    0.05
    >>> paper = RMPDetector(alpha=0.1, threshold="mu+3sigma", epochs=20, random_state=0)
    >>> bool(paper.fit(data.X).threshold_ == paper.model_.threshold)
    True
    """

    def __init__(
        self,
        alpha: float = 0.01,
        r: int = 1,
        hidden: int | None = None,
        epochs: int = DEFAULT_EPOCHS,
        learning_rate: float = 0.25,
        momentum: float = 0.85,
        batch_size: int = PARTICIPANT_BATCH,
        sgd_batch_size: int = DEFAULT_BATCH_SIZE,
        init_range: float = 0.1,
        activation: str = "logistic",
        input_scaling: str = "minmax",
        loss: str = DEFAULT_LOSS,
        shuffle: bool = True,
        beta: float | None = None,
        random_state: Any = None,
        contamination: float = 0.1,
        threshold: str = "contamination",
        detector: Any = None,
    ) -> None:
        self.alpha = alpha
        self.r = r
        self.hidden = hidden
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.batch_size = batch_size
        self.sgd_batch_size = sgd_batch_size
        self.init_range = init_range
        self.activation = activation
        self.input_scaling = input_scaling
        self.loss = loss
        self.shuffle = shuffle
        self.beta = beta
        self.random_state = random_state
        self.contamination = contamination
        self.threshold = threshold
        self.detector = detector

    def fit(self, X: Any, y: Any = None, progress: Progress | None = None) -> RMPDetector:
        """Run the scheme on the rows of ``X`` (m x n, m >= 2, n >= 2); ``y`` is ignored.

        ``progress``, if given, is called as ``progress(epoch, epochs)`` during training.
        """
        alpha = check_alpha(self.alpha)
        training = self._training()
        rule, contamination = self._threshold_rule()
        batch = check_int(self.batch_size, "batch_size", minimum=1)
        if not isinstance(self.shuffle, bool | np.bool_):
            raise ParameterError(f"shuffle must be True or False, got {self.shuffle!r}")
        beta = None if self.beta is None else check_positive(self.beta, "beta")
        detector = None if self.detector is None else check_detector(self.detector)
        data = self._validate(X, reset=True, min_rows=2)
        n = data.shape[1]
        if n < 2:
            raise DataError(
                f"RMP needs at least 2 features (w = n - r >= 1 with r >= 1), got n_features = {n}"
            )
        r = check_int(self.r, "r", minimum=1, maximum=n - 1)
        model = run_scheme(
            data,
            alpha,
            r=r,
            batch_size=batch,
            shuffle=bool(self.shuffle),
            training=training,
            beta=beta,
            rng=self.random_state,
            progress=progress,
            detector=detector,
        )
        self.model_ = model
        self.T_ = model.T
        self.n_features_in_ = n
        self.w_ = model.w
        self.n_participants_ = -(-data.shape[0] // batch)
        self._label_training_records(data, rule, contamination, model.threshold)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Reconstruction error (or the ``detector``'s score) of each row (section 4), as
        an end-user computes it with the public T; larger is more anomalous."""
        self._require_fitted("model_")
        return EndUser(self.model_).decision_function(self._check_X(X))

    @property
    def guarantee(self) -> Guarantee:
        """What the fitted scheme promises (:func:`privad.rmp.perturbation.guarantee`)."""
        self._require_fitted("model_")
        return guarantee(check_alpha(self.alpha), self.w_, self.n_features_in_)

    @property
    def model(self) -> RMPModel | DetectorModel:
        """The trained model M (``model_``)."""
        self._require_fitted("model_")
        return self.model_


class AANNDetector(_AANNEstimator):
    """The non-private baseline: the same AANN on the raw records ("Raw", Table 1).

    Parameters are those of :class:`RMPDetector` that concern the AANN: ``hidden`` (default
    about n / 2), ``epochs``, ``learning_rate``, ``momentum``, ``sgd_batch_size``,
    ``init_range``, ``activation``, ``input_scaling``, ``loss``, ``random_state``, and the
    threshold's ``contamination`` (0.1) and ``threshold`` (``"contamination"``, or
    ``"mu+3sigma"``: μ + 3σ of the training errors).

    Fitted attributes: ``aann_`` (:class:`~privad.rmp.aann.AANN`), ``decision_scores_``,
    ``threshold_``, ``labels_``, ``n_features_in_``.

    Examples
    --------
    >>> from privad.datasets import inject_uniform_anomalies, load
    >>> from privad.rmp import AANNDetector
    >>> data = inject_uniform_anomalies(load("abalone"), 0.05, n_first=300, rng=0)
    >>> d = AANNDetector(contamination=0.05, epochs=20, random_state=0).fit(data.X)
    >>> round(float(d.labels_.mean()), 2)
    0.05
    """

    def __init__(
        self,
        hidden: int | None = None,
        epochs: int = DEFAULT_EPOCHS,
        learning_rate: float = 0.25,
        momentum: float = 0.85,
        sgd_batch_size: int = DEFAULT_BATCH_SIZE,
        init_range: float = 0.1,
        activation: str = "logistic",
        input_scaling: str = "minmax",
        loss: str = DEFAULT_LOSS,
        random_state: Any = None,
        contamination: float = 0.1,
        threshold: str = "contamination",
    ) -> None:
        self.hidden = hidden
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.sgd_batch_size = sgd_batch_size
        self.init_range = init_range
        self.activation = activation
        self.input_scaling = input_scaling
        self.loss = loss
        self.random_state = random_state
        self.contamination = contamination
        self.threshold = threshold

    def fit(self, X: Any, y: Any = None, progress: Progress | None = None) -> AANNDetector:
        """Train the AANN on the rows of ``X`` (m x n, m >= 2); ``y`` is ignored."""
        training = self._training()
        rule, contamination = self._threshold_rule()
        data = self._validate(X, reset=True, min_rows=2)
        aann: AANN = train_aann(data, training, rng=self.random_state, progress=progress)
        self.aann_ = aann
        self._label_training_records(data, rule, contamination, paper_threshold(aann.errors(data)))
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Reconstruction error of each row; larger is more anomalous."""
        self._require_fitted("aann_")
        return self.aann_.errors(self._check_X(X))
