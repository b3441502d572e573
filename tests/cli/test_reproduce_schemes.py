"""``privad reproduce relaxed|search --quick`` end to end, through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENTRY = "from privad.cli import main; main()"


@pytest.mark.parametrize(
    ("scheme", "expected", "as_json"),
    [
        ("relaxed", {"figure3.csv", "figure3.png", "streaming.csv", "index.html"}, True),
        (
            "search",
            {"figure1.png", "figure2.png", "figure3.png", "figure4.png", "index.html"},
            False,
        ),
    ],
)
def test_quick_reproduction_writes_its_page(tmp_path, scheme, expected, as_json):
    """The page and its files; with --json one document on stdout and no progress, else a
    step line per step on standard error (a pipe: no terminal for a bar)."""
    out = tmp_path / scheme
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "reproduce", scheme, "--quick", "--out", str(out)]
        + (["--json"] if as_json else []),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PRIVAD_PROGRESS_DELAY": "0"},
    )
    assert result.returncode == 0, result.stderr
    written = {p.name for p in out.iterdir()}
    assert expected <= written
    page = (out / "index.html").read_text()
    assert all(name in page for name in expected if name.endswith(".png"))
    steps = [line for line in result.stderr.splitlines() if line.startswith("privad: ")]
    if as_json:
        doc = json.loads(result.stdout)
        assert doc["out"] == str(out) and {Path(f).name for f in doc["files"]} >= expected
        assert steps == []
    else:
        assert "Wrote" in result.stdout
        assert len(steps) >= 3 and steps[-1].startswith("privad: done [")
        assert "privad: index.html [" in result.stderr


@pytest.mark.parametrize("scheme", ["relaxed", "search"])
def test_bad_option_is_one_line_and_writes_nothing(tmp_path, scheme):
    out = tmp_path / "never"
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "reproduce", scheme, "--runs", "0", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--runs" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "value"), [("--other-anomalies", "sometimes"), ("--yahoo-root", "no/such/folder")]
)
def test_search_reduction_options_are_checked_first(tmp_path, flag, value):
    out = tmp_path / "never"
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "reproduce", "search", flag, value, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and flag in result.stderr
    assert not out.exists()
