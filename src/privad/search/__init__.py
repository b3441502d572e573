"""DP noisy binary search for anomaly detection (group testing with private oracles).

Bittner, Sarwate, Wright, "Using noisy binary search for differentially private anomaly
detection" (Bittner, Sarwate, Wright, CSCML 2018). An oracle holds values x_1..x_{n+1}, of
which one (the anomaly, x* >= t_h) stands above the others (<= t_ℓ), and answers only noisy
*group* queries; the searcher keeps a Bayesian belief over where the anomaly is and splits it
at the median each time. Each answer is ε-DP for the non-anomalous records
("anomaly-restricted DP", Definition 1), T answers cost Tε.

Modules, one per idea:

* :mod:`.theory`: eq. (24) p of the binarized oracle, eq. (26) bound on E[T], ε_par,
  randomized response's ε (Proposition 1).
* :mod:`.groups`: query groups (masks, indices, prefixes of an order).
* :mod:`.models`: the data model of eq. (1) and the answer models carrying ε, the
  guarantee and the likelihood (so a remote oracle can be dropped in).
* :mod:`.oracles`: the :class:`Oracle` interface and the three oracles (randomized
  response eq. 5, Laplace max eqs. 8-9, binarized Z_t eq. 24). A local oracle records
  every answer in its ledger (``oracle.ledger``) before releasing it.
* :mod:`.posterior`: Bayes updates in log space (eqs. 6, 11, 12), dense and run-length
  beliefs.
* :mod:`.selection`: the median split (eq. 10), fixed or fresh permutation.
* :mod:`.halting`: budget, τ = 1(max f > α), Ben-Or-Hassidim, Burnashev-Zigangirov; ``|``/``&``.
* :mod:`.loop`: the search loop (Algorithm 1), :class:`SearchResult`, ledger charging.
* :mod:`.session`: a search charged to a ledger file (budget created when missing, the
  local oracle recording its answers, a remote oracle's budget as a query cap) and why it
  stopped: :func:`ledger_search`, the body of ``privad search run``; :func:`halting_rule`
  reads stopping rules from text.
* :mod:`.multiple`: several anomalies over disjoint groups, recursive pruning (section 7).
* :mod:`.problems`: :class:`SearchProblem`, values with one anomaly and thresholds. Making
  one from data (section 6.1) and the trials of section 6.2 are in
  :mod:`privad.experiments.search_problems`.
* :mod:`.estimator`: :class:`NoisyBinarySearchDetector`, the search over one series as a
  scikit-learn estimator (imported on first use: it needs scikit-learn).

The package exports what a user needs (the estimator, the search and its ledger-charged
job, the oracles, the halting rules, the planning bounds); everything else is importable
from its module.

Examples
--------
>>> import numpy as np
>>> from privad.search import LaplaceMaxOracle, PosteriorThreshold, PrivacyBudget, search
>>> x = np.ones(256); x[100] = 9.0
>>> oracle = LaplaceMaxOracle(x, 2.0, 8.0, epsilon=1.0, rng=1)
>>> result = search(oracle, halting=PosteriorThreshold(0.9) | PrivacyBudget(60.0), rng=2)
>>> int(result.argmax), result.n_queries == len(oracle.ledger.history())
(100, True)
"""

from typing import Any

from privad.search.halting import (
    AnyOf,
    BenOrHassidim,
    HaltingRule,
    LogOddsThreshold,
    MaxQueries,
    PosteriorThreshold,
    PrivacyBudget,
)
from privad.search.loop import DEFAULT_MAX_QUERIES, SearchResult, search
from privad.search.multiple import find_anomalies, pruned_search
from privad.search.oracles import (
    BinarizedOracle,
    LaplaceMaxOracle,
    Oracle,
    RandomizedResponseOracle,
    make_oracle,
)
from privad.search.problems import SearchProblem
from privad.search.session import LedgerSearch, halting_rule, ledger_search
from privad.search.theory import binarized_error_probability, expected_queries_bound

__all__ = [
    "DEFAULT_MAX_QUERIES",
    "AnyOf",
    "BenOrHassidim",
    "BinarizedOracle",
    "HaltingRule",
    "LaplaceMaxOracle",
    "LedgerSearch",
    "LogOddsThreshold",
    "MaxQueries",
    "NoisyBinarySearchDetector",
    "Oracle",
    "PosteriorThreshold",
    "PrivacyBudget",
    "RandomizedResponseOracle",
    "SearchProblem",
    "SearchResult",
    "binarized_error_probability",
    "expected_queries_bound",
    "find_anomalies",
    "halting_rule",
    "ledger_search",
    "make_oracle",
    "pruned_search",
    "search",
]


def __getattr__(name: str) -> Any:
    """The estimator is imported on first use: it needs scikit-learn, which the search's
    command line and oracle service do not (importing it costs seconds)."""
    if name == "NoisyBinarySearchDetector":
        from privad.search.estimator import NoisyBinarySearchDetector

        return NoisyBinarySearchDetector
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
