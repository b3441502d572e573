"""``privad search``: the DP noisy binary search (Bittner, Sarwate, Wright) from the command line.

* ``privad search run --oracle URL --token T --budget B``: search for the anomaly with an
  oracle server (``privad serve oracle``) through :class:`privad.services.clients.
  RemoteOracle`; the server holds the data and charges its own ledger.
* ``privad search run --oracle DATA --epsilon E --budget B --t-low L --t-high H`` (or
  ``--derive-thresholds``): the same with a local oracle over a data file. The oracle
  records every answer before releasing it: in the ``--ledger`` file (scope ``--scope``;
  the search stops before the scope's budget would refuse a query), else in its own
  in-memory ledger, whose total the summary shows.

Both print a summary (the top-|S| items with their posterior mass, the number of queries
T, the privacy spent Tε, which rule halted the search) and, with ``--out FILE``, write the
posterior as CSV (``item,posterior``), atomically. Every option is parsed before anything
is read, sent or written; a mistake is a :class:`~privad.errors.PrivadError`, printed by
``privad.cli.main`` on one line with exit status 2.

The data and threshold options (:func:`load_series`, :func:`resolve_thresholds`) are shared
with ``privad serve oracle`` (:mod:`privad.cli.serve`).
"""

from __future__ import annotations

import contextlib
import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

from privad.cli._options import DELTA_OPTION, parse_delta
from privad.cli._render import JSON_OPTION, StepProgress, emit, summary_table
from privad.errors import BudgetExceededError, DataError, ParameterError

__all__ = [
    "SeriesData",
    "load_series",
    "parse_halting",
    "parse_kind",
    "register",
    "resolve_thresholds",
    "search_app",
]

search_app = typer.Typer(
    name="search",
    help=(
        "DP noisy binary search for one anomaly (Bittner, Sarwate, Wright): noisy group "
        "queries, ε-DP for everyone who is not the anomaly.\n\n"
        "Against an oracle server ('privad serve oracle') or a local data file. See "
        "docs/search.md."
    ),
    no_args_is_help=True,
    add_completion=False,
)

KIND_HELP = (
    "The oracle: laplace (noisy maxima of Q and its complement, eq. 9; default), binarized "
    "(the bit 1(Y > Ybar), eq. 24) or rr (randomized response, eq. 5)."
)
DATA_HELP = (
    "The values x_1..x_{n+1} (>= 0): a NAB series (nab:NAME), a Yahoo S5 series file "
    "(timestamp,value,is_anomaly), a CSV file (one value column, see --column), a .npy "
    "vector or a one-column .npz, or a catalogue name (e.g. search-mixture)."
)

# Options shared with 'privad serve oracle'
COLUMN_OPTION: Any = typer.Option(
    None,
    "--column",
    metavar="COL",
    help="CSV: the value column, by name or 0-based position. Default: 'value' if present, "
    "else the only column besides the labels.",
)
LABELS_OPTION: Any = typer.Option(
    None,
    "--labels-column",
    metavar="COL",
    help="The 0/1 anomaly labels (1 = anomaly), used by --derive-thresholds (implied when "
    "given without --t-low/--t-high), by the rule of every data file: a column, by name or "
    "0-based position; in a .npz first an array stored beside the values, whose array y is "
    "the default. NAB and Yahoo series carry labels. See docs/data.md.",
)
DERIVE_OPTION: Any = typer.Option(
    False,
    "--derive-thresholds",
    help="t_l, t_h from the labels as in section 6.1 (largest labelled anomaly x*, next "
    "largest value x_j; t_h = x* - 0.1(x* - x_j), t_l = x_j + 0.1(x* - x_j)). This reads the "
    "data and is NOT private: in a deployment set --t-low/--t-high from domain knowledge.",
)
T_LOW_OPTION: Any = typer.Option(
    None,
    "--t-low",
    metavar="L",
    help="t_l > 0: every non-anomalous value is <= t_l (eq. 1); also the sensitivity of the "
    "max query (Lemma 1). With --t-high.",
)
T_HIGH_OPTION: Any = typer.Option(
    None, "--t-high", metavar="H", help="t_h > t_l: the anomaly's value is >= t_h (eq. 1)."
)

HALTING_OPTION: Any = typer.Option(
    None,
    "--halting",
    metavar="RULE",
    help="Stopping rule, repeatable (any stops): budget (only b), posterior[:ALPHA] "
    "(max f > α; default posterior:0.5), log-odds:DELTA (eq. 25), ben-or-hassidim, "
    "max-queries:N. The budget b always applies.",
)

_MATRIX_SUFFIXES = (".csv", ".npy", ".npz", ".parquet", ".pq")


# --------------------------------------------------------------------------------------------
# Data and thresholds (shared with privad serve oracle)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeriesData:
    """The values an oracle holds, their name, and labels when the source has them."""

    name: str
    values: np.ndarray
    labels: np.ndarray | None


def _is_yahoo(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            header = handle.readline()
    except OSError:
        return False
    names = {h.strip().lower() for h in header.split(",")}
    return (
        "value" in names
        and bool(names & {"is_anomaly", "anomaly"})
        and bool(names & {"timestamp", "timestamps"})
    )


def _one_column(ds: Any, column: str | None, source: str) -> np.ndarray:
    names = list(ds.feature_names)
    X = np.asarray(ds.X)
    if X.shape[1] == 1:
        return X[:, 0]
    if column is None and "value" in names:
        return X[:, names.index("value")]
    shown = ", ".join(repr(n) for n in names[:8]) + (" ..." if len(names) > 8 else "")
    raise ParameterError(
        f"{source} has {X.shape[1]} columns ({shown}); choose the value column with --column"
    )


def load_series(
    source: str, *, column: str | None = None, labels_column: str | None = None
) -> SeriesData:
    """Read DATA for an oracle: the values (1-D) and the labels if the source has them."""
    from privad import datasets

    path = Path(source).expanduser()
    suffix = path.suffix.lower()
    if path.is_dir():
        raise DataError(f"{source!r} is a folder; give a data file or a series name")
    if path.is_file() or suffix in _MATRIX_SUFFIXES:
        if suffix == ".csv" and _is_yahoo(path) and column is None and labels_column is None:
            ts = datasets.load_yahoo(path)
            return SeriesData(ts.name, ts.values, ts.labels)
        if suffix == ".npy" and path.is_file():
            try:
                arr = np.load(path, allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise DataError(f"{source!r} is not a readable .npy file: {exc}") from None
            if labels_column is not None:
                raise ParameterError("--labels-column does not apply to a .npy file")
            if arr.ndim == 1 or (arr.ndim == 2 and arr.shape[1] == 1):
                if arr.dtype.kind not in "biuf":
                    raise DataError(f"{source!r} must hold numbers, got dtype {arr.dtype}")
                return SeriesData(path.stem, arr.reshape(-1).astype(np.float64), None)
            raise DataError(
                f"{source!r} holds an array of shape {arr.shape}; the oracle needs "
                "a vector of values"
            )
        options: dict[str, Any] = {}
        if suffix in (".csv", ".parquet", ".pq"):
            options = {"label": labels_column}
            if column is not None:
                options["columns"] = [column]
        elif suffix == ".npz":
            options = {"key": column, "label": labels_column}
        ds = datasets.load(path, **options)
        values = _one_column(ds, column, repr(source))
        return SeriesData(ds.name, values, ds.y)
    if column is not None or labels_column is not None:
        raise ParameterError("--column and --labels-column apply to data files only")
    loaded = datasets.load(source)
    if isinstance(loaded, datasets.TimeSeries):
        return SeriesData(loaded.name, loaded.values, loaded.labels)
    return SeriesData(loaded.name, _one_column(loaded, None, repr(source)), loaded.y)


def resolve_thresholds(
    data: SeriesData,
    t_low: str | None,
    t_high: str | None,
    derive: bool,
    labels_column: str | None,
) -> tuple[float, float, str]:
    """(t_ℓ, t_h, how): from ``--t-low/--t-high``, or derived from the labels (section 6.1)."""
    from privad.cli._options import parse_float
    from privad.datasets import single_anomaly_thresholds

    given = (t_low is not None, t_high is not None)
    if any(given):
        if not all(given):
            raise ParameterError("--t-low and --t-high go together")
        if derive:
            raise ParameterError("give either --t-low/--t-high or --derive-thresholds, not both")
        lo = parse_float(t_low, "--t-low", strict=True, what="a finite number > 0")
        hi = parse_float(t_high, "--t-high", strict=True, what="a finite number > t_low")
        if not hi > lo:
            raise ParameterError(f"--t-high must be > --t-low (eq. 1), got {t_high} <= {t_low}")
        return lo, hi, "given (--t-low/--t-high)"
    if not (derive or labels_column is not None):
        raise ParameterError(
            "the thresholds are needed: give --t-low L --t-high H (public knowledge), or "
            "--derive-thresholds to compute them from the labels (section 6.1; not private)"
        )
    if data.labels is None:
        raise ParameterError(
            f"--derive-thresholds needs labels, and {data.name!r} has none: give "
            "--labels-column COL, or --t-low/--t-high"
        )
    th = single_anomaly_thresholds(data.values, data.labels)
    how = (
        f"derived from the labels (section 6.1; reads the data, not private): anomaly at "
        f"index {th.anomaly_index}, threshold ratio {th.threshold_ratio:.4g}"
    )
    return th.t_low, th.t_high, how


# --------------------------------------------------------------------------------------------
# Halting rules
# --------------------------------------------------------------------------------------------


def parse_halting(specs: list[str] | None, budget: float, *, linear: bool = True) -> Any:
    """``--halting`` values → a :class:`~privad.search.HaltingRule` (any of them stops).

    ``budget`` (only b), ``posterior[:ALPHA]`` (τ = 1(max f > α), default α = 0.5),
    ``log-odds:DELTA`` (eq. 25), ``ben-or-hassidim`` (α = (24 ln n)^(-1/2)),
    ``max-queries:N``. The budget b always applies: as the rule Tε ≤ b when ``linear``,
    else (an (ε, δ) budget, ``--delta``) through the ledger, which stops the search tightly.
    Default: ``posterior:0.5`` (section 6).
    """
    from privad.cli._options import parse_float, parse_int
    from privad.search import (
        DEFAULT_MAX_QUERIES,
        AnyOf,
        BenOrHassidim,
        LogOddsThreshold,
        MaxQueries,
        PosteriorThreshold,
        PrivacyBudget,
    )

    rules: list[Any] = []
    for spec in specs or ["posterior:0.5"]:
        name, _, arg = str(spec).strip().lower().partition(":")
        if name == "budget" and not arg:
            rules.append(PrivacyBudget(budget) if linear else MaxQueries(DEFAULT_MAX_QUERIES))
        elif name in ("posterior", "alpha"):
            alpha = (
                0.5
                if not arg
                else parse_float(
                    arg,
                    "--halting posterior:ALPHA",
                    strict=True,
                    maximum=1.0,
                    what="α in (0, 1), e.g. posterior:0.9",
                )
            )
            if alpha >= 1.0:
                raise ParameterError(f"--halting posterior:ALPHA needs α < 1, got {arg!r}")
            rules.append(PosteriorThreshold(alpha))
        elif name == "log-odds" and arg:
            delta = parse_float(
                arg,
                "--halting log-odds:DELTA",
                strict=True,
                maximum=1.0,
                what="δ in (0, 1), e.g. log-odds:0.05",
            )
            if delta >= 1.0:
                raise ParameterError(f"--halting log-odds:DELTA needs δ < 1, got {arg!r}")
            rules.append(LogOddsThreshold(delta))
        elif name in ("ben-or-hassidim", "boh") and not arg:
            rules.append(BenOrHassidim())
        elif name == "max-queries" and arg:
            rules.append(
                MaxQueries(
                    parse_int(arg, "--halting max-queries:N", minimum=1, what="an integer >= 1")
                )
            )
        else:
            raise ParameterError(
                f"--halting must be budget, posterior[:ALPHA], log-odds:DELTA, ben-or-hassidim "
                f"or max-queries:N, got {spec!r}"
            )
    if linear and not any(isinstance(r, PrivacyBudget) for r in rules):
        rules.append(PrivacyBudget(budget))
    return rules[0] if len(rules) == 1 else AnyOf(*rules)


# --------------------------------------------------------------------------------------------
# privad search run
# --------------------------------------------------------------------------------------------


def _write_posterior(out: Path, posterior: np.ndarray) -> None:
    from privad.io import atomic_write

    with atomic_write(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "posterior"])
        writer.writerows((i, repr(float(p))) for i, p in enumerate(posterior))


def _open_ledger(
    path: str, scope: str, notion: str, budget: float, delta: float | None
) -> tuple[Any, str | None]:
    from privad.accounting import Ledger, NoBudgetError

    book = Ledger(Path(path).expanduser(), create=True)
    try:
        book.budget(scope, notion)
        return book, None
    except NoBudgetError:
        book.set_budget(scope, notion, budget, delta=delta)
        kind = "" if delta is None else f", δ {delta:g}"
        return book, f"created the {notion} budget of scope {scope!r}: total ε {budget:g}{kind}"
    except BaseException:
        book.close()
        raise


@search_app.command("run")
def run(
    oracle: str = typer.Option(
        ...,
        "--oracle",
        metavar="URL|DATA",
        help="An oracle server (http://host:port, see 'privad serve oracle') or a local data "
        "file / series name. " + DATA_HELP,
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        metavar="SECRET",
        envvar="PRIVAD_ORACLE_TOKEN",
        help="The token for the oracle server (default: $PRIVAD_ORACLE_TOKEN).",
    ),
    epsilon: str | None = typer.Option(
        None,
        "--epsilon",
        metavar="E",
        help="ε per query, > 0. Required with local data; a server fixes its own ε (if given, "
        "it must match).",
    ),
    budget: str | None = typer.Option(
        None,
        "--budget",
        metavar="B",
        help="Required. The privacy budget b: stop when (T + 1)ε > b, so Tε <= b (with "
        "--delta: when one more answer would not fit (b, δ) composed tightly).",
    ),
    delta: str | None = DELTA_OPTION,
    kind: str | None = typer.Option(
        None,
        "--kind",
        metavar="K",
        help=KIND_HELP + " A server fixes its own (if given, it must match).",
    ),
    halting: list[str] | None = HALTING_OPTION,
    top: str = typer.Option(
        "4", "--top", metavar="K", help="|S|: how many of the most probable items to list (4)."
    ),
    selection: str = typer.Option(
        "fixed",
        "--selection",
        metavar="S",
        help="fixed (default: median prefixes of one random order, section 4.1) or fresh (a "
        "new random order per query, Algorithm 1 verbatim; sends n integers per query to a "
        "server).",
    ),
    seed: str | None = typer.Option(
        None,
        "--seed",
        metavar="S",
        help="Seed (an integer >= 0) of the searcher's random order and, with local data, of "
        "the oracle's noise (tests only: anyone who knows it can remove the noise). Default: "
        "OS entropy.",
    ),
    out: str | None = typer.Option(
        None,
        "--out",
        metavar="FILE",
        help="Write the posterior f_T as CSV (item,posterior), atomically.",
    ),
    column: str | None = COLUMN_OPTION,
    labels_column: str | None = LABELS_OPTION,
    derive_thresholds: bool = DERIVE_OPTION,
    t_low: str | None = T_LOW_OPTION,
    t_high: str | None = T_HIGH_OPTION,
    ledger: str | None = typer.Option(
        None,
        "--ledger",
        metavar="PATH",
        help="Charge each query (ε, before it is answered) to this ledger file, in --scope: "
        "with local data the oracle records its answers there (the search stops when the "
        "scope's budget has no query left); with a server, this is the searcher's own account "
        "beside the server's (a refused spend halts the search). The scope's budget is "
        "created with total b if it has none.",
    ),
    scope: str | None = typer.Option(
        None,
        "--scope",
        metavar="NAME",
        help="The ledger scope (default: search/<data name> or search/<server host:port>).",
    ),
    timeout: str = typer.Option(
        "60", "--timeout", metavar="S", help="Seconds per request to the oracle server."
    ),
    ca_cert: str | None = typer.Option(
        None, "--ca-cert", metavar="FILE", help="CA bundle to verify an https oracle server."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Search for the anomaly with noisy group queries (Algorithm 1) and summarise."""
    from privad.accounting import ANOMALY_RESTRICTED_DP
    from privad.accounting.exact import to_fraction
    from privad.cli._options import (
        check_output_path,
        existing_file,
        parse_choice,
        parse_float,
        parse_int,
        parse_scope,
        parse_seed,
    )
    from privad.search import DEFAULT_MAX_QUERIES, SELECTIONS, search

    # 1. every option, before anything is read or sent
    remote = oracle.strip().lower().startswith(("http://", "https://"))
    if budget is None:
        raise ParameterError("--budget is required: the privacy budget b (e.g. --budget 50)")
    b = parse_float(budget, "--budget", strict=True, what="a finite number > 0 (e.g. 50)")
    eps = (
        None
        if epsilon is None
        else parse_float(epsilon, "--epsilon", strict=True, what="a finite number > 0 (e.g. 1)")
    )
    kind_v = None if kind is None else parse_kind(kind)
    delta_v = parse_delta(delta)
    rule = parse_halting(halting, b, linear=delta_v is None)
    top_k = parse_int(top, "--top", minimum=1, what="an integer >= 1")
    sel = parse_choice(selection, "--selection", SELECTIONS)
    seed_v = parse_seed(seed)
    timeout_v = parse_float(timeout, "--timeout", strict=True, what="seconds > 0")
    scope = parse_scope(scope)
    out_path = None if out is None else check_output_path(out, "--out")
    if ledger is not None:
        check_output_path(ledger, "--ledger", "store")
    if out_path is not None:
        if (
            not remote
            and Path(oracle).expanduser().exists()
            and out_path.resolve() == Path(oracle).expanduser().resolve()
        ):
            raise ParameterError(f"--out {out!r} would overwrite the input {oracle!r}")
    if remote:
        for flag, value in (
            ("--column", column),
            ("--labels-column", labels_column),
            ("--t-low", t_low),
            ("--t-high", t_high),
        ):
            if value is not None:
                raise ParameterError(f"{flag} applies to local data; the server holds the data")
        if derive_thresholds:
            raise ParameterError(
                "--derive-thresholds applies to local data; the server holds the data"
            )
        if token is None or not token.strip():
            raise ParameterError(
                "--token is required for an oracle server (or set $PRIVAD_ORACLE_TOKEN)"
            )
    elif eps is None:
        raise ParameterError("--epsilon is required with local data: ε per query (e.g. 1)")

    # 2. the oracle
    from privad.noise import as_randomness

    search_rng, oracle_rng = as_randomness(seed_v).spawn(2) if seed_v is not None else (None, None)
    notes: list[str] = []
    max_queries = DEFAULT_MAX_QUERIES
    server_cap = False
    oracle_left = None
    with contextlib.ExitStack() as stack:
        if remote:
            from privad.services.remote_oracle import RemoteOracle

            orc = stack.enter_context(
                RemoteOracle(
                    oracle,
                    token.strip(),
                    timeout=timeout_v,  # type: ignore[union-attr]
                    verify=existing_file(ca_cert, "--ca-cert") or True,
                )
            )
            info = orc.description
            if eps is not None and abs(orc.epsilon - eps) > 1e-12 * max(1.0, eps):
                raise ParameterError(
                    f"the oracle answers with ε = {orc.epsilon:g} per query; "
                    f"--epsilon {epsilon} differs (leave it out)"
                )
            if kind_v is not None and info.get("kind") != kind_v:
                raise ParameterError(
                    f"the oracle is of kind {info.get('kind')!r}; --kind "
                    f"{kind} differs (leave it out)"
                )
            left = int(orc.last_budget.get("queries_left", DEFAULT_MAX_QUERIES))
            if left <= 0:
                raise BudgetExceededError(
                    f"the oracle at {orc.base_url} has no budget left for a query of ε = "
                    f"{orc.epsilon:g} (scope {orc.last_budget.get('scope')!r}: total "
                    f"{orc.last_budget.get('total')}, spent {orc.last_budget.get('spent')})"
                )
            if left < max_queries:
                max_queries, server_cap = left, True
            where = f"server {orc.base_url}"
            default_scope = f"search/{orc.base_url.split('://', 1)[-1]}"
            data_text = f"{orc.n_items} items held by the server"
            thresholds = (
                f"t_l = {float(info.get('t_low', 'nan')):.6g}, "
                f"t_h = {float(info.get('t_high', 'nan')):.6g} (the server's)"
            )
            above: set[int] = set()
        else:
            from privad.search import make_oracle

            data = load_series(oracle, column=column, labels_column=labels_column)
            lo, hi, how = resolve_thresholds(data, t_low, t_high, derive_thresholds, labels_column)
            where = f"local data {oracle}"
            default_scope = f"search/{data.name}"
            data_text = f"{data.name}: {data.values.size} values"
            thresholds = f"t_l = {lo:.6g}, t_h = {hi:.6g}, {how}"
            above = set(np.flatnonzero(data.values >= hi).tolist())
        scope_v = scope if scope is not None else default_scope
        book = None
        if ledger is not None or delta_v is not None:  # (b, δ): an account always keeps it
            book, note = _open_ledger(
                ledger or ":memory:", scope_v, ANOMALY_RESTRICTED_DP, b, delta_v
            )
            stack.callback(book.close)
            if note:
                notes.append(note)
        if not remote:
            # the local oracle records every answer: in the --ledger file, else in its own
            # in-memory ledger (the searcher's side then needs no second account)
            orc = make_oracle(
                kind_v or "laplace",
                data.values,
                lo,
                hi,
                eps,  # type: ignore[arg-type]
                rng=oracle_rng,
                ledger=book,
                scope=scope_v,
            )
            # the search stops before the oracle's ledger would refuse (tightly, under an
            # (ε, δ) budget): reason "oracle-budget"
            oracle_left = orc.answers_left()

        # 3. the search (a remote oracle's answers are charged to --ledger on this side)
        with StepProgress(quiet=as_json) as progress:
            task = progress.add_task(
                "searching: queries answered",
                total=min(max_queries, int(to_fraction(b) // to_fraction(orc.epsilon))),
            )
            result = search(
                orc,
                halting=rule,
                top_k=min(top_k, orc.n_items),
                selection=sel,
                max_queries=max_queries,
                ledger=book if remote else None,
                scope=scope_v if book and remote else None,
                label=f"privad search run against {where}",
                rng=search_rng,
                progress=lambda t, _p: progress.update(task, completed=t),
            )
        if out_path is not None:
            _write_posterior(out_path, result.posterior)
        account = None if book is None else book.budget(scope_v, ANOMALY_RESTRICTED_DP)
        recorded = None
        if not remote and book is None:  # the oracle's own ledger has no budget: add it up
            recorded = sum(s.epsilon for s in orc.ledger.history(scope_v))  # type: ignore[union-attr]
        server_budget = orc.last_budget if remote else None

    # 4. summary (released answers and public parameters only)
    halted: list[str] = []
    for name in dict.fromkeys(result.halted_by):
        if name == "max-queries" and server_cap:
            halted.append(f"oracle budget ({max_queries} queries were left at the server)")
        elif name == "oracle-budget":
            halted.append(f"ledger ({oracle_left} queries were left in scope {scope_v!r})")
        else:
            halted.append(name)
    post = result.posterior
    top_items = [
        {
            "rank": rank,
            "item": int(item),
            "posterior": float(post[item]),
            "above_t_high": int(item) in above,
        }
        for rank, item in enumerate(result.top, 1)
    ]
    rows = [
        ("oracle", f"{where}: {orc.model.kind}, ε = {orc.epsilon:g} per query"),
        ("data", data_text),
        ("thresholds", thresholds),
        ("queries T", str(result.n_queries)),
        (
            "privacy spent Tε",
            f"{result.epsilon_spent:g} (anomaly-restricted DP: ε-DP for every "
            f"non-anomalous record, sequential composition of "
            f"{result.n_queries} answers)",
        ),
        ("halted by", ", ".join(halted) or "—"),
        ("max posterior", f"{result.max_probability:.4g}"),
    ]
    if server_budget:
        rows.append(
            (
                "oracle budget",
                f"scope {server_budget.get('scope')!r}: remaining ε "
                f"{server_budget.get('remaining'):g} of {server_budget.get('total'):g}",
            )
        )
    ledger_account = None
    if account is not None:
        where_ledger = ledger or "an in-memory ledger"
        ledger_account = {
            "scope": scope_v,
            "ledger": ledger,
            "total": float(account.total),
            "spent": float(account.spent),
            "remaining": float(account.remaining),
            "delta": None if account.delta is None else float(account.delta),
            "delta_spent": float(account.delta_spent or 0),
        }
        if account.delta is None:
            rows.append(
                (
                    "ledger",
                    f"scope {scope_v!r} in {where_ledger}: remaining ε "
                    f"{float(account.remaining):g}",
                )
            )
        else:
            rows.append(
                (
                    "ledger",
                    f"scope {scope_v!r} in {where_ledger}: spent (ε "
                    f"{float(account.spent):g}, δ {float(account.delta_spent):g}) of (ε "
                    f"{float(account.total):g}, δ {float(account.delta):g}), composed "
                    "tightly",
                )
            )
    if recorded is not None:
        rows.append(
            (
                "ledger",
                f"the oracle's own in-memory ledger, scope {scope_v!r}: "
                f"{result.n_queries} answers recorded, ε {recorded:g}",
            )
        )
    if out_path is not None:
        rows.append(("posterior", str(out_path)))
    payload = {
        "oracle": where,
        "kind": orc.model.kind,
        "epsilon_per_query": orc.epsilon,
        "data": data_text,
        "thresholds": thresholds,
        "queries": result.n_queries,
        "epsilon_spent": result.epsilon_spent,
        "halted_by": halted,
        "max_posterior": result.max_probability,
        "top": top_items,
        "scope": scope_v,
        "ledger_account": ledger_account,
        "recorded_epsilon": recorded,
        "oracle_budget": server_budget or None,
        "posterior_file": out_path,
        "notes": notes,
    }

    def render(console: Any) -> None:
        console.print(summary_table("privad search run", rows))
        tops = Table(title=f"S: the {result.top.size} most probable items", title_justify="left")
        tops.add_column("rank", justify="right")
        tops.add_column("item", justify="right")
        tops.add_column("posterior", justify="right")
        for row in top_items:
            mark = " (x >= t_h in the local data)" if row["above_t_high"] else ""
            tops.add_row(str(row["rank"]), f"{row['item']}{mark}", f"{row['posterior']:.4g}")
        console.print(tops)
        for note in notes:
            console.print(note, markup=False)

    emit(payload, as_json, render)


KINDS = {
    "laplace": "laplace",
    "binarized": "binarized",
    "rr": "randomized-response",
    "randomized-response": "randomized-response",
}
"""--kind values and the oracle names (:data:`privad.search.ORACLE_KINDS`) they stand for."""


def parse_kind(text: str) -> str:
    """``--kind`` as an oracle name (``rr`` is randomized response)."""
    value = str(text).strip().lower()
    if value not in KINDS:
        raise ParameterError(
            f"--kind must be one of laplace, binarized, rr (randomized response), got {text!r}"
        )
    return KINDS[value]


@search_app.command("plan")
def plan(
    epsilon: str | None = typer.Option(
        None,
        "--epsilon",
        metavar="E",
        help="Required. ε per query.",
    ),
    t_low: str | None = typer.Option(None, "--t-low", metavar="L", help="Required. t_ℓ > 0."),
    t_high: str | None = typer.Option(None, "--t-high", metavar="H", help="Required. t_h > t_ℓ."),
    items: str | None = typer.Option(
        None,
        "--items",
        metavar="N",
        help="Required. Items searched.",
    ),
    error: str = typer.Option("0.1", "--error", metavar="P", help="Target search error δ_s."),
    delta: str | None = typer.Option(
        None,
        "--delta",
        metavar="D",
        help="Privacy δ: also show the optimal composition.",
    ),
    as_json: bool = JSON_OPTION,
    figure: str | None = typer.Option(None, "--figure", metavar="PATH", help="Draw the cost."),
) -> None:
    """Plan a search before running it: threshold ratio, answer error (eq. 24), the bound on
    the expected number of queries (eq. 26) and their total cost. Spends nothing."""
    from privad.cli._plan import search_plan

    search_plan(epsilon, t_low, t_high, items, error, delta, as_json, figure)


def register(app: typer.Typer) -> None:
    """Add the ``search`` group to the ``privad`` command."""
    app.add_typer(search_app, name="search")
