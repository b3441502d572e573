"""The seeded generators: shapes, reproducibility, anomaly shares, the papers' properties."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial import cKDTree
from scipy.stats import kurtosis

from privad import datasets
from privad.errors import DataError, ParameterError

# --------------------------------------------------------------------- sensitive mixture


def test_sensitive_mixture_raw_coordinates_follow_the_formula():
    ds = datasets.make_sensitive_mixture(n=4000, d=20, rho=0.05, a=3, n_components=None, rng=1)
    assert ds.shape == (4000, 20)
    comp = ds.metadata["component"]
    np.testing.assert_array_equal(ds.y, (comp > 0).astype(int))
    m = np.sqrt(20 / 0.05)
    assert ds.metadata["magnitude"] == pytest.approx(m)
    # anomaly share ~ rho (binomial: sd = sqrt(.05*.95/4000) = 0.0034)
    assert abs(ds.y.mean() - 0.05) < 5 * 0.0035
    for c in np.unique(comp[comp > 0]):
        rows = ds.X[comp == c]
        t, sign = (c - 1) // 2, 1 if (c - 1) % 2 == 0 else -1
        assert np.abs(rows[:, t].mean() - sign * m) < 0.1
        others = np.delete(rows, t, axis=1)
        assert others.std() == pytest.approx(0.1, rel=0.2)  # sigma
    core = ds.X[comp == 0]
    assert core.std() == pytest.approx(1.0, rel=0.05)


def test_sensitive_mixture_magnitudes_and_pca():
    dong = datasets.make_sensitive_mixture(
        n=500, d=30, rho=0.02, a=5, magnitude="dong2019", n_components=None, rng=2
    )
    assert dong.metadata["magnitude"] == pytest.approx(np.sqrt(5 / 0.02))
    given = datasets.make_sensitive_mixture(n=500, d=30, magnitude=7.5, n_components=None, rng=2)
    assert given.metadata["magnitude"] == 7.5
    pca = datasets.make_sensitive_mixture(n=3000, d=50, n_components=9, rng=3)
    assert pca.shape == (3000, 9)
    assert pca.feature_names[0] == "pc1"
    np.testing.assert_allclose(pca.X.mean(axis=0), 0, atol=1e-9)
    ratios = pca.metadata["explained_variance_ratio"]
    assert ratios == sorted(ratios, reverse=True)
    with pytest.raises(ParameterError):
        datasets.make_sensitive_mixture(n=100, d=5, a=6)
    with pytest.raises(ParameterError):
        datasets.make_sensitive_mixture(n=100, d=5, a=2, magnitude="other")
    with pytest.raises(ParameterError):
        datasets.make_sensitive_mixture(n=100, d=5, a=2, rho=0)


def test_sensitive_mixture_paper_size():
    ds = datasets.make_sensitive_mixture(rng=0)
    assert ds.shape == (20_000, 9)


# ---------------------------------------------------------------------------- sensor ring


@pytest.mark.parametrize("separation", [50.0, 120.0, 220.0, 400.0])
def test_sensor_ring_gap_is_the_separation(separation):
    ds = datasets.make_sensor_ring(n=5000, separation=separation, rng=4)
    assert ds.shape == (5000, 2)
    assert ds.n_anomalies == 500
    center = ds.metadata["center"]
    r = np.hypot(*(ds.X - center).T)
    gap = r[ds.y == 1].min() - r[ds.y == 0].max()
    assert gap == pytest.approx(separation, abs=1e-9)
    # every outlier is at least `separation` away from every core point
    nearest, _ = cKDTree(ds.X[ds.y == 0]).query(ds.X[ds.y == 1])
    assert nearest.min() >= separation - 1e-9
    # the core is untouched N(0, 3^2): its points are the 90% nearest to the centre
    assert ds.X[ds.y == 0].std() == pytest.approx(3.0 * 0.84, rel=0.1)
    meta = ds.metadata
    assert meta["outlier_layer_width"] == pytest.approx(
        meta["outlier_radius_max"] - meta["outlier_radius_min"]
    )
    assert 2 < meta["outlier_layer_width"] < 20


def test_sensor_ring_default_size_and_seeding():
    a = datasets.make_sensor_ring(rng=7)
    b = datasets.make_sensor_ring(rng=7)
    c = datasets.make_sensor_ring(rng=8)
    assert a.shape == (100_000, 2) and a.n_anomalies == 10_000
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, c.X)
    with pytest.raises(ParameterError):
        datasets.make_sensor_ring(n=5, outlier_share=0.01)
    with pytest.raises(ParameterError):
        datasets.make_sensor_ring(separation=-1)


# ------------------------------------------------------------------------ fraud stand-in


def test_fraud_standin_size_share_and_tails():
    ds = datasets.make_fraud_standin(rng=5)
    assert ds.shape == (284_807, 6)
    assert ds.n_anomalies == 492  # Kaggle's count, ~0.17%
    normal = ds.X[ds.y == 0]
    # heavy tails: Student-t(3) marginals have a huge sample excess kurtosis (normal: 0)
    assert (kurtosis(normal, axis=0) > 3).all()
    z = (normal - normal.mean(axis=0)) / normal.std(axis=0)
    assert (np.abs(z) > 6).mean() > 100 * 2e-9  # P(|N(0,1)| > 6) = 2e-9
    # correlated neighbouring coordinates
    corr = np.corrcoef(normal[:, 0], normal[:, 1])[0, 1]
    assert 0.3 < corr < 0.7
    # the anomalies sit away from the core along one direction
    shift = ds.X[ds.y == 1].mean(axis=0) - normal.mean(axis=0)
    assert np.linalg.norm(shift) > 3


def test_fraud_standin_seeding_and_parameters():
    a = datasets.make_fraud_standin(n=1000, rng=1)
    b = datasets.make_fraud_standin(n=1000, rng=1)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert datasets.make_fraud_standin(n=10_000, d=3, anomaly_share=0.01, rng=1).n_anomalies == 100
    with pytest.raises(ParameterError):
        datasets.make_fraud_standin(n=100, df=2)
    with pytest.raises(ParameterError):
        datasets.make_fraud_standin(n=100, correlation=1.0)


# ------------------------------------------------------------------------- search mixture


@pytest.mark.parametrize(("kind", "ratio"), [("normal-mixture", 0.647), ("skewed", 0.701)])
def test_search_mixture_plants_one_anomaly_at_the_requested_ratio(kind, ratio):
    ds = datasets.make_search_mixture(n=1420, kind=kind, threshold_ratio=ratio, rng=9)
    x = ds.X[:, 0]
    assert ds.shape == (1420, 1)
    assert (x >= 0).all()
    assert ds.n_anomalies == 1
    i_star = ds.metadata["anomaly_index"]
    assert ds.y[i_star] == 1 and x[i_star] == x.max()
    thresholds = datasets.single_anomaly_thresholds(x, ds.y)
    assert thresholds.anomaly_index == i_star
    assert thresholds.threshold_ratio == pytest.approx(ratio, rel=1e-12)
    assert ds.metadata["t_low"] < ds.metadata["t_high"]
    others = np.delete(x, i_star)
    assert others.max() <= ds.metadata["t_low"] and x[i_star] >= ds.metadata["t_high"]


def test_search_mixture_regimes_differ():
    skewed = datasets.make_search_mixture(n=5000, kind="skewed", rng=1).X[:, 0]
    mixture = datasets.make_search_mixture(n=5000, kind="normal-mixture", rng=1).X[:, 0]
    # skewed toward 0: the median is well below the mean and the mode is near 0
    assert np.median(skewed) < 0.8 * skewed.mean()
    assert np.mean(skewed < 0.1) > 0.05
    assert np.mean(mixture < 0.1) < 0.01
    with pytest.raises(ParameterError):
        datasets.make_search_mixture(threshold_ratio=8.0)
    with pytest.raises(ParameterError):
        datasets.make_search_mixture(kind="uniform")


def test_single_anomaly_thresholds_reports_why_a_series_is_skipped():
    t = datasets.single_anomaly_thresholds([1.0, 2.0, 10.0, 3.0], [0, 0, 1, 0])
    assert (t.anomaly_index, t.x_anomaly, t.x_next) == (2, 10.0, 3.0)
    assert t.t_high == pytest.approx(9.3) and t.t_low == pytest.approx(3.7)
    with pytest.raises(DataError, match="no labelled anomaly"):
        datasets.single_anomaly_thresholds([1.0, 2.0], [0, 0])
    with pytest.raises(DataError, match="negative"):
        datasets.single_anomaly_thresholds([-1.0, 2.0], [0, 1])
    with pytest.raises(DataError, match="not above every other"):
        datasets.single_anomaly_thresholds([5.0, 2.0], [0, 1])
    # real series: NAB's ec2 latency series reduces cleanly, speed_7578 must be skipped
    ec2 = datasets.load_nab("ec2_request_latency_system_failure")
    result = datasets.single_anomaly_thresholds(ec2)
    assert ec2.labels[result.anomaly_index] == 1
    assert result.x_anomaly == ec2.values.max()
    assert result.threshold_ratio == pytest.approx(0.3794, abs=1e-4)
    with pytest.raises(DataError, match="skipped"):
        datasets.single_anomaly_thresholds(datasets.load_nab("speed_7578"))


# ------------------------------------------------------------------------------ banana 8d


@pytest.mark.parametrize("layout", ["phased", "pairs"])
def test_banana_8d_shapes_scaling_and_anomalies(layout):
    ds = datasets.make_banana_8d(n=1000, layout=layout, rng=3)
    assert ds.shape == (1053, 8)  # 53 = round(0.05 / 0.95 * 1000): 5% of the result
    assert ds.n_anomalies == 53
    assert ds.y[:1000].sum() == 0 and ds.y[1000:].all()  # appended, as in RMP's follow-up
    assert ds.X.min() >= 0 and ds.X.max() <= 1
    assert ds.X[:1000].min(axis=0).tolist() == [0.0] * 8
    assert np.bincount(ds.metadata["banana"]).tolist() == [500, 500]


def test_banana_8d_raw_2d_matches_gendatb_geometry():
    ds = datasets.make_banana_8d(n=4000, d=2, spread=0.0, anomaly_share=0.0, rng=2)
    assert ds.y.sum() == 0 and ds.classes is not None
    a = ds.X[ds.classes == 0]
    b = ds.X[ds.classes == 1] + 0.75 * 5
    np.testing.assert_allclose(np.hypot(*a.T), 5.0)  # class A on the circle of radius 5
    np.testing.assert_allclose(np.hypot(*b.T), 5.0)  # class B too, after undoing the offset
    angle_a = np.arctan2(a[:, 0], a[:, 1]) % (2 * np.pi)  # x = r sin θ, y = r cos θ
    assert angle_a.min() >= 0.125 * np.pi - 1e-9 and angle_a.max() <= 1.375 * np.pi + 1e-9


def test_banana_8d_phased_any_pair_is_an_arc():
    ds = datasets.make_banana_8d(n=2000, d=8, spread=0.0, anomaly_share=0.0, rng=4)
    a = ds.X[ds.classes == 0]
    # coordinates 0 and 4 are a quarter period apart: exactly the 2-D banana circle
    np.testing.assert_allclose(np.hypot(a[:, 0], a[:, 4]), 5.0)
    with pytest.raises(ParameterError):
        datasets.make_banana_8d(d=7, layout="pairs")


def test_inject_uniform_anomalies_on_abalone():
    ds = datasets.inject_uniform_anomalies(datasets.load_abalone(), 0.05, rng=0)
    assert ds.shape == (1053, 8)
    assert ds.X[:1000].min() == 0 and ds.X[:1000].max() == 1
    assert ds.n_anomalies == 53
    again = datasets.inject_uniform_anomalies(datasets.load_abalone(), 0.05, rng=0)
    np.testing.assert_array_equal(ds.X, again.X)


# ---------------------------------------------------------------------- the randomness rule


def test_no_module_of_the_package_draws_randomness_itself():
    """Only privad.noise may touch numpy.random or the random module (the randomness rule)."""
    source = Path(datasets.__file__).parent
    for path in sorted(source.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Attribute) and node.attr == "random":
                names = [ast.unparse(node)]
            else:
                continue
            for name in names:
                assert name != "random" and not name.startswith("random."), (path.name, name)
                assert not name.endswith("np.random") and "numpy.random" not in name, (
                    path.name,
                    name,
                )


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: datasets.make_sensitive_mixture(n=300, d=10, n_components=4, rng=rng),
        lambda rng: datasets.make_sensor_ring(n=300, rng=rng),
        lambda rng: datasets.make_fraud_standin(n=300, rng=rng),
        lambda rng: datasets.make_search_mixture(n=300, rng=rng),
        lambda rng: datasets.make_banana_8d(n=300, rng=rng),
    ],
)
def test_generators_accept_a_seed_or_a_randomness(make):
    from privad.noise import Randomness

    np.testing.assert_array_equal(make(11).X, make(11).X)
    np.testing.assert_array_equal(make(Randomness(11)).X, make(11).X)
    assert make(None).X.shape == make(11).X.shape
