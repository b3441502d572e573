"""Feature scaling from public bounds (``privad.datasets.scale_to_bounds``) and the warning
when one column dominates the distances (``check_feature_scales``)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from privad.datasets import check_feature_scales, minmax_scale, read_bounds, scale_to_bounds
from privad.errors import DataError, DatasetNotFoundError, FeatureScaleWarning, ParameterError


def test_scale_clip_and_count_by_hand() -> None:
    X = np.array([[0.0, 5.0, 7.0], [50.0, -1.0, 8.0], [120.0, 2.5, 9.0]])
    Xs, report = scale_to_bounds(X, {"a": (0.0, 100.0), "b": (0.0, 5.0)}, ["a", "b", "c"])
    assert Xs[:, 0].tolist() == [0.0, 0.5, 1.0]  # 120 clipped to 100
    assert Xs[:, 1].tolist() == [1.0, 0.0, 0.5]  # -1 clipped to 0
    assert Xs[:, 2].tolist() == [7.0, 8.0, 9.0]  # no bounds: left alone
    assert report.scaled == ["a", "b"] and report.unscaled == ["c"] and report.clipped == 2
    assert report.clipped_above == {"a": 1, "b": 0} and report.clipped_below == {"a": 0, "b": 1}
    assert X[2, 0] == 120.0  # the input is not changed
    assert json.loads(json.dumps(report.to_dict()))["clipped_by_column"]["a"] == {
        "below": 0,
        "above": 1,
    }


def test_a_record_scaled_depends_on_that_record_only() -> None:
    """Change one record: with bounds every other scaled record stays the same; min-max
    scaling (from the data) moves all of them, so it is not private."""
    X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    Y = X.copy()
    Y[2] = [50.0, -10.0]
    bounds = {"u": (0.0, 10.0), "v": (0.0, 10.0)}
    sx, _ = scale_to_bounds(X, bounds, ["u", "v"])
    sy, _ = scale_to_bounds(Y, bounds, ["u", "v"])
    assert np.array_equal(sx[:2], sy[:2])
    assert not np.array_equal(minmax_scale(X)[:2], minmax_scale(Y)[:2])


@pytest.mark.parametrize(
    ("bounds", "error", "match"),
    [
        ({"z": (0, 1)}, DatasetNotFoundError, "bounds given for 'z', which is not a feature"),
        ({"a": (2, 1)}, ParameterError, "lower < upper"),
        ({"a": (0, float("inf"))}, ParameterError, "finite"),
        ({"a": ("x", 1)}, ParameterError, "two numbers"),
    ],
)
def test_bad_bounds(bounds, error, match) -> None:
    with pytest.raises(error, match=match):
        scale_to_bounds(np.zeros((2, 2)), bounds, ["a", "b"])


def test_read_bounds_csv_and_json(tmp_path) -> None:
    (tmp_path / "b.csv").write_text("column,lower,upper,source\na,0,10,manual\nb,-1,1,spec\n")
    (tmp_path / "b.json").write_text('{"a": [0, 10], "b": {"lower": -1, "upper": 1}}')
    want = {"a": (0.0, 10.0), "b": (-1.0, 1.0)}
    assert read_bounds(tmp_path / "b.csv") == want == read_bounds(tmp_path / "b.json")
    (tmp_path / "bad.csv").write_text("name,lo,hi\na,0,1\n")
    with pytest.raises(DataError, match="column,lower,upper"):
        read_bounds(tmp_path / "bad.csv")
    (tmp_path / "twice.csv").write_text("column,lower,upper\na,0,1\na,0,2\n")
    with pytest.raises(ParameterError, match="'a' has two rows"):
        read_bounds(tmp_path / "twice.csv")
    with pytest.raises(DatasetNotFoundError, match="not found"):
        read_bounds(tmp_path / "none.json")


def test_wine_proline_dominates_until_scaled(wine) -> None:
    frame, bounds = wine
    X, names = frame.to_numpy(), list(frame.columns)
    with pytest.warns(FeatureScaleWarning, match=r"'proline' carries 99\.8% of the variance"):
        assert check_feature_scales(X, names)[0] == "proline"
    Xs, report = scale_to_bounds(X, bounds, names)
    assert (
        report.clipped
        == report.clipped_above["flavanoids"]
        == int(np.count_nonzero(frame["flavanoids"] > 5.0))
    )
    assert Xs.min() >= 0.0 and Xs.max() <= 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        assert check_feature_scales(Xs, names) is None
    # proline alone bounded: magnesium (60..162 in its own units) takes over
    Xp, _ = scale_to_bounds(X, {"proline": bounds["proline"]}, names)
    with pytest.warns(FeatureScaleWarning, match="'magnesium' carries"):
        check_feature_scales(Xp, names)
    assert check_feature_scales(X[:, :1], names[:1]) is None  # one column: nothing to compare
