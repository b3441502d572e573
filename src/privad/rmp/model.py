"""The RMP model M: what the mining server trains and end-users download (sections 3-4).

Erfani et al., "Privacy-preserving collaborative anomaly detection for participatory
sensing" (PAKDD 2014). The server trains an AANN on the perturbed records it received
(:func:`fit_model`); an end-user applies the double logistic (eq. 2) and the *public*
matrix T to their own records and scores them with the AANN (section 4): a record is an
anomaly when its reconstruction error exceeds θ = μ + 3σ.

Orientation: :func:`fit_model` takes the server's ``Z_all`` in the paper's orientation
(w x m_total, records as columns, as received from the participants);
:class:`RMPModel`'s scoring methods take records as rows (m x n), like scikit-learn.

Model file format (``format_version`` 1): an uncompressed NumPy ``.npz`` archive
(:func:`numpy.savez`) of float64 arrays and one JSON string, never a pickle:

==================  ===========  ==================================================
key                 shape        content
==================  ===========  ==================================================
``T``               (w, n)       the public matrix
``beta``            ()           β of the double logistic (eq. 2)
``threshold``       ()           θ = μ + 3σ
``coef_0``          (w, h)       AANN input -> hidden weights
``coef_1``          (h, w)       AANN hidden -> output weights
``intercept_0``     (h,)         hidden biases
``intercept_1``     (w,)         output biases
``input_offset``    (w,)         server-side input scaling: s = (z − offset) / scale
``input_scale``     (w,)         (all > 0)
``metadata``        ()           a unicode string: JSON object, see below
==================  ===========  ==================================================

The metadata object holds ``format_version`` (1), ``privad_version``,
``n_training_records``, ``epochs``, ``hidden``, ``alpha`` (the public α, or null),
``created`` (UTC, ISO 8601), and ``aann``: ``{"activation", "input_scaling", "loss",
"learning_rate", "momentum", "batch_size", "init_range"}``; ``activation`` and
``input_scaling`` are required to rebuild the network (``loss`` is a fact about the
training only; files written before it existed lack it). Loading uses
``numpy.load(..., allow_pickle=False)`` and checks every key, shape, dtype and value: a
truncated, garbage or hostile file raises :class:`~privad.errors.DataError` and never
executes code.
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from privad.errors import DataError, DatasetNotFoundError, ParameterError
from privad.io import atomic_write
from privad.noise import RandomnessLike
from privad.rmp.aann import (
    AANN,
    ACTIVATIONS,
    INPUT_SCALINGS,
    AANNTraining,
    Progress,
    check_training,
    threshold,
    train_aann,
)
from privad.rmp.perturbation import (
    beta_star,
    check_alpha,
    check_public_matrix,
    double_logistic,
)
from privad.validation import check_array, check_positive

__all__ = [
    "FORMAT_VERSION",
    "MAX_MODEL_BYTES",
    "RMPModel",
    "check_training_matrix",
    "fit_model",
    "transform_records",
]

FORMAT_VERSION = 1
"""The model file format this version writes and reads."""

MAX_MODEL_BYTES = 1 << 30
"""Largest total uncompressed size of a model file's members that :meth:`RMPModel.from_bytes`
accepts (1 GiB; a guard against decompression bombs)."""

_ARRAY_KEYS = (
    "T",
    "beta",
    "threshold",
    "coef_0",
    "coef_1",
    "intercept_0",
    "intercept_1",
    "input_offset",
    "input_scale",
)
_KEYS = frozenset((*_ARRAY_KEYS, "metadata"))


def _privad_version() -> str:
    import privad

    return str(privad.__version__)


def transform_records(T: np.ndarray, beta: float, X_rows: Any) -> np.ndarray:
    """The end-user's path (section 4): rows of (T · double_logistic(X^T, β))^T.

    ``T`` is the (validated) public matrix, w x n; ``X_rows`` is m x n (records as rows);
    the result is m x w.
    """
    X = check_array(X_rows, "X_rows", min_rows=0)
    n = int(T.shape[1])
    if X.shape[1] != n:
        raise DataError(
            f"X_rows must have n = {n} columns (attributes; records are rows), got shape {X.shape}"
        )
    return (T @ double_logistic(X.T, beta)).T


def write_file(path: str | os.PathLike[str], payload: bytes) -> Path:
    """Write a model or key file atomically (mode 0600, :func:`privad.io.atomic_write`)."""
    target = Path(path)
    with atomic_write(target, "wb") as handle:
        handle.write(payload)
    return target


def read_file(path: str | os.PathLike[str], what: str, parse: Callable[[bytes], Any]) -> Any:
    """``parse`` of the bytes of a model or key file: :class:`DatasetNotFoundError` if
    missing, :class:`DataError` naming the path if unreadable or invalid."""
    p = Path(path)
    if not p.is_file():
        raise DatasetNotFoundError(f"{what} {str(p)!r} does not exist or is not a file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {what} {str(p)!r}: {exc}") from None
    try:
        return parse(data)
    except DataError as exc:
        raise DataError(f"{str(p)!r}: {exc}") from None


def npz_bytes(metadata: str, **arrays: Any) -> bytes:
    """An uncompressed NPZ archive (:func:`numpy.savez`) of ``arrays`` and the JSON text
    ``metadata`` as one unicode string: the layout of the model and key files (no pickle).

    Examples
    --------
    >>> import numpy as np
    >>> data = npz_bytes('{"format_version": 1}', T=np.eye(2))
    >>> arrays = read_npz(data, "demo file", {"T", "metadata"}, lambda infos: None)
    >>> arrays["T"].tolist(), json_metadata(arrays["metadata"], "demo file")
    ([[1.0, 0.0], [0.0, 1.0]], {'format_version': 1})
    """
    buffer = io.BytesIO()
    np.savez(buffer, **arrays, metadata=np.str_(metadata))
    return buffer.getvalue()


def read_npz(
    data: bytes,
    what: str,
    keys: Iterable[str],
    check_members: Callable[[list[zipfile.ZipInfo]], None],
) -> dict[str, np.ndarray]:
    """The members ``keys`` of the NPZ archive ``data`` (a model or key file), loaded with
    ``allow_pickle=False`` once ``check_members`` has accepted the archive's members.

    ``check_members`` raises :class:`~privad.errors.DataError` for unexpected names or a
    total size past the file's cap (a guard against decompression bombs). Anything that is
    not such an archive, and any object array (a pickle), raises ``DataError`` naming
    ``what``: ``"not a {what} (not an NPZ archive): ..."`` or
    ``"{what} is corrupt or unsafe: ..."``.

    Examples
    --------
    >>> read_npz(b"garbage", "model file", {"T"}, lambda infos: None)
    Traceback (most recent call last):
    ...
    privad.errors.DataError: not a model file (not an NPZ archive): File is not a zip file
    """
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise DataError(f"not a {what} (not an NPZ archive): {exc}") from None
    check_members(infos)
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {key: npz[key] for key in keys}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, RuntimeError) as exc:
        raise DataError(f"{what} is corrupt or unsafe: {exc}") from None


def json_metadata(arr: np.ndarray, what: str) -> Any:
    """The parsed JSON of a model or key file's ``metadata`` member (one unicode string);
    :class:`~privad.errors.DataError` naming ``what`` if it is not one valid JSON text.

    Examples
    --------
    >>> import numpy as np
    >>> json_metadata(np.str_('{"kind": "demo"}'), "key file")
    {'kind': 'demo'}
    """
    arr = np.asarray(arr)
    if arr.dtype.kind != "U" or arr.shape != ():
        raise DataError(f"{what}: 'metadata' must be one JSON string")
    try:
        return json.loads(str(arr[()]))
    except ValueError as exc:
        raise DataError(f"{what}: metadata is not valid JSON: {exc}") from None


class PublicShape:
    """n and w read off the public matrix ``T`` (w x n) of anything that holds it."""

    __slots__ = ()
    T: np.ndarray

    @property
    def n_features(self) -> int:
        """n, the number of attributes of a record."""
        return int(self.T.shape[1])

    @property
    def w(self) -> int:
        """w, the dimension of a perturbed record."""
        return int(self.T.shape[0])


@dataclass(frozen=True, eq=False)
class EndUserPath(PublicShape):
    """What an end-user does with a model M (section 4), for any model with the public
    ``T``, the double logistic's ``beta``, a ``threshold`` and a ``decision_function``."""

    T: np.ndarray
    beta: float

    def _check_public(self) -> np.ndarray:
        """Keep a read-only copy of the public T (w x n, w < n), a checked β (eq. 2) and a
        finite threshold θ; returns T."""
        T = np.array(check_public_matrix(self.T), dtype=np.float64)
        T.setflags(write=False)
        object.__setattr__(self, "T", T)
        object.__setattr__(self, "beta", check_positive(self.beta, "beta"))
        try:
            theta = float(self.threshold)
        except (TypeError, ValueError):
            raise DataError(f"threshold must be a real number, got {self.threshold!r}") from None
        if not math.isfinite(theta):
            raise DataError(f"threshold must be finite, got {theta!r}")
        object.__setattr__(self, "threshold", theta)
        return T

    def transform(self, X_rows: Any) -> np.ndarray:
        """Rows of (T · double_logistic(X^T))^T: eq. 2 then eq. 3 with the public T.

        ``X_rows`` is m x n (records as rows); the result is m x w.
        """
        return transform_records(self.T, self.beta, X_rows)

    def decision_function(self, X_rows: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def predict(self, X_rows: Any) -> np.ndarray:
        """0/1 labels (m,), 1 = anomaly: score > θ (section 4)."""
        return (self.decision_function(X_rows) > self.threshold).astype(np.int64)


@dataclass(frozen=True, eq=False)
class RMPModel(EndUserPath):
    """The anomaly detection model M of RMP (sections 3-4).

    Attributes
    ----------
    T
        the public matrix, w x n (w < n).
    beta
        β of the double logistic (eq. 2) the participants used (β* by default).
    aann
        the trained autoencoder on w inputs.
    threshold
        θ = μ + 3σ of the training reconstruction errors (section 4).
    metadata
        JSON-able facts about the training (see the module documentation).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.noise import Randomness
    >>> from privad.rmp import AANNTraining, RMPModel, run_scheme
    >>> X = Randomness(0).uniform(0, 1, (60, 4))
    >>> model = run_scheme(X, 0.3, training=AANNTraining(epochs=5), rng=1)
    >>> path = model.save("model.npz")
    >>> again = RMPModel.load("model.npz")
    >>> bool(np.array_equal(again.decision_function(X), model.decision_function(X)))
    True
    """

    aann: AANN
    threshold: float
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        T = self._check_public()
        if not isinstance(self.aann, AANN):
            raise ParameterError(f"aann must be an AANN, got {type(self.aann).__name__}")
        if self.aann.n_inputs != T.shape[0]:
            raise DataError(
                f"the AANN has {self.aann.n_inputs} inputs but T has w = {T.shape[0]} rows; "
                f"they must agree (the AANN reads Z = T Y, eq. 3)"
            )
        if not isinstance(self.metadata, dict):
            raise DataError(f"metadata must be a dict, got {type(self.metadata).__name__}")
        try:
            metadata = json.loads(json.dumps(self.metadata, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise DataError(f"metadata must be JSON-able: {exc}") from None
        object.__setattr__(self, "metadata", metadata)

    # -- the end-user's path (section 4) -------------------------------------------------

    def decision_function(self, X_rows: Any) -> np.ndarray:
        """The anomaly score of each record (m,): the AANN's reconstruction error of
        :meth:`transform` (section 4). Larger means more anomalous."""
        return self.aann.errors(self.transform(X_rows))

    # -- serialisation -------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The model file (NPZ + JSON metadata, never pickle; see the module docs)."""
        metadata = dict(self.metadata)
        metadata["format_version"] = FORMAT_VERSION
        aann_meta = dict(metadata.get("aann") or {})
        aann_meta["activation"] = self.aann.activation
        aann_meta["input_scaling"] = self.aann.input_scaling
        metadata["aann"] = aann_meta
        arrays = {
            "T": self.T,
            "beta": np.float64(self.beta),
            "threshold": np.float64(self.threshold),
            "coef_0": self.aann.coefs[0],
            "coef_1": self.aann.coefs[1],
            "intercept_0": self.aann.intercepts[0],
            "intercept_1": self.aann.intercepts[1],
            "input_offset": self.aann.input_offset,
            "input_scale": self.aann.input_scale,
        }
        return npz_bytes(json.dumps(metadata, sort_keys=True, allow_nan=False), **arrays)

    @classmethod
    def from_bytes(cls, data: bytes) -> RMPModel:
        """Read a model file's bytes; :class:`~privad.errors.DataError` on anything wrong.

        Never unpickles (``allow_pickle=False``); checks the archive's members, the format
        version, every array's dtype, shape and finiteness, and the metadata.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DataError(f"a model must be given as bytes, got {type(data).__name__}")
        data = bytes(data)
        arrays = _read_npz(data)
        metadata = _read_metadata(arrays.pop("metadata"))
        aann_meta = metadata.get("aann")
        if not isinstance(aann_meta, dict):
            raise DataError("model metadata lacks the 'aann' object (activation, input_scaling)")
        activation = aann_meta.get("activation")
        scaling = aann_meta.get("input_scaling")
        if activation not in ACTIVATIONS:
            raise DataError(
                f"model metadata: aann.activation must be one of {ACTIVATIONS}, got {activation!r}"
            )
        if scaling not in INPUT_SCALINGS:
            raise DataError(
                f"model metadata: aann.input_scaling must be one of {INPUT_SCALINGS}, got "
                f"{scaling!r}"
            )
        for key in ("beta", "threshold"):
            if arrays[key].shape != ():
                raise DataError(
                    f"model file: {key!r} must be a scalar, got shape {arrays[key].shape}"
                )
        T = arrays["T"]
        if T.ndim != 2:
            raise DataError(f"model file: 'T' must be a w x n matrix, got shape {T.shape}")
        try:
            aann = AANN(
                coefs=(arrays["coef_0"], arrays["coef_1"]),
                intercepts=(arrays["intercept_0"], arrays["intercept_1"]),
                activation=activation,
                input_offset=arrays["input_offset"],
                input_scale=arrays["input_scale"],
                input_scaling=scaling,
            )
            return cls(
                T=T,
                beta=float(arrays["beta"]),
                aann=aann,
                threshold=float(arrays["threshold"]),
                metadata=metadata,
            )
        except (DataError, ParameterError) as exc:
            raise DataError(f"model file is invalid: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the model file atomically (:func:`privad.io.atomic_write`); returns the path."""
        return write_file(path, self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RMPModel:
        """Read a model file. :class:`~privad.errors.DatasetNotFoundError` if it does not
        exist; :class:`~privad.errors.DataError` if it is not a valid model file."""
        return read_file(path, "model file", cls.from_bytes)


def _read_npz(data: bytes) -> dict[str, np.ndarray]:
    def check_members(infos: list[zipfile.ZipInfo]) -> None:
        names = {info.filename.removesuffix(".npy") for info in infos}
        if len(names) != len(infos) or not all(i.filename.endswith(".npy") for i in infos):
            raise DataError("not a model file: the archive holds members that are not .npy arrays")
        missing, extra = _KEYS - names, names - _KEYS
        if missing or extra:
            raise DataError(
                f"not a model file: missing members {sorted(missing)}, unexpected members "
                f"{sorted(extra)}; expected exactly {sorted(_KEYS)}"
            )
        if sum(info.file_size for info in infos) > MAX_MODEL_BYTES:
            raise DataError(f"model file too large: its arrays exceed {MAX_MODEL_BYTES} bytes")

    # object arrays (pickles) are refused by read_npz: "Object arrays cannot be loaded when
    # allow_pickle=False"
    out = read_npz(data, "model file", _KEYS, check_members)
    for key in _ARRAY_KEYS:
        arr = out[key]
        if arr.dtype != np.float64:
            raise DataError(f"model file: {key!r} must be float64, got dtype {arr.dtype}")
        if not np.isfinite(arr).all():
            raise DataError(f"model file: {key!r} contains NaN or infinite values")
    return out


def _read_metadata(arr: np.ndarray) -> dict[str, Any]:
    metadata = json_metadata(arr, "model file")
    if not isinstance(metadata, dict):
        raise DataError("model file: metadata must be a JSON object")
    version = metadata.get("format_version")
    if version != FORMAT_VERSION:
        raise DataError(
            f"model file format_version {version!r} is not supported; this privad reads "
            f"format_version {FORMAT_VERSION}"
        )
    return metadata


def check_training_matrix(T: np.ndarray, Z_all: Any) -> np.ndarray:
    """The server's ``Z_all``: finite, w x m_total with w = rows of ``T``, m_total >= 2."""
    Z = check_array(Z_all, "Z_all")
    if Z.shape[0] != T.shape[0]:
        raise DataError(
            f"Z_all must be w x m with w = {T.shape[0]} (rows of T; records are columns, "
            f"as in eq. 3), got shape {Z.shape}"
        )
    if Z.shape[1] < 2:
        raise DataError(f"Z_all must hold at least 2 records (columns), got {Z.shape[1]}")
    return Z


def fit_model(
    T: Any,
    Z_all: Any,
    *,
    alpha: float | None = None,
    beta: float | None = None,
    training: AANNTraining | None = None,
    rng: RandomnessLike = None,
    progress: Progress | None = None,
) -> RMPModel:
    """The mining server's job (section 4): train the AANN on everything it received.

    Parameters
    ----------
    T
        the public matrix, w x n.
    Z_all
        the perturbed records, **w x m_total** (the paper's orientation: columns
        are records, the participants' Z_i side by side, as received).
    alpha
        the public α (recorded in the metadata only; ``None`` if not known).
    beta
        β the participants used in eq. 2 (default β*); end-users must use the same.
    training
        how the AANN is trained (:class:`privad.rmp.aann.AANNTraining`; ``None``
        for its defaults).
    rng, progress
        passed to :func:`privad.rmp.aann.train_aann`.

    The AANN is trained on the rows of ``Z_all.T``; θ is μ + 3σ of the reconstruction
    errors of all training records pooled (section 4).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.noise import Randomness
    >>> from privad.rmp import AANNTraining, Participant, fit_model, public_matrix
    >>> T = public_matrix(2, 3, rng=1)
    >>> Z = Participant(T, 0.3, rng=2).perturb(Randomness(3).uniform(0, 1, (40, 3)))
    >>> model = fit_model(T, Z, alpha=0.3, training=AANNTraining(epochs=5), rng=4)
    >>> model.n_features, model.predict(np.full((2, 3), 0.5)).shape
    (3, (2,))
    """
    T = check_public_matrix(T)
    Z = check_training_matrix(T, Z_all)
    alpha = None if alpha is None else check_alpha(alpha)
    beta = beta_star() if beta is None else check_positive(beta, "beta")
    training = check_training(training)
    rows = Z.T
    aann = train_aann(rows, training, rng=rng, progress=progress)
    theta = threshold(aann.errors(rows))
    metadata = {
        "format_version": FORMAT_VERSION,
        "privad_version": _privad_version(),
        "n_training_records": int(rows.shape[0]),
        "epochs": training.epochs,
        "hidden": aann.hidden,
        "alpha": alpha,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "aann": {
            "activation": aann.activation,
            "input_scaling": aann.input_scaling,
            "loss": training.loss,
            "learning_rate": training.learning_rate,
            "momentum": training.momentum,
            "batch_size": training.batch_size,
            "init_range": training.init_range,
        },
    }
    return RMPModel(T=T, beta=beta, aann=aann, threshold=theta, metadata=metadata)
