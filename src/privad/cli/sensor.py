"""``privad sensor``: the sensor S of the relaxed-DP scheme (``send``, ``result``, ``close``,
``calibrate``, ``perturb``) and its options, declared once for its commands.

Each command parses its options, makes one library call and renders: ``send`` is
:func:`privad.services.sensor_client.send_file`, ``perturb`` is
:func:`privad.relaxed.perturb_archive`, ``calibrate`` is
:func:`privad.services.calibration.calibrate_file`, ``result`` is
:func:`privad.services.sensor_client.closed_outliers`. Options named as the library names its
keywords are passed on once (:func:`privad.cli._forward.forward`). Every mistake is a
:class:`~privad.errors.PrivadError`: ``privad.cli.main`` prints it on one line and exits 2.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from privad.cli._data import EXCLUDE_OPTION
from privad.cli._forward import forward
from privad.cli._options import (
    COUNT,
    POSITIVE,
    SCHEDULER_OPTION,
    WORKER_TIMEOUT_OPTION,
    WORKERS_OPTION,
    Choice,
    Integer,
    Number,
    Numbers,
    ca_cert_option,
    check_output_path,
    cluster_of,
    columns_option,
    command_group,
    existing_file,
    parse_choice,
    required_secret,
    retries_option,
    scope_option,
    seed_option,
    timeout_option,
)
from privad.cli._render import (
    JSON_OPTION,
    emit,
    print_json,
    print_lines,
    warn,
)
from privad.errors import ParameterError

__all__ = ["register", "sensor_app"]


def _opt(default: Any, name: str, metavar: str | None, help: str, parser: Any = None) -> Any:
    """One option, of the type ``parser`` (an option type of :mod:`privad.cli._options`,
    declared by its :meth:`~privad.cli._options.ParamType.option`) where one is given."""
    if parser is not None:
        return parser.option(default, name, metavar, help)
    return typer.Option(default, name, metavar=metavar, help=help)


def p_o_option(help: str = "Outlier percentage for eq. (1), in (0, 100).") -> Any:
    """``--p-o P``: the outlier percentage of eq. (1)."""
    percent = Number("a percentage in (0, 100), e.g. 10", strict=True, maximum=100.0, below=True)
    return _opt(10.0, "--p-o", "P", help, percent)


def scaling_option(
    help: str = "Step 1a (reconstruction): relaxed-sensitivity (default), isotropic or none.",
) -> Any:
    """``--scaling S``: step 1a's scaling of the columns."""
    return _opt(
        "relaxed-sensitivity",
        "--scaling",
        "S",
        help,
        Choice(("relaxed-sensitivity", "isotropic", "none")),
    )


COLUMNS_OPTION: Any = columns_option(
    "Columns to use, by header name or 0-based position; repeat or separate with commas. "
    "Default: every column."
)
RS_OPTION: Any = _opt(
    None,
    "--relaxed-sensitivity",
    "RS",
    "RS_j per column (comma-separated, measurement units) instead of --history.",
    Numbers("relaxed sensitivities > 0"),
)
SEED_OPTION: Any = seed_option(
    "Reproducible noise, FOR TESTS ONLY: whoever knows the seed can remove the noise."
)
GS_OPTION: Any = _opt(
    None,
    "--global-sensitivity",
    "GS",
    "Domain width GS_j per column (comma-separated, or one for all) for the outliers' "
    "ε' = ε·GS/RS.",
    Numbers("domain widths > 0"),
)
UNIT_OPTION: Any = _opt(
    "record",
    "--guarantee-unit",
    "U",
    "Neighbouring records differ in a whole record (record, default: d·ε) or one "
    "value (column: ε).",
    Choice(("record", "column")),
)
WINDOW_NUMBER = Integer("an integer >= 0", minimum=0)
EPSILON_OPTION: Any = _opt(..., "--epsilon", "E", "ε > 0 per column value.", POSITIVE)
ANALYST_OPTION: Any = _opt(..., "--analyst", "URL", "The analyst server.")
TOKEN_HELP = "This sensor's token. Default: $PRIVAD_SENSOR_TOKEN."


def _token(help: str = TOKEN_HELP) -> Any:
    return typer.Option(None, "--token", metavar="SECRET", envvar="PRIVAD_SENSOR_TOKEN", help=help)


def _ledger(help: str) -> Any:
    return _opt(None, "--ledger", "PATH", help)


def _budget(help: str) -> Any:
    return _opt(None, "--budget", "E", help, POSITIVE)


def _history(help: str) -> Any:
    return _opt(None, "--history", "FILE", help)


def guarantee_options(global_sensitivity: list[float] | None, ledger: str | None, what: str) -> Any:
    """``--global-sensitivity`` (one value: every column) and ``--ledger``. Every release is
    charged to a ledger, and a guarantee for outliers needs a domain width, so the former
    is required."""
    if global_sensitivity is None:
        raise ParameterError(
            f"--global-sensitivity is required: {what} release is charged to a privacy "
            "ledger (--ledger, default $PRIVAD_LEDGER or ~/.privad/ledger.sqlite), and without "
            "a domain width outliers have no finite ε', so its guarantee cannot be stated"
        )
    if ledger is not None:
        check_output_path(ledger, "--ledger", "store")
    return global_sensitivity[0] if len(global_sensitivity) == 1 else global_sensitivity


def given_sensitivities(
    relaxed_sensitivity: list[float] | None,
    history: str | None,
    columns: list[str] | None,
    exclude: list[str] | None,
    p_o: float,
) -> Any:
    """RS from ``--relaxed-sensitivity`` or from ``--history`` (eq. 1); None without both
    (:func:`privad.relaxed.stream_sensitivities` then decides, for a stream)."""
    from privad.relaxed import relaxed_sensitivity as estimate_rs
    from privad.services.streams import read_csv_array

    if relaxed_sensitivity is not None and history is not None:
        raise ParameterError("give --relaxed-sensitivity or --history, not both")
    if history is None:
        return relaxed_sensitivity
    path = existing_file(history, "--history")
    return estimate_rs(read_csv_array(path, columns=columns, exclude=exclude, source=history), p_o)


def warn_seed(seed: int | None) -> None:
    if seed is not None:
        warn("--seed makes the noise reproducible; use it for tests only, never for a real release")


def format_choice(text: str, as_json: bool, choices: tuple[str, ...]) -> str:
    """``--format`` (one of ``choices``), which ``--json`` sets to json."""
    fmt = parse_choice(text, "--format", choices)
    if as_json and fmt not in ("json", choices[0]):
        raise ParameterError(f"--json and --format {fmt} contradict each other; give one")
    return "json" if as_json else fmt


sensor_app = command_group(
    "sensor",
    (
        "The sensor of the relaxed-DP scheme: perturb measurements locally and send them to "
        "the analyst and the correction server.\n\nNon-outliers get ε-DP per value, outliers "
        "ε' = ε·GS/RS (relaxed sensitivity). See docs/relaxed.md."
    ),
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
    correction: str = _opt(..., "--correction", "URL", "The correction server."),
    token: str | None = _token(
        "This sensor's token (its name at the servers is the sensor id). Default: "
        "$PRIVAD_SENSOR_TOKEN."
    ),
    correction_token: str | None = _opt(
        None,
        "--correction-token",
        "SECRET",
        "This sensor's token at the correction server, if it differs from --token.",
    ),
    epsilon: float = EPSILON_OPTION,
    window: int = _opt(
        ..., "--window", "N", "Records per window.", Integer("a number of records >= 1", minimum=1)
    ),
    history: str | None = _history(
        "Historical data (CSV, same columns) for the relaxed sensitivities (eq. 1). "
        "Without it and without --relaxed-sensitivity the first window is used (as in the "
        "paper's experiments; a deployment should use past data)."
    ),
    p_o: float = p_o_option(),
    relaxed_sensitivity: Any = RS_OPTION,
    scaling: str = scaling_option(),
    d_diff_centres: str = _opt(
        "separate",
        "--d-diff-centres",
        "C",
        "Step 1c (reconstruction): separate (default: c for T, c' for T') or original.",
        Choice(("separate", "original")),
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    first_window: int = _opt(
        0,
        "--first-window",
        "W",
        "Number of the first new window (default 0, or after the last window the journal "
        "sent to these servers with this token).",
        WINDOW_NUMBER,
    ),
    partial: str = _opt(
        "send",
        "--partial",
        "P",
        "A last window with fewer than N records: send (default) or drop.",
        Choice(("send", "drop")),
    ),
    seed: int | None = SEED_OPTION,
    ledger: str | None = _ledger(
        "Privacy ledger (SQLite) charged with each window's release before it is sent, "
        "in scope SCOPE/rows-DIGEST (the content digest of the window's records). Default: "
        "$PRIVAD_LEDGER or ~/.privad/ledger.sqlite."
    ),
    journal: str | None = _opt(
        None,
        "--journal",
        "PATH",
        "The sensor's record of released rows (SQLite, keyed by row, so whatever "
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
    exchange: str = _opt(
        "protected",
        "--exchange",
        "X",
        "protected (default: d_diff with Laplace noise under ε_CS, so the correction "
        "server's view and the corrected output have a guarantee) or unprotected (the "
        "paper's exchange: no guarantee for them).",
        Choice(("protected", "unprotected")),
    ),
    cs_epsilon: float | None = _opt(
        None,
        "--cs-epsilon",
        "E",
        "ε_CS of the d_diff noise, in the guarantee unit. Default: the perturbation's ε "
        "in that unit.",
        POSITIVE,
    ),
    tp_epsilon: float | None = _opt(
        None,
        "--tp-epsilon",
        "E",
        "ε_TP: Laplace noise on the one value d_TP the analyst learns, in the guarantee "
        "unit (protected exchange only). d_TP alone is then min(ε_TP, ε_CS)-DP; the "
        "analyst's whole view stays bounded by ε_T + ε_CS, and nothing more is charged. "
        "Default: none.",
        POSITIVE,
    ),
    scope: str = _opt("relaxed-sensor", "--scope", "SCOPE", "Base name of the ledger scopes."),
    budget: float | None = _budget(
        "Total ε of each window's scope when it has no budget yet. Default: one "
        "release (the window's ε), so the same records are never released twice unless "
        "forced."
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
    options = dict(locals())  # the parsed options, each named as send_file names its keyword
    from privad.services.sensor_client import send_file

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
    r = forward(
        send_file,
        options,
        source,
        token=secret,
        relaxed_sensitivity=rs,
        global_sensitivity=gs,
        partial=partial == "send",
        on_released="force" if force_rerelease else "skip",
        close=not no_close,
        verify=ca_cert or True,
        rng=seed,
        on_event=None if quiet or as_json else lambda event: typer.echo("\n".join(event.lines())),
    )
    summary = () if quiet else (r.summary(),)
    emit(r.to_dict(), as_json, lambda console: print_lines(console, summary))


def _analyst_client(analyst: str, token: str | None, timeout: float, ca_cert: str | None) -> Any:
    from privad.services.clients import AnalystClient

    secret = required_secret(token, "--token", "PRIVAD_SENSOR_TOKEN")
    return AnalystClient(analyst, secret, timeout=timeout, verify=ca_cert or True)


@sensor_app.command("result")
def result(
    analyst: str = ANALYST_OPTION,
    token: str | None = _token(),
    window: int | None = _opt(
        None,
        "--window",
        "W",
        "One window. Default: every closed window.",
        WINDOW_NUMBER,
    ),
    output_format: str = _opt(
        "csv",
        "--format",
        "F",
        "csv (default: 'window,index' lines, indices within the window) or json (full "
        "results; the same as --json).",
    ),
    out: str | None = _opt(None, "--out", "FILE", "Write to FILE (atomically) instead of stdout."),
    timeout: float = timeout_option(),
    ca_cert: str | None = ca_cert_option("analyst"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print the corrected outlier indices of this sensor's closed windows."""
    from privad.io import atomic_write
    from privad.services.sensor_client import closed_outliers, outliers_text

    fmt = format_choice(output_format, as_json, ("csv", "json"))
    target = None if out is None else check_output_path(out, "--out")
    with _analyst_client(analyst, token, timeout, ca_cert) as client:
        text = outliers_text(closed_outliers(client, window), fmt, one=window is not None)
    if target is None:
        sys.stdout.write(text)
    else:
        with atomic_write(target) as handle:
            handle.write(text)


@sensor_app.command("close")
def close(
    analyst: str = ANALYST_OPTION,
    token: str | None = _token(),
    window: int = _opt(..., "--window", "W", "The window to close.", WINDOW_NUMBER),
    timeout: float = timeout_option(),
    ca_cert: str | None = ca_cert_option("analyst"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Close an uploaded window again (after a failed close): detection and correction.

    Idempotent: a closed window answers its stored result.
    """
    from privad.services.sensor_client import closed_window_line

    with _analyst_client(analyst, token, timeout, ca_cert) as client:
        r = client.close_window(window)
    emit(r, as_json, lambda console: console.print(closed_window_line(window, r), markup=False))


@sensor_app.command("calibrate")
def calibrate(
    history: str = typer.Argument(..., metavar="HISTORY", help="Historical data (CSV)."),
    p_o: float = p_o_option("Outlier percentage of the history, in (0, 100)."),
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    scaling: str = scaling_option(
        "Step 1a: relaxed-sensitivity (default), isotropic or none (as for send)."
    ),
    min_samples: int | None = _opt(
        None,
        "--min-samples",
        "M",
        "DBSCAN minPts. Default: 0.5% of the history's records (at least 2); use a "
        "history of one window's size.",
        COUNT,
    ),
    output_format: str = _opt(
        "text",
        "--format",
        "F",
        "text (default), json (the same as --json), or env (NAME=VALUE lines for a shell's eval).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Fix the public parameters from historical data: RS, DBSCAN eps/minPts, w_O.

    Not private: it reads the historical data in the clear, as the paper's parameters are
    fixed from past data before the protocol runs.
    """
    options = dict(locals())  # the parsed options, each named as calibrate_file names it
    from privad.services.calibration import calibrate_file

    fmt = format_choice(output_format, as_json, ("text", "json", "env"))
    path = existing_file(history, "HISTORY")
    deployment = forward(calibrate_file, options, path, source=history)
    if fmt == "json":
        print_json(deployment.to_dict())
    else:
        typer.echo("\n".join(deployment.env() if fmt == "env" else deployment.lines()))


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
    history: str | None = _history(
        "Historical data (CSV, same columns) for the relaxed sensitivities (eq. 1)."
    ),
    p_o: float = p_o_option(),
    relaxed_sensitivity: Any = RS_OPTION,
    scaling: str = scaling_option(),
    columns: list[str] | None = COLUMNS_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    scheduler: str | None = SCHEDULER_OPTION,
    workers: int | None = WORKERS_OPTION,
    worker_timeout: float | None = WORKER_TIMEOUT_OPTION,
    seed: int | None = SEED_OPTION,
    ledger: str | None = _ledger(
        "Privacy ledger charged (once per partition, in scope SCOPE/rows-DIGEST keyed by "
        "the content digest of the partition's records) before the output appears. Default: "
        "$PRIVAD_LEDGER or ~/.privad/ledger.sqlite."
    ),
    scope: str | None = scope_option("Base name of the ledger scopes. Default: relaxed-sensor."),
    budget: float | None = _budget(
        "Total ε of each partition's scope when it has no budget yet. Default: one "
        "release, so the same records (in a copy of the archive too) are never perturbed "
        "and released twice."
    ),
    global_sensitivity: Any = GS_OPTION,
    guarantee_unit: str = UNIT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Perturb a large archive at the source, partition by partition, on a Dask cluster.

    Steps 1a–1b of the sensor on every partition, each with its own noise stream
    (privad.relaxed.perturb_archive); the output is what the analyst would receive (𝒯').
    """
    options = dict(locals())  # the parsed options, each named as perturb_archive names it
    from privad.relaxed import perturb_archive

    cluster = cluster_of(scheduler, workers, worker_timeout)
    gs = guarantee_options(global_sensitivity, ledger, "the archive's")
    rs = given_sensitivities(relaxed_sensitivity, history, columns, exclude, p_o)
    if rs is None:
        raise ParameterError(
            "give --relaxed-sensitivity or --history: the noise scale must "
            "not be estimated from the archive it protects"
        )
    check_output_path(out, "--out", "folder")
    warn_seed(seed)
    from privad.cli._progress import StepProgress  # Rich's progress: only here

    with StepProgress(quiet=as_json) as progress:
        r = forward(
            perturb_archive,
            options,
            archive,
            out,
            relaxed_sensitivity=rs,
            global_sensitivity=gs,
            scope=scope if scope is not None else "relaxed-sensor",
            **vars(cluster),
            rng=seed,
            step=progress.step,
        )
    emit(r.to_dict(), as_json, lambda console: print_lines(console, r.lines()))


def register(app: typer.Typer) -> None:
    """Add the ``sensor`` group to the ``privad`` command."""
    app.add_typer(sensor_app, name="sensor")
