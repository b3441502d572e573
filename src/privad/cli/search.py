"""``privad search``: the DP noisy binary search (Bittner, Sarwate, Wright) from the command line.

``privad search run`` searches for the anomaly against an oracle server (``privad serve
oracle``, through :class:`privad.services.remote_oracle.RemoteOracle`) or a local oracle over
a data file, with one call to :func:`privad.search.ledger_search` (Algorithm 1, every answer
charged before it is released), and prints its summary (``--json``: the library's
:meth:`~privad.search.LedgerSearch.summary`). ``privad search plan`` gives the closed forms
of eqs. (24) and (26). Every option is parsed before anything is read, sent or written; a
mistake is one line and exit status 2. The oracle's options are shared with ``privad serve
oracle`` (:mod:`privad.cli._search_options`, :mod:`privad.cli._data`).
"""

from __future__ import annotations

from typing import Any

import typer

from privad.cli._options import (
    COUNT,
    DELTA_OPTION,
    Choice,
    Integer,
    Number,
    ca_cert_option,
    check_output_path,
    plan_delta_option,
    scope_option,
    seed_option,
    timeout_option,
)
from privad.cli._render import JSON_OPTION, emit, summary_table
from privad.cli._search_options import (
    COLUMN_OPTION,
    DATA_HELP,
    DERIVE_OPTION,
    HALTING_OPTION,
    KIND_HELP,
    LABELS_OPTION,
    T_HIGH_OPTION,
    T_LOW_OPTION,
    kind_option,
    thresholds_options,
)
from privad.cli._tables import rows_table

__all__ = ["register", "search_app"]


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


def _selections() -> tuple[str, ...]:
    """The searcher's selection rules (``--selection``), read only when the option is given."""
    from privad.search.selection import SELECTIONS

    return SELECTIONS


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
    epsilon: float | None = Number("a finite number > 0 (e.g. 1)", strict=True).option(
        None,
        "--epsilon",
        "E",
        "ε per query, > 0. Required with local data; a server fixes its own ε (if given, "
        "it must match).",
    ),
    budget: float = Number("a finite number > 0 (e.g. 50)", strict=True).option(
        ...,
        "--budget",
        "B",
        "Required. The privacy budget b: stop when (T + 1)ε > b, so Tε <= b (with "
        "--delta: when one more answer would not fit (b, δ) composed tightly).",
    ),
    delta: float | None = DELTA_OPTION,
    kind: str | None = kind_option(
        None, KIND_HELP + " A server fixes its own (if given, it must match)."
    ),
    halting: list[str] | None = HALTING_OPTION,
    top: int = COUNT.option(
        4, "--top", "K", "|S|: how many of the most probable items to list (4)."
    ),
    selection: str = Choice(_selections).option(
        "fixed",
        "--selection",
        "S",
        "fixed (default: median prefixes of one random order, section 4.1) or fresh (a "
        "new random order per query, Algorithm 1 verbatim; sends n integers per query to a "
        "server).",
    ),
    seed: int | None = seed_option(
        "Seed (an integer >= 0) of the searcher's random order and, with local data, of "
        "the oracle's noise (tests only: anyone who knows it can remove the noise). Default: "
        "OS entropy."
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
    t_low: float | None = T_LOW_OPTION,
    t_high: float | None = T_HIGH_OPTION,
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
    scope: str | None = scope_option(
        "The ledger scope (default: search/<data name> or search/<server host:port>)."
    ),
    timeout: float = timeout_option("Seconds per request to the oracle server."),
    ca_cert: str | None = ca_cert_option("oracle server"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Search for the anomaly with noisy group queries (Algorithm 1) and summarise."""
    from privad.search import halting_rule
    from privad.services.search_jobs import LocalData, run_search

    # every option, before anything is read or sent (the rest: run_search)
    rule = halting_rule(halting, budget, linear=delta is None)
    out_path = None if out is None else check_output_path(out, "--out")
    if ledger is not None:
        check_output_path(ledger, "--ledger", "store")
    from privad.cli._progress import StepProgress  # Rich's progress: only here

    with StepProgress(quiet=as_json) as progress:
        done = run_search(
            oracle,
            epsilon=epsilon,
            kind=kind,
            local=LocalData(column, labels_column, derive_thresholds, t_low, t_high),
            token=token,
            timeout=timeout,
            ca_cert=ca_cert,
            seed=seed,
            scope=scope,
            out=out_path,
            budget=budget,
            halting=rule,
            delta=delta,
            ledger=ledger,
            top_k=top,
            selection=selection,
            progress=lambda answered, planned: progress.report(
                "searching: queries answered", answered, planned
            ),
        )

    def render(console: Any) -> None:
        console.print(summary_table("privad search run", done.rows()))
        title = f"S: the {len(done.summary['top'])} most probable items"
        columns = ("rank", "item", "posterior")
        console.print(rows_table(title, columns, done.top_rows(), right=columns))
        for note in done.summary["notes"]:
            console.print(note, markup=False)

    emit(done.to_dict(), as_json, render)


_PLAN_THRESHOLDS = thresholds_options(True, "Required. t_ℓ > 0.", "Required. t_h > t_ℓ.")


@search_app.command("plan")
def plan(
    epsilon: float = Number("a finite number > 0 (e.g. 0.1)", strict=True).option(
        ..., "--epsilon", "E", "Required. ε per query."
    ),
    t_low: float = _PLAN_THRESHOLDS[0],
    t_high: float = _PLAN_THRESHOLDS[1],
    items: int = Integer("an integer >= 2", minimum=2).option(
        ..., "--items", "N", "Required. Items searched."
    ),
    error: float = Number("a number in (0, 1)", strict=True, maximum=1.0, below=True).option(
        0.1, "--error", "P", "Target search error δ_s."
    ),
    delta: float | None = plan_delta_option(),
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
