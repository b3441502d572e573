"""Partitioned input (Parquet folder, CSV glob) and atomic partitioned output."""

from __future__ import annotations

from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest

from privad.accounting import Guarantee, Ledger
from privad.distributed import (
    atomic_folder,
    open_partitioned,
    read_partitioned,
    release_folder,
    write_columns,
)
from privad.errors import BudgetExceededError, DataError, DatasetNotFoundError, ParameterError

SIZES = (5, 0, 12, 3, 0)


@pytest.fixture
def parts(tmp_path: Path, write_parts) -> tuple[Path, np.ndarray]:
    X = np.arange(sum(SIZES) * 3, dtype=np.float64).reshape(-1, 3)
    return write_parts(tmp_path / "data", X, SIZES, ["a", "b", "y"]), X


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".part")]


def test_parquet_folder_keeps_partitions_and_selects_columns(client, parts) -> None:
    folder, X = parts
    table = read_partitioned(str(folder))
    assert table.lengths == SIZES and table.n_partitions == 5 and table.n_records == 20
    assert table.feature_names == ["a", "b", "y"] and table.name == "data"
    assert table.records.chunks[0] == SIZES
    np.testing.assert_array_equal(table.records.compute(), X)
    np.testing.assert_array_equal(table.offsets(), [0, 5, 5, 17, 20, 20])
    # by name or position (text, as on the command line), the label left out
    table = read_partitioned(str(folder), columns=["2", "a"], label="b")
    assert table.feature_names == ["y", "a"]
    np.testing.assert_array_equal(table.records.compute(), X[:, [2, 0]])
    table = read_partitioned(str(folder), label="-1")
    assert table.feature_names == ["a", "b"]


def test_csv_glob_and_single_files(client, tmp_path: Path) -> None:
    (tmp_path / "csv").mkdir()
    X = np.arange(12.0).reshape(6, 2)
    for i, (a, b) in enumerate([(0, 2), (2, 2), (2, 6)]):
        pd.DataFrame(X[a:b], columns=["u", "v"]).to_csv(tmp_path / "csv" / f"{i}.csv", index=False)
    table = read_partitioned(str(tmp_path / "csv" / "*.csv"))
    assert table.lengths == (2, 0, 4) and table.name == "csv"
    np.testing.assert_array_equal(table.records.compute(), X)
    table = read_partitioned(str(tmp_path / "csv" / "2.csv"))
    assert table.lengths == (4,) and table.name == "2"
    pd.DataFrame(X, columns=["u", "v"]).to_parquet(tmp_path / "x.parquet")
    assert read_partitioned(str(tmp_path / "x.parquet")).n_records == 6


def test_errors_found_on_the_driver(tmp_path: Path, parts) -> None:
    folder, _ = parts
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    cases = [
        ({"source": str(tmp_path / "missing")}, DatasetNotFoundError, "does not exist"),
        ({"source": str(tmp_path / "*.csv")}, DatasetNotFoundError, "no file matches"),
        ({"source": str(tmp_path / "empty")}, DataError, "holds no data files"),
        ({"source": str(tmp_path / "notes.txt")}, DataError, "not a Parquet folder"),
        ({"source": str(folder), "columns": ["zz"]}, DatasetNotFoundError, "unknown column"),
        ({"source": str(folder), "columns": ["7"]}, DatasetNotFoundError, "out of range"),
        ({"source": str(folder), "columns": ["a", "0"]}, ParameterError, "twice"),
        ({"source": str(folder), "columns": ["a"], "label": "a"}, ParameterError, "label"),
    ]
    for kwargs, error, message in cases:
        source = kwargs.pop("source")
        with pytest.raises(error, match=message):
            open_partitioned(source, **kwargs)


def test_bad_values_are_found_by_the_workers(client, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    pd.DataFrame({"a": [1.0, 2.0]}).to_parquet(tmp_path / "d" / "0.parquet")
    pd.DataFrame({"a": [1.0, np.inf]}).to_parquet(tmp_path / "d" / "1.parquet")
    source = open_partitioned(str(tmp_path / "d"))  # nothing read yet
    with pytest.raises(DataError, match=r"partition 1\).*infinite.*data row 2"):
        source.load()
    (tmp_path / "s").mkdir()
    pd.DataFrame({"a": ["1", "x"]}).to_parquet(tmp_path / "s" / "0.parquet")
    with pytest.raises(DataError, match="not numeric"):
        read_partitioned(str(tmp_path / "s"))
    (tmp_path / "e").mkdir()
    pd.DataFrame({"a": np.zeros(0)}).to_parquet(tmp_path / "e" / "0.parquet")
    with pytest.raises(DataError, match="no data rows"):
        read_partitioned(str(tmp_path / "e"))


def test_atomic_folder_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "out" / "labels"
    with pytest.raises(ParameterError, match="does not exist"), atomic_folder(target):
        pass  # the folder of an output must exist: privad creates none
    target.parent.mkdir()
    with atomic_folder(target) as tmp:
        assert tmp.parent == target.parent and not target.exists()
        (tmp / "part-00000.parquet").write_text("x")
    assert sorted(p.name for p in target.iterdir()) == ["part-00000.parquet"]
    with pytest.raises(ParameterError, match="already exists"), atomic_folder(target):
        pass
    with pytest.raises(RuntimeError), atomic_folder(tmp_path / "failed") as tmp:
        (tmp / "part-00000.parquet").write_text("x")
        raise RuntimeError("half-way")
    assert not (tmp_path / "failed").exists()
    with pytest.raises(ParameterError, match="already exists"):
        with atomic_folder(tmp_path / "raced"):
            (tmp_path / "raced").mkdir()  # someone else created it meanwhile
    assert list((tmp_path / "raced").iterdir()) == []
    assert _leftovers(tmp_path) == [] and _leftovers(tmp_path / "out") == []


def test_release_folder_commits_once_before_the_rename(tmp_path: Path) -> None:
    g = Guarantee("pure-dp", 0.5, "add or remove one record", description="test")
    with Ledger(":memory:") as book:
        book.set_budget("s", "pure-dp", 1.0)
        with release_folder(
            tmp_path / "a", ledger=book, scope="s", guarantee=g, label="job a"
        ) as tmp:
            (spend,) = book.history("s")
            assert spend.status == "reserved" and book.spent("s", "pure-dp") == 0.5
            (tmp / "part-00000.parquet").write_text("x")
        assert [s.status for s in book.history("s")] == ["committed"]
        assert (tmp_path / "a").is_dir()
        with pytest.raises(RuntimeError):  # a failing job: cancelled, nothing written
            with release_folder(tmp_path / "b", ledger=book, scope="s", guarantee=g, label="job b"):
                raise RuntimeError("worker died")
        assert book.spent("s", "pure-dp") == 0.5 and not (tmp_path / "b").exists()
        book.spend("s", g, "something else")
        with pytest.raises(BudgetExceededError):  # refused: no folder, no temporary folder
            with release_folder(tmp_path / "c", ledger=book, scope="s", guarantee=g, label="job c"):
                raise AssertionError("never runs")
        with pytest.raises(ParameterError, match="scope"):
            with release_folder(tmp_path / "d", ledger=book, guarantee=g, label="x"):
                pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def test_write_columns_one_part_per_partition(client, tmp_path: Path) -> None:
    lengths = (3, 0, 4)
    labels = np.array([1, 0, 1, 1, 0, 0, 1])
    score = np.linspace(0.0, 1.0, 7)
    (tmp_path / "np").mkdir()
    (tmp_path / "dk").mkdir()
    write_columns(tmp_path / "np", {"label": labels, "score": score}, lengths)
    write_columns(
        tmp_path / "dk", {"label": labels, "score": da.from_array(score, chunks=2)}, lengths
    )
    for kind in ("np", "dk"):
        parts = sorted((tmp_path / kind).iterdir())
        assert [p.name for p in parts] == [f"part-0000{i}.parquet" for i in range(3)]
        frames = [pd.read_parquet(p) for p in parts]
        assert [len(f) for f in frames] == list(lengths)
        whole = pd.concat(frames)
        assert list(whole.columns) == ["index", "label", "score"]
        np.testing.assert_array_equal(whole["index"], np.arange(7))
        np.testing.assert_array_equal(whole["label"], labels)
        np.testing.assert_array_equal(whole["score"], score)
