"""Every command and group of ``privad`` with no argument at all: no traceback.

The commands are read from the Typer (Click) command tree, so a command added later is in
the matrix without editing this file. A group prints its help and exits 2; a command that
needs something says what in one line ``privad: error: ...`` and exits 2; a command that
needs nothing runs (exit 0). Each runs in an empty folder with its own HOME and ledger, and
nothing may appear there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import typer

from privad.cli import budget, datasets, demo, reproduce, rmp, search, sensor, serve, sp

GROUPS = (budget, datasets, demo, reproduce, rmp, search, sensor, serve, sp)

# Commands that need no argument and do real work when given none (tests/cli/test_demo.py
# runs the tour); every other command must answer at once.
RUNS_WITHOUT_ARGUMENTS = {"demo"}
# Commands that need no argument and answer at once with exit 0.
ANSWERS_WITHOUT_ARGUMENTS = {"datasets list"}


def _command_tree() -> Iterator[tuple[str, bool]]:
    """(path, is_group) of ``privad`` itself (path "") and every group and command under it."""
    app = typer.Typer(add_completion=False)

    @app.callback()
    def _root() -> None:
        """privad (test app)."""

    for group in GROUPS:
        group.register(app)

    def walk(command, path: tuple[str, ...]) -> Iterator[tuple[str, bool]]:
        children = getattr(command, "commands", None)
        yield " ".join(path), bool(children)
        for name, child in (children or {}).items():
            yield from walk(child, (*path, name))

    yield from walk(typer.main.get_command(app), ())


COMMANDS = sorted(_command_tree())


def test_the_tree_holds_every_group_and_command() -> None:
    names = {path for path, _ in COMMANDS}
    assert {"sp identify", "datasets describe", "rmp participate", "serve rmp"} <= names
    # privad and its groups (demo is a command)
    assert sum(is_group for _, is_group in COMMANDS) == len(GROUPS)
    assert len(COMMANDS) >= 40
    assert RUNS_WITHOUT_ARGUMENTS | ANSWERS_WITHOUT_ARGUMENTS <= names


@pytest.mark.parametrize(
    ("path", "is_group"),
    [case for case in COMMANDS if case[0] not in RUNS_WITHOUT_ARGUMENTS],
    ids=[path or "privad" for path, _ in COMMANDS if path not in RUNS_WITHOUT_ARGUMENTS],
)
def test_no_arguments_is_help_or_one_line(
    path: str, is_group: bool, privad_cli, error_line, in_tmp_home
) -> None:
    before = sorted(os.listdir(in_tmp_home))
    code, out, err = privad_cli(*GROUPS)(*path.split())
    assert "Traceback" not in out + err
    if is_group:
        assert code == 2 and err == "" and "Usage" in out
    elif path in ANSWERS_WITHOUT_ARGUMENTS:
        assert code == 0 and err == "" and out
    else:
        assert code == 2 and out == ""
        line = error_line(err)
        assert "required" not in line or line.endswith(f"(see 'privad {path} --help')")
    assert sorted(os.listdir(in_tmp_home)) == before
