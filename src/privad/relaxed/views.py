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
the ∞-norm, so given 𝒯' its sensitivity is ``Δ_∞`` of V2. The correction server computes
d_TP from the d_diff it holds, so in the protected exchange d_TP is a post-processing of
the noisy d_diff and is covered by ε_CS. With ``tp_epsilon`` the sensor also draws
``η_TP ~ Lap(Δ_∞/ε_TP)`` and sends it with d_diff (field ``tp_noise``); CS sends
``d_TP + η_TP``. Given 𝒯' and the d_diff noise, ``min_{O'}(d_diff + η_CS)`` still moves by
at most Δ_∞, so the released value is also ε_TP-DP: d_TP on its own is
``min(ε_TP, ε_CS)``-DP given 𝒯'. In the unprotected exchange d_TP is exact:
``‖𝒯'[i₀] − c'‖ − d_TP`` is the raw distance ``‖𝒯[i₀] − c‖`` of the record behind it.

**Composition.** η_TP is drawn independently of the data, so everything the sensor
releases, (𝒯', d̃_diff, η_TP), is (ε_T + ε_CS)-DP for non-outliers (adaptive sequential
composition, Dwork & Roth 2014, Thm 3.16; the sum of the ε' for outliers), and every other
message is a post-processing of it: O' of 𝒯'; d̃_TP of d̃_diff, O' and η_TP; I_L2, I_L3 of
𝒯' and d̃_TP; the corrected outlier set of d̃_diff, O', I_L2, I_L3. Hence:

* the **analyst's view** (𝒯', d̃_TP, the corrected outliers) is ε_T + ε_CS, with or
  without ε_TP: the corrected outliers are a function of d̃_diff, and membership in FN_L1
  reveals the sign of d_diff, so only ε_CS bounds them. ε_TP protects the single value d_TP
  more strongly when ε_TP < ε_CS (whoever sees d_TP without the outlier set, e.g. the
  result's ``d_tp`` field), never the whole view; and in the unprotected exchange nothing
  bounds the analyst's view (which is why ε_TP is refused there);
* the **correction server's view** (d̃_diff, η_TP, O', I_L2, I_L3) is ε_T + ε_CS (η_TP
  carries no information about the data);
* the **release**, charged to the ledger, is ε_T + ε_CS: ε_TP adds no privacy loss on top
  (charging it too would count the same information twice).
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
    "check_exchange",
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
        """``"name: guarantee (note)"`` or ``"name: none (note)"``."""
        g = "none" if self.guarantee is None else _short(self.guarantee)
        return f"{self.name}: {g} ({self.note})" if self.note else f"{self.name}: {g}"


@dataclass(frozen=True)
class PartyView:
    """Everything one party receives in a run, and the guarantee of the whole view.

    ``guarantee`` is stated for the view as a whole (``None``: none holds), not summed over
    the components: components that are functions of the same noisy release (d_TP and the
    corrected outliers, both of d̃_diff) are covered once. ``basis`` says why it holds.
    """

    party: str
    components: tuple[ViewComponent, ...]
    guarantee: Guarantee | None
    basis: str = ""

    def summary(self) -> str:
        """One line: the party, its whole view's guarantee and each component."""
        total = "NONE (unprotected)" if self.guarantee is None else _short(self.guarantee)
        parts = "; ".join(c.summary() for c in self.components)
        return f"{self.party}'s view: {total} [{parts}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: party, whole-view guarantee (or None), basis, components."""
        g = self.guarantee
        return {
            "party": self.party,
            "guarantee": None if g is None else g.to_dict(),
            "basis": self.basis,
            "components": [
                {
                    "name": c.name,
                    "guarantee": None if c.guarantee is None else c.guarantee.to_dict(),
                    "note": c.note,
                }
                for c in self.components
            ],
        }


@dataclass(frozen=True)
class ProtocolViews:
    """The analyst's and the correction server's views of one run (or window), and the
    whole release (what the sensor gives away and the ledger is charged).

    ``cs_epsilon`` and ``tp_epsilon`` are ε_CS and ε_TP in the guarantee unit (``None``
    where not used)."""

    exchange: str
    analyst: PartyView
    correction: PartyView
    release: Guarantee
    cs_epsilon: float | None = None
    tp_epsilon: float | None = None

    def lines(self) -> list[str]:
        """Human-readable statement, one line per party and one for the release."""
        head = f"exchange: {self.exchange}"
        if self.cs_epsilon is not None:
            head += f" (ε_CS = {self.cs_epsilon:g}"
            head += "" if self.tp_epsilon is None else f", ε_TP = {self.tp_epsilon:g}"
            head += ")"
        return [
            head,
            self.analyst.summary(),
            self.correction.summary(),
            f"charged (the whole release): {_short(self.release)}",
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for ledger metadata and ``--format json``)."""
        return {
            "exchange": self.exchange,
            "cs_epsilon": self.cs_epsilon,
            "tp_epsilon": self.tp_epsilon,
            "analyst": self.analyst.to_dict(),
            "correction": self.correction.to_dict(),
            "release": self.release.to_dict(),
        }


def _short(g: Guarantee) -> str:
    return g.summary()


def _scaled_guarantee(
    epsilon: float, d_n: float, d_g: float, neighbouring: str, description: str
) -> Guarantee:
    return Guarantee(
        notion=RELAXED_DP,
        epsilon=epsilon,
        neighbouring=neighbouring,
        epsilon_outlier=epsilon * max(d_g / d_n, 1.0),
        description=description,
    )


def check_exchange(
    exchange: str, cs_epsilon: float | None, tp_epsilon: float | None
) -> tuple[str, float | None, float | None]:
    """Validate an exchange with its ε_CS and ε_TP: ``(exchange, ε_CS, ε_TP)``.

    Both ε apply to the protected exchange only: in the unprotected one the corrected
    outlier set reveals the sign of the exact d_diff, so no noise on d_TP alone bounds the
    analyst's view (:class:`~privad.errors.ParameterError`).
    """
    exchange = check_choice(exchange, "exchange", EXCHANGES)
    if exchange == "unprotected" and (cs_epsilon is not None or tp_epsilon is not None):
        raise ParameterError(
            "cs_epsilon and tp_epsilon apply to the protected exchange only: in the "
            "unprotected one d_diff is exact, and the corrected outlier set reveals its sign, "
            "so noise on d_TP alone would not bound the analyst's view"
        )
    cs = None if cs_epsilon is None else check_epsilon(cs_epsilon, "cs_epsilon")
    tp = None if tp_epsilon is None else check_epsilon(tp_epsilon, "tp_epsilon")
    return exchange, cs, tp


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
        ε_CS (required for ``"protected"``) and ε_TP (optional, ``"protected"`` only), in
        the guarantee unit.
    d_n, d_g:
        The diameters of (V1); ``ε' = ε·D_G/D_N`` for the d_diff and d_TP mechanisms.

    Returns
    -------
    ProtocolViews
        See the module docstring: the analyst's and the correction server's views are
        ε_T + ε_CS each (``None`` in the unprotected exchange), d_TP on its own
        ``min(ε_TP, ε_CS)``, the release ε_T + ε_CS (ε_T for the unprotected exchange).
    """
    exchange, cs_eps, tp_eps = check_exchange(exchange, cs_epsilon, tp_epsilon)
    rel = perturbation.neighbouring
    t_view = ViewComponent("T'", perturbation, "Theorem 2")
    if exchange == "unprotected":
        analyst = PartyView(
            "analyst",
            (
                t_view,
                ViewComponent("d_TP", None, "exact: ‖T'[i]−c'‖ − d_TP is a raw distance ‖T[i]−c‖"),
                ViewComponent(
                    "corrected outliers", None, "FN_L1 reveals the sign of the exact d_diff"
                ),
            ),
            None,
            "the paper's exchange: d_TP and the outliers are exact functions of T",
        )
        correction = PartyView(
            "correction server",
            (
                ViewComponent("d_diff", None, "exact: a deterministic function of T given T'"),
                ViewComponent("O', I_L2, I_L3", perturbation, "functions of T' and d_TP"),
            ),
            None,
            "the paper's exchange: d_diff is exact",
        )
        return ProtocolViews(exchange, analyst, correction, perturbation)
    if cs_eps is None:
        raise ParameterError("the protected exchange needs cs_epsilon (ε_CS > 0)")
    cs = _scaled_guarantee(
        cs_eps, d_n, d_g, rel, "Laplace noise on d_diff, L1 sensitivity given T' (V2)"
    )
    if tp_eps is None:
        d_tp = ViewComponent("d_TP", cs, "a function of the noisy d_diff")
    else:
        d_tp = ViewComponent(
            "d_TP",
            _scaled_guarantee(
                min(tp_eps, cs_eps),
                d_n,
                d_g,
                rel,
                "d_TP: its own Laplace noise (ε_TP, ∞-norm sensitivity "
                "V2) on a function of the noisy d_diff (ε_CS)",
            ),
            f"min(ε_TP, ε_CS): its own Laplace noise under ε_TP = {tp_eps:g}, on a function "
            "of the noisy d_diff",
        )
    release = sequential(
        [perturbation, cs],
        neighbouring=rel,
        description="T' and the noisy d_diff (adaptive composition); d_TP "
        "and the corrected outliers are post-processing",
    )
    analyst = PartyView(
        "analyst",
        (
            t_view,
            d_tp,
            ViewComponent("corrected outliers", cs, "a function of the noisy d_diff"),
        ),
        release,
        "a post-processing of (T', noisy d_diff, noise independent of the data)",
    )
    correction = PartyView(
        "correction server",
        (
            ViewComponent(
                "d_diff",
                cs,
                "Laplace noise, L1 sensitivity given T'"
                + ("; with the d_TP noise, drawn independently of the data" if tp_eps else ""),
            ),
            ViewComponent("O', I_L2, I_L3", perturbation, "functions of T' and d_TP"),
        ),
        release,
        "a post-processing of (T', noisy d_diff, noise independent of the data)",
    )
    return ProtocolViews(exchange, analyst, correction, release, cs_eps, tp_eps)
