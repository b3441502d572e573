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
  stopped: :func:`ledger_search`, the body of ``privad search run``.
* :mod:`.multiple`: several anomalies over disjoint groups, recursive pruning (section 7).
* :mod:`.problems`: :class:`SearchProblem`, values with one anomaly and thresholds. Making
  one from data (section 6.1) and the trials of section 6.2 are in
  :mod:`privad.experiments.search_problems`.
* :mod:`.estimator`: :class:`NoisyBinarySearchDetector`, the search over one series as a
  scikit-learn estimator (imported on first use: it needs scikit-learn).

Example::

    from privad.datasets import make_search_mixture
    from privad.experiments.search_problems import problem_from_dataset
    from privad.search import LaplaceMaxOracle, search

    problem = problem_from_dataset(make_search_mixture(n=10_000, threshold_ratio=0.7, rng=1))
    oracle = LaplaceMaxOracle(problem.values, problem.t_low, problem.t_high, epsilon=1.0)
    result = search(oracle, budget=200.0, rng=2)
    result.top, result.n_queries, result.guarantee
    oracle.ledger.history()  # one spend of ε = 1 per answer (T in all)
"""

from typing import Any

from privad.search.groups import GroupLike, PrefixGroup, QueryOrder, resolve_group
from privad.search.halting import (
    AllOf,
    AnyOf,
    BenOrHassidim,
    HaltingRule,
    LogOddsThreshold,
    MaxQueries,
    PosteriorThreshold,
    PrivacyBudget,
    SearchState,
)
from privad.search.loop import DEFAULT_MAX_QUERIES, SearchResult, TraceEntry, search
from privad.search.models import (
    NEIGHBOURING,
    ORACLE_KINDS,
    AnswerModel,
    BinaryModel,
    LaplaceMaxModel,
    MaxAnswer,
    check_search_data,
    model_from_description,
)
from privad.search.multiple import (
    GroupOutcome,
    MultiSearchResult,
    PrunedSearchResult,
    find_anomalies,
    groups_needed,
    probability_distinct_groups,
    pruned_search,
    random_partition,
    search_groups,
)
from privad.search.oracles import (
    DEFAULT_SCOPE,
    BinarizedOracle,
    LaplaceMaxOracle,
    Oracle,
    RandomizedResponseOracle,
    make_oracle,
)
from privad.search.posterior import (
    DensePosterior,
    Posterior,
    SegmentPosterior,
    binary_update,
    laplace_update,
    log_bayes_update,
)
from privad.search.problems import SearchProblem
from privad.search.selection import (
    SELECTIONS,
    SPLITS,
    FixedOrderSelection,
    FreshPermutationSelection,
    QuerySelection,
    median_index,
    median_split_size,
)
from privad.search.session import LedgerSearch, ledger_search, remote_query_cap
from privad.search.theory import (
    ben_or_hassidim_level,
    binarized_error_probability,
    binarized_error_probability_for,
    binary_entropy,
    capacity,
    expected_queries_bound,
    laplace_difference_cdf,
    randomized_response_epsilon,
    randomized_response_p,
    threshold_ratio,
)

__all__ = [
    "DEFAULT_MAX_QUERIES",
    "LedgerSearch",
    "DEFAULT_SCOPE",
    "NEIGHBOURING",
    "ORACLE_KINDS",
    "SELECTIONS",
    "SPLITS",
    "AllOf",
    "AnswerModel",
    "AnyOf",
    "BenOrHassidim",
    "BinarizedOracle",
    "BinaryModel",
    "DensePosterior",
    "FixedOrderSelection",
    "FreshPermutationSelection",
    "GroupLike",
    "GroupOutcome",
    "HaltingRule",
    "LaplaceMaxModel",
    "LaplaceMaxOracle",
    "LogOddsThreshold",
    "MaxAnswer",
    "MaxQueries",
    "MultiSearchResult",
    "NoisyBinarySearchDetector",
    "Oracle",
    "Posterior",
    "PosteriorThreshold",
    "PrefixGroup",
    "PrivacyBudget",
    "PrunedSearchResult",
    "QueryOrder",
    "QuerySelection",
    "RandomizedResponseOracle",
    "SearchProblem",
    "SearchResult",
    "SearchState",
    "SegmentPosterior",
    "TraceEntry",
    "ben_or_hassidim_level",
    "binarized_error_probability",
    "binarized_error_probability_for",
    "binary_entropy",
    "binary_update",
    "capacity",
    "check_search_data",
    "expected_queries_bound",
    "find_anomalies",
    "groups_needed",
    "laplace_difference_cdf",
    "laplace_update",
    "ledger_search",
    "log_bayes_update",
    "make_oracle",
    "median_index",
    "median_split_size",
    "model_from_description",
    "probability_distinct_groups",
    "pruned_search",
    "random_partition",
    "resolve_group",
    "randomized_response_epsilon",
    "randomized_response_p",
    "remote_query_cap",
    "search",
    "search_groups",
    "threshold_ratio",
]


def __getattr__(name: str) -> Any:
    """The estimator is imported on first use: it needs scikit-learn, which the search's
    command line and oracle service do not (importing it costs seconds)."""
    if name == "NoisyBinarySearchDetector":
        from privad.search.estimator import NoisyBinarySearchDetector

        return NoisyBinarySearchDetector
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
