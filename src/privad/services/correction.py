"""The correction server CS of the relaxed-DP scheme (sections 6.1–6.2) over HTTP.

CS holds ``w_O`` and, per sensor and window, only the distance differences d_diff (indexed
by record), the d_TP noise the sensor drew for ε_TP (0 without it; added to d_TP before it
goes to the analyst) and the index sets the analyst sends; it never receives 𝒯 or 𝒯'. It plays party
CS of :mod:`privad.relaxed.parties`: on O' it splits the presumed outliers at the largest
d_diff gap and answers d_TP and w_O (step 3); on I_L2 and I_L3 it computes the false-negative
layers and answers the corrected outliers (step 5).

The store keeps the messages CS received; each step rebuilds the
:class:`~privad.relaxed.CorrectionServer` party from them (the steps are deterministic), so
a restart loses nothing and a repeated request gets the same answer.

=======  ==============================================  =====  ==============================
method   path                                            token  what
=======  ==============================================  =====  ==============================
GET      /v1/health                                      —      liveness and role
PUT      /v1/windows/{w}/differences                     S      indices and d_diff of window
                                                                w, optional tp_noise
                                                                (SensorToCorrection): 201
                                                                stored, 200 identical copy,
                                                                409 different copy
GET      /v1/windows                                     S      this sensor's windows, status
POST     /v1/sensors/{s}/windows/{w}/presumed-outliers   A      O' (AnalystToCorrection) →
                                                                d_TP, w_O (CorrectionToAnalyst)
POST     /v1/sensors/{s}/windows/{w}/layers              A      I_L2, I_L3 (AnalystToCorrection2)
                                                                → the corrected outliers
                                                                (CorrectionToAnalyst2)
=======  ==============================================  =====  ==============================

S: a sensor's token (the sensor id is the token's name); A: the analyst's token
(``--analyst-token``). The analyst's requests are idempotent: the same O' (or I_L2, I_L3)
again gets the same answer, a different one for a window that already has one gets 409.
The analyst may pass ``?n=N`` (its window size) with O'; a mismatch with the d_diff held
here is a 409.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from privad.errors import ParameterError
from privad.relaxed.correction import SplitRule, check_split_rule
from privad.relaxed.messages import (
    AnalystToCorrection,
    AnalystToCorrection2,
    ProtocolError,
    SensorToCorrection,
)
from privad.relaxed.parties import CorrectionServer
from privad.services.app import create_app
from privad.services.auth import SENSOR_ROLE, Principal, TokenRegistry, check_name, require_role
from privad.services.bodies import (
    DEFAULT_MAX_BODY_BYTES,
    Recorder,
    WindowParam,
    decode_message,
    message_body,
    parse_json,
)
from privad.services.errors import Conflict, NotFound, stored_response
from privad.services.store import SQLiteStore, pack, unpack, utc_now
from privad.validation import check_nonnegative

__all__ = ["ANALYST_ROLE", "CorrectionStore", "create_correction_app"]

ROLE = "correction"
ANALYST_ROLE = "analyst"
"""The role of the analyst's token at the correction server."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS differences (
    sensor TEXT NOT NULL,
    win INTEGER NOT NULL,
    n INTEGER NOT NULL,
    d_diff BLOB NOT NULL,
    received_at TEXT NOT NULL,
    tp_noise REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (sensor, win)
);
CREATE TABLE IF NOT EXISTS presumed (
    sensor TEXT NOT NULL,
    win INTEGER NOT NULL,
    presumed BLOB NOT NULL,
    w_o REAL NOT NULL,
    min_gap REAL NOT NULL,
    max_fp_share REAL NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (sensor, win),
    FOREIGN KEY (sensor, win) REFERENCES differences (sensor, win)
);
CREATE TABLE IF NOT EXISTS results (
    sensor TEXT NOT NULL,
    win INTEGER NOT NULL,
    i_l2 BLOB NOT NULL,
    i_l3 BLOB NOT NULL,
    outliers BLOB NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (sensor, win),
    FOREIGN KEY (sensor, win) REFERENCES presumed (sensor, win)
);
"""

DIFFERENCES_SCHEMA = {"indices": "indices", "d_diff": "vector", "tp_noise": "number"}
DIFFERENCES_OPTIONAL = ("tp_noise",)
"""``tp_noise`` (the d_TP noise of ε_TP, :mod:`privad.relaxed.views`) may be absent: 0."""
PRESUMED_SCHEMA = {"presumed_outliers": "indices"}
LAYERS_SCHEMA = {"i_l2": "indices", "i_l3": "indices"}


class CorrectionStore(SQLiteStore):
    """The correction server's SQLite file: d_diff, O', I_L2/I_L3 per (sensor, window)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, role=ROLE, schema=SCHEMA)
        self.write(_add_tp_noise_column)

    def put_differences(self, sensor: str, window: int, message: SensorToCorrection) -> bool:
        """Store d_diff re-indexed by record (one write); True if new, False for an
        identical copy, :class:`Conflict` for a different one."""
        n = int(message.d_diff.size)
        d_diff = np.empty(n, dtype=np.float64)
        d_diff[message.indices] = message.d_diff
        return self.put_once(
            "differences",
            {"sensor": sensor, "win": window},
            {"n": n, "d_diff": pack(d_diff), "tp_noise": float(message.tp_noise)},
            f"window {window} of sensor {sensor!r} already has different distance "
            "differences; each window is released once: send new data as a new window",
        )

    def list_windows(self, sensor: str) -> list[dict[str, Any]]:
        """The sensor's windows: number, n, status (differences, presumed, corrected)."""
        rows = self.read_all(
            "SELECT d.win, d.n, p.win IS NOT NULL, r.win IS NOT NULL FROM differences d "
            "LEFT JOIN presumed p USING (sensor, win) LEFT JOIN results r "
            "USING (sensor, win) WHERE d.sensor = ? ORDER BY d.win",
            (sensor,),
        )
        return [
            {
                "window": w,
                "n": n,
                "status": "corrected" if done else "presumed" if pres else "differences",
            }
            for w, n, pres, done in rows
        ]


def _add_tp_noise_column(conn: sqlite3.Connection) -> None:
    """Files written before ε_TP existed have no ``tp_noise`` column: add it (0: none)."""
    names = {row[1] for row in conn.execute("PRAGMA table_info(differences)")}
    if "tp_noise" not in names:
        conn.execute("ALTER TABLE differences ADD COLUMN tp_noise REAL NOT NULL DEFAULT 0")


def _party(
    w_o: float,
    min_gap: float,
    max_fp_share: float,
    n: int,
    d_diff: bytes,
    tp_noise: float,
    presumed: np.ndarray,
) -> tuple[CorrectionServer, Any]:
    """The CS party replayed through steps 2–3 from stored messages."""
    party = CorrectionServer(w_o, SplitRule(min_gap=min_gap, max_fp_share=max_fp_share))
    party.receive_differences(
        SensorToCorrection(
            indices=np.arange(n, dtype=np.int64), d_diff=unpack(d_diff), tp_noise=tp_noise
        )
    )
    thresholds = party.receive_presumed_outliers(AnalystToCorrection(presumed))
    return party, thresholds


def _stored_rule(rule: Any) -> SplitRule:
    """``rule`` if the presumed table can store it: only ``min_gap`` and ``max_fp_share``."""
    rule = check_split_rule(rule)
    stored = SplitRule(min_gap=rule.min_gap, max_fp_share=rule.max_fp_share)
    if rule != stored:
        raise ParameterError(
            "the correction service stores only min_gap and max_fp_share of the split rule; "
            "d_tp_percentile, d_tp_floor, d_fp_rule and d_fp_percentile must keep their "
            f"defaults, got {rule!r}"
        )
    return rule


def create_correction_app(
    db: str | Path,
    tokens: TokenRegistry,
    *,
    outlier_layer_width: float,
    rule: SplitRule = SplitRule(),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    recorder: Recorder | None = None,
) -> FastAPI:
    """The correction server's FastAPI app.

    Parameters
    ----------
    db:
        SQLite file (created if missing; must be a correction-server database if it exists).
    tokens:
        The sensors' tokens and the analyst's (``TokenRegistry(sensors, {"analyst": s})``).
    outlier_layer_width:
        ``w_O >= 0`` in the scaled space of step 1a.
    rule:
        The step-3 choices (**reconstruction**, :class:`privad.relaxed.SplitRule`). Each
        window stores the rule's ``min_gap`` and ``max_fp_share``; its d_TP and d_FP
        choices must keep their defaults (the paper's minima), which the stored rows assume.
    max_body_bytes:
        Larger request bodies get 413.
    recorder:
        ``recorder("request", route, body)`` for every request received (tests).

    The parameters in force when O' arrives are stored with it, so a restart with other
    parameters does not change the answer for a window already in progress.
    """
    w_o = check_nonnegative(outlier_layer_width, "outlier_layer_width")
    rule = _stored_rule(rule)
    store = CorrectionStore(db)
    sensor_auth = Depends(require_role(SENSOR_ROLE))
    analyst_auth = Depends(require_role(ANALYST_ROLE))

    def put_differences(sensor: str, window: int, raw: bytes) -> tuple[bool, int]:
        message = decode_message(
            SensorToCorrection, parse_json(raw), DIFFERENCES_SCHEMA, DIFFERENCES_OPTIONAL
        )
        return store.put_differences(sensor, window, message), int(message.d_diff.size)

    def presumed_outliers(sensor: str, window: int, n: int | None, raw: bytes) -> dict:
        message = decode_message(AnalystToCorrection, parse_json(raw), PRESUMED_SCHEMA)
        new = pack(message.presumed_outliers, "<i8")

        def tx(conn: sqlite3.Connection) -> dict:
            diff = conn.execute(
                "SELECT n, d_diff, tp_noise FROM differences WHERE sensor = ? AND win = ?",
                (sensor, window),
            ).fetchone()
            if diff is None:
                raise NotFound(f"no distance differences for window {window} of sensor {sensor!r}")
            if n is not None and n != diff[0]:
                raise Conflict(
                    f"window {window} of sensor {sensor!r}: the analyst holds {n} record(s) but "
                    f"the correction server has d_diff for {diff[0]}"
                )
            old = conn.execute(
                "SELECT presumed, w_o, min_gap, max_fp_share FROM presumed "
                "WHERE sensor = ? AND win = ?",
                (sensor, window),
            ).fetchone()
            if old is not None:
                if old[0] != new:
                    raise Conflict(
                        f"window {window} of sensor {sensor!r} already has a different O'"
                    )
                params = tuple(old[1:])
            else:
                params = (w_o, rule.min_gap, rule.max_fp_share)
            _, thresholds = _party(*params, *diff, message.presumed_outliers)
            if old is None:
                conn.execute(
                    "INSERT INTO presumed (sensor, win, presumed, w_o, min_gap, max_fp_share, "
                    "received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (sensor, window, new, *params, utc_now()),
                )
            return thresholds.to_dict()

        return store.write(tx)

    def layers(sensor: str, window: int, raw: bytes) -> dict:
        message = decode_message(AnalystToCorrection2, parse_json(raw), LAYERS_SCHEMA)
        new = (pack(message.i_l2, "<i8"), pack(message.i_l3, "<i8"))

        def tx(conn: sqlite3.Connection) -> dict:
            row = conn.execute(
                "SELECT d.n, d.d_diff, d.tp_noise, p.presumed, p.w_o, p.min_gap, p.max_fp_share "
                "FROM differences d JOIN presumed p USING (sensor, win) "
                "WHERE d.sensor = ? AND d.win = ?",
                (sensor, window),
            ).fetchone()
            if row is None:
                raise ProtocolError(
                    f"window {window} of sensor {sensor!r}: I_L2/I_L3 received before O'"
                )
            n, d_diff, tp_noise, presumed, *params = row
            old = conn.execute(
                "SELECT i_l2, i_l3, outliers FROM results WHERE sensor = ? AND win = ?",
                (sensor, window),
            ).fetchone()
            if old is not None:
                if tuple(old[:2]) != new:
                    raise Conflict(
                        f"window {window} of sensor {sensor!r} already has different I_L2/I_L3"
                    )
                return {"type": "CorrectionToAnalyst2", "outliers": unpack(old[2], "<i8").tolist()}
            party, _ = _party(*params, n, d_diff, tp_noise, unpack(presumed, "<i8"))
            answer = party.receive_layers(message)
            conn.execute(
                "INSERT INTO results (sensor, win, i_l2, i_l3, outliers, received_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (sensor, window, *new, pack(answer.outliers, "<i8"), utc_now()),
            )
            return answer.to_dict()

        return store.write(tx)

    def routes(app: FastAPI) -> None:
        @app.put(
            "/v1/windows/{window}/differences",
            openapi_extra=message_body(DIFFERENCES_SCHEMA, DIFFERENCES_OPTIONAL),
        )
        async def put_diff(
            request: Request, window: int = WindowParam, who: Principal = sensor_auth
        ) -> JSONResponse:
            raw = await request.body()
            stored, n = await run_in_threadpool(put_differences, who.name, window, raw)
            return stored_response({"sensor": who.name, "window": window, "n": n}, stored)

        @app.get("/v1/windows")
        def windows(who: Principal = sensor_auth) -> dict[str, Any]:
            return {"sensor": who.name, "windows": store.list_windows(who.name)}

        @app.post(
            "/v1/sensors/{sensor}/windows/{window}/presumed-outliers",
            openapi_extra=message_body(PRESUMED_SCHEMA),
        )
        async def post_presumed(
            request: Request,
            sensor: str,
            window: int = WindowParam,
            n: int | None = Query(None, ge=1),
            _who: Principal = analyst_auth,
        ) -> dict:
            check_name(sensor, "sensor")
            raw = await request.body()
            return await run_in_threadpool(presumed_outliers, sensor, window, n, raw)

        @app.post(
            "/v1/sensors/{sensor}/windows/{window}/layers",
            openapi_extra=message_body(LAYERS_SCHEMA),
        )
        async def post_layers(
            request: Request, sensor: str, window: int = WindowParam, _who: Principal = analyst_auth
        ) -> dict:
            check_name(sensor, "sensor")
            raw = await request.body()
            return await run_in_threadpool(layers, sensor, window, raw)

    return create_app(
        title="privad relaxed-DP correction server",
        role=ROLE,
        routes=routes,
        tokens=tokens,
        max_body_bytes=max_body_bytes,
        recorder=recorder,
        on_shutdown=(store.close,),
        state={"store": store, "w_o": w_o},
    )
