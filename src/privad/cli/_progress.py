"""Progress of the long ``privad`` commands on standard error (:class:`StepProgress`).

Its own module, imported by a command only when it runs: Rich's progress machinery costs
about 25 ms to import, which ``privad --help`` and the quick commands do not pay.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from rich import progress
from rich.console import Console

from privad.cli._render import err_console

__all__ = ["HEARTBEAT_SECONDS", "PROGRESS_DELAY_ENV", "StepProgress"]


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
