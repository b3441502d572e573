"""The three parties of the correction protocol (sections 6.1, 6.2): S, A and CS.

Each class holds only its own inputs and what it has received, and its methods take and
return the typed messages of :mod:`privad.relaxed.messages`, so a network service can wrap
one party by (de)serialising those messages and nothing else:

* :class:`Sensor` S: holds 𝒯, ε and the relaxed sensitivities; steps 1a–1c and 2.
* :class:`Analyst` A: holds ``f_outlier``; receives 𝒯' and runs it (step 2), answers d_TP
  with I_L2, I_L3 (step 4), receives the corrected outliers (step 5).
* :class:`CorrectionServer` CS: holds ``w_O``; receives d_diff and O', splits O' (step 3),
  computes the false-negative layers and the output (step 5).

The semi-honest model of section 6: parties follow the protocol and keep everything they
see; at most one is corrupted. ``received`` on A and CS lists every message the party got.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np

from privad.accounting.guarantee import Guarantee
from privad.errors import DataError, ParameterError
from privad.noise import as_randomness, laplace, laplace_scale_for
from privad.relaxed.correction import (
    REDUCTIONS,
    CorrectionLayers,
    GapSplit,
    SplitRule,
    analyst_layers,
    check_percentile,
    check_split_rule,
    corrected_outliers,
    false_negative_layers,
    index_mask,
    presumed_radius,
    reduction_thresholds,
    split_presumed_outliers,
)
from privad.relaxed.detectors import OutlierDetector, as_detector
from privad.relaxed.distances import (
    D_DIFF_CENTRES,
    centre_distances,
    column_means,
    distance_differences,
)
from privad.relaxed.messages import (
    AnalystToCorrection,
    AnalystToCorrection2,
    CorrectionToAnalyst,
    CorrectionToAnalyst2,
    Message,
    ProtocolError,
    SensorToAnalyst,
    SensorToCorrection,
)
from privad.relaxed.perturbation import laplace_columns, noise_scales
from privad.relaxed.scaling import column_divisors, scale_columns
from privad.relaxed.sensitivity import (
    GUARANTEE_UNITS,
    check_global_sensitivity,
    check_relaxed_sensitivity,
    relaxed_guarantee,
)
from privad.relaxed.views import (
    ProtocolViews,
    check_exchange,
    d_diff_sensitivity,
    neighbour_diameters,
    released_guarantee,
)
from privad.validation import (
    check_array,
    check_choice,
    check_epsilon,
    check_int,
    check_nonnegative,
)

__all__ = ["ANALYST_CENTRES", "DEFAULT_CS_EPSILON_FACTOR", "Analyst", "CorrectionServer", "Sensor"]

DEFAULT_CS_EPSILON_FACTOR: float = 1.0
"""Default ε_CS as a multiple of the perturbation's ε (in the guarantee unit): the d_diff
noise then costs as much as 𝒯' (chosen from the accuracy table in docs/relaxed.md)."""

ANALYST_CENTRES: tuple[str, ...] = ("perturbed-mean",)
"""Named centres the analyst can use for I_L2/I_L3; a public vector is also accepted."""


class Sensor:
    """Party S: perturbs its data at the source (steps 1a–1c) and sends the two messages of step 2.

    Parameters
    ----------
    epsilon:
        ε > 0 (non-outliers get ε-DP per column, Theorem 2); above 20 a
        :class:`~privad.errors.PrivacyWarning`, once, when the sensor is built.
    relaxed_sensitivity:
        ``RS_j`` per column in measurement units, from historical data (eq. 1,
        :func:`~privad.relaxed.sensitivity.relaxed_sensitivity`).
    scaling:
        Step 1a (**reconstruction**): ``"relaxed-sensitivity"`` (default, divide column j by
        ``RS_j``: every column gets ``Lap(1/ε)``), ``"isotropic"``, ``"none"``, or a vector
        of public divisors; see :mod:`privad.relaxed.scaling`.
    d_diff_centres:
        Step 1c (**reconstruction**): ``"separate"`` (default: c for 𝒯, c' for 𝒯') or
        ``"original"`` (c for both, Definition 4 as printed); see
        :func:`~privad.relaxed.distances.distance_differences`.
    global_sensitivity:
        Optional ``GS_j`` per column (domain width, measurement units) for the outliers' ε'
        in :meth:`guarantee`.
    guarantee_unit:
        ``"record"`` (default) or ``"column"``; see
        :func:`~privad.relaxed.sensitivity.relaxed_guarantee`.
    exchange:
        ``"protected"`` (default): d_diff leaves the sensor with ``Lap(Δ₁/ε_CS)`` noise per
        entry, Δ₁ the L1 sensitivity of d_diff given 𝒯' (eq. V2 of
        :mod:`privad.relaxed.views`), so the correction server's view and the corrected
        output are protected. ``"unprotected"``: the paper's exchange, d_diff exact; then
        the correction server's view and the analyst's d_TP and output carry **no**
        guarantee (see :meth:`views`).
    cs_epsilon:
        ε_CS of the d_diff noise, in the guarantee unit (per record by default). ``None``
        (default): :data:`DEFAULT_CS_EPSILON_FACTOR` times the perturbation's ε in that unit
        (chosen from the accuracy table in docs/relaxed.md).
    tp_epsilon:
        Optional ε_TP (protected exchange only): the sensor draws ``Lap(Δ_∞/ε_TP)`` (Δ_∞ of
        eq. V2) and sends it with d_diff (``tp_noise``); the correction server adds it to
        d_TP before sending d_TP to the analyst. d_TP alone is then ``min(ε_TP, ε_CS)``-DP
        given 𝒯'; the analyst's whole view stays ε_T + ε_CS (the corrected outliers are a
        function of the noisy d_diff), and the release costs nothing more, since the noise is
        independent of the data (see :mod:`privad.relaxed.views`). Default ``None``: no
        d_TP noise.
    rng:
        :class:`privad.noise.Randomness`, a seed, or ``None`` (OS entropy).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import Sensor
    >>> sensor = Sensor(0.5, [2.0, 4.0], global_sensitivity=[20.0, 40.0], rng=0)
    >>> sensor.divisors.tolist()  # step 1a: column j divided by RS_j
    [2.0, 4.0]
    >>> sensor.noise_scale.round(6).tolist()  # step 1b: Lap(1/ε) per scaled column
    [2.0, 2.0]
    >>> g = sensor.guarantee()  # Theorem 2 per record: d·ε, and Σ_j ε·GS_j/RS_j for outliers
    >>> g.epsilon, g.epsilon_outlier
    (1.0, 10.0)
    >>> sensor.views().release.epsilon  # with the protected exchange's ε_CS (eq. V2)
    2.0
    >>> to_analyst, to_correction = sensor.perturb(np.zeros((3, 2)))  # steps 1a-1c and 2
    >>> to_analyst.perturbed.shape, to_correction.d_diff.shape
    ((3, 2), (3,))
    """

    def __init__(
        self,
        epsilon: float,
        relaxed_sensitivity: Any,
        *,
        scaling: Any = "relaxed-sensitivity",
        d_diff_centres: Literal["separate", "original"] = "separate",
        global_sensitivity: Any = None,
        guarantee_unit: Literal["record", "column"] = "record",
        exchange: Literal["protected", "unprotected"] = "protected",
        cs_epsilon: float | None = None,
        tp_epsilon: float | None = None,
        rng: Any = None,
    ) -> None:
        self.epsilon = check_epsilon(epsilon, per_answer=True)  # the one check of a run
        self.relaxed_sensitivity = check_relaxed_sensitivity(relaxed_sensitivity)
        self.divisors = column_divisors(scaling, self.relaxed_sensitivity)
        self.scaling = scaling if isinstance(scaling, str) else "explicit"
        self.noise_scale = noise_scales(self.relaxed_sensitivity, self.divisors, self.epsilon)
        self.d_diff_centres = check_choice(d_diff_centres, "d_diff_centres", D_DIFF_CENTRES)
        self.global_sensitivity = (
            None
            if global_sensitivity is None
            else check_global_sensitivity(global_sensitivity, self.relaxed_sensitivity)
        )
        self.guarantee_unit = check_choice(guarantee_unit, "guarantee_unit", GUARANTEE_UNITS)
        self.exchange, cs_eps, self.tp_epsilon = check_exchange(exchange, cs_epsilon, tp_epsilon)
        self.diameters = neighbour_diameters(
            self.relaxed_sensitivity, self.divisors, self.global_sensitivity, self.guarantee_unit
        )
        unit_epsilon = self.epsilon * (self.n_columns if self.guarantee_unit == "record" else 1)
        self.cs_epsilon = cs_eps
        if self.exchange == "protected" and cs_eps is None:
            self.cs_epsilon = DEFAULT_CS_EPSILON_FACTOR * unit_epsilon
        self._rng = as_randomness(rng)

    @property
    def n_columns(self) -> int:
        """d, the number of measured attributes."""
        return int(self.relaxed_sensitivity.size)

    def guarantee(self) -> Guarantee:
        """Theorem 2 as data (needs ``global_sensitivity``: without a domain bound outliers
        have no finite ε')."""
        if self.global_sensitivity is None:
            raise ParameterError(
                "the sensor's guarantee for outliers needs global_sensitivity (the width of "
                "each column's domain); without it non-outliers get ε but outliers get no "
                "finite ε'"
            )
        return relaxed_guarantee(
            self.epsilon,
            self.relaxed_sensitivity,
            self.global_sensitivity,
            unit=self.guarantee_unit,  # type: ignore[arg-type]
        )

    def views(self) -> ProtocolViews:
        """Each party's view of one run (window) and its guarantee, as data (needs
        ``global_sensitivity``); ``views().release`` is what the ledger is charged.

        See :mod:`privad.relaxed.views` for the derivation (eqs. V1, V2)."""
        d_n, d_g = self.diameters
        assert d_g is not None or self.global_sensitivity is None
        return released_guarantee(
            self.guarantee(),
            exchange=self.exchange,
            cs_epsilon=self.cs_epsilon,
            tp_epsilon=self.tp_epsilon,
            d_n=d_n,
            d_g=d_g if d_g is not None else d_n,
        )

    def release_guarantee(self) -> Guarantee:
        """The guarantee of everything one window releases (𝒯', d_diff, d_TP): what a
        protocol run charges. Equals :meth:`guarantee` for the unprotected exchange, whose
        d_diff and d_TP carry no guarantee (see :meth:`views`)."""
        return self.views().release

    def d_diff_noise_scales(self, n: int) -> tuple[float | None, float | None]:
        """The Laplace scales ``(Δ₁/ε_CS, Δ_∞/ε_TP)`` for a window of ``n`` records (eq. V2);
        ``None`` where no noise is added.

        Each scale is :func:`~privad.noise.laplace_scale_for`'s, which adds the grid
        snapping's 2^k per coordinate that can move to the sensitivity: d_diff is a vector
        of ``n`` entries and one changed record moves all of them (the centres move), so
        its scale counts ``n`` coordinates; d_TP's noise is one number.
        """
        d_n, _ = self.diameters
        n = check_int(n, "n", minimum=0)
        l1, linf = d_diff_sensitivity(d_n, n, self.d_diff_centres)
        cs = (
            None
            if self.cs_epsilon is None
            else float(laplace_scale_for(l1, self.cs_epsilon, coordinates=max(n, 1)))
        )
        tp = None if self.tp_epsilon is None else float(laplace_scale_for(linf, self.tp_epsilon))
        return cs, tp

    def check_data(self, data: Any) -> np.ndarray:
        """Validate 𝒯 (n × d, finite, d = number of relaxed sensitivities)."""
        T = check_array(data, "data")
        if T.shape[1] != self.n_columns:
            raise DataError(
                f"data has {T.shape[1]} column(s) but the sensor has {self.n_columns} relaxed "
                "sensitivities"
            )
        return T

    def scale(self, data: Any) -> np.ndarray:
        """Step 1a: 𝒯 divided column-wise by the public divisors (public, deterministic)."""
        return scale_columns(self.check_data(data), self.divisors)

    def perturb(self, data: Any) -> tuple[SensorToAnalyst, SensorToCorrection]:
        """Steps 1a–1c and 2: scale, add Laplace noise per column, compute d_diff.

        Returns the message for the analyst (𝒯' and public parameters) and the message for
        the correction server (indices and d_diff). The noise itself is not kept. In the
        protected exchange d_diff carries ``Lap(Δ₁/ε_CS)`` noise and, with ``tp_epsilon``,
        the message holds the d_TP noise ``Lap(Δ_∞/ε_TP)`` (eq. V2).
        """
        T = self.scale(data)
        T_prime = laplace_columns(T, self.noise_scale, self._rng)
        d_diff = distance_differences(T, T_prime, centres=self.d_diff_centres)  # type: ignore[arg-type]
        cs_scale, tp_scale = self.d_diff_noise_scales(T.shape[0])
        if cs_scale is not None:
            d_diff = laplace(d_diff, cs_scale, self._rng)
        tp_noise = 0.0 if tp_scale is None else float(laplace(np.zeros(1), tp_scale, self._rng)[0])
        to_analyst = SensorToAnalyst(
            perturbed=T_prime,
            divisors=self.divisors,
            noise_scale=self.noise_scale,
            epsilon=self.epsilon,
        )
        to_correction = SensorToCorrection(
            indices=np.arange(T.shape[0], dtype=np.int64), d_diff=d_diff, tp_noise=tp_noise
        )
        return to_analyst, to_correction


class Analyst:
    """Party A: holds 𝒯' only; runs ``f_outlier`` and computes the index sets of step 4.

    Parameters
    ----------
    detector:
        ``f_outlier``, any :class:`~privad.relaxed.detectors.OutlierDetector` (the same one,
        with the same parameters, that defines O on 𝒯 in an evaluation).
    centre:
        The centre for ``d(𝒯'[j])`` in step 4. **Reconstruction**: section 6.2 writes
        ``d_c(𝒯'[j])`` with c the centre of 𝒯, which the analyst cannot know; the default
        ``"perturbed-mean"`` uses ``c'`` = the column means of 𝒯' (the centre the sensor
        uses for 𝒯' in d_diff). A public vector (scaled space) may be given instead.
    reduction:
        Step 4's thresholds (**reconstruction**, see :mod:`privad.relaxed.correction`):
        ``"radius"`` (default since this version: ``I_L2 = {j : d ≥ ρ}``,
        ``I_L3 = {j : d ≥ ρ + max(0, d_TP)}``, the "core distance" reduction of
        section 6.1) or ``"notes"`` (the previous default, ``docs/papers.md`` literally:
        ``d ≥ d_TP`` and ``d ≥ d_TP + w_O``, which on the paper's data makes I_L3 every
        record whenever d_TP < 0). The messages are the same for both.
    outlier_radius:
        ρ for ``"radius"``: the inner radius of the outlier layer in the scaled space, a
        public constant fixed from historical outliers
        (:func:`~privad.relaxed.correction.estimate_outlier_layer_radius`), like DBSCAN's
        parameters. ``None`` (default): the analyst estimates it from what it holds,
        ``ρ̂ = percentile_{j ∈ O'} d(𝒯'[j]) − w_O``
        (:func:`~privad.relaxed.correction.presumed_radius`).
    radius_percentile:
        The percentile of that estimate (default 50: the median perturbed core distance of
        the presumed outliers).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.relaxed import Analyst, DBSCANDetector, Sensor
    >>> T = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1], [5.0, 5.0]])
    >>> to_analyst, _ = Sensor(20.0, [1.0, 1.0], rng=0).perturb(T)  # S's step 2 message
    >>> analyst = Analyst(DBSCANDetector(eps=0.5, min_samples=3))
    >>> analyst.receive_data(to_analyst).presumed_outliers.tolist()  # O' = f_outlier(𝒯')
    [4]
    """

    def __init__(
        self,
        detector: OutlierDetector,
        *,
        centre: Any = "perturbed-mean",
        reduction: str = "radius",
        outlier_radius: float | None = None,
        radius_percentile: float = 50.0,
    ) -> None:
        self.detector = as_detector(detector)
        self.reduction = check_choice(reduction, "reduction", REDUCTIONS)
        self.outlier_radius = (
            None if outlier_radius is None else check_nonnegative(outlier_radius, "outlier_radius")
        )
        self.radius_percentile = check_percentile(radius_percentile, "radius_percentile")
        self.thresholds: tuple[float, float] | None = None
        if isinstance(centre, str):
            self.centre_rule: str | None = check_choice(centre, "centre", ANALYST_CENTRES)
            self.public_centre: np.ndarray | None = None
        else:
            self.centre_rule = None
            self.public_centre = check_array(centre, "centre", ndim=1)
        self.received: list[Message] = []
        self.perturbed: np.ndarray | None = None
        self.presumed_outliers: np.ndarray | None = None
        self.outliers: np.ndarray | None = None
        self._distances: np.ndarray | None = None

    def receive_data(self, message: SensorToAnalyst) -> AnalystToCorrection:
        """Step 2: store 𝒯', run ``f_outlier`` on it, send O' to the correction server."""
        _expect(message, SensorToAnalyst)
        if self.perturbed is not None:
            raise ProtocolError("the analyst already received its data for this run")
        if self.public_centre is not None and self.public_centre.size != message.perturbed.shape[1]:
            raise DataError(
                f"centre has {self.public_centre.size} coordinate(s) but 𝒯' has "
                f"{message.perturbed.shape[1]} column(s)"
            )
        self.received.append(message)
        self.perturbed = message.perturbed
        found = _as_indices(np.asarray(self.detector(message.perturbed)), "f_outlier(𝒯')")
        n = message.perturbed.shape[0]
        if found.size and (int(found.min()) < 0 or int(found.max()) >= n):
            raise DataError(f"f_outlier(𝒯') returned an index outside 0..{n - 1}")
        mask = np.zeros(n, dtype=bool)
        mask[found] = True  # duplicates from a detector are harmless
        self.presumed_outliers = np.flatnonzero(mask)
        return AnalystToCorrection(presumed_outliers=self.presumed_outliers)

    def centre(self) -> np.ndarray:
        """The analyst's centre: c' (column means of 𝒯') or the public centre."""
        if self.perturbed is None:
            raise ProtocolError("the analyst has no data yet")
        if self.public_centre is not None:
            return self.public_centre
        return column_means(self.perturbed)

    def distances(self) -> np.ndarray:
        """``d(𝒯'[j])`` for every record, from :meth:`centre` (computed once, cached)."""
        if self._distances is None:
            if self.perturbed is None:
                raise ProtocolError("the analyst has no data yet")
            self._distances = centre_distances(self.perturbed, self.centre())
        return self._distances

    def receive_thresholds(self, message: CorrectionToAnalyst) -> AnalystToCorrection2:
        """Step 4: ``I_L2 = {j : d(𝒯'[j]) ≥ t2}``, ``I_L3 = {j : d(𝒯'[j]) ≥ t3}``.

        ``(t2, t3)`` is ``(ρ, ρ + max(0, d_TP))`` for ``"radius"`` and
        ``(d_TP, d_TP + w_O)`` for ``"notes"``; kept in :attr:`thresholds` (the analyst's
        own state, never sent)."""
        _expect(message, CorrectionToAnalyst)
        if self.presumed_outliers is None:
            raise ProtocolError("the analyst received thresholds before its data")
        self.received.append(message)
        empty = np.zeros(0, dtype=np.int64)
        if message.d_tp is None:
            return AnalystToCorrection2(i_l2=empty, i_l3=empty)
        distances = self.distances()
        rho = self.outlier_radius
        if self.reduction == "radius" and rho is None:
            rho = presumed_radius(
                distances, self.presumed_outliers, message.w_o, self.radius_percentile
            )
        self.thresholds = reduction_thresholds(
            message.d_tp, message.w_o, reduction=self.reduction, outlier_radius=rho
        )
        i_l2, i_l3 = analyst_layers(
            self.perturbed,  # type: ignore[arg-type]
            message.d_tp,
            message.w_o,
            distances=distances,
            reduction=self.reduction,
            outlier_radius=rho,
        )
        return AnalystToCorrection2(i_l2=i_l2, i_l3=i_l3)

    def receive_result(self, message: CorrectionToAnalyst2) -> np.ndarray:
        """Step 5: the corrected outlier indices ``TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3``."""
        _expect(message, CorrectionToAnalyst2)
        if self.perturbed is None:
            raise ProtocolError("the analyst received a result before its data")
        self.received.append(message)
        index_mask(message.outliers, self.perturbed.shape[0], "outliers")
        self.outliers = message.outliers
        return self.outliers


class CorrectionServer:
    """Party CS: holds ``w_O``; sees only d_diff (indexed) and index sets, never 𝒯 or 𝒯'.

    Parameters
    ----------
    outlier_layer_width:
        ``w_O >= 0`` in the scaled space, fixed from historical data
        (:func:`~privad.relaxed.correction.estimate_outlier_layer_width`).
    rule:
        **Reconstruction** choices of step 3
        (:class:`~privad.relaxed.correction.SplitRule`; default "when in doubt keep in TP"
        with the paper's minima). ``rule.d_tp_percentile`` and ``rule.d_tp_floor`` change
        the value sent to the analyst (still one d_TP, as section 6.2 allows);
        ``rule.d_fp_rule`` stays with the correction server.

    Examples
    --------
    >>> from privad.relaxed import CorrectionServer, SplitRule
    >>> server = CorrectionServer(3.4, rule=SplitRule(max_fp_share=0.3))  # w_O, step 3's rule
    >>> server.rule.max_fp_share
    0.3

    It takes part in a run through :func:`~privad.relaxed.run_protocol`.
    """

    def __init__(self, outlier_layer_width: float, rule: SplitRule = SplitRule()) -> None:
        self.w_o = check_nonnegative(outlier_layer_width, "outlier_layer_width")
        self.rule = check_split_rule(rule)
        self.received: list[Message] = []
        self.d_diff: np.ndarray | None = None
        self.tp_noise = 0.0
        self.presumed_mask: np.ndarray | None = None
        self.split: GapSplit | None = None
        self.layers: CorrectionLayers | None = None
        self.outliers: np.ndarray | None = None

    @property
    def n(self) -> int:
        """The number of records (known from d_diff)."""
        if self.d_diff is None:
            raise ProtocolError("the correction server has no distance differences yet")
        return int(self.d_diff.size)

    def receive_differences(self, message: SensorToCorrection) -> None:
        """Step 2: store d_diff, re-indexed so that ``d_diff[i]`` belongs to record i."""
        _expect(message, SensorToCorrection)
        if self.d_diff is not None:
            raise ProtocolError("the correction server already received d_diff for this run")
        self.received.append(message)
        d_diff = np.empty(message.d_diff.size, dtype=np.float64)
        d_diff[message.indices] = message.d_diff
        d_diff.flags.writeable = False
        self.d_diff = d_diff
        self.tp_noise = float(message.tp_noise)

    def receive_presumed_outliers(self, message: AnalystToCorrection) -> CorrectionToAnalyst:
        """Step 3: split O' at the largest d_diff gap into FP and TP; send d_TP and w_O."""
        _expect(message, AnalystToCorrection)
        if self.d_diff is None:
            raise ProtocolError("the correction server received O' before d_diff")
        if self.split is not None:
            raise ProtocolError("the correction server already received O' for this run")
        self.received.append(message)
        self.presumed_mask = index_mask(message.presumed_outliers, self.n, "presumed_outliers")
        if self.tp_noise != 0.0 and self.rule.d_tp_percentile != 0.0:
            raise ProtocolError(
                "the sensor asked for a noisy d_TP, whose sensitivity holds for d_TP = min "
                "d_diff over O' only; use d_tp_percentile=0 with tp_epsilon"
            )
        split = split_presumed_outliers(
            self.d_diff,
            message.presumed_outliers,
            self.rule,
            w_o=self.w_o,
        )
        if split.d_tp is not None and self.tp_noise != 0.0:
            d_tp = split.d_tp + self.tp_noise
            d_fp = d_tp + self.w_o if self.rule.d_fp_rule == "layer" else split.d_fp
            split = dataclasses.replace(split, d_tp=d_tp, d_fp=d_fp)
        self.split = split
        return CorrectionToAnalyst(d_tp=self.split.d_tp, w_o=self.w_o)

    def receive_layers(self, message: AnalystToCorrection2) -> CorrectionToAnalyst2:
        """Step 5: FN_L1, FN_L2, FN_L3 and the output ``TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3``."""
        _expect(message, AnalystToCorrection2)
        if self.split is None or self.presumed_mask is None or self.d_diff is None:
            raise ProtocolError("the correction server received I_L2/I_L3 before O'")
        if self.outliers is not None:
            raise ProtocolError("the correction server already answered this run")
        self.received.append(message)
        n = self.n
        self.layers = false_negative_layers(
            self.d_diff,
            self.presumed_mask,
            index_mask(message.i_l2, n, "i_l2"),
            index_mask(message.i_l3, n, "i_l3"),
            self.split.d_tp,
            self.split.d_fp,
        )
        self.outliers = corrected_outliers(self.split.tp, self.layers, n)
        return CorrectionToAnalyst2(outliers=self.outliers)


def _expect(message: Any, kind: type[Message]) -> None:
    if not isinstance(message, kind):
        raise ProtocolError(f"expected a {kind.__name__} message, got {type(message).__name__}")


def _as_indices(values: np.ndarray, name: str) -> np.ndarray:
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        raise DataError(f"{name} must return a 1-D vector of integer row indices")
    return values.astype(np.int64, copy=False)
