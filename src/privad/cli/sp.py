"""``privad sp``: sensitively private (β, r)-anomaly identification from the command line.

* ``privad sp identify DATA --beta B --r R --epsilon E``: noisy anomaly labels for every
  record of DATA (or for the records of ``--queries FILE``), from one of the paper's three
  mechanisms (``sp``: U_{λ_k}; ``dp``: the optimal ε-DP U_{Δ_G}; ``compiled``: Construction 2).
  The batch's guarantee (Claim 5: min(n, m)·ε) is charged to a ledger *before* anything is
  written; a refused spend writes nothing. Output: a CSV ``index,label`` (1 = anomaly;
  ``index,id,label`` with ``--id COL``), written atomically. ``--exclude COL`` drops
  columns that are not features before any distance is computed. With ``--engine dask
  [--scheduler ADDR | --workers N]`` DATA is a Parquet folder/file or CSV glob counted on a
  Dask cluster (``--queries`` partitioned the same way), and the output a Parquet folder
  with one part per input (or query) partition, renamed into place after the spend is
  committed
  (:mod:`privad.distributed`, ``docs/distributed.md``).
* ``privad sp plan --beta B --epsilon E [--k K] [--queries N] [--delta D]``: what ε buys
  and what N answers cost, before any data is read (:mod:`privad.cli._plan`).
* ``privad sp params DATA``: propose (β, r) with our reconstruction of the paper's missing
  Appendix A.2 (:func:`privad.sensitive.propose_parameters`), not private.

DATA is a catalogue name (``thyroid``, ``mammography``, ..., see ``privad datasets list``)
or a file (.csv, .parquet, .npy, .npz, .mat). Every option is parsed here (with
:mod:`privad.cli._options`), so that a bad value is a :class:`~privad.errors.PrivadError`:
``privad.cli.main`` prints it on one line and exits with status 2, before any file is written.
"""

from __future__ import annotations

import contextlib
import csv
import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

from privad.cli._options import (
    check_output_path,
    parse_bounds,
    parse_choice,
    parse_columns,
    parse_float,
    parse_int,
    parse_scope,
    parse_seed,
)
from privad.cli._render import (
    JSON_OPTION,
    StepProgress,
    emit,
    summary_table,
    warn,
)
from privad.errors import (
    BudgetExceededError,
    DataError,
    ParameterError,
    PrivadError,
)

__all__ = [
    "SCHEDULER_OPTION",
    "WORKERS_OPTION",
    "WORKER_TIMEOUT_OPTION",
    "Cluster",
    "load_table",
    "parse_cluster",
    "register",
    "sp_app",
]

sp_app = typer.Typer(
    name="sp",
    help=(
        "Sensitive privacy (Asif et al., CCS 2019): identify (β, r)-anomalies privately.\n\n"
        "A record is a (β, r)-anomaly when at most β records (itself included) lie within "
        "distance r of it. Normal records, and records that would be normal after adding or "
        "removing k records, get ε-differential-privacy-like protection; anomalies are "
        "identified with exponentially small error. See docs/sensitive.md."
    ),
    no_args_is_help=True,
    add_completion=False,
)

MECHANISM_CHOICES = ("sp", "dp", "compiled")
METRIC_CHOICES = ("euclidean", "manhattan", "chebyshev")
FILE_SUFFIXES = (".csv", ".parquet", ".pq", ".npy", ".npz", ".mat")
ENGINE_CHOICES = ("numba", "dask")

DATA_HELP = (
    "A dataset name from 'privad datasets list' (thyroid, mammography, breastw, ...; "
    "generated sets use --seed), a data file (.csv, .parquet, .npy, .npz or .mat) or a "
    "folder of Parquet parts (read in file-name order; with --engine dask also a CSV glob)."
)
COLUMNS_HELP = (
    "Feature columns to use, by name or 0-based position; repeat the option or separate "
    "with commas (e.g. --columns x1,x2). Default: every column except --label."
)
LABEL_HELP = (
    "Where the 0/1 anomaly labels are (1 = anomaly), the same rule for every format: a "
    "column, by name or 0-based position, left out of the features; in a .npz or .mat file "
    "first an array stored beside the data (by name). Default: the labels stored with the "
    "data (a catalogue dataset's own, the array y of a .npz or .mat file); a CSV or Parquet "
    "table has none unless --label names a column. See docs/data.md."
)
METRIC_HELP = "Distance between records: euclidean (default), manhattan or chebyshev."
COLUMNS_OPTION = typer.Option(None, "--columns", metavar="COLS", help=COLUMNS_HELP)
EXCLUDE_OPTION: Any = typer.Option(
    None,
    "--exclude",
    metavar="COL",
    help="A column that is not a feature (a timestamp, a free-text field, ...), by name or "
    "0-based position; repeat the option or separate with commas. Dropped before any "
    "distance is computed.",
)
BOUNDS_OPTION: Any = typer.Option(
    None,
    "--bounds",
    metavar="FILE",
    help="Public per-column bounds: CSV with the columns column,lower,upper, or JSON "
    '{"col": \\[lower, upper]}. Bounded features are scaled to [0, 1] as (x − lo)/(hi − lo), '
    "values outside clipped (both use only the bounds, so the guarantee holds). Never "
    "computed from the data: see docs/scaling.md.",
)
BOUND_OPTION: Any = typer.Option(
    None,
    "--bound",
    metavar="COL=LO:HI",
    help="A public bound of one column, e.g. --bound proline=0:2000 (repeatable; with or "
    "without --bounds). Scaled like --bounds.",
)
ID_OPTION: Any = typer.Option(
    None,
    "--id",
    metavar="COL",
    help="The column that identifies records (numbers or text): not a feature; its values "
    "are carried into the output (an id column beside index).",
)
LEDGER_HELP = "Ledger file (SQLite). Default: $PRIVAD_LEDGER if set, else ~/.privad/ledger.sqlite."
SCHEDULER_OPTION: Any = typer.Option(
    None,
    "--scheduler",
    metavar="ADDR",
    help="With Dask: the address of a running Dask scheduler (e.g. tcp://10.0.0.5:8786). "
    "Default: start a local cluster (see --workers).",
)
WORKERS_OPTION: Any = typer.Option(
    None,
    "--workers",
    metavar="N",
    help="With Dask and no --scheduler: worker processes of the local cluster (default: one "
    "per core).",
)
WORKER_TIMEOUT_OPTION: Any = typer.Option(
    None,
    "--worker-timeout",
    metavar="S",
    help="With Dask: seconds the cluster may have no worker before the job fails (its "
    "reservation cancelled, no output). Default: 120; raise it for a cluster that starts "
    "its workers on demand.",
)


BETA_OPTION: Any = typer.Option(
    None,
    "--beta",
    metavar="B",
    help="Required. β of the (β, r)-anomaly: an integer >= 1. A record is an anomaly when "
    "at most β records (itself and its duplicates included) lie within distance r.",
)

R_OPTION: Any = typer.Option(
    None,
    "--r",
    metavar="R",
    help="Required. The radius r: a finite number >= 0, in the units of the features "
    "(balls are closed: distance <= r).",
)

EPSILON_OPTION: Any = typer.Option(
    None,
    "--epsilon",
    metavar="E",
    help="Required. ε of each answer: a finite number > 0 (smaller = more private; the "
    "paper uses 0.01 to 1). The batch costs min(n, m)·ε (Claim 5).",
)

K_OPTION: Any = typer.Option(
    "1",
    "--k",
    metavar="K",
    help="k of the k-sensitive neighbourhood graph: an integer >= 1 (default 1). Records "
    "that are normal, or would be after adding/removing k records, are protected; "
    "k >= β + 1 protects everyone (then sp = dp). Ignored by --mechanism dp.",
)

MECHANISM_OPTION: Any = typer.Option(
    "sp",
    "--mechanism",
    metavar="M",
    help="sp (default): U_λk, (ε, k)-sensitively private (Theorem 4.6); dp: the optimal "
    "ε-DP mechanism U_ΔG (Theorem 4.4); compiled: Construction 2 on the ε/2-DP mechanism, "
    "(ε, k)-SP (Theorem 4.7).",
)

METRIC_OPTION: Any = typer.Option("euclidean", "--metric", metavar="METRIC", help=METRIC_HELP)

COUNT_CAP_OPTION: Any = typer.Option(
    "none",
    "--count-cap",
    metavar="C",
    help="none (default): exact ball counts. auto, or an integer >= β + 2: stop counting "
    "at C (faster on dense data; same guarantee; records with at least C neighbours get "
    "error e^(-ε(C-β-1))/(1+e^ε) instead of a smaller one; auto makes that <= 1e-30).",
)


def parse_mechanism(
    beta: str | None,
    r: str | None,
    epsilon: str | None,
    k: str,
    mechanism: str,
    metric: str,
    count_cap: str,
) -> Any:
    """The mechanism object of the options ``--beta --r --epsilon --k --mechanism --metric
    --count-cap`` (one-line ParameterError on a mistake)."""
    from privad.sensitive import aiq_mechanism, auto_count_cap

    beta_v = parse_int(beta, "--beta", minimum=1, what="an integer >= 1 (e.g. --beta 18)")
    eps_v = parse_float(
        epsilon, "--epsilon", strict=True, what="a finite number > 0 (e.g. --epsilon 0.1)"
    )
    mech = parse_choice(mechanism, "--mechanism", MECHANISM_CHOICES)
    cap_text = count_cap.strip().lower()
    if cap_text == "none":
        cap: int | None = None
    elif cap_text == "auto":
        cap = auto_count_cap(beta_v, eps_v, mechanism=mech)
    else:
        cap = parse_int(
            count_cap,
            "--count-cap",
            minimum=beta_v + 2,
            what=f"none, auto or an integer >= β + 2 = {beta_v + 2}",
        )
    return aiq_mechanism(
        mech,
        beta=beta_v,
        epsilon=eps_v,
        count_cap=cap,
        r=parse_float(r, "--r", strict=False, what="a finite number >= 0 (e.g. --r 0.1)"),
        k=parse_int(k, "--k", minimum=1, what="an integer >= 1"),
        metric=parse_choice(metric, "--metric", METRIC_CHOICES),
    )


@dataclass(frozen=True)
class Cluster:
    """Where a Dask job runs: ``--scheduler`` or ``--workers`` (not both), and
    ``--worker-timeout`` (None: the defaults of :func:`privad.distributed.dask_client`)."""

    scheduler: str | None = None
    workers: int | None = None
    worker_timeout: float | None = None

    @property
    def given(self) -> bool:
        """Whether any of the options was given (they apply only to Dask jobs)."""
        return self != Cluster()

    def client(self) -> Any:
        """:func:`privad.distributed.dask_client` for these options."""
        from privad.distributed import dask_client

        return dask_client(self.scheduler, workers=self.workers, worker_timeout=self.worker_timeout)


def parse_cluster(
    scheduler: str | None, workers: str | None, worker_timeout: str | None = None
) -> Cluster:
    """``--scheduler`` (an address) and ``--workers`` (an integer >= 1), not both;
    ``--worker-timeout`` (seconds > 0)."""
    from privad.distributed import check_scheduler_address

    if scheduler is not None and workers is not None:
        raise ParameterError(
            "give --scheduler (an existing cluster) or --workers (a local cluster), not both"
        )
    timeout = (
        None
        if worker_timeout is None
        else parse_float(
            worker_timeout, "--worker-timeout", strict=True, what="seconds > 0 (e.g. 120)"
        )
    )
    return Cluster(
        scheduler=None if scheduler is None else check_scheduler_address(scheduler),
        workers=None
        if workers is None
        else parse_int(workers, "--workers", minimum=1, what="an integer >= 1"),
        worker_timeout=timeout,
    )


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def _as_dataset(obj: Any) -> Any:
    from privad.datasets import TimeSeries

    return obj.to_dataset() if isinstance(obj, TimeSeries) else obj


def load_table(
    source: str,
    *,
    columns: list[str] | None = None,
    label: str | None = None,
    exclude: list[str] | None = None,
    id_column: str | None = None,
    seed: int | None = None,
) -> Any:
    """Load DATA (a catalogue name, a file or a Parquet folder) as a
    :class:`privad.datasets.Dataset` with the column roles of
    :func:`privad.datasets.tables.plan_columns` (features, label, excluded, id)."""
    from privad import datasets
    from privad.datasets.tables import select_columns

    roles = {"columns": columns, "exclude": exclude, "id_column": id_column}
    path = Path(source).expanduser()
    suffix = path.suffix.lower()
    if suffix in FILE_SUFFIXES or path.exists():
        if path.is_dir() or suffix in (".csv", ".parquet", ".pq"):  # a folder: Parquet parts
            return datasets.load(path, label=label, **roles)
        return select_columns(_as_dataset(datasets.load(path, label=label)), **roles)
    entry = datasets.describe(source)  # unknown names: DatasetNotFoundError with suggestions
    if entry.kind == "generated":
        loaded = datasets.load(entry.name, rng=0 if seed is None else seed)
    else:
        loaded = datasets.load(entry.name)
    return select_columns(_as_dataset(loaded), label=label, **roles)


def scale_features(
    ds: Any, bounds: dict[str, tuple[float, float]] | None, *, check: bool = True
) -> tuple[Any, Any]:
    """DATA's features scaled with the public ``bounds`` (if any), then the warning when one
    column dominates the distances (``check``); (dataset, :class:`BoundsScaling` or None)."""
    from dataclasses import replace

    from privad.datasets import check_feature_scales, scale_to_bounds

    scaling = None
    if bounds:
        X, scaling = scale_to_bounds(ds.X, bounds, ds.feature_names)
        ds = replace(ds, X=X)
    if check:
        check_feature_scales(ds.X, ds.feature_names)
    return ds, scaling


def scaling_text(scaling: Any) -> str:
    """One line on what the public bounds did (the clip counts are the operator's, not
    released)."""
    if scaling is None:
        return "none (the features in their own units)"
    left = f"; {len(scaling.unscaled)} column(s) in their own units" if scaling.unscaled else ""
    return (
        f"public bounds on {len(scaling.scaled)} column(s), (x − lo)/(hi − lo){left}; "
        f"{scaling.clipped} value(s) outside the bounds clipped (clipping uses only the "
        "bounds, so the guarantee holds; this count is for you, not released)"
    )


def _align_queries(Q: Any, data: Any) -> np.ndarray:
    """The query records with the data's feature columns (by name when possible)."""
    names_q = list(Q.feature_names)
    names_d = list(data.feature_names)
    if all(n in names_q for n in names_d) and names_q != names_d:
        return Q.X[:, [names_q.index(n) for n in names_d]]
    if Q.X.shape[1] != data.X.shape[1]:
        raise DataError(
            f"the queries have {Q.X.shape[1]} column(s) but the data has {data.X.shape[1]} "
            f"({', '.join(names_d[:12])}); give query records with the same features"
        )
    return Q.X


# --------------------------------------------------------------------------------------------
# Progress
# --------------------------------------------------------------------------------------------


_BLOCK_WORK = 20_000_000  # query x record pairs per block before the work is split


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
    n_blocks = max(1, min(50, (q * n) // _BLOCK_WORK))
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


# --------------------------------------------------------------------------------------------
# privad sp identify
# --------------------------------------------------------------------------------------------


def _open_ledger(path: str | None, budget: float | None) -> Any:
    from privad.accounting import Ledger, default_ledger_path

    target = Path(default_ledger_path() if path is None else path).expanduser()
    if budget is None and not target.exists():
        raise PrivadError(
            f"ledger {str(target)!r} does not exist, so no privacy budget is set; create one "
            "with 'privad budget set SCOPE --epsilon E --notion sensitive' (or pure-dp for "
            "--mechanism dp), or pass --budget E to create the scope's budget"
        )
    return Ledger(target, create=budget is not None)


def _ensure_budget(book: Any, scope: str, notion: str, budget: float | None) -> str | None:
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


@sp_app.command("identify")
def identify(
    data: str = typer.Argument(..., metavar="DATA", help=DATA_HELP),
    beta: str | None = BETA_OPTION,
    r: str | None = R_OPTION,
    epsilon: str | None = EPSILON_OPTION,
    k: str = K_OPTION,
    mechanism: str = MECHANISM_OPTION,
    metric: str = METRIC_OPTION,
    queries: str | None = typer.Option(
        None,
        "--queries",
        metavar="FILE",
        help="Label these records instead of the records of DATA: a data file with the same "
        "features (matched by name when the file has every feature column of DATA, else by "
        "position; --columns, --label and --exclude apply to DATA only, --id to both). With "
        "--engine dask: a Parquet folder or file or CSV files (a glob), read on the "
        "cluster, and the output has one part per query partition. Default: every record of DATA.",
    ),
    add_query_to_data: bool = typer.Option(
        False,
        "--add-query-to-data",
        help="With --queries: answer each query on DATA plus one copy of the query record "
        "(footnote 1 of the paper), so that a query is judged as if it were in the data.",
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    label: str | None = typer.Option(None, "--label", metavar="COL", help=LABEL_HELP),
    exclude: list[str] | None = EXCLUDE_OPTION,
    id_column: str | None = ID_OPTION,
    bounds_file: str | None = BOUNDS_OPTION,
    bound: list[str] | None = BOUND_OPTION,
    out: str | None = typer.Option(
        None,
        "--out",
        "--output",
        metavar="PATH",
        help="Output, written atomically. --engine numba: a CSV file (index,label, or "
        "index,id,label with --id; 1 = anomaly), default <scope>-<mechanism>-labels.csv. "
        "--engine dask: a new folder of Parquet parts, one per input partition "
        "(part-00000.parquet, ...; columns index, label), default <scope>-<mechanism>-labels.",
    ),
    with_error_probabilities: bool = typer.Option(
        False,
        "--with-error-probabilities",
        help="Also write each answer's exact error probability and its log10, for "
        "evaluation. These columns are NOT PRIVATE (they are computed from the exact counts); "
        "never release them.",
    ),
    ledger: str | None = typer.Option(None, "--ledger", metavar="PATH", help=LEDGER_HELP),
    scope: str | None = typer.Option(
        None,
        "--scope",
        metavar="NAME",
        help="Budget scope the spend is charged to (a non-empty name). Default: the dataset "
        "name (the file name without extension for files).",
    ),
    budget: str | None = typer.Option(
        None,
        "--budget",
        metavar="E",
        help="Create the scope's budget with total ε = E (a finite number > 0) if it has none "
        "(an existing budget is never changed: use 'privad budget set'). Without it, a scope "
        "without a budget is an error.",
    ),
    count_cap: str = COUNT_CAP_OPTION,
    seed: str | None = typer.Option(
        None,
        "--seed",
        metavar="S",
        help="Seed (an integer >= 0) for the noise, for reproducible tests only: anyone who "
        "knows the seed can undo the noise. Default: fresh OS entropy. Also seeds generated "
        "datasets (default 0).",
    ),
    engine: str = typer.Option(
        "numba",
        "--engine",
        metavar="ENGINE",
        help="numba (default): count on this machine. dask: DATA is a Parquet folder or file "
        "or CSV files (a glob), counted partition by partition on a Dask cluster; the output "
        "is a Parquet folder with one part per input partition. Same counts and, with "
        "--seed, the same labels as numba. See docs/distributed.md.",
    ),
    scheduler: str | None = SCHEDULER_OPTION,
    workers: str | None = WORKERS_OPTION,
    as_json: bool = JSON_OPTION,
    worker_timeout: str | None = WORKER_TIMEOUT_OPTION,
) -> None:
    """Label records as (β, r)-anomalies privately, and charge the privacy budget."""
    # 1. every option, before anything is read or written
    m = parse_mechanism(beta, r, epsilon, k, mechanism, metric, count_cap)
    job = _Identify(
        data=data,
        beta=m.beta,
        eps=m.epsilon,
        mech=m.name,
        cap=m.count_cap,
        r=m.r,
        k=m.k,
        metric=m.metric,
        seed=parse_seed(seed),
        columns=parse_columns(columns),
        label=label,
        exclude=parse_columns(exclude, "--exclude"),
        id_column=id_column,
        bounds=parse_bounds(bound, bounds_file),
        scope=parse_scope(scope),
        ledger=ledger,
        out=out,
        budget=None
        if budget is None
        else parse_float(
            budget, "--budget", strict=True, what="a finite number > 0 (the scope's total ε)"
        ),
        errors=with_error_probabilities,
        quiet=as_json,
    )
    engine_v = parse_choice(engine, "--engine", ENGINE_CHOICES)
    cluster = parse_cluster(scheduler, workers, worker_timeout)
    if out is not None:
        check_output_path(out, "--out", "folder" if engine_v == "dask" else "file")
    if ledger is not None:
        check_output_path(ledger, "--ledger", "store")
    if add_query_to_data and queries is None:
        raise ParameterError("--add-query-to-data applies only with --queries FILE")
    if engine_v == "dask":
        if id_column is not None:
            raise ParameterError(
                "--id applies with --engine numba (the Dask output parts are keyed by index)"
            )
        if job.bounds is not None:
            raise ParameterError(
                "--bound and --bounds apply with --engine numba; scale the "
                "partitions with the public bounds first"
            )
        outcome = _identify_dask(job, cluster, queries, add_query_to_data)
    else:
        if cluster.given:
            raise ParameterError(
                "--scheduler, --workers and --worker-timeout apply only with --engine dask"
            )
        outcome = _identify_local(job, queries, add_query_to_data)
    _print_summary(job, outcome, as_json)


@dataclass(frozen=True)
class _Identify:
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

    def estimator(self, add: bool, engine: str) -> Any:
        """The estimator the job releases through (not fitted)."""
        from privad.sensitive import SensitiveAnomalyIdentifier

        return SensitiveAnomalyIdentifier(
            self.beta,
            self.r,
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
class _Outcome:
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


def _identify_local(job: _Identify, queries: str | None, add: bool) -> _Outcome:
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
        Q, ids = _align_queries(q_table, ds), q_table.ids
        if job.bounds:  # the same public map as the data (clip counts: the data's only)
            Q = scale_to_bounds(Q, job.bounds, ds.feature_names)[0]
        what_q = f"{Q.shape[0]} record(s) of {queries}"
    else:
        Q, ids = None, ds.ids
        what_q = f"the {ds.X.shape[0]} record(s) of the data"
    with StepProgress(quiet=job.quiet) as progress, _open_ledger(job.ledger, job.budget) as book:
        note = _ensure_budget(book, scope_v, job.notion, job.budget)
        rel = (
            job.estimator(add, "auto")  # in memory: the fastest engine for the size
            .fit(ds.X)
            .release(
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
        )
        remaining = book.remaining(scope_v, job.notion)
        ledger_name = book.path
    added = " (each added to the data, footnote 1)" if add else ""
    return _Outcome(
        data_text=f"{ds.name}: {ds.X.shape[0]} records x {ds.X.shape[1]} features",
        queries_text=what_q + added,
        n_q=int(rel.answers.size),
        bound=rel.bound,
        guarantee=rel.guarantee,
        flagged=int(rel.answers.sum()),
        scope=scope_v,
        remaining=remaining,
        ledger=ledger_name,
        out=out_path,
        note=note,
        scaling=scaling,
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
    :func:`_align_queries`: by name when the queries have every feature column of the data,
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


def _identify_dask(
    job: _Identify, cluster: Cluster, queries: str | None = None, add: bool = False
) -> _Outcome:
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
    with StepProgress(quiet=job.quiet) as progress, _open_ledger(job.ledger, job.budget) as book:
        note = _ensure_budget(book, scope_v, job.notion, job.budget)
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
    return _Outcome(
        data_text=f"{table.name}: {n_q} records x {len(table.feature_names)} features in "
        f"{table.n_partitions} partition(s)",
        queries_text=(
            f"the {n_q} record(s) of the data"
            if queries is None
            else f"{n_q} record(s) of {queries} in {q_table.n_partitions} partition(s)"
            + (" (each added to the data, footnote 1)" if add else "")
        ),
        n_q=n_q,
        bound=rel.bound,
        guarantee=rel.guarantee,
        flagged=int(rel.answers.sum()),
        scope=scope_v,
        remaining=remaining,
        ledger=ledger_name,
        out=out_path,
        note=note,
        engine_text=f"dask on {where} ({n_workers} worker(s)); answers sampled on this "
        "machine from the gathered counts (identical to --engine numba)",
    )


def _print_summary(job: _Identify, o: _Outcome, as_json: bool) -> None:
    """The result (everything in it is the released answers or public parameters)."""
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
        "mechanism": job.mechanism().guarantee.description,
        "answers": o.n_q,
        "flagged": o.flagged,
        "guarantee": {
            "notion": o.guarantee.notion,
            "epsilon_per_query": job.eps,
            "epsilon": o.guarantee.epsilon,
            "m": min(bound.m, o.n_q),
            "m_exact": bool(bound.exact),
        },
        "scope": o.scope,
        "ledger": o.ledger,
        "remaining_epsilon": o.remaining,
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
                    ("feature scaling", scaling_text(o.scaling)),
                    ("mechanism", job.mechanism().guarantee.description),
                    ("flagged as anomalies", f"{o.flagged} of {o.n_q} (noisy labels)"),
                    ("guarantee", f"{per_query}: ε = {job.eps:g} per query"),
                    (
                        "composed",
                        f"ε = {o.guarantee.epsilon:g} = min(n = {o.n_q}, m = "
                        f"{min(bound.m, o.n_q)}) × ε (Claim 5: at most m queries in any ball "
                        f"of radius r; m {exact})",
                    ),
                    (
                        "ledger",
                        f"scope {o.scope!r} ({o.guarantee.notion}) in {o.ledger}: "
                        f"remaining ε {o.remaining:g}",
                    ),
                    ("output", str(o.out)),
                ],
            )
        )
        if o.note:
            console.print(o.note, markup=False)
        if warning:
            console.print(f"WARNING: {warning}", markup=False)

    if as_json and warning:
        warn(warning)
    emit(payload, as_json, render)


# --------------------------------------------------------------------------------------------
# privad sp params
# --------------------------------------------------------------------------------------------


@sp_app.command("params")
def params(
    data: str = typer.Argument(..., metavar="DATA", help=DATA_HELP),
    beta_fraction: str = typer.Option(
        "0.005",
        "--beta-fraction",
        metavar="F",
        help="β as a share of n: β = max(1, round(F·n)); a number in [0, 1) (default 0.005, "
        "the β/n of the paper's Table 1).",
    ),
    anomaly_share: str = typer.Option(
        "0.01",
        "--anomaly-share",
        metavar="S",
        help="Target share of records that are (β, r)-anomalies, in [0, 1) (default 0.01); "
        "r is the smallest radius that leaves at most S·n of them.",
    ),
    metric: str = typer.Option("euclidean", "--metric", metavar="METRIC", help=METRIC_HELP),
    columns: list[str] | None = COLUMNS_OPTION,
    label: str | None = typer.Option(None, "--label", metavar="COL", help=LABEL_HELP),
    exclude: list[str] | None = EXCLUDE_OPTION,
    id_column: str | None = typer.Option(
        None,
        "--id",
        metavar="COL",
        help="The column that identifies records (numbers or text): not a feature.",
    ),
    bounds_file: str | None = BOUNDS_OPTION,
    bound: list[str] | None = BOUND_OPTION,
    seed: str | None = typer.Option(
        None, "--seed", metavar="S", help="Seed of a generated dataset (an integer >= 0)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Propose (β, r) for DATA: our reconstruction of the paper's missing Appendix A.2."""
    from privad.sensitive import propose_parameters

    frac = parse_float(
        beta_fraction, "--beta-fraction", strict=False, what="a number in [0, 1) (e.g. 0.005)"
    )
    if frac >= 1:
        raise ParameterError(f"--beta-fraction must be a number in [0, 1), got {beta_fraction!r}")
    share = parse_float(
        anomaly_share, "--anomaly-share", strict=False, what="a number in [0, 1) (e.g. 0.01)"
    )
    if share >= 1:
        raise ParameterError(f"--anomaly-share must be a number in [0, 1), got {anomaly_share!r}")
    metric_v = parse_choice(metric, "--metric", METRIC_CHOICES)
    seed_v = parse_seed(seed)
    bounds = parse_bounds(bound, bounds_file)
    ds, scaling = scale_features(
        load_table(
            data,
            columns=parse_columns(columns),
            label=label,
            seed=seed_v,
            exclude=parse_columns(exclude, "--exclude"),
            id_column=id_column,
        ),
        bounds,
    )
    with StepProgress(quiet=as_json) as progress:
        with progress.step("k-th neighbour distances"):
            beta_v, r_v = propose_parameters(ds.X, frac, share, metric=metric_v)
        stats = ball_statistics_with_progress(
            ds.X, r_v, queries=None, metric=metric_v, add=False, cap=None, progress=progress
        )
    br = stats.ball <= beta_v
    n, d = ds.X.shape
    true_br = None if ds.y is None else int((br & (ds.y == 1)).sum())
    how = (
        "β is a fixed share of n (Table 1 has β/n ≈ 0.005) and r a quantile of the "
        "distance to the (β+1)-th nearest record (Knorr and Ng's DB(p, D) outliers). Not "
        "private: it reads the raw data; use it on public or held-out data, or account for "
        "it separately."
    )
    given = [
        ("--columns", ",".join(columns or []) or None),
        ("--label", label),
        ("--exclude", ",".join(exclude or []) or None),
        ("--id", id_column),
        ("--bounds", bounds_file),
        *(("--bound", b) for b in bound or []),
    ]
    next_command = (
        f"privad sp identify {shlex.quote(data)} --beta {beta_v} --r {r_v:.6g} "
        "--epsilon 0.1"
        + "".join(f" {option} {shlex.quote(value)}" for option, value in given if value)
    )
    payload = {
        "command": "sp params",
        "data": data,
        "dataset": ds.name,
        "records": n,
        "features": list(ds.feature_names),
        "metric": metric_v,
        "beta_fraction": frac,
        "anomaly_share": share,
        "beta": beta_v,
        "r": r_v,
        "br_anomalies": int(br.sum()),
        "labelled_anomalies": ds.n_anomalies,
        "labelled_br_anomalies": true_br,
        "scaling": None if scaling is None else scaling.to_dict(),
        "private": False,
        "how": how,
        "next": next_command,
    }

    def render(console: Any) -> None:
        labelled = (
            "the data has no labels (use --label COL)"
            if ds.y is None
            else f"{ds.n_anomalies}; {true_br} of them are (β, r)-anomalies"
        )
        console.print(
            summary_table(
                "privad sp params (reconstruction of Appendix A.2, not the paper's protocol)",
                [
                    ("data", f"{ds.name}: {n} records x {d} features"),
                    ("feature scaling", scaling_text(scaling)),
                    ("proposed β", f"{beta_v} (= max(1, round({frac:g} × n)))"),
                    (
                        "proposed r",
                        f"{r_v:.6g} ({metric_v}; smallest r leaving at most "
                        f"{share:g}·n records with B_x(i, r) <= β)",
                    ),
                    (
                        "(β, r)-anomalies",
                        f"{int(br.sum())} of {n} records (ball counts include "
                        "the record itself, Definition 2.2)",
                    ),
                    ("labelled anomalies", labelled),
                ],
            )
        )
        console.print(f"How: {how}", markup=False)
        console.print(f"Next: {next_command}", markup=False)

    emit(payload, as_json, render)


# --------------------------------------------------------------------------------------------
# privad sp ask
# --------------------------------------------------------------------------------------------


def _parse_ids(values: list[str] | None) -> list[int] | None:
    """``--ids 3,5 --ids 8`` as a list of record ids (integers >= 0)."""
    if not values:
        return None
    parts = [p.strip() for v in values for p in str(v).split(",")]
    return [parse_int(p, "--ids", minimum=0, what="record ids: integers >= 0") for p in parts]


IDS_OPTION: Any = typer.Option(
    None,
    "--ids",
    metavar="IDS",
    help="Ask about these records of the curator's data: ids 0 .. n-1, repeat the option or "
    "separate with commas. Charged ε per id this querier has not asked before.",
)


@sp_app.command("ask")
def ask(
    server: str = typer.Option(
        ...,
        "--server",
        metavar="URL",
        help="The curator's URL (privad serve sp), http(s)://host:port.",
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        metavar="SECRET",
        envvar="PRIVAD_CURATOR_TOKEN",
        help="This querier's token (default: $PRIVAD_CURATOR_TOKEN).",
    ),
    ids: list[str] | None = IDS_OPTION,
    queries: str | None = typer.Option(
        None,
        "--queries",
        metavar="FILE",
        help="Ask about these feature vectors (records not in the data): a data file with the "
        "curator's number of features. Charged online by Claim 5 (the rise of m·ε).",
    ),
    add_query_to_data: bool = typer.Option(
        False,
        "--add-query-to-data",
        help="With --queries: judge each vector as if it were added to the data (footnote 1).",
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    out: str | None = typer.Option(
        None,
        "--out",
        metavar="FILE",
        help="Also write the answers as CSV (question,label; 1 = anomaly), atomically.",
    ),
    timeout: str = typer.Option("60", "--timeout", metavar="S", help="Seconds per request."),
    ca_cert: str | None = typer.Option(
        None, "--ca-cert", metavar="FILE", help="CA bundle to verify an https curator."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Ask the curator which records are (β, r)-anomalies: noisy answers, your budget."""
    from privad.cli._options import existing_file
    from privad.io import atomic_write
    from privad.services.clients import CuratorClient

    if token is None or not token.strip():
        raise ParameterError("--token is required (or set $PRIVAD_CURATOR_TOKEN)")
    id_list = _parse_ids(ids)
    if (id_list is None) == (queries is None):
        raise ParameterError(
            "give --ids (record ids) or --queries FILE (feature vectors), one of them"
        )
    if add_query_to_data and queries is None:
        raise ParameterError("--add-query-to-data applies only with --queries FILE")
    out_path = None if out is None else check_output_path(out, "--out")
    timeout_v = parse_float(timeout, "--timeout", strict=True, what="seconds > 0")
    Q = None if queries is None else load_table(queries, columns=parse_columns(columns)).X
    with CuratorClient(
        server, token.strip(), timeout=timeout_v, verify=existing_file(ca_cert, "--ca-cert") or True
    ) as client:
        if id_list is not None:
            reply = client.ask_ids(id_list)
            names = [str(i) for i in id_list]
        else:
            reply = client.ask_records(Q, add_query_to_data=add_query_to_data)
            names = [f"row {i}" for i in range(len(reply["answers"]))]
    if out_path is not None:
        with atomic_write(out_path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["question", "label"])
            writer.writerows(zip(names, reply["answers"], strict=True))
    answers = list(zip(names, reply["answers"], strict=True))
    b = reply["budget"]
    payload = {
        "command": "sp ask",
        "server": server,
        "answers": [{"question": q, "label": int(a)} for q, a in answers],
        "charged": reply["charged"],
        "budget": b,
        "output": out_path,
    }

    def render(console: Any) -> None:
        table = Table(title="privad sp ask", title_justify="left")
        table.add_column("question")
        table.add_column("answer (noisy; 1 = anomaly)")
        for name, answer in answers[:50]:
            table.add_row(name, str(answer))
        console.print(table)
        if len(names) > 50:
            console.print(
                f"... {len(names) - 50} more" + (f" in {out}" if out else " (use --out)"),
                markup=False,
            )
        console.print(
            f"charged ε {reply['charged']:g}; budget: spent {b['spent']:g} of "
            f"{b['total']:g}, remaining {b['remaining']:g} ({b['notion']})",
            markup=False,
        )

    emit(payload, as_json, render)


@sp_app.command("plan")
def plan(
    beta: str | None = BETA_OPTION,
    epsilon: str | None = EPSILON_OPTION,
    k: str = K_OPTION,
    queries: str | None = typer.Option(
        None,
        "--queries",
        metavar="N",
        help="Answers that may touch one record (Claim 5's m; n for a batch of n queries): "
        "show their total cost.",
    ),
    delta: str | None = typer.Option(
        None,
        "--delta",
        metavar="D",
        help="δ in (0, 1): also show the optimal composition's ε at this δ.",
    ),
    max_ball: str | None = typer.Option(
        None,
        "--max-ball",
        metavar="B",
        help="Largest ball count shown (default 2β + 20).",
    ),
    as_json: bool = JSON_OPTION,
    figure: str | None = typer.Option(
        None,
        "--figure",
        metavar="PATH",
        help="Also draw the curves to PATH (.png, .pdf, .svg).",
    ),
) -> None:
    """Plan ε before spending it: reads no data, spends nothing.

    The probability that a record with B records within r (itself included) is labelled an
    anomaly, as a function of B, for the SP mechanism and the optimal DP one; with
    --queries, the total cost of N answers by linear and (with --delta) optimal composition.
    """
    from privad.cli._plan import sp_plan

    sp_plan(beta, epsilon, k, queries, delta, max_ball, as_json, figure)


def register(app: typer.Typer) -> None:
    """Add the ``sp`` group to the ``privad`` command."""
    app.add_typer(sp_app, name="sp")
