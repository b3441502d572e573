"""What each party of the correction protocol learns, and what protects it, as data.

The sensor S releases three things: 𝒯' to the analyst A (step 2), d_diff to the correction
server CS (step 2), and, through CS, the value d_TP and the corrected outlier set to A
(steps 4, 5). Section 6.2 of the paper argues informally about them; here each view gets a
:class:`~privad.accounting.Guarantee`, or ``None`` where none holds.

Notation: s_j are the public step-1a divisors, RS_j and GS_j the relaxed and global
sensitivities, n the window size. In the scaled space a neighbouring step moves one record
x to y with ``‖x − y‖₂ ≤ D`` where, for the guarantee unit "record",

    D_N = ‖(RS_j / s_j)_j‖₂   (both records in the non-outlier range 𝒩'),
    D_G = ‖(GS_j / s_j)_j‖₂   (any two records of the domain),                (V1)

and for the unit "column" (one value of one column changes) ``D_N = max_j RS_j/s_j``,
``D_G = max_j GS_j/s_j``.

**d_diff (the correction server's view).** Condition on 𝒯' (the composition below charges
it separately). Then ``d_diff[i] = ‖𝒯'[i] − c'‖ − ‖𝒯[i] − c‖`` (centres "separate") and only
the second term depends on 𝒯, through row i and through c = mean(𝒯), which moves by
``(y − x)/n``. By the triangle inequality row i₀ changes by at most ``D(1 + 1/n)`` and every
other row by at most ``D/n``, so

    ‖Δ d_diff‖₁ ≤ D(1 + 1/n) + (n − 1)·D/n = 2D,     ‖Δ d_diff‖_∞ ≤ D(1 + 1/n).     (V2)

With centres "original" (c for 𝒯' too) the first term moves as well (by ``D/n`` per row):
``‖Δ‖₁ ≤ 3D``, ``‖Δ‖_∞ ≤ D(1 + 2/n)``. The protected exchange adds
``Lap(Δ₁/ε_CS)`` to every entry (Δ₁ from V2 with D = D_N): given 𝒯', the released vector
is ε_CS-DP for non-outliers and ``ε_CS·D_G/D_N``-DP for any record (the relaxed reading of
Theorem 2 applied to V2). The unprotected exchange (the paper's) sends d_diff as it is: a
deterministic function of 𝒯 given 𝒯', so no ε holds (measured: ``P[d_diff[0] < −0.5]`` is
0 for a record at the centre and 0.03 one RS away).

**d_TP (in the analyst's view).** With the default split, ``d_TP = min_{i ∈ O'} d_diff[i]``
(TP is the lower part of O'), and O' is a function of 𝒯'. The minimum is 1-Lipschitz in
the ∞-norm, so given 𝒯' its sensitivity is ``Δ_∞`` of V2. The protected exchange with
``tp_epsilon`` adds ``Lap(Δ_∞/ε_TP)`` (drawn by the sensor, added by CS, which knows the
exact value anyway). Without it, d_TP is a post-processing of the noisy d_diff (covered by
ε_CS), or, in the unprotected exchange, exact: ``‖𝒯'[i₀] − c'‖ − d_TP`` is the raw distance
``‖𝒯[i₀] − c‖`` of the record behind it.

**Composition.** By adaptive sequential composition (Dwork & Roth 2014, Thm 3.16) the
release (𝒯', d̃_diff, d̃_TP) is (ε_T + ε_CS + ε_TP)-DP for non-outliers and the sum of the
ε' for outliers. Every other message is a post-processing of it: O', I_L2, I_L3 of 𝒯' and
d_TP; the corrected outlier set of d̃_diff, O', I_L2, I_L3. The analyst's view is
(𝒯', d_TP, output): ε_T + ε_TP + ε_CS (ε_CS for the output, a function of d_diff: in the
unprotected exchange membership in FN_L1 reveals the sign of the raw d_diff, so no ε). The
correction server's view is (d̃_diff, O', I_L2, I_L3): ε_CS + ε_T (+ ε_TP, which CS draws
from the sensor's message but which protects nothing from CS). The ledger is charged the
whole release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.accounting.composition import sequential
from privad.accounting.guarantee import Guarantee
from privad.accounting.notions import RELAXED_DP
from privad.errors import ParameterError
from privad.validation import check_choice, check_epsilon

__all__ = [
    "EXCHANGES",
    "PartyView",
    "ProtocolViews",
    "ViewComponent",
    "d_diff_sensitivity",
    "neighbour_diameters",
    "released_guarantee",
]

EXCHANGES: tuple[str, ...] = ("protected", "unprotected")
"""``"protected"``: d_diff with Laplace noise under ε_CS (and optionally d_TP under ε_TP);
``"unprotected"``: the paper's exchange, d_diff and d_TP exact (no guarantee for them)."""


def neighbour_diameters(
    relaxed_sensitivity: np.ndarray,
    divisors: np.ndarray,
    global_sensitivity: np.ndarray | None,
    unit: str,
) -> tuple[float, float | None]:
    """(V1): ``(D_N, D_G)``, how far one neighbouring step moves a record in the scaled space.

    ``D_G`` is ``None`` without global sensitivities (no bound for outliers).
    """
    unit = check_choice(unit, "unit", ("record", "column"))

    def norm(v: np.ndarray) -> float:
        return float(np.linalg.norm(v)) if unit == "record" else float(np.max(v))

    d_n = norm(np.asarray(relaxed_sensitivity) / np.asarray(divisors))
    d_g = None
    if global_sensitivity is not None:
        d_g = max(d_n, norm(np.asarray(global_sensitivity) / np.asarray(divisors)))
    return d_n, d_g


def d_diff_sensitivity(diameter: float, n: int, centres: str) -> tuple[float, float]:
    """(V2): ``(Δ₁, Δ_∞)`` of d_diff given 𝒯', for a record moved by at most ``diameter``.

    ``centres`` is the sensor's ``d_diff_centres``: ``"separate"`` gives ``(2D, D(1 + 1/n))``,
    ``"original"`` gives ``(3D, D(1 + 2/n))``.
    """
    centres = check_choice(centres, "centres", ("separate", "original"))
    k = 1 if centres == "separate" else 2
    return (1 + k) * diameter, diameter * (1.0 + k / max(int(n), 1))


@dataclass(frozen=True)
class ViewComponent:
    """One thing a party receives and the guarantee that covers it (``None``: none)."""

    name: str
    guarantee: Guarantee | None
    note: str = ""

    def summary(self) -> str:
        """``"name: guarantee"`` or ``"name: none (note)"``."""
        if self.guarantee is None:
            return f"{self.name}: none ({self.note})" if self.note else f"{self.name}: none"
        return f"{self.name}: {_short(self.guarantee)}"


@dataclass(frozen=True)
class PartyView:
    """Everything one party receives in a run, with the guarantee of the whole view."""

    party: str
    components: tuple[ViewComponent, ...]

    @property
    def guarantee(self) -> Guarantee | None:
        """Sequential composition of the components; ``None`` if any has no guarantee."""
        if any(c.guarantee is None for c in self.components):
            return None
        parts = [c.guarantee for c in self.components]
        if len(parts) == 1:
            return parts[0]
        return sequential(parts, neighbouring=parts[0].neighbouring,  # type: ignore[union-attr]
                          description=f"the {self.party}'s view")  # fmt: skip

    def summary(self) -> str:
        """One line: the party, its total and each component."""
        g = self.guarantee
        total = "NONE (unprotected)" if g is None else _short(g)
        parts = "; ".join(c.summary() for c in self.components)
        return f"{self.party}'s view: {total} [{parts}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: party, total guarantee (or None), components."""
        g = self.guarantee
        return {
            "party": self.party,
            "guarantee": None if g is None else g.to_dict(),
            "components": [
                {"name": c.name, "guarantee": None if c.guarantee is None
                 else c.guarantee.to_dict(), "note": c.note}
                for c in self.components
            ],
        }  # fmt: skip


@dataclass(frozen=True)
class ProtocolViews:
    """The analyst's and the correction server's views of one run (or window), and the
    whole release (what the sensor gives away, the union of both views)."""

    exchange: str
    analyst: PartyView
    correction: PartyView
    release: Guarantee

    def lines(self) -> list[str]:
        """Human-readable statement, one line per party and one for the release."""
        return [
            f"exchange: {self.exchange}",
            self.analyst.summary(),
            self.correction.summary(),
            f"charged (the whole release): {_short(self.release)}",
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for ledger metadata and ``--format json``)."""
        return {"exchange": self.exchange, "analyst": self.analyst.to_dict(),
                "correction": self.correction.to_dict(),
                "release": self.release.to_dict()}  # fmt: skip


def _short(g: Guarantee) -> str:
    return g.summary()


def _scaled_guarantee(epsilon: float, d_n: float, d_g: float, neighbouring: str,
                      description: str) -> Guarantee:  # fmt: skip
    return Guarantee(notion=RELAXED_DP, epsilon=epsilon, neighbouring=neighbouring,
                     epsilon_outlier=epsilon * max(d_g / d_n, 1.0),
                     description=description)  # fmt: skip


def released_guarantee(
    perturbation: Guarantee,
    *,
    exchange: str,
    cs_epsilon: float | None,
    tp_epsilon: float | None,
    d_n: float,
    d_g: float,
) -> ProtocolViews:
    """The views of a run, from the perturbation's guarantee (Theorem 2) and the exchange.

    Parameters
    ----------
    perturbation:
        The guarantee of 𝒯' (:func:`~privad.relaxed.sensitivity.relaxed_guarantee`).
    exchange:
        One of :data:`EXCHANGES`.
    cs_epsilon, tp_epsilon:
        ε_CS (required for ``"protected"``) and ε_TP (optional), in the guarantee unit.
    d_n, d_g:
        The diameters of (V1); ``ε' = ε·D_G/D_N`` for the d_diff and d_TP mechanisms.
    """
    exchange = check_choice(exchange, "exchange", EXCHANGES)
    rel = perturbation.neighbouring
    t_view = ViewComponent("T'", perturbation)
    if exchange == "unprotected":
        none_d = "exact d_diff: a deterministic function of T given T'"
        analyst = PartyView("analyst", (
            t_view,
            ViewComponent("d_TP", None, "exact: ‖T'[i]−c'‖ − d_TP is a raw distance ‖T[i]−c‖"),
            ViewComponent("corrected outliers", None, "a function of the exact d_diff"),
        ))  # fmt: skip
        correction = PartyView("correction server", (
            ViewComponent("d_diff", None, none_d),
            ViewComponent("O', I_L2, I_L3", perturbation, "functions of T' and d_TP"),
        ))  # fmt: skip
        return ProtocolViews(exchange, analyst, correction, perturbation)
    if cs_epsilon is None:
        raise ParameterError("the protected exchange needs cs_epsilon (ε_CS > 0)")
    cs = _scaled_guarantee(check_epsilon(cs_epsilon, "cs_epsilon"), d_n, d_g, rel,
                           "Laplace noise on d_diff, L1 sensitivity given T' (V2)")  # fmt: skip
    tp = None if tp_epsilon is None else _scaled_guarantee(
        check_epsilon(tp_epsilon, "tp_epsilon"), d_n, d_g, rel,
        "Laplace noise on d_TP, ∞-norm sensitivity given T' (V2)")  # fmt: skip
    d_tp_view = ViewComponent("d_TP", tp) if tp is not None else ViewComponent(
        "d_TP (a function of the noisy d_diff)", cs)  # fmt: skip
    analyst_parts = [t_view, d_tp_view]
    if tp is not None:
        analyst_parts.append(ViewComponent("corrected outliers (noisy d_diff)", cs))
    analyst = PartyView("analyst", tuple(analyst_parts))
    correction = PartyView("correction server", (
        ViewComponent("d_diff (noisy)", cs),
        ViewComponent("O', I_L2, I_L3", perturbation, "functions of T' and d_TP"),
    ))  # fmt: skip
    parts = [perturbation, cs] + ([tp] if tp is not None else [])
    release = sequential(parts, neighbouring=rel,
                         description="T', noisy d_diff and d_TP (adaptive composition)")
    return ProtocolViews(exchange, analyst, correction, release)

