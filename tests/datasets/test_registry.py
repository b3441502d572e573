"""The catalogue and the generic :func:`privad.datasets.load`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.io

from privad import datasets
from privad.errors import DatasetNotFoundError, ParameterError


def test_catalogue_has_every_required_entry():
    entries = {e.name: e for e in datasets.list_datasets()}
    for name in ("thyroid", "mammography", "breastw", "abalone", "banana"):
        assert entries[name].kind == "embedded"
    assert sum(name.startswith("nab:") for name in entries) == 5
    for name in ("gas", "creditcard", "yahoo"):
        assert entries[name].kind == "external"
    for name in (
        "sensitive-mixture",
        "sensor-ring",
        "fraud-standin",
        "search-mixture",
        "banana-8d",
    ):
        assert entries[name].kind == "generated"
    for entry in entries.values():
        assert entry.description and entry.source and entry.licence and entry.licence_short
    assert [e.kind for e in datasets.list_datasets("external")] == ["external"] * 3
    with pytest.raises(ParameterError):
        datasets.list_datasets("other")  # type: ignore[arg-type]


def test_describe_is_forgiving_about_case_and_underscores():
    assert datasets.describe("Thyroid").name == "thyroid"
    assert datasets.describe("sensor_ring").name == "sensor-ring"
    info = datasets.describe("thyroid")
    assert (info.shape, info.n_anomalies, info.anomalies_text) == ((3772, 6), 93, "93")
    assert datasets.describe("abalone").anomalies_text == "unlabelled"
    with pytest.raises(DatasetNotFoundError, match="did you mean thyroid"):
        datasets.describe("thyriod")


def test_load_by_name_passes_options():
    assert datasets.load("thyroid").shape == (3772, 6)
    assert datasets.load("abalone", sex="onehot").shape == (4177, 11)
    ts = datasets.load("nab:art_daily_jumpsup")
    assert isinstance(ts, datasets.TimeSeries) and ts.n_anomalies == 403
    ring = datasets.load("sensor-ring", n=1000, separation=50, rng=0)
    assert ring.metadata["separation"] == 50
    with pytest.raises(ParameterError, match="unexpected keyword"):
        datasets.load("thyroid", sep=";")


def test_load_dispatches_by_extension(tmp_path):
    pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}).to_csv(tmp_path / "t.csv", index=False)
    assert datasets.load(tmp_path / "t.csv", label="y").y.tolist() == [0, 1]
    assert datasets.load(str(tmp_path / "t.csv")).shape == (2, 2)
    pd.DataFrame({"a": [1.0, 2.0]}).to_parquet(tmp_path / "t.parquet")
    assert datasets.load(tmp_path / "t.parquet").shape == (2, 1)
    np.save(tmp_path / "t.npy", np.ones((2, 3)))
    assert datasets.load(tmp_path / "t.npy").shape == (2, 3)
    np.savez(tmp_path / "t.npz", X=np.ones((2, 3)), y=np.array([1, 0]))
    assert datasets.load(tmp_path / "t.npz").y.tolist() == [1, 0]
    scipy.io.savemat(tmp_path / "t.mat", {"X": np.ones((2, 2)), "y": [[0], [1]]})
    assert datasets.load(tmp_path / "t.mat").n_anomalies == 1
    (tmp_path / "t.xlsx").write_text("x")
    with pytest.raises(ParameterError, match="cannot tell the format"):
        datasets.load(tmp_path / "t.xlsx")
    with pytest.raises(DatasetNotFoundError, match="not found"):
        datasets.load(tmp_path / "missing.csv")
    with pytest.raises(DatasetNotFoundError, match="unknown dataset 'no-such-thing'"):
        datasets.load("no-such-thing")
    with pytest.raises(ParameterError):
        datasets.load(42)  # type: ignore[arg-type]


def test_dataset_container_validates():
    from privad.errors import DataError

    with pytest.raises(DataError):
        datasets.Dataset(X=np.array([[1.0, np.nan]]))
    with pytest.raises(DataError, match="0/1"):
        datasets.Dataset(X=np.ones((2, 1)), y=[1, -1])
    with pytest.raises(DataError, match="feature names"):
        datasets.Dataset(X=np.ones((2, 2)), feature_names=["a"])
    ds = datasets.Dataset(X=[[1, 2], [3, 4]], y=[True, False])
    assert ds.X.dtype == np.float64 and ds.y.tolist() == [1, 0] and ds.feature_names == ["x0", "x1"]
    assert "2 anomalies" not in repr(ds) and "1 anomalies" in repr(ds)
