"""The embedded files: shapes, labels, checksums, notice, size budget."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from privad import datasets
from privad.datasets import embedded
from privad.errors import DataError, DatasetNotFoundError


@pytest.mark.parametrize(
    ("loader", "shape", "n_anomalies"),
    [
        (datasets.load_thyroid, (3772, 6), 93),
        (datasets.load_mammography, (11183, 6), 260),
        (datasets.load_breastw, (683, 9), 239),
    ],
)
def test_odds_files_have_the_documented_shape_and_outliers(loader, shape, n_anomalies):
    ds = loader()
    assert ds.shape == shape
    assert ds.X.dtype == np.float64
    assert ds.y is not None and ds.y.dtype == np.int64
    assert set(np.unique(ds.y)) == {0, 1}
    assert ds.n_anomalies == n_anomalies
    assert np.isfinite(ds.X).all()
    assert ds.licence and ds.source and ds.description


def test_thyroid_features_are_in_unit_interval():
    X = datasets.load_thyroid().X
    assert X.min() >= 0 and X.max() <= 1


def test_abalone_drop_and_onehot():
    dropped = datasets.load_abalone()
    assert dropped.shape == (4177, 8)
    assert dropped.y is None
    assert dropped.feature_names[-1] == "rings"
    assert dropped.X[0].tolist() == [0.455, 0.365, 0.095, 0.514, 0.2245, 0.101, 0.15, 15.0]
    onehot = datasets.load_abalone(sex="onehot")
    assert onehot.shape == (4177, 11)
    assert onehot.feature_names[:3] == ["sex_M", "sex_F", "sex_I"]
    assert (onehot.X[:, :3].sum(axis=1) == 1).all()
    np.testing.assert_array_equal(onehot.X[:, 3:], dropped.X)
    assert onehot.X[0, :3].tolist() == [1.0, 0.0, 0.0]  # the first abalone is male


def test_banana_is_2d_with_pm1_classes_and_no_anomaly_labels():
    ds = datasets.load_banana()
    assert ds.shape == (5300, 2)
    assert ds.y is None
    assert ds.classes is not None
    values, counts = np.unique(ds.classes, return_counts=True)
    assert values.tolist() == [-1, 1]
    assert counts.tolist() == [2924, 2376]
    assert ds.X[0].tolist() == [1.617466, -0.919233]


def test_nab_embedded_series_and_window_labels():
    names = datasets.nab_series()
    assert "realTraffic/speed_7578" in names and len(names) == 5
    ts = datasets.load_nab("speed_7578")
    assert len(ts) == 1127 and len(ts.windows) == 4
    assert ts.timestamps.dtype == np.dtype("datetime64[ns]")
    inside = np.zeros(len(ts), dtype=bool)
    for start, end in ts.windows:
        inside |= (ts.timestamps >= start) & (ts.timestamps <= end)
    np.testing.assert_array_equal(ts.labels, inside.astype(np.int64))
    assert ts.n_anomalies == 116
    # both ends of a window are inside it
    first_start = ts.windows[0][0]
    if first_start in ts.timestamps:
        assert ts.labels[np.flatnonzero(ts.timestamps == first_start)[0]] == 1
    assert datasets.load_nab("realTraffic/speed_7578.csv").n_anomalies == 116
    assert datasets.load_nab("nab:speed_7578").name == "nab:speed_7578"


def test_nab_unknown_series():
    with pytest.raises(DatasetNotFoundError, match="unknown NAB series"):
        datasets.load_nab("no_such_series")


def test_registry_shapes_match_the_embedded_data():
    for entry in datasets.list_datasets("embedded"):
        data = entry.loader()
        assert data.shape == entry.shape, entry.name
        if entry.n_anomalies is not None:
            assert data.n_anomalies == entry.n_anomalies, entry.name


def test_manifest_covers_every_file_and_checksums_match():
    root = embedded.data_root()
    on_disk = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.name not in ("SHA256SUMS", "NOTICE.md")
    }
    sums = datasets.embedded_files()
    assert set(sums) == on_disk
    for rel, digest in sums.items():
        assert embedded.sha256_file(root / rel) == digest


def test_notice_names_every_file_and_contains_the_nab_licence():
    root = embedded.data_root()
    notice = (root / "NOTICE.md").read_text(encoding="utf-8")
    for rel in datasets.embedded_files():
        assert f"`{rel}`" in notice, rel
    licence = (root / "nab" / "LICENSE.txt").read_text(encoding="utf-8").strip()
    assert licence in notice
    assert "Permission is hereby granted" in licence


def test_embedded_total_size_is_under_two_megabytes():
    root = embedded.data_root()
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert total < 2_000_000


def test_damaged_embedded_file_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(embedded.data_root(), copy)
    target = copy / "odds" / "breastw.mat"
    target.write_bytes(target.read_bytes()[:-1] + b"\x00")
    monkeypatch.setattr(embedded, "data_root", lambda: Path(copy))
    monkeypatch.setattr(embedded, "_verified", set())
    with pytest.raises(DataError, match="damaged"):
        embedded.embedded_path("odds/breastw.mat")
    with pytest.raises(DatasetNotFoundError):
        embedded.embedded_path("odds/nothing.mat")
