"""``privad sp``: sensitively private (β, r)-anomaly identification from the command line.

* ``privad sp identify DATA --beta B --r R --epsilon E``: noisy anomaly labels for every
  record of DATA (or of ``--queries FILE``), charged to a ledger before anything is
  written: one call of :func:`privad.sensitive.identify` (in memory, or with ``--engine
  dask`` on partitioned files, docs/distributed.md); :mod:`privad.cli._sp_identify` opens
  the inputs and prints the summary.
* ``privad sp params DATA``: (β, r) from our reconstruction of the paper's missing
  Appendix A.2, or r chosen privately: :func:`privad.sensitive.choose_parameters`.
* ``privad sp ask``: ask a curator (``privad serve sp``); ``privad sp plan``: what ε buys,
  before any data is read (:mod:`privad.cli._plan`).

Every option is typed (:mod:`privad.cli._options`; those shared with ``privad serve sp``
in :mod:`privad.cli._sensitive` and :mod:`privad.cli._data`): a bad value is one line and
exit status 2, before any file is written.
"""

from __future__ import annotations

from typing import Any

import typer

from privad.cli._data import (
    BOUND_OPTION,
    BOUNDS_OPTION,
    COLUMNS_OPTION,
    DATA_HELP,
    EXCLUDE_OPTION,
    ID_OPTION,
    LABEL_OPTION,
    load_table,
    scale_features,
)
from privad.cli._forward import forward
from privad.cli._options import (
    COUNT,
    LEDGER_HELP,
    SCHEDULER_OPTION,
    WORKER_TIMEOUT_OPTION,
    WORKERS_OPTION,
    Choice,
    Integers,
    Number,
    ca_cert_option,
    check_output_path,
    cluster_of,
    command_group,
    plan_delta_option,
    public_bounds,
    required_secret,
    scope_option,
    seed_option,
    timeout_option,
)
from privad.cli._render import (
    JSON_OPTION,
    emit,
    print_lines,
    warn,
)
from privad.cli._sensitive import (
    BETA,
    BETA_OPTION,
    CONTAMINATION_OPTION,
    COUNT_CAP_OPTION,
    EPSILON_OPTION,
    K_OPTION,
    MECHANISM_OPTION,
    METRIC_OPTION,
    R_OR_PRIVATE_OPTION,
    SELECTION_EPSILON_OPTION,
    sensitive_mechanism,
)
from privad.cli._serve_options import secret_option
from privad.cli._sp_identify import in_memory, partitioned, show
from privad.cli._tables import rows_table
from privad.errors import ParameterError

__all__ = ["register", "sp_app"]

sp_app = command_group(
    "sp",
    (
        "Sensitive privacy (Asif et al., CCS 2019): identify (β, r)-anomalies privately.\n\n"
        "A record is a (β, r)-anomaly when at most β records (itself included) lie within "
        "distance r of it. Normal records, and records that would be normal after adding or "
        "removing k records, get ε-differential-privacy-like protection; anomalies are "
        "identified with exponentially small error. See docs/sensitive.md."
    ),
)

ENGINE_CHOICES = ("numba", "dask")
LEDGER_OPTION: Any = typer.Option(None, "--ledger", metavar="PATH", help=LEDGER_HELP)
BUDGET = Number("a finite number > 0 (the scope's total ε)", strict=True)


def budget_option(help: str) -> Any:
    """``--budget E``: the scope's total ε, set when the scope has no budget."""
    return BUDGET.option(None, "--budget", "E", help)


def queries_option(help: str) -> Any:
    """``--queries FILE``: the records asked about, instead of the data's own."""
    return typer.Option(None, "--queries", metavar="FILE", help=help)


def add_query_option(help: str) -> Any:
    """``--add-query-to-data``: each query judged as if added to the data (footnote 1)."""
    return typer.Option(False, "--add-query-to-data", help=help)


def id_option(help: str) -> Any:
    """``--id COL``: the column that identifies records, not a feature."""
    return typer.Option(None, "--id", metavar="COL", help=help)


@sp_app.command("identify")
def identify(
    data: str = typer.Argument(..., metavar="DATA", help=DATA_HELP),
    beta: int = BETA_OPTION,
    r: Any = R_OR_PRIVATE_OPTION,
    epsilon: float = EPSILON_OPTION,
    k: int = K_OPTION,
    mechanism: str = MECHANISM_OPTION,
    metric: str = METRIC_OPTION,
    contamination: float | None = CONTAMINATION_OPTION,
    selection_epsilon: float | None = SELECTION_EPSILON_OPTION,
    queries: str | None = queries_option(
        "Label these records instead of the records of DATA: a data file with the same "
        "features (matched by name when the file has every feature column of DATA, else by "
        "position; --columns, --label and --exclude apply to DATA only, --id to both). With "
        "--engine dask: a Parquet folder or file or CSV files (a glob), read on the "
        "cluster, and the output has one part per query partition. Default: every record of DATA.",
    ),
    add_query_to_data: bool = add_query_option(
        "With --queries: answer each query on DATA plus one copy of the query record "
        "(footnote 1 of the paper), so that a query is judged as if it were in the data.",
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    label: str | None = LABEL_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    id_column: str | None = ID_OPTION,
    bounds_file: str | None = BOUNDS_OPTION,
    bound: list[Any] | None = BOUND_OPTION,
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
    error_probabilities: bool = typer.Option(
        False,
        "--with-error-probabilities",
        help="Also write each answer's exact error probability and its log10, for "
        "evaluation. These columns are NOT PRIVATE (they are computed from the exact counts); "
        "never release them.",
    ),
    ledger: str | None = LEDGER_OPTION,
    scope: str | None = scope_option(
        "Budget scope the spend is charged to (a non-empty name). Default: the dataset "
        "name (the file name without extension for files)."
    ),
    budget: float | None = budget_option(
        "Create the scope's budget with total ε = E (a finite number > 0) if it has none "
        "(an existing budget is never changed: use 'privad budget set'). Without it, a scope "
        "without a budget is an error."
    ),
    count_cap: Any = COUNT_CAP_OPTION,
    seed: int | None = seed_option(
        "Seed (an integer >= 0) for the noise, for reproducible tests only: anyone who "
        "knows the seed can undo the noise. Default: fresh OS entropy. Also seeds generated "
        "datasets (default 0)."
    ),
    engine: str = Choice(ENGINE_CHOICES).option(
        "numba",
        "--engine",
        "ENGINE",
        "numba (default): count on this machine. dask: DATA is a Parquet folder or file "
        "or CSV files (a glob), counted partition by partition on a Dask cluster; the output "
        "is a Parquet folder with one part per input partition. Same counts and, with "
        "--seed, the same labels as numba. See docs/distributed.md.",
    ),
    scheduler: str | None = SCHEDULER_OPTION,
    workers: int | None = WORKERS_OPTION,
    as_json: bool = JSON_OPTION,
    worker_timeout: float | None = WORKER_TIMEOUT_OPTION,
) -> None:
    """Label records as (β, r)-anomalies privately, and charge the privacy budget."""
    options = dict(locals())  # the parsed options, each named as sensitive.identify names it
    from privad.sensitive import identify as identify_records
    from privad.sensitive.reports import IdentificationReport

    # 1. every option, before anything is read or written
    private = r == "private"
    if private and contamination is None:
        raise ParameterError("--r private chooses r for a share of anomalies: give --contamination")
    if not private and (contamination, selection_epsilon) != (None, None):
        raise ParameterError("--contamination and --selection-epsilon apply only with --r private")
    if private and engine == "dask":
        raise ParameterError("--r private applies with --engine numba (the records in memory)")
    mech = sensitive_mechanism(
        beta, 0.0 if private else r, epsilon, k, mechanism, metric, count_cap
    )
    bounds = public_bounds(bound, bounds_file)
    cluster = cluster_of(scheduler, workers, worker_timeout)
    if out is not None:
        check_output_path(out, "--out", "folder" if engine == "dask" else "file")
    if ledger is not None:
        check_output_path(ledger, "--ledger", "store")
    if add_query_to_data and queries is None:
        raise ParameterError("--add-query-to-data applies only with --queries FILE")
    table = {"columns": columns, "label": label, "exclude": exclude}
    if engine == "dask":
        if id_column is not None:
            raise ParameterError(
                "--id applies with --engine numba (the Dask output parts are keyed by index)"
            )
        if bounds is not None:
            raise ParameterError(
                "--bound and --bounds apply with --engine numba; scale the "
                "partitions with the public bounds first"
            )
        inputs = partitioned(data, queries, out, scope, mech.name, **table)
    else:
        if cluster.given:
            raise ParameterError(
                "--scheduler, --workers and --worker-timeout apply only with --engine dask"
            )
        table.update(id_column=id_column, seed=seed)
        inputs = in_memory(data, queries, out, scope, mech.name, bounds, table)
    # 2. the one library call
    from privad.cli._progress import StepProgress  # Rich's progress: only here

    with StepProgress(quiet=as_json) as progress:
        res = forward(
            identify_records,
            options,
            inputs.data,
            mech,
            scope=scope or inputs.name,
            output=inputs.out,
            queries=inputs.queries,
            ids=inputs.ids,
            cluster=cluster.client,
            rng=seed,
            context={"command": "privad sp identify", "data": data, "queries": queries},
            step=progress.step,
        )
    # 3. render
    given = (data, inputs.name, queries, id_column, inputs.scaling, cluster.scheduler)
    report = IdentificationReport(res, *given)
    if as_json and report.warning:
        warn(report.warning)
    show(report, "privad sp identify", as_json)


# --------------------------------------------------------------------------------------------
# privad sp params
# --------------------------------------------------------------------------------------------


SHARE_BETA = Number("a number in [0, 1) (e.g. 0.005)", maximum=1.0, below=True)
SHARE_ANOMALY = Number("a number in [0, 1) (e.g. 0.01)", maximum=1.0, below=True)


@sp_app.command("params")
def params(
    data: str = typer.Argument(..., metavar="DATA", help=DATA_HELP),
    beta_fraction: float | None = SHARE_BETA.option(
        None,
        "--beta-fraction",
        "F",
        "β as a share of n: β = max(1, round(F·n)); a number in [0, 1) (default: the "
        "target share, β = round(c·n), with --contamination or --anomaly-share; else 0.005, "
        "the β/n of the paper's Table 1).",
    ),
    anomaly_share: float | None = SHARE_ANOMALY.option(
        None,
        "--anomaly-share",
        "S",
        "Target share of records that are (β, r)-anomalies, in [0, 1) (default 0.01 "
        "unless --contamination is given); r is the smallest radius that leaves at most S·n "
        "of them.",
    ),
    contamination: float | None = CONTAMINATION_OPTION,
    beta: int | None = BETA.option(
        None,
        "--beta",
        "B",
        "β itself, an integer >= 1 (like PyOD's n_neighbors); overrides --beta-fraction. "
        "Required with --private.",
    ),
    private: bool = typer.Option(
        False,
        "--private",
        help="Choose r with the ε-DP selection instead (needs --beta and --contamination; "
        "charged to --ledger/--scope as its own spend; features in [0, 1]).",
    ),
    selection_epsilon: float | None = SELECTION_EPSILON_OPTION,
    ledger: str | None = LEDGER_OPTION,
    scope: str | None = scope_option(
        "With --private: the budget scope charged (default: the dataset name)."
    ),
    budget: float | None = budget_option(
        "With --private: create the scope's sensitive budget with total ε = E if it has none."
    ),
    metric: str = METRIC_OPTION,
    columns: list[str] | None = COLUMNS_OPTION,
    label: str | None = LABEL_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    id_column: str | None = id_option(
        "The column that identifies records (numbers or text): not a feature.",
    ),
    bounds_file: str | None = BOUNDS_OPTION,
    bound: list[Any] | None = BOUND_OPTION,
    seed: int | None = seed_option("Seed of a generated dataset (an integer >= 0)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Propose (β, r) for DATA: our reconstruction of the paper's missing Appendix A.2."""
    options = dict(locals())  # the parsed options, each named as parameter_report names it
    from privad.sensitive.reports import parameter_report

    if private and (beta is None or contamination is None):
        raise ParameterError("--private needs --beta and --contamination (public inputs)")
    if not private and (ledger, scope, budget, selection_epsilon) != (None,) * 4:
        raise ParameterError(
            "--ledger, --scope, --budget and --selection-epsilon apply only with --private"
        )
    bounds = public_bounds(bound, bounds_file)
    table = load_table(
        data, columns=columns, label=label, seed=seed, exclude=exclude, id_column=id_column
    )
    ds, scaling = scale_features(table, bounds)
    from privad.cli._progress import StepProgress  # Rich's progress: only here

    with StepProgress(quiet=as_json) as progress:
        report = forward(
            parameter_report,
            options,
            ds,
            scaling=scaling,
            rng=seed,
            options=[
                ("--columns", ",".join(columns or [])),
                ("--label", label),
                ("--exclude", ",".join(exclude or [])),
                ("--id", id_column),
                ("--bounds", bounds_file),
                *(("--bound", f"{c}={lo!r}:{hi!r}") for c, (lo, hi) in bound or []),
            ],
            step=progress.step,
        )
    show(
        report,
        "privad sp params (reconstruction of Appendix A.2, not the paper's protocol)",
        as_json,
    )


# --------------------------------------------------------------------------------------------
# privad sp ask
# --------------------------------------------------------------------------------------------


IDS_OPTION: Any = Integers("record ids: integers >= 0", minimum=0).option(
    None,
    "--ids",
    "IDS",
    "Ask about these records of the curator's data: ids 0 .. n-1, repeat the option or "
    "separate with commas. Charged ε per id this querier has not asked before.",
)

SERVER_OPTION: Any = typer.Option(
    ..., "--server", metavar="URL", help="The curator's URL (privad serve sp), http(s)://host:port."
)


@sp_app.command("ask")
def ask(
    server: str = SERVER_OPTION,
    token: str | None = secret_option(
        "--token", "PRIVAD_CURATOR_TOKEN", "This querier's token (default: $PRIVAD_CURATOR_TOKEN)."
    ),
    ids: list[Any] | None = IDS_OPTION,
    queries: str | None = queries_option(
        "Ask about these feature vectors (records not in the data): a data file with the "
        "curator's number of features. Charged online by Claim 5 (the rise of m·ε).",
    ),
    add_query_to_data: bool = add_query_option(
        "With --queries: judge each vector as if it were added to the data (footnote 1).",
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    id_column: str | None = id_option(
        "With --queries: the column of the query file that identifies its records "
        "(numbers or text): not a feature; each answer is labelled with it (default: 'row N', "
        "N the 0-based row number).",
    ),
    out: str | None = typer.Option(
        None,
        "--out",
        metavar="FILE",
        help="Also write the answers as CSV (question,label; 1 = anomaly), atomically; the "
        "question is the record id, the --id value or 'row N'.",
    ),
    timeout: float = timeout_option(),
    ca_cert: str | None = ca_cert_option("curator"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Ask the curator which records are (β, r)-anomalies: noisy answers, your budget."""
    from privad.services.curator_ask import ask_curator

    token = required_secret(token, "--token", "PRIVAD_CURATOR_TOKEN")
    id_list = None if not ids else [i for part in ids for i in part]
    if (id_list is None) == (queries is None):
        raise ParameterError(
            "give --ids (record ids) or --queries FILE (feature vectors), one of them"
        )
    if queries is None and (add_query_to_data or id_column is not None):
        raise ParameterError("--add-query-to-data and --id apply only with --queries FILE")
    out_path = None if out is None else check_output_path(out, "--out")
    table = None if queries is None else load_table(queries, columns=columns, id_column=id_column)
    done = ask_curator(
        server,
        token,
        ids=id_list,
        records=None if table is None else table.X,
        names=None if table is None else table.ids,
        add_query_to_data=add_query_to_data,
        output=out_path,
        timeout=timeout,
        verify=ca_cert or True,
    )

    def render(console: Any) -> None:
        rows = list(zip(done.questions, done.answers, strict=True))[:50]
        columns = ("question", "answer (noisy; 1 = anomaly)")
        console.print(rows_table("privad sp ask", columns, rows))
        if len(done.questions) > 50:
            more = f"... {len(done.questions) - 50} more"
            print_lines(console, [more + (f" in {out}" if out else " (use --out)")])
        console.print(done.budget_line, markup=False)

    emit(done.to_dict(), as_json, render)


@sp_app.command("plan")
def plan(
    beta: int = BETA_OPTION,
    epsilon: float = EPSILON_OPTION,
    k: int = K_OPTION,
    queries: int | None = COUNT.option(
        None,
        "--queries",
        "N",
        "Answers that may touch one record (Claim 5's m; n for a batch of n queries): "
        "show their total cost.",
    ),
    delta: float | None = plan_delta_option(),
    max_ball: int | None = COUNT.option(
        None, "--max-ball", "B", "Largest ball count shown (default 2β + 20)."
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
    from privad.cli._plan import show_plan  # matplotlib only when a plan is asked for
    from privad.experiments.plans import sp_plan

    payload = sp_plan(beta, epsilon, k, answers=queries, delta=delta, max_ball=max_ball)
    title = f"P(labelled anomaly) by ball count B (β = {beta}, ε = {epsilon:g}, k = {k};"
    columns = ("B", "anomaly?", "sp (U_λk)", "dp (U_ΔG)")
    show_plan(payload, title + " multiplicity 1)", columns, columns, as_json, figure, delta)


def register(app: typer.Typer) -> None:
    """Add the ``sp`` group to the ``privad`` command."""
    app.add_typer(sp_app, name="sp")
