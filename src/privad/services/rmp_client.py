"""Clients of the RMP mining server (``privad serve rmp``, :mod:`privad.services.rmp`).

* :class:`RMPClient`: one method per endpoint (JSON, ``Authorization: Bearer``, bounded
  retries of transient failures). Public endpoints (configuration, open registration) work
  without a token. Registration is safe to retry: the client makes the participant's
  secret and sends only its SHA-256 digest. Uploads are safe to retry: the server
  acknowledges a batch identical to one the participant already stored without storing it
  twice.
* :func:`upload_records`: a participant's side. Records (rows) are perturbed locally by a
  :class:`privad.rmp.roles.Participant` (double logistic, then its private T_i) and sent in
  batches; only Z_i = T_i Y_i leaves the process, never T_i or the records.
* :func:`read_token_file`, :func:`write_private`: the participant's saved token and key
  files (written atomically with mode 0600).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.io import atomic_write
from privad.services.clients import ServiceClient
from privad.services.errors import UpstreamError
from privad.services.rmp_store import RMPConfig, t_digest
from privad.validation import check_int

__all__ = [
    "RMPClient",
    "ServerConfig",
    "UploadReport",
    "new_participant_secret",
    "read_token_file",
    "upload_records",
    "write_private",
]


@dataclass(frozen=True, eq=False)
class ServerConfig(RMPConfig):
    """A mining server's public configuration, checked (``GET /v1/config``): its
    :class:`~privad.services.rmp_store.RMPConfig` (n, w, α, β, T) with the most records a
    batch may hold and T's SHA-256 digest.

    Examples
    --------
    >>> import numpy as np
    >>> T = np.full((2, 3), 0.5)
    >>> remote = ServerConfig(3, 2, 0.3, 2.0, T, "", max_batch=30, t_sha256=t_digest(T))
    >>> (remote.n, remote.w, remote.r, remote.max_batch)
    (3, 2, 1, 30)
    """

    max_batch: int
    t_sha256: str

    @property
    def config(self) -> RMPConfig:
        """The configuration itself, as an :class:`~privad.services.rmp_store.RMPConfig`."""
        return self


class RMPClient(ServiceClient):
    """The mining server's endpoints, one method each.

    Parameters
    ----------
    token:
        A participant's, end-user's or the operator's secret; None for the public endpoints
        (configuration, open registration). :meth:`register` sets the new token.
    base_url, timeout, retries, verify, recorder, transport:
        As for :class:`privad.services.clients.ServiceClient`.
    """

    what = "mining server"

    def __init__(self, base_url: str, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_url, token if token else "none", **kwargs)
        if not token:
            del self._client.headers["authorization"]

    def __enter__(self) -> RMPClient:
        return self

    def set_token(self, token: str | None) -> None:
        """Send ``token`` from now on (None: no token)."""
        if token:
            self._client.headers["authorization"] = f"Bearer {token.strip()}"
        else:
            self._client.headers.pop("authorization", None)

    # -- public -------------------------------------------------------------------------------

    def config(self) -> ServerConfig:
        """``GET /v1/config``: n, w, α, β, T and the batch limit, checked (T's digest must
        match T, so a garbled answer is never used to perturb)."""
        data = self.request("GET", "/v1/config")[1]
        try:
            n, w = int(data["n"]), int(data["w"])
            T = np.array(data["T"], dtype=np.float64)
            if T.shape != (w, n) or not np.isfinite(T).all():
                raise ValueError(f"T has shape {T.shape}, expected {(w, n)}")
            alpha, beta = float(data["alpha"]), float(data["beta"])
            digest = str(data["t_sha256"])
            if digest != t_digest(T):
                raise ValueError("T does not match its SHA-256 digest")
            return ServerConfig(
                n,
                w,
                alpha,
                beta,
                T,
                str(data.get("created_at", "")),
                max_batch=check_int(data["max_batch"], "max_batch", minimum=1),
                t_sha256=digest,
            )
        except (KeyError, TypeError, ValueError, ParameterError) as exc:
            raise UpstreamError(
                f"the mining server at {self.base_url} sent a malformed configuration: {exc}"
            ) from None

    def register(
        self,
        name: str | None = None,
        *,
        registration_token: str | None = None,
        secret: str | None = None,
    ) -> tuple[str, str]:
        """``POST /v1/participants``: (participant name, token); the token is used from now
        on.

        The token is made here (``secret``, or a new one from :mod:`secrets`) and only its
        SHA-256 digest is sent, so a registration whose answer was lost can be repeated with
        the same ``secret`` and ``name``: the server answers with the same participant.
        ``registration_token``: the server's --registration-token, if it has one.
        """
        if secret is None:
            secret = new_participant_secret()
        self.set_token(registration_token)
        body: dict[str, Any] = {"token_sha256": hashlib.sha256(secret.encode()).hexdigest()}
        if name is not None:
            body["name"] = name
        data = self.request("POST", "/v1/participants", body)[1]
        try:
            participant = str(data["participant"])
        except (KeyError, TypeError) as exc:
            raise UpstreamError(
                f"the mining server answered a registration without {exc}"
            ) from None
        self.set_token(secret)
        return participant, secret

    # -- participant --------------------------------------------------------------------------

    def upload(self, Z: np.ndarray) -> dict[str, Any]:
        """``POST /v1/batches`` with one w × m batch; the server's answer (``batch``,
        ``status``: ``stored`` or ``duplicate``)."""
        Z = np.asarray(Z, dtype=np.float64)
        return self.request("POST", "/v1/batches", {"z": Z.tolist()})[1]

    def batches(self) -> dict[str, Any]:
        """``GET /v1/batches``: this participant's batches (numbers, sizes) and records."""
        return self.request("GET", "/v1/batches")[1]

    def batch(self, number: int) -> dict[str, Any]:
        """``GET /v1/batches/{k}``: one of this participant's batches with its z."""
        return self.request("GET", f"/v1/batches/{int(number)}")[1]

    # -- operator -----------------------------------------------------------------------------

    def train(
        self, *, epochs: int | None = None, hidden: int | None = None, seed: int | None = None
    ) -> dict[str, Any]:
        """``POST /v1/train``: start a training job on the stored batches; the job."""
        body = {
            k: v
            for k, v in (("epochs", epochs), ("hidden", hidden), ("seed", seed))
            if v is not None
        }
        return self.request("POST", "/v1/train", body)[1]

    def job(self, job: int) -> dict[str, Any]:
        """``GET /v1/jobs/{id}``: a training job's status (and progress while running)."""
        return self.request("GET", f"/v1/jobs/{int(job)}")[1]

    def wait(
        self,
        job: int,
        *,
        poll: float = 0.2,
        timeout: float | None = None,
        on_poll: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Poll a job until it is no longer running; its final state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self.job(job)
            if on_poll is not None:
                on_poll(state)
            if state.get("status") != "running":
                return state
            if deadline is not None and time.monotonic() > deadline:
                raise UpstreamError(
                    f"training job {job} is still running after {timeout:g} s "
                    f"(follow it with GET /v1/jobs/{job})"
                )
            time.sleep(poll)

    def status(self) -> dict[str, Any]:
        """``GET /v1/status``: counts, the running job, the latest model (operator)."""
        return self.request("GET", "/v1/status")[1]

    # -- models -------------------------------------------------------------------------------

    def models(self) -> list[dict[str, Any]]:
        """``GET /v1/models``: every trained model's metadata, newest first."""
        return self.request("GET", "/v1/models")[1]["models"]

    def model_bytes(self, ref: str | int = "latest") -> tuple[dict[str, Any], bytes]:
        """``GET /v1/models/{ref}``: (metadata, NPZ bytes), the bytes checked against the
        SHA-256 digest the server stored with the model."""
        data = self.request("GET", f"/v1/models/{ref}")[1]
        try:
            npz = base64.b64decode(data.pop("npz_base64"), validate=True)
            digest = data["sha256"]
        except (KeyError, TypeError, ValueError) as exc:
            raise UpstreamError(f"the mining server sent a malformed model: {exc}") from None
        if hashlib.sha256(npz).hexdigest() != digest:
            raise UpstreamError(
                "the model downloaded from the mining server does not match its SHA-256 digest"
            )
        return data, npz

    def model(self, ref: str | int = "latest") -> tuple[dict[str, Any], Any]:
        """(metadata, :class:`privad.rmp.model.RMPModel`) of a trained model."""
        from privad.rmp.model import RMPModel

        meta, npz = self.model_bytes(ref)
        try:
            return meta, RMPModel.from_bytes(npz)
        except DataError as exc:
            raise UpstreamError(f"the mining server sent an invalid model: {exc}") from None


def new_participant_secret() -> str:
    """A new participant token from the OS CSPRNG (:mod:`secrets`), 43 URL-safe characters."""
    return secrets.token_urlsafe(32)


# --------------------------------------------------------------------------------------------
# The participant's side
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UploadReport:
    """What :func:`upload_records` did: batches sent, new and already stored, records."""

    batches: int
    stored: int
    duplicates: int
    records: int
    numbers: tuple[int, ...]


def upload_records(
    client: RMPClient,
    participant: Any,
    X_rows: np.ndarray,
    *,
    batch_size: int = 30,
    on_batch: Callable[[dict[str, Any], int], None] | None = None,
) -> UploadReport:
    """Perturb ``X_rows`` (m × n) with ``participant`` and upload it in batches.

    ``participant`` is a :class:`privad.rmp.roles.Participant` (its ``batches`` yields the
    w × ≤batch_size perturbed blocks; its T_i never leaves it). ``on_batch(answer, m)``
    is called after each acknowledged batch.
    """
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    stored = duplicates = records = 0
    numbers: list[int] = []
    for Z in participant.batches(X_rows, batch_size=batch_size):
        answer = client.upload(Z)
        m = int(Z.shape[1])
        records += m
        numbers.append(int(answer.get("batch", 0)))
        if answer.get("status") == "duplicate":
            duplicates += 1
        else:
            stored += 1
        if on_batch is not None:
            on_batch(answer, m)
    return UploadReport(len(numbers), stored, duplicates, records, tuple(numbers))


# --------------------------------------------------------------------------------------------
# Private files: the participant's token and key
# --------------------------------------------------------------------------------------------


def write_private(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically with mode 0600 (owner read/write only)."""
    target = Path(path).expanduser()
    try:
        with atomic_write(target, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise ParameterError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
    return target


def read_token_file(path: str | Path) -> dict[str, Any]:
    """A token file: ``{"token": ..., "participant": ..., "server": ...}`` as written by
    ``privad rmp participate``, or a file holding only the secret."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ParameterError(f"cannot read token file {str(p)!r}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError:
        data = {"token": text}
    secret = data.get("token") if isinstance(data, dict) else None
    if not isinstance(secret, str) or not secret.strip() or len(secret.split()) != 1:
        raise ParameterError(
            f"token file {str(p)!r} holds no token (a JSON object with "
            "'token', or the secret alone)"
        )
    data["token"] = secret.strip()
    return data
