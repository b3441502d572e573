"""``privad reproduce sp --quick``: the files, the page, and one-line errors.

A fresh Typer app with only the ``reproduce`` group stands in for the full command.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pandas as pd
import pytest

from privad.accounting.tight import optimal_epsilon
from privad.cli import reproduce
from privad.datasets import load
from privad.sensitive.accounting import claim5_bound

FIGURES = ("figure3.png", "figure5.png", "figure6_7.png", "figure9.png", "per_record_loss.png")
TABLES = (
    "table1.csv",
    "table2.csv",
    "table3.csv",
    "figure3.csv",
    "figure5.csv",
    "figure6_7.csv",
    "figure9.csv",
    "per_record_loss.csv",
)


@pytest.fixture
def run(privad_cli):
    """Run ``privad ARGS`` in-process; return (exit status, stdout, stderr)."""
    return privad_cli(reproduce)


@pytest.fixture(scope="module")
def quick_run(privad_main, tmp_path_factory: pytest.TempPathFactory):
    """One quick reproduction shared by the tests below: (exit status, output, folder)."""
    out_dir = tmp_path_factory.mktemp("repro") / "sp"
    stdout, stderr = io.StringIO(), io.StringIO()
    args = ("reproduce", "sp", "--quick", "--out", str(out_dir), "--seed", "0")
    with pytest.MonkeyPatch.context() as mp:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = privad_main(mp, [reproduce], args)
    return code, {"out": stdout.getvalue(), "err": stderr.getvalue()}, out_dir


def test_quick_run_writes_every_file(quick_run) -> None:
    code, captured, out_dir = quick_run
    assert code == 0, captured["err"]
    names = {p.name for p in out_dir.iterdir()}
    assert set(FIGURES) | set(TABLES) | {"index.html"} <= names
    assert not [n for n in names if n.endswith(".part")]
    for name in FIGURES:
        assert (out_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Table 1" in captured["out"] and "index.html" in captured["out"]


def test_index_references_every_figure_and_table(quick_run) -> None:
    _, _, out_dir = quick_run
    page = (out_dir / "index.html").read_text(encoding="utf-8")
    srcs = set(re.findall(r'<img src="([^"]+)"', page))
    hrefs = set(re.findall(r'href="([^"#]+)"', page))
    assert srcs == set(FIGURES)
    assert set(TABLES) <= hrefs
    for link in srcs | hrefs:
        assert not link.startswith(("/", "http")), link  # relative links only
        assert (out_dir / link).is_file()
    for title in (
        "Table 1",
        "Table 2",
        "Table 3",
        "Figure 3",
        "Figure 5",
        "Figures 6",
        "Figure 9",
        "Per-record privacy loss",
    ):
        assert title in page


def test_quick_tables_carry_the_sanity_values(quick_run) -> None:
    _, _, out_dir = quick_run
    t1 = pd.read_csv(out_dir / "table1.csv")
    mammo = t1[t1["dataset"] == "Mammography"].set_index("convention")["true_br_anomalies"]
    assert mammo.to_dict() == {"self counted": 74, "self not counted": 75}
    synth = t1[t1["dataset"] == "Synthetic"].iloc[0]  # quick: n = 4000, β scaled from 97
    assert synth["n"] == 4000 and synth["beta"] == 19 and "scaled" in synth["params_source"]
    t2 = pd.read_csv(out_dir / "table2.csv")
    assert (t2["mean_error_dp"].round(4) == 0.4750).all()
    loss = pd.read_csv(out_dir / "per_record_loss.csv")
    thyroid = loss[loss["dataset"] == "Thyroid"]
    # the batch's charge (Claim 5's m) and the stored records' worst case (549)
    first = thyroid.iloc[0]
    m = claim5_bound(load("thyroid").X, 0.1).m
    assert first["m"] == m and first["charged_linear"] == pytest.approx(m * 0.1)
    assert first["charged_optimal"] == pytest.approx(optimal_epsilon(0.1, m, first["delta"]))
    assert thyroid["max_answers"].iloc[0] == 549 and thyroid["share_of_records"].max() == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--samples", "0"], "--samples must be an integer >= 1"),
        (["--seed", "-1"], "--seed must be an integer >= 0"),
        (["--seed", "abc"], "--seed must be an integer >= 0"),
    ],
)
def test_bad_options(run, tmp_path: Path, args: list[str], message: str) -> None:
    out_dir = tmp_path / "out"
    code, _, err = run("reproduce", "sp", "--out", str(out_dir), *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert message in lines[0]
    assert not out_dir.exists()


def test_out_must_not_be_a_file(run, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    code, _, err = run("reproduce", "sp", "--out", str(target))
    assert code == 2 and "is not a folder" in err
    assert target.read_text() == "x"
