"""``privad reproduce relaxed|search --quick`` end to end, through the real entry point."""

from __future__ import annotations

import subprocess
import sys

import pytest

ENTRY = "from privad.cli import main; main()"


@pytest.mark.parametrize(
    ("scheme", "expected"),
    [
        ("relaxed", {"figure3.csv", "figure3.png", "streaming.csv", "index.html"}),
        ("search", {"figure1.png", "figure2.png", "figure3.png", "figure4.png", "index.html"}),
    ],
)
def test_quick_reproduction_writes_its_page(tmp_path, scheme, expected):
    out = tmp_path / scheme
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "reproduce", scheme, "--quick", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    written = {p.name for p in out.iterdir()}
    assert expected <= written
    page = (out / "index.html").read_text()
    assert all(name in page for name in expected if name.endswith(".png"))


@pytest.mark.parametrize("scheme", ["relaxed", "search"])
def test_bad_option_is_one_line_and_writes_nothing(tmp_path, scheme):
    out = tmp_path / "never"
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "reproduce", scheme, "--runs", "0", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--runs" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(("flag", "value"), [("--other-anomalies", "sometimes"),
                                             ("--yahoo-root", "no/such/folder")])
def test_search_reduction_options_are_checked_first(tmp_path, flag, value):
    out = tmp_path / "never"
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "reproduce", "search", flag, value, "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and flag in result.stderr
    assert not out.exists()
