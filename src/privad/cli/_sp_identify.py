"""The engine of ``privad sp identify`` (:mod:`privad.cli.sp`): the parsed job, its run on
this machine (``--engine numba``) or on a Dask cluster (``--engine dask``), and the summary.

Every release goes through :meth:`privad.sensitive.SensitiveAnomalyIdentifier.release`
(reserve in the ledger, compute, sample, write atomically, commit); this module only picks
the input, the output writer and the ledger scope, and renders what was released.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privad.cli._data import align_queries, load_table, scale_features, scaling_text
from privad.cli._options import Cluster, check_output_path
from privad.cli._render import StepProgress, emit, summary_table, warn
from privad.errors import BudgetExceededError, DataError, ParameterError, PrivadError

BLOCK_WORK = 20_000_000  # query x record pairs per block before the work is split


def ball_statistics_with_progress(
    X: np.ndarray,
    r: float,
    *,
    queries: np.ndarray | None,
    metric: str,
    add: bool,
    cap: int | None,
    progress: StepProgress,
    what: str = "counting balls",
) -> Any:
    """:func:`privad.sensitive.ball_statistics`, split into blocks of queries with progress."""
    from privad.sensitive import ball_statistics
    from privad.sensitive.anomaly import BallStatistics

    Q = X if queries is None else queries
    q, n = Q.shape[0], X.shape[0]
    n_blocks = max(1, min(50, (q * n) // BLOCK_WORK))
    task = progress.add_task(what, total=q)
    if n_blocks == 1:
        stats = ball_statistics(
            X, r, queries=queries, metric=metric, add_query_to_data=add, cap=cap
        )
        progress.update(task, completed=q)
        return stats
    size = math.ceil(q / n_blocks)
    parts = []
    for s in range(0, q, size):
        parts.append(
            ball_statistics(
                X,
                r,
                queries=Q[s : s + size],
                metric=metric,
                add_query_to_data=add and queries is not None,
                cap=cap,
            )
        )
        progress.update(task, advance=min(size, q - s))
    return BallStatistics(
        x_i=np.concatenate([p.x_i for p in parts]),
        ball=np.concatenate([p.ball for p in parts]),
        capped=np.concatenate([p.capped for p in parts]),
        cap=cap,
        added_query=add and queries is not None,
    )


def open_ledger(path: str | None, budget: float | None) -> Any:
    from privad.accounting import Ledger, default_ledger_path

    target = Path(default_ledger_path() if path is None else path).expanduser()
    if budget is None and not target.exists():
        raise PrivadError(
            f"ledger {str(target)!r} does not exist, so no privacy budget is set; create one "
            "with 'privad budget set SCOPE --epsilon E --notion sensitive' (or pure-dp for "
            "--mechanism dp), or pass --budget E to create the scope's budget"
        )
    return Ledger(target, create=budget is not None)


def ensure_budget(book: Any, scope: str, notion: str, budget: float | None) -> str | None:
    """Create the budget from --budget when absent; return a note for the summary."""
    from privad.accounting import NoBudgetError

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
class Identify:
    """The parsed options of ``privad sp identify``, the same for every engine."""

    data: str
    beta: int
    r: float
    eps: float
    k: int
    mech: str
    metric: str
    cap: int | None
    seed: int | None
    columns: list[str] | None
    label: str | None
    exclude: list[str] | None
    id_column: str | None
    bounds: dict[str, tuple[float, float]] | None
    scope: str | None
    budget: float | None
    ledger: str | None
    out: str | None
    errors: bool
    quiet: bool = False
    private_r: bool = False  # --r private: r chosen by select_radius, charged first
    contamination: float | None = None
    selection_epsilon: float | None = None

    def select(self, X: Any, book: Any, scope: str) -> Any:
        """``--r private``: the ε-DP selection of r, charged to ``scope`` of ``book`` as its
        own spend (with ``--seed``, from a child stream independent of the labels')."""
        from privad.noise import Randomness
        from privad.sensitive import select_radius

        return select_radius(
            X,
            self.beta,
            self.contamination,
            self.selection_epsilon or self.eps,
            ledger=book,
            scope=scope,
            metric=self.metric,
            notion=self.notion,
            k=self.k,
            rng=None if self.seed is None else Randomness(self.seed).spawn(1)[0],
        )

    def mechanism(self) -> Any:
        """The mechanism object (its guarantee is what one answer costs)."""
        from privad.sensitive import aiq_mechanism

        return aiq_mechanism(
            self.mech,
            beta=self.beta,
            r=self.r,
            epsilon=self.eps,
            k=self.k,
            metric=self.metric,
            count_cap=self.cap,
        )

    @property
    def notion(self) -> str:
        """The ledger notion the spend is charged to."""
        return self.mechanism().notion

    def estimator(self, add: bool, engine: str, selection: Any = None) -> Any:
        """The estimator the job releases through (not fitted); ``selection``: the private
        selection of r (``--r private``)."""
        from privad.sensitive import SensitiveAnomalyIdentifier

        return SensitiveAnomalyIdentifier(
            self.beta,
            self.r if selection is None else selection,
            self.eps,
            k=self.k,
            mechanism=self.mech,
            metric=self.metric,
            add_query_to_data=bool(add),
            count_cap=self.cap,
            engine=engine,
            rng=self.seed,
        )


@dataclass(frozen=True)
class Outcome:
    """What a finished ``sp identify`` job reports (released answers and public values)."""

    data_text: str
    queries_text: str
    n_q: int
    bound: Any
    guarantee: Any
    flagged: int
    scope: str
    remaining: float
    ledger: str
    out: Path
    note: str | None
    engine_text: str | None = None
    scaling: Any = None
    parameters: dict[str, Any] | None = None  # where (β, r) came from (estimator.parameters_)


def _released(
    rel: Any, scope: str, remaining: float, ledger: str, out: Path, note: str | None
) -> dict[str, Any]:
    """The fields of an :class:`Outcome` that every engine fills the same way."""
    return {
        "n_q": int(rel.answers.size),
        "bound": rel.bound,
        "guarantee": rel.guarantee,
        "flagged": int(rel.answers.sum()),
        "scope": scope,
        "remaining": remaining,
        "ledger": ledger,
        "out": out,
        "note": note,
    }


def identify_local(job: Identify, queries: str | None, add: bool) -> Outcome:
    """``--engine numba``: the data in this process, output one CSV file."""
    from privad.datasets import scale_to_bounds
    from privad.sensitive.release import CsvLabels

    ds, scaling = scale_features(
        load_table(
            job.data,
            columns=job.columns,
            label=job.label,
            exclude=job.exclude,
            id_column=job.id_column,
            seed=job.seed,
        ),
        job.bounds,
    )
    scope_v = job.scope or ds.name
    out_path = check_output_path(
        job.out if job.out is not None else f"{scope_v}-{job.mech}-labels.csv", "--out"
    )
    for source in (job.data, queries):
        if (
            source is not None
            and Path(source).expanduser().exists()
            and out_path.resolve() == Path(source).expanduser().resolve()
        ):
            raise ParameterError(f"--out {str(out_path)!r} would overwrite the input {source!r}")
    if queries is not None:  # the id column, if any, must be in the queries too
        q_table = load_table(queries, id_column=job.id_column)
        Q, ids = align_queries(q_table, ds), q_table.ids
        if job.bounds:  # the same public map as the data (clip counts: the data's only)
            Q = scale_to_bounds(Q, job.bounds, ds.feature_names)[0]
        what_q = f"{Q.shape[0]} record(s) of {queries}"
    else:
        Q, ids = None, ds.ids
        what_q = f"the {ds.X.shape[0]} record(s) of the data"
    with StepProgress(quiet=job.quiet) as progress, open_ledger(job.ledger, job.budget) as book:
        note = ensure_budget(book, scope_v, job.notion, job.budget)
        selection = job.select(ds.X, book, scope_v) if job.private_r else None
        est = job.estimator(add, "auto", selection).fit(ds.X)  # in memory: the fastest engine
        rel = est.release(
            Q,
            ledger=book,
            scope=scope_v,
            output=CsvLabels(out_path, job.errors, ids),
            context={
                "command": "privad sp identify",
                "data": job.data,
                "out": str(out_path),
                "engine": "numba",
                "queries": queries,
            },
            step=progress.step,
        )
        remaining = book.remaining(scope_v, job.notion)
        ledger_name = book.path
    added = " (each added to the data, footnote 1)" if add else ""
    return Outcome(
        data_text=f"{ds.name}: {ds.X.shape[0]} records x {ds.X.shape[1]} features",
        queries_text=what_q + added,
        **_released(rel, scope_v, remaining, ledger_name, out_path, note),
        scaling=scaling,
        parameters=est.parameters_,
    )


def _check_partitioned_path(source: str, option: str) -> None:
    """A path ``--engine dask`` can read partition by partition (before anything is read)."""
    if Path(source).suffix.lower() in (".npy", ".npz", ".mat") or not (
        any(ch in source for ch in "*?[") or Path(source).expanduser().exists()
    ):
        raise DataError(
            f"--engine dask reads partitioned files: give {option} as a Parquet "
            f"folder or file, or CSV files (a file or a glob like 'data/*.csv'), "
            f"got {source!r}"
        )


def _open_queries(queries: str, data: Any) -> Any:
    """The query files opened like DATA, with DATA's features (the rules of
    :func:`align_queries`: by name when the queries have every feature column of the data,
    else by position with the same number of columns); resolved from the files' metadata."""
    from privad.distributed import open_partitioned

    source = open_partitioned(queries)
    names_q, names_d = list(source.feature_names), list(data.feature_names)
    if all(n in names_q for n in names_d) and names_q != names_d:
        return open_partitioned(queries, columns=names_d)
    if len(names_q) != len(names_d):
        raise DataError(
            f"the queries have {len(names_q)} column(s) but the data has {len(names_d)} "
            f"({', '.join(names_d[:12])}); give query records with the same features"
        )
    return source


def identify_dask(
    job: Identify, cluster: Cluster, queries: str | None = None, add: bool = False
) -> Outcome:
    """``--engine dask``: partitioned input counted on a Dask cluster, partitioned output.

    Order (docs/distributed.md, "Privacy accounting on a cluster"): options, columns, output
    folder and the budget are checked on the driver before the cluster starts (a budget
    that cannot pay for one answer is refused there); the workers then read the records,
    count the balls and bound Claim 5's m (nothing is released); the batch's guarantee is
    reserved once; the driver samples every answer from the gathered counts (the same
    draws as ``--engine numba``), writes one part per input partition into a temporary
    folder, commits the spend and renames the folder into place. A failure before the
    rename cancels the reservation and deletes the temporary folder.

    With ``queries`` (``--queries``, partitioned files like DATA) the records of the query
    files are labelled instead, against DATA (plus the query itself with ``add``), and the
    output has one part per query partition.
    """
    from privad.distributed import check_new_folder, open_partitioned
    from privad.sensitive.release import ParquetLabels

    _check_partitioned_path(job.data, "DATA")
    if queries is not None:
        _check_partitioned_path(queries, "--queries")
    source = open_partitioned(job.data, columns=job.columns, label=job.label, exclude=job.exclude)
    q_source = None if queries is None else _open_queries(queries, source)
    scope_v = job.scope or source.name
    out_path = check_new_folder(
        job.out if job.out is not None else f"{scope_v}-{job.mech}-labels", "--out"
    )
    with StepProgress(quiet=job.quiet) as progress, open_ledger(job.ledger, job.budget) as book:
        note = ensure_budget(book, scope_v, job.notion, job.budget)
        est = job.estimator(add, "dask")
        try:  # before any worker starts: a budget that cannot pay for one answer
            book.check(scope_v, job.mechanism().guarantee)
        except BudgetExceededError as exc:
            raise BudgetExceededError(
                f"{exc} (checked before starting the Dask cluster: the "
                f"job costs at least ε = {job.eps:g})"
            ) from None
        with contextlib.ExitStack() as stack:
            with progress.step("starting the Dask cluster"):
                client = stack.enter_context(cluster.client())
            n_workers = len(client.scheduler_info(n_workers=-1).get("workers", {}))
            with progress.step(f"reading {job.data}"):
                table = source.load()
            if q_source is None:
                q_table, Q = table, None
            else:
                with progress.step(f"reading {queries}"):
                    q_table = q_source.load()
                Q = q_table.records
            context: dict[str, Any] = {
                "command": "privad sp identify",
                "data": job.data,
                "out": str(out_path),
                "engine": "dask",
                "queries": queries,
                "partitions": table.n_partitions,
                "query_partitions": q_table.n_partitions,
            }
            rel = est.fit(table.records).release(
                Q,
                ledger=book,
                scope=scope_v,
                output=ParquetLabels(out_path, tuple(q_table.lengths), job.errors),
                context=context,
                step=progress.step,
            )
        remaining = book.remaining(scope_v, job.notion)
        ledger_name = book.path
        n_q = int(rel.answers.size)
    where = f"scheduler {cluster.scheduler}" if cluster.scheduler else "a local cluster"
    return Outcome(
        data_text=f"{table.name}: {n_q} records x {len(table.feature_names)} features in "
        f"{table.n_partitions} partition(s)",
        queries_text=(
            f"the {n_q} record(s) of the data"
            if queries is None
            else f"{n_q} record(s) of {queries} in {q_table.n_partitions} partition(s)"
            + (" (each added to the data, footnote 1)" if add else "")
        ),
        **_released(rel, scope_v, remaining, ledger_name, out_path, note),
        engine_text=f"dask on {where} ({n_workers} worker(s)); answers sampled on this "
        "machine from the gathered counts (identical to --engine numba)",
        parameters=est.parameters_,
    )


NOT_FOR_PUBLICATION = (
    "Claim 5's m, the composed ε = min(n, m)·ε and the remaining ε are computed from the "
    "queried records (the most of them within 2r of one; without --queries they are the "
    "data's own records), so they are a function of the data and NOT private: they are for "
    "the data owner's accounting. Publish the labels, the parameters and the per-query ε, "
    "not these numbers."
)
"""What the summary says of its data-dependent numbers (``--json``: the
``not_for_publication`` object)."""


def print_summary(job: Identify, o: Outcome, as_json: bool) -> None:
    """The result: the released answers and public parameters, and, marked as not for
    publication (:data:`NOT_FOR_PUBLICATION`), the numbers computed from the queried records
    (Claim 5's m, the composed and the remaining ε)."""
    bound = o.bound
    per_query = "ε-DP" if job.mech == "dp" else f"(ε, k = {job.k})-sensitive privacy"
    warning = (
        "the error-probability columns are NOT PRIVATE (computed from the exact "
        "counts); use them for evaluation only, never release them."
        if job.errors
        else None
    )
    payload = {
        "command": "sp identify",
        "data": job.data,
        "dataset": o.data_text,
        "queries": o.queries_text,
        "engine": o.engine_text or "numba",
        "parameters": {
            "beta": job.beta,
            "r": job.r,
            "k": job.k,
            "metric": job.metric,
            "mechanism": job.mech,
            "count_cap": job.cap,
            "epsilon": job.eps,
        },
        "parameters_from": o.parameters,
        "mechanism": job.mechanism().guarantee.description,
        "answers": o.n_q,
        "flagged": o.flagged,
        "guarantee": {"notion": o.guarantee.notion, "epsilon_per_query": job.eps},
        "not_for_publication": {
            "note": NOT_FOR_PUBLICATION,
            "epsilon": o.guarantee.epsilon,
            "m": min(bound.m, o.n_q),
            "m_exact": bool(bound.exact),
            "remaining_epsilon": o.remaining,
        },
        "scope": o.scope,
        "ledger": o.ledger,
        "output": o.out,
        "id_column": job.id_column,
        "scaling": None if o.scaling is None else o.scaling.to_dict(),
        "note": o.note,
        "warning": warning,
    }

    def render(console: Any) -> None:
        k_text = f"k = {job.k}" + (" (unused by dp)" if job.mech == "dp" else "")
        cap_note = "" if job.cap is None else f", count cap {job.cap}"
        exact = "exact" if bound.exact else f"between {bound.lower} and {bound.upper}"
        console.print(
            summary_table(
                "privad sp identify",
                [
                    ("data", o.data_text),
                    ("queries", o.queries_text),
                    *([("engine", o.engine_text)] if o.engine_text else []),
                    (
                        "parameters",
                        f"β = {job.beta}, r = {job.r:g}, {k_text}, metric {job.metric}{cap_note}",
                    ),
                    *([("(β, r) from", o.parameters["how"])] if o.parameters else []),
                    ("feature scaling", scaling_text(o.scaling)),
                    ("mechanism", job.mechanism().guarantee.description),
                    ("flagged as anomalies", f"{o.flagged} of {o.n_q} (noisy labels)"),
                    ("guarantee", f"{per_query}: ε = {job.eps:g} per query"),
                    (
                        "composed (not for publication)",
                        f"ε = {o.guarantee.epsilon:g} = min(n = {o.n_q}, m = "
                        f"{min(bound.m, o.n_q)}) × ε (Claim 5: at most m queries in any ball "
                        f"of radius r; m {exact})",
                    ),
                    (
                        "ledger (not for publication)",
                        f"scope {o.scope!r} ({o.guarantee.notion}) in {o.ledger}: "
                        f"remaining ε {o.remaining:g}",
                    ),
                    ("output", str(o.out)),
                ],
            )
        )
        console.print(f"Not for publication: {NOT_FOR_PUBLICATION}", markup=False)
        if o.note:
            console.print(o.note, markup=False)
        if warning:
            console.print(f"WARNING: {warning}", markup=False)

    if as_json and warning:
        warn(warning)
    emit(payload, as_json, render)
