"""Token authentication of privad's services.

``Authorization: Bearer SECRET``. A :class:`TokenRegistry` maps secrets to a *principal*
(a name and a role, e.g. sensor ``s1`` or the peer ``analyst``); :func:`require_role` is the
FastAPI dependency that checks it (401 without a token or with an unknown one, 403 for a
valid token of the wrong role). A sensor's identity is its token's name: a sensor can only
ever read or append its own records. :func:`check_name` is the one rule for every name a
service accepts (sensor, token, participant, querier).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Request

from privad.errors import ParameterError
from privad.services.errors import ServiceError

__all__ = [
    "MIN_SECRET_LENGTH",
    "SENSOR_ROLE",
    "Forbidden",
    "Principal",
    "TokenRegistry",
    "check_name",
    "load_token_file",
    "parse_token_spec",
    "require_role",
]

SENSOR_ROLE = "sensor"
"""The role of a token read from ``--tokens``/``--token``: one sensor, named by the token."""

MIN_SECRET_LENGTH = 16

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""The one rule for every name a service accepts (matched whole: no trailing newline)."""


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
    if (
        not isinstance(secret, str)
        or len(secret) < MIN_SECRET_LENGTH
        or any(c.isspace() for c in secret)
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
            self._add(
                Principal(name, SENSOR_ROLE), _check_secret(secret, f"the secret of token {name!r}")
            )
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


class Forbidden(ServiceError):
    """A valid token of another role, or a console form without its session's CSRF token
    (403)."""

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
            raise Forbidden(
                f"a {principal.role} token may not use this endpoint (it is for: "
                f"{', '.join(roles)})"
            )
        return principal

    return dependency
