"""privad.experiments.relaxed: documented columns, the quick reproduction, the figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.errors import ParameterError
from privad.experiments import relaxed as ex


@pytest.fixture(scope="module")
def cache() -> ex.RingCache:
    return ex.RingCache()


@pytest.fixture(scope="module")
def fig3(cache: ex.RingCache) -> pd.DataFrame:
    return ex.figure3(separations=(50.0, 400.0), n=3_000, runs=2, seed=1, cache=cache)


def test_figure3_columns_and_grid(fig3: pd.DataFrame) -> None:
    for col in (
        "separation",
        "epsilon",
        "run",
        "n",
        "accuracy",
        "subset_size",
        "baseline_accuracy",
        "baseline_subset_size",
        "n_output",
        "d_tp",
        "w_o",
        "outlier_radius",
        "noise_scale",
        "noise_to_separation",
        "dbscan_eps",
        "time_perturbation_s",
        "time_detection_s",
        "time_correction_s",
        "time_total_s",
        "time_dbscan_family_s",
    ):
        assert col in fig3.columns, col
    assert len(fig3) == 2 * 3 * 2
    assert set(fig3["epsilon"]) == set(ex.EPSILONS)
    assert (
        fig3[["accuracy", "subset_size", "baseline_subset_size"]]
        .apply(lambda c: c.between(0, 1).all())
        .all()
    )
    # the noise scale is RS/ε: ten times larger at ε = 0.1 than at ε = 1
    by = fig3.groupby("epsilon")["noise_scale"].mean()
    assert by[0.1] == pytest.approx(10 * by[1.0])
    # well separated, ε = 1: the correction finds the outliers in a small subset (a run
    # misses a few of its outliers by chance: 0.983 to 1.0 over 12 measured runs)
    easy = fig3[(fig3["separation"] == 400.0) & (fig3["epsilon"] == 1.0)]
    assert (easy["accuracy"] >= 0.97).all() and (easy["subset_size"] < 0.2).all()


def test_summary_noise_table_and_paper_claims(fig3: pd.DataFrame) -> None:
    s = ex.figure3_summary(fig3)
    assert len(s) == 6 and (s["runs"] == 2).all()
    assert {"paper_accuracy", "paper_subset_size"} <= set(s.columns)
    assert ex.paper_claim(220, 0.1) == ("≈ 0.75", "< 0.20")
    assert ex.paper_claim(50, 0.5)[0] == "0.95–1.00"
    t = ex.noise_table(fig3)
    row = t[(t["separation"] == 50.0) & (t["epsilon"] == 0.1)].iloc[0]
    assert row["noise_exceeds_separation"]  # RS/ε ≈ 120 > 50
    assert row["p_coordinate_exceeds_separation"] == pytest.approx(
        np.exp(-50.0 / row["noise_scale"])
    )


def test_options_table_matches_the_pipeline(cache: ex.RingCache, fig3: pd.DataFrame) -> None:
    o = ex.reconstruction_options(separations=(50.0, 400.0), n=3_000, runs=2, seed=1, cache=cache)
    names = {opt.name for opt in ex.OPTIONS} | {"uncorrected"}
    assert set(o["option"]) == names and set(o["dbscan"]) == {"history", "adaptive"}
    assert len(o) == len(names) * 2 * 2 * 3 * 2
    # the default option with the adaptive family is exactly what run_pipeline computed
    mine = o[(o["option"] == "radius, ρ history") & (o["dbscan"] == "adaptive")]
    merged = mine.merge(fig3, on=["separation", "epsilon", "run"], suffixes=("", "_fig"))
    assert np.allclose(merged["accuracy"], merged["accuracy_fig"])
    assert np.allclose(merged["subset_size"], merged["subset_size_fig"])
    base = o[(o["option"] == "uncorrected") & (o["dbscan"] == "adaptive")]
    merged = base.merge(fig3, on=["separation", "epsilon", "run"], suffixes=("", "_fig"))
    assert np.allclose(merged["subset_size"], merged["baseline_subset_size"])
    assert np.allclose(merged["accuracy"], merged["baseline_accuracy"])
    wide = ex.options_summary(o)
    assert {"acc_50", "sub_50", "acc_400", "sub_400"} <= set(wide.columns)


def test_streaming_example() -> None:
    t = ex.streaming_example(windows=2, window_size=800, seed=2)
    assert list(t["window"]) == [0, 1] and (t["n"] == 800).all()
    assert {"accuracy", "subset_size", "baseline_accuracy", "time_correction_ms"} <= set(t.columns)


def test_draw_figure3_writes_a_png(fig3: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "f3.png"
    fig = ex.draw_figure3(fig3, path)
    assert len(fig.axes) == 2
    for ax, column in zip(fig.axes, ("accuracy", "subset_size"), strict=True):
        solid, dashed = ax.lines[0], ax.lines[1]  # the first ε: corrected, then uncorrected
        first = fig3[fig3["epsilon"] == fig3["epsilon"].min()].groupby("separation")
        assert list(solid.get_ydata()) == pytest.approx(list(100 * first[column].mean()))
        assert list(dashed.get_ydata()) == pytest.approx(
            list(100 * first[f"baseline_{column}"].mean())
        )
        assert dashed.get_label().endswith("uncorrected")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_quick_reproduce_writes_every_file(tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    files = ex.reproduce(
        tmp_path / "out", quick=True, seed=3, progress=lambda s, d, t: calls.append((s, d, t))
    )
    names = [p.name for p in files]
    assert names[-1] == "index.html"
    assert set(names) == {
        "figure3.csv",
        "figure3_summary.csv",
        "figure3.png",
        "noise.csv",
        "options.csv",
        "options_summary.csv",
        "options.png",
        "streaming.csv",
        "index.html",
    }
    assert all(p.exists() and p.stat().st_size > 0 for p in files)
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "figure3.png" in page and "Reconstruction options" in page
    assert calls[-1][0] == "done" and calls[-1][1] == calls[-1][2] == 5
    df = pd.read_csv(tmp_path / "out" / "figure3.csv")
    assert len(df) == 4 * 3 and set(df["separation"]) == set(ex.SEPARATIONS)
    assert not list((tmp_path / "out").glob(".*.part"))  # atomic writes leave no temp files


def test_protected_exchange_grid_pairs_with_figure3(
    cache: ex.RingCache, fig3: pd.DataFrame
) -> None:
    variants = ((None, None), (1.0, None), (1.0, 0.5))
    g = ex.protected_exchange_grid(
        (50.0, 400.0), variants=variants, n=3_000, runs=2, seed=1, cache=cache
    )
    assert len(g) == 2 * 3 * 3 * 2
    # the unprotected rows are Figure 3's runs (same data, same perturbation noise)
    u = g[g["exchange"] == "unprotected"].reset_index(drop=True)
    for col in ("accuracy", "subset_size", "baseline_accuracy", "n_output"):
        assert u[col].tolist() == fig3[col].tolist(), col
    # every variant perturbs T with the same noise: the same O' before correction
    keys = ["separation", "epsilon", "run"]
    assert (g.groupby(keys)["baseline_subset_size"].nunique() == 1).all()
    p = g[g["exchange"] == "protected ε_CS=1·dε, ε_TP=0.5·dε"].iloc[0]
    assert p["cs_epsilon"] == pytest.approx(2 * p["epsilon"])  # d = 2 columns
    assert p["tp_epsilon"] == pytest.approx(p["epsilon"])
    assert p["charged_epsilon"] == pytest.approx(4 * p["epsilon"])  # ε_TP costs nothing more
    s = ex.protected_exchange_summary(g)
    assert len(s) == 2 * 3 * 3 and (s["runs"] == 2).all()
    assert (s["accuracy_min"] <= s["accuracy"]).all() and (s["accuracy"] <= s["accuracy_max"]).all()
    with pytest.raises(ParameterError, match="ε_TP applies to the protected exchange"):
        ex.protected_exchange_grid((50.0,), variants=((None, 1.0),), n=3_000, runs=1)
