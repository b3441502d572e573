"""``privad sensor``: the sensor S of the relaxed-DP scheme, talking to the two servers.

* ``privad sensor send DATA --analyst URL --correction URL --token T --epsilon E --window N``
  reads DATA (a CSV file, or ``-`` for a stream on standard input) window by window,
  perturbs each window locally with :class:`privad.relaxed.Sensor` (steps 1a–1c), uploads
  d_diff (with record indices) to the correction server and 𝒯' to the analyst, then closes
  the window at the analyst, which runs detection and correction and answers with the
  corrected outliers. With ``--ledger`` each window's guarantee is charged before anything
  of the window leaves the process.
* ``privad sensor result --analyst URL --token T [--window W]``: the corrected outlier
  indices of closed windows (CSV ``window,index`` or JSON).
* ``privad sensor close --analyst URL --token T --window W``: close an uploaded window
  again, e.g. after the correction server was unreachable.
* ``privad sensor calibrate HISTORY --p-o P``: the public parameters fixed from historical
  data (relaxed sensitivities, DBSCAN's eps and minPts, w_O) for configuring the servers.
* ``privad sensor perturb ARCHIVE --epsilon E --relaxed-sensitivity RS --out DIR``: perturb
  a large archive (Parquet folder or CSV files) at the source on a Dask cluster
  (``--scheduler ADDR`` or ``--workers N``), each partition with its own noise stream
  (:mod:`privad.relaxed.distributed`); the output folder (one Parquet part per partition)
  appears complete or not at all, after the archive's one ledger spend.

Every mistake (bad option, unreadable file, a server refusing a request) is a
:class:`~privad.errors.PrivadError`: ``privad.cli.main`` prints it on one line and exits 2.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import typer

from privad.cli._data import EXCLUDE_OPTION
from privad.cli._options import (
    SCHEDULER_OPTION,
    WORKER_TIMEOUT_OPTION,
    WORKERS_OPTION,
    check_output_path,
    existing_file,
    parse_choice,
    parse_cluster,
    parse_columns,
    parse_float,
    parse_floats,
    parse_int,
    parse_optional_int,
    parse_scope,
    parse_seed,
)
from privad.cli._render import (
    JSON_OPTION,
    StepProgress,
    emit,
    jsonable,
    print_json,
    print_lines,
    warn,
)
from privad.errors import DataError, ParameterError

__all__ = ["register", "sensor_app"]

sensor_app = typer.Typer(
    name="sensor",
    help=(
        "The sensor of the relaxed-DP scheme: perturb measurements locally and send them to "
        "the analyst and the correction server.\n\nNon-outliers get ε-DP per value, outliers "
        "ε' = ε·GS/RS (relaxed sensitivity). See docs/relaxed.md."
    ),
    no_args_is_help=True,
    add_completion=False,
)

SCALING_CHOICES = ("relaxed-sensitivity", "isotropic", "none")
CENTRE_CHOICES = ("separate", "original")
UNIT_CHOICES = ("record", "column")
EXCHANGE_CHOICES = ("protected", "unprotected")
COLUMNS_HELP = (
    "Columns to use, by header name or 0-based position; repeat or separate with commas. "
    "Default: every column."
)
COLUMNS_OPTION: Any = typer.Option(None, "--columns", metavar="COLS", help=COLUMNS_HELP)
# Options shared by 'send' and 'perturb' (the sensor's perturbation and its guarantee).
P_O_OPTION: Any = typer.Option(
    "10", "--p-o", metavar="P", help="Outlier percentage for eq. (1), in (0, 100)."
)
RS_OPTION: Any = typer.Option(
    None,
    "--relaxed-sensitivity",
    metavar="RS",
    help="RS_j per column (comma-separated, measurement units) instead of --history.",
)
SCALING_OPTION: Any = typer.Option(
    "relaxed-sensitivity",
    "--scaling",
    metavar="S",
    help="Step 1a (reconstruction): relaxed-sensitivity (default), isotropic or none.",
)
SEED_OPTION: Any = typer.Option(
    None,
    "--seed",
    metavar="S",
    help="Reproducible noise, FOR TESTS ONLY: whoever knows the seed can remove the noise.",
)
GS_OPTION: Any = typer.Option(
    None,
    "--global-sensitivity",
    metavar="GS",
    help="Domain width GS_j per column (comma-separated, or one for all) for the outliers' "
    "ε' = ε·GS/RS.",
)
UNIT_OPTION: Any = typer.Option(
    "record",
    "--guarantee-unit",
    metavar="U",
    help="Neighbouring records differ in a whole record (record, default: d·ε) or one "
    "value (column: ε).",
)


def _parse_p_o(text: str) -> float:
    return parse_float(
        text, "--p-o", strict=True, maximum=99.999999, what="a percentage in (0, 100), e.g. 10"
    )


def _guarantee_options(
    global_sensitivity: str | None, budget: str | None, ledger: str | None, what: str
) -> tuple[Any, float | None]:
    """``--global-sensitivity`` (one value: every column) and ``--budget``. Every release is
    charged to a ledger, and a guarantee for outliers needs a domain width, so the former
    is required."""
    gs: Any = None
    if global_sensitivity is not None:
        gs = parse_floats(global_sensitivity, "--global-sensitivity", what="domain widths > 0")
        gs = gs[0] if len(gs) == 1 else gs  # one value: the same width for every column
    budget_v = (
        None
        if budget is None
        else parse_float(budget, "--budget", strict=True, what="a finite number > 0")
    )
    if gs is None:
        raise ParameterError(
            f"--global-sensitivity is required: {what} release is charged to a privacy "
            "ledger (--ledger, default $PRIVAD_LEDGER or ~/.privad/ledger.sqlite), and without "
            "a domain width outliers have no finite ε', so its guarantee cannot be stated"
        )
    if ledger is not None:
        check_output_path(ledger, "--ledger", "store")
    return gs, budget_v


def _optional_epsilon(text: str | None, option: str) -> float | None:
    return (
        None if text is None else parse_float(text, option, strict=True, what="a finite number > 0")
    )


def _relaxed_sensitivities(
    relaxed_sensitivity: str | None,
    history: str | None,
    columns: list[str] | None,
    exclude: list[str] | None,
    p_o: float,
) -> Any:
    """RS from ``--relaxed-sensitivity`` or from ``--history`` (eq. 1); None without both."""
    from privad.relaxed import relaxed_sensitivity as estimate_rs
    from privad.services.streams import read_csv_array

    if relaxed_sensitivity is not None and history is not None:
        raise ParameterError("give --relaxed-sensitivity or --history, not both")
    if relaxed_sensitivity is not None:
        return parse_floats(
            relaxed_sensitivity, "--relaxed-sensitivity", what="relaxed sensitivities > 0"
        )
    if history is not None:
        return estimate_rs(
            read_csv_array(
                existing_file(history, "--history"),
                columns=columns,
                exclude=exclude,
                source=history,
            ),
            p_o,
        )
    return None


def _warn_seed(seed: int | None) -> None:
    if seed is not None:
        warn("--seed makes the noise reproducible; use it for tests only, never for a real release")


def _token(value: str | None, option: str, env: str) -> str:
    if value is None or not value.strip():
        raise ParameterError(f"{option} is required (or set ${env})")
    return value.strip()


@sensor_app.command("send")
def send(
    data: str = typer.Argument(
        ...,
        metavar="DATA",
        help="CSV of measurements (one record per line, header optional), or - to read a stream "
        "from standard input; windows are sent as soon as they are complete.",
    ),
    analyst: str = typer.Option(..., "--analyst", metavar="URL", help="The analyst server."),
    correction: str = typer.Option(
        ..., "--correction", metavar="URL", help="The correction server."
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        metavar="SECRET",
        envvar="PRIVAD_SENSOR_TOKEN",
        help="This sensor's token (its name at the servers is the sensor id). Default: "
        "$PRIVAD_SENSOR_TOKEN.",
    ),
    correction_token: str | None = typer.Option(
        None,
        "--correction-token",
        metavar="SECRET",
        help="This sensor's token at the correction server, if it differs from --token.",
    ),
    epsilon: str = typer.Option(..., "--epsilon", metavar="E", help="ε > 0 per column value."),
    window: str = typer.Option(..., "--window", metavar="N", help="Records per window."),
    history: str | None = typer.Option(
        None,
        "--history",
        metavar="FILE",
        help="Historical data (CSV, same columns) for the relaxed sensitivities (eq. 1). "
        "Without it and without --relaxed-sensitivity the first window is used (as in the "
        "paper's experiments; a deployment should use past data).",
    ),
    p_o: str = P_O_OPTION,
    relaxed_sensitivity: str | None = RS_OPTION,
    scaling: str = SCALING_OPTION,
    d_diff_centres: str = typer.Option(
        "separate",
        "--d-diff-centres",
        metavar="C",
        help="Step 1c (reconstruction): separate (default: c for T, c' for T') or original.",
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    first_window: str = typer.Option(
        "0",
        "--first-window",
        metavar="W",
        help="Number of the first new window (default 0, or after the last window the journal "
        "sent to these servers with this token).",
    ),
    partial: str = typer.Option(
        "send",
        "--partial",
        metavar="P",
        help="A last window with fewer than N records: send (default) or drop.",
    ),
    seed: str | None = SEED_OPTION,
    ledger: str | None = typer.Option(
        None,
        "--ledger",
        metavar="PATH",
        help="Privacy ledger (SQLite) charged with each window's release before it is sent, "
        "in scope SCOPE/rows-DIGEST (the content digest of the window's records). Default: "
        "$PRIVAD_LEDGER or ~/.privad/ledger.sqlite.",
    ),
    journal: str | None = typer.Option(
        None,
        "--journal",
        metavar="PATH",
        help="The sensor's record of released rows (SQLite, keyed by row, so whatever "
        "--window): a rerun skips rows already released and completes an interrupted window "
        "with its journalled messages. Default: $PRIVAD_SENSOR_JOURNAL or "
        "~/.privad/sensor-journal.sqlite.",
    ),
    force_rerelease: bool = typer.Option(
        False,
        "--force-rerelease",
        help="Release records that were released before again, with new noise (charged "
        "again: their protection adds up).",
    ),
    exchange: str = typer.Option(
        "protected",
        "--exchange",
        metavar="X",
        help="protected (default: d_diff with Laplace noise under ε_CS, so the correction "
        "server's view and the corrected output have a guarantee) or unprotected (the "
        "paper's exchange: no guarantee for them).",
    ),
    cs_epsilon: str | None = typer.Option(
        None,
        "--cs-epsilon",
        metavar="E",
        help="ε_CS of the d_diff noise, in the guarantee unit. Default: the perturbation's ε "
        "in that unit.",
    ),
    tp_epsilon: str | None = typer.Option(
        None,
        "--tp-epsilon",
        metavar="E",
        help="ε_TP: Laplace noise on the one value d_TP the analyst learns, in the guarantee "
        "unit (protected exchange only). d_TP alone is then min(ε_TP, ε_CS)-DP; the "
        "analyst's whole view stays bounded by ε_T + ε_CS, and nothing more is charged. "
        "Default: none.",
    ),
    scope: str = typer.Option(
        "relaxed-sensor", "--scope", metavar="SCOPE", help="Base name of the ledger scopes."
    ),
    budget: str | None = typer.Option(
        None,
        "--budget",
        metavar="E",
        help="Total ε of each window's scope when it has no budget yet. Default: one "
        "release (the window's ε), so the same records are never released twice unless "
        "forced.",
    ),
    global_sensitivity: str | None = GS_OPTION,
    guarantee_unit: str = UNIT_OPTION,
    timeout: str = typer.Option("60", "--timeout", metavar="S", help="Seconds per request."),
    retries: str = typer.Option(
        "3",
        "--retries",
        metavar="N",
        help="Extra attempts after a connection failure or 502/503/504 (uploads are "
        "idempotent, so a retry never stores twice).",
    ),
    ca_cert: str | None = typer.Option(
        None, "--ca-cert", metavar="FILE", help="CA bundle to verify https servers."
    ),
    no_close: bool = typer.Option(
        False, "--no-close", help="Only upload; do not close the windows (no detection yet)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No line per window."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Perturb DATA window by window and send it to the analyst and the correction server.

    A line per window on standard output (none with --quiet); with --json, one JSON
    document at the end instead, with every window's corrected outliers.
    """
    from privad.noise import Randomness
    from privad.relaxed import Sensor
    from privad.relaxed import relaxed_sensitivity as estimate_rs
    from privad.services.clients import (
        AlreadyReleased,
        AnalystClient,
        CorrectionClient,
        SensorUploader,
        SkippedRows,
    )
    from privad.services.errors import Conflict
    from privad.services.streams import read_csv_rows

    eps = parse_float(epsilon, "--epsilon", strict=True, what="a finite number > 0")
    size = parse_int(window, "--window", minimum=1, what="a number of records >= 1")
    first = parse_int(first_window, "--first-window", minimum=0, what="an integer >= 0")
    p_o_v = _parse_p_o(p_o)
    cols, excl = parse_columns(columns), parse_columns(exclude, "--exclude")
    scaling_v = parse_choice(scaling, "--scaling", SCALING_CHOICES)
    centres = parse_choice(d_diff_centres, "--d-diff-centres", CENTRE_CHOICES)
    unit = parse_choice(guarantee_unit, "--guarantee-unit", UNIT_CHOICES)
    keep_partial = parse_choice(partial, "--partial", ("send", "drop")) == "send"
    timeout_v = parse_float(timeout, "--timeout", strict=True, what="seconds > 0")
    retries_v = parse_int(retries, "--retries", minimum=0, what="an integer >= 0")
    seed_v = parse_seed(seed)
    secret = _token(token, "--token", "PRIVAD_SENSOR_TOKEN")
    gs, budget_v = _guarantee_options(global_sensitivity, budget, ledger, "each window's")
    if journal is not None:
        check_output_path(journal, "--journal", "store")
    exchange_v = parse_choice(exchange, "--exchange", EXCHANGE_CHOICES)
    cs_eps = _optional_epsilon(cs_epsilon, "--cs-epsilon")
    tp_eps = _optional_epsilon(tp_epsilon, "--tp-epsilon")
    for value, option in ((cs_eps, "--cs-epsilon"), (tp_eps, "--tp-epsilon")):
        if exchange_v == "unprotected" and value is not None:
            raise ParameterError(
                f"{option} applies to --exchange protected only (the "
                "unprotected exchange sends d_diff and d_TP exact)"
            )
    verify = existing_file(ca_cert, "--ca-cert") or True

    rs = _relaxed_sensitivities(relaxed_sensitivity, history, cols, excl, p_o_v)
    _warn_seed(seed_v)

    def say(text: str) -> None:
        if not (quiet or as_json):
            typer.echo(text)

    stream: Any
    if data == "-":
        stream, label = sys.stdin, "<stdin>"
    else:
        path = existing_file(data, "DATA")
        try:
            stream = open(path, newline="", encoding="utf-8")
        except OSError as exc:
            raise DataError(f"cannot read {data!r}: {exc.strerror}") from None
        label = data
    a_client = c_client = None
    try:
        a_client = AnalystClient(
            analyst, secret, timeout=timeout_v, retries=retries_v, verify=verify
        )
        c_client = CorrectionClient(
            correction,
            correction_token or secret,
            timeout=timeout_v,
            retries=retries_v,
            verify=verify,
        )
        # fail before any privacy is spent: both servers reachable, both tokens accepted
        a_client.windows()
        c_client.windows()
        rows = read_csv_rows(stream, columns=cols, exclude=excl, source=label)
        head = list(itertools.islice(rows, size))
        if not head:
            raise DataError(f"{label}: no records to send")
        if rs is None:
            warn(
                "no --history: the relaxed sensitivities are estimated from the first "
                f"window ({len(head)} records), so the noise scale depends on the data it "
                "protects (as in the paper's experiments)"
            )
            rs = estimate_rs(np.array(head), p_o_v)
        sensor = Sensor(
            eps,
            rs,
            scaling=scaling_v,
            d_diff_centres=centres,  # type: ignore[arg-type]
            global_sensitivity=gs,
            guarantee_unit=unit,  # type: ignore[arg-type]
            exchange=exchange_v,
            cs_epsilon=cs_eps,  # type: ignore[arg-type]
            tp_epsilon=tp_eps,
            rng=None if seed_v is None else Randomness(seed_v),
        )
        from privad.accounting import Ledger, default_ledger_path
        from privad.relaxed.journal import ReleaseJournal

        views = sensor.views()
        g = views.release
        book = Ledger(
            ledger if ledger is not None else default_ledger_path(),
            create=True,
            default_budget=budget_v if budget_v is not None else g.epsilon,
        )
        try:
            book_journal = ReleaseJournal(journal)
        except BaseException:
            book.close()
            raise
        reports: list[Any] = []
        skipped: list[Any] = []
        n_records = 0
        sent_windows: list[int] = []
        try:
            uploader = SensorUploader(
                sensor,
                a_client,
                c_client,
                ledger=book,
                scope=scope,
                close=not no_close,
                journal=book_journal,
            )
            say("each window: " + "; ".join(views.lines()))
            say(f"charged to scope {scope}/rows-DIGEST in {book.path}; journal {book_journal.path}")
            elsewhere = [
                r.window
                for r in book_journal.releases()
                if r.destination != uploader.destination and r.status in ("pending", "partial")
            ]
            if elsewhere:
                warn(
                    f"{len(elsewhere)} interrupted release(s) in the journal were for other "
                    "servers or another token; their records count as released (rerun "
                    "against those servers to complete them)"
                )
            events = uploader.send_stream(
                itertools.chain(head, rows),
                size,
                first=first,
                partial=keep_partial,
                source=label if data == "-" else str(Path(label).resolve()),
                on_released="force" if force_rerelease else "skip",
            )
            while True:
                try:
                    report = next(events, None)
                except Conflict as exc:
                    if isinstance(exc, AlreadyReleased):
                        raise
                    raise Conflict(
                        f"{exc}; {_next_hint(a_client, c_client, book_journal)}"
                    ) from None
                if report is None:
                    break
                if isinstance(report, SkippedRows):
                    skipped.append(report)
                    say(
                        f"rows {report.first_row}..{report.first_row + report.n - 1}: already "
                        f"released (window(s) {_span(report.windows)}); skipped "
                        "(--force-rerelease to release them again, charged)"
                    )
                    continue
                reports.append(report)
                if report.status != "closed":  # "closed": its records were counted before
                    n_records += report.n
                    sent_windows.append(report.window)
                say(_window_line(report))
        finally:
            book.close()
            book_journal.close()
        n_skipped = sum(r.n for r in skipped)
        span = f" (windows {_span(sent_windows)})" if sent_windows else ""
        summary = (
            f"sent {len(sent_windows)} window(s), {n_records} record(s){span}; "
            f"{n_skipped} record(s) already released, skipped"
        )
        payload = {
            "windows": [
                {
                    "window": r.window,
                    "records": r.n,
                    "status": r.status,
                    "presumed_outliers": r.n_presumed,
                    "outliers": r.outliers,
                    "spend": r.spend_id,
                    "digest": r.digest,
                }
                for r in reports
            ],
            "skipped": [
                {"first_row": r.first_row, "records": r.n, "released_as": list(r.windows)}
                for r in skipped
            ],
            "records": n_records,
            "skipped_records": n_skipped,
            "counts": {
                status: sum(r.status == status for r in reports)
                for status in ("sent", "forced", "resumed", "closed")
            },
        }
        emit(
            payload,
            as_json,
            lambda console: None if quiet else console.print(summary, markup=False),
        )
    finally:
        for client in (a_client, c_client):
            if client is not None:
                client.close()
        if stream is not sys.stdin:
            stream.close()


def _span(numbers: Any) -> str:
    """``"3"`` or ``"3..7"`` (smallest..largest)."""
    lo, hi = min(numbers), max(numbers)
    return str(lo) if lo == hi else f"{lo}..{hi}"


def _window_line(report: Any) -> str:
    """The line ``privad sensor send`` prints for one window's report."""
    how = {
        "sent": "sent",
        "forced": "sent (forced re-release, charged again)",
        "resumed": "sent (completed from the journal: an identical copy)",
        "closed": "closed (uploaded before an interruption)",
    }[report.status]
    if report.outliers is None:
        return f"window {report.window}: {report.n} record(s) {how.replace('sent', 'uploaded', 1)}"
    return (
        f"window {report.window}: {report.n} record(s) {how}; {report.n_presumed} presumed "
        f"outlier(s) before correction, {report.outliers.size} corrected outlier(s)"
    )


def _next_hint(a_client: Any, c_client: Any, journal: Any) -> str:
    """What to do after a 409: the servers hold a window number this journal did not
    send."""
    try:
        seen = [w["window"] for w in a_client.windows()] + [w["window"] for w in c_client.windows()]
    except Exception:  # only a hint
        seen = []
    nxt = (
        f"--first-window {max(seen) + 1} (the next free number)"
        if seen
        else "--first-window N (a number the servers do not hold)"
    )
    return (
        f"the servers hold this window number of this sensor, and the journal "
        f"{journal.path} did not send it: if another journal sent these records, rerun "
        "with that --journal (sending them again would release them twice); if they are "
        f"new records, give {nxt}"
    )


@sensor_app.command("result")
def result(
    analyst: str = typer.Option(..., "--analyst", metavar="URL", help="The analyst server."),
    token: str | None = typer.Option(
        None,
        "--token",
        metavar="SECRET",
        envvar="PRIVAD_SENSOR_TOKEN",
        help="This sensor's token. Default: $PRIVAD_SENSOR_TOKEN.",
    ),
    window: str | None = typer.Option(
        None, "--window", metavar="W", help="One window. Default: every closed window."
    ),
    output_format: str = typer.Option(
        "csv",
        "--format",
        metavar="F",
        help="csv (default: 'window,index' lines, indices within the window) or json (full "
        "results; the same as --json).",
    ),
    out: str | None = typer.Option(
        None, "--out", metavar="FILE", help="Write to FILE (atomically) instead of stdout."
    ),
    timeout: str = typer.Option("60", "--timeout", metavar="S", help="Seconds per request."),
    ca_cert: str | None = typer.Option(
        None, "--ca-cert", metavar="FILE", help="CA bundle to verify an https analyst."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print the corrected outlier indices of this sensor's closed windows."""
    from privad.io import atomic_write
    from privad.services.clients import AnalystClient

    fmt = _format(output_format, as_json, ("csv", "json"))
    w = parse_optional_int(window, "--window", 0)
    target = None if out is None else check_output_path(out, "--out")
    client = AnalystClient(
        analyst,
        _token(token, "--token", "PRIVAD_SENSOR_TOKEN"),
        timeout=parse_float(timeout, "--timeout", strict=True, what="seconds > 0"),
        verify=existing_file(ca_cert, "--ca-cert") or True,
    )
    with client:
        if w is not None:
            results = [client.outliers(w)]
        else:
            results = [
                client.outliers(x["window"]) for x in client.windows() if x["status"] == "closed"
            ]
    if fmt == "json":
        text = json.dumps(jsonable(results if w is None else results[0]), indent=1) + "\n"
    else:
        lines = ["window,index"]
        lines += [f"{r['window']},{i}" for r in results for i in r["outliers"]]
        text = "\n".join(lines) + "\n"
    if target is None:
        sys.stdout.write(text)
    else:
        with atomic_write(target) as handle:
            handle.write(text)


@sensor_app.command("close")
def close(
    analyst: str = typer.Option(..., "--analyst", metavar="URL", help="The analyst server."),
    token: str | None = typer.Option(
        None,
        "--token",
        metavar="SECRET",
        envvar="PRIVAD_SENSOR_TOKEN",
        help="This sensor's token. Default: $PRIVAD_SENSOR_TOKEN.",
    ),
    window: str = typer.Option(..., "--window", metavar="W", help="The window to close."),
    timeout: str = typer.Option("60", "--timeout", metavar="S", help="Seconds per request."),
    ca_cert: str | None = typer.Option(
        None, "--ca-cert", metavar="FILE", help="CA bundle to verify an https analyst."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Close an uploaded window again (after a failed close): detection and correction.

    Idempotent: a closed window answers its stored result.
    """
    from privad.services.clients import AnalystClient

    w = parse_int(window, "--window", minimum=0, what="an integer >= 0")
    client = AnalystClient(
        analyst,
        _token(token, "--token", "PRIVAD_SENSOR_TOKEN"),
        timeout=parse_float(timeout, "--timeout", strict=True, what="seconds > 0"),
        verify=existing_file(ca_cert, "--ca-cert") or True,
    )
    with client:
        r = client.close_window(w)
    emit(
        r,
        as_json,
        lambda console: console.print(
            f"window {w}: {r['n']} record(s); {r['n_presumed_outliers']} presumed outlier(s) "
            f"before correction, {len(r['outliers'])} corrected outlier(s)",
            markup=False,
        ),
    )


@sensor_app.command("calibrate")
def calibrate(
    history: str = typer.Argument(..., metavar="HISTORY", help="Historical data (CSV)."),
    p_o: str = typer.Option(
        "10", "--p-o", metavar="P", help="Outlier percentage of the history, in (0, 100)."
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    scaling: str = typer.Option(
        "relaxed-sensitivity",
        "--scaling",
        metavar="S",
        help="Step 1a: relaxed-sensitivity (default), isotropic or none (as for send).",
    ),
    min_samples: str | None = typer.Option(
        None,
        "--min-samples",
        metavar="M",
        help="DBSCAN minPts. Default: 0.5% of the history's records (at least 2); use a "
        "history of one window's size.",
    ),
    output_format: str = typer.Option(
        "text",
        "--format",
        metavar="F",
        help="text (default), json (the same as --json), or env (NAME=VALUE lines for a "
        "shell's eval).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Fix the public parameters from historical data: RS, DBSCAN eps/minPts, w_O.

    Not private: it reads the historical data in the clear, as the paper's parameters are
    fixed from past data before the protocol runs.
    """
    from privad.relaxed import (
        DBSCANDetector,
        column_divisors,
        dbscan_parameters,
        estimate_outlier_layer_width,
        relaxed_sensitivity,
    )
    from privad.services.streams import read_csv_array

    p_o_v = _parse_p_o(p_o)
    fmt = _format(output_format, as_json, ("text", "json", "env"))
    scaling_v = parse_choice(scaling, "--scaling", SCALING_CHOICES)
    ms = parse_optional_int(min_samples, "--min-samples", 1)
    H = read_csv_array(
        existing_file(history, "HISTORY"),
        columns=parse_columns(columns),
        exclude=parse_columns(exclude, "--exclude"),
        source=history,
    )
    rs = relaxed_sensitivity(H, p_o_v)
    divisors = column_divisors(scaling_v, rs)
    Hs = H / divisors
    eps, ms_v = dbscan_parameters(Hs, p_o_v, min_samples=ms)
    outliers = DBSCANDetector(eps, ms_v)(Hs)
    w_o = estimate_outlier_layer_width(Hs, outliers)
    params = {
        "n": int(H.shape[0]),
        "p_o": p_o_v,
        "scaling": scaling_v,
        "relaxed_sensitivity": rs.tolist(),
        "divisors": np.asarray(divisors).tolist(),
        "eps": eps,
        "min_samples": ms_v,
        "outlier_layer_width": w_o,
        "historical_outliers": int(outliers.size),
    }
    if fmt == "json":
        print_json(params)
    elif fmt == "env":
        typer.echo(f"PRIVAD_RELAXED_SENSITIVITY={','.join(repr(v) for v in rs.tolist())}")
        typer.echo(f"PRIVAD_EPS={eps!r}")
        typer.echo(f"PRIVAD_MIN_SAMPLES={ms_v}")
        typer.echo(f"PRIVAD_W_O={w_o!r}")
    else:
        rs_text = ", ".join(f"{v:.6g}" for v in rs.tolist())
        typer.echo(f"history: {params['n']} record(s), p_o = {p_o_v:g}%, scaling {scaling_v}")
        typer.echo(f"relaxed sensitivity RS (sensor --relaxed-sensitivity): {rs_text}")
        typer.echo(
            f"DBSCAN eps, minPts (analyst --eps, --min-samples): {eps!r}, {ms_v} "
            f"({outliers.size} historical outliers)"
        )
        typer.echo(f"w_O (correction --outlier-layer-width): {w_o!r}")


@sensor_app.command("perturb")
def perturb(
    archive: str = typer.Argument(
        ...,
        metavar="ARCHIVE",
        help="A sensor archive: a Parquet folder or file, or CSV files (a glob like "
        "'archive/*.csv'); each file is a partition.",
    ),
    out: str = typer.Option(
        ...,
        "--out",
        "--output",
        metavar="DIR",
        help="A new folder for the perturbed archive: one Parquet part per input partition "
        "(part-00000.parquet, ...; columns index and the perturbed columns, in the scaled "
        "space of step 1a), written by the workers, renamed into place when complete.",
    ),
    epsilon: str = typer.Option(..., "--epsilon", metavar="E", help="ε > 0 per column value."),
    history: str | None = typer.Option(
        None,
        "--history",
        metavar="FILE",
        help="Historical data (CSV, same columns) for the relaxed sensitivities (eq. 1).",
    ),
    p_o: str = P_O_OPTION,
    relaxed_sensitivity: str | None = RS_OPTION,
    scaling: str = SCALING_OPTION,
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    scheduler: str | None = SCHEDULER_OPTION,
    workers: str | None = WORKERS_OPTION,
    worker_timeout: str | None = WORKER_TIMEOUT_OPTION,
    seed: str | None = SEED_OPTION,
    ledger: str | None = typer.Option(
        None,
        "--ledger",
        metavar="PATH",
        help="Privacy ledger charged (once per partition, in scope SCOPE/rows-DIGEST keyed by "
        "the content digest of the partition's records) before the output appears. Default: "
        "$PRIVAD_LEDGER or ~/.privad/ledger.sqlite.",
    ),
    scope: str | None = typer.Option(
        None,
        "--scope",
        metavar="SCOPE",
        help="Base name of the ledger scopes. Default: relaxed-sensor.",
    ),
    budget: str | None = typer.Option(
        None,
        "--budget",
        metavar="E",
        help="Total ε of each partition's scope when it has no budget yet. Default: one "
        "release, so the same records (in a copy of the archive too) are never perturbed "
        "and released twice.",
    ),
    global_sensitivity: str | None = GS_OPTION,
    guarantee_unit: str = UNIT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Perturb a large archive at the source, partition by partition, on a Dask cluster.

    Steps 1a–1b of the sensor on every partition, each with its own noise stream
    (privad.relaxed.distributed); the output is what the analyst would receive (𝒯').
    """
    from privad.distributed import (
        check_new_folder,
        open_partitioned,
        release_folder,
        write_columns,
    )
    from privad.noise import Randomness
    from privad.relaxed import Sensor
    from privad.relaxed.distributed import perturb_partitions

    eps = parse_float(epsilon, "--epsilon", strict=True, what="a finite number > 0")
    p_o_v = _parse_p_o(p_o)
    cols, excl = parse_columns(columns), parse_columns(exclude, "--exclude")
    scaling_v = parse_choice(scaling, "--scaling", SCALING_CHOICES)
    unit = parse_choice(guarantee_unit, "--guarantee-unit", UNIT_CHOICES)
    cluster = parse_cluster(scheduler, workers, worker_timeout)
    seed_v = parse_seed(seed)
    gs, budget_v = _guarantee_options(global_sensitivity, budget, ledger, "the archive's")
    scope = parse_scope(scope)
    rs = _relaxed_sensitivities(relaxed_sensitivity, history, cols, excl, p_o_v)
    if rs is None:
        raise ParameterError(
            "give --relaxed-sensitivity or --history: the noise scale must "
            "not be estimated from the archive it protects"
        )
    source = open_partitioned(archive, columns=cols, exclude=excl)
    target = check_new_folder(out, "--out")
    rs_v = np.asarray(rs, dtype=np.float64)
    if rs_v.size == 1:  # one value for every column
        rs_v = np.full(len(source.feature_names), rs_v[0])
    sensor = Sensor(eps, rs_v, scaling=scaling_v, global_sensitivity=gs, guarantee_unit=unit)  # type: ignore[arg-type]
    if sensor.n_columns != len(source.feature_names):
        raise DataError(
            f"{archive} has {len(source.feature_names)} column(s) but "
            f"{sensor.n_columns} relaxed sensitivities were given"
        )
    _warn_seed(seed_v)
    from contextlib import ExitStack

    import dask

    from privad.accounting import Ledger, default_ledger_path
    from privad.io import rows_digest

    base = scope if scope is not None else "relaxed-sensor"
    g = sensor.guarantee()
    book = Ledger(
        ledger if ledger is not None else default_ledger_path(),
        create=True,
        default_budget=budget_v if budget_v is not None else g.epsilon,
    )
    try:
        with StepProgress(quiet=as_json) as progress, ExitStack() as stack:
            with progress.step("starting the Dask cluster"):
                stack.enter_context(cluster.client())
            with progress.step(f"reading and digesting the partitions of {archive}"):
                table = source.load()
                blocks = table.records.to_delayed().ravel()
                digests = dask.compute(*[dask.delayed(rows_digest)(b) for b in blocks])
            scopes = [f"{base}/rows-{d[:32]}" for d in digests]
            for k, sc in enumerate(scopes):  # refused before any noise is drawn
                book.check(sc, g)
                if scopes.index(sc) != k and budget_v is None:
                    raise DataError(
                        f"partitions {scopes.index(sc)} and {k} of {archive} hold "
                        "identical records: two noisy copies would release them "
                        "twice (give --budget to allow it, charged twice)"
                    )
            job = perturb_partitions(sensor, table.records, rng=Randomness(seed_v))
            with (
                progress.step(f"perturbing {table.n_partitions} partition(s) and writing {target}"),
                release_folder(target) as tmp,
                ExitStack() as spends,
            ):
                for k, (sc, d) in enumerate(zip(scopes, digests, strict=True)):
                    spends.enter_context(
                        book.reserve(
                            sc,
                            g,
                            f"relaxed-DP perturbation of partition {k} of {archive} "
                            f"({table.lengths[k]} records)",
                            {
                                "command": "privad sensor perturb",
                                "archive": archive,
                                "partition": k,
                                "n": table.lengths[k],
                                "digest": d,
                                "out": str(target),
                            },
                        )
                    )
                perturbed = {
                    name: job.perturbed[:, j] for j, name in enumerate(table.feature_names)
                }
                write_columns(tmp, perturbed, table.lengths)
                # leaving the ExitStack commits every spend before the folder is renamed
    finally:
        book.close()
    scales = ", ".join(f"{v:.6g}" for v in sensor.noise_scale.tolist())
    lines = [
        f"perturbed {table.n_records} record(s) x {sensor.n_columns} column(s) in "
        f"{table.n_partitions} partition(s), each with its own noise stream",
        f"divisors (step 1a): {', '.join(f'{v:.6g}' for v in sensor.divisors.tolist())}; "
        f"Laplace scale per column (scaled space): {scales}",
        f"charged once per partition: {g.summary()} to scopes {base}/rows-DIGEST (the content "
        f"digest of each partition's records) in {book.path}",
        f"output: {target}",
    ]
    payload = {
        "records": table.n_records,
        "columns": list(table.feature_names),
        "partitions": table.n_partitions,
        "divisors": sensor.divisors,
        "noise_scale": sensor.noise_scale,
        "guarantee": g.to_dict(),
        "scopes": scopes,
        "ledger": book.path,
        "output": target,
    }
    emit(payload, as_json, lambda console: print_lines(console, lines))


def _format(text: str, as_json: bool, choices: tuple[str, ...]) -> str:
    """``--format`` (one of ``choices``), which ``--json`` sets to json."""
    fmt = parse_choice(text, "--format", choices)
    if as_json and fmt not in ("json", choices[0]):
        raise ParameterError(f"--json and --format {fmt} contradict each other; give one")
    return "json" if as_json else fmt


def register(app: typer.Typer) -> None:
    """Add the ``sensor`` group to the ``privad`` command."""
    app.add_typer(sensor_app, name="sensor")
