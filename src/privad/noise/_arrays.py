"""Input coercion shared by the samplers (private)."""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.errors import ParameterError
from privad.noise.randomness import _check_size


def float_param(value: Any, name: str) -> np.ndarray:
    """``value`` as a float64 array (any shape); NaN/inf refused."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be a real number or an array of them: {exc}") from None
    if not np.isfinite(arr).all():
        raise ParameterError(f"{name} must be finite (no NaN or inf), got {_show(arr)}")
    return arr


def int_param(value: Any, name: str, *, minimum: int = 0) -> np.ndarray:
    """``value`` as an int64 array of integers >= ``minimum`` (integral floats accepted)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterError(f"{name} must be an integer or an array of integers: {exc}") from None
    if arr.dtype == object and all(
        isinstance(v, int) and not isinstance(v, bool) for v in arr.ravel().tolist()
    ):
        raise ParameterError(
            f"{name} must contain integers in [{minimum}, 2**63), got {_show(arr)}"
        )
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise ParameterError(f"{name} must be an integer or an array of integers, got {_show(arr)}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or not (arr == np.round(arr)).all():
            raise ParameterError(f"{name} must contain integers, got {_show(arr)}")
        if np.any(np.abs(arr) >= 2.0**63):
            raise ParameterError(f"{name} must be below 2**63 in absolute value, got {_show(arr)}")
    elif arr.dtype.kind == "u" and arr.size and arr.max() >= 2**63:
        raise ParameterError(f"{name} must be below 2**63, got {_show(arr)}")
    arr = arr.astype(np.int64)
    if arr.size and arr.min() < minimum:
        raise ParameterError(f"{name} must be >= {minimum}, got {_show(arr)}")
    return arr


def broadcast(
    arrays: list[np.ndarray], size: Any, names: str
) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """Broadcast ``arrays`` together (or to ``size`` if given): 1-D contiguous arrays and
    the common shape. An array with a single element stays of length 1 (the kernels
    apply it to every sample) instead of being materialised at full size."""
    shape = _check_size(size)
    try:
        if shape is None:
            target = np.broadcast_shapes(*(a.shape for a in arrays))
        else:
            target = (shape,) if isinstance(shape, int) else tuple(shape)
        flat = [
            np.ascontiguousarray(
                a.reshape(1) if a.size == 1 else np.broadcast_to(a, target)
            ).ravel()
            for a in arrays
        ]
        if np.broadcast_shapes(target, *(a.shape for a in arrays)) != tuple(target):
            raise ValueError("size does not fit")
    except ValueError:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ParameterError(
            f"the shapes of {names} {shapes} do not broadcast"
            + ("" if shape is None else f" to size {shape}")
        ) from None
    return flat, tuple(target)


def _show(arr: np.ndarray) -> str:
    if arr.ndim == 0:
        return repr(arr.item())
    bad = arr.ravel()[:3].tolist()
    return f"an array of shape {arr.shape} starting {bad}"
