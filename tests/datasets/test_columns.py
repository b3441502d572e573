"""Column roles (``privad.datasets.tables.plan_columns``): features, label, excluded, id.

Excluded columns and the id column are never features; the id column's values (numbers or
text) travel in ``Dataset.ids``; a column with two roles and an unknown column are one-line
errors naming the column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privad.columns import plan_columns
from privad.datasets import Dataset, load_csv, load_parquet
from privad.datasets.tables import select_columns
from privad.errors import DataError, DatasetNotFoundError, ParameterError

NAMES = ["id", "when", "x1", "x2", "y"]


def test_plan_defaults_drop_label_id_and_excluded() -> None:
    plan = plan_columns(NAMES, label="y", exclude=["when"], id_column="id")
    assert plan.features == ["x1", "x2"] and plan.label == "y" and plan.id == "id"
    assert plan_columns(NAMES, exclude=["1", "4"]).features == ["id", "x1", "x2"]  # positions
    assert plan_columns(NAMES, columns=["x2", "x1"], id_column="id").features == ["x2", "x1"]
    assert plan_columns(list(range(3)), exclude=["0"]).features == [1, 2]  # headerless


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"exclude": ["nope"]}, DatasetNotFoundError, "unknown excluded column 'nope'"),
        ({"id_column": "nope"}, DatasetNotFoundError, "unknown id column 'nope'"),
        ({"exclude": ["9"]}, DatasetNotFoundError, "excluded column index 9 is out of range"),
        ({"columns": ["x1"], "exclude": ["x1"]}, ParameterError, "'x1' is excluded and also"),
        ({"columns": ["id", "x1"], "id_column": "id"}, ParameterError, "'id' is the id column"),
        ({"label": "y", "id_column": "y"}, ParameterError, "both the label and the id"),
        ({"exclude": ["id", "when", "x1", "x2"], "label": "y"}, DataError, "no feature columns"),
    ],
)
def test_plan_errors_name_the_column(options, error, match) -> None:
    with pytest.raises(error, match=match):
        plan_columns(NAMES, source="d.csv", **options)


def test_csv_and_parquet_carry_text_ids(tmp_path) -> None:
    frame = pd.DataFrame(
        {
            "id": ["a-1", "b-2", "c-3"],
            "when": [1.7e9, 1.7e9 + 60, 1.7e9 + 120],
            "x1": [0.5, 1.5, 2.5],
            "x2": [1.0, 2.0, 3.0],
            "y": [0, 1, 0],
        }
    )
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet", index=False)
    for ds in (
        load_csv(tmp_path / "d.csv", label="y", exclude=["when"], id_column="id"),
        load_parquet(tmp_path / "d.parquet", label="y", exclude=["when"], id_column="id"),
    ):
        assert ds.feature_names == ["x1", "x2"]
        assert np.array_equal(ds.X, frame[["x1", "x2"]].to_numpy())
        assert ds.ids.tolist() == ["a-1", "b-2", "c-3"] and ds.y.tolist() == [0, 1, 0]
    # a text column that is not the id is still an error naming it
    with pytest.raises(DataError, match="column 'id' of .* is not numeric"):
        load_csv(tmp_path / "d.csv", exclude=["when"])
    frame.loc[1, "id"] = None
    frame.to_csv(tmp_path / "gap.csv", index=False)
    with pytest.raises(DataError, match="id column 'id' .* has missing values"):
        load_csv(tmp_path / "gap.csv", id_column="id")


def test_select_columns_on_a_loaded_dataset() -> None:
    X = np.array([[7.0, 0.1, 9.0], [8.0, 0.2, 9.5]])
    ds = select_columns(
        Dataset(X=X, feature_names=["key", "a", "b"]), exclude=["b"], id_column="key"
    )
    assert ds.feature_names == ["a"] and ds.X[:, 0].tolist() == [0.1, 0.2]
    assert ds.ids.dtype == np.int64 and ds.ids.tolist() == [7, 8]  # whole numbers: integers
    with pytest.raises(DataError, match="ids must have shape"):
        Dataset(X=X, ids=np.arange(3))
