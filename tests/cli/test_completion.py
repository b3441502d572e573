"""Shell completion through the real entry point, with no shell around it (as in CI).

``privad --show-completion SHELL`` takes the shell by name (nothing is detected from the
parent process), and the script it prints drives Typer's completion: the variable
``_PRIVAD_COMPLETE`` makes ``privad`` answer with the words that fit.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ENTRY = "from privad.cli import main; main()"


def privad(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("COMP_", "_PRIVAD"))}
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **env},
    )


@pytest.mark.parametrize(
    ("shell", "marks"),
    [
        (
            "bash",
            ("_PRIVAD_COMPLETE=complete_bash", "complete -o default -F _privad_completion privad"),
        ),
        ("zsh", ("#compdef privad", "_PRIVAD_COMPLETE=complete_zsh")),
    ],
)
def test_show_completion_prints_the_script(shell: str, marks: tuple[str, ...]) -> None:
    result = privad("--show-completion", shell)
    assert result.returncode == 0, result.stderr
    assert all(mark in result.stdout for mark in marks) and result.stderr == ""


def test_the_script_completes_commands_and_options() -> None:
    result = privad(COMP_WORDS="privad sp id", COMP_CWORD="2", _PRIVAD_COMPLETE="complete_bash")
    assert result.returncode == 0 and result.stdout.split() == ["identify"]
    result = privad(
        COMP_WORDS="privad sp identify thyroid --me",
        COMP_CWORD="4",
        _PRIVAD_COMPLETE="complete_bash",
    )
    assert set(result.stdout.split()) == {"--mechanism", "--metric"}


def test_an_unknown_shell_is_one_line() -> None:
    result = privad("--show-completion", "tcsh")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        "privad: error: --show-completion must be one of bash, "
        "zsh, fish, powershell, pwsh, got 'tcsh'"
    )
