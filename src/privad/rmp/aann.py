"""The auto-associative neural network (AANN, an autoencoder) of RMP, section 6.

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014), section 6: "a three-layer AANN with the same number of input and
output units ... The number of hidden units ... about half of the input units ... All
weights and biases ... initialised randomly in the range of [−0.1, 0.1]. The learning rate
and momentum are set to 0.25 and 0.85, respectively, and the number of training epochs
range from 300 to 1000." A record is an anomaly when its reconstruction error exceeds
θ = μ + 3σ of the training errors (section 4, with the follow-up's details in
``papers/NOTES.md``).

Training uses scikit-learn's :class:`~sklearn.neural_network.MLPRegressor` (stochastic
gradient descent with classic momentum); there is no hand-written backpropagation. The
fitted network is kept as plain arrays in the frozen :class:`AANN`, which is what a model
file stores.

Records are **rows** here (``Z_rows`` is m x w): the mining server transposes the paper's
w x m matrices before it calls :func:`train_aann`.

Reconstructions (the paper is silent; each is a named parameter with a default):

* ``input_scaling`` (default ``"minmax"``): the server maps each input column to [0, 1]
  with the minimum and maximum learned on the training records, trains on the scaled
  records and measures reconstruction errors there. The entries of Z = T_i Y are sums of
  n products of U(0, 1) numbers, of order n/4; on raw Z (``"none"``) SGD with learning
  rate 0.25 diverges for Gas (n = 128). ``"zscore"`` (mean 0, standard deviation 1 per
  column) diverges on Gas too and is less accurate on Abalone. This is server-side
  preprocessing of what the server already holds: it changes nothing about privacy.
* ``activation`` (default ``"logistic"``): the hidden units' activation (the output layer
  is linear, as in MLPRegressor). The paper does not say which it used; the sigmoid is the
  classic choice for back-propagation networks (its reference [20]); tanh was less
  accurate on Abalone and diverged on Gas.
* ``batch_size`` (default :data:`DEFAULT_BATCH_SIZE` = 128): records per SGD step (the
  gradient is the mean over the mini-batch). The paper's back-propagation is presumably
  online (one record per step); on Abalone that is 25 times slower and less accurate
  (RMP α = 0.01: AUC 0.94 against 0.997), so mini-batches it is.
* ``epochs`` (default :data:`DEFAULT_EPOCHS` = 300, the low end of the paper's 300-1000):
  the training records include the 5% anomalies, and longer training learns to
  reconstruct them too (on Abalone and Gas AUC falls from 500 and 1000 epochs on).
* The reconstruction error of a record is the sum over attributes of the squared
  difference (the squared Euclidean norm), in the scaled space.
* σ of the threshold is the population standard deviation (ddof = 0).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
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
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_EPOCHS",
    "INPUT_SCALINGS",
    "check_errors",
    "threshold",
    "train_aann",
]

ACTIVATIONS = ("logistic", "tanh", "relu", "identity")
"""Hidden-layer activations the AANN accepts (scikit-learn's names)."""

INPUT_SCALINGS = ("zscore", "minmax", "none")
"""Server-side input scalings (see the module documentation)."""

DEFAULT_BATCH_SIZE = 128
"""Records per SGD step (our reconstruction; measured in ``docs/rmp.md``)."""

DEFAULT_EPOCHS = 300
"""Training epochs (the paper: 300 to 1000; more overfits the 5% anomalies, ``docs/rmp.md``)."""

Progress = Callable[[int, int], Any]


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

    Attributes:
        coefs: the weight matrices, ``(n_in x hidden, hidden x n_in)`` (scikit-learn's
            ``coefs_`` layout: a row vector times the matrix).
        intercepts: the bias vectors, ``(hidden, n_in)``.
        activation: the hidden layer's activation, one of :data:`ACTIVATIONS`; the output
            layer is linear.
        input_offset, input_scale: the server-side input scaling, z = (x − offset) / scale,
            learned on the training records (offset 0 and scale 1 for ``"none"``).
        input_scaling: the name of that scaling, one of :data:`INPUT_SCALINGS`.
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
        for what, arr in (("weights", w1), ("weights", w2), ("biases", b1), ("biases", b2),
                          ("input_offset", offset), ("input_scale", scale)):
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

    Pooled over all training records of all participants (``papers/NOTES.md``); σ is the
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


def train_aann(
    Z_rows: Any,
    *,
    hidden: int | None = None,
    epochs: int = DEFAULT_EPOCHS,
    learning_rate: float = 0.25,
    momentum: float = 0.85,
    init_range: float = 0.1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    activation: str = "logistic",
    input_scaling: str = "minmax",
    rng: RandomnessLike = None,
    progress: Progress | None = None,
) -> AANN:
    """Train the AANN of section 6 on records ``Z_rows`` (m x n_in, records as rows).

    Args:
        Z_rows: the training records, finite, at least 2 rows.
        hidden: hidden units; default :func:`default_hidden` (about n_in / 2).
        epochs: passes over the data (the paper: 300 to 1000).
        learning_rate, momentum: SGD with classic (not Nesterov) momentum; 0.25 and 0.85
            in the paper.
        init_range: weights *and* biases start U(−init_range, init_range) (0.1 in the
            paper), drawn from ``rng`` through :mod:`privad.noise`.
        batch_size: records per SGD step (reconstruction, see the module documentation).
        activation: hidden activation, one of :data:`ACTIVATIONS`.
        input_scaling: one of :data:`INPUT_SCALINGS` (reconstruction, see above).
        rng: a :class:`privad.noise.Randomness`, a seed, or ``None``. The initial weights
            come from it, and so do the seeds of scikit-learn's shuffling (one
            :meth:`~privad.noise.Randomness.derive_seed` per epoch).
        progress: called as ``progress(epoch, epochs)`` after each epoch (1-based).

    How the initialisation is imposed: MLPRegressor has no hook for custom initial weights
    (it draws Glorot-uniform ones itself). We call ``partial_fit`` once on a single record
    so that it allocates its state, overwrite ``coefs_`` and ``intercepts_`` in place with
    our U(−init_range, init_range) draws, and discard its optimizer, so that training
    starts from our weights with zero momentum. Each epoch is then one ``partial_fit``
    call (one shuffled pass with a persistent momentum optimizer), with scikit-learn's
    shuffling seeded by ``derive_seed()`` of ``rng``. No L2 penalty is used (the paper
    mentions none).
    """
    Z = check_array(Z_rows, "Z_rows", min_rows=2)
    n_in = Z.shape[1]
    hidden = default_hidden(n_in) if hidden is None else check_int(hidden, "hidden", minimum=1)
    epochs = check_int(epochs, "epochs", minimum=1)
    learning_rate = check_positive(learning_rate, "learning_rate")
    momentum = check_nonnegative(momentum, "momentum")
    if not momentum < 1.0:
        raise ParameterError(f"momentum must satisfy 0 <= momentum < 1, got {momentum!r}")
    init_range = check_positive(init_range, "init_range")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    activation = check_choice(activation, "activation", ACTIVATIONS)
    input_scaling = check_choice(input_scaling, "input_scaling", INPUT_SCALINGS)
    if progress is not None and not callable(progress):
        raise ParameterError(
            f"progress must be callable(epoch, n_epochs) or None, got {progress!r}"
        )
    randomness = as_randomness(rng)

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPRegressor
    from threadpoolctl import threadpool_limits

    offset, scale = _scaling(Z, input_scaling)
    S = (Z - offset) / scale
    net = MLPRegressor(
        hidden_layer_sizes=(hidden,),
        activation=activation,
        solver="sgd",
        alpha=0.0,
        batch_size=1,  # for the priming call below; set to batch_size after it
        learning_rate="constant",
        learning_rate_init=learning_rate,
        momentum=momentum,
        nesterovs_momentum=False,
        shuffle=True,
        max_iter=1,
        tol=0.0,
        n_iter_no_change=max(epochs, 1),
        random_state=randomness.derive_seed(),
    )
    # One BLAS thread: the matrices are small, and a threaded BLAS on a busy machine is
    # more than ten times slower (measured: 6.5 s instead of 0.5 s for 100 epochs on Gas).
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        net.partial_fit(S[:1], S[:1])  # allocates the state; its one step is overwritten
        for W in (*net.coefs_, *net.intercepts_):
            W[...] = randomness.uniform(-init_range, init_range, size=W.shape)
        if hasattr(net, "_optimizer"):  # scikit-learn internals (checked with 1.9.1)
            del net._optimizer  # fresh optimizer: zero momentum, our initial weights
        net.batch_size = min(batch_size, S.shape[0])
        for epoch in range(1, epochs + 1):
            net.random_state = randomness.derive_seed()
            try:
                with np.errstate(over="ignore", invalid="ignore"):
                    net.partial_fit(S, S)
                finite = all(np.isfinite(W).all() for W in (*net.coefs_, *net.intercepts_))
            except ValueError:  # scikit-learn: "Solver produced non-finite parameter weights"
                finite = False
            if not finite:
                raise DataError(
                    f"AANN training diverged at epoch {epoch} (weights became NaN or "
                    f"infinite); use a smaller learning_rate, a larger batch_size or "
                    f"input_scaling='minmax'"
                )
            if progress is not None:
                progress(epoch, epochs)
    return AANN(
        coefs=tuple(net.coefs_),
        intercepts=tuple(net.intercepts_),
        activation=activation,
        input_offset=offset,
        input_scale=scale,
        input_scaling=input_scaling,
    )

