"""Commands that need no compiled kernel never import Numba (nor does importing the
geometry package, whose kernels load on first use); commands that show no progress never
import Rich's progress machinery."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_RUN = (
    "import atexit, sys\n"
    "{preload}\n"
    "from privad.cli import main\n"
    "atexit.register(lambda: print('LOADED', {module!r} in sys.modules, file=sys.stderr))\n"
    "main(sys.argv[1:])\n"
)


def _loaded(args: list[str], preload: str = "", module: str = "numba") -> bool:
    """Whether ``privad ARGS``, run in a fresh process, had ``module`` imported when it exited."""
    code = _RUN.format(preload=preload, module=module)
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    marker = [line for line in proc.stderr.splitlines() if line.startswith("LOADED")]
    assert marker, proc.stderr
    return marker[-1].split()[-1] == "True"


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["datasets", "list"],
        ["sp", "plan", "--beta", "10", "--epsilon", "0.1"],
        ["sp", "identify", "--help"],
    ],
)
def test_commands_without_kernels_do_not_import_numba(args: list[str]) -> None:
    assert not _loaded(args)


def test_budget_show_does_not_import_numba(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.sqlite")
    assert not _loaded(["budget", "set", "s", "--epsilon", "1", "--ledger", ledger])
    assert not _loaded(["budget", "show", "--ledger", ledger])


def test_the_probe_sees_numba_when_it_is_loaded() -> None:
    """The check above can fail: the same probe reports Numba once something imports it."""
    assert _loaded(["--help"], preload="import privad.geometry.kernels")


def test_importing_geometry_and_noise_does_not_import_numba() -> None:
    code = (
        "import sys, privad.geometry, privad.noise, privad.sensitive; print('numba' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("args", [["--help"], ["sp", "identify", "--help"], ["datasets", "list"]])
def test_commands_without_progress_do_not_import_rich_progress(args: list[str]) -> None:
    assert not _loaded(args, module="rich.progress")


def test_the_probe_sees_rich_progress_when_it_is_loaded() -> None:
    assert _loaded(["--help"], preload="import privad.cli._progress", module="rich.progress")
