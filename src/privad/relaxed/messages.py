"""The messages of the correction protocol (sections 6.1 and 6.2), one dataclass each.

Each message carries exactly what section 6.2 lets its receiver learn, so the information
flow is explicit and testable (a transcript of these objects is a complete record of what
every party saw):

=====  =====================  ==========================  ====================================
step   message                sender → receiver           content
=====  =====================  ==========================  ====================================
2      SensorToAnalyst        sensor S → analyst A        𝒯' (scaled), public mechanism
                                                          parameters (divisors, noise scales, ε)
2      SensorToCorrection     sensor S → correction CS    record indices and d_diff (and,
                                                          with ε_TP, the d_TP noise)
2      AnalystToCorrection    A → CS                      O' = f_outlier(𝒯'), indices only
4      CorrectionToAnalyst    CS → A                      d_TP (None when TP is empty) and w_O
4      AnalystToCorrection2   A → CS                      I_L2, I_L3 (indices only; the
                                                          thresholds depend on the analyst's
                                                          reduction, see
                                                          privad.relaxed.correction)
5      CorrectionToAnalyst2   CS → A                      the corrected outlier set
                                                          TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3 (indices,
                                                          without saying which layer: the
                                                          layers would reveal signs of d_diff)
=====  =====================  ==========================  ====================================

The correction server never receives 𝒯 or 𝒯'; the analyst never receives noise or d_diff
(it does learn the single value d_TP, which section 6.2 allows). Messages are immutable:
their arrays are private read-only copies. :meth:`to_dict` / :meth:`from_dict` give a
JSON-ready form for the network services.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

import numpy as np

from privad.errors import DataError, ParameterError, PrivadError
from privad.validation import check_array, check_epsilon, check_nonnegative

__all__ = [
    "MESSAGE_TYPES",
    "ProtocolError",
    "AnalystToCorrection",
    "AnalystToCorrection2",
    "CorrectionToAnalyst",
    "CorrectionToAnalyst2",
    "Message",
    "SensorToAnalyst",
    "SensorToCorrection",
    "index_array",
]


class ProtocolError(PrivadError):
    """A party received a message out of order or inconsistent with what it already holds.

    Examples
    --------
    >>> from privad.relaxed import Analyst, DBSCANDetector, ProtocolError
    >>> try:
    ...     Analyst(DBSCANDetector(0.2, 3)).distances()  # before 𝒯' was received
    ... except ProtocolError as exc:
    ...     print(exc)
    the analyst has no data yet
    """


def index_array(values: Any, name: str) -> np.ndarray:
    """A read-only int64 vector of non-negative record indices (may be empty).

    Uniqueness and the upper bound (< n) are checked by the receiver, which knows n.
    """
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise DataError(f"{name} must be a 1-D vector of record indices, got shape {arr.shape}")
    if arr.size == 0:
        out = np.zeros(0, dtype=np.int64)
    elif arr.dtype.kind in "iu":
        out = np.array(arr, dtype=np.int64)
    else:
        raise DataError(f"{name} must hold integer record indices, got dtype {arr.dtype}")
    if out.size and out.min() < 0:
        raise DataError(f"{name} must hold record indices >= 0, got {int(out.min())}")
    out.flags.writeable = False
    return out


def _frozen_float_vector(values: Any, name: str) -> np.ndarray:
    arr = check_array(values, name, ndim=1, min_rows=0).copy()
    arr.flags.writeable = False
    return arr


def _optional_float(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ParameterError(f"{name} must be a finite number or None, got {value!r}")
    return float(value)


class Message:
    """Base class of the protocol messages: sender/receiver names and (de)serialisation."""

    sender: ClassVar[str]
    receiver: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (arrays as lists) with a ``"type"`` field naming the message."""
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            out[f.name] = value.tolist() if isinstance(value, np.ndarray) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Rebuild (and re-validate) a message from :meth:`to_dict` output."""
        if not isinstance(data, Mapping):
            raise DataError(f"a message must be a mapping, got {type(data).__name__}")
        kind = data.get("type", cls.__name__)
        target = MESSAGE_TYPES.get(kind) if cls is Message else cls
        if target is None or kind != target.__name__:
            raise DataError(f"unknown or unexpected message type {kind!r} for {cls.__name__}")
        names = {f.name for f in fields(target)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names - {"type"})
        if unknown:
            raise DataError(f"unknown field(s) {unknown} in a {kind} message")
        optional = {f.name for f in fields(target) if f.default is not MISSING}  # type: ignore[arg-type]
        missing = sorted(names - optional - set(data))
        if missing:
            raise DataError(f"missing field(s) {missing} in a {kind} message")
        return target(**{k: data[k] for k in names if k in data})


@dataclass(frozen=True, eq=False)
class SensorToAnalyst(Message):
    """Step 2, S → A: the perturbed data 𝒯' and the public parameters of the mechanism.

    Attributes
    ----------
    perturbed
        𝒯' in the scaled space of step 1a, n × d; row i is record i.
    divisors
        the public step-1a divisors ``s_j`` (``perturbed · divisors`` is 𝒯' in
        measurement units).
    noise_scale
        the Laplace scale used per column in the scaled space (``1/ε`` for
        the default scaling), public like every DP mechanism's parameters.
    epsilon
        the sensor's ε.
    """

    sender: ClassVar[str] = "sensor"
    receiver: ClassVar[str] = "analyst"

    perturbed: np.ndarray
    divisors: np.ndarray
    noise_scale: np.ndarray
    epsilon: float

    def __post_init__(self) -> None:
        perturbed = check_array(self.perturbed, "perturbed").copy()
        perturbed.flags.writeable = False
        d = perturbed.shape[1]
        divisors = _frozen_float_vector(self.divisors, "divisors")
        noise_scale = _frozen_float_vector(self.noise_scale, "noise_scale")
        for name, vec in (("divisors", divisors), ("noise_scale", noise_scale)):
            if vec.size != d or not (vec > 0).all():
                raise DataError(
                    f"{name} must hold {d} value(s) > 0 (one per column), got {vec.tolist()}"
                )
        object.__setattr__(self, "perturbed", perturbed)
        object.__setattr__(self, "divisors", divisors)
        object.__setattr__(self, "noise_scale", noise_scale)
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))


@dataclass(frozen=True, eq=False)
class SensorToCorrection(Message):
    """Step 2, S → CS: the distance differences, indexed by record (Definition 4).

    Attributes
    ----------
    indices
        the record index of each entry, a permutation of ``0 … n−1`` (the same
        row numbers the analyst sees; the sensor may send them in any order).
    d_diff
        ``d_diff[k]`` belongs to record ``indices[k]`` (with ``Lap(Δ₁/ε_CS)`` noise
        in the protected exchange, see :mod:`privad.relaxed.views`).
    tp_noise
        the Laplace noise the correction server adds to d_TP before sending it to
        the analyst (ε_TP, eq. V2 of :mod:`privad.relaxed.views`); 0.0 (default) for none.
    """

    sender: ClassVar[str] = "sensor"
    receiver: ClassVar[str] = "correction"

    indices: np.ndarray
    d_diff: np.ndarray
    tp_noise: float = 0.0

    def __post_init__(self) -> None:
        indices = index_array(self.indices, "indices")
        d_diff = _frozen_float_vector(self.d_diff, "d_diff")
        n = indices.size
        if d_diff.size != n or n == 0:
            raise DataError(
                f"indices and d_diff must have the same length >= 1, got {n} and {d_diff.size}"
            )
        seen = np.zeros(n, dtype=bool)
        if indices.max() >= n:
            raise DataError(
                f"indices must be a permutation of 0..{n - 1}, got {int(indices.max())}"
            )
        seen[indices] = True
        if not seen.all():
            raise DataError(f"indices must be a permutation of 0..{n - 1} (each record once)")
        object.__setattr__(self, "indices", indices)
        object.__setattr__(self, "d_diff", d_diff)
        tp_noise = _optional_float(self.tp_noise, "tp_noise")
        object.__setattr__(self, "tp_noise", 0.0 if tp_noise is None else tp_noise)

    def to_dict(self) -> dict[str, Any]:
        """As :meth:`Message.to_dict`; ``tp_noise`` only when it is not 0 (a body without it
        asks for no d_TP noise, as before ε_TP existed)."""
        out = super().to_dict()
        if out["tp_noise"] == 0.0:
            del out["tp_noise"]
        return out


@dataclass(frozen=True, eq=False)
class AnalystToCorrection(Message):
    """Step 2/3, A → CS: the presumed outliers ``O' = f_outlier(𝒯')`` as record indices."""

    sender: ClassVar[str] = "analyst"
    receiver: ClassVar[str] = "correction"

    presumed_outliers: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "presumed_outliers", index_array(self.presumed_outliers, "presumed_outliers")
        )


@dataclass(frozen=True, eq=False)
class CorrectionToAnalyst(Message):
    """Step 4, CS → A: ``d_TP = min_{t ∈ TP} d_diff[t]`` and the outlier layer width ``w_O``.

    ``d_tp`` is ``None`` when TP is empty (O' was empty): then there is no layer 2 or 3.
    """

    sender: ClassVar[str] = "correction"
    receiver: ClassVar[str] = "analyst"

    d_tp: float | None
    w_o: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "d_tp", _optional_float(self.d_tp, "d_tp"))
        object.__setattr__(self, "w_o", check_nonnegative(self.w_o, "w_o"))


@dataclass(frozen=True, eq=False)
class AnalystToCorrection2(Message):
    """Step 4, A → CS: ``I_L2 = {j : d_{c'}(𝒯'[j]) ≥ t2}`` and ``I_L3 = {j : … ≥ t3}``.

    ``(t2, t3) = (ρ, ρ + max(0, d_TP))`` for the analyst's default ``"radius"`` reduction,
    ``(d_TP, d_TP + w_O)`` for ``"notes"`` (:func:`privad.relaxed.reduction_thresholds`).
    The thresholds themselves are not sent.
    """

    sender: ClassVar[str] = "analyst"
    receiver: ClassVar[str] = "correction"

    i_l2: np.ndarray
    i_l3: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "i_l2", index_array(self.i_l2, "i_l2"))
        object.__setattr__(self, "i_l3", index_array(self.i_l3, "i_l3"))


@dataclass(frozen=True, eq=False)
class CorrectionToAnalyst2(Message):
    """Step 5, CS → A: the corrected outlier set ``TP ∪ FN_L1 ∪ FN_L2 ∪ FN_L3``, sorted."""

    sender: ClassVar[str] = "correction"
    receiver: ClassVar[str] = "analyst"

    outliers: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "outliers", index_array(self.outliers, "outliers"))


MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.__name__: cls
    for cls in (
        SensorToAnalyst,
        SensorToCorrection,
        AnalystToCorrection,
        CorrectionToAnalyst,
        AnalystToCorrection2,
        CorrectionToAnalyst2,
    )
}
"""Every message type by name (the ``"type"`` field of :meth:`Message.to_dict`)."""
