"""HTTP clients of privad's servers: one JSON client, and one class per server.

* :class:`ServiceClient`: JSON bodies, ``Authorization: Bearer`` token, bounded retries of
  transient failures. Every upload is idempotent on the server (an identical repeat is
  acknowledged again, a different one is refused with 409), so retrying after a lost
  answer is safe.
* :class:`AnalystClient`, :class:`CorrectionClient`: the relaxed-DP analyst and correction
  server, one method per endpoint. The sensor that drives them is
  :class:`privad.services.sensor_client.SensorUploader`.
* :class:`OracleClient`: the noisy group oracle of the DP noisy binary search
  (``privad serve oracle``); :class:`privad.services.remote_oracle.RemoteOracle` wraps it
  as a :class:`privad.search.Oracle`, so :func:`privad.search.search` runs against the
  server.
* :class:`CuratorClient`: the sensitive-privacy curator (``privad serve sp``).
"""

from __future__ import annotations

import hashlib
import math
import socket
import ssl
import time
from collections.abc import Sequence
from typing import Any, Self

import httpx
import numpy as np

from privad.errors import BudgetExceededError, DataError, ParameterError
from privad.relaxed.messages import (
    AnalystToCorrection,
    AnalystToCorrection2,
    CorrectionToAnalyst,
    CorrectionToAnalyst2,
    SensorToAnalyst,
    SensorToCorrection,
)
from privad.services.bodies import Recorder, dumps
from privad.services.errors import Conflict, NotFound, ServiceError, UpstreamError

__all__ = [
    "AnalystClient",
    "CorrectionClient",
    "CuratorClient",
    "OracleClient",
    "ServiceClient",
]

_RETRY_STATUS = {502, 503, 504}

SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
"""TCP_NODELAY: httpx writes a request's headers and body separately; with Nagle's
algorithm the body then waits for the server's delayed ACK (about 40 ms per request)."""


class ClosesOnExit:
    """``with client:`` closes the client's connections on the way out."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ServiceClient(ClosesOnExit):
    """A JSON client of one privad service.

    Parameters
    ----------
    base_url:
        ``http://host:port`` (or ``https://``).
    token:
        The bearer secret sent with every request.
    what:
        The service's name in error messages (``"analyst"``, ``"correction server"``).
    timeout:
        Seconds per request (closing a window runs detection: allow for it).
    retries:
        Extra attempts after a connection failure or a 502/503/504 (backoff 0.2 s, 0.4 s,
        ...). Requests are idempotent on the server, so a retry never stores twice.
    verify:
        TLS verification for ``https``: True, False, or a CA bundle path.
    recorder:
        Optional ``recorder("response", "METHOD PATH", body)`` for every answer received.
    transport:
        An httpx transport (tests).
    """

    what = "service"

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        verify: bool | str = True,
        recorder: Recorder | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = str(base_url).strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ParameterError(
                f"the {self.what} URL must start with http:// or https://, got {base_url!r}"
            )
        if not isinstance(token, str) or not token.strip():
            raise ParameterError(f"a token for the {self.what} is required")
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
            raise ParameterError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        self.base_url = url
        # names the token in a sensor journal's destination without revealing it
        self.token_fingerprint = hashlib.sha256(token.strip().encode()).hexdigest()[:12]
        self.retries = max(0, int(retries))
        self.recorder = recorder
        if isinstance(verify, str):  # a CA bundle: httpx wants an SSL context for it
            try:
                verify = ssl.create_default_context(cafile=verify)  # type: ignore[assignment]
            except (OSError, ssl.SSLError) as exc:
                raise ParameterError(f"cannot load CA bundle {verify!r}: {exc}") from None
        if transport is None:
            transport = httpx.HTTPTransport(verify=verify, socket_options=SOCKET_OPTIONS)
        self._client = httpx.Client(
            base_url=url,
            headers={
                "authorization": f"Bearer {token.strip()}",
                "content-type": "application/json",
            },
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def request(
        self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None
    ) -> tuple[int, Any]:
        """Send one request; return (status, decoded JSON) for 2xx, raise otherwise.

        4xx/5xx raise :class:`~privad.services.errors.ServiceError` (404:
        :class:`NotFound`, 409: :class:`Conflict`) whose ``status_code`` is the server's and
        whose message is the server's ``detail``; 429 (a privacy budget is spent) raises
        :class:`~privad.errors.BudgetExceededError`; a server that cannot be reached raises
        :class:`UpstreamError`.
        """
        content = None if body is None else dumps(body)
        attempt = 0
        while True:
            try:
                response = self._client.request(method, path, content=content, params=params)
            except httpx.TransportError as exc:
                if attempt < self.retries:
                    attempt += 1
                    time.sleep(0.2 * 2 ** (attempt - 1))
                    continue
                raise UpstreamError(
                    f"cannot reach the {self.what} at {self.base_url}: {exc or type(exc).__name__}"
                ) from None
            if response.status_code in _RETRY_STATUS and attempt < self.retries:
                attempt += 1
                time.sleep(0.2 * 2 ** (attempt - 1))
                continue
            break
        if self.recorder is not None:
            self.recorder("response", f"{method} {path}", response.content)
        try:
            data = response.json() if response.content else None
        except ValueError:
            data = None
        if response.is_success:
            return response.status_code, data
        detail = data.get("detail") if isinstance(data, dict) else None
        detail = detail or response.text[:200] or response.reason_phrase
        message = f"the {self.what} refused {method} {path} ({response.status_code}): {detail}"
        if response.status_code == 429:  # a privacy budget is spent: nothing was answered
            raise BudgetExceededError(message)
        cls: type[ServiceError] = {404: NotFound, 409: Conflict}.get(
            response.status_code, ServiceError
        )
        err = cls(message, status_code=response.status_code)
        err.detail = str(detail)  # type: ignore[attr-defined]
        raise err

    def health(self) -> dict[str, Any]:
        """``GET /v1/health``: ``{"status": "ok", "role": ...}``."""
        return self.request("GET", "/v1/health")[1]

    def windows(self) -> list[dict[str, Any]]:
        """``GET /v1/windows``: this token's windows and their status (checks the token)."""
        return self.request("GET", "/v1/windows")[1]["windows"]


class AnalystClient(ServiceClient):
    """The analyst A's endpoints, as a sensor calls them."""

    what = "analyst"

    def put_records(self, window: int, message: SensorToAnalyst) -> bool:
        """``PUT /v1/windows/{w}/records`` with 𝒯'; True if stored now, False if an
        identical copy was already stored."""
        status, _ = self.request("PUT", f"/v1/windows/{int(window)}/records", message.to_dict())
        return status == 201

    def close_window(self, window: int) -> dict[str, Any]:
        """``POST /v1/windows/{w}/close``: run detection and correction; the result."""
        return self.request("POST", f"/v1/windows/{int(window)}/close", {})[1]

    def outliers(self, window: int) -> dict[str, Any]:
        """``GET /v1/windows/{w}/outliers``: the corrected outliers of a closed window."""
        return self.request("GET", f"/v1/windows/{int(window)}/outliers")[1]


class CorrectionClient(ServiceClient):
    """The correction server CS's endpoints (the sensor's upload; the analyst's steps 3–5)."""

    what = "correction server"

    def put_differences(self, window: int, message: SensorToCorrection) -> bool:
        """``PUT /v1/windows/{w}/differences`` with indices and d_diff (sensor token)."""
        status, _ = self.request("PUT", f"/v1/windows/{int(window)}/differences", message.to_dict())
        return status == 201

    def presumed_outliers(
        self, sensor: str, window: int, message: AnalystToCorrection, n: int
    ) -> CorrectionToAnalyst:
        """Step 3 (analyst token): send O', receive d_TP and w_O."""
        _, data = self.request(
            "POST",
            f"/v1/sensors/{sensor}/windows/{int(window)}/presumed-outliers",
            message.to_dict(),
            params={"n": int(n)},
        )
        return _expect_message(CorrectionToAnalyst, data, self.what)

    def layers(
        self, sensor: str, window: int, message: AnalystToCorrection2
    ) -> CorrectionToAnalyst2:
        """Steps 4–5 (analyst token): send I_L2 and I_L3, receive the corrected outliers."""
        _, data = self.request(
            "POST", f"/v1/sensors/{sensor}/windows/{int(window)}/layers", message.to_dict()
        )
        return _expect_message(CorrectionToAnalyst2, data, self.what)


def _expect_message(cls: Any, data: Any, what: str) -> Any:
    try:
        return cls.from_dict(data)
    except (DataError, ParameterError, TypeError) as exc:
        raise UpstreamError(f"the {what} answered with a malformed {cls.__name__}: {exc}") from None


class OracleClient(ServiceClient):
    """The oracle server's endpoints (:mod:`privad.services.oracle`), one method each.

    A refused query because the oracle's budget is spent (429) raises
    :class:`~privad.errors.BudgetExceededError` with the server's message.
    """

    what = "oracle"

    def model(self) -> dict[str, Any]:
        """``GET /v1/model``: n_items, kind, ε, thresholds, answer model, guarantee, budget."""
        return self.request("GET", "/v1/model")[1]

    def budget(self) -> dict[str, Any]:
        """``GET /v1/budget``: total, spent, remaining ε and queries left."""
        return self.request("GET", "/v1/budget")[1]

    def store_order(self, permutation: Sequence[int] | np.ndarray) -> str:
        """``POST /v1/orders``: store a query order (a permutation of 0..n-1); its id."""
        perm = np.asarray(permutation, dtype=np.int64).tolist()
        return str(self.request("POST", "/v1/orders", {"permutation": perm})[1]["order"])

    def query_indices(self, indices: Sequence[int] | np.ndarray) -> dict[str, Any]:
        """``POST /v1/query`` with Q as item indices: the answer and the budget after it."""
        idx = np.asarray(indices, dtype=np.int64).tolist()
        return self.request("POST", "/v1/query", {"indices": idx})[1]

    def query_prefix(self, order: str, size: int, complement: bool = False) -> dict[str, Any]:
        """``POST /v1/query`` with Q = the first ``size`` items of a stored order."""
        body = {"order": order, "size": int(size), "complement": bool(complement)}
        return self.request("POST", "/v1/query", body)[1]


class CuratorClient(ServiceClient):
    """The sensitive-privacy curator's endpoints (:mod:`privad.services.curator`).

    The querier's whole view: the public model, its own budget and noisy 0/1 answers. A
    request past the budget (429) raises :class:`~privad.errors.BudgetExceededError`.
    """

    what = "curator"

    def model(self) -> dict[str, Any]:
        """``GET /v1/model``: the mechanism's public parameters, n_records, n_features."""
        return self.request("GET", "/v1/model")[1]

    def budget(self) -> dict[str, Any]:
        """``GET /v1/budget``: this querier's total, spent and remaining ε."""
        return self.request("GET", "/v1/budget")[1]

    def ask_ids(self, ids: Sequence[int] | np.ndarray) -> dict[str, Any]:
        """``POST /v1/ask`` about records of the data: answers, charge, budget."""
        return self.request("POST", "/v1/ask", {"ids": np.asarray(ids, np.int64).tolist()})[1]

    def ask_records(self, records: Any, *, add_query_to_data: bool = False) -> dict[str, Any]:
        """``POST /v1/ask`` about feature vectors (future queries): answers, charge, budget."""
        body = {
            "records": np.asarray(records, np.float64).tolist(),
            "add_query_to_data": bool(add_query_to_data),
        }
        return self.request("POST", "/v1/ask", body)[1]
