"""The auto-associative neural network (AANN, an autoencoder) of RMP, section 6.

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014), section 6: "a three-layer AANN with the same number of input and
output units ... The number of hidden units ... about half of the input units ... All
weights and biases ... initialised randomly in the range of [−0.1, 0.1]. The learning rate
and momentum are set to 0.25 and 0.85, respectively, and the number of training epochs
range from 300 to 1000." A record is an anomaly when its reconstruction error exceeds
θ = μ + 3σ of the training errors (section 4, with the follow-up's details in
``docs/papers.md``).

Training uses scikit-learn's :class:`~sklearn.neural_network.MLPRegressor` (stochastic
gradient descent with classic momentum); there is no hand-written backpropagation. The
fitted network is kept as plain arrays in the frozen :class:`AANN`, which is what a model
file stores.

Records are **rows** here (``Z_rows`` is m x w): the mining server transposes the paper's
w x m matrices before it calls :func:`train_aann`.

Reconstructions (the paper is silent; each is a field of :class:`AANNTraining`, the one
named set of training parameters, with a default):

* ``loss`` (default :data:`DEFAULT_LOSS` = ``"mean"``): the training loss of a record is
  its squared reconstruction error **averaged over the w outputs** (MATLAB's ``mse``, and
  the ``loss_`` scikit-learn reports). scikit-learn's gradient is that of the error
  *summed* over the outputs, w times larger (scikit-learn issue #8349), so ``"mean"`` is
  the same SGD with the learning rate divided by w. ``"sum"`` is scikit-learn's gradient
  as it is, the former default (``loss="sum", batch_size=128`` trains exactly as before).
  Why it matters: with logistic hidden units near 0.5 the curvature of the summed loss
  along the output layer is about 1 + h/4 (h hidden units), and SGD with classic momentum
  μ is stable only while learning_rate · curvature < 2(1 + μ), i.e. h < 55 at the paper's
  0.25 and 0.85. With h ≈ w/2 that fails from w ≈ 110 on (Gas, w = 127: 0.25 · 18.3 =
  4.6 > 3.7): the first steps overshoot, the error summed over 127 outputs is
  back-propagated into the hidden layer, and within one epoch every hidden unit saturates
  at 0 (a network that outputs the column means, AUC ≈ 0.5). The mean over the outputs
  divides the curvature by w, which keeps the product at 0.02-0.07 for every n, with the
  paper's learning rate, momentum, initialisation and hidden units.
* ``batch_size`` (default :data:`DEFAULT_BATCH_SIZE` = 32): records per SGD step (the
  gradient is the mean over the mini-batch). The paper's back-propagation is presumably
  online (one record per step), 25 times slower on Abalone and less accurate. With the
  mean loss each step is small: batches of 32 were about as accurate as 1000 epochs of
  128 and better than batches of 64 or 128; batches of 16 were better on Digits and Gas,
  worse on Abalone at α >= 0.4 and 1.5-1.8 times slower (``docs/rmp.md``).
* ``input_scaling`` (default ``"minmax"``): the server maps each input column to [0, 1]
  with the minimum and maximum learned on the training records, trains on the scaled
  records and measures reconstruction errors there. The entries of Z = T_i Y are sums of
  n products of U(0, 1) numbers, of order n/4; on raw Z (``"none"``) Gas (n = 128)
  diverged with the summed loss and reaches only AUC 0.54 with the mean loss.
  ``"zscore"`` (mean 0, standard deviation 1 per column) diverged on Gas with the summed
  loss; with the mean loss it trains (Gas 0.996) but is less accurate on Abalone (RMP
  α = 0.01 / 0.2: 0.985 / 0.974 against 0.992 / 0.995 with min-max; one seed). This is
  server-side preprocessing of what the server already holds: it changes nothing about
  privacy.
* ``activation`` (default ``"logistic"``): the hidden units' activation (the output layer
  is linear, as in MLPRegressor). The paper does not say which it used; the sigmoid is the
  classic choice for back-propagation networks (its reference [20]); tanh was less
  accurate on Abalone and diverged on Gas.
* ``epochs`` (default :data:`DEFAULT_EPOCHS` = 300, the low end of the paper's 300-1000):
  the training records include the 5% anomalies, and longer training can learn to
  reconstruct them too (measured with the former summed loss: AUC falls from 500 and
  1000 epochs on, ``docs/rmp.md``).
* A training run that diverges (non-finite weights, or a final mean training error more
  than :data:`DIVERGENCE_FACTOR` times that of the column means) raises
  :class:`~privad.errors.DataError` with advice, never a scikit-learn error.
* The reconstruction error of a record is the sum over attributes of the squared
  difference (the squared Euclidean norm), in the scaled space.
* σ of the threshold is the population standard deviation (ddof = 0).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike, as_randomness
from privad.validation import (
    check_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
)

__all__ = [
    "ACTIVATIONS",
    "AANN",
    "AANNTraining",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_EPOCHS",
    "DEFAULT_LOSS",
    "DIVERGENCE_FACTOR",
    "INPUT_SCALINGS",
    "LOSSES",
    "check_errors",
    "check_training",
    "threshold",
    "train_aann",
]

ACTIVATIONS = ("logistic", "tanh", "relu", "identity")
"""Hidden-layer activations the AANN accepts (scikit-learn's names)."""

INPUT_SCALINGS = ("zscore", "minmax", "none")
"""Server-side input scalings (see the module documentation)."""

LOSSES = ("mean", "sum")
"""How a record's training loss combines its outputs' squared errors (:func:`train_aann`)."""

DEFAULT_LOSS = "mean"
"""The squared error averaged over the outputs (our reconstruction; ``docs/rmp.md``)."""

DIVERGENCE_FACTOR = 100.0
"""A trained AANN whose mean training reconstruction error exceeds this many times that of
reconstructing every record by the column means (at least 1) has diverged
(:func:`train_aann` raises :class:`~privad.errors.DataError`), even if its weights are
still finite."""

DEFAULT_BATCH_SIZE = 32
"""Records per SGD step (our reconstruction; measured in ``docs/rmp.md``)."""

DEFAULT_EPOCHS = 300
"""Training epochs (the paper: 300 to 1000; more overfits the 5% anomalies, ``docs/rmp.md``)."""

Progress = Callable[[int, int], Any]


@dataclass(frozen=True)
class AANNTraining:
    """How the AANN of section 6 is trained: the one named set of its training parameters.

    Every entry point that trains the AANN takes one (:func:`train_aann`,
    :func:`privad.rmp.model.fit_model`, :class:`privad.rmp.roles.MiningServer`,
    :func:`privad.rmp.roles.run_scheme`, the mining server ``privad serve rmp``); the
    scikit-learn estimators keep flat parameters and build one in ``fit``. The values are
    validated when it is made (:class:`~privad.errors.ParameterError` naming the field and
    what is allowed); ``dataclasses.replace`` makes a changed copy, validated again.

    Parameters
    ----------
    hidden : int >= 1 or None, default None
        Hidden units; ``None`` gives :func:`default_hidden` of the inputs (about half of
        them, section 6).
    epochs : int >= 1, default :data:`DEFAULT_EPOCHS` (300)
        Passes over the data (the paper: 300 to 1000).
    learning_rate : float > 0, default 0.25
        SGD's step (section 6).
    momentum : float in [0, 1), default 0.85
        Classic (not Nesterov) momentum (section 6).
    init_range : float > 0, default 0.1
        Weights *and* biases start U(−init_range, init_range) (section 6).
    batch_size : int >= 1, default :data:`DEFAULT_BATCH_SIZE` (32)
        Records per SGD step (our reconstruction, see the module documentation); not the
        participants' submissions of 30 records.
    activation : str, default "logistic"
        The hidden activation, one of :data:`ACTIVATIONS` (our reconstruction).
    input_scaling : str, default "minmax"
        The server-side input scaling, one of :data:`INPUT_SCALINGS` (our reconstruction).
    loss : str, default :data:`DEFAULT_LOSS` ("mean")
        One of :data:`LOSSES`: ``"mean"`` averages a record's squared error over the
        outputs, ``"sum"`` sums it (scikit-learn's own gradient, the former default).

    Examples
    --------
    >>> from privad.rmp import AANNTraining
    >>> training = AANNTraining(hidden=2, epochs=5)
    >>> training.learning_rate, training.momentum, training.activation
    (0.25, 0.85, 'logistic')
    >>> AANNTraining(momentum=1.0)
    Traceback (most recent call last):
    ...
    privad.errors.ParameterError: momentum must satisfy 0 <= momentum < 1, got 1.0
    """

    hidden: int | None = None
    epochs: int = DEFAULT_EPOCHS
    learning_rate: float = 0.25
    momentum: float = 0.85
    init_range: float = 0.1
    batch_size: int = DEFAULT_BATCH_SIZE
    activation: str = "logistic"
    input_scaling: str = "minmax"
    loss: str = DEFAULT_LOSS

    def __post_init__(self) -> None:
        momentum = check_nonnegative(self.momentum, "momentum")
        if not momentum < 1.0:
            raise ParameterError(f"momentum must satisfy 0 <= momentum < 1, got {momentum!r}")
        checked = {
            "hidden": None if self.hidden is None else check_int(self.hidden, "hidden", minimum=1),
            "epochs": check_int(self.epochs, "epochs", minimum=1),
            "learning_rate": check_positive(self.learning_rate, "learning_rate"),
            "momentum": momentum,
            "init_range": check_positive(self.init_range, "init_range"),
            "batch_size": check_int(self.batch_size, "batch_size", minimum=1),
            "activation": check_choice(self.activation, "activation", ACTIVATIONS),
            "input_scaling": check_choice(self.input_scaling, "input_scaling", INPUT_SCALINGS),
            "loss": check_choice(self.loss, "loss", LOSSES),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def as_dict(self) -> dict[str, Any]:
        """The parameters as plain JSON values (what a model file and a job record keep)."""
        return asdict(self)


def _activate(name: str, a: np.ndarray) -> np.ndarray:
    if name == "logistic":
        # 1 / (1 + e^-a), written with tanh so that it never overflows.
        return 0.5 * (np.tanh(0.5 * a) + 1.0)
    if name == "tanh":
        return np.tanh(a)
    if name == "relu":
        return np.maximum(a, 0.0)
    return a


@dataclass(frozen=True, eq=False)
class AANN:
    """A trained three-layer autoencoder n_in -> hidden -> n_in, as plain arrays.

    Attributes
    ----------
    coefs
        the weight matrices, ``(n_in x hidden, hidden x n_in)`` (scikit-learn's
        ``coefs_`` layout: a row vector times the matrix).
    intercepts
        the bias vectors, ``(hidden, n_in)``.
    activation
        the hidden layer's activation, one of :data:`ACTIVATIONS`; the output
        layer is linear.
    input_offset, input_scale
        the server-side input scaling, z = (x − offset) / scale,
        learned on the training records (offset 0 and scale 1 for ``"none"``).
    input_scaling
        the name of that scaling, one of :data:`INPUT_SCALINGS`.
    """

    coefs: tuple[np.ndarray, ...]
    intercepts: tuple[np.ndarray, ...]
    activation: str
    input_offset: np.ndarray
    input_scale: np.ndarray
    input_scaling: str = "minmax"

    def __post_init__(self) -> None:
        check_choice(self.activation, "activation", ACTIVATIONS)
        check_choice(self.input_scaling, "input_scaling", INPUT_SCALINGS)
        coefs = tuple(np.array(c, dtype=np.float64) for c in self.coefs)
        intercepts = tuple(np.array(b, dtype=np.float64) for b in self.intercepts)
        offset = np.array(self.input_offset, dtype=np.float64)
        scale = np.array(self.input_scale, dtype=np.float64)
        if len(coefs) != 2 or len(intercepts) != 2:
            raise DataError(
                f"an AANN has exactly two weight matrices and two bias vectors (three "
                f"layers, section 6), got {len(coefs)} and {len(intercepts)}"
            )
        w1, w2 = coefs
        b1, b2 = intercepts
        if w1.ndim != 2 or w2.ndim != 2 or b1.ndim != 1 or b2.ndim != 1:
            raise DataError("AANN weights must be 2-D matrices and biases 1-D vectors")
        n_in, hidden = w1.shape
        expected = {
            "second weight matrix": (w2.shape, (hidden, n_in)),
            "first bias vector": (b1.shape, (hidden,)),
            "second bias vector": (b2.shape, (n_in,)),
            "input_offset": (offset.shape, (n_in,)),
            "input_scale": (scale.shape, (n_in,)),
        }
        if n_in < 1 or hidden < 1:
            raise DataError(f"the first weight matrix must be n_in x hidden >= 1, got {w1.shape}")
        for what, (got, want) in expected.items():
            if got != want:
                raise DataError(
                    f"AANN {what} has shape {got}; with a first weight matrix of shape "
                    f"{w1.shape} it must be {want}"
                )
        for what, arr in (
            ("weights", w1),
            ("weights", w2),
            ("biases", b1),
            ("biases", b2),
            ("input_offset", offset),
            ("input_scale", scale),
        ):
            if not np.isfinite(arr).all():
                raise DataError(f"AANN {what} contain NaN or infinite values")
        if not (scale > 0).all():
            raise DataError("AANN input_scale must be > 0 in every column")
        for arr in (*coefs, *intercepts, offset, scale):
            arr.setflags(write=False)
        object.__setattr__(self, "coefs", coefs)
        object.__setattr__(self, "intercepts", intercepts)
        object.__setattr__(self, "input_offset", offset)
        object.__setattr__(self, "input_scale", scale)

    @property
    def n_inputs(self) -> int:
        """The number of input (= output) units."""
        return int(self.coefs[0].shape[0])

    @property
    def hidden(self) -> int:
        """The number of hidden units."""
        return int(self.coefs[0].shape[1])

    def _check(self, Z_rows: Any) -> np.ndarray:
        Z = check_array(Z_rows, "Z_rows", min_rows=0)
        if Z.shape[1] != self.n_inputs:
            raise DataError(
                f"Z_rows must have {self.n_inputs} columns (the AANN's inputs; records are "
                f"rows), got shape {Z.shape}"
            )
        return Z

    def _scaled_reconstruction(self, S: np.ndarray) -> np.ndarray:
        hidden = _activate(self.activation, S @ self.coefs[0] + self.intercepts[0])
        return hidden @ self.coefs[1] + self.intercepts[1]

    def scale_inputs(self, Z_rows: Any) -> np.ndarray:
        """The records in the scaled space the network works in: (Z − offset) / scale."""
        Z = self._check(Z_rows)
        return (Z - self.input_offset) / self.input_scale

    def reconstruct(self, Z_rows: Any) -> np.ndarray:
        """The network's output for each record (rows), in the units of ``Z_rows``."""
        S = self.scale_inputs(Z_rows)
        return self._scaled_reconstruction(S) * self.input_scale + self.input_offset

    def errors(self, Z_rows: Any) -> np.ndarray:
        """Per-record squared reconstruction error ||s − AANN(s)||², s the scaled record.

        Shape (m,). This is the anomaly score of section 4: large means anomalous.
        """
        S = self.scale_inputs(Z_rows)
        return np.sum((S - self._scaled_reconstruction(S)) ** 2, axis=1)


def check_errors(errors: Any) -> np.ndarray:
    """Reconstruction errors: a finite, non-empty 1-D array."""
    return check_array(errors, "errors", ndim=1, min_rows=1)


def threshold(errors: Any) -> float:
    """θ = μ + 3σ of the training records' reconstruction errors (section 4).

    Pooled over all training records of all participants (``docs/papers.md``); σ is the
    population standard deviation (ddof = 0).
    """
    e = check_errors(errors)
    return float(e.mean() + 3.0 * e.std())


def _scaling(Z: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
    n = Z.shape[1]
    if method == "none":
        return np.zeros(n), np.ones(n)
    if method == "zscore":
        offset, scale = Z.mean(axis=0), Z.std(axis=0)
    else:  # minmax
        offset = Z.min(axis=0)
        scale = Z.max(axis=0) - offset
    scale = np.where(scale > 0, scale, 1.0)  # a constant column is only centred
    return offset, scale


def default_hidden(n_in: int) -> int:
    """About half of the input units, at least 1 (section 6): ``max(1, round(n_in / 2))``."""
    return max(1, int(round(n_in / 2)))


def check_training(training: Any) -> AANNTraining:
    """``training`` as an :class:`AANNTraining` (``None``: the defaults)."""
    if training is None:
        return AANNTraining()
    if not isinstance(training, AANNTraining):
        raise ParameterError(
            f"training must be an AANNTraining (privad.rmp.AANNTraining(epochs=..., ...)) or "
            f"None, got {type(training).__name__}"
        )
    return training


def train_aann(
    Z_rows: Any,
    training: AANNTraining | None = None,
    *,
    rng: RandomnessLike = None,
    progress: Progress | None = None,
) -> AANN:
    """Train the AANN of section 6 on records ``Z_rows`` (m x n_in, records as rows).

    Parameters
    ----------
    Z_rows : array of shape (m, n_in)
        The training records, finite, at least 2 rows.
    training : AANNTraining or None, default None
        How to train (hidden units, epochs, learning rate, momentum, initial range,
        mini-batch, activation, input scaling, loss); ``None`` is ``AANNTraining()``, the
        paper's settings and our reconstructions' defaults.
    rng : Randomness, seed or None
        The initial weights come from it, and so do the seeds of scikit-learn's shuffling
        (one :meth:`~privad.noise.Randomness.derive_seed` per epoch).
    progress : callable or None
        Called as ``progress(epoch, epochs)`` after each epoch (1-based).

    Returns
    -------
    AANN
        The trained network.

    Raises
    ------
    ParameterError
        ``training`` is not an :class:`AANNTraining`, or ``progress`` is not callable.
    DataError
        Bad records, or the training diverged (the message says what to change).

    Notes
    -----
    How the initialisation is imposed: MLPRegressor has no hook for custom initial weights
    (it draws Glorot-uniform ones itself). We call ``partial_fit`` once on a single record
    so that it allocates its state, overwrite ``coefs_`` and ``intercepts_`` in place with
    our U(−init_range, init_range) draws, and discard its optimizer, so that training
    starts from our weights with zero momentum. Each epoch is then one ``partial_fit``
    call (one shuffled pass with a persistent momentum optimizer), with scikit-learn's
    shuffling seeded by ``derive_seed()`` of ``rng``. No L2 penalty is used (the paper
    mentions none). With one input (w = 1) the network is fitted to a 1-D target, the same
    network without scikit-learn's column-vector warning.

    Examples
    --------
    >>> from privad.noise import Randomness
    >>> from privad.rmp import AANNTraining, train_aann
    >>> X = Randomness(0).uniform(0, 1, (60, 4))
    >>> net = train_aann(X, AANNTraining(hidden=2, epochs=5), rng=1)
    >>> net.n_inputs, net.errors(X).shape
    (4, (60,))
    """
    Z = check_array(Z_rows, "Z_rows", min_rows=2)
    n_in = Z.shape[1]
    p = check_training(training)
    epochs = p.epochs
    if progress is not None and not callable(progress):
        raise ParameterError(
            f"progress must be callable(epoch, n_epochs) or None, got {progress!r}"
        )
    randomness = as_randomness(rng)

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPRegressor
    from threadpoolctl import threadpool_limits

    with np.errstate(over="ignore", invalid="ignore"):
        offset, scale = _scaling(Z, p.input_scaling)
        S = (Z - offset) / scale
    if not (np.isfinite(S).all() and np.isfinite(offset).all() and np.isfinite(scale).all()):
        raise DataError(
            f"Z_rows are too large to scale with input_scaling={p.input_scaling!r} (the scaled "
            f"records overflow); rescale them before training"
        )
    # w = 1: a 1-D target, so that scikit-learn does not warn about a column-vector y on
    # every epoch; the network is the same (one output unit).
    target = S[:, 0] if n_in == 1 else S
    # loss="mean": scikit-learn's gradient is that of the squared error summed over the
    # outputs (its reported loss_ is the mean, scikit-learn issue #8349), so the mean over
    # the n_in outputs is the same SGD with the learning rate divided by n_in.
    step = p.learning_rate / n_in if p.loss == "mean" else p.learning_rate
    net = MLPRegressor(
        hidden_layer_sizes=(default_hidden(n_in) if p.hidden is None else p.hidden,),
        activation=p.activation,
        solver="sgd",
        alpha=0.0,
        batch_size=1,  # for the priming call below; set to batch_size after it
        learning_rate="constant",
        learning_rate_init=step,
        momentum=p.momentum,
        nesterovs_momentum=False,
        shuffle=True,
        max_iter=1,
        tol=0.0,
        n_iter_no_change=max(epochs, 1),
        random_state=randomness.derive_seed(),
    )

    def diverged(epoch: int, why: str) -> DataError:
        return DataError(
            f"AANN training diverged at epoch {epoch} of {epochs} ({why}); train with "
            f"loss='mean' (the default) and input_scaling='minmax' (the default), or a "
            f"smaller learning_rate (got {p.learning_rate:g}) or momentum (got {p.momentum:g})"
        )

    # One BLAS thread: the matrices are small, and a threaded BLAS on a busy machine is
    # more than ten times slower (measured: 6.5 s instead of 0.5 s for 100 epochs on Gas).
    def quiet() -> Any:  # overflow is checked for below
        return np.errstate(over="ignore", invalid="ignore")

    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:  # allocates the state; its one step is overwritten below
            with quiet():
                net.partial_fit(S[:1], target[:1])
        except ValueError:
            pass  # a non-finite priming step: the weights are replaced anyway
        for W in (*net.coefs_, *net.intercepts_):
            W[...] = randomness.uniform(-p.init_range, p.init_range, size=W.shape)
        if hasattr(net, "_optimizer"):  # scikit-learn internals (checked with 1.9.1)
            del net._optimizer  # fresh optimizer: zero momentum, our initial weights
        net.batch_size = min(p.batch_size, S.shape[0])
        for epoch in range(1, epochs + 1):
            net.random_state = randomness.derive_seed()
            try:
                with quiet():
                    net.partial_fit(S, target)
                finite = all(np.isfinite(W).all() for W in (*net.coefs_, *net.intercepts_))
            except ValueError:  # scikit-learn: "Solver produced non-finite parameter weights"
                finite = False
            if not finite:
                raise diverged(epoch, "the weights became NaN or infinite")
            if progress is not None:
                progress(epoch, epochs)
    aann = AANN(
        coefs=tuple(net.coefs_),
        intercepts=tuple(net.intercepts_),
        activation=p.activation,
        input_offset=offset,
        input_scale=scale,
        input_scaling=p.input_scaling,
    )
    with np.errstate(over="ignore", invalid="ignore"):
        mean_error = float(np.mean(aann.errors(Z)))
    # The error of reconstructing every record by the column means (at least 1, so that
    # constant columns do not make the test hair-trigger).
    baseline = max(float(S.var(axis=0).sum()), 1.0)
    if not np.isfinite(mean_error) or mean_error > DIVERGENCE_FACTOR * baseline:
        raise diverged(
            epochs,
            f"the mean training reconstruction error, {mean_error:.3g}, is more than "
            f"{DIVERGENCE_FACTOR:g} times {baseline:.3g}, that of the column means",
        )
    return aann
