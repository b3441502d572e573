"""``privad reproduce``: rerun a paper's evaluation and write its tables, figures and a page.

``privad reproduce sp|relaxed|search|rmp [--out DIR] [--quick] ...`` runs the scheme's
``privad.experiments.<scheme>.reproduce``: CSV tables, figures and ``index.html`` (relative
links), each written atomically into DIR. The runs take minutes: every step is shown on
standard error (a bar on a terminal, else one line per step; ``--quiet`` or ``--json``
silence it), and ``--json`` prints the result (folder, files, seconds) as one JSON
document. A bad option is a one-line error with exit status 2 (``privad.cli.main``),
before anything is written.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from privad.cli._options import COUNT, check_output_path, seed_option
from privad.cli._render import JSON_OPTION, QUIET_OPTION, StepProgress, emit
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
    from privad.experiments import sensitive
    from privad.experiments.report import format_number

    directory = _output_folder(out)
    command = _command(
        "sp",
        ["--out", out]
        + (["--quick"] if quick else [])
        + ["--seed", str(seed)]
        + (["--samples", str(samples)] if samples else []),
    )
    result, elapsed = _with_progress(
        lambda progress: sensitive.reproduce(
            directory, quick=quick, seed=seed, samples=samples, progress=progress, command=command
        ),
        quiet or as_json,
    )
    t1 = result.tables["table1"]
    t2 = result.tables["table2"]
    what = _run_kind(quick, f"seed {seed}", f"{result.settings.samples} sampled run(s)")
    payload = {
        **_files_payload(result.files, directory, elapsed, what),
        "table1": t1.to_dict(orient="records"),
        "table2": t2.to_dict(orient="records"),
    }

    def render(console: Any) -> None:
        table = Table(title="Table 1: true (β,r)-anomalies, ours vs paper", title_justify="left")
        for col in ("dataset", "β", "r", "self counted", "self not counted", "paper"):
            table.add_column(col, justify="left" if col == "dataset" else "right")
        for name, part in t1.groupby("dataset", sort=False):
            by = dict(zip(part["convention"], part["true_br_anomalies"], strict=True))
            first = part.iloc[0]
            table.add_row(
                str(name),
                str(first["beta"]),
                f"{first['r']:g}",
                str(by["self counted"]),
                str(by["self not counted"]),
                str(first["paper_true_br_anomalies"]),
            )
        console.print(table)
        table = Table(
            title="Table 2: mean error over random queries (ε = 0.1)", title_justify="left"
        )
        for col in ("dataset", "SP", "paper SP", "DP", "paper DP"):
            table.add_column(col, justify="left" if col == "dataset" else "right")
        for row in t2.itertuples(index=False):
            table.add_row(
                row.dataset,
                format_number(row.mean_error_sp),
                format_number(row.paper_mean_error_sp),
                f"{row.mean_error_dp:.4f}",
                f"{row.paper_mean_error_dp:.4f}",
            )
        console.print(table)
        _print_files(console, payload)

    emit(payload, as_json, render)


def _run_kind(quick: bool, *more: str) -> str:
    """What a run was, for its summary line: "quick run, seed 0, ..." (``more`` appended)."""
    return ", ".join(("quick run" if quick else "full run", *more))


def _output_folder(out: str) -> Path:
    directory = Path(out).expanduser()
    if directory.exists() and not directory.is_dir():
        raise ParameterError(f"--out {str(directory)!r} exists and is not a folder")
    if not directory.exists():  # a rerun writes into its folder; a new one needs its parent
        check_output_path(out, "--out", "folder")
    return directory


def _command(name: str, args: list[str]) -> str:
    """The command line that reruns ``privad reproduce NAME`` with ``args`` (shown on the page)."""
    return f"privad reproduce {name} " + " ".join(shlex.quote(a) for a in args)


def _with_progress(run: Callable[..., Any], quiet: bool) -> tuple[Any, float]:
    """Run ``run(progress=...)``, its steps shown on standard error; (its result, seconds)."""
    start = time.perf_counter()
    with StepProgress(quiet=quiet) as progress:
        result = run(progress=progress.report)
    return result, time.perf_counter() - start


def _files_payload(files: Any, directory: Path, elapsed: float, what: str) -> dict[str, Any]:
    return {
        "out": directory,
        "index": directory / "index.html",
        "files": list(files),
        "seconds": round(elapsed, 3),
        "run": what,
    }


def _print_files(console: Any, payload: dict[str, Any]) -> None:
    console.print(
        f"Wrote {len(payload['files'])} files to {payload['out']} in "
        f"{payload['seconds']:.1f} s ({payload['run']}). Open {payload['index']}.",
        markup=False,
    )


def _run_with_progress(
    run: Callable[..., Any], directory: Path, what: str, *, quiet: bool, as_json: bool
) -> None:
    """Run ``run(progress=...)`` with its steps shown and report the files it wrote."""
    files, elapsed = _with_progress(run, quiet or as_json)
    payload = _files_payload(files, directory, elapsed, what)
    emit(payload, as_json, lambda console: _print_files(console, payload))


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


def _runs_option(default: int, help: str) -> Any:
    """``--runs N`` (an integer >= 1)."""
    return COUNT.option(default, "--runs", "N", help)


@reproduce_app.command("relaxed")
def relaxed(
    out: str = _out_option("relaxed"),
    quick: bool = typer.Option(False, "--quick", help=_QUICK_HELP + " 4,000 points, 1 run."),
    seed: int = seed_option(_SEED_HELP, 0),
    runs: int = _runs_option(
        5, "Runs per (separation, ε) cell, averaged (integer >= 1; the paper uses 5)."
    ),
    quiet: bool = QUIET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Relaxed-DP sensor streams: Figure 3a/3b (accuracy, subset size), options, streaming."""
    from privad.experiments import relaxed as experiment

    directory = _output_folder(out)
    _run_with_progress(
        lambda progress: experiment.reproduce(
            directory, quick=quick, seed=seed, runs=runs, progress=progress
        ),
        directory,
        _run_kind(quick, f"seed {seed}", f"{runs} run(s)"),
        quiet=quiet,
        as_json=as_json,
    )


@reproduce_app.command("search")
def search(
    out: str = _out_option("search"),
    quick: bool = typer.Option(False, "--quick", help=_QUICK_HELP),
    seed: int = seed_option(_SEED_HELP, 0),
    runs: int = _runs_option(
        100, "Searches per setting, c in the paper (integer >= 1; default 100)."
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
    from privad.experiments import search as experiment

    for flag, folder in (("--nab-root", nab_root), ("--yahoo-root", yahoo_root)):
        if folder is not None and not Path(folder).expanduser().is_dir():
            raise ParameterError(f"{flag} {folder!r} is not a folder")
    if other_anomalies not in ("drop", "keep"):
        raise ParameterError(f"--other-anomalies must be drop or keep, got {other_anomalies!r}")
    directory = _output_folder(out)
    command = _command(
        "search",
        ["--out", out, "--seed", str(seed), "--runs", str(runs)]
        + (["--quick"] if quick else [])
        + ([] if other_anomalies == "drop" else ["--other-anomalies", other_anomalies]),
    )
    _run_with_progress(
        lambda progress: experiment.reproduce(
            directory,
            quick=quick,
            seed=seed,
            runs=runs,
            progress=progress,
            nab_root=None if nab_root is None else Path(nab_root).expanduser(),
            yahoo_root=None if yahoo_root is None else Path(yahoo_root).expanduser(),
            other_anomalies=other_anomalies,
            command=command,
        ),
        directory,
        _run_kind(quick, f"seed {seed}", f"{runs} run(s)"),
        quiet=quiet,
        as_json=as_json,
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
    from privad.experiments import rmp as experiment

    directory = _output_folder(out)
    gas_path = None
    if gas is not None:
        gas_path = Path(gas).expanduser()
        if not gas_path.exists():
            raise ParameterError(f"--gas {gas!r} does not exist (give gas-drift.npz or its folder)")
    command = _command(
        "rmp",
        ["--out", out, "--seeds", str(seeds), "--seed", str(seed)]
        + (["--epochs", str(epochs)] if epochs else [])
        + (["--gas", gas] if gas else [])
        + (["--quick"] if quick else [])
        + (["--skip-privacy"] if skip_privacy else []),
    )
    _run_with_progress(
        lambda progress: experiment.reproduce(
            directory,
            seeds=seeds,
            seed=seed,
            epochs=epochs,
            gas_path=gas_path,
            quick=quick,
            privacy=not skip_privacy,
            progress=progress,
            command=command,
        ),
        directory,
        _run_kind(quick, f"seeds from {seed}"),
        quiet=quiet,
        as_json=as_json,
    )


def register(app: typer.Typer) -> None:
    """Add the ``reproduce`` group to the ``privad`` command."""
    app.add_typer(reproduce_app, name="reproduce")
