"""What the ``privad`` commands print, in one place: consoles, tables, JSON, warnings, progress.

The streams have one job each:

* **standard output** carries the result only: Rich tables and lines for people or, with
  ``--json``, exactly one JSON document (:func:`emit`), with no markup and no progress;
* **standard error** carries progress (:class:`StepProgress`: a Rich bar on a terminal,
  otherwise one line per step, so a piped or logged run is never silent), warnings (one
  line each, ``privad: warning: ...``, :func:`warn`) and errors (one line, written by
  ``privad.cli.main``, exit status 2).

Every command module renders through these helpers rather than building its own consoles.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich import progress
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = [
    "JSON_OPTION",
    "QUIET_OPTION",
    "StepProgress",
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


# --------------------------------------------------------------------------------------------
# Progress
# --------------------------------------------------------------------------------------------

HEARTBEAT_SECONDS = 10.0
"""Lines mode: a task that keeps its description prints its count again after this long."""

PROGRESS_DELAY_ENV = "PRIVAD_PROGRESS_DELAY"
"""Seconds a command runs before lines mode prints its first line (default 2; 0: at once):
quick commands stay quiet, so their standard error is empty or the one error line."""


def _progress_delay() -> float:
    try:
        value = float(os.environ.get(PROGRESS_DELAY_ENV) or 2.0)
    except ValueError:
        return 2.0
    return value if value >= 0 else 2.0


class StepProgress(progress.Progress):
    """Progress on standard error: Rich's own bar on a terminal, else one line per step.

    Rich's bar is silent when standard error is not a terminal (a pipe, a log file, a CI
    job), which left the minutes-long ``privad reproduce`` runs without a sign of life; in
    that case Rich only keeps the tasks and this prints ``privad: STEP [done/total, S s]``
    whenever a task starts or changes its description, and the step under way again every
    :data:`HEARTBEAT_SECONDS` (a background thread: a step may run for minutes without an
    update), once the command has run for ``$PRIVAD_PROGRESS_DELAY`` seconds (default 2),
    so quick commands print nothing. ``quiet`` (``--json``, ``--quiet``) prints nothing.

    Beside :class:`rich.progress.Progress`'s ``add_task`` (``total`` None by default) and
    ``update``: :meth:`step` (one step as a block) and :meth:`report` (the
    ``progress(step, done, total)`` callback of the experiments' ``reproduce``).
    """

    def __init__(self, *, quiet: bool = False, console: Console | None = None) -> None:
        console = console or err_console()
        self.lines = not quiet and not console.is_terminal
        super().__init__(
            progress.SpinnerColumn(),
            progress.TextColumn("{task.description}"),
            progress.BarColumn(),
            progress.MofNCompleteColumn(),
            progress.TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=quiet or self.lines,
        )
        self._report_task: int | None = None
        self._printed: dict[int, float] = {}  # lines mode: when each task's line was printed
        self._began, self._delay = time.monotonic(), _progress_delay()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._heartbeat, name="privad-progress", daemon=True)

    def __enter__(self) -> StepProgress:
        super().__enter__()
        if self.lines and math.isfinite(self._delay):
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        if self._thread.is_alive():
            self._done.set()
            self._thread.join()

    def _heartbeat(self) -> None:
        """Lines mode: show the latest task after the delay, then every heartbeat."""
        wait = self._delay
        while not self._done.wait(wait):
            with self._lock:
                latest = next(reversed(self._tasks.values()), None)
                if latest is not None and (latest.total is None or latest.completed < latest.total):
                    self._line(latest.id, force=False)
            wait = 1.0

    def add_task(self, description: str, total: float | None = None) -> int:
        """A new task (its id); lines mode prints its first line."""
        with self._lock:
            task = super().add_task(description, total=total)
            self._line(task, force=True)
        return task

    def update(self, task: int, *, description: str | None = None, **change: Any) -> None:
        """Rich's update; lines mode prints a line when the description changes."""
        with self._lock:
            changed = description not in (None, self._tasks[task].description)
            super().update(task, description=description, **change)
            self._line(task, force=changed)

    @contextlib.contextmanager
    def step(self, text: str) -> Iterator[None]:
        """One step as a block (shown while it runs)."""
        task = self.add_task(text, total=1)
        yield
        self.update(task, completed=1)

    def report(self, step: str, done: int, total: int) -> None:
        """``progress(step, done, total)``, the callback the experiments call."""
        if self._report_task is None:
            self._report_task = self.add_task(step, total=total)
            self.update(self._report_task, completed=done)
        else:
            self.update(self._report_task, description=step, completed=done, total=total)

    def _line(self, task: int, *, force: bool) -> None:
        state, now = self._tasks[task], time.monotonic()
        if not self.lines or now - self._began < self._delay:
            return
        if not force and now - self._printed.get(task, -math.inf) < HEARTBEAT_SECONDS:
            return
        self._printed[task] = now
        count = "" if state.total is None else f"{state.completed:g}/{state.total:g}, "
        self.console.print(
            f"privad: {state.description} [{count}{now - self._began:.0f} s]", markup=False
        )
