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

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

from privad.cli._data import load_series
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
from privad.cli._render import JSON_OPTION, StepProgress, emit, summary_table
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
    resolve_thresholds,
    thresholds_options,
)
from privad.errors import ParameterError

__all__ = ["register", "search_app"]


def _selections() -> tuple[str, ...]:
    from privad.search.selection import SELECTIONS

    return SELECTIONS


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

# --------------------------------------------------------------------------------------------
# privad search run
# --------------------------------------------------------------------------------------------


def _check_target(
    oracle: str,
    remote: bool,
    out_path: Path | None,
    token: str | None,
    eps: float | None,
    local_options: dict[str, Any],
) -> None:
    """The options that depend on the oracle being a server or local data."""
    source = Path(oracle).expanduser()
    if out_path is not None and not remote and source.exists():
        if out_path.resolve() == source.resolve():
            raise ParameterError(f"--out {str(out_path)!r} would overwrite the input {oracle!r}")
    if not remote:
        if eps is None:
            raise ParameterError("--epsilon is required with local data: ε per query (e.g. 1)")
        return
    for flag, value in local_options.items():
        if value is not None:
            raise ParameterError(f"{flag} applies to local data; the server holds the data")
    if token is None or not token.strip():
        raise ParameterError(
            "--token is required for an oracle server (or set $PRIVAD_ORACLE_TOKEN)"
        )


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
    from privad.noise import as_randomness
    from privad.search import halting_rule, ledger_search, make_oracle

    # 1. every option, before anything is read or sent
    remote = oracle.strip().lower().startswith(("http://", "https://"))
    rule = halting_rule(halting, budget, linear=delta is None)
    out_path = None if out is None else check_output_path(out, "--out")
    if ledger is not None:
        check_output_path(ledger, "--ledger", "store")
    local = {
        "--column": column,
        "--labels-column": labels_column,
        "--t-low": t_low,
        "--t-high": t_high,
        "--derive-thresholds": derive_thresholds or None,
    }
    _check_target(oracle, remote, out_path, token, epsilon, local)

    # 2. the oracle and the search, charged (privad.search.session)
    search_rng, oracle_rng = as_randomness(seed).spawn(2) if seed is not None else (None, None)
    with contextlib.ExitStack() as stack:
        items, above, make, orc = None, np.zeros(0, dtype=bool), None, None
        if remote:
            from privad.services.remote_oracle import RemoteOracle

            orc = stack.enter_context(
                RemoteOracle(oracle, token.strip(), timeout=timeout, verify=ca_cert or True)  # type: ignore[union-attr]
            )
            where, info = f"server {orc.base_url}", orc.description
            default_scope = f"search/{orc.base_url.split('://', 1)[-1]}"
            data_text = f"{orc.n_items} items held by the server"
            thresholds = (
                f"t_l = {float(info.get('t_low', 'nan')):.6g}, "
                f"t_h = {float(info.get('t_high', 'nan')):.6g} (the server's)"
            )
        else:
            data = load_series(oracle, column=column, labels_column=labels_column)
            held = resolve_thresholds(data, t_low, t_high, derive_thresholds, labels_column)
            where, default_scope = f"local data {oracle}", f"search/{data.name}"
            data_text = f"{data.name}: {data.values.size} values" + (
                "" if held.source_index is None else f", {held.values.size} held by the oracle"
            )
            thresholds = f"t_l = {held.t_low:.6g}, t_h = {held.t_high:.6g}, {held.how}"
            items, above = held.source_index, held.values >= held.t_high

            def make(book: Any, scope: str) -> Any:
                return make_oracle(
                    kind or "laplace",
                    held.values,
                    held.t_low,
                    held.t_high,
                    epsilon,
                    rng=oracle_rng,
                    ledger=book,
                    scope=scope,
                )

        scope_v = scope if scope is not None else default_scope
        with StepProgress(quiet=as_json) as progress:
            task = None

            def advance(answered: int, planned: int) -> None:
                nonlocal task
                if task is None:
                    task = progress.add_task("searching: queries answered", total=planned)
                progress.update(task, completed=answered)

            done = ledger_search(
                orc,
                make_oracle=make,
                budget=budget,
                scope=scope_v,
                halting=rule,
                delta=delta,
                ledger=ledger,
                epsilon=epsilon,
                kind=kind,
                top_k=top,
                selection=selection,
                label=f"privad search run against {where}",
                rng=search_rng,
                progress=advance,
            )
        if out_path is not None:
            done.write_posterior(out_path, items)
        summary = done.summary(items)

    # 3. summary (released answers and public parameters only)
    for row, i in zip(summary["top"], done.result.top, strict=True):
        row["above_t_high"] = bool(i < above.size and above[i])
    payload = {
        "oracle": where,
        "data": data_text,
        "thresholds": thresholds,
        **summary,
        "posterior_file": out_path,
    }
    emit(payload, as_json, lambda console: _render(console, payload))


def _render(console: Any, payload: dict[str, Any]) -> None:
    p, account = payload, payload["ledger_account"]
    rows = [
        ("oracle", f"{p['oracle']}: {p['kind']}, ε = {p['epsilon_per_query']:g} per query"),
        ("data", p["data"]),
        ("thresholds", p["thresholds"]),
        ("queries T", str(p["queries"])),
        (
            "privacy spent Tε",
            f"{p['epsilon_spent']:g} (anomaly-restricted DP: ε-DP for every "
            f"non-anomalous record, sequential composition of {p['queries']} answers)",
        ),
        ("halted by", ", ".join(p["halted_by"]) or "—"),
        ("max posterior", f"{p['max_posterior']:.4g}"),
    ]
    if server := p["oracle_budget"]:
        rows.append(
            (
                "oracle budget",
                f"scope {server.get('scope')!r}: remaining ε "
                f"{server.get('remaining'):g} of {server.get('total'):g}",
            )
        )
    if account is not None:
        text = f"scope {p['scope']!r} in {account['ledger'] or 'an in-memory ledger'}: "
        if account["delta"] is None:
            text += f"remaining ε {account['remaining']:g}"
        else:
            text += (
                f"spent (ε {account['spent']:g}, δ {account['delta_spent']:g}) of "
                f"(ε {account['total']:g}, δ {account['delta']:g}), composed tightly"
            )
        rows.append(("ledger", text))
    if p["recorded_epsilon"] is not None:
        rows.append(
            (
                "ledger",
                f"the oracle's own in-memory ledger, scope {p['scope']!r}: "
                f"{p['queries']} answers recorded, ε {p['recorded_epsilon']:g}",
            )
        )
    if p["posterior_file"] is not None:
        rows.append(("posterior", str(p["posterior_file"])))
    console.print(summary_table("privad search run", rows))
    tops = Table(title=f"S: the {len(p['top'])} most probable items", title_justify="left")
    for name in ("rank", "item", "posterior"):
        tops.add_column(name, justify="right")
    for row in p["top"]:
        mark = " (x >= t_h in the local data)" if row["above_t_high"] else ""
        tops.add_row(str(row["rank"]), f"{row['item']}{mark}", f"{row['posterior']:.4g}")
    console.print(tops)
    for note in p["notes"]:
        console.print(note, markup=False)


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
