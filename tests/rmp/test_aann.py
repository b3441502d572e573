"""The AANN of section 6 and the threshold θ = μ + 3σ of section 4."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from privad.errors import DataError, ParameterError
from privad.noise import Randomness
from privad.rmp.aann import AANN, AANNTraining, default_hidden, threshold, train_aann


def _records(m=120, n=6, seed=0):
    rng = Randomness(seed)
    latent = rng.uniform(0, 1, (m, 2))
    mix = rng.uniform(0, 1, (2, n))
    return latent @ mix / 2 + rng.normal(0, 0.01, (m, n))


def test_threshold_is_mean_plus_three_population_sigmas():
    errors = [1.0, 2.0, 3.0, 4.0]
    assert threshold(errors) == pytest.approx(2.5 + 3 * math.sqrt(1.25))
    assert threshold([5.0]) == 5.0


@pytest.mark.parametrize("bad", [[], [1.0, np.nan], [[1.0, 2.0]]])
def test_threshold_rejects_bad_errors(bad):
    with pytest.raises(DataError):
        threshold(bad)


def test_initial_weights_and_biases_are_uniform_in_init_range():
    # A vanishing learning rate leaves the weights where the initialisation put them.
    X = _records()
    for init_range in (0.1, 0.5):
        training = AANNTraining(epochs=1, learning_rate=1e-12, init_range=init_range)
        net = train_aann(X, training, rng=1)
        params = np.concatenate([a.ravel() for a in (*net.coefs, *net.intercepts)])
        assert np.all(np.abs(params) <= init_range)
        # not scikit-learn's Glorot bound sqrt(2 / (6 + 3)) ≈ 0.47: the spread is ours
        assert np.abs(params).max() > 0.8 * init_range
        assert np.all(np.abs(net.intercepts[0]) > 0) and np.all(np.abs(net.intercepts[1]) > 0)


def test_shapes_and_default_hidden():
    X = _records(n=7)
    net = train_aann(X, AANNTraining(epochs=2), rng=0)
    assert net.hidden == default_hidden(7) == 4
    assert net.coefs[0].shape == (7, 4) and net.coefs[1].shape == (4, 7)
    assert net.reconstruct(X).shape == X.shape
    errors = net.errors(X)
    assert errors.shape == (X.shape[0],) and np.all(errors >= 0)
    assert default_hidden(1) == 1 and default_hidden(128) == 64


def test_training_reduces_the_reconstruction_error():
    X = _records()
    before = train_aann(X, AANNTraining(epochs=1, learning_rate=1e-12), rng=2).errors(X).mean()
    after = train_aann(X, AANNTraining(epochs=60), rng=2).errors(X).mean()
    assert after < 0.25 * before


def test_same_seed_same_network_other_seed_other_network():
    X = _records()
    a, b, c = (train_aann(X, AANNTraining(epochs=5), rng=s) for s in (3, 3, 4))
    assert all(np.array_equal(x, y) for x, y in zip(a.coefs, b.coefs, strict=True))
    assert not np.array_equal(a.coefs[0], c.coefs[0])


def test_progress_is_called_once_per_epoch():
    calls = []
    train_aann(
        _records(), AANNTraining(epochs=4), rng=0, progress=lambda e, n: calls.append((e, n))
    )
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]


@pytest.mark.parametrize("scaling", ["minmax", "zscore", "none"])
def test_input_scalings(scaling):
    X = _records() * 10 + 3
    net = train_aann(X, AANNTraining(epochs=3, input_scaling=scaling), rng=0)
    assert net.input_scaling == scaling
    S = net.scale_inputs(X)
    if scaling == "minmax":
        assert S.min() == pytest.approx(0) and S.max() == pytest.approx(1)
    elif scaling == "zscore":
        assert np.allclose(S.mean(axis=0), 0) and np.allclose(S.std(axis=0), 1)
    else:
        assert np.array_equal(S, X)


def _hidden_activations(net, X):
    S = net.scale_inputs(X)
    return 0.5 * (np.tanh(0.5 * (S @ net.coefs[0] + net.intercepts[0])) + 1.0)


def _wide_records(m=256, n=128, seed=0):
    """Records like Gas's perturbed ones: n = 128 correlated columns in about [0, 1]."""
    rng = Randomness(seed)
    return rng.uniform(0, 1, (m, 3)) @ rng.uniform(0, 1, (3, n)) / 3 + rng.normal(0, 0.01, (m, n))


@pytest.mark.parametrize("seed", [0, 1])
def test_the_summed_loss_kills_the_hidden_layer_of_a_wide_network_the_mean_does_not(seed):
    """docs/rmp.md: with 64 logistic hidden units the summed loss's curvature (≈ 1 + 64/4)
    times the learning rate 0.25 exceeds momentum SGD's limit 2(1 + 0.85); within a few
    epochs every hidden unit saturates at 0. The mean over the 128 outputs trains."""
    X = _wide_records(seed=seed)
    summed = train_aann(X, AANNTraining(epochs=3, loss="sum", batch_size=32), rng=seed)
    mean = train_aann(X, AANNTraining(epochs=3, loss="mean", batch_size=32), rng=seed)
    assert summed.hidden == mean.hidden == 64
    assert _hidden_activations(summed, X).mean(axis=0).max() < 0.01  # all dead
    assert 0.3 < _hidden_activations(mean, X).mean() < 0.7
    assert mean.errors(X).mean() < summed.errors(X).mean()


def test_scikit_learn_follows_the_gradient_of_the_summed_error():
    """loss="mean" divides the learning rate by the number of outputs; that is right only
    while MLPRegressor's gradient is the squared error summed over the outputs (issue
    #8349). One full-batch step from zero weights moves each output bias by lr · mean(y_j)."""
    import warnings

    from sklearn.neural_network import MLPRegressor

    Y = Randomness(0).uniform(0, 1, (40, 5))
    net = MLPRegressor(
        hidden_layer_sizes=(3,),
        solver="sgd",
        alpha=0.0,
        batch_size=40,
        learning_rate_init=0.1,
        momentum=0.0,
        shuffle=False,
        max_iter=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net.partial_fit(Y, Y)
        for W in (*net.coefs_, *net.intercepts_):
            W[...] = 0.0
        net.partial_fit(Y, Y)
    np.testing.assert_allclose(net.intercepts_[1], 0.1 * Y.mean(axis=0))


def test_the_mean_loss_is_the_summed_loss_with_the_learning_rate_divided_by_w():
    X = _records(n=6)
    a = train_aann(X, AANNTraining(epochs=4, loss="mean", learning_rate=0.3), rng=7)
    b = train_aann(X, AANNTraining(epochs=4, loss="sum", learning_rate=0.3 / 6), rng=7)
    for x, y in zip((*a.coefs, *a.intercepts), (*b.coefs, *b.intercepts), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15)


def test_one_input_trains_without_warnings():
    """w = 1 (the 2-D Banana with r = 1): a 1-D target, no DataConversionWarning."""
    import warnings

    X = _records(n=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net = train_aann(X, AANNTraining(epochs=3), rng=0)
    assert net.coefs[0].shape == (1, 1) and net.coefs[1].shape == (1, 1)
    assert net.intercepts[1].shape == (1,)
    assert net.errors(X).shape == (X.shape[0],)
    assert net.reconstruct(X).shape == X.shape


@pytest.mark.parametrize(
    ("learning_rate", "why"),
    [
        (10.0, "more than 100 times"),  # finite but astronomically large weights
        (1e3, "NaN or infinite"),
        (1e300, "NaN or infinite"),  # already in the first epoch
    ],
)
@pytest.mark.parametrize("loss", ["sum", "mean"])
def test_divergence_is_a_data_error_with_advice(learning_rate, why, loss):
    X = _records(n=6) * 1e3
    step = learning_rate * (6 if loss == "mean" else 1)  # the same steps either way
    with pytest.raises(DataError, match="diverged") as info:
        train_aann(
            X, AANNTraining(epochs=20, input_scaling="none", learning_rate=step, loss=loss), rng=0
        )
    message = str(info.value)
    assert why in message and "smaller learning_rate" in message and "loss='mean'" in message


def test_records_too_large_to_scale_are_a_data_error():
    X = Randomness(0).uniform(-1, 1, (10, 3)) * 1e308
    with pytest.raises(DataError, match="too large to scale"):
        train_aann(X, AANNTraining(epochs=1), rng=0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epochs": 0}, r"epochs must be an integer >= 1, got 0"),
        ({"epochs": 2.5}, r"epochs must be an integer, got 2.5"),
        ({"hidden": 0}, r"hidden must be an integer >= 1, got 0"),
        ({"momentum": 1.0}, r"momentum must satisfy 0 <= momentum < 1, got 1.0"),
        ({"momentum": -0.1}, r"momentum must be >= 0"),
        ({"learning_rate": 0.0}, r"learning_rate must be > 0"),
        ({"learning_rate": float("nan")}, r"learning_rate must be finite"),
        ({"init_range": -0.1}, r"init_range must be > 0"),
        ({"batch_size": 0}, r"batch_size must be an integer >= 1"),
        ({"batch_size": True}, r"batch_size must be an integer, got True"),
        ({"activation": "softmax"}, r"activation must be one of 'logistic', 'tanh'"),
        ({"input_scaling": "robust"}, r"input_scaling must be one of 'zscore', 'minmax', 'none'"),
        ({"loss": "median"}, r"loss must be one of 'mean', 'sum', got 'median'"),
    ],
)
def test_training_parameters_are_validated_when_made(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        AANNTraining(**kwargs)


def test_training_parameters_are_normalised_frozen_and_revalidated_on_replace():
    training = AANNTraining(hidden=np.int64(3), epochs=4.0, learning_rate=1, momentum=0)
    assert training.hidden == 3 and type(training.hidden) is int
    assert training.epochs == 4 and type(training.epochs) is int
    assert training.learning_rate == 1.0 and type(training.learning_rate) is float
    assert training.momentum == 0.0 and type(training.momentum) is float
    assert training.as_dict() == {
        "hidden": 3,
        "epochs": 4,
        "learning_rate": 1.0,
        "momentum": 0.0,
        "init_range": 0.1,
        "batch_size": 32,
        "activation": "logistic",
        "input_scaling": "minmax",
        "loss": "mean",
    }
    # the paper's settings are the defaults (section 6), and equal sets are equal
    assert AANNTraining() == AANNTraining(
        None, 300, 0.25, 0.85, 0.1, 32, "logistic", "minmax", "mean"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        training.epochs = 5  # type: ignore[misc]
    assert dataclasses.replace(training, epochs=7).epochs == 7
    with pytest.raises(ParameterError, match="epochs must be an integer >= 1"):
        dataclasses.replace(training, epochs=0)


def test_train_aann_takes_only_a_training_object_and_a_callable_progress():
    with pytest.raises(ParameterError, match="training must be an AANNTraining"):
        train_aann(_records(), {"epochs": 1})
    with pytest.raises(ParameterError, match="progress must be callable"):
        train_aann(_records(), AANNTraining(epochs=1), progress=3)
    with pytest.raises(TypeError):  # the old keyword list is gone
        train_aann(_records(), epochs=1)  # type: ignore[call-arg]


def test_bad_data():
    with pytest.raises(DataError):
        train_aann(np.ones((1, 3)))
    with pytest.raises(DataError):
        train_aann(np.array([[1.0, np.inf], [0.0, 1.0]]))
    net = train_aann(_records(), AANNTraining(epochs=1), rng=0)
    with pytest.raises(DataError, match="6 columns"):
        net.errors(np.ones((2, 5)))


def test_aann_validates_its_arrays():
    w1, w2 = np.zeros((3, 2)), np.zeros((2, 3))
    b1, b2 = np.zeros(2), np.zeros(3)
    ok = {
        "coefs": (w1, w2),
        "intercepts": (b1, b2),
        "activation": "logistic",
        "input_offset": np.zeros(3),
        "input_scale": np.ones(3),
    }
    net = AANN(**ok)
    with pytest.raises(ValueError):
        net.coefs[0][0, 0] = 1.0  # read-only
    for change in (
        {"coefs": (w1, np.zeros((3, 3)))},
        {"intercepts": (b1, np.zeros(2))},
        {"input_scale": np.zeros(3)},
        {"input_offset": np.full(3, np.nan)},
        {"coefs": (w1,)},
    ):
        with pytest.raises(DataError):
            AANN(**{**ok, **change})
    with pytest.raises(ParameterError):
        AANN(**{**ok, "activation": "exp"})
