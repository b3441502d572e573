"""``privad reproduce``: rerun a paper's evaluation and write its tables, figures and a page.

``privad reproduce sp|relaxed|search|rmp [--out DIR] [--quick] ...`` runs the scheme's
``privad.experiments.<scheme>.reproduce`` (:func:`privad.experiments.runs.run_reproduction`):
CSV tables, figures and ``index.html`` (relative links), each written atomically into DIR.
The runs take minutes: every step is shown on standard error (a bar on a terminal, else one
line per step; ``--quiet`` or ``--json`` silence it), and ``--json`` prints the result
(folder, files, seconds) as one JSON document. A bad option is a one-line error with exit
status 2 (``privad.cli.main``), before anything is written.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import typer

from privad.cli._options import COUNT, check_output_path, seed_option
from privad.cli._render import JSON_OPTION, QUIET_OPTION, emit
from privad.cli._tables import rows_table
from privad.errors import ParameterError

__all__ = ["register", "reproduce_app"]

reproduce_app = typer.Typer(
    name="reproduce",
    help=(
        "Reproduce a paper's tables and figures: CSV tables, PNG figures and an index.html "
        "page with our numbers beside the paper's."
    ),
    no_args_is_help=True,
    add_completion=False,
)


@reproduce_app.command("sp")
def sp(
    out: str = typer.Option(
        "privad-reproduction/sp",
        "--out",
        metavar="DIR",
        help="Output folder (created if missing; files in it are replaced). Default: "
        "./privad-reproduction/sp.",
    ),
    quick: bool = typer.Option(
        False,
        "--quick",
        help="Smaller run for tests (about 10 s): synthetic set with n = 4,000 (β scaled), 2 "
        "sampled runs, coarser threshold grid. Thyroid and Mammography stay complete.",
    ),
    seed: int = seed_option(
        "Seed (an integer >= 0) for the synthetic data, the random queries of Table 2 "
        "and the sampled runs of Table 3 (default 0).",
        0,
    ),
    samples: int | None = COUNT.option(
        None,
        "--samples",
        "N",
        "Sampled runs per mechanism in Table 3 (an integer >= 1; default 10, or 2 with "
        "--quick). The exact expectations do not depend on it.",
    ),
    quiet: bool = QUIET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Sensitive privacy (Asif et al., CCS 2019): Tables 1-3, Figures 3, 5, 6-8 and 9."""
    options = {"quick": quick, "seed": seed, "samples": samples}
    _reproduce("sp", out, quiet, as_json, options, **options)


def _output_folder(out: str) -> Path:
    directory = Path(out).expanduser()
    if directory.exists() and not directory.is_dir():
        raise ParameterError(f"--out {str(directory)!r} exists and is not a folder")
    if not directory.exists():  # a rerun writes into its folder; a new one needs its parent
        check_output_path(out, "--out", "folder")
    return directory


def _command(name: str, **options: Any) -> str:
    """The command line that reruns ``privad reproduce NAME`` (shown on the page): ``--KEY
    VALUE`` for each option given, ``--KEY`` for each flag set, in order."""
    args = []
    for key, value in options.items():
        if value is not None and value is not False:
            args += [f"--{key.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return f"privad reproduce {name} " + " ".join(shlex.quote(a) for a in args)


def _reproduce(
    name: str,
    out: str,
    quiet: bool,
    as_json: bool,
    rerun: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """:func:`privad.experiments.runs.run_reproduction` of ``name`` into the folder ``out``
    with its steps shown on standard error, and its report: the tables it holds, the files
    it wrote. ``rerun``: the options of the command line that reruns ``privad reproduce
    NAME``, shown on the page."""
    from privad.experiments.runs import run_reproduction

    directory = _output_folder(out)
    if rerun is not None:
        options["command"] = _command(name, out=out, **rerun)
    from privad.cli._progress import StepProgress  # Rich's progress: only here

    with StepProgress(quiet=quiet or as_json) as progress:
        done = run_reproduction(name, directory, progress=progress.report, **options)

    def render(console: Any) -> None:
        for title, columns, rows in done.shown():
            console.print(rows_table(title, columns, rows, right=columns[1:]))
        console.print(*done.lines(), markup=False)

    emit(done.to_dict(), as_json, render)


_QUICK_HELP = "Small, fast run (seconds) for tests and a first look."
_SEED_HELP = "Seed (an integer >= 0) for the data and the noise (default 0)."


def _out_option(name: str) -> Any:
    """``--out`` with the default folder ``privad-reproduction/NAME``."""
    return typer.Option(
        f"privad-reproduction/{name}",
        "--out",
        metavar="DIR",
        help="Output folder (created if missing; files in it are replaced).",
    )


@reproduce_app.command("relaxed")
def relaxed(
    out: str = _out_option("relaxed"),
    quick: bool = typer.Option(False, "--quick", help=_QUICK_HELP + " 4,000 points, 1 run."),
    seed: int = seed_option(_SEED_HELP, 0),
    runs: int = COUNT.option(
        5,
        "--runs",
        "N",
        "Runs per (separation, ε) cell, averaged (integer >= 1; the paper uses 5).",
    ),
    quiet: bool = QUIET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Relaxed-DP sensor streams: Figure 3a/3b (accuracy, subset size), options, streaming."""
    _reproduce("relaxed", out, quiet, as_json, quick=quick, seed=seed, runs=runs)


@reproduce_app.command("search")
def search(
    out: str = _out_option("search"),
    quick: bool = typer.Option(False, "--quick", help=_QUICK_HELP),
    seed: int = seed_option(_SEED_HELP, 0),
    runs: int = COUNT.option(
        100, "--runs", "N", "Searches per setting, c in the paper (integer >= 1; default 100)."
    ),
    nab_root: str | None = typer.Option(
        None,
        "--nab-root",
        metavar="DIR",
        help="A folder holding the whole NAB corpus (data/ and labels/); default: the five "
        "embedded NAB series.",
    ),
    yahoo_root: str | None = typer.Option(
        None,
        "--yahoo-root",
        metavar="DIR",
        help="Your copy of the Yahoo S5 A1 series (real_N.csv): all join Figure 1, and "
        "Figures 2-4 run on real_6 and real_8 (the paper's datasets 6 and 8).",
    ),
    other_anomalies: str = typer.Option(
        "drop",
        "--other-anomalies",
        metavar="drop|keep",
        help="Reduction of real series to one anomaly: drop the other labelled points "
        "(the paper's section 6.1, default) or keep them (the earlier reading).",
    ),
    quiet: bool = QUIET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """DP noisy binary search: Figures 1-4 on NAB series and synthetic mixtures."""
    for flag, folder in (("--nab-root", nab_root), ("--yahoo-root", yahoo_root)):
        if folder is not None and not Path(folder).expanduser().is_dir():
            raise ParameterError(f"{flag} {folder!r} is not a folder")
    if other_anomalies not in ("drop", "keep"):
        raise ParameterError(f"--other-anomalies must be drop or keep, got {other_anomalies!r}")
    _reproduce(
        "search",
        out,
        quiet,
        as_json,
        {
            "seed": seed,
            "runs": runs,
            "quick": quick,
            "other_anomalies": None if other_anomalies == "drop" else other_anomalies,
        },
        quick=quick,
        seed=seed,
        runs=runs,
        nab_root=None if nab_root is None else Path(nab_root).expanduser(),
        yahoo_root=None if yahoo_root is None else Path(yahoo_root).expanduser(),
        other_anomalies=other_anomalies,
    )


@reproduce_app.command("rmp")
def rmp(
    out: str = _out_option("rmp"),
    gas: str | None = typer.Option(
        None,
        "--gas",
        metavar="PATH",
        help="The Gas Sensor Array Drift subset (gas-drift.npz or its folder). Default: "
        "$PRIVAD_DATA/gas or [../]shared/datasets/gas; Gas is skipped with a note when "
        "it is not found there.",
    ),
    seeds: int = COUNT.option(
        "5", "--seeds", "N", "Repetitions with different seeds, averaged (integer >= 1; default 5)."
    ),
    epochs: int | None = COUNT.option(
        None,
        "--epochs",
        "E",
        "AANN training epochs (integer >= 1; default 300, the estimators' default; the "
        "paper's range is 300-1000; 15 with --quick).",
    ),
    seed: int = seed_option("First seed (an integer >= 0).", 0),
    quick: bool = typer.Option(
        False, "--quick", help=_QUICK_HELP + " 1 seed, 300 records, 15 epochs."
    ),
    skip_privacy: bool = typer.Option(
        False, "--skip-privacy", help="Do not run the attack evaluation (section 5)."
    ),
    quiet: bool = QUIET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """RMP (Erfani et al., PAKDD 2014): Table 1, ROC curves (Figures 2-4), the effect of r."""
    gas_path = None
    if gas is not None:
        gas_path = Path(gas).expanduser()
        if not gas_path.exists():
            raise ParameterError(f"--gas {gas!r} does not exist (give gas-drift.npz or its folder)")
    _reproduce(
        "rmp",
        out,
        quiet,
        as_json,
        {
            "seeds": seeds,
            "seed": seed,
            "epochs": epochs,
            "gas": gas or None,
            "quick": quick,
            "skip_privacy": skip_privacy,
        },
        seeds=seeds,
        seed=seed,
        epochs=epochs,
        gas_path=gas_path,
        quick=quick,
        privacy=not skip_privacy,
    )


def register(app: typer.Typer) -> None:
    """Add the ``reproduce`` group to the ``privad`` command."""
    app.add_typer(reproduce_app, name="reproduce")
