"""The code base stays ruff clean and ruff formatted (pyproject.toml); docstrings keep one style."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*arguments: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    return subprocess.run(
        [ruff, *arguments, "src", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_is_clean():
    result = _ruff("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied():
    """One formatter setting for the whole tree: ``ruff format`` changes nothing."""
    result = _ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


GOOGLE_SECTION = re.compile(r"^\s*(Args|Arguments|Attributes|Raises|Returns|Yields):\s*$")


def test_docstrings_use_one_style():
    """numpydoc sections (``Parameters`` + dashes), as scikit-learn; no Google ``Args:``."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "src" / "privad").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if GOOGLE_SECTION.match(line)
    ]
    assert not found, "Google-style docstring sections (use numpydoc):\n" + "\n".join(found)
