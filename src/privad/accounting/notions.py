"""The privacy notions a mechanism may declare, and what each one requires.

A :class:`~privad.accounting.guarantee.Guarantee` names exactly one of these notions. Budgets
in the :class:`~privad.accounting.ledger.Ledger` are kept per scope *and* notion: the
composition theorems hold within one notion, so ε spent under different notions is never
added into one number.

=========================  =====================================================================
``"pure-dp"``              ε-differential privacy (Dwork, McSherry, Nissim, Smith 2006).
``"sensitive"``            (ε, k)-sensitive privacy: ε-indistinguishability along the edges of
                           the k-sensitive neighbourhood graph (Asif, Papakonstantinou, Vaidya,
                           "How to accurately and privately identify anomalies", CCS 2019).
                           Needs ``k`` (an integer >= 1).
``"anomaly-restricted-dp"`` ε-DP for the non-anomalous individuals: neighbours differ in one
                           record other than the anomaly (Bittner, Sarwate, Wright, "Using noisy
                           binary search for differentially private anomaly detection",
                           Definition 1). Used by the group-testing search.
``"relaxed-dp"``           ε-DP for non-outliers and ε'-DP for outliers, ε' = ε·GS/RS >= ε
                           (relaxed sensitivity, Theorem 2 of the sensor-streams paper). Needs
                           ``epsilon_outlier`` (ε' >= ε). The ledger's budget limits ε.
``"rmp"``                  Random Multiparty Perturbation: no ε. A statement of resistance to
                           MAP and ICA reconstruction attacks. Carries ``epsilon=None`` and
                           never spends budget; its releases are still recorded.
=========================  =====================================================================
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Notion:
    """What one privacy notion is and which parameters a guarantee of it carries."""

    name: str
    title: str
    has_epsilon: bool
    needs_k: bool
    needs_epsilon_outlier: bool
    summary: str


PURE_DP = "pure-dp"
SENSITIVE = "sensitive"
ANOMALY_RESTRICTED_DP = "anomaly-restricted-dp"
RELAXED_DP = "relaxed-dp"
RMP = "rmp"

NOTIONS: dict[str, Notion] = {
    PURE_DP: Notion(
        PURE_DP, "ε-differential privacy", True, False, False,
        "ε-DP for every individual",
    ),
    SENSITIVE: Notion(
        SENSITIVE, "(ε, k)-sensitive privacy", True, True, False,
        "ε-DP along the edges of the k-sensitive neighbourhood graph",
    ),
    ANOMALY_RESTRICTED_DP: Notion(
        ANOMALY_RESTRICTED_DP, "anomaly-restricted ε-DP", True, False, False,
        "ε-DP for every non-anomalous individual",
    ),
    RELAXED_DP: Notion(
        RELAXED_DP, "relaxed ε-DP", True, False, True,
        "ε-DP for non-outliers, ε'-DP for outliers",
    ),
    RMP: Notion(
        RMP, "random multiparty perturbation", False, False, False,
        "resistance to MAP and ICA reconstruction attacks",
    ),
}
"""Every notion privad knows, by name."""

NOTION_NAMES: tuple[str, ...] = tuple(NOTIONS)
"""The allowed values of ``Guarantee.notion``, in documentation order."""

BUDGETED_NOTIONS: tuple[str, ...] = tuple(n for n, info in NOTIONS.items() if info.has_epsilon)
"""The notions that carry an ε and so can have a budget."""
