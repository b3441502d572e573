"""One paper's reproduction run into a folder, timed and reported: the job of ``privad
reproduce``.

:func:`run_reproduction` calls the scheme's ``privad.experiments.<scheme>.reproduce`` (which
writes the CSV tables, PNG figures and ``index.html``) and returns a
:class:`ReproductionRun`: the folder, the files, the seconds taken and what the run was,
with ``to_dict()`` (the JSON document of ``privad reproduce --json``) and ``lines()`` (its
summary line); for sensitive privacy also Tables 1 and 2 (records, and rows ours beside the
paper's, :meth:`ReproductionRun.shown`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

import pandas as pd

from privad.experiments.report import Progress, format_number

__all__ = ["SCHEMES", "ReproductionRun", "run_reproduction"]

SCHEMES = {"sp": "sensitive", "relaxed": "relaxed", "search": "search", "rmp": "rmp"}
"""A reproduction's name (``privad reproduce NAME``) -> its package in privad.experiments."""


@dataclass(frozen=True)
class ReproductionRun:
    """What a reproduction wrote into ``out``: its ``files``, in ``seconds`` (rounded to ms),
    ``run`` (what the run was, e.g. "full run, seed 0, 5 run(s)") and the ``tables`` of
    its result that are reported (sensitive privacy: Tables 1 and 2).

    Examples
    --------
    >>> from pathlib import Path
    >>> done = ReproductionRun(Path("out"), [Path("out/index.html")], 1.25, "quick run")
    >>> done.to_dict()["index"].as_posix(), done.to_dict()["seconds"]
    ('out/index.html', 1.25)
    >>> done.lines()
    ['Wrote 1 files to out in 1.2 s (quick run). Open out/index.html.']
    """

    out: Path
    files: list[Path]
    seconds: float
    run: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The run as a JSON-ready document; a table as its records."""
        return {
            "out": self.out,
            "index": self.out / "index.html",
            "files": list(self.files),
            "seconds": self.seconds,
            "run": self.run,
            **{name: frame.to_dict(orient="records") for name, frame in self.tables.items()},
        }

    def lines(self) -> list[str]:
        """The summary: how many files were written where, how long it took, the page."""
        return [
            f"Wrote {len(self.files)} files to {self.out} in {self.seconds:.1f} s ({self.run})."
            f" Open {self.out / 'index.html'}."
        ]

    def shown(self) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
        """The reported tables as (title, columns, rows of text): ours beside the paper's."""
        return [_SHOWN[name](frame) for name, frame in self.tables.items()]


def _sp_table1(t1: pd.DataFrame) -> tuple[str, tuple[str, ...], list[tuple[str, ...]]]:
    """Table 1 of sensitive privacy: the true (β,r)-anomalies under both conventions."""
    rows = []
    for name, part in t1.groupby("dataset", sort=False):
        by = dict(zip(part["convention"], part["true_br_anomalies"], strict=True))
        first = part.iloc[0]
        rows.append(
            (
                str(name),
                str(first["beta"]),
                f"{first['r']:g}",
                str(by["self counted"]),
                str(by["self not counted"]),
                str(first["paper_true_br_anomalies"]),
            )
        )
    columns = ("dataset", "β", "r", "self counted", "self not counted", "paper")
    return "Table 1: true (β,r)-anomalies, ours vs paper", columns, rows


def _sp_table2(t2: pd.DataFrame) -> tuple[str, tuple[str, ...], list[tuple[str, ...]]]:
    """Table 2 of sensitive privacy: the mean error of SP and DP over random queries."""
    rows = [
        (
            row.dataset,
            format_number(row.mean_error_sp),
            format_number(row.paper_mean_error_sp),
            f"{row.mean_error_dp:.4f}",
            f"{row.paper_mean_error_dp:.4f}",
        )
        for row in t2.itertuples(index=False)
    ]
    columns = ("dataset", "SP", "paper SP", "DP", "paper DP")
    return "Table 2: mean error over random queries (ε = 0.1)", columns, rows


_SHOWN: dict[str, Callable[[pd.DataFrame], Any]] = {"table1": _sp_table1, "table2": _sp_table2}


def run_reproduction(
    name: str,
    out: str | Path,
    *,
    quick: bool = False,
    seed: int = 0,
    progress: Progress = None,
    **options: Any,
) -> ReproductionRun:
    """Run the reproduction ``name`` (a key of :data:`SCHEMES`) into the folder ``out``:
    ``privad.experiments.<scheme>.reproduce(out, quick=..., seed=..., progress=...,
    **options)``, timed, and report it.

    ``options`` are the scheme's own (``samples`` for ``sp``; ``runs`` for ``relaxed`` and
    ``search``; ``seeds``, ``epochs``, ... for ``rmp``; ``command``, the command line shown
    on the page, except for ``relaxed``).

    Examples
    --------
    >>> sorted(SCHEMES)
    ['relaxed', 'rmp', 'search', 'sp']

    A quick run takes seconds to a minute, so it is not run here:

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:  # doctest: +SKIP
    ...     done = run_reproduction("relaxed", folder, quick=True)
    >>> done.run  # doctest: +SKIP
    'quick run, seed 0'
    """
    reproduce = import_module(f"privad.experiments.{SCHEMES[name]}").reproduce
    directory = Path(out)
    start = time.perf_counter()
    result = reproduce(directory, quick=quick, seed=seed, progress=progress, **options)
    seconds = round(time.perf_counter() - start, 3)
    if name == "sp":
        more = (f"seed {seed}", f"{result.settings.samples} sampled run(s)")
        tables = {key: result.tables[key] for key in _SHOWN}
        result = result.files
    else:
        default = inspect.signature(reproduce).parameters.get("runs")
        # a quick run does fewer runs than asked (its page says how many), so none is named
        runs = () if quick else (f"{options.get('runs', default and default.default)} run(s)",)
        more = (f"seeds from {seed}",) if name == "rmp" else (f"seed {seed}", *runs)
        tables = {}
    run = ", ".join(("quick run" if quick else "full run", *more))
    return ReproductionRun(directory, list(result), seconds, run, tables)
