"""The reproduction of the DP noisy binary search paper (:mod:`privad.experiments.search`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.errors import ParameterError
from privad.experiments import search as exp
from privad.experiments.search import trials
from privad.search import PosteriorThreshold, search


@pytest.fixture(scope="module")
def small():
    return exp.regime_problems(200, seed=1)


def test_regimes_have_the_papers_threshold_ratios(small) -> None:
    assert [round(p.threshold_ratio, 3) for p in small] == [0.647, 0.701]
    assert all(p.n_items == 200 for p in small)
    grid = exp.regime_problems(100, seed=1, ratios=[0.5, 2.0])
    assert [round(p.threshold_ratio, 6) for p in grid] == [0.5, 2.0, 0.5, 2.0]


def test_nab_series_are_used_or_listed_with_the_reason() -> None:
    problems, table = exp.nab_problems()
    assert len(problems) == int(table["used"].sum()) >= 1
    skipped = table[~table["used"]]
    assert len(table) == 5 and not skipped.empty
    assert all(r.startswith("skipped: t_h") for r in skipped["reason"])
    assert (table.loc[table["used"], "reason"] == "").all()
    # the paper's reduction (default) drops the other window points; "keep" is the old one
    ec2 = table.set_index("series").loc["nab:ec2_request_latency_system_failure"]
    assert ec2["threshold_ratio"] == pytest.approx(0.667, abs=1e-3)
    assert ec2["threshold_ratio_other_reading"] == pytest.approx(0.379, abs=1e-3)
    assert ec2["n_reduced"] == ec2["n"] - ec2["labelled_points"] + 1
    _, kept = exp.nab_problems(other_anomalies="keep")
    assert kept.set_index("series").loc[ec2.name, "threshold_ratio"] == pytest.approx(
        0.379, abs=1e-3
    )


def _write_yahoo(folder: Path, name: str, values, labels) -> None:
    rows = [f"{k + 1},{v},{lab}" for k, (v, lab) in enumerate(zip(values, labels, strict=True))]
    (folder / f"{name}.csv").write_text(
        "timestamp,value,is_anomaly\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )


def test_yahoo_folder_joins_figure1_and_gives_figures_2_to_4(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    folder = tmp_path / "A1"
    folder.mkdir()
    for name, x_star in (("real_6", 1.88), ("real_8", 1.96), ("real_10", 3.0)):
        values = list(np.round(rng.uniform(0.0, 1.0, 120), 6)) + [1.0, x_star, 1.5, 1.7]
        _write_yahoo(folder, name, values, [0] * 121 + [1, 1, 1])
    _write_yahoo(folder, "real_2", [1.0, 2.0], [0, 0])  # no anomaly: listed, skipped
    (folder / "real_3.csv").write_text("nonsense\n1\n", encoding="utf-8")
    problems, table = exp.yahoo_problems(folder)
    assert [p.name for p in problems] == ["yahoo:real_6", "yahoo:real_8", "yahoo:real_10"]
    assert [round(p.threshold_ratio, 3) for p in problems[:2]] == [0.647, 0.701]
    assert set(table.loc[~table["used"], "series"]) == {"yahoo:real_2", "yahoo:real_3"}
    files = exp.reproduce(tmp_path / "out", quick=True, runs=1, yahoo_root=folder)
    assert files[-1].name == "index.html"
    regimes = pd.read_csv(tmp_path / "out" / "regimes.csv")
    assert list(regimes["dataset"]) == ["yahoo:real_6", "yahoo:real_8"]
    f1 = pd.read_csv(tmp_path / "out" / "figure1.csv")
    assert (f1["source"] == "yahoo").sum() == 3
    assert set(pd.read_csv(tmp_path / "out" / "figure2.csv")["dataset"]) == {
        "yahoo:real_6",
        "yahoo:real_8",
    }
    with pytest.raises(ParameterError, match="not a folder"):
        exp.yahoo_problems(tmp_path / "missing")
    with pytest.raises(ParameterError, match="other_anomalies"):
        exp.settings(other_anomalies="sometimes")


def test_budget_checkpoints_equal_separate_runs_with_that_budget(small) -> None:
    p = small[1]
    budgets = [3.0, 8.0, 20.0]
    for eps in (1.0, 2.5):
        rule = trials._BudgetCheckpoints(budgets, p.anomaly_index, 4)
        search(p.oracle("laplace", eps, rng=7), halting=rule, max_queries=None, rng=8)
        for b, (hit, queries) in zip(budgets, rule.hits, strict=True):
            res = search(
                p.oracle("laplace", eps, rng=7),
                halting=PosteriorThreshold(0.999999),
                budget=b,
                rng=8,
            )
            assert res.halted_by == ("budget",)
            assert (res.n_queries, res.contains(p.anomaly_index)) == (queries, hit)
            assert queries == int(b // eps)


def test_alpha_checkpoints_equal_separate_runs_with_that_alpha(small) -> None:
    p = small[0]
    alphas = [0.2, 0.5, 0.9]
    rule = trials._AlphaCheckpoints(alphas, p.anomaly_index, 4)
    search(p.oracle("binarized", 1.0, rng=3), halting=rule, rng=4)
    assert len(rule.hits) == 3
    for a, (hit, queries) in zip(alphas, rule.hits, strict=True):
        res = search(p.oracle("binarized", 1.0, rng=3), halting=PosteriorThreshold(a), rng=4)
        assert (res.n_queries, res.contains(p.anomaly_index)) == (queries, hit)


def test_figure_tables(small) -> None:
    t2 = exp.figure2(small, epsilons=(1.0, 4.0), runs=2, seed=0)
    assert len(t2) == 2 * 3 * 2 and set(t2["kind"]) == set(exp.KINDS)
    assert t2["error_rate"].between(0, 1).all() and (t2["mean_privacy"] > 0).all()
    rr = t2[t2["kind"] == "randomized-response"]
    np.testing.assert_allclose(rr["p_oracle"], 1 / (1 + np.exp(rr["epsilon"])))
    t3 = exp.figure3(small[:1], epsilons=(2.0,), budgets=(1.0, 10.0), runs=2)
    assert t3["queries"].tolist() == [0, 5]
    assert t3.loc[t3["budget"] == 1.0, "error_rate"].iloc[0] > 0.5  # no query: S is random
    t4 = exp.figure4(small[:1], epsilons=(1.0,), alphas=(0.3, 0.6), runs=2)
    assert (np.diff(t4["mean_queries"]) >= 0).all()
    for draw, table in ((exp.draw_figure2, t2), (exp.draw_figure3, t3), (exp.draw_figure4, t4)):
        assert draw(table).axes


def test_reproduce_quick_writes_the_expected_files(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    files = exp.reproduce(
        tmp_path / "out",
        quick=True,
        seed=2,
        runs=3,
        progress=lambda s, d, t: seen.append((s, d, t)),
    )
    names = sorted(f.name for f in files)
    expected = [
        "datasets.csv",
        "figure1.csv",
        "figure1.png",
        "figure2.csv",
        "figure2.png",
        "figure3.csv",
        "figure3.png",
        "figure4.csv",
        "figure4.png",
        "index.html",
        "regimes.csv",
    ]
    assert names == expected
    assert all(f.is_file() and f.stat().st_size > 0 for f in files)
    assert files[-1].name == "index.html"
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    for name in expected[:-2] + ["regimes.csv"]:
        assert f'"{name}"' in page
    assert "Skipped real series: 2" in page and "c = 3 runs" in page
    f1 = pd.read_csv(tmp_path / "out" / "figure1.csv")
    assert set(f1["source"]) == {"nab", "normal-mixture", "skewed"}
    assert (f1["runs"] == 3).all()
    assert seen[-1][1] == seen[-1][2] and [d for _, d, _ in seen[1:]] == sorted(
        d for _, d, _ in seen[1:]
    )
    assert (tmp_path / "out" / "figure2.png").read_bytes()[:4] == b"\x89PNG"


def test_worker_processes_give_the_same_numbers(small) -> None:
    serial = exp.figure3(small, epsilons=(1.0, 3.0), budgets=(5.0, 30.0), runs=2, workers=1)
    seen: list[str] = []
    pooled = exp.figure3(
        small, epsilons=(1.0, 3.0), budgets=(5.0, 30.0), runs=2, workers=2, tick=seen.append
    )
    pd.testing.assert_frame_equal(serial, pooled)
    assert sorted(seen) == sorted(f"{p.name} ε={e:g}" for p in small for e in (1.0, 3.0))
