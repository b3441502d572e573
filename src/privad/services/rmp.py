"""The RMP mining server S (Erfani et al., PAKDD 2014, sections 3–4) over HTTP.

Participants perturb their records locally (double logistic, then their private
T_i = T + Δ_i) and upload only Z_i = T_i Y_i, in batches; the server pools what it received
(Z_all), trains the auto-associative network (:class:`privad.rmp.roles.MiningServer`,
:func:`privad.rmp.model.fit_model`) and hands
the model out to end-users, who apply the double logistic and the public T to their own
records (:meth:`privad.rmp.model.RMPModel.decision_function`). See docs/rmp_service.md.

The server draws the public T (w × n, U(0, 1), :func:`privad.rmp.public_matrix`) when its
``--db`` file is new and stores it with n, w, α and β; it never changes afterwards (every
participant's T_i is built on it): a restart keeps it and refuses a conflicting n, w, α or β
(:mod:`privad.services.rmp_store` holds the configuration and the SQLite file).

Roles (``Authorization: Bearer SECRET``):

participant
    Registered with ``POST /v1/participants``. The client makes its secret and sends only
    its SHA-256 digest (``token_sha256``), so registration is safe to retry: the same
    request again answers 200 with the same participant; another digest for a taken name is
    409. Without ``token_sha256`` the server makes the token and returns it once (such a
    request cannot be retried). Only digests are stored. Uploads batches, reads its own
    batches, downloads models.
user
    An end-user token of ``--tokens``/``--token`` (NAME=SECRET, as for the other servers):
    downloads models.
operator
    ``--operator-token``: triggers training, sees jobs, participants and counts (never the
    participants' tokens); downloads models.
registrar
    ``--registration-token`` (optional): when set, registering a participant needs it (or
    the operator's); without it registration is open to anyone who reaches the server.

Endpoints:

=======  ===========================  =========================================  ============
method   path                         what                                       who
=======  ===========================  =========================================  ============
GET      /v1/health                   liveness and role                          anyone
GET      /v1/config                   n, w, r, α, β, T, max batch, T's digest    anyone
POST     /v1/participants             register: ``{"name": NAME, "token_sha256":  anyone or
                                      HEX}`` (both optional); 201, or 200 for a  registrar
                                      repeat (same digest), 409 for a name
                                      held by another digest
GET      /v1/participants             participants with batch and record counts  operator
POST     /v1/batches                  ``{"z": [[...] × m] × w}``: store a batch  participant
                                      (201; 200 if identical to a stored one)
GET      /v1/batches                  this participant's batches (no data)       participant
GET      /v1/batches/{k}              this participant's batch k with z          participant
POST     /v1/train                    train on all stored batches (202, a job);  operator
                                      body ``{"epochs", "hidden", "seed"}``
                                      optional
GET      /v1/jobs, /v1/jobs/{id}      training jobs and their status             operator
GET      /v1/status                   counts, latest model, running job          operator
GET      /v1/models                   the trained models (metadata)              user,
                                                                                 participant,
                                                                                 operator
GET      /v1/models/{id|latest}       a model's metadata and its NPZ (base64)    same
GET      /v1/models/{id|latest}/npz   the model as NPZ bytes                     same
=======  ===========================  =========================================  ============

Batches are append-only. A participant's batches are numbered 1, 2, ... per participant
(the numbers say nothing about other participants); a participant can list and read only
its own, another's batch number is simply unknown (404, never 403, so nothing leaks), and
no endpoint updates or deletes a batch (SQLite triggers refuse it as well). A batch must be
exactly w × m, 1 <= m <= ``max_batch``, finite numbers within the range T_i Y_i can take
(|z| < n(1 + α), since |y| < 1 after the double logistic and every element of T_i lies in
(−α, 1 + α)); anything else gets a 4xx with a JSON error and nothing is stored. A batch
identical to one the participant already stored (a retry after a lost answer, or the same
data perturbed with the same T_i again) is acknowledged with its number and ``200`` and not
stored twice. Every acknowledged batch is committed to SQLite first (WAL,
synchronous=FULL), so it survives a crash.

Training runs in a worker thread (:mod:`privad.services.rmp_trainer`; the server keeps
answering) on a snapshot of the stored batches pooled into Z_all (w × m_total, in arrival
order); one job at a time (a second request gets 409, as does training with no batch). The
model (NPZ bytes, no pickle) is stored with its metadata (id, created, number of records,
batches and participants) before the job is marked done. Jobs are kept in SQLite; a job
cut short by a shutdown or crash is marked ``interrupted`` at the next start.
"""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
from fastapi import Depends, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from privad.errors import DataError
from privad.noise import RandomnessLike
from privad.rmp.aann import AANNTraining
from privad.services.app import create_app
from privad.services.auth import (
    SENSOR_ROLE,
    Principal,
    TokenRegistry,
    check_name,
    require_role,
)
from privad.services.bodies import (
    DEFAULT_MAX_BODY_BYTES,
    KIND_SCHEMAS,
    MAX_ID,
    Recorder,
    float_matrix,
    json_body,
    parse_json,
)
from privad.services.errors import Conflict, closed_on_error, stored_response
from privad.services.rmp_store import ROLE, RMPConfig, RMPStore, open_config, t_digest
from privad.services.rmp_trainer import DEFAULT_TRAINING, Trainer
from privad.validation import check_int

__all__ = [
    "DEFAULT_MAX_BATCH",
    "OPERATOR_ROLE",
    "PARTICIPANT_ROLE",
    "REGISTRAR_ROLE",
    "USER_ROLE",
    "RMPTokens",
    "create_rmp_app",
]

PARTICIPANT_ROLE: Final[str] = "participant"
USER_ROLE: Final[str] = "user"
OPERATOR_ROLE: Final[str] = "operator"
REGISTRAR_ROLE: Final[str] = "registrar"

DEFAULT_MAX_BATCH: Final[int] = 30
"""Records per batch the server accepts by default (the paper's participants send 30)."""

_MODEL_READERS = (PARTICIPANT_ROLE, USER_ROLE, OPERATOR_ROLE)


# --------------------------------------------------------------------------------------------
# Authentication: static tokens plus registered participants
# --------------------------------------------------------------------------------------------


class RMPTokens(TokenRegistry):
    """:class:`TokenRegistry` (end-users, operator, registrar) plus the participants
    registered in the store, looked up by the SHA-256 digest of their token."""

    def __init__(
        self, users: Sequence[tuple[str, str]], peers: dict[str, str], store: RMPStore
    ) -> None:
        super().__init__(users, peers)
        self.store = store

    def new_secret(self) -> tuple[str, bytes]:
        """A fresh participant token and its digest.

        Credentials come from :mod:`secrets` (the OS CSPRNG), not from :mod:`privad.noise`,
        whose generator is fast but not cryptographically secure.
        """
        while True:
            secret = secrets.token_urlsafe(32)
            if super().lookup(secret) is None:
                return secret, self._digest(secret)

    def check_new_digest(self, digest: bytes) -> None:
        """Refuse a participant token digest that belongs to a static token (409)."""
        if digest in self._by_digest:
            raise Conflict("this token is taken; make a new secret for a new participant")

    def lookup(self, secret: str) -> Principal | None:
        principal = super().lookup(secret)
        if principal is not None and principal.role == SENSOR_ROLE:
            return Principal(principal.name, USER_ROLE)
        if principal is not None:
            return principal
        name = self.store.participant_by_digest(self._digest(secret))
        return None if name is None else Principal(name, PARTICIPANT_ROLE)


# --------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------------
# The app
# --------------------------------------------------------------------------------------------


def _batch_matrix(body: Any, config: RMPConfig, max_batch: int) -> np.ndarray:
    """The z of an upload, checked: exactly w × m, 1 <= m <= max_batch, finite, in range."""
    if not isinstance(body, dict):
        raise DataError(
            'the body must be a JSON object {"z": [[...], ...]} (w rows of m '
            "numbers: records are columns)"
        )
    unknown = sorted(set(body) - {"z"})
    if unknown:
        raise DataError(f'unknown field(s) {unknown}; a batch is {{"z": [[...], ...]}}')
    if "z" not in body:
        raise DataError(
            "missing field 'z' (the perturbed batch Z_i = T_i Y_i, w rows of m numbers)"
        )
    Z = float_matrix(body["z"], "z")
    rows, m = Z.shape
    if rows != config.w:
        raise DataError(
            f"z has {rows} row(s); this server takes w = {config.w} rows (z is "
            f"w x m: each column is one perturbed record)"
        )
    if m > max_batch:
        raise DataError(
            f"z holds {m} records (columns); a batch holds at most {max_batch} "
            "(the server's --max-batch): split it"
        )
    top = float(np.max(np.abs(Z)))
    if not top < config.bound:
        raise DataError(
            f"z holds a value of magnitude {top:.6g}, impossible for T_i Y_i (|z| < "
            f"n(1 + alpha) = {config.bound:g}): apply the double logistic and T_i first"
        )
    return Z


_DIGEST_HEX = re.compile(r"[0-9a-f]{64}")


def _register_body(raw: bytes) -> tuple[str | None, bytes | None]:
    """(name or None, the token's SHA-256 digest or None) of a registration request."""
    body = parse_json(raw) if raw.strip() else {}
    if not isinstance(body, dict):
        raise DataError(
            'the body must be a JSON object, e.g. {"name": "clinic-7", '
            '"token_sha256": "<64 hex digits>"} or {}'
        )
    unknown = sorted(set(body) - {"name", "token_sha256"})
    if unknown:
        raise DataError(
            f"unknown field(s) {unknown}; registration takes an optional 'name' "
            "and an optional 'token_sha256'"
        )
    name = body.get("name")
    digest = body.get("token_sha256")
    if digest is not None and not (isinstance(digest, str) and _DIGEST_HEX.fullmatch(digest)):
        raise DataError("token_sha256 must be the SHA-256 of your token as 64 lowercase hex digits")
    return (
        None if name is None else check_name(name, "participant name"),
        None if digest is None else bytes.fromhex(digest),
    )


def create_rmp_app(
    db: str | Path,
    users: Sequence[tuple[str, str]],
    *,
    operator_token: str,
    registration_token: str | None = None,
    n: int | None = None,
    w: int | None = None,
    r: int | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    rng: RandomnessLike = None,
    training: AANNTraining = DEFAULT_TRAINING,
    max_batch: int = DEFAULT_MAX_BATCH,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    recorder: Recorder | None = None,
    notes: list[str] | None = None,
) -> FastAPI:
    """The mining server's FastAPI app.

    Parameters
    ----------
    db:
        SQLite file (created if missing; must be an RMP database if it exists).
    users:
        End-user tokens ``(name, secret)``: they may download models.
    operator_token:
        The operator's secret (training, jobs, participants, counts).
    registration_token:
        If given, registering a participant needs this secret (or the operator's);
        otherwise registration is open.
    n, w, r, alpha, beta, rng:
        The configuration of a new file (see :func:`open_config`); for an existing file
        they may be omitted and must agree with the stored one when given.
    training:
        How the AANN is trained (:class:`privad.rmp.aann.AANNTraining`; a train request
        may override its ``epochs`` and ``hidden``).
    max_batch:
        The most records (columns) one batch may hold.
    notes:
        If given, lines describing the configuration are appended (the CLI prints them).
    """
    max_batch = check_int(max_batch, "max_batch", minimum=1)
    peers = {OPERATOR_ROLE: operator_token}
    if registration_token is not None:
        peers[REGISTRAR_ROLE] = registration_token
    TokenRegistry(users, peers)  # validate the tokens before touching the database
    store = RMPStore(db)
    with closed_on_error(store):
        config, created = open_config(store, n=n, w=w, r=r, alpha=alpha, beta=beta, rng=rng)
        tokens = RMPTokens(users, peers, store)
        trainer = Trainer(store, config, training=training)
    if notes is not None:
        counts = store.counts()
        notes.append(
            f"{'created' if created else 'kept'} T ({config.w} x {config.n}, alpha = "
            f"{config.alpha:g}, beta = {config.beta:.4f}, sha256 {t_digest(config.T)[:16]}) in "
            f"{store.path}; {counts['participants']} participant(s), {counts['batches']} "
            f"batch(es), {counts['records']} record(s), {counts['models']} model(s)"
        )
        if registration_token is None:
            notes.append(
                "registration is open: anyone who reaches the server can register "
                "and upload (set --registration-token to restrict it)"
            )
    operator = Depends(require_role(OPERATOR_ROLE))
    participant = Depends(require_role(PARTICIPANT_ROLE))
    reader = Depends(require_role(*_MODEL_READERS))
    registrar_check = require_role(REGISTRAR_ROLE, OPERATOR_ROLE)

    def routes(app: FastAPI) -> None:
        @app.get("/v1/config")
        def get_config() -> dict[str, Any]:
            return config.describe(max_batch)

        @app.post(
            "/v1/participants",
            openapi_extra=json_body(
                {"name": {"type": "string"}, "token_sha256": {"type": "string"}}, optional_body=True
            ),
        )
        async def register(request: Request) -> JSONResponse:
            if registration_token is not None:
                registrar_check(request)
            raw = await request.body()
            name, digest = _register_body(raw)
            if digest is None:  # the server makes the secret: shown once, not retryable
                secret, digest = tokens.new_secret()
                answer = {
                    "participant": None,
                    "token": secret,
                    "note": "keep this token: it is shown only once (the server stores a digest)",
                }
            else:  # the client made it: the same request may be repeated
                tokens.check_new_digest(digest)
                answer = {"participant": None}
            answer["participant"], new = await run_in_threadpool(store.register, name, digest)
            return stored_response(answer, new)

        @app.get("/v1/participants")
        def list_participants(who: Principal = operator) -> dict[str, Any]:
            return {"participants": store.participants()}

        @app.post("/v1/batches", openapi_extra=json_body({"z": KIND_SCHEMAS["matrix"]}, ["z"]))
        async def upload(request: Request, who: Principal = participant) -> JSONResponse:
            raw = await request.body()

            def work() -> tuple[int, bool, int]:
                Z = _batch_matrix(parse_json(raw), config, max_batch)
                seq, stored = store.add_batch(who.name, Z)
                return seq, stored, int(Z.shape[1])

            seq, stored, m = await run_in_threadpool(work)
            return stored_response(
                {"participant": who.name, "batch": seq, "m": m, "w": config.w}, stored
            )

        @app.get("/v1/batches")
        def list_batches(who: Principal = participant) -> dict[str, Any]:
            items = store.batches(who.name)
            return {
                "participant": who.name,
                "batches": items,
                "n_records": sum(b["m"] for b in items),
            }

        @app.get("/v1/batches/{seq}")
        def get_batch(
            seq: int = PathParam(..., ge=1, le=MAX_ID), who: Principal = participant
        ) -> dict[str, Any]:
            return {"participant": who.name, **store.batch(who.name, seq, config.w)}

        @app.post(
            "/v1/train",
            openapi_extra=json_body(
                {k: {"type": ["integer", "null"]} for k in ("epochs", "hidden", "seed")},
                optional_body=True,
            ),
        )
        async def train(request: Request, who: Principal = operator) -> JSONResponse:
            raw = await request.body()
            body = parse_json(raw) if raw.strip() else {}
            job = await run_in_threadpool(trainer.start, who.name, body)
            return JSONResponse(store.job(job), status_code=202)

        @app.get("/v1/jobs")
        def list_jobs(who: Principal = operator) -> dict[str, Any]:
            return {"jobs": store.jobs()}

        @app.get("/v1/jobs/{job}")
        def get_job(
            job: int = PathParam(..., ge=1, le=MAX_ID), who: Principal = operator
        ) -> dict[str, Any]:
            out = store.job(job)
            if out["status"] == "running" and trainer.running == job:
                out["progress"] = trainer.progress()
            return out

        @app.get("/v1/status")
        def status(who: Principal = operator) -> dict[str, Any]:
            models = store.models()
            return {
                **store.counts(),
                "running_job": trainer.running,
                "latest_model": models[0] if models else None,
            }

        @app.get("/v1/models")
        def list_models(who: Principal = reader) -> dict[str, Any]:
            return {"models": store.models()}

        @app.get("/v1/models/{ref}")
        def get_model(ref: str, who: Principal = reader) -> dict[str, Any]:
            meta, npz = store.model(ref)
            return {**meta, "npz_base64": base64.b64encode(npz).decode("ascii")}

        @app.get("/v1/models/{ref}/npz")
        def get_model_npz(ref: str, who: Principal = reader) -> Response:
            meta, npz = store.model(ref)
            return Response(
                npz,
                media_type="application/octet-stream",
                headers={
                    "content-disposition": f'attachment; filename="rmp-model-{meta["id"]}.npz"',
                    "x-privad-model-id": str(meta["id"]),
                    "x-privad-model-sha256": meta["sha256"],
                },
            )

    return create_app(
        title="privad RMP mining server",
        role=ROLE,
        routes=routes,
        tokens=tokens,
        max_body_bytes=max_body_bytes,
        recorder=recorder,
        on_shutdown=(trainer.stop, store.close),
        state={"store": store, "config": config, "trainer": trainer},
    )
