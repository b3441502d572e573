"""`SensitiveAnomalyIdentifier`: the paper's mechanisms behind scikit-learn conventions.

A trusted curator holds the data (``fit``) and answers (β, r)-anomaly identification
queries (AIQs) "is record i a (β, r)-anomaly?" with one of three mechanisms:

* ``"sp"`` (default): U_{λ_k}, (ε, k)-sensitively private (Theorem 4.6);
* ``"dp"``: U_{Δ_G}, the Pareto-optimal ε-DP mechanism (Theorem 4.4);
* ``"compiled"``: Construction 2 on the optimal ε/2-DP mechanism, (ε, k)-SP (Theorem 4.7).

What is private and what is not
-------------------------------
Only :meth:`predict` (and :meth:`decision_function`, the same answers as ±1 scores, and
:meth:`release`) release private answers. :meth:`error_probability`,
:meth:`log_error_probability`, :meth:`true_labels`, :meth:`privacy_loss` and the fitted
count attributes are computed from the exact counts x_i and B_x(i, r): they are **not
private** and exist for evaluation (the paper's Tables 2–3 and Figures 6–9 report exactly
these quantities). There is deliberately no continuous private anomaly score: the exact log
error −ε(λ − 1) − log(1 + e^ε) is a deterministic function of the counts and would
disclose them.

Accounting: each answer is (ε, k)-SP (or ε-DP); a batch of answers composes to
min(n, m)·ε (Claims 3 and 5, see :mod:`privad.sensitive.accounting`). Every release goes
through :func:`privad.sensitive.release.release_labels`, which reserves that guarantee on a
:class:`privad.accounting.Ledger` before anything is sampled (a refusal raises
:class:`~privad.errors.BudgetExceededError` and releases nothing): the ``ledger`` and
``scope`` given to :meth:`predict`, else the fitted records' in-memory ``ledger_``, shared
by refits, clones, copies and grid-search folds in this process (:mod:`privad.base`). Each
question is released once; asking again returns the recorded answer (``fresh=True`` asks for
a new, charged release), so repeated calls cannot average the noise away.

Scores and contamination
------------------------
With ``contamination`` c, ``labels_`` flag the top c share of the released answers, ties
broken by a keyed hash of each question (post-processing, no privacy cost); ``r="private"``
or ``"data"`` also aims r at c. See :mod:`privad.sensitive.contamination`.

Scale-out: ``engine="dask"``
----------------------------
With ``engine="dask"`` :meth:`fit` takes a Dask array or DataFrame (or any array, which is
then chunked) and keeps it lazy in ``X_`` (Dask data with ``engine="auto"`` does the same;
an explicit in-memory engine for Dask data is a ParameterError, not a silent download). The
ball counts, multiplicities and Claim 5's bound are computed by
:mod:`privad.geometry.distributed` on whatever Dask scheduler is active (a
:func:`privad.distributed.dask_client` block, or Dask's local default). Only the int64
counts (x_i, B) come back to the driver, where the mechanism samples the answers exactly as
the single-machine engines do, from the same ``rng``: counts, labels (with a fixed seed) and
error probabilities are identical to ``engine="numba"``'s, whatever the partitioning.
:meth:`privacy_loss` needs all records on one machine and is not available.

When a ``distributed`` client is active, :meth:`fit` persists the checked records on the
workers (``client.persist``; the driver never holds them), so the passes that follow (the
counts at r, the multiplicities, Claim 5's counts at 2r) read them from the workers' memory
instead of producing the input again; query records given as Dask collections are persisted
the same way, once per distinct collection. The summary pass of the distributed engine runs
once per input and fit (:func:`privad.geometry.distributed.shared_summaries`), and the
statistics of the last query collection are kept, so ``statistics(Q)``, ``predict(Q)`` and
the error probabilities of the same ``Q`` count once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import OutlierMixin

from privad.accounting import Guarantee, Ledger
from privad.base import (
    NotFittedError,
    PrivadEstimator,
    check_contamination,
    check_ledger_scope,
    row_hashes,
)
from privad.errors import DataError, ParameterError
from privad.io import rows_digest
from privad.sensitive._common import check_beta, check_eps, check_k
from privad.sensitive._dask import dask_records
from privad.sensitive.accounting import Claim5Bound, per_record_privacy_loss
from privad.sensitive.anomaly import METRICS, BallStatistics, anomaly_label
from privad.sensitive.constructions import mechanism_name
from privad.sensitive.contamination import ContaminationScores, check_r, choose_radius
from privad.sensitive.mechanisms import AIQMechanism, aiq_mechanism, auto_count_cap
from privad.sensitive.release import (
    AnswerRecord,
    Release,
    batch_bound,
    batch_charge,
    batch_statistics,
    question_keys,
    release_labels,
)
from privad.sensitive.selection import DEFAULT_BLOCKS, RadiusSelection
from privad.validation import check_choice, check_int

__all__ = ["DASK_ENGINE", "NotFittedError", "SensitiveAnomalyIdentifier", "auto_count_cap"]

DASK_ENGINE = "dask"
"""The ``engine`` value that keeps the data in Dask collections (see the module docstring)."""


class SensitiveAnomalyIdentifier(OutlierMixin, ContaminationScores, PrivadEstimator):
    """Private (β, r)-anomaly identification (Asif, Papakonstantinou, Vaidya, CCS 2019).

    Parameters
    ----------
    beta : int ≥ 1
        β of Definition 2.2: a present record is an anomaly iff at most β records (itself
        and its duplicates included) lie within distance r.
    r : float ≥ 0, "private", "data" or a :class:`~privad.sensitive.RadiusSelection`
        The radius: given (a number); ``"private"``, chosen at :meth:`fit` by
        :func:`privad.sensitive.select_radius` for ``contamination`` (charged to
        :attr:`ledger_`); ``"data"``, :func:`privad.sensitive.propose_parameters` (NOT
        private); or an earlier private selection for the same β. Every spend says which
        (``metadata["context"]["parameters"]``, :attr:`parameters_`).
    epsilon : float > 0
        ε of each answer.
    k : int ≥ 1, default 1
        k of the k-sensitive neighbourhood graph (ignored by ``"dp"``).
    mechanism : {"sp", "dp", "compiled"}, default "sp"
    metric : {"euclidean", "manhattan", "chebyshev"}, default "euclidean"
    add_query_to_data : bool, default False
        Footnote 1's variant for queries ``Q`` given explicitly: answer for i on the data
        plus one copy of i. Records of the fitted data (``Q=None``) are never added again.
    count_cap : "auto", None or int, default None
        None: exact counts. An int c ≥ β + 2 or ``"auto"`` (:func:`auto_count_cap`): ball
        counts stop at c, which is faster on dense data; the mechanism is then U_{λ^c}
        (same guarantee; capped records get error e^{−ε(c−β−1)}/(1 + e^ε), an upper bound
        of the uncapped error; see :mod:`privad.sensitive.mdd`).
    cap_tolerance : float, default 1e-30
        Error level on capped records for ``count_cap="auto"``.
    engine : str, default "auto"
        Ball-count engine of :func:`privad.geometry.ball_counts` (``"auto"``, ``"numba"``,
        ``"scipy"``), or ``"dask"``: data held as a Dask collection, counted on the active
        Dask scheduler (see the module docstring).
    rng : seed, ``privad.noise.Randomness`` or None
        Source of randomness (OS entropy when None).
    budget : float > 0 or None, default None
        Total ε of the fitted records' in-memory ledger (``ledger_``, shared by every
        estimator of this process fitted on overlapping records); None records every
        release there without a cap of its own.
    scope : str, default "fitted-data"
        The scope of ``ledger_`` the releases are charged to.
    contamination : float in (0, 0.5] or None, default None
        PyOD's ``contamination``: None, the paper's rule (``labels_`` are the released
        answers); c, ``labels_`` flag the top c share of the released scores, and
        ``r="private"``/``"data"`` aim r at c (:mod:`privad.sensitive.contamination`).
    selection_epsilon : float > 0 or None, default None
        ε of the private selection of r (``r="private"``); None: ``epsilon``.
    radii : array or None, default None
        The public grid of candidate radii of ``r="private"``; None:
        :func:`privad.sensitive.selection.default_radii` (features in [0, 1]).
    blocks : int ≥ 2, default 30
        K, the blocks of the private selection (``r="private"``).

    Fitted attributes
    -----------------
    X_ : the stored records (a lazy Dask array with ``engine="dask"``); ``n_features_in_``;
    ``n_records_``; ``count_cap_`` (int or None); ``rng_`` (the Randomness used);
    ``engine_`` (``"dask"`` for ``engine="dask"`` or Dask data with ``"auto"``, else
    ``engine``); ``mechanism_`` (the :class:`~privad.sensitive.AIQMechanism`); ``ledger_``
    (the fitted records' in-memory :class:`~privad.accounting.Ledger`, recording every
    release not charged elsewhere); ``scope_``; ``answers_`` (the
    :class:`~privad.sensitive.release.AnswerRecord` of released answers); ``r_`` (the radius
    used); ``parameters_`` (where (β, r) came from: ``source`` ``"given"``, ``"data"`` or
    ``"private"``, and how); ``selection_`` (the :class:`~privad.sensitive.RadiusSelection`
    or None). :attr:`decision_scores_`, :attr:`threshold_` and :attr:`labels_` (PyOD's
    names) release the fitted records' answers on first use.

    Examples
    --------
    Four close records and a lone one; with β = 1 and r = 0.5 the lone one is the only
    (β, r)-anomaly (Definition 2.2). Each answer is (ε, k)-SP (Theorem 4.6); the five
    answers cost min(n, m)·ε (Claim 5) on the records' in-memory ledger, once:

    >>> import numpy as np
    >>> from privad.sensitive import SensitiveAnomalyIdentifier
    >>> X = np.array([[0.0], [0.1], [0.2], [0.15], [5.0]])
    >>> est = SensitiveAnomalyIdentifier(beta=1, r=0.5, epsilon=1.0, rng=0).fit(X)
    >>> est.predict().tolist()
    [0, 0, 0, 0, 1]
    >>> est.ledger_.spent("fitted-data", "sensitive")  # no budget set: recorded, not capped
    4.0
    >>> est.predict().tolist()  # the recorded answers: no new noise, no new spend
    [0, 0, 0, 0, 1]
    """

    def __init__(
        self,
        beta: int,
        r: float | str | RadiusSelection,
        epsilon: float,
        k: int = 1,
        mechanism: str = "sp",
        metric: str = "euclidean",
        add_query_to_data: bool = False,
        count_cap: int | str | None = None,
        cap_tolerance: float = 1e-30,
        engine: str = "auto",
        rng: Any = None,
        budget: float | None = None,
        scope: str = "fitted-data",
        contamination: float | None = None,
        selection_epsilon: float | None = None,
        radii: Any = None,
        blocks: int = DEFAULT_BLOCKS,
    ) -> None:
        self.beta = beta
        self.r = r
        self.epsilon = epsilon
        self.k = k
        self.mechanism = mechanism
        self.metric = metric
        self.add_query_to_data = add_query_to_data
        self.count_cap = count_cap
        self.cap_tolerance = cap_tolerance
        self.engine = engine
        self.rng = rng
        self.budget = budget
        self.scope = scope
        self.contamination = contamination
        self.selection_epsilon = selection_epsilon
        self.radii = radii
        self.blocks = blocks

    # -- scikit-learn plumbing -------------------------------------------------------------

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags

    def _validated(self) -> dict[str, Any]:
        beta = check_beta(self.beta)
        mechanism = mechanism_name(self.mechanism)
        epsilon = check_eps(self.epsilon)
        cap = self.count_cap
        if cap == "auto":
            cap = auto_count_cap(beta, epsilon, mechanism=mechanism, tolerance=self.cap_tolerance)
        elif cap is not None:
            if isinstance(cap, str):
                raise ParameterError(f"count_cap must be 'auto', None or an int, got {cap!r}")
            cap = check_int(cap, "count_cap", minimum=beta + 2)
        if not isinstance(self.add_query_to_data, bool | np.bool_):
            raise ParameterError(
                f"add_query_to_data must be True or False, got {self.add_query_to_data!r}"
            )
        if self.budget is not None:
            check_eps(self.budget)
        if not isinstance(self.scope, str) or not self.scope.strip():
            raise ParameterError(f"scope must be a non-empty string, got {self.scope!r}")
        return {
            "beta": beta,
            "r": check_r(self.r, beta, self.contamination),
            "contamination": (
                None if self.contamination is None else check_contamination(self.contamination)
            ),
            "epsilon": epsilon,
            "k": check_k(self.k),
            "mechanism": mechanism,
            "metric": check_choice(self.metric, "metric", METRICS),
            "cap": cap,
        }

    def fit(self, X: Any, y: Any = None) -> SensitiveAnomalyIdentifier:
        """Store the database ``X`` (n, d) and validate the parameters. ``y`` is ignored."""
        from privad import noise
        from privad.geometry.balls import check_distributed_engine, is_distributed

        params = self._validated()
        if self.engine == DASK_ENGINE or is_distributed(X):
            check_distributed_engine(self.engine)  # not an in-memory engine for Dask data
            self.engine_ = DASK_ENGINE
            self._query_memo: tuple[str, Any, BallStatistics | None] | None = None
            self.X_ = dask_records(X, "X")
        else:
            self.engine_ = self.engine
            self.X_ = self._validate(X, reset=True).copy()
        self._summaries: dict = {}  # the distributed engine's summary passes, per fit
        self.n_records_ = int(self.X_.shape[0])
        self.n_features_in_ = int(self.X_.shape[1])
        self.count_cap_ = params["cap"]
        self.rng_ = noise.as_randomness(self.rng)
        self._self_stats: BallStatistics | None = None
        self.mechanism_: AIQMechanism = aiq_mechanism(
            params["mechanism"],
            beta=params["beta"],
            r=params["r"] if isinstance(params["r"], float) else 0.0,  # chosen below
            epsilon=params["epsilon"],
            k=params["k"],
            metric=params["metric"],
            count_cap=params["cap"],
        )
        self.scope_ = self.scope.strip()
        digest, hashes = self._identity()
        self._open_account(hashes, Ledger, self.mechanism_.notion)
        selection_eps = (
            params["epsilon"] if self.selection_epsilon is None else self.selection_epsilon
        )
        # a private selection made before on the same records with the same public inputs
        # is recalled (no new draw, no new spend), as recorded answers are
        recorded = self._account.resolve().records
        selection_key = (
            "radius selection",
            digest,
            params["beta"],
            params["contamination"],
            selection_eps,
            None if self.radii is None else tuple(np.asarray(self.radii, float).ravel()),
            self.blocks,
            params["metric"],
            params["k"],
            self.mechanism_.notion,
        )
        r = recorded.get(selection_key, params["r"]) if params["r"] == "private" else params["r"]
        self.selection_, self.parameters_ = choose_radius(
            r,
            self.X_,
            params,
            in_memory=self.engine_ != DASK_ENGINE,
            select={
                "epsilon": selection_eps,
                "ledger": self.ledger_,
                "scope": self.scope_,
                "radii": self.radii,
                "blocks": self.blocks,
                "notion": self.mechanism_.notion,
                "k": params["k"],
                "rng": self.rng_,
            },
        )
        if params["r"] == "private":
            recorded.setdefault(selection_key, self.selection_)
        params = {**params, "r": self.parameters_["r"]}
        self.r_ = params["r"]
        self._params = params
        self.mechanism_ = self.mechanism_.at_radius(self.r_)
        # the tie-break of the released answers (contamination): data-independent
        self._tiebreak_salt = None if params["contamination"] is None else self.rng_.derive_seed()
        key = (digest, bool(self.add_query_to_data), *sorted(self._params.items()))
        self.answers_ = self._fitted_record(key, AnswerRecord)
        return self

    def _check_fitted(self) -> dict[str, Any]:
        self._require_fitted("X_")
        return self._params

    def _queries(self, Q: Any) -> Any:
        if Q is None:
            return None
        if self.engine_ == DASK_ENGINE:
            from dask.base import tokenize

            memo = self._query_memo
            if memo is not None and Q is memo[1]:  # already converted (predict -> statistics)
                return Q
            key = tokenize(Q)  # a Dask collection's name; an in-memory array's content
            if memo is not None and memo[0] == key:
                Qa = memo[1]
            else:
                Qa = dask_records(Q, "Q", min_rows=0)
                self._query_memo = (key, Qa, None)
        else:
            Qa = self._validate(Q, reset=False, min_rows=0)
        if Qa.shape[1] != self.n_features_in_:
            raise DataError(
                f"Q has {Qa.shape[1]} feature(s) but the fitted data has {self.n_features_in_}"
            )
        return Qa

    def statistics(self, Q: Any = None) -> BallStatistics:
        """(x_i, B_x(i, r)) for each query (non-private; what the mechanisms read)."""
        p = self._check_fitted()
        Qa = self._queries(Q)
        if Qa is None and self._self_stats is not None:
            return self._self_stats
        add = Qa is not None and bool(self.add_query_to_data)
        if Qa is not None and Qa.shape[0] == 0:
            z = np.zeros(0, np.int64)
            return BallStatistics(z, z, z.astype(bool), p["cap"], add)
        memo = self._query_memo if self.engine_ == DASK_ENGINE else None
        if Qa is not None and memo is not None and memo[1] is Qa and memo[2] is not None:
            return memo[2]
        stats = batch_statistics(
            self.X_, Qa, self.mechanism_, add=add, engine=self.engine_, summaries=self._summaries
        )
        if Qa is not None and memo is not None and memo[1] is Qa:
            self._query_memo = (memo[0], Qa, stats)
        if Qa is None:
            self._self_stats = stats
        return stats

    # -- non-private evaluation ------------------------------------------------------------

    def true_labels(self, Q: Any = None) -> np.ndarray:
        """NOT PRIVATE. The exact answers g(i, x) (1 = (β, r)-anomaly), for evaluation.

        With a count cap the labels are still exact (anomalies have B ≤ β < c).
        """
        s = self.statistics(Q)
        return np.asarray(anomaly_label(s.x_i, s.ball, self._params["beta"]), dtype=np.int64)

    def log_error_probability(self, Q: Any = None) -> np.ndarray:
        """NOT PRIVATE. Exact log P(answer ≠ g(i, x)) per query (Claim 2 / Theorem 4.7).

        Exact in log space at any magnitude. With a count cap: the capped mechanism's exact
        error, an upper bound of the uncapped one's on capped records.
        """
        s = self.statistics(Q)
        return self.mechanism_.log_error_probability(s.x_i, s.ball)

    def error_probability(self, Q: Any = None) -> np.ndarray:
        """NOT PRIVATE. exp of :meth:`log_error_probability` (underflows below ~5e-324)."""
        return np.exp(self.log_error_probability(Q))

    def privacy_loss(self, Q: Any = None, *, combine: str = "max") -> np.ndarray:
        """NOT PRIVATE. Per-record privacy loss of the fitted records for queries ``Q``.

        See :func:`privad.sensitive.accounting.per_record_privacy_loss` (Figure 3 plots
        exp(−loss)). Computed without a count cap. Not available with ``engine="dask"``
        (it needs every record on one machine).
        """
        p = self._check_fitted()
        if self.engine_ == DASK_ENGINE:
            raise ParameterError(
                "privacy_loss needs every record on one machine; it is not available with "
                "engine='dask' (fit a single-machine estimator on a sample to inspect it)"
            )
        Qa = self._queries(Q)
        return per_record_privacy_loss(
            self.X_,
            p["r"],
            beta=p["beta"],
            epsilon=p["epsilon"],
            mechanism=p["mechanism"],
            k=p["k"],
            metric=p["metric"],
            queries=Qa,
            add_query_to_data=bool(self.add_query_to_data),
            combine=combine,
        )

    # -- accounting ------------------------------------------------------------------------

    def guarantee(self, queries: Any = None) -> Guarantee:
        """The guarantee of answering a batch.

        ``queries``: an int n (n queries, sequential composition: n·ε); an (m, d) array of
        query records (Claim 5: min(n, m)·ε with m from :func:`claim5_bound`); or None for
        the fitted records themselves.
        """
        self._check_fitted()
        if isinstance(queries, int | np.integer) and not isinstance(queries, bool):
            return self.mechanism_.batch_guarantee(check_int(queries, "n_queries", minimum=1))
        Qa = self._queries(queries)
        if Qa is not None and Qa.shape[0] == 0:
            raise DataError("no queries: a guarantee needs at least one query")
        bound = self._claim5(Qa)  # Claim 5 on the queries (the fitted records for None)
        return self.mechanism_.batch_guarantee(bound.n, bound.m)

    def claim5_bound(self, Q: Any = None) -> Any:
        """Claim 5's bounds on m for queries ``Q`` (default: the fitted records)."""
        self._check_fitted()
        return self._claim5(self._queries(Q))

    def _claim5(self, Qa: Any) -> Claim5Bound:
        """Claim 5's bound for ``Qa`` (the fitted records for None, their counts at r
        reused when known: :func:`~privad.sensitive.release.batch_bound`)."""
        return batch_bound(
            self.X_,
            Qa,
            self.mechanism_,
            self._self_stats,
            engine=self.engine_,
            summaries=self._summaries,
        )

    # -- private releases ------------------------------------------------------------------

    def predict(
        self,
        Q: Any = None,
        *,
        ledger: Ledger | None = None,
        scope: str | None = None,
        fresh: bool = False,
    ) -> np.ndarray:
        """PRIVATE. Noisy 0/1 labels (1 = anomaly), released once per question.

        With ``contamination`` the labels are PyOD's, ``decision_function(Q) > threshold_``
        (post-processing of the same answers; ``threshold_`` releases the fitted records'
        answers on first use).

        A question is a record of the fitted data (``Q=None``) or a query record of ``Q``.
        Questions answered before are given their recorded answers (no new noise, no new
        spend: repeating a question cannot average the noise away); the others are
        released together through :func:`privad.sensitive.release.release_labels`, whose
        guarantee (Claim 5, :meth:`guarantee`) is charged before anything is sampled. A
        refusal raises :class:`~privad.errors.BudgetExceededError` and releases nothing.

        Parameters
        ----------
        Q : array (m, d), Dask collection or None
            The query records; None for the fitted records.
        ledger, scope : optional
            Charge this :class:`~privad.accounting.Ledger` under ``scope`` (give both).
            Default: the estimator's own in-memory ledger :attr:`ledger_`, scope
            :attr:`scope`.
        fresh : bool, default False
            Release new answers for every question, even those answered before (charged
            again; the new answers become the recorded ones).
        """
        answers, _ = self._answer(Q, ledger, scope, fresh=fresh)
        if self._params["contamination"] is None:
            return answers
        return (self._scores(Q, answers) > self.threshold_).astype(np.int64)

    def release(
        self,
        Q: Any = None,
        *,
        ledger: Ledger | None = None,
        scope: str | None = None,
        output: Any = None,
        context: dict[str, Any] | None = None,
        step: Any = None,
    ) -> Release:
        """PRIVATE. A fresh release of every question of ``Q``, written to ``output``.

        What the command line calls: like ``predict(Q, fresh=True)``, and the answers are
        written to ``output`` (:class:`~privad.sensitive.release.CsvLabels`,
        :class:`~privad.sensitive.release.ParquetLabels`), made durable and published
        before the spend is committed. ``context`` is stored with the spend; ``step(text)``
        wraps each stage (progress). Returns the :class:`~privad.sensitive.release.Release`.
        """
        _, rel = self._answer(
            Q, ledger, scope, fresh=True, output=output, context=context, step=step
        )
        if rel is None:
            raise DataError("no queries: a release needs at least one query")
        return rel

    def _answer(
        self,
        Q: Any,
        ledger: Ledger | None,
        scope: str | None,
        *,
        fresh: bool,
        output: Any = None,
        context: dict[str, Any] | None = None,
        step: Any = None,
    ) -> tuple[np.ndarray, Release | None]:
        """The recorded answers of every question of ``Q``, releasing the new ones."""
        self._check_fitted()
        check_ledger_scope(ledger, scope)
        Qa = self._queries(Q)
        kind, recorded, keys, Q_new, where = self._questions(Qa, fresh)
        new = np.flatnonzero(where)
        answers = recorded.astype(np.int64)  # a copy: −1 where a question is new
        rel = None
        if new.size:
            with self._own_ledger(self.mechanism_.notion, ledger=ledger) as book:
                rel = release_labels(
                    self.mechanism_,
                    ledger=book,
                    scope=self.scope_ if ledger is None else scope,
                    rng=self.rng_,
                    output=output,
                    statistics=lambda: self._new_statistics(Qa, Q_new, kind, where),
                    charge=batch_charge(
                        self.X_,
                        Q_new,
                        self.mechanism_,
                        {**(context or {}), "parameters": self.parameters_},
                        engine=self.engine_,
                        summaries=self._summaries,
                    ),
                    step=step,
                )
            answers[new] = rel.answers
            if keys is None:
                recorded[new] = rel.answers
            else:
                self.answers_.store_vectors(kind[1], [keys[i] for i in new], rel.answers)
        return answers, rel

    def _identity(self) -> tuple[str, np.ndarray]:
        """The fitted data's identity: the digest of the exact records (in order, since
        fitted records are asked by position; with the mechanism's parameters it keys the
        record of answers) and its :func:`~privad.base.row_hashes` (a Dask array: its
        token, so only the same collection is recognised)."""
        if self.engine_ == DASK_ENGINE:
            from dask.base import tokenize

            token = tokenize(self.X_)
            digest, hashes = token, np.array([int(token[:16], 16)], dtype=np.uint64)
        else:
            digest, hashes = rows_digest(self.X_), row_hashes(self.X_)
        return digest, hashes

    def decision_function(
        self,
        Q: Any = None,
        *,
        ledger: Ledger | None = None,
        scope: str | None = None,
    ) -> np.ndarray:
        """PRIVATE. The released answers as scores: +1.0 anomaly, −1.0 normal.

        This mechanism has no private continuous score (see the module docstring), so the
        score is the answer itself, thresholded at 0 like scikit-learn's decision functions.
        It is the same release as :meth:`predict`: questions answered before keep their
        recorded answers, new ones are released and charged once. With ``contamination``
        the score of each question also carries its tie-break in [0, 0.5) ("Scores and
        contamination" in the module docstring).
        """
        answers, _ = self._answer(Q, ledger, scope, fresh=False)
        return self._scores(Q, answers)

    # -- the record of released answers ----------------------------------------------------

    def _questions(self, Qa: Any, fresh: bool) -> tuple[Any, np.ndarray, Any, Any, np.ndarray]:
        """Which questions of a request are new.

        Returns (kind, recorded answers, keys, the new questions' records or None when they
        are all the fitted records, boolean mask of the questions to release). Rows repeated
        within one request are answered independently (and counted repeatedly by Claim 5),
        on every engine alike; a later request gets the first recorded answer.
        """
        add = bool(self.add_query_to_data)
        if Qa is None:
            kind: Any = ("self",)
            recorded = self.answers_.positions(kind, self.n_records_)
            where = np.ones(self.n_records_, bool) if fresh else recorded < 0
            return kind, recorded, None, None if where.all() else self.X_[where], where
        kind = ("vector", add)
        keys = question_keys(Qa)
        recorded = np.full(len(keys), -1, np.int8) if fresh else self.answers_.vectors(add, keys)
        where = recorded < 0
        return kind, recorded, keys, Qa if where.all() else Qa[where], where

    def _new_statistics(self, Qa: Any, Q_new: Any, kind: Any, where: np.ndarray) -> BallStatistics:
        """Counts of the new questions, in order. For fitted records they are indexed from
        the counts of all fitted records (counted once per fit); query records are counted
        (all of ``Qa`` when every question is new, so the counts are shared with
        :meth:`statistics`)."""
        if kind[0] == "self" or Q_new is Qa:
            s = self.statistics(None if kind[0] == "self" else Qa)
            if where.all():
                return s
            return BallStatistics(
                s.x_i[where], s.ball[where], s.capped[where], s.cap, s.added_query
            )
        return self.statistics(Q_new)
