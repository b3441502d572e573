"""The options of ``privad sensor`` (the relaxed-DP sensor S), declared once for its
commands: the perturbation (``--p-o``, ``--relaxed-sensitivity``, ``--scaling``,
``--global-sensitivity``, ``--guarantee-unit``), the seed, the token and the servers."""

from __future__ import annotations

from typing import Any

import typer

from privad.cli._options import (
    POSITIVE,
    Choice,
    Number,
    Numbers,
    check_output_path,
    columns_option,
    existing_file,
    parse_choice,
    seed_option,
)
from privad.cli._render import warn
from privad.errors import ParameterError

SCALING_CHOICES = ("relaxed-sensitivity", "isotropic", "none")
CENTRE_CHOICES = ("separate", "original")
UNIT_CHOICES = ("record", "column")
EXCHANGE_CHOICES = ("protected", "unprotected")
COLUMNS_HELP = (
    "Columns to use, by header name or 0-based position; repeat or separate with commas. "
    "Default: every column."
)
COLUMNS_OPTION: Any = columns_option(COLUMNS_HELP)
# Options shared by 'send' and 'perturb' (the sensor's perturbation and its guarantee).
P_O = Number("a percentage in (0, 100), e.g. 10", strict=True, maximum=100.0, below=True)


def p_o_option(help: str = "Outlier percentage for eq. (1), in (0, 100).") -> Any:
    """``--p-o P``: the outlier percentage of eq. (1)."""
    return typer.Option(10.0, "--p-o", metavar="P", parser=P_O.bind("--p-o"), help=help)


P_O_OPTION: Any = p_o_option()
RS_OPTION: Any = typer.Option(
    None,
    "--relaxed-sensitivity",
    metavar="RS",
    parser=Numbers("relaxed sensitivities > 0").bind("--relaxed-sensitivity"),
    help="RS_j per column (comma-separated, measurement units) instead of --history.",
)


def scaling_option(
    help: str = "Step 1a (reconstruction): relaxed-sensitivity (default), isotropic or none.",
) -> Any:
    """``--scaling S``: step 1a's scaling of the columns."""
    return typer.Option(
        "relaxed-sensitivity",
        "--scaling",
        metavar="S",
        parser=Choice(SCALING_CHOICES).bind("--scaling"),
        help=help,
    )


SCALING_OPTION: Any = scaling_option()
SEED_OPTION: Any = seed_option(
    "Reproducible noise, FOR TESTS ONLY: whoever knows the seed can remove the noise."
)
GS_OPTION: Any = typer.Option(
    None,
    "--global-sensitivity",
    metavar="GS",
    parser=Numbers("domain widths > 0").bind("--global-sensitivity"),
    help="Domain width GS_j per column (comma-separated, or one for all) for the outliers' "
    "ε' = ε·GS/RS.",
)
UNIT_OPTION: Any = typer.Option(
    "record",
    "--guarantee-unit",
    metavar="U",
    parser=Choice(UNIT_CHOICES).bind("--guarantee-unit"),
    help="Neighbouring records differ in a whole record (record, default: d·ε) or one "
    "value (column: ε).",
)


def guarantee_options(global_sensitivity: list[float] | None, ledger: str | None, what: str) -> Any:
    """``--global-sensitivity`` (one value: every column) and ``--ledger``. Every release is
    charged to a ledger, and a guarantee for outliers needs a domain width, so the former
    is required."""
    gs: Any = global_sensitivity
    if gs is not None and len(gs) == 1:
        gs = gs[0]  # one value: the same width for every column
    if gs is None:
        raise ParameterError(
            f"--global-sensitivity is required: {what} release is charged to a privacy "
            "ledger (--ledger, default $PRIVAD_LEDGER or ~/.privad/ledger.sqlite), and without "
            "a domain width outliers have no finite ε', so its guarantee cannot be stated"
        )
    if ledger is not None:
        check_output_path(ledger, "--ledger", "store")
    return gs


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
    if relaxed_sensitivity is not None:
        return relaxed_sensitivity
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


def warn_seed(seed: int | None) -> None:
    if seed is not None:
        warn("--seed makes the noise reproducible; use it for tests only, never for a real release")


def format_choice(text: str, as_json: bool, choices: tuple[str, ...]) -> str:
    """``--format`` (one of ``choices``), which ``--json`` sets to json."""
    fmt = parse_choice(text, "--format", choices)
    if as_json and fmt not in ("json", choices[0]):
        raise ParameterError(f"--json and --format {fmt} contradict each other; give one")
    return "json" if as_json else fmt


EPSILON_OPTION: Any = typer.Option(
    ..., "--epsilon", metavar="E", parser=POSITIVE.bind("--epsilon"), help="ε > 0 per column value."
)
ANALYST_OPTION: Any = typer.Option(..., "--analyst", metavar="URL", help="The analyst server.")
TOKEN_OPTION: Any = typer.Option(
    None,
    "--token",
    metavar="SECRET",
    envvar="PRIVAD_SENSOR_TOKEN",
    help="This sensor's token. Default: $PRIVAD_SENSOR_TOKEN.",
)
