"""Time series (NAB with a root, Yahoo S5) and the external datasets (gas, credit card)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad import datasets
from privad.datasets import embedded
from privad.datasets.realdata import CREDITCARD_COLUMNS
from privad.errors import DataError, DatasetNotFoundError, ParameterError

# ---------------------------------------------------------------------------------- Yahoo


def test_yahoo_a1_layout(tmp_path):
    path = tmp_path / "real_6.csv"
    path.write_text("timestamp,value,is_anomaly\n1,0.5,0\n2,0.75,0\n3,9.0,1\n4,0.25,0\n")
    ts = datasets.load_yahoo(path)
    assert len(ts) == 4
    assert ts.labels.tolist() == [0, 0, 1, 0]
    assert ts.values.tolist() == [0.5, 0.75, 9.0, 0.25]
    assert ts.metadata["raw_timestamps"].tolist() == [1, 2, 3, 4]
    assert ts.timestamps[0] == np.datetime64("1970-01-01T00:00:01")
    assert ts.windows == []
    assert ts.name == "yahoo:real_6"
    assert datasets.load("yahoo", path=path).n_anomalies == 1
    as_table = ts.to_dataset()
    assert as_table.shape == (4, 1) and as_table.y.tolist() == [0, 0, 1, 0]


def test_yahoo_a3_layout_is_accepted(tmp_path):
    path = tmp_path / "A3.csv"
    path.write_text(
        "timestamps,value,anomaly,changepoint,trend\n1416726000,1.0,0,0,0.1\n"
        "1416729600,5.0,1,0,0.1\n"
    )
    ts = datasets.load_yahoo(path)
    assert ts.labels.tolist() == [0, 1]
    assert ts.timestamps[1] == np.datetime64(1416729600, "s")


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        ("time,value\n1,2\n", DataError, "timestamp,value,is_anomaly"),
        ("timestamp,value,is_anomaly\n1,2,3\n", DataError, "0/1"),
        ("timestamp,value,is_anomaly\n1,nan,0\n", DataError, "NaN"),
        ("timestamp,value,is_anomaly\n1.5,2,0\n", DataError, "integers"),
        ("timestamp,value,is_anomaly\n1,abc,0\n", DataError, "not numeric"),
        ("timestamp,value,is_anomaly\n", DataError, "no data rows"),
        ("", DataError, "empty"),
    ],
)
def test_yahoo_errors(tmp_path, text, error, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(error, match=match):
        datasets.load_yahoo(path)


def test_yahoo_missing_file_and_registry_without_path(tmp_path):
    with pytest.raises(DatasetNotFoundError):
        datasets.load_yahoo(tmp_path / "real_1.csv")
    with pytest.raises(DatasetNotFoundError, match="not shipped"):
        datasets.load("yahoo")


# ---------------------------------------------------------------------------- NAB (root)


def _nab_checkout(tmp_path: Path) -> Path:
    root = tmp_path / "NAB"
    (root / "data" / "demo").mkdir(parents=True)
    (root / "labels").mkdir()
    (root / "data" / "demo" / "tiny.csv").write_text(
        "timestamp,value\n2020-01-01 00:00:00,1\n2020-01-01 00:05:00,2\n"
        "2020-01-01 00:10:00,30\n2020-01-01 00:15:00,3\n"
    )
    (root / "data" / "demo" / "flat.csv").write_text("timestamp,value\n2020-01-01 00:00:00,1\n")
    windows = {
        "demo/tiny.csv": [["2020-01-01 00:05:00.000000", "2020-01-01 00:10:00.000000"]],
        "demo/flat.csv": [],
    }
    (root / "labels" / "combined_windows.json").write_text(json.dumps(windows))
    return root


def test_nab_from_a_checkout_root(tmp_path):
    root = _nab_checkout(tmp_path)
    assert datasets.nab_series(root) == ["demo/flat", "demo/tiny"]
    ts = datasets.load_nab("tiny", root=root)
    assert ts.labels.tolist() == [0, 1, 1, 0]  # both window ends are inside
    assert ts.values.tolist() == [1.0, 2.0, 30.0, 3.0]
    assert ts.windows == [(np.datetime64("2020-01-01T00:05"), np.datetime64("2020-01-01T00:10"))]
    flat = datasets.load("nab:flat", root=root)
    assert flat.n_anomalies == 0 and flat.windows == []


def test_nab_errors(tmp_path):
    root = _nab_checkout(tmp_path)
    with pytest.raises(DatasetNotFoundError, match="not a folder"):
        datasets.load_nab("tiny", root=tmp_path / "nowhere")
    with pytest.raises(DatasetNotFoundError, match="no NAB label file"):
        datasets.load_nab("tiny", root=tmp_path)
    (root / "data" / "demo" / "tiny.csv").write_text("timestamp,value\nyesterday,1\n")
    with pytest.raises(DataError, match="timestamp"):
        datasets.load_nab("tiny", root=root)
    (root / "data" / "demo" / "tiny.csv").write_text("time,value\n2020-01-01 00:00:00,1\n")
    with pytest.raises(DataError, match="header timestamp,value"):
        datasets.load_nab("tiny", root=root)
    (root / "data" / "demo" / "tiny.csv").unlink()
    with pytest.raises(DatasetNotFoundError, match="missing"):
        datasets.load_nab("tiny", root=root)
    with pytest.raises(ParameterError):
        datasets.load_nab("", root=root)


def test_nab_full_corpus_when_present():
    root = Path("/work/shared/datasets/nab")
    if not (root / "labels" / "combined_windows.json").is_file():
        pytest.skip("the full NAB corpus is not available")
    names = datasets.nab_series(root)
    assert len(names) == 58
    ts = datasets.load_nab("nyc_taxi", root=root)
    assert len(ts) == 10320 and len(ts.windows) == 5


# ------------------------------------------------------------------------------------ gas


def test_gas_from_the_shared_folder_if_present():
    try:
        ds = datasets.load_gas()
    except DatasetNotFoundError:
        pytest.skip("gas-drift.npz is not available here")
    assert ds.shape == (5574, 128)
    assert ds.y is None
    assert sorted(np.unique(ds.classes).tolist()) == [0, 1]


def test_gas_lookup_via_environment_and_explicit_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(embedded.DATA_ENV, raising=False)
    with pytest.raises(DatasetNotFoundError, match=r"PRIVAD_DATA.*gas-drift.npz"):
        datasets.load_gas()
    store = tmp_path / "store"
    (store / "gas").mkdir(parents=True)
    x = np.ones((3, 4), np.float32)
    np.savez(store / "gas" / "gas-drift.npz", x=x, y=np.array([0.0, 1, 1]))
    monkeypatch.setenv(embedded.DATA_ENV, str(store))
    ds = datasets.load_gas()
    assert ds.shape == (3, 4) and ds.classes.tolist() == [0, 1, 1]
    assert datasets.load_gas(store / "gas").shape == (3, 4)
    assert datasets.load("gas", path=store / "gas" / "gas-drift.npz").shape == (3, 4)
    with pytest.raises(DatasetNotFoundError, match="no such file"):
        datasets.load_gas(tmp_path / "elsewhere.npz")
    np.savez(store / "bad.npz", x=np.ones((3, 4)))
    with pytest.raises(DataError, match="'x' and 'y'"):
        datasets.load_gas(store / "bad.npz")


# ---------------------------------------------------------------------------- credit card


def _creditcard_frame(n: int = 6) -> pd.DataFrame:
    rng = np.arange(n * 30, dtype=np.float64).reshape(n, 30) / 7.0
    frame = pd.DataFrame(rng, columns=list(CREDITCARD_COLUMNS[:-1]))
    frame["Class"] = [0] * (n - 1) + [1]
    return frame


def test_creditcard_kaggle_layout(tmp_path):
    frame = _creditcard_frame()
    path = tmp_path / "creditcard.csv"
    # Kaggle quotes the header and the Class values
    frame.astype({"Class": str}).to_csv(path, index=False, quoting=2)
    assert path.read_text().startswith('"Time","V1"')
    ds = datasets.load_creditcard(path)
    assert ds.shape == (6, 30)
    assert ds.feature_names[0] == "Time" and ds.feature_names[-1] == "Amount"
    assert ds.y.tolist() == [0, 0, 0, 0, 0, 1]
    np.testing.assert_array_equal(ds.X, frame[list(CREDITCARD_COLUMNS[:-1])].to_numpy())
    no_time = datasets.load_creditcard(tmp_path, include_time=False)
    assert no_time.shape == (6, 29) and "Time" not in no_time.feature_names


def test_creditcard_errors(tmp_path, monkeypatch):
    frame = _creditcard_frame().drop(columns=["V3"])
    frame.to_csv(tmp_path / "creditcard.csv", index=False)
    with pytest.raises(DataError, match=r"missing column\(s\) \['V3'\]"):
        datasets.load_creditcard(tmp_path / "creditcard.csv")
    frame = _creditcard_frame()
    frame.loc[2, "Amount"] = np.nan
    frame.to_csv(tmp_path / "nan.csv", index=False)
    with pytest.raises(DataError, match="'Amount'.*data row 3"):
        datasets.load_creditcard(tmp_path / "nan.csv")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(embedded.DATA_ENV, raising=False)
    with pytest.raises(DatasetNotFoundError, match="creditcard.csv"):
        datasets.load_creditcard()


def test_shared_data_checksums_match_when_present():
    """The embedded copies are byte-identical to the shared originals (when those exist)."""
    sums = Path("/work/shared/datasets/SHA256SUMS")
    if not sums.is_file():
        pytest.skip("the shared data folder is not available")
    shared = dict(line.split()[::-1] for line in sums.read_text().splitlines() if line.strip())
    ours = datasets.embedded_files()
    for rel in (
        "odds/thyroid.mat",
        "odds/mammography.mat",
        "odds/breastw.mat",
        "abalone/abalone.data",
        "banana/banana.zip",
    ):
        assert ours[rel] == shared[rel]
