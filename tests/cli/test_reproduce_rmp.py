"""``privad reproduce rmp``: the quick run end to end and one-line errors.

A fresh Typer app with only the ``reproduce`` group stands in for the full command.
"""

from __future__ import annotations

import pandas as pd
import pytest

from privad.cli import reproduce


@pytest.fixture
def run(privad_cli):
    """Run ``privad ARGS`` in-process; return (exit status, stdout, stderr)."""
    return privad_cli(reproduce)


def test_quick_run_writes_tables_figures_and_page(run, tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVAD_PROGRESS_DELAY", "0")  # step lines from the start
    out = tmp_path / "rmp"
    code, stdout, err = run("reproduce", "rmp", "--quick", "--skip-privacy", "--out", str(out))
    assert code == 0, err
    # captured standard error is no terminal: one line per step, the last one "done"
    steps = err.strip().splitlines()
    assert len(steps) >= 5 and all(line.startswith("privad: ") for line in steps)
    assert any("seed 0" in line for line in steps) and steps[-1].startswith("privad: done [")
    written = {p.name for p in out.iterdir()}
    expected = {
        "datasets.csv",
        "table1.csv",
        "table1_summary.csv",
        "table1.png",
        "roc.csv",
        "roc_abalone.png",
        "roc_banana-8d.png",
        "roc_digits.png",
        "dimension.csv",
        "dimension.png",
        "timing.csv",
        "index.html",
    }
    assert expected <= written
    assert not [p for p in written if p.startswith(".")]  # no temporary files left
    page = (out / "index.html").read_text(encoding="utf-8")
    for name in (
        "table1.png",
        "roc_abalone.png",
        "dimension.png",
        "Ours beside the paper",
        "--skip-privacy",
    ):
        assert name in page
    table = pd.read_csv(out / "table1.csv")
    assert table["auc"].between(0, 1).all()
    assert {"raw", "rmp"} == set(table["method"])
    assert "Wrote" in stdout and str(out) in stdout


def test_missing_gas_file_is_one_line_and_writes_nothing(run, tmp_path, error_line):
    out = tmp_path / "never"
    code, _, err = run(
        "reproduce", "rmp", "--quick", "--gas", str(tmp_path / "no.npz"), "--out", str(out)
    )
    assert code == 2
    assert "--gas" in error_line(err)
    assert not out.exists()


@pytest.mark.parametrize(
    ("option", "value"), [("--seeds", "0"), ("--epochs", "many"), ("--seed", "-1")]
)
def test_bad_option_is_one_line_and_writes_nothing(run, tmp_path, error_line, option, value):
    out = tmp_path / "never"
    code, _, err = run("reproduce", "rmp", option, value, "--out", str(out))
    assert code == 2
    assert option in error_line(err)
    assert not out.exists()


def test_out_must_be_a_folder(run, tmp_path, error_line):
    target = tmp_path / "file.txt"
    target.write_text("x")
    code, _, err = run("reproduce", "rmp", "--quick", "--out", str(target))
    assert code == 2
    assert "not a folder" in error_line(err)
