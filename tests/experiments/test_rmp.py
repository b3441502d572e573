"""privad.experiments.rmp: the data of section 6, Table 1 on a tiny configuration, the
dimension study, ROC curves and figures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privad.datasets import load_abalone, minmax_scale
from privad.errors import DatasetNotFoundError, ParameterError
from privad.experiments import rmp

# --------------------------------------------------------------------------------------------
# Data preparation
# --------------------------------------------------------------------------------------------


def test_abalone_is_the_first_1000_records_scaled_then_5_percent_uniform_anomalies():
    d = rmp.prepare_dataset("abalone", seed=0)
    assert d.X.shape == (1053, 8)
    assert d.y.tolist() == [0] * 1000 + [1] * 53
    assert d.y.mean() == pytest.approx(0.05, abs=0.001)
    assert d.X.min() >= 0.0 and d.X.max() <= 1.0
    np.testing.assert_allclose(d.X[:1000], minmax_scale(load_abalone().X[:1000]))
    # every column of the normal records spans [0, 1] exactly (min-max scaling)
    np.testing.assert_allclose(d.X[:1000].min(axis=0), 0.0)
    np.testing.assert_allclose(d.X[:1000].max(axis=0), 1.0)


def test_the_anomalies_depend_on_the_seed_and_only_on_it():
    a, b, c = (rmp.prepare_dataset("abalone", seed=s) for s in (3, 3, 4))
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.X[:1000], c.X[:1000])
    assert not np.allclose(a.X[1000:], c.X[1000:])


@pytest.mark.parametrize(
    ("name", "shape", "anomalies"),
    [
        ("banana-2d", (1053, 2), 53),
        ("banana-8d", (1053, 8), 53),
        ("digits", (1053, 64), 53),
        ("breast-cancer", (599, 30), 30),  # 569 records, all kept
    ],
)
def test_every_bundled_dataset_has_the_papers_layout(name, shape, anomalies):
    d = rmp.prepare_dataset(name, seed=1)
    assert d.X.shape == shape
    assert int(d.y.sum()) == anomalies
    assert (d.y[-anomalies:] == 1).all() and (d.y[:-anomalies] == 0).all()
    assert d.X.min() >= 0.0 and d.X.max() <= 1.0
    assert d.name == name


def test_a_missing_gas_file_is_skipped_with_the_reason(tmp_path):
    cache = rmp.DataCache(gas_path=tmp_path / "nowhere.npz")
    with pytest.raises(DatasetNotFoundError, match="nowhere.npz"):
        cache.get("gas", 0)
    present, skipped = cache.available(["abalone", "gas"])
    assert present == ["abalone"]
    assert "nowhere.npz" in skipped["gas"]


def test_unknown_dataset_and_bad_alpha_are_parameter_errors():
    with pytest.raises(ParameterError, match="dataset"):
        rmp.prepare_dataset("hars")
    with pytest.raises(ParameterError, match="alpha"):
        rmp.table1(datasets=["abalone"], alphas=[1.5], epochs=1)


def test_r_values_follow_the_fractions_and_keep_w_at_least_one():
    assert rmp.r_values(2) == [(0.0, 1)]
    assert [r for _, r in rmp.r_values(8)] == [1, 2, 3, 4]
    assert [r for _, r in rmp.r_values(128)] == [1, 13, 32, 51, 64]
    assert [r for _, r in rmp.r_values(3, (0.0, 0.5, 0.9))] == [1, 2]


def test_the_paper_table_is_the_printed_one():
    t = rmp.paper_table1()
    assert len(t) == 5 * 6
    abalone = t[t["dataset"] == "Abalone"]
    assert abalone["auc"].tolist()[:4] == [1.0, 0.95, 0.92, 0.87]
    assert abalone["auc"].iloc[4:].isna().all()  # N/A for α = 0.4, 0.6
    hars = t[(t["dataset"] == "HARS") & np.isclose(t["alpha"], 0.6)]
    assert hars["auc"].item() == 0.95


# --------------------------------------------------------------------------------------------
# Table 1 on a tiny configuration
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny():
    """Abalone with 300 normal records, Raw and α ∈ {0.01, 0.6}, 150 epochs, one seed."""
    cache = rmp.DataCache(n_first=300)
    scores = rmp.evaluate(rmp.table1_specs(["abalone"], [0.01, 0.6], [0]), epochs=150, cache=cache)
    return scores, rmp.auc_table(scores)


def test_table1_has_one_row_per_fit_with_aucs_in_the_unit_interval(tiny):
    scores, auc = tiny
    assert len(scores) == 3 * 316  # 300 normal + 16 anomalies, scored by each fit
    assert auc[["method", "alpha", "r", "w"]].to_dict("records") == [
        {"method": "raw", "alpha": pytest.approx(math.nan, nan_ok=True), "r": 0, "w": 8},
        {"method": "rmp", "alpha": 0.01, "r": 1, "w": 7},
        {"method": "rmp", "alpha": 0.6, "r": 1, "w": 7},
    ]
    assert auc["auc"].between(0.0, 1.0).all()
    assert auc["detection_rate"].between(0.0, 1.0).all()
    assert (auc["n_scored"] == 316).all() and (auc["n_anomalies"] == 16).all()
    assert (auc["fit_s"] > 0).all()


def test_rmp_at_small_alpha_stays_close_to_raw(tiny):
    """Section 6: at α = 0.01 "the accuracy decreases slightly (about 1 %)"."""
    _, auc = tiny
    raw = auc.loc[auc["method"] == "raw", "auc"].item()
    small = auc.loc[np.isclose(auc["alpha"], 0.01), "auc"].item()
    large = auc.loc[np.isclose(auc["alpha"], 0.6), "auc"].item()
    assert raw > 0.95
    assert small > raw - 0.05
    assert large < small  # "as α increases, so does the loss in accuracy"


def test_summary_and_display_put_the_paper_beside(tiny):
    _, auc = tiny
    summary = rmp.table1_summary(auc)
    row = summary[np.isclose(summary["alpha"].fillna(-1), 0.01)].iloc[0]
    assert row["paper_row"] == "Abalone" and row["paper_auc"] == 0.95
    assert row["runs"] == 1 and row["auc_sd"] == 0.0
    assert math.isnan(summary[np.isclose(summary["alpha"].fillna(-1), 0.6)]["paper_auc"].item())
    display = rmp.table1_display(summary)
    assert list(display.columns) == ["dataset", "source", "n", "Raw", "α = 0.01", "α = 0.6"]
    assert display.iloc[1]["α = 0.01"] == "0.95" and display.iloc[1]["α = 0.6"] == "—"


def test_same_seed_same_numbers():
    cache = rmp.DataCache(n_first=60)
    specs = [rmp.FitSpec("banana-8d", "rmp", 0.2, 1, 5)]
    a = rmp.evaluate(specs, epochs=3, cache=cache)
    b = rmp.evaluate(specs, epochs=3, cache=rmp.DataCache(n_first=60))
    pd.testing.assert_frame_equal(
        a.drop(columns=["fit_s", "score_s"]), b.drop(columns=["fit_s", "score_s"])
    )


def test_the_2d_banana_at_r_1_trains_without_warnings():
    """w = 1: the AANN gets a 1-D target, so scikit-learn has nothing to warn about (the
    experiment used to silence a DataConversionWarning per epoch)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = rmp.evaluate(
            [rmp.FitSpec("banana-2d", "rmp", 0.1, 1, 0)], epochs=3, cache=rmp.DataCache(n_first=60)
        )
    assert (scores["w"] == 1).all() and np.isfinite(scores["score"]).all()


def test_holdout_scores_only_records_it_did_not_train_on():
    cache = rmp.DataCache(n_first=100)
    scores = rmp.evaluate(
        [rmp.FitSpec("abalone", "raw", None, None, 0)], epochs=2, protocol="holdout", cache=cache
    )
    assert scores["n_train"].iloc[0] + len(scores) == 105
    assert scores["label"].sum() == 3  # 5 anomalies: 2 train, 3 scored
    assert scores["record"].is_unique


def test_roc_curves_and_figures(tiny):
    scores, auc = tiny
    roc = rmp.roc_curves(scores)
    assert set(roc.columns) >= {"dataset", "method", "alpha", "fpr", "tpr", "auc"}
    for _, g in roc.groupby(["method", "alpha"], dropna=False):
        assert g["fpr"].iloc[0] == 0.0 and g["fpr"].iloc[-1] == 1.0
        assert g["tpr"].is_monotonic_increasing
    fig = rmp.draw_roc(roc, "abalone")
    assert len(fig.axes[0].lines) == 1 + 3  # the diagonal, Raw, two α
    assert rmp.draw_table1(rmp.table1_summary(auc)).axes


def test_dimension_study_reaches_half_the_attributes():
    auc = rmp.dimension_study(
        datasets=["abalone"],
        alpha=0.2,
        fractions=(0.0, 0.5),
        epochs=2,
        cache=rmp.DataCache(n_first=60),
    )
    summary = rmp.dimension_summary(auc, 0.2)
    assert summary["r"].tolist() == [1, 4]
    assert summary["w"].tolist() == [7, 4]
    assert summary["r_over_n"].tolist() == [0.125, 0.5]
    assert summary["change_from_r1"].iloc[0] == 0.0
    assert rmp.draw_dimension(summary).axes
