"""``privad serve``: run privad's protocol parties as HTTP servers (FastAPI + uvicorn).

* ``privad serve analyst``: the relaxed-DP analyst A (:mod:`privad.services.analyst`).
* ``privad serve correction``: the relaxed-DP correction server CS
  (:mod:`privad.services.correction`).
* ``privad serve oracle``: the noisy group oracle of the DP noisy binary search
  (:mod:`privad.services.oracle`), searched with ``privad search run --oracle URL``.
* ``privad serve rmp``: the RMP mining server (:mod:`privad.services.rmp`), fed by
  ``privad rmp participate`` and trained with ``privad rmp train``.
* ``privad serve sp``: the sensitive-privacy curator (:mod:`privad.services.curator`),
  asked by ``privad sp ask``.
* ``privad serve console``: the web console over a ledger (:mod:`privad.services.console`).

Each server prints one line ``NAME listening on URL`` once its socket is bound (``--port 0``
picks a free port), then serves until SIGINT/SIGTERM; requests in flight finish first and
every acknowledged record is already committed to ``--db``. Configuration errors (a bad
token, an unreadable database, a port in use) are :class:`~privad.errors.PrivadError`:
``privad.cli.main`` prints them on one line and exits with status 2.

Each server is composed by the library (:mod:`privad.services.servers`); adding one is a
function here that declares its own options:
:func:`~privad.cli._serve_options.serve_command` adds the options every server shares,
checks them and serves the app of ``privad.services.servers.NAME_server``, called with
the function's options (``prepare`` reads DATA and the like into the library's arguments
first)::

    @serve_command(serve_app, "correction", port=8702, secrets=("analyst_token",))
    def correction(min_gap: float = Number(...).option(...)) -> None:
        '''One line for --help.'''
"""

from __future__ import annotations

from typing import Any

import typer

from privad.cli._data import (
    BOUND_OPTION,
    COLUMNS_OPTION,
    DATA_HELP,
    EXCLUDE_OPTION,
    load_table,
)
from privad.cli._options import (
    COUNT,
    DELTA_OPTION,
    Choice,
    Integer,
    Number,
    budget_option,
    ca_cert_option,
    check_output_path,
    command_group,
    public_bounds,
    scope_option,
    seed_option,
    timeout_option,
)
from privad.cli._search_options import (
    COLUMN_OPTION,
    DERIVE_OPTION,
    KIND_HELP,
    LABELS_OPTION,
    T_HIGH_OPTION,
    T_LOW_OPTION,
    kind_option,
)
from privad.cli._search_options import DATA_HELP as ORACLE_DATA_HELP
from privad.cli._sensitive import (
    COUNT_CAP_OPTION,
    K_OPTION,
    MECHANISM_OPTION,
    METRIC_OPTION,
    beta_option,
    epsilon_option,
    r_option,
    sensitive_mechanism,
)
from privad.cli._serve_options import path_option, secret_option, serve_command, token_options

__all__ = ["register", "serve_app"]

serve_app = command_group(
    "serve",
    "Run a protocol party as an HTTP server (JSON over HTTP, SQLite storage, token auth).\n\n"
    "Relaxed-DP sensor streams: 'privad serve correction' and 'privad serve analyst', fed "
    "by 'privad sensor send'. See docs/relaxed.md.\n\n"
    "DP noisy binary search: 'privad serve oracle', searched by 'privad search run'. See "
    "docs/search.md.\n\n"
    "RMP collaborative anomaly detection: 'privad serve rmp', fed by 'privad rmp "
    "participate'. See docs/rmp_service.md.",
)


PER_ANSWER: Any = epsilon_option("ε per answer, > 0.")
"""``--epsilon`` of the servers that answer queries (the oracle, the curator)."""


def _dbscan_backends() -> tuple[str, ...]:
    from privad.relaxed.detectors import DBSCAN_BACKENDS

    return DBSCAN_BACKENDS


# --------------------------------------------------------------------------------------------
# privad serve analyst / correction
# --------------------------------------------------------------------------------------------


@serve_command(serve_app, "analyst", port=8701, secrets=("correction_token",))
def analyst(
    correction_url: str = typer.Option(
        ...,
        "--correction-url",
        metavar="URL",
        help="The correction server, e.g. http://127.0.0.1:8702.",
    ),
    correction_token: str | None = secret_option(
        "--correction-token",
        "PRIVAD_CORRECTION_TOKEN",
        "The analyst's token at the correction server (its --analyst-token). Default: "
        "$PRIVAD_CORRECTION_TOKEN.",
    ),
    eps: float = Number("a radius > 0", strict=True).option(
        ...,
        "--eps",
        "E",
        "DBSCAN radius in the sensors' scaled space (step 1a); see 'privad sensor calibrate'.",
    ),
    min_samples: int = COUNT.option(
        ..., "--min-samples", "M", "DBSCAN minPts (the point itself included), an integer >= 1."
    ),
    backend: str = Choice(_dbscan_backends).option(
        "auto",
        "--backend",
        "B",
        "Exact DBSCAN engine: auto (default), dbscan, geometry or sklearn.",
    ),
    columns: int | None = COUNT.option(
        None,
        "--columns",
        "D",
        "Accept only windows with D columns. Default: any, the same for all windows of one sensor.",
    ),
    timeout: float = timeout_option("Seconds per request to the correction server."),
    ca_cert: str | None = ca_cert_option("correction server"),
) -> None:
    """Run the analyst A: store perturbed windows, detect outliers, correct them with CS."""


@serve_command(serve_app, "correction", port=8702, secrets=("analyst_token",))
def correction(
    outlier_layer_width: float = Number("a width >= 0").option(
        ...,
        "--outlier-layer-width",
        "W",
        "w_O >= 0, the outlier layer width in the sensors' scaled space, fixed from "
        "historical data (see 'privad sensor calibrate').",
    ),
    analyst_token: str | None = secret_option(
        "--analyst-token",
        "PRIVAD_ANALYST_TOKEN",
        "The token the analyst uses here (at least 16 characters). Default: $PRIVAD_ANALYST_TOKEN.",
    ),
    min_gap: float = Number("a number >= 0").option(
        0.0, "--min-gap", "G", "Step 3 (reconstruction): split O' only at a gap > G (default 0)."
    ),
    max_fp_share: float = Number("a share in [0, 1]", maximum=1.0).option(
        0.5,
        "--max-fp-share",
        "F",
        "Step 3 (reconstruction): at most this share of O' may become FP (default 0.5).",
    ),
) -> None:
    """Run the correction server CS: hold d_diff per window, split O', find false negatives."""


# --------------------------------------------------------------------------------------------
# privad serve oracle
# --------------------------------------------------------------------------------------------


@serve_command(serve_app, "oracle", port=8703)
def oracle(
    data: str = typer.Argument(..., metavar="DATA", help=ORACLE_DATA_HELP),
    db: str = path_option(
        "--db",
        "The oracle's privacy ledger (a privad ledger SQLite file, created if missing; "
        "see 'privad budget show --ledger PATH'). Spent budget survives restarts.",
    ),
    epsilon: float = PER_ANSWER,
    budget: float = budget_option(
        "100",
        "Total ε of the scope: queries past it are refused (429). Set in the ledger if "
        "the scope has none or another total (never below what was spent).",
    ),
    delta: float | None = DELTA_OPTION,
    kind: str = kind_option("laplace", KIND_HELP),
    column: str | None = COLUMN_OPTION,
    labels_column: str | None = LABELS_OPTION,
    derive_thresholds: bool = DERIVE_OPTION,
    t_low: float | None = T_LOW_OPTION,
    t_high: float | None = T_HIGH_OPTION,
    scope: str | None = scope_option(
        "The ledger scope answers are charged to (default: oracle/<data name>)."
    ),
    seed: int | None = seed_option(
        "Seed of the oracle's noise, for tests only (anyone who knows it can remove the "
        "noise). Default: OS entropy."
    ),
    max_orders: int = COUNT.option(
        64, "--max-orders", "N", "Stored query orders kept in memory (64)."
    ),
) -> None:
    """Hold the values and answer only noisy group queries, within a privacy budget."""


# --------------------------------------------------------------------------------------------
# privad serve sp
# --------------------------------------------------------------------------------------------


def _curator_data(
    data: str,
    beta: int,
    r: float,
    epsilon: float,
    k: int,
    mechanism: str,
    metric: str,
    count_cap: Any,
    ledger: str,
    columns: list[str] | None,
    exclude: list[str] | None,
    id_column: str | None,
    bounds_file: str | None,
    bound: list[Any] | None,
    seed: int | None,
) -> dict[str, Any]:
    """DATA, the mechanism and the public bounds the curator holds."""
    mech = sensitive_mechanism(beta, r, epsilon, k, mechanism, metric, count_cap)
    check_output_path(ledger, "--ledger", "store")
    declared = public_bounds(bound, bounds_file)
    ds = load_table(data, columns=columns, exclude=exclude, id_column=id_column, seed=seed)
    return {"data": ds, "mechanism": mech, "ledger": ledger, "bounds": declared, "seed": seed}


QUERIER_TOKENS = token_options(
    "querier", "NAME is the querier, who has its own budget (ledger scope <scope>/NAME)"
)


@serve_command(
    serve_app,
    "sp",
    port=8705,
    banner="privad curator",
    server="curator",
    tokens=QUERIER_TOKENS,
    who="querier",
    why="queriers ask with them: 'privad sp ask'",
    prepare=_curator_data,
)
def sp(
    data: str = typer.Argument(..., metavar="DATA", help=DATA_HELP),
    beta: int = beta_option("β: an integer >= 1."),
    r: float = r_option("The radius r: a finite number >= 0."),
    epsilon: float = PER_ANSWER,
    budget: float = budget_option(
        "10",
        "Each querier's total ε (its own ledger scope <scope>/<querier>): a request past "
        "it is refused (429) with nothing spent.",
    ),
    delta: float | None = DELTA_OPTION,
    db: str = path_option(
        "--db",
        "The curator's store (SQLite, created if missing): recorded answers and every "
        "querier's questions, so that a repeated question gets its recorded answer after a "
        "restart too. Tied to DATA and the mechanism's parameters.",
    ),
    ledger: str = path_option(
        "--ledger",
        "The ledger file holding the queriers' budgets (created if missing; 'privad "
        "budget show --ledger PATH').",
    ),
    k: int = K_OPTION,
    mechanism: str = MECHANISM_OPTION,
    metric: str = METRIC_OPTION,
    count_cap: Any = COUNT_CAP_OPTION,
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    id_column: str | None = typer.Option(
        None,
        "--id",
        metavar="COL",
        help="The column that identifies records (numbers or text): not a feature. Queriers "
        "still ask by record number (0 .. n-1, in DATA's order); the ids stay with you.",
    ),
    bounds_file: str | None = typer.Option(
        None,
        "--bounds",
        metavar="FILE",
        help='Public per-column bounds (CSV column,lower,upper or JSON {"col": \\[lower, '
        "upper]}), the public domain of the queries: bounded features of DATA and of every "
        "question are scaled to [0, 1] as (x − lo)/(hi − lo), so r is in scaled units; "
        "stored values outside are clipped, questions outside are refused. Published in "
        "/v1/model. Never computed from the data: see docs/scaling.md.",
    ),
    bound: list[Any] | None = BOUND_OPTION,
    scope: str | None = scope_option(
        "Prefix of the queriers' ledger scopes (default: curator/<data name>)."
    ),
    seed: int | None = seed_option(
        "Seed of the noise, for tests only (anyone who knows it can remove the noise). "
        "Default: OS entropy."
    ),
) -> None:
    """Hold DATA and answer queriers' (β, r)-anomaly questions privately, per-querier budgets."""


# --------------------------------------------------------------------------------------------
# privad serve rmp
# --------------------------------------------------------------------------------------------


RMP_TOKENS = token_options("end-user", "end-users download the model")


@serve_command(
    serve_app,
    "rmp",
    port=8704,
    tokens=RMP_TOKENS,
    who="end-user",
    why="end-users download the model with them",
    secrets=("operator_token",),
)
def rmp(
    db: str = path_option(
        "--db",
        "SQLite file of the mining server: T and its parameters, participants, batches, "
        "models (created if missing). On restart T and n, w, alpha, beta are kept.",
    ),
    n: int | None = Integer("an integer >= 2", minimum=2).option(
        None,
        "--n",
        "N",
        "Attributes per record (required for a new --db; on restart it must match).",
    ),
    w: int | None = COUNT.option(None, "--w", "W", "Rows of T, 1 <= w < n (or give --r = n - w)."),
    r: int | None = COUNT.option(
        None, "--r", "R", "r = n - w >= 1, instead of --w (the paper uses r = 1)."
    ),
    alpha: float | None = Number("a number with 0 < alpha < 1", strict=True, maximum=1.0).option(
        None,
        "--alpha",
        "A",
        "0 < alpha < 1: each participant's T_i = T + U(-alpha, alpha) (eq. 1).",
    ),
    beta: float | None = Number("a number > 0", strict=True).option(
        None, "--beta", "B", "beta of the double logistic (eq. 2). Default: beta* (about 2.8124)."
    ),
    seed: int | None = seed_option(
        "Seed of the public T (for tests; T is public). Default: OS entropy. Ignored "
        "when --db already holds T."
    ),
    hidden: int | None = COUNT.option(
        None,
        "--hidden",
        "H",
        "Hidden units of the AANN (default: privad.rmp's default for w inputs).",
    ),
    epochs: int = COUNT.option(
        500,
        "--epochs",
        "E",
        "Training epochs (default 500; the paper uses 300-1000). A train request may override it.",
    ),
    max_batch: int = COUNT.option(
        30,
        "--max-batch",
        "M",
        "Most records (columns) one uploaded batch may hold (default 30, as in the paper).",
    ),
    operator_token: str | None = secret_option(
        "--operator-token",
        "PRIVAD_RMP_OPERATOR_TOKEN",
        "The operator's token: starts training, sees jobs and participants (at least 16 "
        "characters). Default: $PRIVAD_RMP_OPERATOR_TOKEN.",
    ),
    registration_token: str | None = secret_option(
        "--registration-token",
        "PRIVAD_RMP_REGISTRATION_TOKEN",
        "If set, registering a participant needs this token. Default: "
        "$PRIVAD_RMP_REGISTRATION_TOKEN, else registration is open.",
    ),
) -> None:
    """Run the RMP mining server: collect perturbed batches, train the AANN, serve the model."""


# --------------------------------------------------------------------------------------------
# privad serve console
# --------------------------------------------------------------------------------------------


@serve_command(serve_app, "console", port=8706, tokens=None, db=False)
def console(
    ledger: str = path_option("--ledger", "The ledger file to show (it must exist)."),
    store: str | None = path_option(
        "--store",
        "A server's store (curator, analyst, correction, rmp) to show on /services; "
        "opened read-only, never written.",
        None,
    ),
    utility: str | None = typer.Option(
        None,
        "--utility",
        metavar="DIR",
        help="Saved results of benchmarks/bench_utility.py (benchmarks/results/utility), "
        "shown on /plan at the chosen ε.",
    ),
    operator_token: str | None = secret_option(
        "--operator-token",
        "PRIVAD_CONSOLE_OPERATOR_TOKEN",
        "The operator's secret: with it, a login may set budgets and cancel stale "
        "reservations. Default: $PRIVAD_CONSOLE_OPERATOR_TOKEN; none: read-only console.",
    ),
) -> None:
    """A web console over a ledger: budgets, spends, a store's parties, plans (docs/console.md)."""


def register(app: typer.Typer) -> None:
    """Add the ``serve`` group to the ``privad`` command."""
    app.add_typer(serve_app, name="serve")
