"""Commands that need no compiled kernel never import Numba (nor does importing the
geometry package, whose kernels load on first use)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_RUN = (
    "import atexit, sys\n"
    "{preload}\n"
    "from privad.cli import main\n"
    "atexit.register(lambda: print('NUMBA-LOADED', 'numba' in sys.modules, file=sys.stderr))\n"
    "main(sys.argv[1:])\n"
)


def _numba_loaded(args: list[str], preload: str = "") -> bool:
    """Whether ``privad ARGS``, run in a fresh process, had Numba imported when it exited."""
    code = _RUN.format(preload=preload)
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    marker = [line for line in proc.stderr.splitlines() if line.startswith("NUMBA-LOADED")]
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
    assert not _numba_loaded(args)


def test_budget_show_does_not_import_numba(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.sqlite")
    assert not _numba_loaded(["budget", "set", "s", "--epsilon", "1", "--ledger", ledger])
    assert not _numba_loaded(["budget", "show", "--ledger", ledger])


def test_the_probe_sees_numba_when_it_is_loaded() -> None:
    """The check above can fail: the same probe reports Numba once something imports it."""
    assert _numba_loaded(["--help"], preload="import privad.geometry.kernels")


def test_importing_geometry_and_noise_does_not_import_numba() -> None:
    code = (
        "import sys, privad.geometry, privad.noise, privad.sensitive; print('numba' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"
