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

import json
import sys
from typing import Any

import numpy as np
import typer

from privad.cli._data import EXCLUDE_OPTION
from privad.cli._options import (
    COUNT,
    POSITIVE,
    SCHEDULER_OPTION,
    WORKER_TIMEOUT_OPTION,
    WORKERS_OPTION,
    Choice,
    Integer,
    ca_cert_option,
    check_output_path,
    cluster_of,
    existing_file,
    required_secret,
    retries_option,
    scope_option,
    timeout_option,
)
from privad.cli._render import (
    JSON_OPTION,
    StepProgress,
    emit,
    jsonable,
    print_json,
    print_lines,
)
from privad.cli._sensor_options import (
    ANALYST_OPTION,
    CENTRE_CHOICES,
    COLUMNS_OPTION,
    EPSILON_OPTION,
    EXCHANGE_CHOICES,
    GS_OPTION,
    P_O_OPTION,
    RS_OPTION,
    SCALING_OPTION,
    SEED_OPTION,
    TOKEN_OPTION,
    UNIT_OPTION,
    format_choice,
    given_sensitivities,
    guarantee_options,
    p_o_option,
    scaling_option,
    warn_seed,
)
from privad.errors import ParameterError

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


@sensor_app.command("send")
def send(
    data: str = typer.Argument(
        ...,
        metavar="DATA",
        help="CSV of measurements (one record per line, header optional), or - to read a stream "
        "from standard input; windows are sent as soon as they are complete.",
    ),
    analyst: str = ANALYST_OPTION,
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
    epsilon: float = EPSILON_OPTION,
    window: int = typer.Option(
        ...,
        "--window",
        metavar="N",
        help="Records per window.",
        parser=Integer("a number of records >= 1", minimum=1).bind("--window"),
    ),
    history: str | None = typer.Option(
        None,
        "--history",
        metavar="FILE",
        help="Historical data (CSV, same columns) for the relaxed sensitivities (eq. 1). "
        "Without it and without --relaxed-sensitivity the first window is used (as in the "
        "paper's experiments; a deployment should use past data).",
    ),
    p_o: float = P_O_OPTION,
    relaxed_sensitivity: Any = RS_OPTION,
    scaling: str = SCALING_OPTION,
    d_diff_centres: str = typer.Option(
        "separate",
        "--d-diff-centres",
        metavar="C",
        help="Step 1c (reconstruction): separate (default: c for T, c' for T') or original.",
        parser=Choice(CENTRE_CHOICES).bind("--d-diff-centres"),
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    first_window: int = typer.Option(
        0,
        "--first-window",
        metavar="W",
        help="Number of the first new window (default 0, or after the last window the journal "
        "sent to these servers with this token).",
        parser=Integer("an integer >= 0", minimum=0).bind("--first-window"),
    ),
    partial: str = typer.Option(
        "send",
        "--partial",
        metavar="P",
        help="A last window with fewer than N records: send (default) or drop.",
        parser=Choice(("send", "drop")).bind("--partial"),
    ),
    seed: int | None = SEED_OPTION,
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
        parser=Choice(EXCHANGE_CHOICES).bind("--exchange"),
    ),
    cs_epsilon: float | None = typer.Option(
        None,
        "--cs-epsilon",
        metavar="E",
        help="ε_CS of the d_diff noise, in the guarantee unit. Default: the perturbation's ε "
        "in that unit.",
        parser=POSITIVE.bind("--cs-epsilon"),
    ),
    tp_epsilon: float | None = typer.Option(
        None,
        "--tp-epsilon",
        metavar="E",
        help="ε_TP: Laplace noise on the one value d_TP the analyst learns, in the guarantee "
        "unit (protected exchange only). d_TP alone is then min(ε_TP, ε_CS)-DP; the "
        "analyst's whole view stays bounded by ε_T + ε_CS, and nothing more is charged. "
        "Default: none.",
        parser=POSITIVE.bind("--tp-epsilon"),
    ),
    scope: str = typer.Option(
        "relaxed-sensor", "--scope", metavar="SCOPE", help="Base name of the ledger scopes."
    ),
    budget: float | None = typer.Option(
        None,
        "--budget",
        metavar="E",
        help="Total ε of each window's scope when it has no budget yet. Default: one "
        "release (the window's ε), so the same records are never released twice unless "
        "forced.",
        parser=POSITIVE.bind("--budget"),
    ),
    global_sensitivity: Any = GS_OPTION,
    guarantee_unit: str = UNIT_OPTION,
    timeout: float = timeout_option(),
    retries: int = retries_option(
        "Extra attempts after a connection failure or 502/503/504 (uploads are "
        "idempotent, so a retry never stores twice)."
    ),
    ca_cert: str | None = ca_cert_option("server"),
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
    from privad.services.sensor_client import SendStarted, SkippedRows, send_file

    for value, option in ((cs_epsilon, "--cs-epsilon"), (tp_epsilon, "--tp-epsilon")):
        if exchange == "unprotected" and value is not None:
            raise ParameterError(
                f"{option} applies to --exchange protected only (the "
                "unprotected exchange sends d_diff and d_TP exact)"
            )
    if journal is not None:
        check_output_path(journal, "--journal", "store")
    secret = required_secret(token, "--token", "PRIVAD_SENSOR_TOKEN")
    rs = given_sensitivities(relaxed_sensitivity, history, columns, exclude, p_o)
    gs = guarantee_options(global_sensitivity, ledger, "each window's")
    source = sys.stdin if data == "-" else existing_file(data, "DATA")
    warn_seed(seed)

    def say(event: Any) -> None:
        if quiet or as_json:
            return
        if isinstance(event, SendStarted):
            typer.echo("each window: " + "; ".join(event.views.lines()))
            typer.echo(
                f"charged to scope {event.scope}/rows-DIGEST in {event.ledger}; "
                f"journal {event.journal}"
            )
        elif isinstance(event, SkippedRows):
            typer.echo(
                f"rows {event.first_row}..{event.first_row + event.n - 1}: already released "
                f"(window(s) {_span(event.windows)}); skipped (--force-rerelease to release "
                "them again, charged)"
            )
        else:
            typer.echo(_window_line(event))

    r = send_file(
        source,  # type: ignore[arg-type]
        analyst=analyst,
        correction=correction,
        token=secret,
        correction_token=correction_token,
        epsilon=epsilon,
        window=window,
        relaxed_sensitivity=rs,
        p_o=p_o,
        global_sensitivity=gs,
        scaling=scaling,
        d_diff_centres=d_diff_centres,
        guarantee_unit=guarantee_unit,
        exchange=exchange,
        cs_epsilon=cs_epsilon,
        tp_epsilon=tp_epsilon,
        columns=columns,
        exclude=exclude,
        first_window=first_window,
        partial=partial == "send",
        on_released="force" if force_rerelease else "skip",
        close=not no_close,
        ledger=ledger,
        journal=journal,
        scope=scope,
        budget=budget,
        timeout=timeout,
        retries=retries,
        verify=ca_cert or True,
        rng=seed,
        on_event=say,
    )
    numbers = [w.window for w in r.sent]
    summary = (
        f"sent {len(numbers)} window(s), {r.records} record(s)"
        f"{f' (windows {_span(numbers)})' if numbers else ''}; "
        f"{r.skipped_records} record(s) already released, skipped"
    )
    payload = {
        "windows": [
            {
                "window": w.window,
                "records": w.n,
                "status": w.status,
                "presumed_outliers": w.n_presumed,
                "outliers": w.outliers,
                "spend": w.spend_id,
                "digest": w.digest,
            }
            for w in r.windows
        ],
        "skipped": [
            {"first_row": k.first_row, "records": k.n, "released_as": list(k.windows)}
            for k in r.skipped
        ],
        "records": r.records,
        "skipped_records": r.skipped_records,
        "counts": {
            status: sum(w.status == status for w in r.windows)
            for status in ("sent", "forced", "resumed", "closed")
        },
    }
    emit(payload, as_json, lambda console: None if quiet else console.print(summary, markup=False))


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


@sensor_app.command("result")
def result(
    analyst: str = ANALYST_OPTION,
    token: str | None = TOKEN_OPTION,
    window: int | None = typer.Option(
        None,
        "--window",
        metavar="W",
        help="One window. Default: every closed window.",
        parser=Integer("an integer >= 0", minimum=0).bind("--window"),
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
    timeout: float = timeout_option(),
    ca_cert: str | None = ca_cert_option("analyst"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print the corrected outlier indices of this sensor's closed windows."""
    from privad.io import atomic_write
    from privad.services.clients import AnalystClient

    fmt = format_choice(output_format, as_json, ("csv", "json"))
    w = window
    target = None if out is None else check_output_path(out, "--out")
    client = AnalystClient(
        analyst,
        required_secret(token, "--token", "PRIVAD_SENSOR_TOKEN"),
        timeout=timeout,
        verify=ca_cert or True,
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
    analyst: str = ANALYST_OPTION,
    token: str | None = TOKEN_OPTION,
    window: int = typer.Option(
        ...,
        "--window",
        metavar="W",
        help="The window to close.",
        parser=Integer("an integer >= 0", minimum=0).bind("--window"),
    ),
    timeout: float = timeout_option(),
    ca_cert: str | None = ca_cert_option("analyst"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Close an uploaded window again (after a failed close): detection and correction.

    Idempotent: a closed window answers its stored result.
    """
    from privad.services.clients import AnalystClient

    w = window
    client = AnalystClient(
        analyst,
        required_secret(token, "--token", "PRIVAD_SENSOR_TOKEN"),
        timeout=timeout,
        verify=ca_cert or True,
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
    p_o: float = p_o_option("Outlier percentage of the history, in (0, 100)."),
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    scaling: str = scaling_option(
        "Step 1a: relaxed-sensitivity (default), isotropic or none (as for send)."
    ),
    min_samples: int | None = typer.Option(
        None,
        "--min-samples",
        metavar="M",
        help="DBSCAN minPts. Default: 0.5% of the history's records (at least 2); use a "
        "history of one window's size.",
        parser=COUNT.bind("--min-samples"),
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

    p_o_v = p_o
    fmt = format_choice(output_format, as_json, ("text", "json", "env"))
    scaling_v, ms = scaling, min_samples
    H = read_csv_array(
        existing_file(history, "HISTORY"),
        columns=columns,
        exclude=exclude,
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
    epsilon: float = EPSILON_OPTION,
    history: str | None = typer.Option(
        None,
        "--history",
        metavar="FILE",
        help="Historical data (CSV, same columns) for the relaxed sensitivities (eq. 1).",
    ),
    p_o: float = P_O_OPTION,
    relaxed_sensitivity: Any = RS_OPTION,
    scaling: str = SCALING_OPTION,
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    scheduler: str | None = SCHEDULER_OPTION,
    workers: int | None = WORKERS_OPTION,
    worker_timeout: float | None = WORKER_TIMEOUT_OPTION,
    seed: int | None = SEED_OPTION,
    ledger: str | None = typer.Option(
        None,
        "--ledger",
        metavar="PATH",
        help="Privacy ledger charged (once per partition, in scope SCOPE/rows-DIGEST keyed by "
        "the content digest of the partition's records) before the output appears. Default: "
        "$PRIVAD_LEDGER or ~/.privad/ledger.sqlite.",
    ),
    scope: str | None = scope_option("Base name of the ledger scopes. Default: relaxed-sensor."),
    budget: float | None = typer.Option(
        None,
        "--budget",
        metavar="E",
        help="Total ε of each partition's scope when it has no budget yet. Default: one "
        "release, so the same records (in a copy of the archive too) are never perturbed "
        "and released twice.",
        parser=POSITIVE.bind("--budget"),
    ),
    global_sensitivity: Any = GS_OPTION,
    guarantee_unit: str = UNIT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Perturb a large archive at the source, partition by partition, on a Dask cluster.

    Steps 1a–1b of the sensor on every partition, each with its own noise stream
    (privad.relaxed.perturb_archive); the output is what the analyst would receive (𝒯').
    """
    from privad.relaxed import perturb_archive

    cluster = cluster_of(scheduler, workers, worker_timeout)
    gs = guarantee_options(global_sensitivity, ledger, "the archive's")
    rs = given_sensitivities(relaxed_sensitivity, history, columns, exclude, p_o)
    if rs is None:
        raise ParameterError(
            "give --relaxed-sensitivity or --history: the noise scale must "
            "not be estimated from the archive it protects"
        )
    base = scope if scope is not None else "relaxed-sensor"
    check_output_path(out, "--out", "folder")
    warn_seed(seed)
    with StepProgress(quiet=as_json) as progress:
        r = perturb_archive(
            archive,
            out,
            epsilon=epsilon,
            relaxed_sensitivity=rs,
            global_sensitivity=gs,
            scaling=scaling,
            guarantee_unit=guarantee_unit,
            columns=columns,
            exclude=exclude,
            ledger=ledger,
            scope=base,
            budget=budget,
            scheduler=cluster.scheduler,
            workers=cluster.workers,
            worker_timeout=cluster.worker_timeout,
            rng=seed,
            step=progress.step,
        )
    scales = ", ".join(f"{v:.6g}" for v in r.noise_scale.tolist())
    lines = [
        f"perturbed {r.records} record(s) x {len(r.columns)} column(s) in "
        f"{r.partitions} partition(s), each with its own noise stream",
        f"divisors (step 1a): {', '.join(f'{v:.6g}' for v in r.divisors.tolist())}; "
        f"Laplace scale per column (scaled space): {scales}",
        f"charged once per partition: {r.guarantee.summary()} to scopes "
        f"{base}/rows-DIGEST (the content "
        f"digest of each partition's records) in {r.ledger}",
        f"output: {r.output}",
    ]
    payload = {
        "records": r.records,
        "columns": list(r.columns),
        "partitions": r.partitions,
        "divisors": r.divisors,
        "noise_scale": r.noise_scale,
        "guarantee": r.guarantee.to_dict(),
        "scopes": list(r.scopes),
        "ledger": r.ledger,
        "output": r.output,
    }
    emit(payload, as_json, lambda console: print_lines(console, lines))


def register(app: typer.Typer) -> None:
    """Add the ``sensor`` group to the ``privad`` command."""
    app.add_typer(sensor_app, name="sensor")
