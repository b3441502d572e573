"""The correction algorithm of Fig. 2 (section 6.1), split by party (section 6.2).

Figure 2 itself is missing from the paper's text; the steps below follow sections 6.1–6.2
and the reconstruction in ``docs/papers.md``. Each function receives only what its party
may know:

* :func:`split_presumed_outliers` (CS, step 3): d_diff and O' → TP, FP, d_TP, d_FP.
* :func:`analyst_layers` (A, step 4): 𝒯', d_TP and w_O (and, for the ``"radius"``
  reduction, O' and the outlier-layer radius) → I_L2, I_L3.
* :func:`false_negative_layers` (CS, step 5): d_diff, O', I_L2, I_L3, d_TP, d_FP →
  FN_L1, FN_L2, FN_L3.
* :func:`corrected_outliers` (CS, output): TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3.

All work is vectorised: one sort of d_diff restricted to O' and boolean masks over n.
:func:`estimate_outlier_layer_width` and :func:`estimate_outlier_layer_radius` fix ``w_O``
and the outlier layer's inner radius from historical data before the protocol runs.

The reduction of step 4 (**reconstruction**, :data:`REDUCTIONS`)
-----------------------------------------------------------------
Section 6.1 explains line 4: "we reduce the set of indices to check for potential false
negatives. Without the reduction true negatives can land in FN_Lj, since they have the same
distance difference (d_diff) but not the same core distance (d_c) as false negative
candidates." With the centres of step 1c, for every record j

    d_{c'}(𝒯'[j]) = d_c(𝒯[j]) + d_diff[j]                      (exact, Definition 4)

so a record whose d_diff lies in a band ``[a, b]`` and whose *unperturbed* core distance is
at least the outlier layer's inner radius ρ has ``d_{c'}(𝒯'[j]) ≥ ρ + a``, while a true
negative with the same d_diff (core distance ≤ r_N, the core's radius) has
``d_{c'}(𝒯'[j]) ≤ r_N + b``. The analyst knows ``d_{c'}(𝒯'[j])``, the correction server
knows d_diff: the threshold ``ρ + a`` sent as an index set separates the two without either
party learning the other's values. Two readings are implemented:

* ``"radius"`` (default of :class:`~privad.relaxed.parties.Analyst` and of
  :func:`~privad.relaxed.pipeline.run_pipeline`): the thresholds are the lower ends of the
  two d_diff bands plus ρ: ``I_L2 = {j : d_{c'}(𝒯'[j]) ≥ ρ}`` (FN_L2's band starts at 0) and
  ``I_L3 = {j : d_{c'}(𝒯'[j]) ≥ ρ + max(0, d_TP)}`` (FN_L3's band starts at d_TP; its part
  below 0 is FN_L1, which is never reduced). ρ is either given (a public constant fixed
  from historical outliers, :func:`estimate_outlier_layer_radius`) or estimated by the
  analyst from what it holds: a percentile (default the median) of ``d_{c'}(𝒯'[j])`` over
  its presumed outliers O', minus w_O. Note that the paper's own I_L3 threshold
  ``d_TP + w_O`` has exactly this form if its w_O is read as the distance from c to the
  inner edge of the outlier layer.
* ``"notes"``: ``docs/papers.md`` literally, ``I_L2 = {j : d ≥ d_TP}``,
  ``I_L3 = {j : d ≥ d_TP + w_O}`` (section 6.2's formulas with d_TP, a distance
  *difference*, compared with a distance). When some true positive moved towards the centre,
  d_TP < 0 and I_L3 is every record, so FN_L3 takes nearly all true negatives
  (``docs/relaxed_reproduction.md``). Kept as the default of the low-level
  :func:`analyst_layers` so that existing callers are unchanged.

The choices of step 3 (**reconstruction**) are one :class:`SplitRule`: the split's
``min_gap`` and ``max_fp_share``, ``d_tp_percentile`` (a low percentile of d_diff over TP
instead of the minimum, robust to single true positives that moved far inwards),
``d_tp_floor`` (e.g. 0.0: clip d_TP below at 0, where FN_L1 takes over), and ``d_fp_rule``
(``"min"``: the paper's minimum over FP; ``"percentile"``: a percentile of FP;
``"layer"``: ``d_TP + w_O``; ``"none"``: no upper bound). None of them changes a message's
fields.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.relaxed.distances import centre_distances, column_means
from privad.validation import (
    check_array,
    check_choice,
    check_nonnegative,
    check_probability,
)

__all__ = [
    "D_FP_RULES",
    "REDUCTIONS",
    "CorrectionLayers",
    "GapSplit",
    "SplitRule",
    "analyst_layers",
    "check_percentile",
    "check_split_rule",
    "corrected_outliers",
    "estimate_outlier_layer_radius",
    "estimate_outlier_layer_width",
    "false_negative_layers",
    "index_mask",
    "presumed_radius",
    "reduction_thresholds",
    "split_presumed_outliers",
]

REDUCTIONS: tuple[str, ...] = ("radius", "notes")
"""The analyst's step-4 reductions: ``"radius"`` (implied core distance, see the module
docstring) and ``"notes"`` (``docs/papers.md`` literally)."""

D_FP_RULES: tuple[str, ...] = ("min", "percentile", "layer", "none")
"""How the correction server sets d_FP, the upper d_diff bound of FN_L3: the minimum over FP
(the paper), a percentile of FP, ``d_TP + w_O`` (section 6.1: "more precise is the outlier
layer width w_O"), or no bound (+inf)."""


def check_percentile(value: Any, name: str) -> float:
    """A percentile in [0, 100]."""
    value = check_nonnegative(value, name)
    if value > 100.0:
        raise ParameterError(f"{name} must be a percentile in [0, 100], got {value!r}")
    return value


def index_mask(indices: np.ndarray, n: int, name: str) -> np.ndarray:
    """A boolean mask of length n from record indices, refusing indices ≥ n and duplicates."""
    mask = np.zeros(n, dtype=bool)
    if indices.size == 0:
        return mask
    if int(indices.max()) >= n or int(indices.min()) < 0:
        raise DataError(f"{name} holds an index outside 0..{n - 1}")
    mask[indices] = True
    if int(np.count_nonzero(mask)) != indices.size:
        raise DataError(f"{name} holds duplicate indices")
    return mask


@dataclass(frozen=True, eq=False)
class GapSplit:
    """Step 3: O' split at the largest gap of its sorted d_diff values.

    Attributes
    ----------
    tp
        presumed true positives (at or below the gap), sorted record indices.
    fp
        presumed false positives (above the gap), sorted record indices.
    d_tp
        ``min_{t ∈ TP} d_diff[t]`` (or the configured percentile, floored), ``None``
        when TP is empty. This is the value the correction server sends to A.
    d_fp
        ``min_{f ∈ FP} d_diff[f]`` (or the configured rule), ``+inf`` when FP is
        empty (no upper bound).
    gap
        the size of the gap that was split at (0.0 when no split was made).
    """

    tp: np.ndarray
    fp: np.ndarray
    d_tp: float | None
    d_fp: float
    gap: float


@dataclass(frozen=True)
class SplitRule:
    """The correction server's choices of step 3 (Fig. 2, section 6.1), checked when built.

    The paper says only that O' is split at the largest gap of d_diff, that d_TP is the
    minimum of d_diff over TP and d_FP the minimum over FP, and that true positives must not
    be removed "under any circumstances". Every field is a **reconstruction** choice; the
    defaults are the paper's minima with "when in doubt keep in TP"
    (:func:`split_presumed_outliers`). One object is passed through
    :func:`split_presumed_outliers`, :class:`~privad.relaxed.parties.CorrectionServer`,
    :class:`~privad.relaxed.pipeline.RelaxedReconstruction`, the correction service and
    ``privad serve correction``. None of the fields changes a message's fields.

    Parameters
    ----------
    min_gap : float >= 0, default 0
        The smallest gap that counts as a separation (0: always split at the largest
        candidate gap when it is positive).
    max_fp_share : float in [0, 1], default 0.5
        The largest share of O' that may be put in FP. ``1.0`` is the unrestricted largest
        gap; ``0.0`` never splits.
    d_tp_percentile : float in [0, 100], default 0
        d_TP is this percentile (linear, R type 7) of d_diff over TP. 0: the minimum, as in
        the paper; a low percentile such as 5 ignores the few true positives that moved far
        inwards (option b). It changes the value the analyst receives.
    d_tp_floor : finite float or None, default None
        If given, ``d_TP = max(d_tp_floor, ·)``; ``0.0`` keeps the layers' d_diff bands
        disjoint as section 6.1 describes them (FN_L1 below 0, FN_L2 between 0 and d_TP)
        (option b). It changes the value the analyst receives.
    d_fp_rule : {"min", "percentile", "layer", "none"}, default "min"
        The upper d_diff bound d_FP of FN_L3 (option c, :data:`D_FP_RULES`): ``"min"`` (the
        paper: the minimum over FP), ``"percentile"`` (``d_fp_percentile`` of d_diff over
        FP, robust to a single extreme false positive), ``"layer"`` (``d_TP + w_O``:
        section 6.1, "we also know that no undetected outlier's distance difference can be
        greater than [d_FP]. More precise is the outlier layer width w_O"; if detection
        means a perturbed core distance of at least some R*, then d_TP ≈ R* − (outer edge
        of the layer) and an undetected outlier has d_diff < R* − (inner edge) =
        d_TP + w_O) or ``"none"`` (+inf). ``"min"`` and ``"percentile"`` give +inf when FP
        is empty. d_FP stays with the correction server.
    d_fp_percentile : float in [0, 100], default 0
        The percentile of ``d_fp_rule="percentile"``.

    Raises
    ------
    ParameterError
        a field outside its allowed values, named with what is allowed.

    Examples
    --------
    >>> from privad.relaxed import SplitRule
    >>> rule = SplitRule(max_fp_share=0.3)  # at most 30 % of O' may be called false positives
    >>> rule.max_fp_share, rule.d_fp_rule
    (0.3, 'min')
    """

    min_gap: float = 0.0
    max_fp_share: float = 0.5
    d_tp_percentile: float = 0.0
    d_tp_floor: float | None = None
    d_fp_rule: str = "min"
    d_fp_percentile: float = 0.0

    def __post_init__(self) -> None:
        checked = {
            "min_gap": check_nonnegative(self.min_gap, "min_gap"),
            "max_fp_share": check_probability(self.max_fp_share, "max_fp_share"),
            "d_tp_percentile": check_percentile(self.d_tp_percentile, "d_tp_percentile"),
            "d_tp_floor": None if self.d_tp_floor is None else _finite(self.d_tp_floor),
            "d_fp_rule": check_choice(self.d_fp_rule, "d_fp_rule", D_FP_RULES),
            "d_fp_percentile": check_percentile(self.d_fp_percentile, "d_fp_percentile"),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)


def _finite(value: Any) -> float:
    """``d_tp_floor`` as a finite float."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(float(value))
    ):
        raise ParameterError(f"d_tp_floor must be a finite number or None, got {value!r}")
    return float(value)


def check_split_rule(rule: Any, name: str = "rule") -> SplitRule:
    """``rule`` if it is a :class:`SplitRule` (already checked when built)."""
    if not isinstance(rule, SplitRule):
        raise ParameterError(f"{name} must be a SplitRule, got {type(rule).__name__}")
    return rule


def split_presumed_outliers(
    d_diff: np.ndarray,
    presumed_outliers: np.ndarray,
    rule: SplitRule = SplitRule(),
    *,
    w_o: float | None = None,
) -> GapSplit:
    """Step 3 (CS): split O' into FP (above the largest gap of d_diff) and TP (below).

    False positives are non-outliers that were pushed out by more noise than the true
    positives moved, so they have the larger d_diff (section 6.1). The d_diff values over
    O' are sorted; with ``g_k = v_{k+1} − v_k`` the split is after the largest gap.

    "When in doubt keep in TP" (reconstruction of the paper's "we do not want to remove true
    positives under any circumstances"):

    * only gaps that leave at most ``rule.max_fp_share`` of O' above them are candidates
      (default one half: false positives are taken to be the minority of O'; a largest
      gap low in the sorted values, e.g. below a few true outliers pushed far inwards,
      would otherwise move most true positives into FP);
    * among equally large candidate gaps the highest one is used (fewest points in FP);
    * values equal to the lower end of the gap stay in TP;
    * no split at all (everything in TP) when there is no candidate gap or the largest
      candidate gap is ``<= rule.min_gap``.

    d_TP and d_FP then follow ``rule`` (:class:`SplitRule`; default the paper's minima).

    Parameters
    ----------
    d_diff:
        d_diff for all n records, indexed by record (float64, length n).
    presumed_outliers:
        O' as record indices (int64, unique, < n).
    rule:
        The step-3 choices (:class:`SplitRule`).
    w_o:
        The outlier layer width, needed by ``rule.d_fp_rule="layer"``.
    """
    rule = check_split_rule(rule)
    if rule.d_fp_rule == "layer":
        if w_o is None:
            raise ParameterError("d_fp_rule='layer' needs the outlier layer width w_o")
        w_o = check_nonnegative(w_o, "w_o")
    m = presumed_outliers.size
    empty = np.zeros(0, dtype=np.int64)
    if m == 0:
        return GapSplit(tp=empty, fp=empty, d_tp=None, d_fp=float("inf"), gap=0.0)
    vals = d_diff[presumed_outliers]
    s = np.sort(vals)  # values only: the split is a threshold, no permutation is needed
    n_tp = m  # number of points kept in TP
    gap = 0.0
    # gaps[k] lies between s[k] and s[k+1]; splitting there keeps s[0..k] (k+1 points) in
    # TP and puts m-k-1 points in FP, which may be at most floor(max_fp_share * m)
    k_min = max(0, m - 1 - math.floor(rule.max_fp_share * m))
    if m - 1 > k_min:
        gaps = np.diff(s[k_min:])
        gmax = float(gaps.max())
        if gmax > rule.min_gap:
            # the last occurrence of the largest gap: the highest split, fewest FP
            k = k_min + (gaps.size - 1) - int(np.argmax(gaps[::-1] == gmax))
            n_tp = k + 1
            gap = gmax
    ids = presumed_outliers
    if m > 1 and not bool((ids[1:] > ids[:-1]).all()):
        order = np.argsort(ids, kind="stable")
        ids, vals = ids[order], vals[order]
    if n_tp == m:
        tp, fp = ids.copy(), empty
        d_fp = float("inf")
    else:
        # s[n_tp - 1] < s[n_tp] (a positive gap), so "<= s[n_tp - 1]" selects exactly TP
        below = vals <= s[n_tp - 1]
        tp, fp = ids[below], ids[~below]
        if rule.d_fp_rule == "min":
            d_fp = float(s[n_tp])
        elif rule.d_fp_rule == "percentile":
            d_fp = float(np.percentile(s[n_tp:], rule.d_fp_percentile))
        else:
            d_fp = float("inf")
    d_tp = (
        float(s[0])
        if rule.d_tp_percentile == 0.0
        else float(np.percentile(s[:n_tp], rule.d_tp_percentile))
    )
    if rule.d_tp_floor is not None:
        d_tp = max(rule.d_tp_floor, d_tp)
    if rule.d_fp_rule == "layer":
        d_fp = d_tp + float(w_o)  # type: ignore[arg-type]
    return GapSplit(tp=tp, fp=fp, d_tp=d_tp, d_fp=d_fp, gap=gap)


def reduction_thresholds(
    d_tp: float,
    w_o: float,
    *,
    reduction: str = "notes",
    outlier_radius: float | None = None,
) -> tuple[float, float]:
    """The analyst's two thresholds ``(t2, t3)`` on ``d_{c'}(𝒯'[j])`` for I_L2 and I_L3.

    * ``"notes"``: ``(d_TP, d_TP + w_O)``.
    * ``"radius"``: ``(ρ, ρ + max(0, d_TP))`` with ρ = ``outlier_radius`` (required).

    See the module docstring for why (**reconstruction**).
    """
    reduction = check_choice(reduction, "reduction", REDUCTIONS)
    if reduction == "notes":
        return float(d_tp), float(d_tp) + float(w_o)
    if outlier_radius is None or not math.isfinite(float(outlier_radius)):
        raise ParameterError("the 'radius' reduction needs a finite outlier_radius ρ")
    rho = float(outlier_radius)
    return rho, rho + max(0.0, float(d_tp))


def presumed_radius(
    distances: np.ndarray, presumed_outliers: np.ndarray, w_o: float, percentile: float = 50.0
) -> float | None:
    """The analyst's own estimate of the outlier layer's inner radius (option a).

    ``ρ̂ = ρ_percentile({d_{c'}(𝒯'[j]) : j ∈ O'}) − w_O``: where its presumed outliers lie
    after perturbation (by default their median perturbed core distance, the "orbit" of
    section 6.1) minus the layer width. Uses only what the analyst holds (𝒯', O') and w_O,
    which section 6.2 sends it. ``None`` when O' is empty.
    """
    if presumed_outliers.size == 0:
        return None
    return float(np.percentile(distances[presumed_outliers], percentile)) - float(w_o)


def analyst_layers(
    perturbed: np.ndarray,
    d_tp: float | None,
    w_o: float,
    *,
    centre: np.ndarray | None = None,
    distances: np.ndarray | None = None,
    reduction: str = "notes",
    outlier_radius: float | None = None,
    presumed_outliers: np.ndarray | None = None,
    radius_percentile: float = 50.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Step 4 (A): ``I_L2 = {j : d(𝒯'[j]) ≥ t2}`` and ``I_L3 = {j : d(𝒯'[j]) ≥ t3}``.

    The thresholds come from :func:`reduction_thresholds`: ``"notes"`` (default here, for
    backward compatibility: ``t2 = d_TP``, ``t3 = d_TP + w_O``) or ``"radius"``
    (``t2 = ρ``, ``t3 = ρ + max(0, d_TP)``; the default of the
    :class:`~privad.relaxed.parties.Analyst`). Section 6.2 writes ``d_c(𝒯'[j])``, the
    distance to the centre c of 𝒯. The analyst holds only 𝒯', so (**reconstruction**) its
    centre is ``c'`` = column means of 𝒯' by default; a public centre known in advance may
    be passed instead.

    Parameters
    ----------
    perturbed:
        𝒯' (n × d, scaled space).
    d_tp:
        From the CS; ``None`` (TP empty) gives two empty sets.
    w_o:
        The outlier layer width from the CS (>= 0).
    centre:
        The centre to measure from; default the column means of ``perturbed``.
    distances:
        Precomputed ``d(𝒯'[j])`` (length n); when given, ``perturbed`` and ``centre`` are
        not used (the analyst may compute them as soon as 𝒯' arrives).
    reduction:
        One of :data:`REDUCTIONS`.
    outlier_radius:
        ρ for ``"radius"`` (scaled space), e.g. from
        :func:`estimate_outlier_layer_radius` on historical data. ``None``: the analyst
        estimates it with :func:`presumed_radius` from ``presumed_outliers``.
    presumed_outliers:
        O' (record indices), needed by ``"radius"`` when ``outlier_radius`` is None.
    radius_percentile:
        The percentile of :func:`presumed_radius` (default 50, the median).

    Returns
    -------
    (I_L2, I_L3):
        Sorted int64 record indices. With ``"notes"`` and w_O ≥ 0, ``I_L3 ⊆ I_L2``; with
        ``"radius"``, ``I_L3 ⊆ I_L2`` as well (t3 ≥ t2).
    """
    empty = np.zeros(0, dtype=np.int64)
    if d_tp is None:
        return empty, empty.copy()
    reduction = check_choice(reduction, "reduction", REDUCTIONS)
    if distances is None:
        c = column_means(perturbed) if centre is None else centre
        distances = centre_distances(perturbed, c)
    if reduction == "radius" and outlier_radius is None:
        if presumed_outliers is None:
            raise ParameterError(
                "the 'radius' reduction needs outlier_radius or the presumed "
                "outliers O' to estimate it from"
            )
        outlier_radius = presumed_radius(
            distances,
            np.asarray(presumed_outliers, dtype=np.int64),
            w_o,
            check_percentile(radius_percentile, "radius_percentile"),
        )
        if outlier_radius is None:
            return empty, empty.copy()
    t2, t3 = reduction_thresholds(d_tp, w_o, reduction=reduction, outlier_radius=outlier_radius)
    i_l2 = np.flatnonzero(distances >= t2)
    i_l3 = i_l2[distances[i_l2] >= t3]
    return i_l2, i_l3


@dataclass(frozen=True, eq=False)
class CorrectionLayers:
    """Step 5: the three layers of presumed false negatives (sorted record indices)."""

    fn_l1: np.ndarray
    fn_l2: np.ndarray
    fn_l3: np.ndarray


def false_negative_layers(
    d_diff: np.ndarray,
    presumed_mask: np.ndarray,
    i_l2: np.ndarray,
    i_l3: np.ndarray,
    d_tp: float | None,
    d_fp: float,
) -> CorrectionLayers:
    """Step 5 (CS): the presumed false negatives in three layers.

    * ``FN_L1 = {i ∉ O' : d_diff[i] < 0}``: outliers pushed towards the centre (Fig. 1c).
    * ``FN_L2 = {i ∈ I_L2 \\ O' : 0 < d_diff[i] < d_TP}``: outliers on the "orbit" of the
      true positives that moved outward by less than any true positive (Fig. 1b).
    * ``FN_L3 = {i ∈ I_L3 \\ O' : d_TP ≤ d_diff[i] ≤ d_FP}``: outliers off that orbit; no
      undetected outlier moved out by more than the least false positive.

    Parameters
    ----------
    d_diff:
        d_diff for all n records, indexed by record.
    presumed_mask:
        O' as a boolean mask of length n.
    i_l2, i_l3:
        The analyst's index sets: int64 record indices (< n; duplicates are harmless) or
        boolean masks of length n.
    d_tp:
        ``min`` of d_diff over TP, or ``None`` when TP is empty (then FN_L2 = FN_L3 = ∅).
    d_fp:
        ``min`` of d_diff over FP, ``+inf`` when FP is empty.

    Returns
    -------
    CorrectionLayers
        Each layer as sorted int64 record indices.
    """
    n = d_diff.size
    outside = ~presumed_mask
    fn_l1 = np.flatnonzero(outside & (d_diff < 0))
    empty = np.zeros(0, dtype=np.int64)
    if d_tp is None:
        return CorrectionLayers(fn_l1=fn_l1, fn_l2=empty, fn_l3=empty.copy())
    in_l2 = _as_mask(i_l2, n)
    in_l3 = _as_mask(i_l3, n)
    in_l2 &= outside
    in_l2 &= d_diff > 0
    in_l2 &= d_diff < d_tp
    in_l3 &= outside
    in_l3 &= d_diff >= d_tp
    in_l3 &= d_diff <= d_fp
    return CorrectionLayers(fn_l1=fn_l1, fn_l2=np.flatnonzero(in_l2), fn_l3=np.flatnonzero(in_l3))


def _as_mask(indices: np.ndarray, n: int) -> np.ndarray:
    """A fresh boolean mask of length n from indices (or a copy of a mask)."""
    if indices.dtype == bool:
        if indices.shape != (n,):
            raise DataError(f"a boolean index mask must have length {n}, got {indices.shape}")
        return indices.copy()
    mask = np.zeros(n, dtype=bool)
    mask[indices] = True
    return mask


def corrected_outliers(tp: np.ndarray, layers: CorrectionLayers, n: int) -> np.ndarray:
    """The output of Fig. 2: ``TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3`` as sorted record indices."""
    mask = np.zeros(n, dtype=bool)
    mask[tp] = True
    mask[layers.fn_l1] = True
    mask[layers.fn_l2] = True
    mask[layers.fn_l3] = True
    return np.flatnonzero(mask)


def estimate_outlier_layer_width(
    history: Any,
    outliers: Any,
    *,
    quantiles: tuple[float, float] = (0.0, 100.0),
    centre: Any = None,
) -> float:
    """Estimate the outlier layer width ``w_O`` from historical data (section 6.1).

    The paper says only that ``w_O`` is "determined with historical data, i.e. knowledge
    about past outliers". **Reconstruction**: the width of the band of centre distances
    that the historical outliers occupy,

        w_O = ρ_{q_hi}({d_c(D[i]) : i ∈ O_hist}) − ρ_{q_lo}({d_c(D[i]) : i ∈ O_hist}),

    with c the column means of the historical data D and ``(q_lo, q_hi) = (0, 100)`` by
    default (the full band, max − min). Pass D in the same scaled space the protocol uses.

    Parameters
    ----------
    history:
        Historical data D (n × d), already scaled by step 1a.
    outliers:
        Indices (or a boolean mask) of the historical outliers, e.g. ``f_outlier(D)``.
    quantiles:
        Percentiles ``(q_lo, q_hi)`` with ``0 <= q_lo < q_hi <= 100``; e.g. ``(1, 99)``
        for a band that ignores the most extreme 1 % on either side.
    centre:
        The centre c; default the column means of D.

    Returns
    -------
    float
        ``w_O >= 0``; 0.0 when there are fewer than two historical outliers.
    """
    D = check_array(history, "history")
    q_lo = check_nonnegative(quantiles[0], "quantiles[0]")
    q_hi = check_nonnegative(quantiles[1], "quantiles[1]")
    if not q_lo < q_hi <= 100.0:
        raise ParameterError(
            f"quantiles must satisfy 0 <= q_lo < q_hi <= 100, got {tuple(quantiles)!r}"
        )
    dist = _outlier_distances(D, outliers, centre)
    if dist.size < 2:
        return 0.0
    hi, lo = np.percentile(dist, [q_hi, q_lo])
    return float(hi - lo)


def estimate_outlier_layer_radius(
    history: Any,
    outliers: Any,
    *,
    percentile: float = 0.0,
    centre: Any = None,
) -> float:
    """Estimate the outlier layer's inner radius ρ from historical data (reconstruction).

    The companion of :func:`estimate_outlier_layer_width` for the ``"radius"`` reduction
    of step 4: ``ρ = ρ_percentile({d_c(D[i]) : i ∈ O_hist})``, by default the smallest
    centre distance of a historical outlier (the layer's inner edge), in the scaled space
    of step 1a. Like w_O it is "determined with historical data, i.e. knowledge about past
    outliers" (section 6.1); it describes where outliers lie, which section 6.2 lets the
    analyst learn.

    Parameters
    ----------
    history, outliers, centre:
        As for :func:`estimate_outlier_layer_width`.
    percentile:
        In [0, 100]; default 0 (the minimum).

    Returns
    -------
    float
        ρ ≥ 0.

    Raises
    ------
    DataError
        If there is no historical outlier.
    """
    D = check_array(history, "history")
    percentile = check_percentile(percentile, "percentile")
    dist = _outlier_distances(D, outliers, centre)
    if dist.size == 0:
        raise DataError("estimating the outlier layer radius needs at least one historical outlier")
    return float(np.percentile(dist, percentile))


def _outlier_distances(D: np.ndarray, outliers: Any, centre: Any) -> np.ndarray:
    """d_c(D[i]) for the historical outliers i, c the given centre or D's column means."""
    idx = _outlier_indices(outliers, D.shape[0])
    c = column_means(D) if centre is None else check_array(centre, "centre", ndim=1)
    if c.shape != (D.shape[1],):
        raise DataError(f"centre must have {D.shape[1]} coordinate(s), got shape {c.shape}")
    return centre_distances(D[idx], c)


def _outlier_indices(outliers: Any, n: int) -> np.ndarray:
    idx = np.asarray(outliers)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise DataError(f"an outlier mask must have length {n}, got shape {idx.shape}")
        idx = np.flatnonzero(idx)
    elif idx.size and idx.dtype.kind not in "iu":
        raise DataError(f"outliers must be integer indices or a boolean mask, got {idx.dtype}")
    idx = idx.astype(np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise DataError(f"outliers holds an index outside 0..{n - 1}")
    return idx
