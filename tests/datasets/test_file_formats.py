"""The user-file loaders: CSV, Parquet, NumPy, MATLAB; every error path."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.io
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privad import datasets
from privad.errors import DataError, DatasetNotFoundError, ParameterError, PrivadError

# ------------------------------------------------------------------------------------ CSV


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def labelled_csv(tmp_path):
    return _write(tmp_path / "data.csv", "a,b,c,label\n1,2,3,0\n4,5,6,1\n7,8.5,9,0\n")


def test_csv_with_label_column(labelled_csv):
    ds = datasets.load_csv(labelled_csv, label="label")
    assert ds.shape == (3, 3)
    assert ds.feature_names == ["a", "b", "c"]
    np.testing.assert_array_equal(ds.X, [[1, 2, 3], [4, 5, 6], [7, 8.5, 9]])
    assert ds.y.tolist() == [0, 1, 0]
    assert ds.name == "data"


def test_csv_column_selection_by_name_and_index(labelled_csv):
    by_name = datasets.load_csv(labelled_csv, columns=["c", "a"], label="label")
    assert by_name.feature_names == ["c", "a"]
    np.testing.assert_array_equal(by_name.X[:, 0], [3, 6, 9])
    by_index = datasets.load_csv(labelled_csv, columns=[2, 0], label=-1)
    np.testing.assert_array_equal(by_index.X, by_name.X)
    np.testing.assert_array_equal(by_index.y, by_name.y)
    unlabelled = datasets.load_csv(labelled_csv, columns=["b"])
    assert unlabelled.y is None and unlabelled.shape == (3, 1)


def test_csv_without_header(tmp_path):
    path = _write(tmp_path / "raw.csv", "1,2,0\n3,4,1\n")
    ds = datasets.load_csv(path, header=False, label=2)
    assert ds.feature_names == ["0", "1"]
    assert ds.y.tolist() == [0, 1]
    with pytest.raises(DatasetNotFoundError):
        datasets.load_csv(path, header=False, columns=["a"])


def test_csv_values_round_trip_exactly(tmp_path):
    values = np.array([[0.1, 1e-300, 2.0000000000000004], [1 / 3, -7.25e10, 5e-324]])
    path = tmp_path / "exact.csv"
    pd.DataFrame(values).to_csv(path, index=False, header=["p", "q", "r"])
    np.testing.assert_array_equal(datasets.load_csv(path).X, values)


@pytest.mark.parametrize(
    ("text", "options", "error", "match"),
    [
        ("a,b\n1,2\n", {"columns": ["zzz"]}, DatasetNotFoundError, "unknown column 'zzz'"),
        ("a,b\n1,2\n", {"label": "y"}, DatasetNotFoundError, "unknown label column 'y'"),
        ("a,b\n1,2\n", {"columns": [5]}, DatasetNotFoundError, "out of range"),
        ("a,b\n1,2\n3,\n", {}, DataError, r"column 'b' .* first is missing or NaN, at data row 2"),
        ("a,b\n1,NaN\n", {}, DataError, "NaN"),
        ("a,b\n1,inf\n", {}, DataError, "infinite, at data row 1"),
        ("a,b\n1,2\n3,x7\n", {}, DataError, r"column 'b' .* not numeric: data row 2 holds 'x7'"),
        ("", {}, DataError, "empty"),
        ("a,b\n", {}, DataError, "no data rows"),
        ("a,b\n1,0\n2,2\n", {"label": "b"}, DataError, "0/1 labels"),
        ("a,b\n1,0\n", {"columns": ["a"], "label": "a"}, ParameterError, "also selected"),
        ("a,b\n1,0\n", {"columns": ["a", "a"]}, ParameterError, "twice"),
        ("a\n1\n", {"label": "a"}, DataError, "no feature columns"),
        ("a,b\n1,0\n", {"columns": [1.5]}, ParameterError, "column name"),
    ],
)
def test_csv_errors(tmp_path, text, options, error, match):
    path = _write(tmp_path / "bad.csv", text)
    with pytest.raises(error, match=match):
        datasets.load_csv(path, **options)


def test_csv_missing_file(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="not found"):
        datasets.load_csv(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="folder"):
        datasets.load_csv(tmp_path)


def test_errors_are_privad_errors_with_one_line_messages(tmp_path):
    path = _write(tmp_path / "bad.csv", "a,b\n1,x\n")
    with pytest.raises(PrivadError) as info:
        datasets.load_csv(path)
    assert "\n" not in str(info.value)


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=40, deadline=None)
@given(
    matrix=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
        elements=finite,
    ),
    data=st.data(),
)
def test_csv_random_bad_cells_are_always_caught(matrix, data):
    """Whatever cells hold NaN, inf or an empty field, the loader refuses the file and names
    the first bad row of the first bad column."""
    n, d = matrix.shape
    cells = data.draw(
        st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, d - 1)), min_size=1, max_size=n * d)
    )
    kinds = data.draw(
        st.lists(
            st.sampled_from(["nan", "NaN", "inf", "-inf", ""]),
            min_size=len(cells),
            max_size=len(cells),
        )
    )
    text = [[repr(float(v)) for v in row] for row in matrix]
    for (i, j), kind in zip(sorted(cells), kinds, strict=True):
        text[i][j] = kind
    if d == 1 and any(row[0] == "" for row in text):
        # a lone empty field is an empty line, which CSV readers skip: not a bad cell
        return
    body = "\n".join(",".join(row) for row in text)
    header = ",".join(f"c{j}" for j in range(d))
    first_col = min(j for _, j in cells)
    first_row = min(i for i, j in cells if j == first_col)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_text(f"{header}\n{body}\n", encoding="utf-8")
        with pytest.raises(DataError) as info:
            datasets.load_csv(path)
    message = str(info.value)
    assert f"column 'c{first_col}'" in message
    assert f"data row {first_row + 1}" in message


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
        elements=finite,
    )
)
def test_csv_clean_matrices_load_exactly(matrix):
    header = ",".join(f"c{j}" for j in range(matrix.shape[1]))
    body = "\n".join(",".join(repr(float(v)) for v in row) for row in matrix)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_text(f"{header}\n{body}\n", encoding="utf-8")
        ds = datasets.load_csv(path)
    np.testing.assert_array_equal(ds.X, matrix)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.sampled_from(["0", "1", "2", "-1", "0.5", "yes", "1.0", "0.0"]), min_size=1, max_size=8
    )
)
def test_csv_label_column_accepts_exactly_zero_and_one(labels):
    body = "\n".join(f"{i},{lab}" for i, lab in enumerate(labels))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "l.csv"
        path.write_text(f"x,y\n{body}\n", encoding="utf-8")
        if all(lab in ("0", "1", "1.0", "0.0") for lab in labels):
            ds = datasets.load_csv(path, label="y")
            assert ds.y.tolist() == [int(float(lab)) for lab in labels]
        else:
            with pytest.raises(DataError):
                datasets.load_csv(path, label="y")


# -------------------------------------------------------------------------------- Parquet


def test_parquet_file_and_folder_of_partitions(tmp_path):
    frame = pd.DataFrame(
        {"u": [1.0, 2.0, 3.0, 4.0], "v": [0.5, 0.25, 0.125, 1.0], "anomaly": [0, 0, 1, 0]}
    )
    single = tmp_path / "one.parquet"
    frame.to_parquet(single)
    ds = datasets.load_parquet(single, label="anomaly")
    np.testing.assert_array_equal(ds.X, frame[["u", "v"]].to_numpy())
    assert ds.y.tolist() == [0, 0, 1, 0]

    folder = tmp_path / "parts"
    folder.mkdir()
    for k in range(2):
        pq.write_table(
            pa.Table.from_pandas(frame.iloc[2 * k : 2 * k + 2], preserve_index=False),
            folder / f"part-{k}.parquet",
        )
    parts = datasets.load_parquet(folder, columns=["v"], label="anomaly")
    assert parts.shape == (4, 1)
    np.testing.assert_array_equal(np.sort(parts.X[:, 0]), np.sort(frame["v"].to_numpy()))
    assert parts.n_anomalies == 1
    assert isinstance(datasets.load(folder), datasets.Dataset)


def test_parquet_hive_partition_column_can_be_selected(tmp_path):
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "site": [1, 1, 2]})
    pq.write_to_dataset(
        pa.Table.from_pandas(frame, preserve_index=False),
        tmp_path / "hive",
        partition_cols=["site"],
    )
    ds = datasets.load_parquet(tmp_path / "hive", columns=["x", "site"])
    assert ds.shape == (3, 2)
    assert sorted(ds.X[:, 1].tolist()) == [1.0, 1.0, 2.0]


def test_parquet_errors(tmp_path):
    with pytest.raises(DatasetNotFoundError):
        datasets.load_parquet(tmp_path / "missing.parquet")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="no data files"):
        datasets.load_parquet(empty)
    notparquet = _write(tmp_path / "x.parquet", "a,b\n1,2\n")
    with pytest.raises(DataError, match="not readable as Parquet"):
        datasets.load_parquet(notparquet)
    pd.DataFrame({"a": [1.0, np.nan]}).to_parquet(tmp_path / "nan.parquet")
    with pytest.raises(DataError, match="NaN"):
        datasets.load_parquet(tmp_path / "nan.parquet")
    pd.DataFrame({"a": ["x", "y"]}).to_parquet(tmp_path / "text.parquet")
    with pytest.raises(DataError, match="not numeric"):
        datasets.load_parquet(tmp_path / "text.parquet")
    pd.DataFrame({"a": [1.0]}).iloc[:0].to_parquet(tmp_path / "norows.parquet")
    with pytest.raises(DataError, match="no data rows"):
        datasets.load_parquet(tmp_path / "norows.parquet")
    with pytest.raises(DatasetNotFoundError, match="unknown column"):
        datasets.load_parquet(tmp_path / "nan.parquet", columns=["b"])


# ---------------------------------------------------------------------------------- NumPy


def test_npz_with_keys(tmp_path):
    X = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([0, 1, 0, 0])
    path = tmp_path / "arrays.npz"
    np.savez(path, X=X, labels=y, other=np.zeros(2))
    ds = datasets.load_numpy(path, label="labels")
    assert ds.X.dtype == np.float64
    np.testing.assert_array_equal(ds.X, X)
    assert ds.y.tolist() == [0, 1, 0, 0]
    assert datasets.load_numpy(path, key="X").y is None  # no array y: unlabelled
    with pytest.raises(DatasetNotFoundError, match="'nope' is not in"):
        datasets.load_numpy(path, key="nope")
    with pytest.raises(
        DatasetNotFoundError,
        match=r"neither an array .* \['X', 'labels', "
        r"'other'\]\) nor a column .*x0, x1, x2",
    ):
        datasets.load_numpy(path, label="nope")
    single = tmp_path / "single.npz"
    np.savez(single, data=X)
    assert datasets.load_numpy(single).shape == (4, 3)
    ambiguous = tmp_path / "ambiguous.npz"
    np.savez(ambiguous, a=X, b=X)
    with pytest.raises(ParameterError, match="several arrays .* none is named X"):
        datasets.load_numpy(ambiguous)


def test_npy_and_errors(tmp_path):
    X = np.ones((3, 2))
    np.save(tmp_path / "x.npy", X)
    np.testing.assert_array_equal(datasets.load_numpy(tmp_path / "x.npy").X, X)
    with pytest.raises(ParameterError, match="key applies to .npz"):
        datasets.load_numpy(tmp_path / "x.npy", key="X")
    with pytest.raises(DatasetNotFoundError, match="unknown label column 'y'"):
        datasets.load_numpy(tmp_path / "x.npy", label="y")
    np.save(tmp_path / "vec.npy", np.ones(3))
    with pytest.raises(DataError, match="1-D"):
        datasets.load_numpy(tmp_path / "vec.npy")
    bad = X.copy()
    bad[2, 1] = np.inf
    np.save(tmp_path / "inf.npy", bad)
    with pytest.raises(DataError, match="row 3, column 1"):
        datasets.load_numpy(tmp_path / "inf.npy")
    np.save(tmp_path / "empty.npy", np.ones((0, 3)))
    with pytest.raises(DataError, match="empty"):
        datasets.load_numpy(tmp_path / "empty.npy")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(DataError, match="unpickling"):
        datasets.load_numpy(tmp_path / "obj.npy")
    np.save(tmp_path / "text.npy", np.array([["a", "b"]]))
    with pytest.raises(DataError, match="numbers"):
        datasets.load_numpy(tmp_path / "text.npy")
    _write(tmp_path / "junk.npy", "not numpy")
    with pytest.raises(DataError):
        datasets.load_numpy(tmp_path / "junk.npy")
    np.savez(tmp_path / "badlabels.npz", X=X, y=np.array([0, 2, 1]))
    with pytest.raises(DataError, match="labels 'y' in .* row 2 has 2 "):
        datasets.load_numpy(tmp_path / "badlabels.npz")
    with pytest.raises(DatasetNotFoundError):
        datasets.load_numpy(tmp_path / "missing.npz")


# --------------------------------------------------------------------------------- MATLAB


def test_odds_mat_round_trip_and_errors(tmp_path):
    X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = np.array([[0], [1], [0]], dtype=np.uint8)
    scipy.io.savemat(tmp_path / "ok.mat", {"X": X, "y": y})
    ds = datasets.load_odds(tmp_path / "ok.mat")
    np.testing.assert_array_equal(ds.X, X)
    assert ds.y.tolist() == [0, 1, 0] and ds.name == "ok"
    scipy.io.savemat(tmp_path / "noy.mat", {"X": X})
    assert datasets.load_odds(tmp_path / "noy.mat").y is None
    scipy.io.savemat(tmp_path / "nox.mat", {"data": X, "y": y})
    with pytest.raises(DatasetNotFoundError, match=r"no variable 'X'.* \['data', 'y'\]"):
        datasets.load_odds(tmp_path / "nox.mat")
    scipy.io.savemat(tmp_path / "nan.mat", {"X": np.array([[1.0, math.nan]]), "y": [[0]]})
    with pytest.raises(DataError, match="NaN"):
        datasets.load_odds(tmp_path / "nan.mat")
    scipy.io.savemat(tmp_path / "short.mat", {"X": X, "y": [[0], [1]]})
    with pytest.raises(DataError, match="2 labels but the data has 3 rows"):
        datasets.load_odds(tmp_path / "short.mat")
    _write(tmp_path / "text.mat", "hello")
    with pytest.raises(DataError, match="not a readable MATLAB"):
        datasets.load_odds(tmp_path / "text.mat")
    with pytest.raises(DatasetNotFoundError):
        datasets.load_odds(tmp_path / "missing.mat")


# ------------------------------------------------------------------ one label rule, every format

# The same records in every format: features a, b, c (x0, x1, x2 in the matrix formats) and the
# labels, stored as a column "lab" (tables), as the array y beside X (.npz, .mat), or as the
# last column of the matrix (.npy).
RECORDS = np.array([[0.5, 1.0, 2.0], [1.5, 0.0, 2.5], [9.0, 9.5, 8.0], [0.25, 1.0, 2.0]])
LABELS = np.array([0, 0, 1, 0])


def _every_format(folder: Path) -> dict[str, Path]:
    table = pd.DataFrame(RECORDS, columns=["a", "b", "c"]).assign(lab=LABELS)
    paths = {k: folder / f"d.{k}" for k in ("csv", "parquet", "npz", "mat", "npy")}
    table.to_csv(paths["csv"], index=False)
    table.to_parquet(paths["parquet"], index=False)
    np.savez(paths["npz"], X=RECORDS, y=LABELS)
    scipy.io.savemat(paths["mat"], {"X": RECORDS, "y": LABELS.reshape(-1, 1)})
    np.save(paths["npy"], np.column_stack([RECORDS, LABELS]))
    return paths


@pytest.mark.parametrize(
    ("fmt", "label", "labelled"),
    [
        # no label given: the labels stored beside the data (.npz, .mat); never a column
        ("csv", None, False),
        ("parquet", None, False),
        ("npy", None, False),
        ("npz", None, True),
        ("mat", None, True),
        # the stored array, by name
        ("npz", "y", True),
        ("mat", "y", True),
        # a column, by name or by 0-based position (as text, as typed, or as an int)
        ("csv", "lab", True),
        ("parquet", "lab", True),
        ("csv", "3", True),
        ("parquet", 3, True),
        ("npy", "3", True),
        ("npy", "x3", True),
        ("npy", -1, True),
    ],
)
def test_one_label_rule_for_every_format(tmp_path, fmt, label, labelled):
    path = _every_format(tmp_path)[fmt]
    ds = datasets.load(path, label=label)
    if labelled:
        assert ds.y.tolist() == LABELS.tolist()
        np.testing.assert_array_equal(ds.X, RECORDS)  # a label column is not a feature
    else:
        assert ds.y is None
        assert ds.X.shape[1] == 4  # the label column is an ordinary feature


@pytest.mark.parametrize("fmt", ["npz", "mat"])
def test_a_column_of_the_matrix_as_labels_replaces_the_stored_array(tmp_path, fmt):
    path = tmp_path / f"flip.{fmt}"
    X = np.column_stack([RECORDS, 1 - LABELS])
    if fmt == "npz":
        np.savez(path, X=X, y=LABELS)
    else:
        scipy.io.savemat(path, {"X": X, "y": LABELS.reshape(-1, 1)})
    for label in ("x3", "3", 3):
        ds = datasets.load(path, label=label)
        assert ds.y.tolist() == (1 - LABELS).tolist()
        np.testing.assert_array_equal(ds.X, RECORDS)
    ds = datasets.load(path, columns=["x0", "2"])  # a column choice keeps the stored labels
    assert ds.y.tolist() == LABELS.tolist() and ds.feature_names == ["x0", "x2"]
    with pytest.raises(ParameterError, match="also selected as a feature"):
        datasets.load(path, label="x3", columns=["x3"])


def test_npz_data_is_the_only_array_besides_the_labels(tmp_path):
    path = tmp_path / "named.npz"
    np.savez(path, records=RECORDS, y=LABELS)
    ds = datasets.load(path)
    np.testing.assert_array_equal(ds.X, RECORDS)
    assert ds.y.tolist() == LABELS.tolist()
    np.savez(path, records=RECORDS, flags=LABELS)
    ds = datasets.load(path, label="flags")
    np.testing.assert_array_equal(ds.X, RECORDS)
    assert ds.y.tolist() == LABELS.tolist()
    np.savez(path, y=RECORDS)  # one array: it is the data, whatever its name
    assert datasets.load(path).y is None


@pytest.mark.parametrize("fmt", ["csv", "parquet", "npy", "npz", "mat"])
def test_an_unknown_label_names_what_exists(tmp_path, fmt):
    path = _every_format(tmp_path)[fmt]
    with pytest.raises(DatasetNotFoundError) as info:
        datasets.load(path, label="nope")
    message = str(info.value)
    assert "'nope'" in message
    assert ("'a'" in message) if fmt in ("csv", "parquet") else ("x0" in message)
    if fmt in ("npz", "mat"):
        assert "'y'" in message and "neither an array" in message
    words = "neither an array" if fmt in ("npz", "mat") else "out of range"
    with pytest.raises(DatasetNotFoundError, match=words):
        datasets.load(path, label="7")
