"""The privacy budget: guarantees as data, composition rules, and a persistent ledger.

- :class:`Guarantee` (:mod:`.guarantee`): what a mechanism guarantees, as data.
- :func:`sequential`, :func:`parallel`, :func:`scaled`, :func:`per_ball`
  (:mod:`.composition`): the guarantee of several mechanisms together.
- :class:`Ledger` (:mod:`.ledger`): budgets per scope and notion, check-then-spend in one
  SQLite transaction, exact sums, two-phase spends, a readable statement. A spend also
  counts against the budgets of the notions its notion implies (``Notion.implies``, read
  by ``notions.implying_notions``: ε-DP implies the restricted notions).
  Its parts: the file format (:mod:`.schema`), its rows (:mod:`.rows`), what a spend
  charges (:mod:`.charges`, :class:`NoBudgetError`), two-phase spends
  (:mod:`.reservations`, :class:`Reservation`), prepaid stream blocks (:mod:`.streams`)
  and the statement (:mod:`.statement`).
- :class:`Component`, :func:`tight_epsilon`, :func:`optimal_epsilon` (:mod:`.tight`): what a
  release is made of, and its (ε, δ) by the optimal composition theorem (or dp-accounting's
  privacy-loss distributions); a budget set with ``delta=`` is charged that ε. A service's
  answers are a stream (``Ledger.spend(..., stream=True)``): under an (ε, δ) budget they
  are drawn from a prepaid block, and ``Ledger.answers_left`` counts what is left.
- :func:`composition_costs` (:mod:`.planner`): what N answers cost before anything is
  spent.
- :func:`default_ledger_path` (:mod:`.paths`): ``$PRIVAD_LEDGER`` or
  ``~/.privad/ledger.sqlite``.

Examples
--------
Plan five counts, then spend them as one release:

>>> from privad.accounting import Guarantee, Ledger, composition_costs, sequential
>>> float(composition_costs(0.1, 5, None).linear)
0.5
>>> count = Guarantee("pure-dp", 0.1, "add or remove one record")
>>> ledger = Ledger(":memory:", default_budget=1.0)
>>> ledger.spend("census", sequential([count] * 5), "five counts").epsilon
0.5
>>> ledger.remaining("census", "pure-dp")
0.5
>>> ledger.close()
"""

from __future__ import annotations

from privad.accounting.charges import NoBudgetError
from privad.accounting.composition import parallel, per_ball, scaled, sequential
from privad.accounting.guarantee import Guarantee
from privad.accounting.ledger import Ledger
from privad.accounting.notions import (
    ANOMALY_RESTRICTED_DP,
    BUDGETED_NOTIONS,
    NOTIONS,
    PURE_DP,
    RELAXED_DP,
    RMP,
    SENSITIVE,
    Notion,
)
from privad.accounting.paths import default_ledger_path
from privad.accounting.planner import composition_costs
from privad.accounting.records import Budget, Spend
from privad.accounting.reservations import Reservation
from privad.accounting.tight import Component, optimal_epsilon, tight_epsilon

__all__ = [
    "ANOMALY_RESTRICTED_DP",
    "BUDGETED_NOTIONS",
    "NOTIONS",
    "PURE_DP",
    "RELAXED_DP",
    "RMP",
    "SENSITIVE",
    "Budget",
    "Component",
    "Guarantee",
    "Ledger",
    "NoBudgetError",
    "Notion",
    "Reservation",
    "Spend",
    "composition_costs",
    "default_ledger_path",
    "optimal_epsilon",
    "parallel",
    "per_ball",
    "scaled",
    "sequential",
    "tight_epsilon",
]
