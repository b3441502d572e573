"""Request bodies of privad's services: JSON checked before it is parsed, decoded field by
field, and declared in the OpenAPI document.

JSON only (lists of lists of floats for arrays: simple and debuggable).
:func:`parse_json` refuses a body nested deeper than :data:`MAX_JSON_DEPTH` or longer than
``max_bytes`` before parsing it (``413``), malformed JSON (``400``), the non-standard
constants ``NaN``/``Infinity`` and integers beyond a float's range (``422``);
:func:`decode_message` checks a protocol message field by field (exact JSON types: a string
or a boolean is never taken for a number) before the message's own validation. The app's
:class:`~privad.services.app.BodyLimitMiddleware` enforces the server's
``--max-body-bytes`` before any of this runs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from fastapi import Path as PathParam

from privad.errors import DataError
from privad.relaxed.messages import Message
from privad.services.errors import ServiceError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "KIND_SCHEMAS",
    "MAX_ID",
    "MAX_JSON_DEPTH",
    "MAX_WINDOW",
    "Recorder",
    "WindowParam",
    "decode_message",
    "dumps",
    "float_matrix",
    "float_vector",
    "index_vector",
    "json_body",
    "json_depth",
    "message_body",
    "parse_json",
]

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""Default request body limit (16 MiB: about 400,000 two-column records as JSON)."""

MAX_WINDOW = 2**62
"""Largest window number a service accepts (SQLite INTEGER is 64-bit)."""

WindowParam = PathParam(..., ge=0, le=MAX_WINDOW, description="window number")
"""The ``{window}`` of the analyst's and the correction server's paths (0 to MAX_WINDOW)."""

MAX_ID = 2**62
"""Largest id (window, batch, job, model number) in a path; larger ones are unknown (404)."""

MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects a request body may have (privad's bodies need 4)."""

Recorder = Callable[[str, str, bytes], None]
"""``recorder(kind, route, body)``: called with ``kind="request"`` and ``route="METHOD PATH"``
for every request a server receives (after the size check), and by the analyst's peer client
with ``kind="response"`` for every answer it receives from the correction server."""


class _BadBody(ServiceError):
    status_code = 400
    code = "malformed_json"


def _reject_constant(name: str) -> float:
    raise DataError(
        f"the body contains {name}, which is not a JSON number: only finite numbers are allowed"
    )


_FLOAT_DIGITS = len(str(int(np.finfo(np.float64).max)))  # 309
_DIGITS_AS_ZERO = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))  # digit -> "0"
_LONG_DIGITS = b"0" * _FLOAT_DIGITS


def _bounded_int(literal: str) -> int:
    """A JSON integer literal as an int, refused (DataError, 422) beyond a float's range."""
    if len(literal.lstrip("-")) >= _FLOAT_DIGITS:
        try:
            float(int(literal))
        except (OverflowError, ValueError):  # ValueError: over Python's 4,300-digit limit
            raise DataError(
                f"the body holds an integer of {len(literal.lstrip('-'))} digits, beyond the "
                "range of a number (at most about 1.8e308 in magnitude)"
            ) from None
    return int(literal)


class _TooLarge(ServiceError):
    status_code = 413
    code = "body_too_large"


# A JSON string literal (escapes included), replaced by "" before brackets are counted.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


_BRACKET_STEP = np.zeros(256, dtype=np.int8)
_BRACKET_STEP[[ord("["), ord("{")]] = 1
_BRACKET_STEP[[ord("]"), ord("}")]] = -1


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in ``raw`` (brackets inside strings are not
    counted), found without parsing: a linear scan in C and NumPy, so a body of a million
    ``[`` costs milliseconds and never recurses."""
    opening = raw.count(b"[") + raw.count(b"{")
    if opening <= MAX_JSON_DEPTH:  # the common case: too few brackets to be too deep
        return opening
    step = _BRACKET_STEP[np.frombuffer(_JSON_STRING.sub(b'""', raw), dtype=np.uint8)]
    return int(np.cumsum(step[step != 0], dtype=np.int64).max(initial=0))


def parse_json(
    raw: bytes, *, max_bytes: int = DEFAULT_MAX_BODY_BYTES, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """A request body as JSON, checked before it is parsed.

    Parameters
    ----------
    raw:
        The body's bytes.
    max_bytes:
        The longest body taken (the app's :class:`BodyLimitMiddleware` enforces the
        server's own ``--max-body-bytes`` first).
    max_depth:
        The deepest nesting of arrays and objects taken.

    Returns
    -------
    Any
        The decoded JSON value.

    Raises
    ------
    ServiceError
        ``413`` for a body too long or nested too deep, ``400`` for an empty body or
        malformed JSON.
    DataError
        ``422`` for the non-standard constants ``NaN``/``Infinity`` and for an integer
        literal beyond a float's range (about 1.8e308), which no field of privad takes.
    """
    if not raw:
        raise _BadBody("the request body is empty; a JSON object is required")
    if len(raw) > max_bytes:
        raise _TooLarge(f"the request body is {len(raw)} bytes; at most {max_bytes} are allowed")
    depth = json_depth(raw)
    if depth > max_depth:
        raise _TooLarge(
            f"the request body nests arrays/objects {depth} deep; at most "
            f"{max_depth} levels are allowed"
        )
    # An integer literal too long for a float (1.8e308 has 309 digits) is refused while
    # parsing: numpy would raise OverflowError on it. The hook runs only where such a run of
    # digits exists, so common bodies parse at the C parser's speed.
    hook = _bounded_int if _LONG_DIGITS in raw.translate(_DIGITS_AS_ZERO) else None
    try:
        return json.loads(raw, parse_constant=_reject_constant, parse_int=hook)
    except DataError:
        raise
    except RecursionError:  # unreachable after the depth check; never a 500 all the same
        raise _TooLarge(
            f"the request body nests too deep; at most {max_depth} levels are allowed"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise _BadBody(f"the request body is not valid JSON: {exc}") from None


def dumps(obj: Any) -> bytes:
    """Compact JSON for a body; refuses NaN/Infinity (``allow_nan=False``)."""
    return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode()


_NUMBER_TYPES = {int, float}


def float_matrix(value: Any, name: str) -> np.ndarray:
    """A JSON list of equally long lists of numbers as a finite float64 n × d array.

    Exact JSON types: booleans, strings and nulls are refused (numpy would silently turn
    ``true`` into 1.0 and ``"2"`` into 2.0).
    """
    if type(value) is not list or not value:
        raise DataError(f"{name} must be a non-empty list of rows (each a list of numbers)")
    if set(map(type, value)) != {list}:
        raise DataError(f"{name} must be a list of rows, each a list of numbers")
    lengths = set(map(len, value))
    if len(lengths) != 1:
        raise DataError(
            f"{name} has rows of different lengths {sorted(lengths)[:5]}: every row needs the "
            "same number of columns"
        )
    (d,) = lengths
    if d == 0:
        raise DataError(f"{name} rows are empty: each row needs at least one column")
    kinds = set()
    for row in value:
        kinds.update(map(type, row))
    if not kinds <= _NUMBER_TYPES:
        bad = sorted(k.__name__ for k in kinds - _NUMBER_TYPES)
        raise DataError(f"{name} holds non-numbers ({', '.join(bad)}); only numbers are allowed")
    arr = np.array(value, dtype=np.float64)
    _finite(arr, name)
    return arr


def float_vector(value: Any, name: str, *, min_size: int = 1) -> np.ndarray:
    """A JSON list of numbers as a finite float64 vector (exact JSON types)."""
    if type(value) is not list:
        raise DataError(f"{name} must be a list of numbers")
    if len(value) < min_size:
        raise DataError(f"{name} must hold at least {min_size} number(s), got {len(value)}")
    kinds = set(map(type, value))
    if not kinds <= _NUMBER_TYPES:
        bad = sorted(k.__name__ for k in kinds - _NUMBER_TYPES)
        raise DataError(f"{name} holds non-numbers ({', '.join(bad)}); only numbers are allowed")
    arr = np.array(value, dtype=np.float64).reshape(-1)
    _finite(arr, name)
    return arr


def index_vector(value: Any, name: str) -> np.ndarray:
    """A JSON list of integers >= 0 as an int64 vector (may be empty)."""
    if type(value) is not list:
        raise DataError(f"{name} must be a list of record indices (integers >= 0)")
    if not set(map(type, value)) <= {int}:
        raise DataError(f"{name} must hold integers only (record indices)")
    if value and (min(value) < 0 or max(value) >= 2**63):
        raise DataError(f"{name} holds an index outside 0..2^63-1")
    return np.array(value, dtype=np.int64).reshape(-1)


def _number(value: Any, name: str, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if type(value) not in _NUMBER_TYPES:
        raise DataError(f"{name} must be a number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise DataError(f"{name} must be finite, got {value!r}")
    return out


def _finite(arr: np.ndarray, name: str) -> None:
    if not np.isfinite(arr).all():
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise DataError(
            f"{name} contains {bad} NaN or infinite value(s); only finite values are allowed"
        )


_DECODERS: dict[str, Callable[[Any, str], Any]] = {
    "matrix": float_matrix,
    "vector": float_vector,
    "indices": index_vector,
    "number": _number,
    "optional-number": lambda v, n: _number(v, n, optional=True),
}


def decode_message(
    cls: type[Message], body: Any, schema: Mapping[str, str], optional: Sequence[str] = ()
) -> Message:
    """Check a JSON body field by field (``schema``: field → matrix, vector, indices, number,
    optional-number), then build the message (which validates it again as a whole).
    Fields named in ``optional`` may be absent (the message's default applies)."""
    name = cls.__name__
    if not isinstance(body, dict):
        raise DataError(
            f"the body must be a JSON object (a {name} message), got {type(body).__name__}"
        )
    kind = body.get("type", name)
    if kind != name:
        raise DataError(f"expected a {name} message, got type {kind!r}")
    unknown = sorted(set(body) - set(schema) - {"type"})
    if unknown:
        raise DataError(
            f"unknown field(s) {unknown} in a {name} message; allowed: {sorted(schema)}"
        )
    missing = sorted(set(schema) - set(body) - set(optional))
    if missing:
        raise DataError(f"missing field(s) {missing} in a {name} message")
    fields = {key: _DECODERS[kind_](body[key], key) for key, kind_ in schema.items() if key in body}
    return cls.from_dict(fields)


# JSON Schemas of the decode_message kinds (what a schema-driven client or fuzzer sends).
_NUMBER_SCHEMA: dict[str, Any] = {"type": "number"}
KIND_SCHEMAS: dict[str, dict[str, Any]] = {
    "matrix": {
        "type": "array",
        "minItems": 1,
        "items": {"type": "array", "minItems": 1, "items": _NUMBER_SCHEMA},
    },
    "vector": {"type": "array", "minItems": 1, "items": _NUMBER_SCHEMA},
    "indices": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    "number": _NUMBER_SCHEMA,
    "optional-number": {"type": ["number", "null"]},
}


def json_body(
    properties: Mapping[str, Any], required: Sequence[str] = (), *, optional_body: bool = False
) -> dict[str, Any]:
    """``openapi_extra`` declaring a JSON object request body (the handlers read raw bytes,
    so FastAPI cannot infer it): ``properties`` maps each field to its JSON Schema; no other
    field is allowed. ``optional_body``: an empty body is accepted too."""
    schema = {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }
    return {
        "requestBody": {
            "required": not optional_body,
            "content": {"application/json": {"schema": schema}},
        }
    }


def message_body(schema: Mapping[str, str], optional: Sequence[str] = ()) -> dict[str, Any]:
    """``openapi_extra`` for a protocol message read by :func:`decode_message` with
    ``schema`` (field → kind): every field required except ``optional``, plus the optional
    ``type``."""
    props = {key: KIND_SCHEMAS[kind] for key, kind in schema.items()}
    return json_body(
        {**props, "type": {"type": "string"}}, required=[k for k in schema if k not in optional]
    )
