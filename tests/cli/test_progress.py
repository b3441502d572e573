"""``privad.cli._progress.StepProgress``: on a pipe, one line per step once the delay has
passed; nothing when quiet; on a terminal, Rich's bar and no lines."""

from __future__ import annotations

import io
import types

import pytest
from rich.console import Console

from privad.cli import _progress
from privad.cli._progress import StepProgress


def _console(*, terminal: bool = False) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, width=100)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The progress clock, moved by hand (no thread: the progress is not entered)."""
    now = [100.0]
    monkeypatch.setattr(_progress, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setenv(_progress.PROGRESS_DELAY_ENV, "2")
    return now


def test_lines_mode_prints_a_step_when_it_starts_or_changes_after_the_delay(clock):
    console = _console()
    progress = StepProgress(console=console)
    progress.add_task("too soon", total=3)  # before the delay: quiet
    clock[0] += 2.4
    task = progress.add_task("uploading", total=10)
    progress.update(task, advance=4)  # the same step: no new line
    progress.update(task, description="training", completed=5)
    with progress.step("scoring"):
        pass
    progress.report("table 1", 0, 2)
    progress.report("table 2", 1, 2)
    progress.add_task("waiting")
    clock[0] += 1.0
    progress.update(task, advance=1)  # the same step, before the heartbeat: no line
    assert console.file.getvalue().splitlines() == [
        "privad: uploading [0/10, 2 s]",
        "privad: training [5/10, 2 s]",
        "privad: scoring [0/1, 2 s]",
        "privad: table 1 [0/2, 2 s]",
        "privad: table 2 [1/2, 2 s]",
        "privad: waiting [2 s]",
    ]


def test_a_delay_of_zero_prints_at_once_and_a_bad_delay_is_the_default(clock, monkeypatch):
    monkeypatch.setenv(_progress.PROGRESS_DELAY_ENV, "0")
    console = _console()
    StepProgress(console=console).add_task("at once", total=1)
    for bad in ("-1", "x", " "):
        monkeypatch.setenv(_progress.PROGRESS_DELAY_ENV, bad)
        StepProgress(console=console).add_task("too soon", total=1)
    assert console.file.getvalue() == "privad: at once [0/1, 0 s]\n"


def test_quiet_prints_nothing(clock):
    console = _console()
    clock[0] += 5
    with StepProgress(quiet=True, console=console) as progress:
        task = progress.add_task("step", total=2)
        progress.update(task, description="other", advance=1)
        progress.report("table", 1, 2)
    assert console.file.getvalue() == ""


def test_a_terminal_gets_the_bar_not_lines(clock):
    console = _console(terminal=True)
    clock[0] += 5
    with StepProgress(console=console) as progress:
        task = progress.add_task("step", total=2)
        progress.update(task, description="other", advance=2)
    assert "privad:" not in console.file.getvalue()
