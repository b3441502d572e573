"""The RMP privacy evaluation (:mod:`privad.experiments.rmp_privacy`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.errors import ParameterError, PrivadError
from privad.experiments import rmp_privacy as exp


@pytest.fixture(scope="module")
def data():
    return exp.attack_datasets(seed=3, victim=300, known=300)


def test_datasets_are_scaled_disjoint_and_reproducible(data) -> None:
    assert [d.name for d in data] == ["gaussian", "abalone"]
    for d in data:
        assert d.victim.shape == (8, 300) and d.known.shape == (8, 300)
        both = np.hstack([d.victim, d.known])
        assert both.min() >= 0.0 and both.max() <= 1.0
    again = exp.attack_datasets(seed=3, victim=300, known=300)
    for a, b in zip(data, again, strict=True):
        np.testing.assert_array_equal(a.victim, b.victim)


def test_map_vs_alpha_exact_matrix_beats_the_trivial_guess_public_T_degrades(data) -> None:
    t = exp.map_vs_alpha(data, alphas=(0.01, 0.6), repeats=3, seed=1)
    assert len(t) == 2 * 2 * 2 * 2 * 3  # data sets, α, data spaces, priors, attackers
    assert set(t["kind"]) == set(exp.ATTACKERS) and (t["w"] == 7).all() and (t["r"] == 1).all()
    exact = t[t["kind"] == "exact"]
    assert (exact["relative_rmse"] < 0.5).all()
    public = t[(t["kind"] == "public") & (t["prior"] == "sample")].set_index(
        ["dataset", "double_logistic", "alpha"]
    )["relative_rmse"]
    for name in ("gaussian", "abalone"):
        for dl in (False, True):
            assert public[(name, dl, 0.6)] > 3 * public[(name, dl, 0.01)]
    aware = t[t["kind"] == "public-aware"]
    naive = t[t["kind"] == "public"]
    # knowing α helps the attacker at large α
    assert (
        aware[aware["alpha"] == 0.6]["rmse"].to_numpy()
        < naive[naive["alpha"] == 0.6]["rmse"].to_numpy()
    ).all()
    # the exact attacker's matrix error is 0, the public one's is α/√3 on average
    assert (exact["matrix_rms_error"] == 0).all()
    big = naive[naive["alpha"] == 0.6]["matrix_rms_error"]
    np.testing.assert_allclose(big, 0.6 / np.sqrt(3), rtol=0.15)


def test_map_vs_w_error_falls_as_w_grows_for_the_exact_attacker(data) -> None:
    t = exp.map_vs_w(
        data[:1], ws=(1, 4, 7), attackers=("exact",), double_logistic=(False,), repeats=3, seed=1
    )
    assert t["w"].tolist() == [1, 4, 7] and t["r"].tolist() == [7, 4, 1]
    assert t["rmse"].is_monotonic_decreasing


def test_collusion_common_matrix_nearly_exact_rmp_grows_with_alpha(data) -> None:
    t = exp.collusion_vs_alpha(data[1:], alphas=(0.01, 0.2, 0.6), repeats=3, seed=2)
    by = t.set_index(["kind", "alpha"])
    common = by.loc["common", "relative_rmse"]
    assert (common < 0.15).all()  # the colluder's matrix is the victim's
    assert (by.loc["common", "within_tolerance"] > 0.95).all()
    for kind in ("colluder", "colluder-aware", "public-aware"):
        rel = by.loc[kind, "relative_rmse"]
        assert rel.is_monotonic_increasing, (kind, rel)
        assert rel.loc[0.6] > 3 * common.loc[0.6]
    # Lemma 1 in the matrix: half the colluder's elements are off by >= (2 - √2)α
    off = by.loc["colluder", "share_elements_off"]
    np.testing.assert_allclose(off.loc[[0.2, 0.6]], 0.5, atol=0.12)


def test_known_io_needs_n_records(data) -> None:
    t = exp.known_io_vs_k(data[:1], ks=(0, 4, 8, 12), repeats=2, seed=4)
    err = t.set_index("k")["matrix_rms_error"]
    assert err.loc[0] > err.loc[4] > 1e-3
    assert err.loc[8] < 1e-9 and err.loc[12] < 1e-9
    assert t.set_index("k")["rank"].loc[12] == 8


def test_ica_vs_w_separates_only_when_w_is_at_least_n() -> None:
    t = exp.ica_vs_w(n=6, ws=(3, 6, 8), sources=("uniform",), m=1500, repeats=1, seed=5)
    by = t.set_index("w")
    assert by.loc[6, "ica_mean_abs_corr"] > 0.95 and by.loc[8, "ica_mean_abs_corr"] > 0.95
    assert by.loc[6, "recovered"] == 6
    assert by.loc[3, "ica_mean_abs_corr"] < 0.9 and by.loc[3, "recovered"] == 0
    assert by.loc[3, "regime"] == "w <= (n+1)/2" and by.loc[8, "regime"] == "w >= n (not RMP)"
    assert (by["ica_mean_abs_corr"] <= by["filter_bound_matched"] + 1e-6).all()


def test_lemma1_table_is_consistent_and_powerful() -> None:
    t = exp.lemma1_table(alphas=(0.1, 0.6), samples=200_000, seed=6)
    assert t["consistent"].all() and t["centre_consistent"].all()
    inner = t[(t["d_over_alpha"] > 0) & (t["d_over_alpha"] < 2)]
    assert inner["wrong_rejected"].all()
    half = t[np.isclose(t["d_over_alpha"], 2 - np.sqrt(2))]
    np.testing.assert_allclose(half["lemma1"], 0.5)
    np.testing.assert_allclose(half["empirical"], 0.5, atol=0.005)


def test_reproduce_quick_writes_tables_figures_and_a_page(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    out = exp.reproduce_privacy(
        tmp_path / "out", seed=1, quick=True, progress=lambda s, d, t: seen.append((s, d, t))
    )
    assert set(out["tables"]) == set(exp.TABLES)
    names = {p.name for p in out["files"]}
    for key in exp.TABLES:
        assert f"privacy_{key}.csv" in names and f"privacy_{key}.png" in names
        assert (tmp_path / "out" / f"privacy_{key}.png").stat().st_size > 1000
        back = pd.read_csv(tmp_path / "out" / f"privacy_{key}.csv")
        assert len(back) == len(out["tables"][key])
    assert out["page"] == tmp_path / "out" / "privacy.html"
    page = out["page"].read_text(encoding="utf-8")
    assert "Lemma 1" in page and "privacy_ica_w.png" in page
    assert not (tmp_path / "out" / "index.html").exists()
    assert len(out["sections"]) == 7
    assert seen[-1][0] == "done" and seen[-1][1] == seen[-1][2]


def test_reproduce_without_a_page_and_deterministic(tmp_path: Path) -> None:
    a = exp.privacy_evaluation(seed=9, quick=True)
    b = exp.privacy_evaluation(seed=9, quick=True)
    for key in exp.TABLES:
        pd.testing.assert_frame_equal(a[key], b[key])
    out = exp.reproduce_privacy(tmp_path, seed=9, quick=True, page=None)
    assert out["page"] is None and not list(tmp_path.glob("*.html"))
    pd.testing.assert_frame_equal(out["tables"]["map_alpha"], a["map_alpha"])


@pytest.mark.parametrize(
    "call",
    [
        lambda d: exp.map_vs_alpha(d, alphas=(1.5,), repeats=1),
        lambda d: exp.map_vs_alpha(d, attackers=("oracle-of-delphi",), repeats=1),
        lambda d: exp.map_vs_alpha(d, priors=("guess",), repeats=1),
        lambda d: exp.map_vs_alpha(d, repeats=0),
        lambda d: exp.map_vs_alpha(d, r=0, repeats=1),
        lambda d: exp.map_vs_w(d, ws=(8,), repeats=1),
        lambda d: exp.collusion_vs_alpha(d, scenarios=("bribe",), repeats=1),
        lambda d: exp.known_io_vs_k(d, ks=(-1,), repeats=1),
        lambda d: exp.ica_vs_w(sources=("gaussian",), repeats=1),
        lambda d: exp.lemma1_table(alphas=(0.0,)),
        lambda d: exp.reproduce_privacy("unused", seed=-1),
        lambda d: exp.gaussian_data(rho=1.0),
        lambda d: exp.attack_datasets(victim=4000, known=1000),
    ],
)
def test_bad_input_raises_privad_errors(data, call) -> None:
    with pytest.raises(PrivadError) as info:
        call(data)
    assert isinstance(info.value, ParameterError) and str(info.value)
