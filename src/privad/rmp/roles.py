"""The three parties of RMP: participants, the mining server, end-users (section 3, Fig. 1).

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014).

* :class:`Participant` c_i draws its private matrix T_i = T + Δ_i (eq. 1) once, applies the
  double logistic (eq. 2) and T_i (eq. 3) to its records and sends only Z_i = T_i Y_i.
* :class:`MiningServer` S collects the Z_i it receives and trains the model M
  (:func:`privad.rmp.model.fit_model`): an AANN with threshold θ = μ + 3σ (section 4), or,
  with ``detector=``, any detector of the protocol of :mod:`privad.rmp.detectors`.
* :class:`EndUser` scores its own records with M and the public T (section 4).
* :func:`run_scheme` plays all parties in one process (what :class:`RMPDetector
  <privad.rmp.estimator.RMPDetector>` and the experiments use).

Orientation: these classes take records as **rows** (m x n, like scikit-learn) and
produce what travels over the wire, Z, in the paper's orientation (w x m, records as
columns).

Key files: a participant keeps its T_i across sessions in a local key file
(:meth:`Participant.to_key_bytes`, :meth:`Participant.save_key`): an uncompressed NumPy
``.npz`` archive with ``T_i``, ``T`` (the public matrix it belongs to) and one JSON string
(``{"kind": "rmp-participant-key", "format_version": 1, "alpha": α, "beta": β}``), never
a pickle. The file is the participant's secret: whoever holds it and the participant's Z_i
can invert eq. 3 far better than the attacks of section 5 assume.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike, as_randomness
from privad.rmp.aann import AANNTraining, Progress, check_training
from privad.rmp.detectors import DetectorModel, check_detector, fit_detector_model
from privad.rmp.model import (
    PublicShape,
    RMPModel,
    fit_model,
    json_metadata,
    npz_bytes,
    read_file,
    read_npz,
    write_file,
)
from privad.rmp.perturbation import (
    beta_star,
    check_alpha,
    check_public_matrix,
    double_logistic,
    participant_matrix,
    perturb,
    public_matrix,
)
from privad.validation import check_array, check_int, check_positive

__all__ = [
    "KEY_FORMAT_VERSION",
    "PARTICIPANT_BATCH",
    "EndUser",
    "MiningServer",
    "Participant",
    "run_scheme",
]

PARTICIPANT_BATCH = 30
"""Records per submitted batch: "in batches of 30 records" (section 6)."""

KEY_FORMAT_VERSION = 1
"""The participant key file format this version writes and reads."""

_KEY_KIND = "rmp-participant-key"
_MAX_KEY_BYTES = 1 << 30


def _check_rows(X_rows: Any, n: int, name: str = "X_rows") -> np.ndarray:
    X = check_array(X_rows, name, min_rows=1)
    if X.shape[1] != n:
        raise DataError(
            f"{name} must have n = {n} columns (attributes; records are rows), got shape {X.shape}"
        )
    return X


class Participant(PublicShape):
    """A participant c_i of RMP (section 3.2): holds a private T_i, sends Z_i = T_i Y_i.

    Parameters
    ----------
    T
        the public matrix, w x n (w < n).
    alpha
        α of eq. (1), public, 0 < α < 1.
    rng
        a :class:`privad.noise.Randomness`, a seed, or ``None`` (OS entropy); Δ_i is
        drawn from it once, at construction.
    beta
        β of eq. (2); default β* (:func:`~privad.rmp.perturbation.beta_star`). It
        must be the β the server's model records.

    T_i is never shown by ``repr`` and is not an attribute; only :meth:`private_matrix` and
    the key-file methods give it out, deliberately.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.rmp import Participant, public_matrix
    >>> c = Participant(public_matrix(2, 3, rng=1), alpha=0.3, rng=2)
    >>> c, c.perturb(np.full((5, 3), 0.5)).shape  # 5 records -> Z_i, w x m
    (Participant(w=2, n=3, alpha=0.3), (2, 5))
    """

    __slots__ = ("_T", "_T_i", "_alpha", "_beta")

    def __init__(
        self, T: Any, alpha: float, rng: RandomnessLike = None, *, beta: float | None = None
    ) -> None:
        self._T = np.array(check_public_matrix(T), dtype=np.float64)
        self._T.setflags(write=False)
        self._alpha = check_alpha(alpha)
        self._beta = beta_star() if beta is None else check_positive(beta, "beta")
        self._T_i = participant_matrix(self._T, self._alpha, rng)
        self._T_i.setflags(write=False)

    def __repr__(self) -> str:
        w, n = self._T.shape
        return f"Participant(w={w}, n={n}, alpha={self._alpha:g})"

    # -- public facts ------------------------------------------------------------------

    @property
    def T(self) -> np.ndarray:
        """The public matrix T (w x n)."""
        return self._T

    @property
    def alpha(self) -> float:
        """α of eq. (1)."""
        return self._alpha

    @property
    def beta(self) -> float:
        """β of eq. (2)."""
        return self._beta

    def private_matrix(self) -> np.ndarray:
        """T_i, the participant's **secret** matrix (eq. 1). A read-only view.

        Exists for the participant's own use (and for the attack experiments of section 5,
        which assume a server that colludes with some participants). Never send it.
        """
        return self._T_i

    # -- eq. 2 and 3 -------------------------------------------------------------------

    def perturb(self, X_rows: Any) -> np.ndarray:
        """Z_i = T_i · double_logistic(X^T): eq. (2), then eq. (3).

        ``X_rows`` is m x n (records as rows, normalised to [0, 1] or [−1, 1] as in the
        paper); the result is **w x m** (the paper's orientation), ready to send.
        """
        X = _check_rows(X_rows, self.n_features)
        return perturb(self._T_i, double_logistic(X.T, self._beta))

    def batches(self, X_rows: Any, batch_size: int = PARTICIPANT_BATCH) -> Iterator[np.ndarray]:
        """The records perturbed in submissions of at most ``batch_size`` records each
        (30 in section 6): w x ≤batch_size arrays, in the order of the rows."""
        X = _check_rows(X_rows, self.n_features)
        size = check_int(batch_size, "batch_size", minimum=1)
        for start in range(0, X.shape[0], size):
            yield self.perturb(X[start : start + size])

    # -- the key file ------------------------------------------------------------------

    def to_key_bytes(self) -> bytes:
        """The participant's key file (NPZ: ``T_i``, ``T``, JSON ``metadata``; no pickle).

        **Secret**: store it where only the participant can read it.
        """
        metadata = {
            "kind": _KEY_KIND,
            "format_version": KEY_FORMAT_VERSION,
            "alpha": self._alpha,
            "beta": self._beta,
        }
        return npz_bytes(json.dumps(metadata), T_i=self._T_i, T=self._T)

    @classmethod
    def from_key_bytes(cls, data: bytes, T: Any = None) -> Participant:
        """Rebuild a participant from :meth:`to_key_bytes`.

        ``T``, if given, must be the public matrix the key was made for (else
        :class:`~privad.errors.DataError`: a participant must not reuse a key with a new
        public matrix). Any malformed, truncated or hostile file raises ``DataError``; no
        pickle is ever loaded.
        """
        arrays, metadata = _read_key(data)
        T_key, T_i = arrays["T"], arrays["T_i"]
        try:
            T_key = check_public_matrix(T_key)
            alpha = check_alpha(metadata.get("alpha"))
            beta = check_positive(metadata.get("beta"), "beta")
        except (DataError, ParameterError) as exc:
            raise DataError(f"participant key file is invalid: {exc}") from None
        if T_i.shape != T_key.shape:
            raise DataError(
                f"participant key file is invalid: T_i has shape {T_i.shape}, T has shape "
                f"{T_key.shape}; they must be equal"
            )
        if not np.all(np.abs(T_i - T_key) <= alpha):
            raise DataError(
                "participant key file is invalid: T_i differs from T by more than alpha "
                "somewhere (eq. 1 requires |T_i - T| < alpha element-wise)"
            )
        if T is not None:
            T_given = check_public_matrix(T)
            if T_given.shape != T_key.shape or not np.array_equal(T_given, T_key):
                raise DataError(
                    "this participant key was made for a different public matrix T; make a "
                    "new key for the new T"
                )
        participant = object.__new__(cls)
        for name, value in (("_T", T_key), ("_T_i", T_i)):
            arr = np.array(value, dtype=np.float64)
            arr.setflags(write=False)
            object.__setattr__(participant, name, arr)
        participant._alpha = alpha
        participant._beta = beta
        return participant

    def save_key(self, path: str | os.PathLike[str]) -> Path:
        """Write the key file atomically (:func:`privad.io.atomic_write`), readable by its
        owner only (mode 0600 where the OS supports it)."""
        return write_file(path, self.to_key_bytes())

    @classmethod
    def load_key(cls, path: str | os.PathLike[str], T: Any = None) -> Participant:
        """Read a key file (:meth:`from_key_bytes`); ``DatasetNotFoundError`` if missing."""
        return read_file(path, "key file", lambda data: cls.from_key_bytes(data, T))


def _read_key(data: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DataError(f"a key must be given as bytes, got {type(data).__name__}")
    keys = {"T", "T_i", "metadata"}

    def check_members(infos: list[zipfile.ZipInfo]) -> None:
        names = [info.filename for info in infos]
        if sorted(names) != sorted(f"{k}.npy" for k in keys):
            raise DataError(
                f"not a participant key file: members {sorted(names)}, expected "
                f"{sorted(f'{k}.npy' for k in keys)}"
            )
        if sum(info.file_size for info in infos) > _MAX_KEY_BYTES:
            raise DataError("participant key file too large")

    arrays = read_npz(bytes(data), "participant key file", keys, check_members)
    metadata = json_metadata(arrays.pop("metadata"), "participant key file")
    if not isinstance(metadata, dict) or metadata.get("kind") != _KEY_KIND:
        raise DataError("not a participant key file (metadata 'kind' is not rmp-participant-key)")
    if metadata.get("format_version") != KEY_FORMAT_VERSION:
        raise DataError(
            f"participant key format_version {metadata.get('format_version')!r} is not "
            f"supported; this privad reads {KEY_FORMAT_VERSION}"
        )
    for k, arr in arrays.items():
        if arr.dtype != np.float64 or arr.ndim != 2:
            raise DataError(f"participant key file: {k!r} must be a float64 matrix")
        if not np.isfinite(arr).all():
            raise DataError(f"participant key file: {k!r} contains NaN or infinite values")
    return arrays, metadata


class MiningServer:
    """The mining server S (section 3): collects the Z_i and trains the model M.

    Parameters
    ----------
    T
        the public matrix, w x n.
    alpha
        the public α (recorded in the model's metadata; optional).
    training
        how the AANN is trained (:class:`privad.rmp.aann.AANNTraining`; ``None``
        for its defaults; its ``batch_size`` is the SGD mini-batch, not the
        participants' submissions).
    beta
        β the participants use (default β*).
    rng
        randomness for the training (initial weights, shuffling; a detector's
        ``random_state``).
    detector
        ``None`` (default) trains the paper's AANN and :meth:`train` returns an
        :class:`RMPModel`; otherwise an instance following the protocol of
        :mod:`privad.rmp.detectors` (``fit``, ``decision_function`` higher = more
        anomalous): :meth:`train` fits a clone of it on the rows of Z_all and returns a
        :class:`~privad.rmp.detectors.DetectorModel`, which cannot be saved.
        ``training`` is then unused.

    Examples
    --------
    >>> from privad.noise import Randomness
    >>> from privad.rmp import AANNTraining, MiningServer, Participant, public_matrix
    >>> T = public_matrix(2, 3, rng=1)
    >>> server = MiningServer(T, 0.3, training=AANNTraining(epochs=5), rng=2)
    >>> X = Randomness(3).uniform(0, 1, (30, 3))
    >>> server.receive(Participant(T, 0.3, rng=4).perturb(X))  # records held
        30
    >>> server.train().n_features
    3
    """

    def __init__(
        self,
        T: Any,
        alpha: float | None = None,
        *,
        training: AANNTraining | None = None,
        rng: RandomnessLike = None,
        beta: float | None = None,
        detector: Any = None,
    ) -> None:
        self.T = np.array(check_public_matrix(T), dtype=np.float64)
        self.T.setflags(write=False)
        self.alpha = None if alpha is None else check_alpha(alpha)
        self.training = check_training(training)
        self.beta = beta_star() if beta is None else check_positive(beta, "beta")
        self.detector = None if detector is None else check_detector(detector)
        self._rng = as_randomness(rng)
        self._received: list[np.ndarray] = []

    @property
    def w(self) -> int:
        """w, the dimension of a perturbed record (rows of a submission)."""
        return int(self.T.shape[0])

    @property
    def n_records(self) -> int:
        """How many records (columns of Z) the server has received."""
        return sum(int(Z.shape[1]) for Z in self._received)

    @property
    def n_submissions(self) -> int:
        """How many submissions the server has received."""
        return len(self._received)

    def receive(self, Z: Any) -> int:
        """Store one submission Z_i (w x m_i, records as columns; eq. 3).

        Raises :class:`~privad.errors.DataError` (and stores nothing) unless Z is a finite
        w x m_i array with m_i >= 1. Returns the number of records received so far.
        """
        arr = check_array(Z, "Z", min_rows=1)
        if arr.shape[0] != self.w:
            raise DataError(
                f"a submission Z must be w x m with w = {self.w} rows (records are columns, "
                f"eq. 3), got shape {arr.shape}"
            )
        arr = np.array(arr, dtype=np.float64)
        arr.setflags(write=False)
        self._received.append(arr)
        return self.n_records

    def train(self, progress: Progress | None = None) -> RMPModel | DetectorModel:
        """Train M on everything received (:func:`privad.rmp.model.fit_model`, or
        :func:`privad.rmp.detectors.fit_detector_model` with a ``detector``; ``progress``
        is then not called)."""
        if self.n_records < 2:
            raise DataError(f"the server needs at least 2 records to train, has {self.n_records}")
        Z_all = np.hstack(self._received)
        if self.detector is not None:
            return fit_detector_model(
                self.T, Z_all, self.detector, alpha=self.alpha, beta=self.beta, rng=self._rng
            )
        return fit_model(
            self.T,
            Z_all,
            alpha=self.alpha,
            beta=self.beta,
            training=self.training,
            rng=self._rng,
            progress=progress,
        )


class EndUser:
    """An end-user U (section 4): scores its own records with M and the public T.

    ``model`` is an :class:`RMPModel` (the AANN; also from a file) or an in-process
    :class:`~privad.rmp.detectors.DetectorModel`.

    Examples
    --------
    >>> from privad.noise import Randomness
    >>> from privad.rmp import AANNTraining, EndUser, run_scheme
    >>> X = Randomness(0).uniform(0, 1, (60, 4))
    >>> user = EndUser(run_scheme(X, 0.3, training=AANNTraining(epochs=5), rng=1))
    >>> user.predict(X[:3]).shape, user.decision_function(X[:3]).shape
    ((3,), (3,))
    """

    def __init__(self, model: RMPModel | DetectorModel) -> None:
        if not isinstance(model, RMPModel | DetectorModel):
            raise ParameterError(
                f"model must be an RMPModel or a DetectorModel, got {type(model).__name__}"
            )
        self.model = model

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> EndUser:
        """An end-user of a downloaded model file (:meth:`RMPModel.load`)."""
        return cls(RMPModel.load(path))

    def decision_function(self, X_rows: Any) -> np.ndarray:
        """Reconstruction error (or the detector's score) of each record (m,); larger is
        more anomalous."""
        return self.model.decision_function(X_rows)

    def predict(self, X_rows: Any) -> np.ndarray:
        """0/1 per record, 1 = anomaly (score > θ)."""
        return self.model.predict(X_rows)


def run_scheme(
    X_rows: Any,
    alpha: float,
    *,
    T: Any = None,
    r: int = 1,
    batch_size: int = PARTICIPANT_BATCH,
    shuffle: bool = True,
    training: AANNTraining | None = None,
    beta: float | None = None,
    rng: RandomnessLike = None,
    progress: Progress | None = None,
    detector: Any = None,
) -> RMPModel | DetectorModel:
    """RMP in one process: participants, server, model (sections 3-4 and 6).

    Parameters
    ----------
    X_rows
        all participants' records, m x n (rows).
    alpha
        α of eq. (1).
    T
        the public matrix; default a fresh one (w = n − r) drawn from ``rng``.
    r
        n − w when T is drawn (r = 1 in Table 1); ignored if ``T`` is given.
    batch_size
        records per participant (30 in section 6): each batch is perturbed
        by a separate :class:`Participant` with its own T_i.
    shuffle
        randomly permute the records before cutting them into batches (our
        reading of "a random subset of the dataset is partitioned horizontally among
        the participants", section 6). ``False`` keeps the given order.
    training
        how the server trains the AANN (:class:`privad.rmp.aann.AANNTraining`;
        ``None`` for its defaults; its ``batch_size`` is the SGD mini-batch).
    beta
        β of eq. (2) (default β*).
    rng
        a :class:`privad.noise.Randomness`, a seed, or ``None``. T, the permutation,
        every Δ_i and the training all draw from it, in that order.
    progress
        called as ``progress(epoch, epochs)`` during training (AANN only).
    detector
        ``None`` for the AANN, or a detector the server trains instead
        (:class:`MiningServer`, :mod:`privad.rmp.detectors`); the participants and
        the perturbation are unchanged.

    Examples
    --------
    >>> from privad.noise import Randomness
    >>> from privad.rmp import AANNTraining, run_scheme
    >>> X = Randomness(0).uniform(0, 1, (60, 4))
    >>> model = run_scheme(X, alpha=0.3, training=AANNTraining(epochs=5), rng=1)
    >>> model.n_features, model.T.shape  # w = n - r = 3
    (4, (3, 4))
    """
    randomness = as_randomness(rng)
    X = check_array(X_rows, "X_rows", min_rows=2)
    n = X.shape[1]
    if T is None:
        if n < 2:
            raise DataError(f"RMP needs n >= 2 attributes (w = n - r >= 1), got n = {n}")
        r = check_int(r, "r", minimum=1, maximum=n - 1)
        T = public_matrix(n - r, n, randomness)
    T = check_public_matrix(T)
    if T.shape[1] != n:
        raise DataError(f"T must be w x n with n = {n} (columns of X_rows), got {T.shape}")
    size = check_int(batch_size, "batch_size", minimum=1)
    server = MiningServer(T, alpha, training=training, rng=randomness, beta=beta, detector=detector)
    if shuffle:
        X = X[randomness.permutation(X.shape[0])]
    for start in range(0, X.shape[0], size):
        participant = Participant(T, alpha, randomness, beta=beta)
        server.receive(participant.perturb(X[start : start + size]))
    return server.train(progress=progress)
