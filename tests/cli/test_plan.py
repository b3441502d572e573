"""``privad sp plan``, ``privad search plan`` and ``privad budget set --delta``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privad.accounting import Guarantee, Ledger, scaled
from privad.accounting.tight import optimal_delta
from privad.cli import budget, search, sp


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "default.sqlite"))
    return privad_cli(sp, search, budget)


def test_sp_plan_json_reports_both_totals(run, tmp_path: Path) -> None:
    code, out, err = run(
        "sp",
        "plan",
        "--beta",
        "18",
        "--epsilon",
        "0.1",
        "--queries",
        "1825",
        "--delta",
        "1e-6",
        "--json",
        "--figure",
        str(tmp_path / "p.png"),
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["cost"]["linear_epsilon"] == 182.5
    assert data["cost"]["optimal_epsilon"] == pytest.approx(28.674131)
    assert optimal_delta(0.1, 1825, data["cost"]["optimal_epsilon"]) <= 1e-6
    rows = {r["ball"]: r for r in data["flag_probability"]}
    assert rows[18]["anomaly"] and not rows[19]["anomaly"]
    assert rows[1]["sp"] > rows[1]["dp"]  # SP identifies clear anomalies, DP cannot
    assert (tmp_path / "p.png").stat().st_size > 0


def test_sp_plan_table_and_errors(run) -> None:
    code, out, _ = run("sp", "plan", "--beta", "5", "--epsilon", "1", "--queries", "10")
    assert code == 0 and "ε = 10 by linear composition" in out
    code, _, err = run("sp", "plan", "--beta", "5", "--epsilon", "1", "--delta", "0")
    assert code == 2 and "--delta" in err and len(err.strip().splitlines()) == 1


def test_search_plan(run) -> None:
    code, out, err = run(
        "search",
        "plan",
        "--epsilon",
        "1",
        "--t-low",
        "1",
        "--t-high",
        "1.7",
        "--items",
        "1000",
        "--delta",
        "1e-6",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["threshold_ratio"] == pytest.approx(0.7)
    assert data["cost"]["optimal_epsilon"] < data["cost"]["linear_epsilon"]


def test_budget_set_delta_and_show(run, tmp_path: Path) -> None:
    ledger = str(tmp_path / "l.sqlite")
    code, out, err = run(
        "budget",
        "set",
        "t",
        "--epsilon",
        "30",
        "--notion",
        "sensitive",
        "--delta",
        "1e-6",
        "--ledger",
        ledger,
    )
    assert code == 0, err and "δ 1e-06" in out
    with Ledger(ledger) as book:
        book.spend("t", scaled(Guarantee("sensitive", 0.1, "graph", k=1), 1825), "labels")
    code, out, _ = run("budget", "show", "--ledger", ledger)
    assert code == 0 and "28.674131" in out and "182.5" in out
    code, _, err = run("budget", "set", "t", "--epsilon", "30", "--delta", "x", "--ledger", ledger)
    assert code == 2 and "--delta" in err
