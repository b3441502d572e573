"""`RelaxedDPDetector`: the relaxed-DP scheme (perturb, detect, correct) as an estimator.

Böhler, Bernau, Kerschbaum, "Privacy-preserving outlier detection for data streams"
(DBSec 2017), sections 4–6: a sensor perturbs its records with the relaxed sensitivity
(Theorem 2), an analyst runs ``f_outlier`` on the perturbed records 𝒯', and a correction
server, which sees only distance differences, turns the presumed outliers O' into a set
that contains the true ones (Fig. 2, reconstructed in :mod:`privad.relaxed.correction`).
The estimator plays the three parties in one process, through the same objects as the
services and :func:`~privad.relaxed.pipeline.run_pipeline`:

* ``fit(X)`` fixes the public parameters from the history (RS by eq. 1 unless given,
  DBSCAN's calibration, w_O and ρ: :func:`~privad.relaxed.pipeline.calibrate`), then
  releases X as one window;
* every window (the fitted X, or any X given to :meth:`predict` /
  :meth:`decision_function`) is one run of :func:`~privad.relaxed.protocol.run_protocol`
  with a fresh :class:`~privad.relaxed.parties.Analyst` and
  :class:`~privad.relaxed.parties.CorrectionServer` and the fitted
  :class:`~privad.relaxed.parties.Sensor`; its guarantee (``Sensor.release_guarantee()``:
  𝒯', and in the protected exchange the noisy d_diff) is reserved on the estimator's
  ledger ``ledger_`` (or the ``ledger`` and ``scope`` given to the call) before the sensor
  draws any noise, and committed when the run is complete;
* a window is released once: the same records asked again get the recorded answers
  (:meth:`privad.base.PrivadEstimator._released`), so repeated calls cannot average the
  noise away.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
from sklearn.base import OutlierMixin

from privad.accounting import RELAXED_DP, Guarantee, Ledger
from privad.base import (
    PrivadEstimator,
    check_contamination,
    check_ledger_scope,
    contamination_threshold,
    row_hashes,
)
from privad.errors import DataError, ParameterError, PrivacyWarning
from privad.noise import as_randomness
from privad.relaxed.detectors import ScoringOutlierDetector, laplace_scores, projection_scores
from privad.relaxed.messages import SensorToAnalyst
from privad.relaxed.parties import Sensor
from privad.relaxed.pipeline import Calibration, RelaxedReconstruction, calibrate
from privad.relaxed.protocol import ProtocolRun, run_protocol
from privad.relaxed.sensitivity import (
    check_p_o,
    check_relaxed_sensitivity,
    relaxed_sensitivity,
)
from privad.relaxed.views import ProtocolViews
from privad.validation import check_array, check_choice, check_epsilon, check_probability

__all__ = ["SCORES", "RelaxedDPDetector"]

SCORES: tuple[str, ...] = ("analyst", "laplace", "projection")
"""What ``decision_scores_`` are: the analyst's own score (a scoring detector's
``decision_function``; with DBSCAN the centre distance of step 4) or one of the noise-aware
scores :func:`~privad.relaxed.detectors.laplace_scores` and
:func:`~privad.relaxed.detectors.projection_scores`; all read 𝒯' and its public parameters
only."""


@dataclass(frozen=True, eq=False)
class _Window:
    """What one window's release gave the analyst (arrays in the order of its records).

    Attributes
    ----------
    labels
        0/1 per record: the top ``contamination`` share of ``scores``, or (without
        contamination) the candidates.
    candidates
        0/1 per record, 1 = in the corrected output TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3.
    presumed_labels
        0/1 per record, 1 = in O' = f_outlier(𝒯') (no correction).
    scores
        the score of each record on 𝒯' (higher = more anomalous; see
        :class:`RelaxedDPDetector`).
    threshold
        PyOD's threshold of ``scores`` with ``contamination``; without it θ of a scoring
        detector on this window (None for DBSCAN).
    run
        the :class:`~privad.relaxed.protocol.ProtocolRun` (transcript, timings).
    spend_id
        the ledger spend of the window.
    """

    labels: np.ndarray
    candidates: np.ndarray
    presumed_labels: np.ndarray
    scores: np.ndarray
    threshold: float | None
    run: ProtocolRun
    spend_id: int


def _indicator(indices: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    out[indices] = 1
    return out


class RelaxedDPDetector(OutlierMixin, PrivadEstimator):
    """Relaxed-DP outlier detection with correction (Böhler, Bernau, Kerschbaum 2017).

    Parameters
    ----------
    epsilon : float > 0
        ε of the sensor's perturbation: ``Lap(RS_j/ε)`` per value (Definition 3), ε-DP per
        value for non-outliers and ε' = ε·GS_j/RS_j for outliers (Theorem 2).
    global_sensitivity : float > 0 or array of d floats
        GS_j, the width of each column's domain (measurement units; a scalar for every
        column). Required: without a bounded domain outliers have no finite ε', so no
        guarantee could be charged to the ledger. Must be ≥ RS_j.
    relaxed_sensitivity : None, float or array of d floats, default None
        RS_j per column (measurement units); None: eq. (1) on ``history``, with
        ``sensitivity_floor``; a column eq. (1) gives 0 (constant in its central
        100 − p_o percent) is perturbed with its GS_j instead (ordinary ε-DP for that
        column, more noise), with a :class:`~privad.errors.PrivadWarning`.
    contamination : None or float in (0, 0.5], default None
        PyOD's ``contamination``: ``labels_`` and :meth:`predict` flag the records whose
        score is above the ``100 (1 − contamination)`` percentile of their window's scores
        (:func:`privad.base.contamination_threshold`), post-processing of the released
        scores. None: the paper's rule, the labels are the corrected output (the
        candidates).
    scores : {"analyst", "laplace", "projection"}, default "analyst"
        What ``decision_scores_`` are (:data:`SCORES`): the analyst's own score (see
        below); ``"laplace"``: :func:`~privad.relaxed.detectors.laplace_scores`, the
        Laplace distance of 𝒯'[j] to the median of 𝒯' in units of the known noise scale;
        or ``"projection"``: :func:`~privad.relaxed.detectors.projection_scores`, the mean
        rank of that distance and of a projection of 𝒯' on its components above the
        noise, oriented by their skew (with ``p_o``), which ranks outliers best on the
        public sets of docs/relaxed.md. All are post-processing of 𝒯'.
    sensitivity_floor : None or float in (0, 1], default None
        A floor on eq. (1) as a share of the domain: ``RS_j >= sensitivity_floor·GS_j``
        (:func:`~privad.relaxed.sensitivity.relaxed_sensitivity`), which caps the
        outliers' ε' at ``ε / sensitivity_floor`` per column at the price of more noise
        where it raises RS_j. Used only when ``relaxed_sensitivity`` is None.
    p_o : float in (0, 100), default 10
        The outlier percentage of eq. (1), of the DBSCAN calibration and of a scoring
        detector's θ.
    history : None or array (m, d), default None
        Past data that fix the public parameters: RS (unless given), DBSCAN's eps and
        minPts, w_O and ρ (:func:`~privad.relaxed.pipeline.calibrate`). None: the data given
        to ``fit``, as in the paper's experiments; those parameters then depend on the
        records they protect (they are not private), and ``fit`` issues a
        :class:`~privad.errors.PrivacyWarning`.
    detector : None or a detector instance, default None
        The analyst's ``f_outlier``. None: exact DBSCAN, the adaptive calibration of
        :func:`~privad.relaxed.pipeline.run_pipeline` (a family calibrated on the scaled
        history; on each 𝒯' the member whose noise share is closest to p_o). Otherwise any
        detector of PyOD's convention (``fit``, ``decision_function`` higher = more
        anomalous: ``pyod.models.iforest.IForest()``, ``KNN()``, a scikit-learn detector in
        :class:`~privad.detectors.SklearnOutlierAdapter`): on each window the analyst fits a
        clone on 𝒯' and O' is the records scored above the (100 − p_o)th percentile
        (:class:`~privad.relaxed.detectors.ScoringOutlierDetector`; the same rule on the
        scaled history gives the historical outliers for w_O and ρ). Its own
        ``contamination`` is not used; every ``random_state`` of the clone is drawn from
        ``rng``.
    exchange : {"protected", "unprotected"}, default "protected"
        ``"protected"``: d_diff leaves the sensor with Laplace noise under ``cs_epsilon``
        (:mod:`privad.relaxed.views`), so the correction server's view and the corrected
        output are protected and charged. ``"unprotected"``: the paper's exchange (exact
        d_diff); only 𝒯' is protected.
    cs_epsilon, tp_epsilon : float > 0 or None
        ε_CS of the d_diff noise (default: the perturbation's ε in the guarantee unit) and
        the optional ε_TP of d_TP (:class:`~privad.relaxed.parties.Sensor`).
    scaling : str or array, default "relaxed-sensitivity"
        Step 1a (:mod:`privad.relaxed.scaling`).
    guarantee_unit : {"record", "column"}, default "record"
        What one neighbouring step changes (:func:`~privad.relaxed.relaxed_guarantee`).
    reduction : {"radius", "notes"}, default "radius"
        The analyst's step-4 reduction (:mod:`privad.relaxed.correction`).
    outlier_radius : "history", "presumed" or float, default "history"
        ρ of the ``"radius"`` reduction (:func:`~privad.relaxed.pipeline.run_pipeline`).
    outlier_layer_width : float or None, default None
        w_O (scaled space); None: from the history.
    dbscan_calibration : {"adaptive", "history"}, default "adaptive"
        How DBSCAN is calibrated when ``detector`` is None.
    rng : seed, ``privad.noise.Randomness`` or None
        The sensor's noise and the analyst's detector seeds (two child streams); OS entropy
        when None.
    budget : float > 0 or None, default None
        Total ε of the records' in-memory ledger (``ledger_``, shared by every estimator of
        this process fitted on or releasing overlapping records: refits, clones, copies,
        grid-search folds; :mod:`privad.base`), notion ``"relaxed-dp"``; a window past it
        raises :class:`~privad.errors.BudgetExceededError` and releases nothing. None
        records every window without a cap of its own.
    scope : str, default "fitted-data"
        The scope of ``ledger_`` every window is charged to (sequential composition over
        windows: conservative when windows hold different people).

    Fitted attributes
    -----------------
    ``labels_`` (0/1 per fitted record, 1 = anomaly, PyOD's convention: the top
    ``contamination`` share of ``decision_scores_``, or without contamination the
    candidates), ``candidates_`` (0/1, 1 = in the corrected output TP ∪ FN_L1 ∪ FN_L2 ∪
    FN_L3, the paper's superset meant to contain every outlier) and ``n_candidates_`` (its
    size), ``decision_scores_`` (with ``scores="analyst"`` the analyst's score of each
    fitted record on 𝒯': the detector's ``decision_function`` for a scoring detector;
    with DBSCAN, which only labels, the distance of 𝒯'[j] to the centre c' of 𝒯', the
    quantity of the analyst's step 4, larger = further out; with ``scores="laplace"`` or
    ``"projection"`` :func:`~privad.relaxed.detectors.laplace_scores` or
    :func:`~privad.relaxed.detectors.projection_scores`), ``threshold_`` (PyOD's threshold
    of the scores with contamination; without it θ of a scoring detector on the fitted
    window, None with DBSCAN), ``presumed_labels_`` (O', the uncorrected detection),
    ``run_`` (the fitted window's :class:`~privad.relaxed.protocol.ProtocolRun`),
    ``relaxed_sensitivity_``, ``sensor_``, ``calibration_``
    (:class:`~privad.relaxed.pipeline.Calibration`), ``guarantee_`` (charged per window),
    ``views_`` (each party's view, :class:`~privad.relaxed.views.ProtocolViews`),
    ``ledger_``, ``scope_``, ``rng_``, ``n_features_in_``.

    Notes
    -----
    With ``contamination``, ``labels_`` is ``decision_scores_ > threshold_`` (flagging
    the top share of each window: never all or none). Without it the labels are the
    correction's output, not a threshold of the scores: the corrected set adds records
    from the false-negative layers whatever their score, and on data other than the
    paper's ring (many columns, outliers not in a far layer, noise far above the spread of
    the data) it can hold nearly every record; ``candidates_`` keeps it either way.
    ``predict`` returns 0/1 with 1 = anomaly (PyOD's convention, not scikit-learn's ±1).
    Each window is detected and corrected on its own (the centre, DBSCAN, the gap split
    and the contamination threshold depend on the whole window), so labels of a subset of
    records are a new window's, not a subset of the labels.

    Examples
    --------
    >>> import warnings
    >>> from privad.datasets import load
    >>> from privad.relaxed import RelaxedDPDetector
    >>> X = load("thyroid").X[::3]             # 1,258 records, 6 columns in [0, 1]
    >>> with warnings.catch_warnings():        # no history: parameters from the data
    ...     warnings.simplefilter("ignore")
    ...     est = RelaxedDPDetector(epsilon=1.0, global_sensitivity=1.0, contamination=0.025,
    ...                             scores="laplace", rng=0).fit(X)
    >>> round(float(est.labels_.mean()), 3)    # the top 2.5 % of the released scores
    0.025
    >>> bool(est.n_candidates_ > est.labels_.sum())   # the paper's corrected superset
    True
    """

    def __init__(
        self,
        epsilon: float,
        global_sensitivity: Any,
        relaxed_sensitivity: Any = None,
        p_o: float = 10.0,
        history: Any = None,
        contamination: float | None = None,
        scores: str = "analyst",
        sensitivity_floor: float | None = None,
        detector: Any = None,
        exchange: str = "protected",
        cs_epsilon: float | None = None,
        tp_epsilon: float | None = None,
        scaling: Any = "relaxed-sensitivity",
        guarantee_unit: str = "record",
        reduction: str = "radius",
        outlier_radius: float | str = "history",
        outlier_layer_width: float | None = None,
        dbscan_calibration: str = "adaptive",
        rng: Any = None,
        budget: float | None = None,
        scope: str = "fitted-data",
    ) -> None:
        self.epsilon = epsilon
        self.global_sensitivity = global_sensitivity
        self.relaxed_sensitivity = relaxed_sensitivity
        self.p_o = p_o
        self.history = history
        self.contamination = contamination
        self.scores = scores
        self.sensitivity_floor = sensitivity_floor
        self.detector = detector
        self.exchange = exchange
        self.cs_epsilon = cs_epsilon
        self.tp_epsilon = tp_epsilon
        self.scaling = scaling
        self.guarantee_unit = guarantee_unit
        self.reduction = reduction
        self.outlier_radius = outlier_radius
        self.outlier_layer_width = outlier_layer_width
        self.dbscan_calibration = dbscan_calibration
        self.rng = rng
        self.budget = budget
        self.scope = scope

    def _history(self, data: np.ndarray) -> np.ndarray:
        if self.history is None:
            warnings.warn(
                "RelaxedDPDetector: no history, so the public parameters (the relaxed "
                "sensitivities unless given, DBSCAN's calibration, w_O and ρ) are computed "
                "from the data they protect, as in the paper's experiments; they are not "
                "private. Pass history= (past data) for a deployment",
                PrivacyWarning,
                stacklevel=3,
            )
            return data
        H = check_array(self.history, "history")
        if H.shape[1] != data.shape[1]:
            raise DataError(f"history has {H.shape[1]} column(s) but X has {data.shape[1]}")
        return H

    def fit(
        self, X: Any, y: Any = None, *, ledger: Ledger | None = None, scope: str | None = None
    ) -> RelaxedDPDetector:
        """Fix the public parameters and release ``X`` (n, d; n ≥ 2) as one window.

        Raises :class:`~privad.errors.BudgetExceededError` (nothing released, the
        estimator left as it was) when the ledger charged cannot pay for the window. Later
        windows (:meth:`predict` on other records) use the parameters as they were at
        ``fit``.

        Parameters
        ----------
        X : array (n, d)
            The records of the first window.
        y : ignored
        ledger, scope : optional
            As in :meth:`predict`.
        """
        with self._fitting(ledger, scope):  # a refused window leaves the estimator as it was
            if self.global_sensitivity is None:
                raise ParameterError(
                    "global_sensitivity (the width of each column's domain) is required: without "
                    "it outliers get no finite ε' and the release's guarantee cannot be charged"
                )
            epsilon = check_epsilon(self.epsilon)  # the Sensor warns above 20, once
            p_o = check_p_o(self.p_o)
            if self.contamination is not None:
                check_contamination(self.contamination)
            check_choice(self.scores, "scores", SCORES)
            self._reconstruction = RelaxedReconstruction(
                reduction=self.reduction,
                outlier_radius=self.outlier_radius,
                outlier_layer_width=self.outlier_layer_width,
                dbscan_calibration=self.dbscan_calibration,
            )
            if self.budget is not None:
                check_epsilon(self.budget, "budget")
            if not isinstance(self.scope, str) or not self.scope.strip():
                raise ParameterError(f"scope must be a non-empty string, got {self.scope!r}")
            data = self._validate(X, reset=True, min_rows=2)
            H = self._history(data)
            rs = (
                self._eq1(H, p_o)
                if self.relaxed_sensitivity is None
                else check_relaxed_sensitivity(self.relaxed_sensitivity, data.shape[1])
            )
            self.rng_ = as_randomness(self.rng)
            sensor_rng, analyst_rng = self.rng_.spawn(2)
            sensor = Sensor(
                epsilon,
                rs,
                scaling=self.scaling,
                global_sensitivity=self.global_sensitivity,
                guarantee_unit=self.guarantee_unit,
                exchange=self.exchange,  # type: ignore[arg-type]
                cs_epsilon=self.cs_epsilon,
                tp_epsilon=self.tp_epsilon,
                rng=sensor_rng,
            )
            detector = (
                None
                if self.detector is None
                else ScoringOutlierDetector(self.detector, p_o, rng=analyst_rng)
            )
            self.calibration_: Calibration = calibrate(
                sensor.scale(H), p_o, replace(self._reconstruction, detector=detector)
            )
            self.sensor_ = sensor
            self.relaxed_sensitivity_ = rs
            self.views_: ProtocolViews = sensor.views()
            self.guarantee_: Guarantee = self.views_.release
            self.scope_ = self.scope.strip()
            self._open_account(row_hashes(data), Ledger, RELAXED_DP)
            self._releases = {}
            # a first release: in data's order
            window, _ = self._released(data, partial(self._window, ledger=ledger, scope=scope))
            self.labels_ = window.labels.copy()
            self.candidates_ = window.candidates.copy()
            self.n_candidates_ = int(window.candidates.sum())
            self.presumed_labels_ = window.presumed_labels.copy()
            self.decision_scores_ = window.scores.copy()
            self.threshold_ = window.threshold
            self.run_ = window.run
        return self

    def _eq1(self, history: np.ndarray, p_o: float) -> np.ndarray:
        """RS by eq. (1) on ``history``, floored at ``sensitivity_floor``·GS_j; GS_j for a
        column eq. (1) leaves at 0."""
        gs = check_relaxed_sensitivity(
            self.global_sensitivity, history.shape[1], name="global_sensitivity"
        )
        floor = None
        if self.sensitivity_floor is not None:
            share = check_probability(self.sensitivity_floor, "sensitivity_floor", low_open=True)
            floor = share * gs
        return relaxed_sensitivity(history, p_o, floor=floor, fallback=gs)

    def _window(
        self, data: np.ndarray, *, ledger: Ledger | None = None, scope: str | None = None
    ) -> _Window:
        """One window through the protocol, its guarantee reserved first (see the module) on
        ``ledger`` under ``scope`` when given, else on ``ledger_`` under ``scope_``."""
        cal = self.calibration_
        analyst = self._reconstruction.analyst(cal.detector, cal.outlier_radius)
        server = self._reconstruction.correction_server(cal.w_o)
        n = int(data.shape[0])
        with (
            self._own_ledger(RELAXED_DP, data, ledger=ledger) as book,
            book.reserve(
                self.scope_ if ledger is None else scope,
                self.guarantee_,
                f"relaxed-DP window ({n} records)",
                metadata={"n": n, "views": self.views_.to_dict()},
            ) as reservation,
        ):
            run = run_protocol(data, self.sensor_, analyst, server)
        if self.scores in ("laplace", "projection"):
            message = analyst.received[0]  # 𝒯' and its public noise scales
            assert isinstance(message, SensorToAnalyst)
            scores, theta = self._noise_aware(message), None
        elif isinstance(cal.detector, ScoringOutlierDetector):
            assert cal.detector.scores is not None
            scores, theta = cal.detector.scores, cal.detector.threshold
        else:
            scores, theta = analyst.distances(), None
        candidates = _indicator(run.outliers, n)
        labels = candidates
        if self.contamination is not None:
            theta = contamination_threshold(scores, self.contamination)
            labels = (np.asarray(scores) > theta).astype(np.int64)
        return _Window(
            labels=labels,
            candidates=candidates,
            presumed_labels=_indicator(run.presumed_outliers, n),
            scores=np.array(scores, dtype=np.float64),
            threshold=theta,
            run=run,
            spend_id=reservation.id,
        )

    def _noise_aware(self, message: SensorToAnalyst) -> np.ndarray:
        """The ``"laplace"`` or ``"projection"`` score of 𝒯' (the analyst's message only)."""
        if self.scores == "laplace":
            return laplace_scores(message.perturbed, message.noise_scale)
        return projection_scores(message.perturbed, message.noise_scale, self.p_o)

    def _answers(
        self, X: Any, ledger: Ledger | None, scope: str | None
    ) -> tuple[_Window, np.ndarray]:
        """The release of the records ``X`` as one window, and where each row of ``X`` is
        in it (recorded: the same records, in any order, get the same release, whichever
        ledger a new window is charged to)."""
        check_ledger_scope(ledger, scope)
        self._require_fitted("calibration_")
        data = self._validate(X, reset=False)
        return self._released(data, partial(self._window, ledger=ledger, scope=scope))

    def predict(
        self, X: Any, *, ledger: Ledger | None = None, scope: str | None = None
    ) -> np.ndarray:
        """PRIVATE. 0/1 per record of the window ``X`` (1 = anomaly: the top
        ``contamination`` share of the window's scores, or without it the candidates).

        Parameters
        ----------
        X : array (n, d)
            The records of the window.
        ledger, scope : optional
            Charge this :class:`~privad.accounting.Ledger` under ``scope`` (give both).
            Default: the estimator's own in-memory ledger :attr:`ledger_`, scope
            :attr:`scope_`.
        """
        window, where = self._answers(X, ledger, scope)
        return window.labels[where]

    def decision_function(
        self, X: Any, *, ledger: Ledger | None = None, scope: str | None = None
    ) -> np.ndarray:
        """PRIVATE. The analyst's score of each record of the window ``X`` on 𝒯' (higher =
        more anomalous; see the class docstring). The same release as :meth:`predict`.

        Parameters
        ----------
        X, ledger, scope
            As in :meth:`predict`.
        """
        window, where = self._answers(X, ledger, scope)
        return window.scores[where]
