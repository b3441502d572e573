"""The RMP mining server's storage: its fixed public configuration and its SQLite file.

:class:`RMPConfig` is n, w, α, β and the public T (w × n), drawn once when the ``--db``
file is new (:func:`open_config`) and never changed afterwards (every participant's
T_i = T + Δ_i is built on it). :class:`RMPStore` holds it with the participants (their
tokens' digests only), the append-only batches Z_i, the training jobs and the models;
SQLite triggers refuse any update or delete of what must not change.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from privad.errors import ParameterError
from privad.noise import RandomnessLike
from privad.rmp.perturbation import (
    beta_star,
    check_alpha,
    check_dimensions,
    public_matrix,
)
from privad.services.bodies import MAX_ID
from privad.services.errors import Conflict, NotFound, closed_on_error
from privad.services.store import SQLiteStore, pack, unpack, utc_now
from privad.validation import check_int, check_positive

__all__ = ["ROLE", "RMPConfig", "RMPStore", "open_config", "t_digest"]

ROLE: Final[str] = "rmp"

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


class RMPStore(SQLiteStore):
    """The mining server's SQLite file: configuration, participants, batches, jobs, models."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, role=ROLE, schema=SCHEMA)
        with closed_on_error(self):
            self.write(self._install)

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
        row = self.read_one("SELECT n, w, alpha, beta, t, created_at FROM config")
        if row is None:
            return None
        n, w, alpha, beta, t, created = row
        return RMPConfig(n, w, alpha, beta, unpack(t, shape=(w, n)), created)

    def init_config(self, n: int, w: int, alpha: float, beta: float, T: np.ndarray) -> RMPConfig:
        """Store the configuration unless one is there; the stored one."""

        def tx(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO config (id, n, w, alpha, beta, t, created_at) "
                "VALUES (1, ?, ?, ?, ?, ?, ?)",
                (n, w, alpha, beta, pack(T), utc_now()),
            )

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
            row = conn.execute(
                "SELECT name FROM participants WHERE token_digest = ?", (digest,)
            ).fetchone()
            if row is not None:
                if name is not None and row[0] != name:
                    raise Conflict(
                        "this token is already registered under another name; "
                        "make a new secret for a new participant"
                    )
                return str(row[0]), False
            chosen = name
            if chosen is None:
                k = conn.execute("SELECT COUNT(*) FROM participants").fetchone()[0] + 1
                while conn.execute(
                    "SELECT 1 FROM participants WHERE name = ?", (f"participant-{k}",)
                ).fetchone():
                    k += 1
                chosen = f"participant-{k}"
            elif conn.execute("SELECT 1 FROM participants WHERE name = ?", (chosen,)).fetchone():
                raise Conflict(
                    f"participant name {chosen!r} is taken; choose another or omit "
                    "'name' to get one assigned"
                )
            conn.execute(
                "INSERT INTO participants (name, token_digest, registered_at) VALUES (?, ?, ?)",
                (chosen, digest, utc_now()),
            )
            return chosen, True

        return self.write(tx)

    def participant_by_digest(self, digest: bytes) -> str | None:
        """The participant whose token has this SHA-256 digest, or None."""
        row = self.read_one("SELECT name FROM participants WHERE token_digest = ?", (digest,))
        return None if row is None else str(row[0])

    def participants(self) -> list[dict[str, Any]]:
        """Every participant with its number of batches and records (operator view)."""
        rows = self.read_all(
            "SELECT p.name, p.registered_at, COUNT(b.id), COALESCE(SUM(b.m), 0) "
            "FROM participants p LEFT JOIN batches b ON b.participant = p.name "
            "GROUP BY p.name ORDER BY p.registered_at, p.name"
        )
        return [
            {"participant": name, "registered_at": at, "n_batches": nb, "n_records": nr}
            for name, at, nb, nr in rows
        ]

    # -- batches ------------------------------------------------------------------------------

    def add_batch(self, participant: str, Z: np.ndarray) -> tuple[int, bool]:
        """Append a w × m batch; (its number, stored now). An identical batch of the same
        participant is not stored again: its number and False."""
        m = int(Z.shape[1])
        blob = pack(Z)
        digest = _batch_digest(blob, m)

        def tx(conn: sqlite3.Connection) -> tuple[int, bool]:
            row = conn.execute(
                "SELECT seq FROM batches WHERE participant = ? AND digest = ?",
                (participant, digest),
            ).fetchone()
            if row is not None:
                return int(row[0]), False
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM batches WHERE participant = ?",
                (participant,),
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO batches (participant, seq, m, z, digest, received_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (participant, seq, m, blob, digest, utc_now()),
            )
            return int(seq), True

        return self.write(tx)

    def batches(self, participant: str) -> list[dict[str, Any]]:
        """The participant's batches (number, m, digest, received), oldest first."""
        rows = self.read_all(
            "SELECT seq, m, digest, received_at FROM batches WHERE participant = ? ORDER BY seq",
            (participant,),
        )
        return [{"batch": k, "m": m, "sha256": d, "received_at": at} for k, m, d, at in rows]

    def batch(self, participant: str, seq: int, w: int) -> dict[str, Any]:
        """The participant's batch ``seq`` with its data; :class:`NotFound` otherwise."""
        row = self.read_one(
            "SELECT m, z, digest, received_at FROM batches WHERE participant = ? AND seq = ?",
            (participant, seq),
        )
        if row is None:
            raise NotFound(f"participant {participant!r} has no batch {seq}")
        m, z, digest, at = row
        return {
            "batch": seq,
            "m": m,
            "sha256": digest,
            "received_at": at,
            "z": unpack(z, shape=(w, m)).tolist(),
        }

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
        rows = self.read_all("SELECT id, participant, m, z FROM batches ORDER BY id")
        if not rows:
            raise Conflict(
                "no batches stored yet: participants must upload perturbed batches "
                "before the model can be trained"
            )
        Z_all = np.concatenate([unpack(z, shape=(w, m)) for _, _, m, z in rows], axis=1)
        stats = {
            "n_records": int(Z_all.shape[1]),
            "n_batches": len(rows),
            "n_participants": len({p for _, p, _, _ in rows}),
            "last_batch": int(rows[-1][0]),
        }
        return Z_all, stats

    # -- jobs and models ----------------------------------------------------------------------

    def start_job(self, requested_by: str, options: dict[str, Any], stats: dict[str, int]) -> int:
        """Record a running training job; its id."""

        def tx(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO jobs (status, requested_by, options, n_records, n_batches, "
                "n_participants, started_at) VALUES ('running', ?, ?, ?, ?, ?, ?)",
                (
                    requested_by,
                    json.dumps(options, sort_keys=True),
                    stats["n_records"],
                    stats["n_batches"],
                    stats["n_participants"],
                    utc_now(),
                ),
            )
            return int(cur.lastrowid)  # type: ignore[arg-type]

        return self.write(tx)

    def fail_job(self, job: int, status: str, error: str) -> None:
        """Mark a job failed (or interrupted) with its reason."""
        self.write(
            lambda conn: conn.execute(
                "UPDATE jobs SET status = ?, finished_at = ?, error = ? WHERE id = ?",
                (status, utc_now(), error, job),
            )
        )

    def add_model(
        self,
        job: int,
        npz: bytes,
        stats: dict[str, int],
        options: dict[str, Any],
        threshold: float | None,
        seconds: float,
    ) -> int:
        """Store a trained model and mark its job done (one commit); the model id."""

        def tx(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO models (job, created_at, n_records, n_batches, n_participants, "
                "last_batch, threshold, options, train_seconds, sha256, npz) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job,
                    utc_now(),
                    stats["n_records"],
                    stats["n_batches"],
                    stats["n_participants"],
                    stats["last_batch"],
                    threshold,
                    json.dumps(options, sort_keys=True),
                    seconds,
                    hashlib.sha256(npz).hexdigest(),
                    npz,
                ),
            )
            model = int(cur.lastrowid)  # type: ignore[arg-type]
            conn.execute(
                "UPDATE jobs SET status = 'done', finished_at = ?, model = ? WHERE id = ?",
                (utc_now(), model, job),
            )
            return model

        return self.write(tx)

    _JOB_COLUMNS = (
        "id, status, requested_by, options, n_records, n_batches, n_participants, "
        "started_at, finished_at, model, error"
    )
    _JOB_KEYS = (
        "job",
        "status",
        "requested_by",
        "options",
        "n_records",
        "n_batches",
        "n_participants",
        "started_at",
        "finished_at",
        "model",
        "error",
    )
    _MODEL_COLUMNS = (
        "id, job, created_at, n_records, n_batches, n_participants, threshold, "
        "options, train_seconds, sha256, length(npz)"
    )
    _MODEL_KEYS = (
        "id",
        "job",
        "created_at",
        "n_records",
        "n_batches",
        "n_participants",
        "threshold",
        "options",
        "train_seconds",
        "sha256",
        "size",
    )

    @staticmethod
    def _row_dict(keys: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
        """A jobs or models row as a dict under ``keys``, its JSON ``options`` decoded."""
        out = dict(zip(keys, row, strict=True))
        out["options"] = json.loads(out["options"])
        return out

    def job(self, job: int) -> dict[str, Any]:
        """One training job; :class:`NotFound` if unknown."""
        row = self.read_one(f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE id = ?", (job,))
        if row is None:
            raise NotFound(f"no training job {job}")
        return self._row_dict(self._JOB_KEYS, row)

    def jobs(self) -> list[dict[str, Any]]:
        """Every training job, newest first."""
        rows = self.read_all(f"SELECT {self._JOB_COLUMNS} FROM jobs ORDER BY id DESC")
        return [self._row_dict(self._JOB_KEYS, r) for r in rows]

    def models(self) -> list[dict[str, Any]]:
        """Every stored model's metadata, newest first."""
        rows = self.read_all(f"SELECT {self._MODEL_COLUMNS} FROM models ORDER BY id DESC")
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
                raise NotFound(f"no model {ref[:40]!r}: give a model id (1 to 2^62) or 'latest'")
            where, args = "WHERE id = ?", (number,)
        row = self.read_one(f"SELECT {self._MODEL_COLUMNS}, npz FROM models {where}", args)
        if row is None:
            raise NotFound(
                "no model has been trained yet: the operator starts training with POST /v1/train"
                if ref == "latest"
                else f"no model {ref}"
            )
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
    have = {"n": stored.n, "w": stored.w, "r": stored.r, "alpha": stored.alpha, "beta": stored.beta}
    clash = [
        f"--{k} {given[k]!r} (stored: {have[k]!r})"
        for k in given
        if given[k] is not None and float(given[k]) != float(have[k])
    ]  # type: ignore[arg-type]
    if clash:
        raise ParameterError(
            f"{store.path!r} already holds an RMP configuration (n={stored.n}, w={stored.w}, "
            f"alpha={stored.alpha:g}, T drawn {stored.created_at}) that conflicts with "
            f"{', '.join(clash)}; T and its parameters never change under the participants' "
            "data: omit these options to keep them, or use a new --db"
        )
    return stored, False
