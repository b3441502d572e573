"""The RMP mining server S (Erfani et al., PAKDD 2014, sections 3–4) over HTTP.

Participants perturb their records locally (double logistic, then their private
T_i = T + Δ_i) and upload only Z_i = T_i Y_i, in batches; the server pools what it received
(Z_all), trains the auto-associative network (:class:`privad.rmp.roles.MiningServer`,
:func:`privad.rmp.model.fit_model`) and hands
the model out to end-users, who apply the double logistic and the public T to their own
records (:meth:`privad.rmp.model.RMPModel.decision_function`). See docs/rmp_service.md.

The server draws the public T (w × n, U(0, 1), :func:`privad.rmp.public_matrix`) when its
``--db`` file is new and stores it with n, w, α and β; it never changes afterwards (every
participant's T_i is built on it): a restart keeps it and refuses a conflicting n, w, α or β.

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

Training runs in a worker thread (the server keeps answering) on a snapshot of the stored
batches pooled into Z_all (w × m_total, in arrival order); one job at a time (a second
request gets 409, as does training with no batch). The model (NPZ bytes, no pickle) is
stored with its metadata (id, created, number of records, batches and participants) before
the job is marked done. Jobs are kept in SQLite; a job cut short by a shutdown or crash is
marked ``interrupted`` at the next start.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from fastapi import Depends, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from privad.errors import DataError, ParameterError, PrivadError
from privad.noise import RandomnessLike
from privad.rmp.perturbation import (
    beta_star,
    check_alpha,
    check_dimensions,
    public_matrix,
)
from privad.services.common import (
    DEFAULT_MAX_BODY_BYTES,
    KIND_SCHEMAS,
    MAX_ID,
    SENSOR_ROLE,
    Conflict,
    NotFound,
    Principal,
    Recorder,
    ServiceError,
    SQLiteStore,
    TokenRegistry,
    check_name,
    create_app,
    float_matrix,
    json_body,
    pack,
    parse_json,
    require_role,
    stored_response,
    unpack,
    utc_now,
)
from privad.validation import check_int, check_positive

__all__ = [
    "DEFAULT_MAX_BATCH",
    "OPERATOR_ROLE",
    "PARTICIPANT_ROLE",
    "REGISTRAR_ROLE",
    "ROLE",
    "USER_ROLE",
    "RMPConfig",
    "RMPStore",
    "RMPTokens",
    "Trainer",
    "create_rmp_app",
    "open_config",
    "t_digest",
]

log = logging.getLogger("privad.services.rmp")

ROLE: Final[str] = "rmp"
PARTICIPANT_ROLE: Final[str] = "participant"
USER_ROLE: Final[str] = "user"
OPERATOR_ROLE: Final[str] = "operator"
REGISTRAR_ROLE: Final[str] = "registrar"

DEFAULT_MAX_BATCH: Final[int] = 30
"""Records per batch the server accepts by default (the paper's participants send 30)."""

DEFAULT_EPOCHS: Final[int] = 500

_MODEL_READERS = (PARTICIPANT_ROLE, USER_ROLE, OPERATOR_ROLE)

SCHEMA = """
CREATE TABLE IF NOT EXISTS config (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n INTEGER NOT NULL,
    w INTEGER NOT NULL,
    alpha REAL NOT NULL,
    beta REAL NOT NULL,
    t BLOB NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS participants (
    name TEXT PRIMARY KEY,
    token_digest BLOB NOT NULL UNIQUE,
    registered_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    participant TEXT NOT NULL REFERENCES participants (name),
    seq INTEGER NOT NULL,
    m INTEGER NOT NULL,
    z BLOB NOT NULL,
    digest TEXT NOT NULL,
    received_at TEXT NOT NULL,
    UNIQUE (participant, seq),
    UNIQUE (participant, digest)
);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    status TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    options TEXT NOT NULL,
    n_records INTEGER NOT NULL,
    n_batches INTEGER NOT NULL,
    n_participants INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    model INTEGER,
    error TEXT
);
CREATE TABLE IF NOT EXISTS models (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job INTEGER NOT NULL REFERENCES jobs (id),
    created_at TEXT NOT NULL,
    n_records INTEGER NOT NULL,
    n_batches INTEGER NOT NULL,
    n_participants INTEGER NOT NULL,
    last_batch INTEGER NOT NULL,
    threshold REAL,
    options TEXT NOT NULL,
    train_seconds REAL NOT NULL,
    sha256 TEXT NOT NULL,
    npz BLOB NOT NULL
)
"""

# One statement each (SQLiteStore's schema is split at ';', which a trigger body contains).
_TRIGGERS = tuple(
    f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
    f"BEGIN SELECT RAISE(ABORT, '{what}'); END"
    for table, what in (
        ("config", "the RMP configuration (n, w, alpha, beta, T) never changes"),
        ("participants", "participants are never changed or removed"),
        ("batches", "batches are append-only"),
        ("models", "models are append-only"),
    )
    for op in ("UPDATE", "DELETE")
)


def t_digest(T: np.ndarray) -> str:
    """SHA-256 of T's float64 bytes (with its shape): names the public matrix a key belongs to."""
    w, n = T.shape
    return hashlib.sha256(f"{w}x{n}:".encode() + pack(T)).hexdigest()


def _batch_digest(blob: bytes, m: int) -> str:
    return hashlib.sha256(f"{m}:".encode() + blob).hexdigest()


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RMPConfig:
    """The server's fixed public configuration: n, w, α, β and T (w × n)."""

    n: int
    w: int
    alpha: float
    beta: float
    T: np.ndarray
    created_at: str

    @property
    def r(self) -> int:
        """r = n − w, the dimensions the projection drops."""
        return self.n - self.w

    @property
    def bound(self) -> float:
        """n(1 + α): every element of T_i Y_i is smaller than this in absolute value."""
        return self.n * (1.0 + self.alpha)

    def describe(self, max_batch: int) -> dict[str, Any]:
        """The public description (``GET /v1/config``)."""
        return {
            "scheme": "rmp",
            "n": self.n,
            "w": self.w,
            "r": self.r,
            "alpha": self.alpha,
            "beta": self.beta,
            "T": self.T.tolist(),
            "t_sha256": t_digest(self.T),
            "max_batch": max_batch,
            "orientation": "z is w x m: records are columns (eq. 3)",
            "created_at": self.created_at,
        }


# --------------------------------------------------------------------------------------------
# Storage
# --------------------------------------------------------------------------------------------


class RMPStore(SQLiteStore):
    """The mining server's SQLite file: configuration, participants, batches, jobs, models."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, role=ROLE, schema=SCHEMA)
        try:
            self.write(self._install)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _install(conn: sqlite3.Connection) -> None:
        for statement in _TRIGGERS:
            conn.execute(statement)
        conn.execute(
            "UPDATE jobs SET status = 'interrupted', finished_at = ?, error = 'the server "
            "stopped before the job finished; nothing was stored' WHERE status = 'running'",
            (utc_now(),),
        )

    # -- configuration ------------------------------------------------------------------------

    def config(self) -> RMPConfig | None:
        """The stored configuration, or None for a new file."""
        with self.reading() as conn:
            row = conn.execute("SELECT n, w, alpha, beta, t, created_at FROM config").fetchone()
        if row is None:
            return None
        n, w, alpha, beta, t, created = row
        return RMPConfig(n, w, alpha, beta, unpack(t, shape=(w, n)), created)

    def init_config(self, n: int, w: int, alpha: float, beta: float, T: np.ndarray) -> RMPConfig:
        """Store the configuration unless one is there; the stored one."""

        def tx(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR IGNORE INTO config (id, n, w, alpha, beta, t, created_at) "
                         "VALUES (1, ?, ?, ?, ?, ?, ?)",
                         (n, w, alpha, beta, pack(T), utc_now()))  # fmt: skip

        self.write(tx)
        config = self.config()
        assert config is not None
        return config

    # -- participants -------------------------------------------------------------------------

    def register(self, name: str | None, digest: bytes) -> tuple[str, bool]:
        """Add a participant (its token's digest); (its name, registered now).

        Safe to repeat: the digest of a registered participant gives that participant and
        False (a retry after a lost answer). :class:`Conflict` for a name taken by another
        digest, or a digest registered under another name.
        """

        def tx(conn: sqlite3.Connection) -> tuple[str, bool]:
            row = conn.execute("SELECT name FROM participants WHERE token_digest = ?",
                               (digest,)).fetchone()  # fmt: skip
            if row is not None:
                if name is not None and row[0] != name:
                    raise Conflict("this token is already registered under another name; "
                                   "make a new secret for a new participant")  # fmt: skip
                return str(row[0]), False
            chosen = name
            if chosen is None:
                k = conn.execute("SELECT COUNT(*) FROM participants").fetchone()[0] + 1
                while conn.execute("SELECT 1 FROM participants WHERE name = ?",
                                   (f"participant-{k}",)).fetchone():  # fmt: skip
                    k += 1
                chosen = f"participant-{k}"
            elif conn.execute("SELECT 1 FROM participants WHERE name = ?", (chosen,)).fetchone():
                raise Conflict(f"participant name {chosen!r} is taken; choose another or omit "
                               "'name' to get one assigned")  # fmt: skip
            conn.execute("INSERT INTO participants (name, token_digest, registered_at) "
                         "VALUES (?, ?, ?)", (chosen, digest, utc_now()))  # fmt: skip
            return chosen, True

        return self.write(tx)

    def participant_by_digest(self, digest: bytes) -> str | None:
        """The participant whose token has this SHA-256 digest, or None."""
        with self.reading() as conn:
            row = conn.execute("SELECT name FROM participants WHERE token_digest = ?",
                               (digest,)).fetchone()  # fmt: skip
        return None if row is None else str(row[0])

    def participants(self) -> list[dict[str, Any]]:
        """Every participant with its number of batches and records (operator view)."""
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT p.name, p.registered_at, COUNT(b.id), COALESCE(SUM(b.m), 0) "
                "FROM participants p LEFT JOIN batches b ON b.participant = p.name "
                "GROUP BY p.name ORDER BY p.registered_at, p.name"
            ).fetchall()
        return [{"participant": name, "registered_at": at, "n_batches": nb, "n_records": nr}
                for name, at, nb, nr in rows]  # fmt: skip

    # -- batches ------------------------------------------------------------------------------

    def add_batch(self, participant: str, Z: np.ndarray) -> tuple[int, bool]:
        """Append a w × m batch; (its number, stored now). An identical batch of the same
        participant is not stored again: its number and False."""
        m = int(Z.shape[1])
        blob = pack(Z)
        digest = _batch_digest(blob, m)

        def tx(conn: sqlite3.Connection) -> tuple[int, bool]:
            row = conn.execute("SELECT seq FROM batches WHERE participant = ? AND digest = ?",
                               (participant, digest)).fetchone()  # fmt: skip
            if row is not None:
                return int(row[0]), False
            seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM batches WHERE "
                               "participant = ?", (participant,)).fetchone()[0]  # fmt: skip
            conn.execute("INSERT INTO batches (participant, seq, m, z, digest, received_at) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         (participant, seq, m, blob, digest, utc_now()))  # fmt: skip
            return int(seq), True

        return self.write(tx)

    def batches(self, participant: str) -> list[dict[str, Any]]:
        """The participant's batches (number, m, digest, received), oldest first."""
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT seq, m, digest, received_at FROM batches WHERE participant = ? "
                "ORDER BY seq", (participant,),
            ).fetchall()
        return [{"batch": k, "m": m, "sha256": d, "received_at": at} for k, m, d, at in rows]

    def batch(self, participant: str, seq: int, w: int) -> dict[str, Any]:
        """The participant's batch ``seq`` with its data; :class:`NotFound` otherwise."""
        with self.reading() as conn:
            row = conn.execute(
                "SELECT m, z, digest, received_at FROM batches WHERE participant = ? AND "
                "seq = ?", (participant, seq),
            ).fetchone()
        if row is None:
            raise NotFound(f"participant {participant!r} has no batch {seq}")
        m, z, digest, at = row
        return {"batch": seq, "m": m, "sha256": digest, "received_at": at,
                "z": unpack(z, shape=(w, m)).tolist()}  # fmt: skip

    def counts(self) -> dict[str, int]:
        """Numbers of participants, batches, records, models."""
        with self.reading() as conn:
            p = conn.execute("SELECT COUNT(*) FROM participants").fetchone()[0]
            b, r = conn.execute("SELECT COUNT(*), COALESCE(SUM(m), 0) FROM batches").fetchone()
            mo = conn.execute("SELECT COUNT(*) FROM models").fetchone()[0]
        return {"participants": p, "batches": b, "records": r, "models": mo}

    def pooled(self, w: int) -> tuple[np.ndarray, dict[str, int]]:
        """Z_all (w × m_total, batches in arrival order) and its counts; :class:`Conflict`
        when no batch is stored."""
        with self.reading() as conn:
            rows = conn.execute("SELECT id, participant, m, z FROM batches ORDER BY id").fetchall()
        if not rows:
            raise Conflict("no batches stored yet: participants must upload perturbed batches "
                           "before the model can be trained")  # fmt: skip
        Z_all = np.concatenate([unpack(z, shape=(w, m)) for _, _, m, z in rows], axis=1)
        stats = {"n_records": int(Z_all.shape[1]), "n_batches": len(rows),
                 "n_participants": len({p for _, p, _, _ in rows}),
                 "last_batch": int(rows[-1][0])}  # fmt: skip
        return Z_all, stats

    # -- jobs and models ----------------------------------------------------------------------

    def start_job(self, requested_by: str, options: dict[str, Any], stats: dict[str, int]) -> int:
        """Record a running training job; its id."""

        def tx(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO jobs (status, requested_by, options, n_records, n_batches, "
                "n_participants, started_at) VALUES ('running', ?, ?, ?, ?, ?, ?)",
                (requested_by, json.dumps(options, sort_keys=True), stats["n_records"],
                 stats["n_batches"], stats["n_participants"], utc_now()),
            )  # fmt: skip
            return int(cur.lastrowid)  # type: ignore[arg-type]

        return self.write(tx)

    def fail_job(self, job: int, status: str, error: str) -> None:
        """Mark a job failed (or interrupted) with its reason."""
        self.write(lambda conn: conn.execute(
            "UPDATE jobs SET status = ?, finished_at = ?, error = ? WHERE id = ?",
            (status, utc_now(), error, job)))  # fmt: skip

    def add_model(self, job: int, npz: bytes, stats: dict[str, int], options: dict[str, Any],
                  threshold: float | None, seconds: float) -> int:  # fmt: skip
        """Store a trained model and mark its job done (one commit); the model id."""

        def tx(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO models (job, created_at, n_records, n_batches, n_participants, "
                "last_batch, threshold, options, train_seconds, sha256, npz) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (job, utc_now(), stats["n_records"], stats["n_batches"],
                 stats["n_participants"], stats["last_batch"], threshold,
                 json.dumps(options, sort_keys=True), seconds,
                 hashlib.sha256(npz).hexdigest(), npz),
            )  # fmt: skip
            model = int(cur.lastrowid)  # type: ignore[arg-type]
            conn.execute("UPDATE jobs SET status = 'done', finished_at = ?, model = ? "
                         "WHERE id = ?", (utc_now(), model, job))  # fmt: skip
            return model

        return self.write(tx)

    _JOB_COLUMNS = ("id, status, requested_by, options, n_records, n_batches, n_participants, "
                    "started_at, finished_at, model, error")  # fmt: skip
    _JOB_KEYS = ("job", "status", "requested_by", "options", "n_records", "n_batches",
                 "n_participants", "started_at", "finished_at", "model", "error")  # fmt: skip
    _MODEL_COLUMNS = ("id, job, created_at, n_records, n_batches, n_participants, threshold, "
                      "options, train_seconds, sha256, length(npz)")  # fmt: skip
    _MODEL_KEYS = ("id", "job", "created_at", "n_records", "n_batches", "n_participants",
                   "threshold", "options", "train_seconds", "sha256", "size")  # fmt: skip

    @staticmethod
    def _row_dict(keys: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
        """A jobs or models row as a dict under ``keys``, its JSON ``options`` decoded."""
        out = dict(zip(keys, row, strict=True))
        out["options"] = json.loads(out["options"])
        return out

    def job(self, job: int) -> dict[str, Any]:
        """One training job; :class:`NotFound` if unknown."""
        with self.reading() as conn:
            row = conn.execute(f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE id = ?",
                               (job,)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"no training job {job}")
        return self._row_dict(self._JOB_KEYS, row)

    def jobs(self) -> list[dict[str, Any]]:
        """Every training job, newest first."""
        with self.reading() as conn:
            rows = conn.execute(f"SELECT {self._JOB_COLUMNS} FROM jobs ORDER BY id DESC").fetchall()
        return [self._row_dict(self._JOB_KEYS, r) for r in rows]

    def models(self) -> list[dict[str, Any]]:
        """Every stored model's metadata, newest first."""
        with self.reading() as conn:
            rows = conn.execute(f"SELECT {self._MODEL_COLUMNS} FROM models ORDER BY id DESC"
                                ).fetchall()  # fmt: skip
        return [self._row_dict(self._MODEL_KEYS, r) for r in rows]

    def model(self, ref: str) -> tuple[dict[str, Any], bytes]:
        """A model (``ref``: its id or ``latest``): metadata and NPZ bytes."""
        if ref == "latest":
            where, args = "ORDER BY id DESC LIMIT 1", ()
        else:
            try:
                number = int(ref)
            except ValueError:
                number = 0
            if not 1 <= number <= MAX_ID or str(number) != ref:
                raise NotFound(f"no model {ref[:40]!r}: give a model id (1 to 2^62) or "
                               "'latest'")  # fmt: skip
            where, args = "WHERE id = ?", (number,)
        with self.reading() as conn:
            row = conn.execute(f"SELECT {self._MODEL_COLUMNS}, npz FROM models {where}",
                               args).fetchone()  # fmt: skip
        if row is None:
            raise NotFound("no model has been trained yet: the operator starts training with "
                           "POST /v1/train" if ref == "latest" else f"no model {ref}")  # fmt: skip
        return self._row_dict(self._MODEL_KEYS, row[:-1]), bytes(row[-1])


def open_config(
    store: RMPStore,
    *,
    n: int | None = None,
    w: int | None = None,
    r: int | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    rng: RandomnessLike = None,
) -> tuple[RMPConfig, bool]:
    """The store's configuration, created from the arguments if the file is new.

    Returns (config, created). A new file needs n, w (or r = n − w) and α; T is drawn with
    :func:`privad.rmp.public_matrix` from ``rng``. An existing file keeps its configuration:
    arguments that are given must agree with it (:class:`ParameterError` otherwise, since
    the participants' T_i = T + Δ_i are built on the stored T).
    """
    if w is not None and r is not None and n is not None and w != n - r:
        raise ParameterError(f"--w {w} and --r {r} disagree for --n {n} (w = n - r); give one")
    stored = store.config()
    if stored is None:
        if n is None or alpha is None or (w is None and r is None):
            raise ParameterError(
                f"{store.path!r} holds no RMP configuration yet: give --n, --w (or --r) and "
                "--alpha to create it"
            )
        n = check_int(n, "n", minimum=2)
        if w is None:
            w = n - check_int(r, "r", minimum=1)
        w, n = check_dimensions(w, n)
        a = check_alpha(alpha)
        b = beta_star() if beta is None else check_positive(beta, "beta")
        T = public_matrix(w, n, rng=rng)
        return store.init_config(n, w, a, b, T), True
    given = {"n": n, "w": w, "r": r, "alpha": alpha, "beta": beta}
    have = {"n": stored.n, "w": stored.w, "r": stored.r, "alpha": stored.alpha,
            "beta": stored.beta}  # fmt: skip
    clash = [f"--{k} {given[k]!r} (stored: {have[k]!r})" for k in given
             if given[k] is not None and float(given[k]) != float(have[k])]  # type: ignore[arg-type]
    if clash:
        raise ParameterError(
            f"{store.path!r} already holds an RMP configuration (n={stored.n}, w={stored.w}, "
            f"alpha={stored.alpha:g}, T drawn {stored.created_at}) that conflicts with "
            f"{', '.join(clash)}; T and its parameters never change under the participants' "
            "data: omit these options to keep them, or use a new --db"
        )
    return stored, False


# --------------------------------------------------------------------------------------------
# Authentication: static tokens plus registered participants
# --------------------------------------------------------------------------------------------


class RMPTokens(TokenRegistry):
    """:class:`TokenRegistry` (end-users, operator, registrar) plus the participants
    registered in the store, looked up by the SHA-256 digest of their token."""

    def __init__(self, users: Sequence[tuple[str, str]], peers: dict[str, str],
                 store: RMPStore) -> None:  # fmt: skip
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
# Training
# --------------------------------------------------------------------------------------------


class _Stopped(Exception):
    """Raised from the progress callback when the server shuts down."""


class Trainer:
    """Runs :func:`privad.rmp.model.fit_model` in a worker thread, one job at a time.

    Parameters
    ----------
    store, config:
        The server's store and configuration.
    epochs, hidden:
        Defaults of every job (a request may override them).

    Training is :class:`privad.rmp.roles.MiningServer` (hence
    :func:`privad.rmp.model.fit_model`) on Z_all, with its defaults for everything else.
    """

    def __init__(self, store: RMPStore, config: RMPConfig, *, epochs: int = DEFAULT_EPOCHS,
                 hidden: int | None = None) -> None:  # fmt: skip
        self.store = store
        self.config = config
        self.epochs = check_int(epochs, "epochs", minimum=1)
        self.hidden = None if hidden is None else check_int(hidden, "hidden", minimum=1)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._job: int | None = None
        self._progress: dict[str, Any] = {}
        self._stop = threading.Event()

    def options(self, body: Any) -> dict[str, Any]:
        """The options of a training request (validated; 422 on a bad one)."""
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise DataError("the body must be a JSON object with optional 'epochs', 'hidden' "
                            "and 'seed'")  # fmt: skip
        unknown = sorted(set(body) - {"epochs", "hidden", "seed"})
        if unknown:
            raise DataError(f"unknown field(s) {unknown}; allowed: epochs, hidden, seed")
        for key in ("epochs", "hidden", "seed"):
            if key in body and body[key] is not None and type(body[key]) is not int:
                raise DataError(f"{key} must be an integer, got {body[key]!r}")
        epochs = self.epochs if body.get("epochs") is None else body["epochs"]
        hidden = self.hidden if body.get("hidden") is None else body["hidden"]
        seed = body.get("seed")
        return {
            "epochs": check_int(epochs, "epochs", minimum=1, maximum=1_000_000),
            "hidden": None if hidden is None else check_int(hidden, "hidden", minimum=1,
                                                            maximum=100_000),  # fmt: skip
            "seed": None if seed is None else check_int(seed, "seed", minimum=0),
        }

    @property
    def running(self) -> int | None:
        """The id of the job in progress, or None."""
        with self._lock:
            alive = self._thread is not None and self._thread.is_alive()
            return self._job if alive else None

    def progress(self) -> dict[str, Any]:
        """What the running job reported last (empty when idle)."""
        return dict(self._progress) if self.running is not None else {}

    def start(self, requested_by: str, body: Any) -> int:
        """Start a job on the batches stored now; its id. :class:`Conflict` when a job is
        running or no batch is stored."""
        options = self.options(body)
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                raise Conflict(f"training job {self._job} is still running; wait for it "
                               f"(GET /v1/jobs/{self._job})")  # fmt: skip
            if self._stop.is_set():
                raise ServiceError("the server is shutting down", status_code=503)
            Z_all, stats = self.store.pooled(self.config.w)
            if stats["n_records"] < 2:
                raise Conflict("only 1 record is stored: training needs at least 2 (the "
                               "threshold is mean + 3 std of their reconstruction errors)")
            job = self.store.start_job(requested_by, options, stats)
            self._job = job
            self._progress = {}
            self._thread = threading.Thread(
                target=self._run, args=(job, Z_all, stats, options), daemon=True,
                name=f"privad-rmp-train-{job}",
            )
            self._thread.start()
        return job

    def _report(self, epoch: int, epochs: int) -> None:
        """``progress(epoch, epochs)`` of :func:`~privad.rmp.aann.train_aann`."""
        if self._stop.is_set():
            raise _Stopped
        self._progress = {"epoch": int(epoch), "epochs": int(epochs)}

    def _run(self, job: int, Z_all: np.ndarray, stats: dict[str, int],
             options: dict[str, Any]) -> None:  # fmt: skip
        from privad.rmp.roles import MiningServer

        cfg = self.config
        started = time.perf_counter()
        try:
            party = MiningServer(cfg.T, cfg.alpha, hidden=options["hidden"],
                                 epochs=options["epochs"], rng=options["seed"], beta=cfg.beta)
            party.receive(Z_all)
            model = party.train(progress=self._report)
            self.store.add_model(job, model.to_bytes(), stats, options, float(model.threshold),
                                 time.perf_counter() - started)  # fmt: skip
        except _Stopped:
            self._finish(job, "interrupted", "the server stopped during training; nothing was "
                         "stored")  # fmt: skip
        except PrivadError as exc:
            self._finish(job, "failed", str(exc))
        except Exception as exc:  # reported in the job, logged with the traceback
            log.exception("training job %s failed", job)
            self._finish(job, "failed", f"internal error ({type(exc).__name__}: {exc})")

    def _finish(self, job: int, status: str, error: str) -> None:
        try:
            self.store.fail_job(job, status, error)
        except PrivadError:  # the store closed under us: the next start marks it interrupted
            pass

    def stop(self, timeout: float = 10.0) -> None:
        """Stop a running job at its next progress report and wait for it."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)


# --------------------------------------------------------------------------------------------
# The app
# --------------------------------------------------------------------------------------------


def _batch_matrix(body: Any, config: RMPConfig, max_batch: int) -> np.ndarray:
    """The z of an upload, checked: exactly w × m, 1 <= m <= max_batch, finite, in range."""
    if not isinstance(body, dict):
        raise DataError("the body must be a JSON object {\"z\": [[...], ...]} (w rows of m "
                        "numbers: records are columns)")  # fmt: skip
    unknown = sorted(set(body) - {"z"})
    if unknown:
        raise DataError(f"unknown field(s) {unknown}; a batch is {{\"z\": [[...], ...]}}")
    if "z" not in body:
        raise DataError("missing field 'z' (the perturbed batch Z_i = T_i Y_i, w rows of m "
                        "numbers)")  # fmt: skip
    Z = float_matrix(body["z"], "z")
    rows, m = Z.shape
    if rows != config.w:
        raise DataError(f"z has {rows} row(s); this server takes w = {config.w} rows (z is "
                        f"w x m: each column is one perturbed record)")  # fmt: skip
    if m > max_batch:
        raise DataError(f"z holds {m} records (columns); a batch holds at most {max_batch} "
                        "(the server's --max-batch): split it")  # fmt: skip
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
        raise DataError("the body must be a JSON object, e.g. {\"name\": \"clinic-7\", "
                        "\"token_sha256\": \"<64 hex digits>\"} or {}")  # fmt: skip
    unknown = sorted(set(body) - {"name", "token_sha256"})
    if unknown:
        raise DataError(f"unknown field(s) {unknown}; registration takes an optional 'name' "
                        "and an optional 'token_sha256'")  # fmt: skip
    name = body.get("name")
    digest = body.get("token_sha256")
    if digest is not None and not (isinstance(digest, str) and _DIGEST_HEX.fullmatch(digest)):
        raise DataError("token_sha256 must be the SHA-256 of your token as 64 lowercase hex "
                        "digits")  # fmt: skip
    return (None if name is None else check_name(name, "participant name"),
            None if digest is None else bytes.fromhex(digest))  # fmt: skip


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
    epochs: int = DEFAULT_EPOCHS,
    hidden: int | None = None,
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
    epochs, hidden:
        Training defaults (see :func:`privad.rmp.model.fit_model`).
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
    try:
        config, created = open_config(store, n=n, w=w, r=r, alpha=alpha, beta=beta, rng=rng)
        tokens = RMPTokens(users, peers, store)
        trainer = Trainer(store, config, epochs=epochs, hidden=hidden)
    except BaseException:
        store.close()
        raise
    if notes is not None:
        counts = store.counts()
        notes.append(
            f"{'created' if created else 'kept'} T ({config.w} x {config.n}, alpha = "
            f"{config.alpha:g}, beta = {config.beta:.4f}, sha256 {t_digest(config.T)[:16]}) in "
            f"{store.path}; {counts['participants']} participant(s), {counts['batches']} "
            f"batch(es), {counts['records']} record(s), {counts['models']} model(s)"
        )
        if registration_token is None:
            notes.append("registration is open: anyone who reaches the server can register "
                         "and upload (set --registration-token to restrict it)")  # fmt: skip
    operator = Depends(require_role(OPERATOR_ROLE))
    participant = Depends(require_role(PARTICIPANT_ROLE))
    reader = Depends(require_role(*_MODEL_READERS))
    registrar_check = require_role(REGISTRAR_ROLE, OPERATOR_ROLE)

    def routes(app: FastAPI) -> None:
        @app.get("/v1/config")
        def get_config() -> dict[str, Any]:
            return config.describe(max_batch)

        @app.post("/v1/participants", openapi_extra=json_body(
            {"name": {"type": "string"}, "token_sha256": {"type": "string"}},
            optional_body=True))
        async def register(request: Request) -> JSONResponse:
            if registration_token is not None:
                registrar_check(request)
            raw = await request.body()
            name, digest = _register_body(raw)
            if digest is None:  # the server makes the secret: shown once, not retryable
                secret, digest = tokens.new_secret()
                answer = {"participant": None, "token": secret,
                          "note": "keep this token: it is shown only once (the server stores "
                                  "a digest)"}  # fmt: skip
            else:  # the client made it: the same request may be repeated
                tokens.check_new_digest(digest)
                answer = {"participant": None}
            answer["participant"], new = await run_in_threadpool(store.register, name, digest)
            return stored_response(answer, new)

        @app.get("/v1/participants")
        def list_participants(who: Principal = operator) -> dict[str, Any]:
            return {"participants": store.participants()}

        @app.post("/v1/batches", openapi_extra=json_body(
            {"z": KIND_SCHEMAS["matrix"]},
            ["z"]))
        async def upload(request: Request, who: Principal = participant) -> JSONResponse:
            raw = await request.body()

            def work() -> tuple[int, bool, int]:
                Z = _batch_matrix(parse_json(raw), config, max_batch)
                seq, stored = store.add_batch(who.name, Z)
                return seq, stored, int(Z.shape[1])

            seq, stored, m = await run_in_threadpool(work)
            return stored_response({"participant": who.name, "batch": seq, "m": m, "w": config.w},
                                   stored)

        @app.get("/v1/batches")
        def list_batches(who: Principal = participant) -> dict[str, Any]:
            items = store.batches(who.name)
            return {"participant": who.name, "batches": items,
                    "n_records": sum(b["m"] for b in items)}  # fmt: skip

        @app.get("/v1/batches/{seq}")
        def get_batch(seq: int = PathParam(..., ge=1, le=MAX_ID),
                      who: Principal = participant) -> dict[str, Any]:  # fmt: skip
            return {"participant": who.name, **store.batch(who.name, seq, config.w)}

        @app.post("/v1/train", openapi_extra=json_body(
            {k: {"type": ["integer", "null"]} for k in ("epochs", "hidden", "seed")},
            optional_body=True))
        async def train(request: Request, who: Principal = operator) -> JSONResponse:
            raw = await request.body()
            body = parse_json(raw) if raw.strip() else {}
            job = await run_in_threadpool(trainer.start, who.name, body)
            return JSONResponse(store.job(job), status_code=202)

        @app.get("/v1/jobs")
        def list_jobs(who: Principal = operator) -> dict[str, Any]:
            return {"jobs": store.jobs()}

        @app.get("/v1/jobs/{job}")
        def get_job(job: int = PathParam(..., ge=1, le=MAX_ID),
                    who: Principal = operator) -> dict[str, Any]:  # fmt: skip
            out = store.job(job)
            if out["status"] == "running" and trainer.running == job:
                out["progress"] = trainer.progress()
            return out

        @app.get("/v1/status")
        def status(who: Principal = operator) -> dict[str, Any]:
            models = store.models()
            return {**store.counts(), "running_job": trainer.running,
                    "latest_model": models[0] if models else None}  # fmt: skip

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
            return Response(npz, media_type="application/octet-stream", headers={
                "content-disposition": f'attachment; filename="rmp-model-{meta["id"]}.npz"',
                "x-privad-model-id": str(meta["id"]),
                "x-privad-model-sha256": meta["sha256"],
            })  # fmt: skip

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
