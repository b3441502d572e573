"""HTTP clients of the relaxed-DP services, and the sensor's side of the protocol.

* :class:`AnalystClient`, :class:`CorrectionClient`: one method per endpoint (JSON bodies,
  ``Authorization: Bearer`` token, bounded retries of transient failures). Every upload is
  idempotent on the server (an identical repeat is acknowledged again, a different one is
  refused with 409), so retrying after a lost answer is safe.
* :class:`SensorUploader`: party S over the network. For each window of the stream it
  perturbs the records locally with :class:`privad.relaxed.Sensor` (steps 1a–1c), journals
  the window's messages and row keys (:class:`privad.relaxed.journal.ReleaseJournal`, if
  given), charges the window's guarantee to a :class:`privad.accounting.Ledger` (if given),
  uploads d_diff to the correction server and 𝒯' to the analyst, then closes the window at
  the analyst, which runs detection and correction and answers with the corrected outliers.
  :meth:`SensorUploader.send_stream` skips rows the journal says were released and
  completes what an interrupted run left.
  The CSV input is read by :mod:`privad.services.streams`.
* :class:`OracleClient`, :class:`RemoteOracle`: the noisy group oracle of the DP noisy
  binary search (``privad serve oracle``); a :class:`RemoteOracle` is a
  :class:`privad.search.Oracle`, so :func:`privad.search.search` runs against the server.
"""

from __future__ import annotations

import hashlib
import math
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from privad.errors import BudgetExceededError, DataError, ParameterError
from privad.io import rows_digest
from privad.noise import RandomnessLike
from privad.relaxed.journal import RowChain
from privad.relaxed.messages import (
    AnalystToCorrection,
    AnalystToCorrection2,
    CorrectionToAnalyst,
    CorrectionToAnalyst2,
    SensorToAnalyst,
    SensorToCorrection,
)
from privad.relaxed.parties import Sensor
from privad.search import (
    AnswerModel,
    Oracle,
    PrefixGroup,
    model_from_description,
    resolve_group,
)
from privad.services.bodies import Recorder, dumps
from privad.services.errors import Conflict, NotFound, ServiceError, UpstreamError
from privad.services.streams import iter_windows
from privad.validation import check_choice, check_int

__all__ = [
    "AlreadyReleased",
    "AnalystClient",
    "CorrectionClient",
    "CuratorClient",
    "OracleClient",
    "RemoteOracle",
    "SensorUploader",
    "ServiceClient",
    "SkippedRows",
    "WindowReport",
]

_RETRY_STATUS = {502, 503, 504}

SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
"""TCP_NODELAY: httpx writes a request's headers and body separately; with Nagle's
algorithm the body then waits for the server's delayed ACK (about 40 ms per request)."""


class ServiceClient:
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

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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


# --------------------------------------------------------------------------------------------
# The sensor over the network
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WindowReport:
    """What happened to one window.

    Attributes
    ----------
    window
        the window number.
    n
        its number of records.
    outliers
        the corrected outliers (record indices within the window), or None when
        the window was not closed.
    n_presumed
        |O'| (detections on 𝒯' before correction), or None.
    stored
        whether each upload was new (``False``: an identical copy was already there,
        or nothing was uploaded in this call).
    spend_id
        the ledger spend of this window, or None.
    status
        ``"sent"`` (a new release), ``"forced"`` (records released before, released
        again and charged), ``"resumed"`` (a journalled release sent again byte for byte
        after an interruption) or ``"closed"`` (a window uploaded before an interruption,
        closed now).
    digest
        the content digest of the window's records.
    first_row
        the input position of its first record, when known.
    """

    window: int
    n: int
    outliers: np.ndarray | None
    n_presumed: int | None
    stored: tuple[bool, bool]
    spend_id: int | None = None
    status: str = "sent"
    digest: str = ""
    first_row: int | None = None


@dataclass(frozen=True)
class SkippedRows:
    """Consecutive input rows found in the journal (released before): not sent again.

    Attributes
    ----------
    first_row
        the input position of the first of them (0-based).
    n
        how many.
    windows
        the window numbers they were released as, sorted.
    """

    first_row: int
    n: int
    windows: tuple[int, ...]


ON_RELEASED: tuple[str, ...] = ("refuse", "skip", "force")
"""What :meth:`SensorUploader.send_stream` does with records released before (refuse,
skip them, or release them again, charged); :meth:`~SensorUploader.send_window` knows
``"refuse"`` and ``"force"``."""


class AlreadyReleased(Conflict):
    """Records were released before (a second noisy copy would spend their privacy again);
    skip them, or pass ``on_released="force"`` to release them again, charged."""


class SensorUploader:
    """Party S over the network: perturb each window locally, charge it, upload, close.

    Parameters
    ----------
    sensor:
        The configured :class:`privad.relaxed.Sensor` (ε, relaxed sensitivities, scaling,
        exchange, randomness). One sensor object serves all windows in order, so with a
        seeded ``rng`` the noise equals that of the in-process protocol run window by window.
    analyst, correction:
        The clients, each with this sensor's token.
    ledger:
        Optional :class:`privad.accounting.Ledger`. Each window's whole release
        (``sensor.release_guarantee()``, which needs ``global_sensitivity``) is spent, before
        anything of the window leaves the process, in scope ``f"{scope}/rows-{digest}"``
        keyed by the content digest of the window's records
        (:func:`~privad.io.rows_digest`): windows hold disjoint records, so by
        parallel composition each is accounted on its own, and the same window under another
        number, file or sensor meets the same scope.
    scope:
        The base name of the ledger scopes.
    close:
        Close each window after uploading (default True); False only uploads.
    journal:
        Optional :class:`~privad.relaxed.journal.ReleaseJournal`: the durable record of which
        rows were released (by row key, :class:`~privad.relaxed.journal.RowChain`). Rows
        found there are not released again unless forced, and a release interrupted after
        it was journalled is completed with the journalled messages (an identical copy)
        instead of new noise.
    destination:
        A label of the servers and the sensor's identity, stored in the journal. Default:
        both URLs and a fingerprint of the tokens.
    """

    def __init__(
        self,
        sensor: Sensor,
        analyst: AnalystClient,
        correction: CorrectionClient,
        *,
        ledger: Any = None,
        scope: str = "relaxed-sensor",
        close: bool = True,
        journal: Any = None,
        destination: str = "",
    ) -> None:
        if not isinstance(sensor, Sensor):
            raise ParameterError(
                f"sensor must be a privad.relaxed.Sensor, got {type(sensor).__name__}"
            )
        self.sensor = sensor
        self.analyst = analyst
        self.correction = correction
        self.ledger = ledger
        self.scope = scope
        self.close = close
        self.journal = journal
        self.destination = destination or (
            f"{analyst.base_url} {correction.base_url} token "
            f"{analyst.token_fingerprint}/{correction.token_fingerprint}"
        )
        self._guarantee = sensor.release_guarantee() if ledger is not None else None

    def rows_scope(self, digest: str) -> str:
        """The ledger scope of a block of records, from its content digest."""
        return f"{self.scope}/rows-{digest[:32]}"

    def _charge(
        self, digest: str, window: int, n: int, release_id: int | None, forced: bool
    ) -> int | None:
        if self.ledger is None:
            return None
        from privad.accounting import RELAXED_DP

        scope = self.rows_scope(digest)
        g = self._guarantee
        assert g is not None
        if release_id is not None and self.journal is not None:
            for old in self.ledger.history(scope):  # charged before an interruption
                if old.metadata.get("journal") == [self.journal.path, release_id]:
                    return int(old.id)
        if forced and self.ledger.budgets(scope):
            self.ledger.set_budget(
                scope, RELAXED_DP, self.ledger.spent(scope, RELAXED_DP) + g.epsilon
            )
        spend = self.ledger.spend(
            scope,
            g,
            f"relaxed-DP window {window} ({n} records{', forced re-release' if forced else ''})",
            metadata={
                "window": window,
                "n": n,
                "digest": digest,
                "forced": forced,
                "analyst": self.analyst.base_url,
                "correction": self.correction.base_url,
                "journal": None if self.journal is None else [self.journal.path, release_id],
                "views": self.sensor.views().to_dict(),
            },
        )
        return int(spend.id)

    def send_window(
        self,
        window: int,
        data: Any,
        *,
        keys: Sequence[bytes] | None = None,
        source: str = "",
        first_row: int | None = None,
        on_released: str = "refuse",
    ) -> WindowReport:
        """Perturb one window (n × d, measurement units), charge, journal, upload, close.

        ``keys``: the rows' keys in their input stream (default: the window is a stream of
        its own, :class:`~privad.relaxed.journal.RowChain`). With a journal, rows released
        before are refused (:class:`AlreadyReleased`, ``on_released="refuse"``, default) or
        released again with new noise and charged again (``"force"``).
        """
        window = int(window)
        if window < 0:
            raise ParameterError(f"window numbers are >= 0, got {window}")
        on_released = check_choice(on_released, "on_released", ("refuse", "force"))
        block = self.sensor.check_data(data)
        n = int(block.shape[0])
        keys = RowChain().keys(block) if keys is None else list(keys)
        if len(keys) != n:
            raise ParameterError(f"keys must hold one key per record ({n}), got {len(keys)}")
        earlier = {} if self.journal is None else self.journal.released(keys)
        if earlier and on_released != "force":
            raise AlreadyReleased(
                f"{len(earlier)} of the {n} records of window {window} were already released "
                f"(as window(s) {_numbers(earlier.values())}); a second noisy copy would spend "
                "their privacy again: skip them, or force a charged re-release"
            )
        forced = bool(earlier)
        digest = rows_digest(block)
        to_analyst, to_correction = self.sensor.perturb(block)
        release_id = None
        if self.journal is not None:
            release_id = self.journal.begin(
                digest,
                window,
                n,
                keys=keys,
                source=source,
                first_row=first_row,
                destination=self.destination,
                to_analyst=to_analyst.to_dict(),
                to_correction=to_correction.to_dict(),
                forced=forced,
            )
        spend_id = self._charge(digest, window, n, release_id, forced)
        if release_id is not None and spend_id is not None:
            self.journal.update(release_id, spend_id=spend_id)  # type: ignore[union-attr]
        return self._upload(
            window,
            to_analyst,
            to_correction,
            release_id,
            spend_id,
            "forced" if forced else "sent",
            digest,
            first_row,
        )

    def resume(self) -> list[WindowReport]:
        """Complete what an interrupted run left to this destination (in the journal): each
        release whose uploads were cut short is sent again with its journalled (identical)
        messages and closed; a window uploaded but not closed is closed (when this uploader
        closes windows)."""
        if self.journal is None:
            return []
        reports = []
        for release in self.journal.unfinished(self.destination):
            if release.status == "sent":
                if self.close:
                    reports.append(
                        self._close(
                            release.window,
                            release.n,
                            release.id,
                            release.spend_id,
                            "closed",
                            release.digest,
                            release.first_row,
                        )
                    )
                continue
            spend_id = release.spend_id
            if spend_id is None:  # interrupted between the journal and the ledger
                spend_id = self._charge(
                    release.digest, release.window, release.n, release.id, release.forced
                )
                if spend_id is not None:
                    self.journal.update(release.id, spend_id=spend_id)
            reports.append(
                self._upload(
                    release.window,
                    SensorToAnalyst.from_dict(release.to_analyst),  # type: ignore[arg-type]
                    SensorToCorrection.from_dict(release.to_correction),  # type: ignore[arg-type]
                    release.id,
                    spend_id,
                    "resumed",
                    release.digest,
                    release.first_row,
                )
            )
        return reports

    def send_stream(
        self,
        rows: Iterable[Sequence[float]],
        size: int,
        *,
        first: int = 0,
        partial: bool = True,
        source: str = "",
        on_released: str = "skip",
    ) -> Iterator[WindowReport | SkippedRows]:
        """Send a stream of rows in windows of ``size`` records, as :func:`iter_windows` cuts
        them, continuing whatever an interrupted run left (:meth:`resume`).

        With a journal, each row is looked up by its key (:class:`RowChain` over this
        stream): rows released before are skipped (``on_released="skip"``, default; reported
        as :class:`SkippedRows`), refused (``"refuse"``: :class:`AlreadyReleased`) or
        released again and charged (``"force"``); the other rows fill the windows, so a rerun
        continues after the released rows whatever its window size. New windows are numbered
        from ``first``, or after the largest number this destination's journal holds.
        ``partial``: send a last window with fewer than ``size`` records.

        Yields a :class:`WindowReport` per window (first those :meth:`resume` completes) and
        a :class:`SkippedRows` per run of skipped rows, as they happen.
        """
        on_released = check_choice(on_released, "on_released", ON_RELEASED)
        yield from self.resume()
        number = int(first)
        if self.journal is not None:
            number = max(number, self.journal.next_window(self.destination))
        chain = RowChain()
        window_rows: list[np.ndarray] = []
        window_keys: list[bytes] = []
        window_first = 0
        skip: list[Any] = []  # [first_row, n, windows] of the current run of skipped rows
        position = 0
        for _, chunk in iter_windows(rows, size):
            block = self.sensor.check_data(chunk)
            keys = chain.keys(block)
            earlier = {} if self.journal is None else self.journal.released(keys)
            if earlier and on_released == "refuse":
                raise AlreadyReleased(
                    f"{len(earlier)} of rows {position}..{position + len(keys) - 1} were "
                    f"already released (as window(s) {_numbers(earlier.values())}); a second "
                    "noisy copy would spend their privacy again: skip them, or force a "
                    "charged re-release"
                )
            for i, key in enumerate(keys):
                if key in earlier and on_released == "skip":
                    if not skip:
                        skip = [position + i, 0, set()]
                    skip[1] += 1
                    skip[2].add(earlier[key])
                    continue
                if skip:
                    yield SkippedRows(skip[0], skip[1], tuple(sorted(skip[2])))
                    skip = []
                if not window_rows:
                    window_first = position + i
                window_rows.append(block[i])
                window_keys.append(key)
                if len(window_rows) == size:
                    yield self.send_window(
                        number,
                        np.array(window_rows),
                        keys=window_keys,
                        source=source,
                        first_row=window_first,
                        on_released="force" if on_released == "force" else "refuse",
                    )
                    number += 1
                    window_rows, window_keys = [], []
            position += len(keys)
        if skip:
            yield SkippedRows(skip[0], skip[1], tuple(sorted(skip[2])))
        if window_rows and partial:
            yield self.send_window(
                number,
                np.array(window_rows),
                keys=window_keys,
                source=source,
                first_row=window_first,
                on_released="force" if on_released == "force" else "refuse",
            )

    def _upload(
        self,
        window: int,
        to_analyst: SensorToAnalyst,
        to_correction: SensorToCorrection,
        release_id: int | None,
        spend_id: int | None,
        status: str,
        digest: str,
        first_row: int | None,
    ) -> WindowReport:
        stored_cs = self.correction.put_differences(window, to_correction)
        if release_id is not None:
            self.journal.update(release_id, status="partial")  # type: ignore[union-attr]
        stored_a = self.analyst.put_records(window, to_analyst)
        if release_id is not None:
            self.journal.update(release_id, status="sent")  # type: ignore[union-attr]
        n = int(to_analyst.perturbed.shape[0])
        if self.close:
            return self._close(
                window, n, release_id, spend_id, status, digest, first_row, (stored_cs, stored_a)
            )
        return WindowReport(
            window, n, None, None, (stored_cs, stored_a), spend_id, status, digest, first_row
        )

    def _close(
        self,
        window: int,
        n: int,
        release_id: int | None,
        spend_id: int | None,
        status: str,
        digest: str,
        first_row: int | None,
        stored: tuple[bool, bool] = (False, False),
    ) -> WindowReport:
        result = self.analyst.close_window(window)
        if release_id is not None:
            self.journal.update(release_id, status="closed")  # type: ignore[union-attr]
        return WindowReport(
            window,
            n,
            np.asarray(result["outliers"], dtype=np.int64),
            int(result["n_presumed_outliers"]),
            stored,
            spend_id,
            status,
            digest,
            first_row,
        )

    def send(
        self,
        windows: Iterable[tuple[int, Any]],
        on_window: Callable[[WindowReport], None] | None = None,
    ) -> list[WindowReport]:
        """:meth:`send_window` for each ``(window, data)`` in order."""
        reports = []
        for window, data in windows:
            report = self.send_window(window, data)
            if on_window is not None:
                on_window(report)
            reports.append(report)
        return reports


def _numbers(values: Iterable[int]) -> str:
    """``"0, 1, 2"`` (at most 5 numbers, then ``…``)."""
    nums = sorted(set(values))
    text = ", ".join(str(v) for v in nums[:5])
    return text + (", …" if len(nums) > 5 else "")


# --------------------------------------------------------------------------------------------
# The noisy group oracle of the DP noisy binary search (privad serve oracle)
# --------------------------------------------------------------------------------------------


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


class RemoteOracle(Oracle):
    """A :class:`privad.search.Oracle` whose data live on an oracle server.

    The answer model is rebuilt from the server's public description
    (:func:`privad.search.model_from_description`), so :func:`privad.search.search` runs
    against it unchanged. :meth:`query` sends the group: a
    :class:`~privad.search.PrefixGroup` as (order id, size, complement) after storing its
    order once (and again if the server answers 404, e.g. after a restart); a mask or an
    index array as indices. The server charges each answer to its own ledger and refuses
    queries past its budget (:class:`~privad.errors.BudgetExceededError`); the
    searcher's own accounting, if any, is separate (``search(ledger=...)``).

    Parameters
    ----------
    base_url, token:
        The server (``http://host:port``) and a token it accepts.
    timeout, retries, verify, recorder, transport:
        As for :class:`ServiceClient`. A query retried after a lost answer is charged
        again by the server (never less than what was released).
    """

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
        self.client = OracleClient(
            base_url,
            token,
            timeout=timeout,
            retries=retries,
            verify=verify,
            recorder=recorder,
            transport=transport,
        )
        try:
            info = self.client.model()
            self._model = model_from_description(info["model"])
            self._n_items = check_int(info["n_items"], "n_items", minimum=2)
        except (KeyError, TypeError, ParameterError, DataError) as exc:
            self.client.close()
            raise UpstreamError(
                f"the oracle at {self.client.base_url} sent a malformed model description: {exc}"
            ) from None
        except BaseException:
            self.client.close()
            raise
        self.description: dict[str, Any] = info
        self.last_budget: dict[str, Any] = dict(info.get("budget") or {})
        self.queries_sent = 0
        self._orders: dict[int, tuple[Any, str]] = {}

    @property
    def model(self) -> AnswerModel:
        return self._model

    @property
    def n_items(self) -> int:
        return self._n_items

    @property
    def base_url(self) -> str:
        """The server's URL."""
        return self.client.base_url

    def _order_id(self, order: Any, *, again: bool = False) -> str:
        key = id(order)
        known = self._orders.get(key)
        if known is not None and known[0] is order and not again:
            return known[1]
        oid = self.client.store_order(order.permutation)
        if len(self._orders) >= 16:  # a fresh order per query: keep only recent ones
            self._orders.pop(next(iter(self._orders)))
        self._orders[key] = (order, oid)
        return oid

    def query(self, group: Any, rng: RandomnessLike = None) -> Any:
        """Send one group query; the checked answer. ``rng`` cannot be given: the server
        draws its own noise."""
        if rng is not None:
            raise ParameterError(
                "a remote oracle draws its noise on the server; rng= cannot be given"
            )
        resolved = resolve_group(group, self._n_items)
        if isinstance(resolved, PrefixGroup):
            oid = self._order_id(resolved.order)
            try:
                data = self.client.query_prefix(oid, resolved.size, resolved.complement)
            except NotFound:  # the server forgot the order (restart, or too many orders)
                oid = self._order_id(resolved.order, again=True)
                data = self.client.query_prefix(oid, resolved.size, resolved.complement)
        else:
            data = self.client.query_indices(np.flatnonzero(resolved))
        self.queries_sent += 1
        if not isinstance(data, dict) or "answer" not in data:
            raise UpstreamError(f"the oracle at {self.base_url} answered without 'answer'")
        if isinstance(data.get("budget"), dict):
            self.last_budget = data["budget"]
        try:
            return self._model.check_answer(data["answer"])
        except DataError as exc:
            raise UpstreamError(
                f"the oracle at {self.base_url} sent a malformed answer: {exc}"
            ) from None

    def budget(self) -> dict[str, Any]:
        """The server's budget now (``GET /v1/budget``)."""
        self.last_budget = self.client.budget()
        return self.last_budget

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def __enter__(self) -> RemoteOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteOracle({self.base_url!r}, n_items={self._n_items}, {self._model!r})"
