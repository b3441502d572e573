"""Errors of privad's services: one JSON error body, and the HTTP status of every error.

Every server answers an error with ``{"error": CODE, "detail": MESSAGE}``: malformed data
or parameters (:class:`~privad.errors.DataError`, :class:`~privad.errors.ParameterError`)
→ 422, a message out of protocol order (:class:`~privad.relaxed.ProtocolError`) or a
conflicting duplicate (:class:`Conflict`) → 409, :class:`NotFound` → 404, a failing peer
server (:class:`UpstreamError`) → 502, a missing or unknown token → 401, a valid token of
the wrong role → 403 (:mod:`privad.services.auth`), a body too large or nested too deep →
413 (:mod:`privad.services.bodies`). Handlers validate everything before writing, so a
refused request changes nothing. The clients raise the same classes with the server's
message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from fastapi.responses import JSONResponse

from privad.errors import DataError, ParameterError, PrivadError
from privad.relaxed.messages import ProtocolError

__all__ = [
    "Conflict",
    "NotFound",
    "ServiceError",
    "UpstreamError",
    "closed_on_error",
    "error_response",
    "status_of",
    "stored_response",
]


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


class _Closable(Protocol):
    def close(self) -> None: ...


@contextlib.contextmanager
def closed_on_error(resource: _Closable) -> Iterator[None]:
    """Close ``resource`` if the block raises (anything, an interrupt too), then re-raise;
    a block that succeeds leaves it open. A server opens its store or ledger, then builds
    the rest of its state inside this block, so a failed start holds no file open.

    Examples
    --------
    >>> import io
    >>> handle = io.StringIO()
    >>> try:
    ...     with closed_on_error(handle):
    ...         raise ValueError("bad option")
    ... except ValueError:
    ...     pass
    >>> handle.closed
    True
    """
    try:
        yield
    except BaseException:
        resource.close()
        raise


def status_of(exc: PrivadError) -> tuple[int, str]:
    """(HTTP status, error code) of an error a handler raised."""
    if isinstance(exc, ServiceError):
        return exc.status_code, exc.code
    if isinstance(exc, ProtocolError):
        return 409, "protocol_error"
    if isinstance(exc, DataError):
        return 422, "invalid_data"
    if isinstance(exc, ParameterError):
        return 422, "invalid_parameter"
    return 400, "bad_request"


def error_response(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The one error body every privad service answers with."""
    return JSONResponse(
        {"error": code, "detail": detail}, status_code=status, headers=dict(headers or {})
    )


def stored_response(body: Mapping[str, Any], stored: bool) -> JSONResponse:
    """The answer to an idempotent upload: ``body`` with ``"status": "stored"`` and 201 when
    it was stored now, ``"duplicate"`` and 200 for a copy of what was stored before."""
    return JSONResponse(
        {**body, "status": "stored" if stored else "duplicate"}, status_code=201 if stored else 200
    )
