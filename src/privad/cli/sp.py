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

import csv
import shlex
from typing import Any

import typer
from rich.table import Table

from privad.cli._data import (
    BOUND_OPTION,
    BOUNDS_OPTION,
    COLUMNS_OPTION,
    DATA_HELP,
    EXCLUDE_OPTION,
    ID_OPTION,
    LABEL_HELP,
    load_table,
    scale_features,
    scaling_text,
)
from privad.cli._options import (
    LEDGER_HELP,
    SCHEDULER_OPTION,
    WORKER_TIMEOUT_OPTION,
    WORKERS_OPTION,
    check_output_path,
    parse_bounds,
    parse_choice,
    parse_cluster,
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
)
from privad.cli._sensitive import (
    BETA_OPTION,
    COUNT_CAP_OPTION,
    EPSILON_OPTION,
    K_OPTION,
    MECHANISM_OPTION,
    METRIC_CHOICES,
    METRIC_HELP,
    METRIC_OPTION,
    R_OPTION,
    parse_mechanism,
)
from privad.cli._sp_identify import (
    Identify,
    ball_statistics_with_progress,
    identify_dask,
    identify_local,
    print_summary,
)
from privad.errors import (
    ParameterError,
)

__all__ = ["register", "sp_app"]

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

ENGINE_CHOICES = ("numba", "dask")


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
    job = Identify(
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
        outcome = identify_dask(job, cluster, queries, add_query_to_data)
    else:
        if cluster.given:
            raise ParameterError(
                "--scheduler, --workers and --worker-timeout apply only with --engine dask"
            )
        outcome = identify_local(job, queries, add_query_to_data)
    print_summary(job, outcome, as_json)


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
