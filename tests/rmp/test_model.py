"""The model M (fit_model, RMPModel): the end-user path and the model file."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from privad.errors import DataError, DatasetNotFoundError
from privad.noise import Randomness
from privad.rmp import AANNTraining, double_logistic, participant_matrix, perturb, public_matrix
from privad.rmp.aann import threshold
from privad.rmp.model import FORMAT_VERSION, RMPModel, fit_model

ONE_EPOCH = AANNTraining(epochs=1)


def _scheme(m=90, n=5, alpha=0.05, seed=0):
    rng = Randomness(seed)
    X = rng.uniform(0, 1, (m, 1)) @ rng.uniform(0.2, 1, (1, n)) + rng.normal(0, 0.02, (m, n))
    T = public_matrix(n - 1, n, rng)
    Z_all = np.hstack(
        [
            perturb(participant_matrix(T, alpha, rng), double_logistic(X[s : s + 30].T))
            for s in range(0, m, 30)
        ]
    )
    return X, T, Z_all


@pytest.fixture(scope="module")
def fitted():
    X, T, Z_all = _scheme()
    return X, T, Z_all, fit_model(T, Z_all, alpha=0.05, training=AANNTraining(epochs=20), rng=1)


def test_fit_model_trains_on_the_columns_and_pools_the_threshold(fitted):
    X, T, Z_all, model = fitted
    assert model.aann.n_inputs == T.shape[0] == model.w
    assert model.n_features == T.shape[1]
    assert model.threshold == pytest.approx(threshold(model.aann.errors(Z_all.T)))
    meta = model.metadata
    assert meta["format_version"] == FORMAT_VERSION
    assert meta["n_training_records"] == Z_all.shape[1] == 90
    assert meta["epochs"] == 20 and meta["hidden"] == model.aann.hidden and meta["alpha"] == 0.05
    assert meta["created"].endswith("+00:00") and "privad_version" in meta
    assert meta["aann"]["loss"] == "mean" and meta["aann"]["batch_size"] == 32
    json.dumps(meta)


def test_fit_model_passes_the_loss_and_reports_divergence():
    _, T, Z_all = _scheme()
    model = fit_model(T, Z_all, training=AANNTraining(epochs=2, loss="sum", batch_size=128), rng=1)
    assert model.metadata["aann"]["loss"] == "sum"
    assert model.metadata["aann"]["batch_size"] == 128
    with pytest.raises(DataError, match="diverged"):
        fit_model(T, Z_all, training=AANNTraining(epochs=2, learning_rate=1e300), rng=1)


def test_transform_is_public_T_after_double_logistic(fitted):
    X, T, _, model = fitted
    assert np.allclose(model.transform(X), (T @ double_logistic(X.T)).T)
    assert model.transform(X).shape == (X.shape[0], T.shape[0])


def test_scores_and_labels(fitted):
    X, _, _, model = fitted
    scores = model.decision_function(X)
    assert scores.shape == (X.shape[0],)
    labels = model.predict(X)
    assert set(np.unique(labels)) <= {0, 1}
    assert np.array_equal(labels, (scores > model.threshold).astype(int))
    with pytest.raises(DataError, match="n = 5 columns"):
        model.transform(np.ones((3, 4)))


def test_fit_model_checks_the_orientation():
    X, T, Z_all = _scheme()
    with pytest.raises(DataError, match="w = 4"):
        fit_model(T, Z_all.T, training=ONE_EPOCH)
    with pytest.raises(DataError):
        fit_model(T, np.where(Z_all > 1, np.nan, Z_all), training=ONE_EPOCH)
    with pytest.raises(DataError, match="at least 2 records"):
        fit_model(T, Z_all[:, :1], training=ONE_EPOCH)


def test_round_trip_bytes_and_file_give_identical_scores(fitted, tmp_path):
    X, _, _, model = fitted
    again = RMPModel.from_bytes(model.to_bytes())
    assert np.array_equal(again.decision_function(X), model.decision_function(X))
    assert again.threshold == model.threshold and again.beta == model.beta
    assert again.metadata == model.metadata
    path = model.save(tmp_path / "sub" / "model.npz")
    loaded = RMPModel.load(path)
    assert np.array_equal(loaded.decision_function(X), model.decision_function(X))
    assert [p.name for p in path.parent.iterdir()] == ["model.npz"]  # no temporary left


def _members(model):
    with np.load(io.BytesIO(model.to_bytes()), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _archive(members, allow_pickle=False):
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=allow_pickle, **members)
    return buffer.getvalue()


class _Exploit:
    """Unpickling this would create a file: the test checks that it never happens."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pickle_in_the_file_is_refused_and_never_run(fitted, tmp_path):
    _, _, _, model = fitted
    sentinel = tmp_path / "pwned"
    members = _members(model)
    members["metadata"] = np.array([_Exploit(str(sentinel))], dtype=object)
    with pytest.raises(DataError, match="corrupt or unsafe"):
        RMPModel.from_bytes(_archive(members, allow_pickle=True))
    members = _members(model)
    members["T"] = np.array([_Exploit(str(sentinel))], dtype=object)
    with pytest.raises(DataError):
        RMPModel.from_bytes(_archive(members, allow_pickle=True))
    assert not sentinel.exists()


def test_truncated_and_garbage_bytes_are_data_errors(fitted):
    _, _, _, model = fitted
    data = model.to_bytes()
    for bad in (b"", b"garbage", data[:50], data[: len(data) // 2], data[:-1]):
        with pytest.raises(DataError):
            RMPModel.from_bytes(bad)
    with pytest.raises(DataError):
        RMPModel.from_bytes("not bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [
        {"coef_0": np.zeros((4, 7))},
        {"coef_1": np.zeros((3, 3))},
        {"intercept_1": np.zeros(9)},
        {"input_scale": np.zeros(4)},
        {"T": np.full((4, 5), np.nan)},
        {"T": np.ones((5, 5))},
        {"T": np.ones(5)},
        {"threshold": np.array([1.0, 2.0])},
        {"beta": np.float64(-1.0)},
        {"coef_0": np.zeros((4, 2), dtype=np.int64)},
        {"metadata": np.str_("{not json")},
        {"metadata": np.str_(json.dumps({"format_version": 99}))},
        {"metadata": np.str_(json.dumps([1, 2]))},
        {"metadata": np.str_(json.dumps({"format_version": 1, "aann": {"activation": "x"}}))},
        {"extra": np.zeros(2)},
    ],
)
def test_hostile_or_inconsistent_files_are_data_errors(fitted, change):
    _, _, _, model = fitted
    members = {**_members(model), **change}
    with pytest.raises(DataError):
        RMPModel.from_bytes(_archive(members))


def test_a_missing_member_is_a_data_error(fitted):
    _, _, _, model = fitted
    members = _members(model)
    del members["threshold"]
    with pytest.raises(DataError, match="missing members"):
        RMPModel.from_bytes(_archive(members))


def test_load_reports_missing_and_bad_files(tmp_path):
    with pytest.raises(DatasetNotFoundError):
        RMPModel.load(tmp_path / "absent.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(DataError, match="bad.npz"):
        RMPModel.load(bad)


def test_model_validates_its_parts(fitted):
    _, T, _, model = fitted
    with pytest.raises(DataError):
        RMPModel(T=np.ones((3, 5)), beta=model.beta, aann=model.aann, threshold=1.0)
    with pytest.raises(DataError):
        RMPModel(T=T, beta=model.beta, aann=model.aann, threshold=float("inf"))
    with pytest.raises(DataError):
        RMPModel(T=T, beta=model.beta, aann=model.aann, threshold=1.0, metadata={"x": {1, 2}})
