"""`NoisyBinarySearchDetector`: the private search for the anomaly of a series as an estimator.

Bittner, Sarwate, Wright, "Using noisy binary search for differentially private anomaly
detection" (CSCML 2018). The estimator holds a series x_1, ..., x_{n+1} (one column) and
plays both sides of Algorithm 1 in one process: a local oracle over the series
(:func:`~privad.search.oracles.make_oracle`: the Laplace max oracle of eqs. 8-9, its
binarized form of section 5, or randomized response, eq. 5) answers the noisy group
queries of :func:`~privad.search.loop.search`, which keeps the Bayesian belief f_t over the
anomaly's location. Every answer is recorded in the estimator's ledger (``ledger_``, notion
``"anomaly-restricted-dp"``; or the ``ledger`` and ``scope`` given to the call) before it
is drawn, by the oracle's one release path.

A series is searched once: asking again about the same values returns the recorded result
(:meth:`privad.base.PrivadEstimator._released`), so repeated calls cannot average the noise
away; a different series is a new search, charged to the same ledger.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from sklearn.base import OutlierMixin

from privad.accounting import ANOMALY_RESTRICTED_DP, Guarantee, Ledger
from privad.base import PrivadEstimator, check_ledger_scope, row_hashes
from privad.errors import BudgetExceededError, DataError, ParameterError
from privad.noise import as_randomness
from privad.search.halting import PosteriorThreshold
from privad.search.loop import DEFAULT_MAX_QUERIES, SearchResult, search
from privad.search.models import ORACLE_KINDS, check_search_data, check_thresholds
from privad.search.oracles import make_oracle
from privad.validation import check_choice, check_epsilon, check_int, check_probability

__all__ = ["NoisyBinarySearchDetector"]


class NoisyBinarySearchDetector(OutlierMixin, PrivadEstimator):
    """DP noisy binary search for the anomaly of a series (Bittner, Sarwate, Wright 2018).

    Parameters
    ----------
    t_low, t_high : float, 0 < t_low < t_high
        The public thresholds of eq. (1): every value lies in [0, t_ℓ] (normal) or
        [t_h, ∞) (anomalous). t_ℓ is the oracle's sensitivity (Lemma 1); a value strictly
        between them, or a negative one, is a :class:`~privad.errors.DataError` (the
        guarantee would not hold).
    epsilon : float > 0
        ε of each answer ("anomaly-restricted DP", Definition 1); T answers cost Tε.
    oracle : {"laplace", "binarized", "randomized-response"}, default "laplace"
        The oracle (:data:`~privad.search.models.ORACLE_KINDS`).
    alpha : float in (0, 1), default 0.5
        The search stops when max f_t > α (``PosteriorThreshold``, section 6.2), and an
        item is labelled an anomaly when its posterior exceeds α (``threshold_``).
    top_k : int ≥ 1, default 4
        |S|, the items to screen (section 6.2 uses 4): ``top_``.
    selection : {"fixed", "fresh"}, default "fixed"
    split : {"nearest", "lower", "randomized"}, default "nearest"
        The query selection of :func:`~privad.search.loop.search`.
    absent_prior : float in (0, 1) or None, default None
        Also weigh "no anomaly in the series" with this prior (section 7; Laplace and
        randomized-response oracles).
    max_queries : int ≥ 0, default 100,000
        A cap on the answers of one search.
    rng : seed, ``privad.noise.Randomness`` or None
        Each search draws two child streams: the oracle's noise and the searcher's
        permutation (separate parties in a deployment). OS entropy when None.
    budget : float > 0 or None, default None
        Total ε of the series' in-memory ledger (``ledger_``, shared by every estimator of
        this process searching overlapping values: refits, clones, copies;
        :mod:`privad.base`): a search stops before an answer that would pass it
        (``PrivacyBudget`` on what is left, so it halts instead of being refused), and a
        search with less than one answer's ε left raises
        :class:`~privad.errors.BudgetExceededError`. With one fit this is the paper's b.
        None records every answer without a cap of its own.
    scope : str, default "fitted-data"
        The scope of ``ledger_`` the answers are charged to.

    Fitted attributes
    -----------------
    ``decision_scores_`` (f_T: each item's posterior probability of being the anomaly,
    higher = more anomalous), ``labels_`` (0/1, 1 where f_T > ``threshold_``; at most one
    item for α ≥ 1/2, none when the search stopped before it was confident),
    ``threshold_`` (α), ``anomaly_`` (the most probable item, found or not), ``top_`` (S),
    ``result_`` (the :class:`~privad.search.loop.SearchResult`), ``n_queries_`` (T),
    ``guarantee_`` (Tε, ``None`` when no query was answered), ``ledger_``, ``scope_``,
    ``rng_``, ``n_features_in_`` (1).

    Notes
    -----
    The search runs over one series held in one column: ``X`` has shape (n + 1, 1), one
    item per row. The items are not scored independently: the posterior of an item
    depends on every item of the series (one anomaly is searched among them), so the
    scores of a subset of rows are a new search's, not a subset of the scores. There is no
    ``contamination``: the search locates one anomaly, and α sets the labels. ``predict``
    returns 0/1 with 1 = anomaly (PyOD's convention, not scikit-learn's ±1).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.search import NoisyBinarySearchDetector
    >>> X = np.ones((64, 1)); X[17] = 9.0  # one series, one item per row
    >>> det = NoisyBinarySearchDetector(t_low=2.0, t_high=8.0, epsilon=1.0, budget=40.0, rng=1)
    >>> det = det.fit(X)
    >>> det.anomaly_, int(det.labels_.sum()), det.n_queries_, det.guarantee_.epsilon
    (17, 1, 6, 6.0)

    Another series charged to your own ledger under your scope (its budget applies), not to
    ``ledger_``:

    >>> from privad.accounting import Ledger
    >>> book = Ledger(":memory:")
    >>> _ = book.set_budget("study", "anomaly-restricted-dp", 10.0)
    >>> det.predict(X[:32], ledger=book, scope="study").nonzero()[0].tolist()
    [17]
    >>> book.spent("study", "anomaly-restricted-dp"), len(det.ledger_.history())
    (5.0, 6)
    """

    def __init__(
        self,
        t_low: float,
        t_high: float,
        epsilon: float,
        oracle: str = "laplace",
        alpha: float = 0.5,
        top_k: int = 4,
        selection: str = "fixed",
        split: str = "nearest",
        absent_prior: float | None = None,
        max_queries: int = DEFAULT_MAX_QUERIES,
        rng: Any = None,
        budget: float | None = None,
        scope: str = "fitted-data",
    ) -> None:
        self.t_low = t_low
        self.t_high = t_high
        self.epsilon = epsilon
        self.oracle = oracle
        self.alpha = alpha
        self.top_k = top_k
        self.selection = selection
        self.split = split
        self.absent_prior = absent_prior
        self.max_queries = max_queries
        self.rng = rng
        self.budget = budget
        self.scope = scope

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True  # eq. (1): values in R+
        return tags

    def _series(self, X: Any, *, reset: bool) -> np.ndarray:
        """``X`` as an (n, 1) float64 array whose values fit eq. (1) with the fitted
        thresholds."""
        data = self._validate(X, reset=reset, min_rows=2)
        if data.shape[1] != 1:
            raise DataError(
                f"X must hold one series in one column, shape (n, 1), got {data.shape[1]} "
                "columns; the search locates the anomaly among the values of one series"
            )
        check_search_data(data[:, 0], self._params["t_low"], self._params["t_high"])
        return data

    def fit(
        self, X: Any, y: Any = None, *, ledger: Ledger | None = None, scope: str | None = None
    ) -> NoisyBinarySearchDetector:
        """Search the series ``X`` (n + 1, 1) for its anomaly.

        The parameters are read here; later searches (:meth:`predict` on another series)
        use them as they were at ``fit``. A search the ledger refuses (less than one
        answer's ε left, or no budget for ``scope``) leaves the estimator as it was.

        Parameters
        ----------
        X : array (n + 1, 1)
            The series, one item per row.
        y : ignored
        ledger, scope : optional
            As in :meth:`decision_function`.
        """
        with self._fitting(ledger, scope):  # a refused search leaves the estimator as it was
            t_low, t_high = check_thresholds(self.t_low, self.t_high)
            self._params = {
                "t_low": t_low,
                "t_high": t_high,
                "epsilon": check_epsilon(self.epsilon, per_answer=True),
                "oracle": check_choice(self.oracle, "oracle", ORACLE_KINDS),
                "alpha": check_probability(self.alpha, "alpha", low_open=True, high_open=True),
                "top_k": check_int(self.top_k, "top_k", minimum=1),
                "selection": self.selection,
                "split": self.split,
                "absent_prior": self.absent_prior,
                "max_queries": check_int(self.max_queries, "max_queries", minimum=0),
            }
            if self.budget is not None:
                check_epsilon(self.budget, "budget")
            if not isinstance(self.scope, str) or not self.scope.strip():
                raise ParameterError(f"scope must be a non-empty string, got {self.scope!r}")
            data = self._series(X, reset=True)
            self.rng_ = as_randomness(self.rng)
            self.scope_ = self.scope.strip()
            self._open_account(row_hashes(data), Ledger, ANOMALY_RESTRICTED_DP)
            self._releases = {}
            # a first search: in data's order
            result, _ = self._released(data, partial(self._search, ledger=ledger, scope=scope))
            self.result_: SearchResult = result
            self.decision_scores_ = np.array(result.posterior)
            self.threshold_ = self._params["alpha"]
            self.labels_ = (self.decision_scores_ > self.threshold_).astype(np.int64)
            self.anomaly_ = result.argmax
            self.top_ = result.top.copy()
            self.n_queries_ = result.n_queries
            self.guarantee_: Guarantee | None = result.guarantee
        return self

    def _search(
        self, data: np.ndarray, *, ledger: Ledger | None = None, scope: str | None = None
    ) -> SearchResult:
        """One search over the series ``data`` (n, 1), every answer charged to ``ledger``
        under ``scope`` when given, else to ``ledger_`` under ``scope_``."""
        with self._own_ledger(ANOMALY_RESTRICTED_DP, data, ledger=ledger) as book:
            return self._search_on(book, self.scope_ if ledger is None else scope, data)

    def _search_on(self, book: Ledger, scope: str, data: np.ndarray) -> SearchResult:
        p = self._params
        left = None
        if any(b.notion == ANOMALY_RESTRICTED_DP for b in book.budgets(scope)):
            left = book.remaining(scope, ANOMALY_RESTRICTED_DP)
            if left < p["epsilon"]:
                raise BudgetExceededError(
                    f"the budget of scope {scope!r} has ε {left:g} left, less than one "
                    f"answer (ε {p['epsilon']:g}): no search is possible"
                )
        oracle_rng, search_rng = self.rng_.spawn(2)
        oracle = make_oracle(
            p["oracle"],
            data[:, 0],
            p["t_low"],
            p["t_high"],
            p["epsilon"],
            rng=oracle_rng,
            ledger=book,
            scope=scope,
        )
        return search(
            oracle,
            halting=PosteriorThreshold(p["alpha"]),
            budget=left,
            top_k=p["top_k"],
            selection=p["selection"],
            split=p["split"],
            absent_prior=p["absent_prior"],
            max_queries=p["max_queries"],
            rng=search_rng,
        )

    def decision_function(
        self, X: Any, *, ledger: Ledger | None = None, scope: str | None = None
    ) -> np.ndarray:
        """PRIVATE. f_T over the items of the series ``X``: each item's posterior probability
        of being the anomaly (higher = more anomalous). A series searched before (the same
        values, in any order) gets its recorded result: no new answers, whichever ledger is
        given.

        Parameters
        ----------
        X : array (n + 1, 1)
            The series, one item per row.
        ledger, scope : optional
            Charge this :class:`~privad.accounting.Ledger` under ``scope`` (give both).
            Default: the estimator's own in-memory ledger :attr:`ledger_`, scope
            :attr:`scope_`.
        """
        check_ledger_scope(ledger, scope)
        self._require_fitted("result_")
        data = self._series(X, reset=False)
        result, where = self._released(data, partial(self._search, ledger=ledger, scope=scope))
        return np.array(result.posterior[where])

    def predict(
        self, X: Any, *, ledger: Ledger | None = None, scope: str | None = None
    ) -> np.ndarray:
        """PRIVATE. 0/1 per item of the series ``X``, 1 where f_T > α (the same search as
        :meth:`decision_function`).

        Parameters
        ----------
        X, ledger, scope
            As in :meth:`decision_function`.
        """
        scores = self.decision_function(X, ledger=ledger, scope=scope)
        return (scores > self.threshold_).astype(np.int64)
