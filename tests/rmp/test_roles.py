"""The parties of RMP: Participant (and its key file), MiningServer, EndUser, run_scheme."""

from __future__ import annotations

import io
import json
import os
import stat

import numpy as np
import pytest

from privad.errors import DataError, DatasetNotFoundError, ParameterError
from privad.noise import Randomness
from privad.rmp import AANNTraining, double_logistic, public_matrix
from privad.rmp.model import RMPModel
from privad.rmp.roles import EndUser, MiningServer, Participant, run_scheme


def _data(m=70, n=4, seed=0):
    rng = Randomness(seed)
    return rng.uniform(0, 1, (m, 1)) @ rng.uniform(0.2, 1, (1, n)) + rng.normal(0, 0.02, (m, n))


@pytest.fixture
def T():
    return public_matrix(3, 4, rng=0)


def test_participant_perturbs_with_its_private_matrix(T):
    p = Participant(T, 0.1, rng=1)
    X = _data()
    Z = p.perturb(X)
    assert Z.shape == (3, X.shape[0])  # w x m: records as columns
    T_i = p.private_matrix()
    assert np.allclose(Z, T_i @ double_logistic(X.T))
    assert np.all(np.abs(T_i - T) < 0.1) and not np.array_equal(T_i, T)
    with pytest.raises(ValueError):
        T_i[0, 0] = 0.0  # read-only


def test_participant_hides_its_matrix(T):
    p = Participant(T, 0.1, rng=1)
    assert "T_i" not in repr(p) and str(p.private_matrix()[0, 0]) not in repr(p)
    assert not hasattr(p, "__dict__")
    assert p.w == 3 and p.n_features == 4 and p.alpha == 0.1


def test_batches_of_thirty(T):
    p = Participant(T, 0.1, rng=1)
    X = _data(m=70)
    parts = list(p.batches(X))
    assert [b.shape for b in parts] == [(3, 30), (3, 30), (3, 10)]
    assert np.allclose(np.hstack(parts), p.perturb(X))
    assert [b.shape[1] for b in p.batches(X, batch_size=50)] == [50, 20]
    with pytest.raises(ParameterError):
        list(p.batches(X, batch_size=0))


def test_participant_checks_its_records(T):
    p = Participant(T, 0.1, rng=1)
    with pytest.raises(DataError, match="n = 4 columns"):
        p.perturb(np.ones((5, 3)))
    with pytest.raises(DataError):
        p.perturb(np.full((2, 4), np.nan))
    with pytest.raises(ParameterError):
        Participant(T, 1.0)
    with pytest.raises(ParameterError):
        Participant(np.ones((4, 4)), 0.1)


def test_key_round_trip(T, tmp_path):
    p = Participant(T, 0.2, rng=3)
    again = Participant.from_key_bytes(p.to_key_bytes(), T)
    assert np.array_equal(again.private_matrix(), p.private_matrix())
    assert again.alpha == p.alpha and again.beta == p.beta
    X = _data()
    assert np.array_equal(again.perturb(X), p.perturb(X))
    path = p.save_key(tmp_path / "keys" / "me.key")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    loaded = Participant.load_key(path, T)
    assert np.array_equal(loaded.private_matrix(), p.private_matrix())


def test_key_for_another_public_matrix_is_refused(T):
    key = Participant(T, 0.2, rng=3).to_key_bytes()
    with pytest.raises(DataError, match="different public matrix"):
        Participant.from_key_bytes(key, public_matrix(3, 4, rng=9))


def _key_members(key):
    with np.load(io.BytesIO(key), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _archive(members, allow_pickle=False):
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=allow_pickle, **members)
    return buffer.getvalue()


def test_bad_keys_are_data_errors(T, tmp_path):
    key = Participant(T, 0.2, rng=3).to_key_bytes()
    members = _key_members(key)
    bad_keys = [
        b"",
        b"junk",
        key[:40],
        key[:-3],
        _archive({**members, "T_i": members["T"] + 0.5}),  # |T_i - T| > alpha
        _archive({**members, "T_i": np.zeros((2, 2))}),
        _archive({**members, "metadata": np.str_(json.dumps({"kind": "other"}))}),
        _archive({**members, "metadata": np.array([{"kind": 1}], dtype=object)}, allow_pickle=True),
        _archive({k: v for k, v in members.items() if k != "T"}),
    ]
    for bad in bad_keys:
        with pytest.raises(DataError):
            Participant.from_key_bytes(bad)
    with pytest.raises(DatasetNotFoundError):
        Participant.load_key(tmp_path / "nope.key")


def test_server_receives_validated_submissions(T):
    server = MiningServer(T, alpha=0.1, training=AANNTraining(epochs=5), rng=0)
    p = Participant(T, 0.1, rng=1)
    X = _data()
    assert server.receive(p.perturb(X[:30])) == 30
    for bad in (np.ones((4, 5)), np.ones(3), np.full((3, 2), np.inf), np.ones((3, 0)), "x"):
        with pytest.raises(DataError):
            server.receive(bad)
    assert server.n_records == 30 and server.n_submissions == 1  # nothing stored
    server.receive(p.perturb(X[30:]))
    model = server.train()
    assert isinstance(model, RMPModel)
    assert model.metadata["n_training_records"] == X.shape[0]
    assert model.metadata["alpha"] == 0.1


def test_server_passes_training_options_and_reports_divergence(T):
    p = Participant(T, 0.1, rng=1)
    server = MiningServer(
        T, alpha=0.1, rng=0, training=AANNTraining(epochs=2, loss="sum", learning_rate=1e300)
    )
    server.receive(p.perturb(_data()))
    with pytest.raises(DataError, match="diverged"):
        server.train()
    model = run_scheme(
        _data(), 0.1, rng=0, training=AANNTraining(epochs=2, loss="sum", batch_size=16)
    )
    assert model.metadata["aann"]["loss"] == "sum"
    assert model.metadata["aann"]["batch_size"] == 16


def test_server_needs_records(T):
    with pytest.raises(DataError, match="at least 2 records"):
        MiningServer(T, training=AANNTraining(epochs=1)).train()
    with pytest.raises(ParameterError):
        MiningServer(T, training=AANNTraining(epochs=0))


def test_end_user_scores_with_the_model(T):
    X = _data()
    model = run_scheme(X, 0.05, T=T, training=AANNTraining(epochs=5), rng=2)
    user = EndUser(model)
    assert np.array_equal(user.decision_function(X), model.decision_function(X))
    assert np.array_equal(user.predict(X), model.predict(X))
    with pytest.raises(ParameterError):
        EndUser("model")  # type: ignore[arg-type]


def test_end_user_from_a_file(T, tmp_path):
    X = _data()
    model = run_scheme(X, 0.05, T=T, training=AANNTraining(epochs=3), rng=2)
    user = EndUser.from_file(model.save(tmp_path / "m.npz"))
    assert np.array_equal(user.decision_function(X), model.decision_function(X))


def test_run_scheme_is_deterministic_and_draws_T():
    X = _data(n=5)
    a = run_scheme(X, 0.1, r=2, training=AANNTraining(epochs=3), rng=7)
    b = run_scheme(X, 0.1, r=2, training=AANNTraining(epochs=3), rng=7)
    assert a.T.shape == (3, 5)
    assert np.array_equal(a.T, b.T)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))
    with pytest.raises(ParameterError):
        run_scheme(X, 0.1, r=5, training=AANNTraining(epochs=1))
    with pytest.raises(DataError):
        run_scheme(X, 0.1, T=public_matrix(3, 4, rng=0), training=AANNTraining(epochs=1))
