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
    from privad.experiments import sensitive

    _reproduce(
        "sp",
        out,
        sensitive.reproduce,
        lambda result: _run_kind(
            quick, f"seed {seed}", f"{result.settings.samples} sampled run(s)"
        ),
        quiet=quiet,
        as_json=as_json,
        tables=_sp_tables,
        rerun={"quick": quick, "seed": seed, "samples": samples},
        quick=quick,
        seed=seed,
        samples=samples,
    )


def _sp_tables(result: Any) -> dict[str, tuple[Any, Table]]:
    """Tables 1 and 2 of a sensitive-privacy reproduction: (the table, what is shown)."""
    from privad.experiments.report import format_number

    t1, t2 = result.tables["table1"], result.tables["table2"]
    rows1 = []
    for name, part in t1.groupby("dataset", sort=False):
        by = dict(zip(part["convention"], part["true_br_anomalies"], strict=True))
        first = part.iloc[0]
        rows1.append(
            (
                str(name),
                str(first["beta"]),
                f"{first['r']:g}",
                str(by["self counted"]),
                str(by["self not counted"]),
                str(first["paper_true_br_anomalies"]),
            )
        )
    rows2 = [
        (
            row.dataset,
            format_number(row.mean_error_sp),
            format_number(row.paper_mean_error_sp),
            f"{row.mean_error_dp:.4f}",
            f"{row.paper_mean_error_dp:.4f}",
        )
        for row in t2.itertuples(index=False)
    ]
    columns1 = ("dataset", "β", "r", "self counted", "self not counted", "paper")
    columns2 = ("dataset", "SP", "paper SP", "DP", "paper DP")
    title1 = "Table 1: true (β,r)-anomalies, ours vs paper"
    title2 = "Table 2: mean error over random queries (ε = 0.1)"
    return {
        "table1": (t1, rows_table(title1, columns1, rows1, right=columns1[1:])),
        "table2": (t2, rows_table(title2, columns2, rows2, right=columns2[1:])),
    }


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
    reproduce: Callable[..., Any],
    what: str | Callable[[Any], str],
    *,
    quiet: bool,
    as_json: bool,
    tables: Callable[[Any], dict[str, tuple[Any, Table]]] | None = None,
    rerun: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """Run ``reproduce(DIR, progress=..., **options)`` into the folder ``out`` with its steps
    shown on standard error, and report the files it wrote (``what`` the run, or made from
    its result) and the ``tables`` its result holds (as records, and shown). ``rerun``: the
    options of the command line that reruns ``privad reproduce NAME``, shown on the page."""
    directory = _output_folder(out)
    if rerun is not None:
        options["command"] = _command(name, out=out, **rerun)
    start = time.perf_counter()
    with StepProgress(quiet=quiet or as_json) as progress:
        result = reproduce(directory, progress=progress.report, **options)
    elapsed = time.perf_counter() - start
    shown = {} if tables is None else tables(result)
    payload = {
        "out": directory,
        "index": directory / "index.html",
        "files": list(result if tables is None else result.files),
        "seconds": round(elapsed, 3),
        "run": what if isinstance(what, str) else what(result),
        **{name: frame.to_dict(orient="records") for name, (frame, _) in shown.items()},
    }

    def render(console: Any) -> None:
        for _, table in shown.values():
            console.print(table)
        console.print(
            f"Wrote {len(payload['files'])} files to {payload['out']} in "
            f"{payload['seconds']:.1f} s ({payload['run']}). Open {payload['index']}.",
            markup=False,
        )

    emit(payload, as_json, render)


def _seeded_runs(
    name: str,
    out: str,
    reproduce: Callable[..., Any],
    quick: bool,
    seed: int,
    runs: int,
    quiet: bool,
    as_json: bool,
    **options: Any,
) -> None:
    """:func:`_reproduce` of a reproduction that averages ``runs`` runs from ``seed``."""
    what = _run_kind(quick, f"seed {seed}", f"{runs} run(s)")
    options.update(quick=quick, seed=seed, runs=runs)
    _reproduce(name, out, reproduce, what, quiet=quiet, as_json=as_json, **options)


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
    from privad.experiments import relaxed as experiment

    _seeded_runs("relaxed", out, experiment.reproduce, quick, seed, runs, quiet, as_json)


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
    from privad.experiments import search as experiment

    for flag, folder in (("--nab-root", nab_root), ("--yahoo-root", yahoo_root)):
        if folder is not None and not Path(folder).expanduser().is_dir():
            raise ParameterError(f"{flag} {folder!r} is not a folder")
    if other_anomalies not in ("drop", "keep"):
        raise ParameterError(f"--other-anomalies must be drop or keep, got {other_anomalies!r}")
    _seeded_runs(
        "search",
        out,
        experiment.reproduce,
        quick,
        seed,
        runs,
        quiet,
        as_json,
        rerun={
            "seed": seed,
            "runs": runs,
            "quick": quick,
            "other_anomalies": None if other_anomalies == "drop" else other_anomalies,
        },
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
    from privad.experiments import rmp as experiment

    gas_path = None
    if gas is not None:
        gas_path = Path(gas).expanduser()
        if not gas_path.exists():
            raise ParameterError(f"--gas {gas!r} does not exist (give gas-drift.npz or its folder)")
    _reproduce(
        "rmp",
        out,
        experiment.reproduce,
        _run_kind(quick, f"seeds from {seed}"),
        quiet=quiet,
        as_json=as_json,
        rerun={
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
