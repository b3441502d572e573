"""The privacy notions a mechanism may declare, and what each one requires.

A :class:`~privad.accounting.guarantee.Guarantee` names exactly one of these notions. Budgets
in the :class:`~privad.accounting.ledger.Ledger` are kept per scope *and* notion: the
composition theorems hold within one notion. A notion may *imply* others (see
:data:`Notion.implies`): an ε-DP release is also an ε release under every notion whose
neighbouring pairs are a subset of DP's, so the ledger charges it to those notions too.

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
    """What one privacy notion is and which parameters a guarantee of it carries.

    Examples
    --------
    >>> from privad.accounting import NOTIONS
    >>> NOTIONS["pure-dp"].implies   # an ε-DP spend counts toward these budgets too
    ('sensitive', 'anomaly-restricted-dp', 'relaxed-dp')
    >>> NOTIONS["sensitive"].needs_k
    True
    """

    name: str
    title: str
    has_epsilon: bool
    needs_k: bool
    needs_epsilon_outlier: bool
    summary: str
    implies: tuple[str, ...] = ()
    """The notions a guarantee of this one also gives, at the same ε (see :data:`NOTIONS`)."""


PURE_DP = "pure-dp"
SENSITIVE = "sensitive"
ANOMALY_RESTRICTED_DP = "anomaly-restricted-dp"
RELAXED_DP = "relaxed-dp"
RMP = "rmp"

NOTIONS: dict[str, Notion] = {
    PURE_DP: Notion(
        PURE_DP,
        "ε-differential privacy",
        True,
        False,
        False,
        "ε-DP for every individual",
        implies=(SENSITIVE, ANOMALY_RESTRICTED_DP, RELAXED_DP),
    ),
    SENSITIVE: Notion(
        SENSITIVE,
        "(ε, k)-sensitive privacy",
        True,
        True,
        False,
        "ε-DP along the edges of the k-sensitive neighbourhood graph",
    ),
    ANOMALY_RESTRICTED_DP: Notion(
        ANOMALY_RESTRICTED_DP,
        "anomaly-restricted ε-DP",
        True,
        False,
        False,
        "ε-DP for every non-anomalous individual",
    ),
    RELAXED_DP: Notion(
        RELAXED_DP,
        "relaxed ε-DP",
        True,
        False,
        True,
        "ε-DP for non-outliers, ε'-DP for outliers",
    ),
    RMP: Notion(
        RMP,
        "random multiparty perturbation",
        False,
        False,
        False,
        "resistance to MAP and ICA reconstruction attacks",
    ),
}
"""Every notion privad knows, by name.

Which notions imply which (``Notion.implies``)
    Each notion with an ε bounds the privacy loss, e^ε, over the pairs of databases its
    neighbouring relation connects. If notion A's pairs include all of notion B's, an
    ε-A mechanism satisfies the ε bound on every B pair, so it is also ε-B. The ledger then
    charges an A spend of ε to A's budget *and* to B's: sequential composition adds ε
    within B over B's own spends and the A spends alike, because all of them bound the
    same B pairs.

    ``"pure-dp"`` implies

    - ``"sensitive"``, for every k: the k-sensitive neighbourhood graph is a subgraph of
      the add/remove-one-record graph (Asif et al., CCS 2019, section 3; their footnote 2:
      every ε-DP mechanism is ε-SP);
    - ``"anomaly-restricted-dp"``: its neighbours are the add/remove-one pairs whose
      differing record is not the anomaly, a subset of DP's (Bittner et al., Definition 1);
    - ``"relaxed-dp"``: ε-DP gives ε for the non-outliers and ε <= ε' for the outliers,
      so one ε-DP release is an (ε, ε'=ε) relaxed-DP release: it is charged ε against the
      relaxed-DP budget (which limits the non-outliers' ε) and adds ε to the outliers' ε'.

    No other notion implies anything: the restricted notions leave some DP pairs unbounded,
    and the three restricted relations are not subsets of one another (they depend on
    different anomaly definitions). The relation is listed transitively closed (only
    ``"pure-dp"`` implies anything, and what it implies implies nothing).

``"sensitive"`` for different k
    A k-sensitive record is also (k + 1)-sensitive (Definition 3.1: some database within
    distance k makes it normal), so for a fixed normality property the k'-sensitive graph
    is a subgraph of the k-sensitive graph whenever k' <= k: (ε, k)-SP implies (ε, k')-SP.
    The ledger keeps one ``"sensitive"`` budget per scope whatever the k, and the sum of its
    spends (its own and those implied by ``"pure-dp"``, which hold for every k) is a
    guarantee for the smallest k among its spends (the intersection of their graphs,
    Claim 3), which is what the statement prints. A scope should therefore hold one
    anomaly definition (normality property); the k-sensitive graphs of different
    definitions are not nested.
"""


NOTION_NAMES: tuple[str, ...] = tuple(NOTIONS)
"""The allowed values of ``Guarantee.notion``, in documentation order."""

BUDGETED_NOTIONS: tuple[str, ...] = tuple(n for n, info in NOTIONS.items() if info.has_epsilon)
"""The notions that carry an ε and so can have a budget."""


def implying_notions(notion: str) -> tuple[str, ...]:
    """The notions whose guarantees imply ``notion``, in documentation order.

    Parameters
    ----------
    notion:
        A name in :data:`NOTIONS`.

    Returns
    -------
    tuple of str
        Every notion ``n`` with ``notion in NOTIONS[n].implies`` (empty for ``"pure-dp"``).
        Their spends in a scope count toward ``notion``'s total there.
    """
    return tuple(name for name, info in NOTIONS.items() if notion in info.implies)
