"""Shared plumbing of privad's network services: app factory, SQLite store, token auth, errors.

Every privad server (``privad serve analyst``, ``privad serve correction``, and later
schemes' servers) is a FastAPI app built by :func:`create_app` and run by uvicorn through
:func:`run_service` (or :class:`ThreadedServer` in tests and benchmarks). They share:

Bodies
    JSON only (lists of lists of floats for arrays: simple and debuggable). The
    :class:`BodyLimitMiddleware` buffers each request body, answers ``413`` when it exceeds
    ``max_body_bytes`` and hands the body to an optional *recorder* (tests use it to keep a
    transcript of every message a server received). :func:`parse_json` refuses a body
    nested deeper than :data:`MAX_JSON_DEPTH` or longer than ``max_bytes`` before parsing
    it (``413``), malformed JSON (``400``) and the non-standard constants
    ``NaN``/``Infinity`` (``422``);
    :func:`decode_message` checks a protocol message field by field (exact JSON types: a
    string or a boolean is never taken for a number) before the message's own validation.
Errors
    One JSON shape, ``{"error": CODE, "detail": MESSAGE}``: malformed data or parameters
    (:class:`~privad.errors.DataError`, :class:`~privad.errors.ParameterError`) → 422, a
    message out of protocol order (:class:`~privad.relaxed.ProtocolError`) or a conflicting
    duplicate (:class:`Conflict`) → 409, :class:`NotFound` → 404, a failing peer server
    (:class:`UpstreamError`) → 502, a missing or unknown token → 401, a valid token of the
    wrong role → 403. Handlers validate everything before writing, so a refused request
    changes nothing.
Authentication
    ``Authorization: Bearer SECRET``. A :class:`TokenRegistry` maps secrets to a *principal*
    (a name and a role, e.g. sensor ``s1`` or the peer ``analyst``). A sensor's identity is
    its token's name: a sensor can only ever read or append its own records.
Storage
    :class:`SQLiteStore`: one SQLite file per server (stdlib :mod:`sqlite3`), WAL journal
    with ``synchronous=FULL``; each request's writes are one savepoint of a group commit
    (concurrent requests share one fsync). Handlers return only after the commit, so an
    acknowledged record survives a crash or restart.

Adding a server for another scheme: build its routes in a function that takes the FastAPI
app, pass it to :func:`create_app`, and add one command to ``privad serve``
(:mod:`privad.cli.serve`) that calls :func:`run_service`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import queue
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from privad.errors import DataError, ParameterError, PrivadError
from privad.io import check_output_path
from privad.relaxed.messages import Message, ProtocolError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "KIND_SCHEMAS",
    "MAX_ID",
    "MAX_JSON_DEPTH",
    "MAX_WINDOW",
    "SENSOR_ROLE",
    "BodyLimitMiddleware",
    "Conflict",
    "NotFound",
    "Principal",
    "Recorder",
    "SQLiteStore",
    "ServiceError",
    "ThreadedServer",
    "TokenRegistry",
    "UpstreamError",
    "bind_socket",
    "check_name",
    "create_app",
    "decode_message",
    "dumps",
    "float_matrix",
    "float_vector",
    "index_vector",
    "json_body",
    "json_depth",
    "load_token_file",
    "message_body",
    "pack",
    "parse_json",
    "parse_token_spec",
    "require_role",
    "run_service",
    "stored_response",
    "unpack",
    "utc_now",
]

log = logging.getLogger("privad.services")

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""Default request body limit (16 MiB: about 400,000 two-column records as JSON)."""

MAX_WINDOW = 2**62
"""Largest window number a service accepts (SQLite INTEGER is 64-bit)."""

MAX_ID = 2**62
"""Largest id (window, batch, job, model number) in a path; larger ones are unknown (404)."""

MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects a request body may have (privad's bodies need 4)."""

SENSOR_ROLE = "sensor"
"""The role of a token read from ``--tokens``/``--token``: one sensor, named by the token."""

MIN_SECRET_LENGTH = 16

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""The one rule for every name a service accepts (matched whole: no trailing newline)."""

Recorder = Callable[[str, str, bytes], None]
"""``recorder(kind, route, body)``: called with ``kind="request"`` and ``route="METHOD PATH"``
for every request a server receives (after the size check), and by the analyst's peer client
with ``kind="response"`` for every answer it receives from the correction server."""


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class ServiceError(PrivadError):
    """An error with an HTTP status; the client side raises it with the server's message."""

    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        if status_code is not None:
            self.status_code = status_code


class NotFound(ServiceError):
    """The window (or other resource) does not exist for this principal (404)."""

    status_code = 404
    code = "not_found"


class Conflict(ServiceError):
    """A duplicate with different content, or a request out of order (409)."""

    status_code = 409
    code = "conflict"


class UpstreamError(ServiceError):
    """A peer server failed or could not be reached (502)."""

    status_code = 502
    code = "upstream_error"


class _BadBody(ServiceError):
    status_code = 400
    code = "malformed_json"


def _status_of(exc: PrivadError) -> tuple[int, str]:
    if isinstance(exc, ServiceError):
        return exc.status_code, exc.code
    if isinstance(exc, ProtocolError):
        return 409, "protocol_error"
    if isinstance(exc, DataError):
        return 422, "invalid_data"
    if isinstance(exc, ParameterError):
        return 422, "invalid_parameter"
    return 400, "bad_request"


def error_response(status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
                   ) -> JSONResponse:  # fmt: skip
    """The one error body every privad service answers with."""
    return JSONResponse({"error": code, "detail": detail}, status_code=status,
                        headers=dict(headers or {}))  # fmt: skip


def stored_response(body: Mapping[str, Any], stored: bool) -> JSONResponse:
    """The answer to an idempotent upload: ``body`` with ``"status": "stored"`` and 201 when
    it was stored now, ``"duplicate"`` and 200 for a copy of what was stored before."""
    return JSONResponse({**body, "status": "stored" if stored else "duplicate"},
                        status_code=201 if stored else 200)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Time, JSON and arrays
# --------------------------------------------------------------------------------------------


def utc_now() -> str:
    """The current UTC time as ISO 8601 text (stored with every record)."""
    return datetime.now(UTC).isoformat()


def _reject_constant(name: str) -> float:
    raise DataError(
        f"the body contains {name}, which is not a JSON number: only finite numbers are allowed"
    )


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


def parse_json(raw: bytes, *, max_bytes: int = DEFAULT_MAX_BODY_BYTES,
               max_depth: int = MAX_JSON_DEPTH) -> Any:  # fmt: skip
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
        ``422`` for the non-standard constants ``NaN``/``Infinity``.
    """
    if not raw:
        raise _BadBody("the request body is empty; a JSON object is required")
    if len(raw) > max_bytes:
        raise _TooLarge(f"the request body is {len(raw)} bytes; at most {max_bytes} are allowed")
    depth = json_depth(raw)
    if depth > max_depth:
        raise _TooLarge(f"the request body nests arrays/objects {depth} deep; at most "
                        f"{max_depth} levels are allowed")  # fmt: skip
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except DataError:
        raise
    except RecursionError:  # unreachable after the depth check; never a 500 all the same
        raise _TooLarge(f"the request body nests too deep; at most {max_depth} levels are "
                        "allowed") from None  # fmt: skip
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


def decode_message(cls: type[Message], body: Any, schema: Mapping[str, str],
                   optional: Sequence[str] = ()) -> Message:  # fmt: skip
    """Check a JSON body field by field (``schema``: field → matrix, vector, indices, number,
    optional-number), then build the message (which validates it again as a whole).
    Fields named in ``optional`` may be absent (the message's default applies)."""
    name = cls.__name__
    if not isinstance(body, dict):
        raise DataError(f"the body must be a JSON object (a {name} message), got "
                        f"{type(body).__name__}")  # fmt: skip
    kind = body.get("type", name)
    if kind != name:
        raise DataError(f"expected a {name} message, got type {kind!r}")
    unknown = sorted(set(body) - set(schema) - {"type"})
    if unknown:
        raise DataError(f"unknown field(s) {unknown} in a {name} message; allowed: "
                        f"{sorted(schema)}")  # fmt: skip
    missing = sorted(set(schema) - set(body) - set(optional))
    if missing:
        raise DataError(f"missing field(s) {missing} in a {name} message")
    fields = {key: _DECODERS[kind_](body[key], key) for key, kind_ in schema.items()
              if key in body}  # fmt: skip
    return cls.from_dict(fields)


# JSON Schemas of the decode_message kinds (what a schema-driven client or fuzzer sends).
_NUMBER_SCHEMA: dict[str, Any] = {"type": "number"}
KIND_SCHEMAS: dict[str, dict[str, Any]] = {
    "matrix": {"type": "array", "minItems": 1,
               "items": {"type": "array", "minItems": 1, "items": _NUMBER_SCHEMA}},
    "vector": {"type": "array", "minItems": 1, "items": _NUMBER_SCHEMA},
    "indices": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    "number": _NUMBER_SCHEMA,
    "optional-number": {"type": ["number", "null"]},
}  # fmt: skip


def json_body(properties: Mapping[str, Any], required: Sequence[str] = (), *,
              optional_body: bool = False) -> dict[str, Any]:  # fmt: skip
    """``openapi_extra`` declaring a JSON object request body (the handlers read raw bytes,
    so FastAPI cannot infer it): ``properties`` maps each field to its JSON Schema; no other
    field is allowed. ``optional_body``: an empty body is accepted too."""
    schema = {"type": "object", "properties": dict(properties), "required": list(required),
              "additionalProperties": False}  # fmt: skip
    return {"requestBody": {"required": not optional_body,
                            "content": {"application/json": {"schema": schema}}}}  # fmt: skip


def message_body(schema: Mapping[str, str], optional: Sequence[str] = ()) -> dict[str, Any]:
    """``openapi_extra`` for a protocol message read by :func:`decode_message` with
    ``schema`` (field → kind): every field required except ``optional``, plus the optional
    ``type``."""
    props = {key: KIND_SCHEMAS[kind] for key, kind in schema.items()}
    return json_body({**props, "type": {"type": "string"}},
                     required=[k for k in schema if k not in optional])


def pack(arr: np.ndarray, dtype: str = "<f8") -> bytes:
    """An array's values as little-endian bytes (float64 ``<f8`` or int64 ``<i8``)."""
    return np.ascontiguousarray(arr, dtype=dtype).tobytes()


def unpack(blob: bytes, dtype: str = "<f8", shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The inverse of :func:`pack` (a new, writeable array)."""
    arr = np.frombuffer(blob, dtype=dtype).astype(dtype[1:], copy=True)
    return arr if shape is None else arr.reshape(shape)


# --------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------


def check_name(name: Any, what: str = "sensor name") -> str:
    """A name a service accepts (sensor, token, participant): the one rule for all of them.

    1–64 characters, ASCII letters, digits, ``.``, ``_`` and ``-``, starting with a letter
    or a digit; the whole string must match (``"alice\\n"`` is refused, not read as
    ``"alice"``). :class:`~privad.errors.ParameterError` (422) otherwise.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ParameterError(
            f"{what} must be 1-64 characters (letters, digits, '.', '_', '-', starting with a "
            f"letter or digit), got {name!r}"
        )
    return name


def _check_secret(secret: Any, what: str) -> str:
    if not isinstance(secret, str) or len(secret) < MIN_SECRET_LENGTH or any(
        c.isspace() for c in secret
    ):
        raise ParameterError(
            f"{what} must be at least {MIN_SECRET_LENGTH} characters without spaces; make one "
            "with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return secret


def parse_token_spec(spec: str) -> tuple[str, str]:
    """``NAME=SECRET`` → (name, secret), as given to ``--token``."""
    name, sep, secret = str(spec).partition("=")
    if not sep:
        raise ParameterError("a token must be given as NAME=SECRET (no '=' found)")
    name = check_name(name.strip(), "token name")
    return name, _check_secret(secret.strip(), f"the secret of token {name!r}")


def load_token_file(path: str | Path) -> list[tuple[str, str]]:
    """A tokens file: one ``NAME=SECRET`` per line; blank lines and ``#`` comments ignored."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParameterError(f"cannot read tokens file {str(p)!r}: {exc.strerror}") from None
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            out.append(parse_token_spec(line))
        except ParameterError as exc:
            raise ParameterError(f"{p}: line {lineno}: {exc}") from None
    if not out:
        raise ParameterError(f"tokens file {str(p)!r} holds no NAME=SECRET line")
    return out


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: a name (the sensor id) and a role (``"sensor"``, ...)."""

    name: str
    role: str


class TokenRegistry:
    """Secrets → principals. Secrets are kept only as SHA-256 digests.

    ``sensors`` are ``(name, secret)`` pairs (role ``"sensor"``); ``peers`` maps a role
    (e.g. ``"analyst"``) to its secret.
    """

    def __init__(
        self,
        sensors: Sequence[tuple[str, str]] = (),
        peers: Mapping[str, str] | None = None,
    ) -> None:
        self._by_digest: dict[bytes, Principal] = {}
        names: set[str] = set()
        for name, secret in sensors:
            name = check_name(name, "token name")
            if name in names:
                raise ParameterError(f"token name {name!r} is given twice")
            names.add(name)
            self._add(Principal(name, SENSOR_ROLE),
                      _check_secret(secret, f"the secret of token {name!r}"))  # fmt: skip
        for role, secret in (peers or {}).items():
            self._add(Principal(role, role), _check_secret(secret, f"the {role} token"))

    @staticmethod
    def _digest(secret: str) -> bytes:
        return hashlib.sha256(secret.encode()).digest()

    def _add(self, principal: Principal, secret: str) -> None:
        digest = self._digest(secret)
        if digest in self._by_digest:
            raise ParameterError(
                f"the same secret is given to {self._by_digest[digest].name!r} and "
                f"{principal.name!r}; every token needs its own secret"
            )
        self._by_digest[digest] = principal

    @property
    def sensors(self) -> list[str]:
        """The sensor names, sorted."""
        return sorted(p.name for p in self._by_digest.values() if p.role == SENSOR_ROLE)

    def __len__(self) -> int:
        return len(self._by_digest)

    def lookup(self, secret: str) -> Principal | None:
        """The principal of ``secret``, or None.

        Only SHA-256 digests are compared (a dict lookup on the digest), so the time a
        lookup takes says nothing useful about the secret.
        """
        return self._by_digest.get(self._digest(secret))


class _AuthError(ServiceError):
    status_code = 401
    code = "unauthorized"


class _Forbidden(ServiceError):
    status_code = 403
    code = "forbidden"


def require_role(*roles: str) -> Callable[[Request], Principal]:
    """A FastAPI dependency: the request's principal, which must have one of ``roles``.

    401 without a token or with an unknown one, 403 for a valid token of another role. The
    registry is ``request.app.state.tokens``.
    """

    def dependency(request: Request) -> Principal:
        header = request.headers.get("authorization", "")
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise _AuthError("missing token: send 'Authorization: Bearer SECRET'")
        principal = request.app.state.tokens.lookup(secret.strip())
        if principal is None:
            raise _AuthError("unknown token")
        if principal.role not in roles:
            raise _Forbidden(
                f"a {principal.role} token may not use this endpoint (it is for: "
                f"{', '.join(roles)})"
            )
        return principal

    return dependency


# --------------------------------------------------------------------------------------------
# SQLite
# --------------------------------------------------------------------------------------------


class SQLiteStore:
    """A durable SQLite file for one server role, with group commit.

    WAL journal, ``synchronous=FULL`` (a commit is on disk before it returns), foreign keys
    on. Writes go through :meth:`write`: each is a function run inside a write transaction
    by one writer thread, which takes every write that is waiting, runs each in its own
    ``SAVEPOINT`` (a write that raises is rolled back alone and its caller gets the
    exception), commits them together and only then returns to the callers. So every
    acknowledged write is durable, and concurrent requests share one fsync instead of
    queueing for one each. Reads use a second connection (:meth:`reading`), which sees
    committed data only and does not wait for the writer. The ``meta`` table records the
    role, so a correction server refuses an analyst's file and vice versa.

    Parameters
    ----------
    path:
        The database file (created if missing, in a folder that must exist:
        :func:`privad.io.check_output_path`).
    role:
        The server role that owns the file, e.g. ``"analyst"``.
    schema:
        ``CREATE TABLE IF NOT EXISTS ...`` statements separated by ``;`` (no ``;`` inside a
        statement), run in one transaction on every open.
    max_batch:
        The most writes committed together.
    """

    SCHEMA_VERSION = "1"

    def __init__(self, path: str | Path, *, role: str, schema: str,
                 busy_timeout: float = 30.0, max_batch: int = 64) -> None:  # fmt: skip
        if str(path) == ":memory:":
            raise ParameterError(f"--db must be a file path (durable storage), got {str(path)!r}")
        p = check_output_path(path, "--db", "store")
        self.path = str(p)
        self.role = role
        self.max_batch = max(1, int(max_batch))
        self._busy_ms = int(busy_timeout * 1000)
        self._conn = self._connect(p, busy_timeout)
        try:
            self._setup(schema)
            self._read = self._connect(p, busy_timeout)
        except BaseException:
            self._conn.close()
            raise
        self._read_lock = threading.Lock()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, daemon=True,
                                        name=f"privad-{role}-writer")  # fmt: skip
        self._writer.start()

    def _connect(self, p: Path, busy_timeout: float) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(p, isolation_level=None, check_same_thread=False,
                                   timeout=busy_timeout)  # fmt: skip
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.close()
                raise ParameterError(f"cannot use WAL journal on {self.path!r} (got {mode!r})")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
        except sqlite3.DatabaseError as exc:
            raise ParameterError(f"{self.path!r} is not a usable SQLite database: {exc}") from None
        except (OSError, sqlite3.Error) as exc:
            raise ParameterError(f"cannot open database {self.path!r}: {exc}") from None
        return conn

    def _setup(self, schema: str) -> None:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT "
                             "NOT NULL)")  # fmt: skip
                row = conn.execute("SELECT value FROM meta WHERE key = 'role'").fetchone()
                if row is None:
                    conn.execute("INSERT INTO meta VALUES ('role', ?), ('schema_version', ?), "
                                 "('created_at', ?)", (self.role, self.SCHEMA_VERSION, utc_now()))
                elif row[0] != self.role:
                    raise ParameterError(
                        f"{self.path!r} is a privad {row[0]} database, not a {self.role} one; "
                        "give each server its own --db file"
                    )
                for statement in schema.split(";"):  # executescript would COMMIT early
                    if statement.strip():
                        conn.execute(statement)
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise ParameterError(f"{self.path!r} is not a usable SQLite database: {exc}") from None

    def write(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn(conn)`` in a write transaction; return its result once committed.

        If ``fn`` raises, its changes are rolled back (others in the same batch are not)
        and the exception is raised here. Blocks until the commit is on disk.
        """
        if threading.current_thread() is self._writer:
            raise RuntimeError("SQLiteStore.write called from inside a write")
        if self._closed:
            raise ServiceError(f"the store {self.path!r} is closed", status_code=503)
        done: Future[Any] = Future()
        self._queue.put((fn, done))
        return done.result()

    def _write_loop(self) -> None:
        conn = self._conn
        while True:
            item = self._queue.get()
            if item is None:
                break
            batch = [item]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._commit_batch(conn, batch)
            if stop:
                break
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    @staticmethod
    def _commit_batch(conn: sqlite3.Connection, batch: list[tuple[Any, Future[Any]]]) -> None:
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for fn, done in batch:
                if not done.set_running_or_notify_cancel():
                    continue
                conn.execute("SAVEPOINT request")
                try:
                    result = fn(conn)
                except BaseException as exc:  # handed to the caller
                    conn.execute("ROLLBACK TO request")
                    conn.execute("RELEASE request")
                    outcomes.append((done, None, exc))
                else:
                    conn.execute("RELEASE request")
                    outcomes.append((done, result, None))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            failed = ServiceError(f"the database write failed, nothing was stored: {exc}",
                                  status_code=503)  # fmt: skip
            for _fn, done in batch:
                if not done.done():
                    if not done.running():  # not reached before the failure
                        done.set_running_or_notify_cancel()
                    done.set_exception(failed)
            return
        for done, result, exc in outcomes:
            if exc is None:
                done.set_result(result)
            else:
                done.set_exception(exc)

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent read of committed data (``BEGIN`` ... ``COMMIT``)."""
        with self._read_lock:
            conn = self._read
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("COMMIT")

    def close(self) -> None:
        """Finish the writes already submitted, then close (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join(30)
        with self._read_lock, contextlib.suppress(sqlite3.Error):
            self._read.close()


# --------------------------------------------------------------------------------------------
# App factory and middleware
# --------------------------------------------------------------------------------------------


class BodyLimitMiddleware:
    """ASGI middleware: buffer the request body, 413 above ``max_bytes``, record it.

    The body is read completely (never more than ``max_bytes + 1`` bytes are kept) before
    the app sees it, then replayed to the app; ``recorder("request", "METHOD PATH", body)``
    is called for every request that passes the limit.
    """

    def __init__(self, app: Any, max_bytes: int, recorder: Recorder | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.recorder = recorder

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]],
                       send: Callable[[dict], Awaitable[None]]) -> None:  # fmt: skip
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = False
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = False
        chunks: list[bytes] = []
        size = 0
        if not too_big:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    too_big = True
                    break
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if too_big:
            response = error_response(
                413, "body_too_large",
                f"the request body exceeds the limit of {self.max_bytes} bytes; send smaller "
                "windows or raise the server's --max-body-bytes",
                headers={"connection": "close"},
            )
            await response(scope, receive, send)
            return
        body = b"".join(chunks)
        if self.recorder is not None:
            self.recorder("request", f"{scope['method']} {scope['path']}", body)
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def create_app(
    *,
    title: str,
    role: str,
    routes: Callable[[FastAPI], None],
    tokens: TokenRegistry,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    recorder: Recorder | None = None,
    on_shutdown: Sequence[Callable[[], None]] = (),
    state: Mapping[str, Any] | None = None,
) -> FastAPI:
    """A FastAPI app with privad's error handlers, body limit, tokens and ``GET /v1/health``.

    ``routes(app)`` adds the server's own endpoints; ``state`` entries become
    ``app.state.<key>``; ``on_shutdown`` callables run when the server stops (close stores
    and clients there).
    """
    if not isinstance(max_body_bytes, int) or max_body_bytes < 1024:
        raise ParameterError(f"max_body_bytes must be an integer >= 1024, got {max_body_bytes!r}")

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        yield
        for fn in on_shutdown:
            with contextlib.suppress(Exception):
                fn()

    app = FastAPI(title=title, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url="/v1/openapi.json")  # fmt: skip
    app.state.tokens = tokens
    app.state.role = role
    for key, value in (state or {}).items():
        setattr(app.state, key, value)

    @app.exception_handler(PrivadError)
    async def _privad_error(_request: Request, exc: PrivadError) -> JSONResponse:
        status, code = _status_of(exc)
        headers = {"www-authenticate": "Bearer"} if status == 401 else None
        return error_response(status, code, str(exc), headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("path", "query"))
            parts.append(f"{where}: {err.get('msg', 'invalid')}")
        return error_response(422, "invalid_parameter", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error")
        return error_response(500, "internal_error",
                              f"internal error ({type(exc).__name__}); nothing was acknowledged")

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        """Liveness: the server's role (no token needed)."""
        return {"status": "ok", "role": role}

    routes(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes, recorder=recorder)
    return app


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ParameterError(f"cannot resolve --host {host!r}: {exc}") from None
    family, kind, proto, _, addr = infos[0]
    # proto must be IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted connections only then
    # (without it, Nagle's algorithm holds each response body for the client's delayed ACK)
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ParameterError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket, scheme: str) -> str:
    host, port = sock.getsockname()[:2]
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def _uvicorn_config(app: FastAPI, log_level: str, ssl_certfile: str | None,
                    ssl_keyfile: str | None) -> Any:  # fmt: skip
    import uvicorn

    return uvicorn.Config(
        app,
        log_level=log_level,
        access_log=log_level in ("debug", "info", "trace"),
        server_header=False,
        proxy_headers=False,
        lifespan="on",
        timeout_graceful_shutdown=10,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )


def run_service(
    app: FastAPI,
    *,
    name: str,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve ``app`` with uvicorn until SIGINT/SIGTERM (graceful: requests in flight finish).

    Binds first (``port`` 0 picks a free port), then calls ``announce("NAME listening on
    URL")`` so that scripts can read the address, then serves.
    """
    import uvicorn

    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise ParameterError("--ssl-certfile and --ssl-keyfile go together")
    sock = bind_socket(host, port)
    url = _url(sock, "https" if ssl_certfile else "http")
    if ssl_certfile is None and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("%s listens on %s without TLS: tokens and data cross the network in "
                    "clear; use --ssl-certfile/--ssl-keyfile or a TLS proxy", name, url)
    announce(f"{name} listening on {url}")
    server = uvicorn.Server(_uvicorn_config(app, log_level, ssl_certfile, ssl_keyfile))
    server.run(sockets=[sock])


class ThreadedServer:
    """A uvicorn server in a background thread on 127.0.0.1 (tests and benchmarks).

    ``with ThreadedServer(app) as srv: httpx.get(srv.url + "/v1/health")``; :meth:`stop`
    sets ``should_exit`` and joins the thread (requests in flight finish first).
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0,
                 log_level: str = "warning") -> None:  # fmt: skip
        import uvicorn

        self._sock = bind_socket(host, port)
        self.url = _url(self._sock, "http")
        self.server = uvicorn.Server(_uvicorn_config(app, log_level, None, None))
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True,
            name=f"uvicorn-{self.url}",
        )

    def start(self, timeout: float = 10.0) -> ThreadedServer:
        """Start and wait until the server accepts requests."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.01)
        return self

    def request_stop(self) -> None:
        """Ask the server to exit (returns at once; :meth:`stop` waits)."""
        self.server.should_exit = True

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to exit and wait for its thread."""
        self.request_stop()
        self._thread.join(timeout)
        with contextlib.suppress(OSError):
            self._sock.close()

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
