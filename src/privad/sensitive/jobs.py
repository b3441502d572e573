"""The jobs of sensitive-privacy identification, one library call each.

:func:`identify` is what ``privad sp identify`` does, callable from Python too: label every
record of a data set (or the records of ``queries``) with a (β, r)-anomaly AIQ mechanism,
charge the batch to a ledger and write the answers atomically, on this machine or on a Dask
cluster. :func:`choose_parameters` is ``privad sp params``: (β, r) proposed from the data
(not private) or r chosen by the ε-DP selection (charged to the ledger).

Every answer leaves through :func:`privad.sensitive.release.release_labels` (validate,
check the budget, count, charge Claim 5's min(n, m)·ε, reserve, sample, write, publish,
commit); this module picks the records, the output and the ledger, and builds the
mechanism's batch charge (:func:`~privad.sensitive.release.batch_charge`) as the estimator
does, so the three entry points leave identical ledger rows. Nothing here imports
scikit-learn.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privad.accounting import Guarantee, Ledger, NoBudgetError, default_ledger_path
from privad.errors import BudgetExceededError, DataError, ParameterError, PrivadError
from privad.io import check_output_path
from privad.noise import RandomnessLike, as_randomness
from privad.sensitive.accounting import Claim5Bound
from privad.sensitive.anomaly import ball_statistics
from privad.sensitive.contamination import choose_radius
from privad.sensitive.mechanisms import AIQMechanism
from privad.sensitive.release import (
    CsvLabels,
    ParquetLabels,
    batch_charge,
    batch_statistics,
    release_labels,
)
from privad.sensitive.selection import RadiusSelection, select_radius
from privad.validation import check_array

__all__ = ["Identification", "ParameterChoice", "choose_parameters", "identify", "open_ledger"]

Step = Callable[[str], contextlib.AbstractContextManager]


@contextlib.contextmanager
def open_ledger(
    ledger: Ledger | str | os.PathLike[str] | None,
    scope: str,
    notion: str,
    budget: float | None = None,
) -> Iterator[tuple[Ledger, str | None]]:
    """The ledger a job charges, with ``scope``'s ``notion`` budget, and a note for the
    summary.

    ``ledger``: a :class:`~privad.accounting.Ledger` (left open), a ledger file, or None
    (the default file, ``~/.privad/ledger.sqlite``). ``budget``: the scope's total ε, set
    when the scope has no budget (and a missing file is created); None: the file and the
    budget must exist. An existing budget is never changed (the note says ``budget`` was
    ignored).

    Examples
    --------
    >>> from privad.sensitive.jobs import open_ledger
    >>> with open_ledger("ledger.sqlite", "demo", "sensitive", budget=2.0) as (book, note):
    ...     print(note)
    created the sensitive budget of scope 'demo': total ε 2
    """
    with contextlib.ExitStack() as stack:
        if isinstance(ledger, Ledger):
            book = ledger
        else:
            target = Path(default_ledger_path() if ledger is None else ledger).expanduser()
            if budget is None and not target.exists():
                raise PrivadError(
                    f"ledger {str(target)!r} does not exist, so no privacy budget is set; "
                    "create one with 'privad budget set SCOPE --epsilon E --notion sensitive' "
                    "(or pure-dp for --mechanism dp), or pass --budget E to create the "
                    "scope's budget"
                )
            book = stack.enter_context(Ledger(target, create=budget is not None))
        yield book, _ensure_budget(book, scope, notion, budget)


def _ensure_budget(book: Ledger, scope: str, notion: str, budget: float | None) -> str | None:
    """Create the budget from ``budget`` when absent; return a note for the summary."""
    try:
        current = book.budget(scope, notion)
    except NoBudgetError:
        if budget is None:
            raise PrivadError(
                f"no {notion} budget is set for scope {scope!r} in ledger {book.path}; set one "
                f"with 'privad budget set {scope} --epsilon E --notion {notion}' or pass "
                "--budget E"
            ) from None
        book.set_budget(scope, notion, budget)
        return f"created the {notion} budget of scope {scope!r}: total ε {budget:g}"
    if budget is not None:
        return (
            f"--budget ignored: scope {scope!r} already has a {notion} budget (total ε "
            f"{float(current.total):g}); change it with 'privad budget set'"
        )
    return None


@dataclass(frozen=True)
class Identification:
    """What one :func:`identify` job released and charged.

    Attributes
    ----------
    answers : int64 array, the noisy labels (1 = anomaly), one per question, in order.
    mechanism : the mechanism that answered (with a private selection, at the chosen r).
    parameters : where (β, r) came from (``source``, ``beta``, ``r``, ``how``).
    guarantee : what the batch was charged (Claim 5: min(n, m)·ε).
    bound : Claim 5's bound on m. NOT private, like ``guarantee.epsilon`` and ``remaining``.
    scope, ledger, remaining : the scope charged, the ledger's file, and the scope's ε left.
    output : the file (on Dask, the folder) written.
    note : what happened to the budget (created, or ``budget`` ignored), or None.
    n_records, n_features : the data's shape.
    partitions : (data partitions, query partitions) on Dask, else None.
    workers : the Dask workers that counted, else None.
    add_query_to_data, error_probabilities : as asked (footnote 1; the NOT private columns).

    Examples
    --------
    One query record labelled against three records with the ε-DP mechanism:

    >>> from privad.sensitive import DPMechanism, identify
    >>> dp = DPMechanism(beta=1, r=0.5, epsilon=2.0)
    >>> res = identify([[0, 0], [0, 0.1], [3, 3]], dp, queries=[[3, 3.1]], ledger="dp.sqlite",
    ...                scope="dp", output="dp.csv", budget=50.0, rng=1)
    >>> res.n_records, res.answers.size, res.guarantee.notion, res.bound.m, res.remaining
    (3, 1, 'pure-dp', 1, 48.0)
    """

    answers: np.ndarray
    mechanism: AIQMechanism
    parameters: dict[str, Any]
    guarantee: Guarantee
    bound: Claim5Bound
    scope: str
    ledger: str
    remaining: float
    output: Path
    note: str | None
    n_records: int
    n_features: int
    partitions: tuple[int, int] | None = None
    workers: int | None = None
    add_query_to_data: bool = False
    error_probabilities: bool = False

    @property
    def flagged(self) -> int:
        """The number of questions answered "anomaly" (released)."""
        return int(self.answers.sum())


def identify(
    data: Any,
    mechanism: AIQMechanism,
    *,
    ledger: Ledger | str | os.PathLike[str] | None,
    scope: str,
    output: str | os.PathLike[str],
    budget: float | None = None,
    queries: Any = None,
    add_query_to_data: bool = False,
    ids: Any = None,
    error_probabilities: bool = False,
    contamination: float | None = None,
    selection_epsilon: float | None = None,
    cluster: Callable[[], contextlib.AbstractContextManager] | None = None,
    rng: RandomnessLike = None,
    context: dict[str, Any] | None = None,
    step: Step | None = None,
) -> Identification:
    """Label records as (β, r)-anomalies privately, charge the ledger, write the labels.

    One job of the paper's setting (Asif et al., CCS 2019, section 3): a trusted curator
    answers "is record i a (β, r)-anomaly?" (Definition 2.2) for every question with
    ``mechanism`` (one answer is (ε, k)-sensitively private, Definition 3.2, or ε-DP), and
    the batch is charged min(n, m)·ε (Claims 3 and 5) to ``scope`` of ``ledger`` before
    anything is sampled. The answers are written to ``output`` and published before the
    spend is committed; a refusal or a failed write spends nothing and writes nothing.

    Parameters
    ----------
    data : (n, d) array, or a :class:`privad.distributed.PartitionedSource`
        The records. A partitioned source is counted on a Dask cluster (``cluster``), and
        the output is then a new folder of Parquet parts, one per partition.
    mechanism : AIQMechanism
        The mechanism (β, r, ε, k, metric, count cap), e.g. from
        :func:`~privad.sensitive.aiq_mechanism`.
    ledger : Ledger, path or None
        The ledger charged (see :func:`open_ledger`; None: the default file).
    scope : str
        The budget scope charged.
    output : path
        A new CSV file ``index,label`` (``index,id,label`` with ``ids``), or on Dask a new
        folder.
    budget : float > 0 or None
        Create the scope's budget with this total ε when it has none.
    queries : (m, d) array, partitioned source or None
        Label these records (against ``data``) instead of the records of ``data``.
    add_query_to_data : bool
        Footnote 1: judge each query as if it were added to the data (with ``queries``).
    ids : array or None
        One id per question, written as the ``id`` column (in memory only).
    error_probabilities : bool
        Also write each answer's exact error probability. NOT private: evaluation only.
    contamination : float in (0, 0.5] or None
        Choose r privately for this share of anomalies (:func:`~privad.sensitive.select_radius`,
        charged first as its own spend, ε ``selection_epsilon`` or the mechanism's); the
        mechanism's r is then replaced by the chosen one. In memory only.
    cluster : callable or None
        On Dask: ``cluster()`` is a context manager giving the Dask client (default
        :func:`privad.distributed.dask_client`, a local cluster).
    rng : seed, Randomness or None
        The answers' randomness (OS entropy when None); the selection of r draws from a
        child stream.
    context : dict or None
        Stored with the spend (``metadata["context"]``), with the output and engine.
    step : callable or None
        ``step(text)`` wraps each stage in a context manager (progress).

    Returns
    -------
    Identification

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive import SPMechanism, identify
    >>> X = np.array([[0.0], [0.1], [0.2], [0.15], [5.0]])
    >>> job = identify(X, SPMechanism(beta=1, r=0.5, epsilon=1.0), ledger="l.sqlite",
    ...                scope="demo", output="labels.csv", budget=10.0, rng=7)
    >>> job.answers.shape, job.guarantee.epsilon, job.note
    ((5,), 4.0, "created the sensitive budget of scope 'demo': total ε 10")
    >>> open("labels.csv").readline().strip()
    'index,label'
    """
    from privad.distributed.tables import PartitionedSource

    if not isinstance(mechanism, AIQMechanism):
        raise ParameterError(
            f"mechanism must be a privad.sensitive.AIQMechanism, got {type(mechanism).__name__}"
        )
    if not isinstance(scope, str) or not scope.strip():
        raise ParameterError(f"scope must be a non-empty string, got {scope!r}")
    if add_query_to_data and queries is None:
        raise ParameterError("add_query_to_data applies only with queries")
    partitioned = isinstance(data, PartitionedSource)
    if partitioned and (ids is not None or contamination is not None):
        raise ParameterError("ids and contamination apply to records in memory, not on Dask")
    out = check_output_path(output, "output", "folder" if partitioned else "file")
    if partitioned:  # column names only: nothing is read before the budget is checked
        queries = None if queries is None else _aligned_queries(queries, data)
    else:
        data = check_array(data, "data")
        queries = None if queries is None else check_array(queries, "queries")
        if queries is not None and queries.shape[1] != data.shape[1]:
            raise DataError(
                f"the queries have {queries.shape[1]} feature(s) but the data has {data.shape[1]}"
            )
    step = step or (lambda text: contextlib.nullcontext())
    with open_ledger(ledger, scope, mechanism.notion, budget) as (book, note):
        job = _Job(mechanism, book, scope, as_randomness(rng), dict(context or {}), step)
        job.context.update(out=str(out), engine="dask" if partitioned else "numba")
        add = bool(add_query_to_data) and queries is not None
        if partitioned:
            result = job.on_dask(data, queries, add, cluster, out, error_probabilities)
        else:
            ids = None if ids is None else np.asarray(ids)
            output_file = CsvLabels(out, error_probabilities, ids)
            result = job.in_memory(
                data, queries, add, output_file, contamination, selection_epsilon
            )
        return Identification(
            ledger=str(book.path),
            remaining=book.remaining(scope, job.mechanism.notion),
            output=out,
            note=note,
            add_query_to_data=add,
            error_probabilities=bool(error_probabilities),
            **result,
        )


@dataclass
class _Job:
    """The parts of one :func:`identify` run that both engines share."""

    mechanism: AIQMechanism
    book: Ledger
    scope: str
    rng: Any
    context: dict[str, Any]
    step: Step

    def release(self, X: Any, Q: Any, add: bool, output: Any, engine: str, parameters: dict) -> Any:
        """The one release path, with the batch charge every entry point uses."""
        summaries: dict = {}
        return release_labels(
            self.mechanism,
            ledger=self.book,
            scope=self.scope,
            rng=self.rng,
            output=output,
            statistics=lambda: batch_statistics(
                X, Q, self.mechanism, add=add, engine=engine, summaries=summaries
            ),
            charge=batch_charge(
                X,
                Q,
                self.mechanism,
                {**self.context, "parameters": parameters},
                engine=engine,
                summaries=summaries,
            ),
            step=self.step,
        )

    def result(self, rel: Any, parameters: dict, shape: tuple[int, int]) -> dict[str, Any]:
        """The fields of an :class:`Identification` that the release decides."""
        return {
            "answers": rel.answers,
            "mechanism": self.mechanism,
            "parameters": parameters,
            "guarantee": rel.guarantee,
            "bound": rel.bound,
            "scope": self.scope,
            "n_records": int(shape[0]),
            "n_features": int(shape[1]),
        }

    def in_memory(
        self,
        X: np.ndarray,
        Q: np.ndarray | None,
        add: bool,
        output: CsvLabels,
        contamination: float | None,
        selection_epsilon: float | None,
    ) -> dict[str, Any]:
        """The records in this process (the fastest ball-count engine), one CSV file."""
        radius: float | RadiusSelection = self.mechanism.r
        if contamination is not None:
            m = self.mechanism
            radius = select_radius(
                X,
                m.beta,
                contamination,
                m.epsilon if selection_epsilon is None else selection_epsilon,
                ledger=self.book,
                scope=self.scope,
                metric=m.metric,
                notion=m.notion,
                k=m.k,
                rng=self.rng.spawn(1)[0],
            )
            self.mechanism = m.at_radius(radius.r)
        beta = {"beta": self.mechanism.beta}
        parameters = choose_radius(radius, X, beta, in_memory=True, select={})[1]
        rel = self.release(X, Q, add, output, "auto", parameters)
        return self.result(rel, parameters, X.shape)

    def on_dask(
        self, source: Any, q_source: Any, add: bool, cluster: Any, out: Path, errors: bool
    ) -> dict[str, Any]:
        """Partitioned records counted on a Dask cluster, one output part per partition
        (docs/distributed.md, "Privacy accounting on a cluster"): the budget is checked
        before the cluster starts; the answers are sampled here from the gathered counts
        (the same draws as in memory)."""
        from privad.distributed import dask_client
        from privad.sensitive._dask import dask_records

        try:  # before any worker starts: a budget that cannot pay for one answer
            self.book.check(self.scope, self.mechanism.guarantee)
        except BudgetExceededError as exc:
            raise BudgetExceededError(
                f"{exc} (checked before starting the Dask cluster: the "
                f"job costs at least ε = {self.mechanism.epsilon:g})"
            ) from None
        with contextlib.ExitStack() as stack:
            with self.step("starting the Dask cluster"):
                client = stack.enter_context((cluster or dask_client)())
            workers = len(client.scheduler_info(n_workers=-1).get("workers", {}))
            with self.step(f"reading {source.source}"):
                table = source.load()
            q_table = table
            if q_source is not None:
                with self.step(f"reading {q_source.source}"):
                    q_table = q_source.load()
            X = dask_records(table.records, "X")
            Q = None if q_source is None else dask_records(q_table.records, "Q", min_rows=0)
            self.context.update(
                partitions=table.n_partitions, query_partitions=q_table.n_partitions
            )
            parameters = choose_radius(
                self.mechanism.r, None, {"beta": self.mechanism.beta}, in_memory=False, select={}
            )[1]
            output = ParquetLabels(out, tuple(q_table.lengths), errors)
            rel = self.release(X, Q, add, output, "dask", parameters)
        return {
            **self.result(rel, parameters, (table.n_records, len(table.feature_names))),
            "partitions": (table.n_partitions, q_table.n_partitions),
            "workers": workers,
        }


def _aligned_queries(queries: Any, data: Any) -> Any:
    """Partitioned queries with the data's features: by name when the queries have every
    feature column of the data, else by position with the same number of columns."""
    from privad.distributed import open_partitioned

    names_q, names_d = list(queries.feature_names), list(data.feature_names)
    if all(n in names_q for n in names_d) and names_q != names_d:
        return open_partitioned(queries.source, columns=names_d)
    if len(names_q) != len(names_d):
        raise DataError(
            f"the queries have {len(names_q)} column(s) but the data has {len(names_d)} "
            f"({', '.join(names_d[:12])}); give query records with the same features"
        )
    return queries


@dataclass(frozen=True)
class ParameterChoice:
    """(β, r) for a data set (:func:`choose_parameters`): ``beta`` and ``r``; ``anomalies``,
    B_x(i, r) ≤ β for each record (NOT private: exact counts); ``selection``, the private
    selection of r (:class:`~privad.sensitive.RadiusSelection`), or None when (β, r) were
    proposed from the data (not private); ``note``, what happened to the budget of a
    private selection, or None."""

    beta: int
    r: float
    anomalies: np.ndarray
    selection: RadiusSelection | None = None
    note: str | None = None


def choose_parameters(
    X: Any,
    *,
    beta_fraction: float = 0.005,
    share: float | None = None,
    beta: int | None = None,
    metric: str = "euclidean",
    contamination: float | None = None,
    private: bool = False,
    selection_epsilon: float | None = None,
    ledger: Ledger | str | os.PathLike[str] | None = None,
    scope: str = "data",
    budget: float | None = None,
    rng: RandomnessLike = None,
    step: Step | None = None,
) -> ParameterChoice:
    """(β, r) for ``X``: proposed from the data (our reading of the paper's Appendix A.2,
    :func:`~privad.sensitive.propose_parameters`, NOT private), or with ``private`` r chosen
    by the ε-DP selection for ``contamination`` (:func:`~privad.sensitive.select_radius`,
    ε ``selection_epsilon`` or 1, charged to ``scope`` of ``ledger`` under the sensitive
    notion, the budget created from ``budget`` when missing); then the records' exact
    counts at r, to show how many (β, r)-anomalies (Definition 2.2) they make.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive.jobs import choose_parameters
    >>> X = np.array([[0.0], [0.1], [0.2], [0.15], [5.0]])
    >>> choice = choose_parameters(X, beta=1, share=0.2)
    >>> choice.beta, choice.anomalies.tolist()
    (1, [False, False, False, False, True])
    """
    from privad.sensitive.parameters import propose_parameters

    X = check_array(X, "X")
    step = step or (lambda text: contextlib.nullcontext())
    selection, note = None, None
    if private:
        if beta is None or contamination is None:
            raise ParameterError("a private selection needs beta and contamination (public)")
        with (
            step("private selection of r"),
            open_ledger(ledger, scope, "sensitive", budget) as (book, note),
        ):
            selection = select_radius(
                X,
                beta,
                contamination,
                1.0 if selection_epsilon is None else selection_epsilon,
                ledger=book,
                scope=scope,
                metric=metric,
                rng=rng,
            )
        beta_v, r_v = selection.beta, selection.r
    else:
        with step("k-th neighbour distances"):
            beta_v, r_v = propose_parameters(X, beta_fraction, share, beta=beta, metric=metric)
    with step("counting balls"):
        stats = ball_statistics(X, r_v, metric=metric)
    return ParameterChoice(beta_v, r_v, stats.ball <= beta_v, selection, note)
