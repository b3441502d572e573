"""The analyst server A of the relaxed-DP scheme (sections 6.1–6.2) over HTTP.

A stores the perturbed records 𝒯' of every sensor, window by window, in SQLite, and when a
sensor closes a window it plays party A of :mod:`privad.relaxed.parties` against the
correction server: f_outlier (DBSCAN) on 𝒯' → O' (step 2), O' to CS and d_TP, w_O back
(step 3), I_L2 and I_L3 to CS and the corrected outliers back (steps 4–5). A never receives
the noise, 𝒯 or d_diff; it learns d_TP, w_O and the corrected outlier indices.

Endpoints (sensor token; the sensor id is the token's name, so a sensor reads and writes
only its own windows):

=======  ===============================  ==================================================
method   path                             what
=======  ===============================  ==================================================
GET      /v1/health                       liveness and role (no token)
PUT      /v1/windows/{w}/records          store 𝒯' (a SensorToAnalyst message) of window w:
                                          201 stored, 200 identical copy already stored,
                                          409 a different copy is stored
POST     /v1/windows/{w}/close            run detection and correction with the correction
                                          server; 200 with the result (idempotent: a closed
                                          window answers its stored result)
GET      /v1/windows/{w}/outliers         the corrected outliers of a closed window
                                          (404 unknown window, 409 not closed yet)
GET      /v1/windows                      this sensor's windows and their status
=======  ===============================  ==================================================

Duplicates: each window of a sensor is stored once. Re-sending the *same* message (a retry
after a lost answer) is acknowledged again; a *different* 𝒯' for a stored window is refused
(409), because a second noisy copy of the same records would spend their privacy budget
again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from privad.errors import DataError, ParameterError
from privad.relaxed.detectors import DBSCANDetector, OutlierDetector, as_detector
from privad.relaxed.messages import SensorToAnalyst
from privad.relaxed.parties import Analyst
from privad.services.app import create_app
from privad.services.auth import SENSOR_ROLE, Principal, TokenRegistry, require_role
from privad.services.bodies import (
    DEFAULT_MAX_BODY_BYTES,
    Recorder,
    WindowParam,
    decode_message,
    message_body,
    parse_json,
)
from privad.services.clients import CorrectionClient
from privad.services.errors import (
    Conflict,
    NotFound,
    ServiceError,
    UpstreamError,
    closed_on_error,
    stored_response,
)
from privad.services.store import SQLiteStore, pack, unpack, utc_now
from privad.validation import check_int

__all__ = ["AnalystStore", "create_analyst_app", "detector_description"]

ROLE = "analyst"

SCHEMA = """
CREATE TABLE IF NOT EXISTS windows (
    sensor TEXT NOT NULL,
    win INTEGER NOT NULL,
    n INTEGER NOT NULL,
    d INTEGER NOT NULL,
    perturbed BLOB NOT NULL,
    divisors BLOB NOT NULL,
    noise_scale BLOB NOT NULL,
    epsilon REAL NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (sensor, win)
);
CREATE TABLE IF NOT EXISTS results (
    sensor TEXT NOT NULL,
    win INTEGER NOT NULL,
    presumed BLOB NOT NULL,
    outliers BLOB NOT NULL,
    d_tp REAL,
    w_o REAL NOT NULL,
    n_i_l2 INTEGER NOT NULL,
    n_i_l3 INTEGER NOT NULL,
    detector TEXT NOT NULL,
    closed_at TEXT NOT NULL,
    PRIMARY KEY (sensor, win),
    FOREIGN KEY (sensor, win) REFERENCES windows (sensor, win)
);
"""

RECORDS_SCHEMA = {
    "perturbed": "matrix",
    "divisors": "vector",
    "noise_scale": "vector",
    "epsilon": "number",
}


def detector_description(detector: OutlierDetector) -> dict[str, Any]:
    """A JSON-ready description of f_outlier, stored with every result."""
    if isinstance(detector, DBSCANDetector):
        return {
            "kind": "dbscan",
            "eps": detector.eps,
            "min_samples": detector.min_samples,
            "backend": detector.backend,
        }
    return {"kind": type(detector).__name__, "repr": repr(detector)[:200]}


class AnalystStore(SQLiteStore):
    """The analyst's SQLite file: 𝒯' per (sensor, window) and the results of closed windows."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, role=ROLE, schema=SCHEMA)

    def put_window(
        self, sensor: str, window: int, message: SensorToAnalyst, columns: int | None
    ) -> bool:
        """Store 𝒯' (one write). True if stored now, False for an identical copy;
        :class:`Conflict` for a different copy, DataError for a column count that differs
        from ``columns`` or from the sensor's earlier windows."""
        T = message.perturbed
        n, d = T.shape
        if columns is not None and d != columns:
            raise DataError(f"perturbed has {d} column(s); this analyst takes {columns}")

        def same_width(conn: sqlite3.Connection) -> None:
            other = conn.execute(
                "SELECT d FROM windows WHERE sensor = ? LIMIT 1", (sensor,)
            ).fetchone()
            if other is not None and other[0] != d:
                raise DataError(
                    f"perturbed has {d} column(s) but sensor {sensor!r}'s earlier windows have "
                    f"{other[0]}"
                )

        return self.put_once(
            "windows",
            {"sensor": sensor, "win": window},
            {
                "n": n,
                "d": d,
                "perturbed": pack(T),
                "divisors": pack(message.divisors),
                "noise_scale": pack(message.noise_scale),
                "epsilon": message.epsilon,
            },
            f"window {window} of sensor {sensor!r} is already stored with different records; "
            "each window is released once (a second noisy copy of the same records would "
            "spend their privacy again): send new data as a new window",
            check=same_width,
        )

    def get_window(self, sensor: str, window: int) -> SensorToAnalyst:
        """The stored 𝒯' message; :class:`NotFound` if absent."""
        row = self.read_one(
            "SELECT n, d, perturbed, divisors, noise_scale, epsilon FROM windows "
            "WHERE sensor = ? AND win = ?",
            (sensor, window),
        )
        if row is None:
            raise NotFound(f"sensor {sensor!r} has no window {window} at the analyst")
        n, d, T, div, scale, eps = row
        return SensorToAnalyst(
            perturbed=unpack(T, shape=(n, d)),
            divisors=unpack(div),
            noise_scale=unpack(scale),
            epsilon=eps,
        )

    def get_result(self, sensor: str, window: int) -> dict[str, Any] | None:
        """The result of a closed window as a JSON-ready dict, or None if not closed."""
        row = self.read_one(
            "SELECT r.presumed, r.outliers, r.d_tp, r.w_o, r.n_i_l2, r.n_i_l3, r.detector, "
            "r.closed_at, w.n FROM results r JOIN windows w USING (sensor, win) "
            "WHERE r.sensor = ? AND r.win = ?",
            (sensor, window),
        )
        if row is None:
            return None
        presumed, outliers, d_tp, w_o, l2, l3, det, closed_at, n = row
        presumed_ids = unpack(presumed, "<i8")
        return {
            "sensor": sensor,
            "window": window,
            "n": n,
            "outliers": unpack(outliers, "<i8").tolist(),
            "presumed_outliers": presumed_ids.tolist(),
            "n_presumed_outliers": int(presumed_ids.size),
            "d_tp": d_tp,
            "w_o": w_o,
            "n_i_l2": l2,
            "n_i_l3": l3,
            "detector": json.loads(det),
            "closed_at": closed_at,
        }

    def put_result(
        self,
        sensor: str,
        window: int,
        analyst: Analyst,
        d_tp: float | None,
        w_o: float,
        n_l2: int,
        n_l3: int,
        detector: dict[str, Any],
    ) -> None:
        """Store a closed window's result (a concurrent close of the same window that got
        there first wins; both computed the same result)."""
        row = (
            sensor,
            window,
            pack(analyst.presumed_outliers, "<i8"),
            pack(analyst.outliers, "<i8"),
            d_tp,
            w_o,
            n_l2,
            n_l3,
            json.dumps(detector, sort_keys=True),
            utc_now(),
        )

        def tx(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO results (sensor, win, presumed, outliers, d_tp, w_o, "
                "n_i_l2, n_i_l3, detector, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )

        self.write(tx)

    def list_windows(self, sensor: str) -> list[dict[str, Any]]:
        """Every window of ``sensor``: number, n, d, status (``uploaded`` or ``closed``)."""
        rows = self.read_all(
            "SELECT w.win, w.n, w.d, w.received_at, r.closed_at, length(r.outliers) "
            "FROM windows w LEFT JOIN results r USING (sensor, win) "
            "WHERE w.sensor = ? ORDER BY w.win",
            (sensor,),
        )
        return [
            {
                "window": w,
                "n": n,
                "d": d,
                "received_at": at,
                "status": "closed" if closed is not None else "uploaded",
                "n_outliers": None if size is None else size // 8,
            }
            for w, n, d, at, closed, size in rows
        ]


def create_analyst_app(
    db: str | Path,
    tokens: TokenRegistry,
    *,
    correction_url: str,
    correction_token: str,
    detector: OutlierDetector,
    columns: int | None = None,
    centre: Any = "perturbed-mean",
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    timeout: float = 60.0,
    retries: int = 3,
    verify: bool | str = True,
    recorder: Recorder | None = None,
    correction_transport: Any = None,
) -> FastAPI:
    """The analyst's FastAPI app.

    Parameters
    ----------
    db:
        SQLite file (created if missing; must be an analyst database if it exists).
    tokens:
        The sensors' tokens (role ``"sensor"``).
    correction_url, correction_token:
        The correction server and the analyst's token there (its ``--analyst-token``).
    detector:
        f_outlier, e.g. ``DBSCANDetector(eps, min_samples)`` in the scaled space of step 1a.
    columns:
        If given, every window must have exactly this many columns.
    centre:
        The analyst's centre for I_L2/I_L3, see :class:`privad.relaxed.Analyst`.
    max_body_bytes:
        Larger request bodies get 413.
    timeout, retries, verify:
        For requests to the correction server: seconds per request, extra attempts after a
        connection failure or 502/503/504, TLS verification (bool or CA bundle path).
    recorder:
        ``recorder(kind, route, body)`` for every request received and every answer the
        correction server gives (tests keep a transcript with it).
    correction_transport:
        An httpx transport for the requests to the correction server (tests).
    """
    detector = as_detector(detector)
    if columns is not None:
        columns = check_int(columns, "columns", minimum=1)
    Analyst(detector, centre=centre)  # validate the centre now, not at the first close
    store = AnalystStore(db)
    with closed_on_error(store):
        peer = CorrectionClient(
            correction_url,
            correction_token,
            timeout=timeout,
            retries=retries,
            verify=verify,
            recorder=recorder,
            transport=correction_transport,
        )
    described = detector_description(detector)
    sensor_auth = Depends(require_role(SENSOR_ROLE))

    def routes(app: FastAPI) -> None:
        @app.put("/v1/windows/{window}/records", openapi_extra=message_body(RECORDS_SCHEMA))
        async def put_records(
            request: Request, window: int = WindowParam, who: Principal = sensor_auth
        ) -> JSONResponse:
            raw = await request.body()
            stored, (n, d) = await run_in_threadpool(_put_records, who.name, window, raw)
            return stored_response({"sensor": who.name, "window": window, "n": n, "d": d}, stored)

        @app.post("/v1/windows/{window}/close")
        def close(window: int = WindowParam, who: Principal = sensor_auth) -> dict[str, Any]:
            return _close(who.name, window)

        @app.get("/v1/windows/{window}/outliers")
        def outliers(window: int = WindowParam, who: Principal = sensor_auth) -> dict[str, Any]:
            result = store.get_result(who.name, window)
            if result is None:
                store.get_window(who.name, window)  # 404 if unknown
                raise Conflict(
                    f"window {window} of sensor {who.name!r} is not closed yet: "
                    f"POST /v1/windows/{window}/close"
                )
            return result

        @app.get("/v1/windows")
        def windows(who: Principal = sensor_auth) -> dict[str, Any]:
            return {"sensor": who.name, "windows": store.list_windows(who.name)}

    def _put_records(sensor: str, window: int, raw: bytes) -> tuple[bool, tuple[int, int]]:
        message = decode_message(SensorToAnalyst, parse_json(raw), RECORDS_SCHEMA)
        stored = store.put_window(sensor, window, message, columns)
        return stored, message.perturbed.shape

    def _close(sensor: str, window: int) -> dict[str, Any]:
        done = store.get_result(sensor, window)
        if done is not None:
            return done
        message = store.get_window(sensor, window)
        party = Analyst(detector, centre=centre)
        presumed = party.receive_data(message)  # step 2: f_outlier(𝒯') = O'
        n = int(message.perturbed.shape[0])
        thresholds = _peer(peer.presumed_outliers, sensor, window, presumed, n)  # step 3
        layers = party.receive_thresholds(thresholds)  # step 4: I_L2, I_L3
        answer = _peer(peer.layers, sensor, window, layers)  # step 5
        try:
            party.receive_result(answer)
        except (DataError, ParameterError) as exc:
            raise UpstreamError(f"the correction server's result is invalid: {exc}") from None
        store.put_result(
            sensor,
            window,
            party,
            thresholds.d_tp,
            thresholds.w_o,
            int(layers.i_l2.size),
            int(layers.i_l3.size),
            described,
        )
        result = store.get_result(sensor, window)
        assert result is not None
        return result

    return create_app(
        title="privad relaxed-DP analyst",
        role=ROLE,
        routes=routes,
        tokens=tokens,
        max_body_bytes=max_body_bytes,
        recorder=recorder,
        on_shutdown=(peer.close, store.close),
        state={"store": store, "detector": detector},
    )


def _peer(call: Callable[..., Any], sensor: str, window: int, *args: Any) -> Any:
    """A call to the correction server, its failures turned into the analyst's answers."""
    try:
        return call(sensor, window, *args)
    except NotFound as exc:
        raise Conflict(
            f"the correction server has no distance differences for window {window} of sensor "
            f"{sensor!r}: the sensor must upload them before closing the window "
            f"({getattr(exc, 'detail', exc)})"
        ) from None
    except Conflict as exc:
        raise Conflict(f"the correction server refused: {getattr(exc, 'detail', exc)}") from None
    except UpstreamError:
        raise
    except ServiceError as exc:
        raise UpstreamError(str(exc)) from None
