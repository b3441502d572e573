"""What the ``privad`` commands print, in one place: consoles, tables, JSON, warnings, progress.

The streams have one job each:

* **standard output** carries the result only: Rich tables and lines for people or, with
  ``--json``, exactly one JSON document (:func:`emit`), with no markup and no progress;
* **standard error** carries progress (:class:`privad.cli._progress.StepProgress`: a Rich
  bar on a terminal, otherwise one line per step, so a piped or logged run is never
  silent), warnings (one line each, ``privad: warning: ...``, :func:`warn`) and errors
  (one line, written by ``privad.cli.main``, exit status 2).

Every command module renders through these helpers rather than building its own consoles.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = [
    "JSON_OPTION",
    "QUIET_OPTION",
    "emit",
    "err_console",
    "jsonable",
    "out_console",
    "print_json",
    "print_lines",
    "summary_table",
    "warn",
]

JSON_OPTION: Any = typer.Option(
    False,
    "--json",
    help="Print the result as one JSON document on standard output (for scripts); progress "
    "and warnings stay on standard error, and errors are one line there with exit status 2.",
)
QUIET_OPTION: Any = typer.Option(
    False, "--quiet", "-q", help="No progress lines on standard error."
)


# --------------------------------------------------------------------------------------------
# Consoles and tables
# --------------------------------------------------------------------------------------------


def out_console() -> Console:
    """Standard output; at least 120 columns wide when not a terminal (piped, captured)."""
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = max(console.width, 120)
    return console


def err_console() -> Console:
    """Standard error (progress, warnings)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def summary_table(title: str, rows: Iterable[tuple[str, str]]) -> Table:
    """A two-column "what / value" table without header (a command's summary); the values
    are shown literally (file names may contain Rich markup like [x])."""
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", overflow="fold")
    for what, value in rows:
        table.add_row(what, Text(value))
    return table


def print_lines(console: Console, lines: Iterable[str]) -> None:
    """Print plain lines (no markup: they may hold file names with brackets)."""
    for line in lines:
        console.print(line, markup=False)


def warn(text: str) -> None:
    """One warning line on standard error: ``privad: warning: TEXT``."""
    err_console().print(f"privad: warning: {text}", markup=False)


# --------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: NumPy scalars and arrays, paths, fractions, dataclasses
    and tuples converted; a non-finite float becomes ``null`` (JSON has no NaN)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating | Fraction):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, str):
        return value
    return str(value)


def print_json(payload: Any) -> None:
    """Write ``payload`` to standard output as one JSON document (and a newline)."""
    sys.stdout.write(
        json.dumps(jsonable(payload), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    )
    sys.stdout.flush()


def emit(payload: Mapping[str, Any], as_json: bool, render: Callable[[Console], None]) -> None:
    """A command's result: ``payload`` as JSON with ``--json``, else ``render(console)``.

    The payload and the rendering show the same result; the payload is built first, so a
    failure never leaves half a document on standard output.
    """
    if as_json:
        print_json(payload)
    else:
        render(out_console())
