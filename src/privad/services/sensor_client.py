"""The sensor S over the network: perturb, journal, charge, upload and close each window.

:class:`SensorUploader` is party S of the relaxed-DP protocol. For each window of the
stream it perturbs the records locally with :class:`privad.relaxed.Sensor` (steps 1a–1c),
journals the window's messages and row keys (:class:`privad.relaxed.journal.ReleaseJournal`,
if given), charges the window's guarantee to a :class:`privad.accounting.Ledger` (if
given), uploads d_diff to the correction server and 𝒯' to the analyst
(:mod:`privad.services.clients`), then closes the window at the analyst, which runs
detection and correction and answers with the corrected outliers.
:meth:`SensorUploader.send_stream` skips rows the journal says were released and completes
what an interrupted run left. The CSV input is read by :mod:`privad.services.streams`.

:func:`send_file` is the whole job of ``privad sensor send`` in one call: it builds the
sensor (once), the two clients, the ledger with its budget policy and the journal, and
sends a CSV file or stream window by window through :class:`SensorUploader`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from privad.accounting import Ledger, default_ledger_path
from privad.errors import DataError, ParameterError, PrivadWarning
from privad.io import rows_digest
from privad.relaxed.journal import ReleaseJournal, RowChain
from privad.relaxed.messages import SensorToAnalyst, SensorToCorrection
from privad.relaxed.parties import Sensor
from privad.relaxed.sensitivity import column_sensitivities, stream_sensitivities
from privad.relaxed.views import ProtocolViews
from privad.services.clients import AnalystClient, CorrectionClient
from privad.services.errors import Conflict
from privad.services.streams import iter_windows, read_csv_rows
from privad.validation import check_choice, check_int

__all__ = [
    "ON_RELEASED",
    "AlreadyReleased",
    "SendResult",
    "SendStarted",
    "SensorUploader",
    "SkippedRows",
    "WindowReport",
    "closed_outliers",
    "outliers_csv",
    "send_file",
]


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

    def lines(self) -> tuple[str, ...]:
        """The window's line (what ``privad sensor send`` prints for it).

        Examples
        --------
        >>> import numpy as np
        >>> from privad.services.sensor_client import WindowReport
        >>> print(*WindowReport(3, 400, np.array([7, 12]), 5, (True, True)).lines())
        window 3: 400 record(s) sent; 5 presumed outlier(s) before correction, 2 corrected ...
        >>> WindowReport(4, 80, None, None, (True, True)).lines()
        ('window 4: 80 record(s) uploaded',)
        """
        how = {
            "sent": "sent",
            "forced": "sent (forced re-release, charged again)",
            "resumed": "sent (completed from the journal: an identical copy)",
            "closed": "closed (uploaded before an interruption)",
        }[self.status]
        if self.outliers is None:
            return (
                f"window {self.window}: {self.n} record(s) {how.replace('sent', 'uploaded', 1)}",
            )
        return (
            f"window {self.window}: {self.n} record(s) {how}; {self.n_presumed} presumed "
            f"outlier(s) before correction, {self.outliers.size} corrected outlier(s)",
        )


def _span(numbers: Iterable[int]) -> str:
    """``"3"`` or ``"3..7"`` (smallest..largest)."""
    lo, hi = min(numbers), max(numbers)
    return str(lo) if lo == hi else f"{lo}..{hi}"


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

    def lines(self) -> tuple[str, ...]:
        """The line ``privad sensor send`` prints for the run of skipped rows.

        Examples
        --------
        >>> from privad.services.sensor_client import SkippedRows
        >>> SkippedRows(0, 700, (0, 1)).lines()[0][:46]
        'rows 0..699: already released (window(s) 0..1)'
        """
        return (
            f"rows {self.first_row}..{self.first_row + self.n - 1}: already released "
            f"(window(s) {_span(self.windows)}); skipped (--force-rerelease to release "
            "them again, charged)",
        )


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
        forced = "force" if on_released == "force" else "refuse"

        def send(number: int, rows: list[Any], keys: list[bytes], first_row: int) -> WindowReport:
            return self.send_window(
                number,
                np.array(rows),
                keys=keys,
                source=source,
                first_row=first_row,
                on_released=forced,
            )

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
                    yield send(number, window_rows, window_keys, window_first)
                    number += 1
                    window_rows, window_keys = [], []
            position += len(keys)
        if skip:
            yield SkippedRows(skip[0], skip[1], tuple(sorted(skip[2])))
        if window_rows and partial:
            yield send(number, window_rows, window_keys, window_first)

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


@dataclass(frozen=True)
class SendStarted:
    """What :func:`send_file` reports before its first window: each party's view of a
    window and its guarantee, where each window is charged and journalled."""

    views: ProtocolViews
    scope: str
    ledger: str
    journal: str

    def lines(self) -> tuple[str, ...]:
        """What ``privad sensor send`` prints first: the views and where windows go."""
        return (
            "each window: " + "; ".join(self.views.lines()),
            f"charged to scope {self.scope}/rows-DIGEST in {self.ledger}; journal {self.journal}",
        )


@dataclass(frozen=True)
class SendResult:
    """What :func:`send_file` did, window by window and run by run of skipped rows."""

    windows: tuple[WindowReport, ...]
    skipped: tuple[SkippedRows, ...]

    @property
    def sent(self) -> tuple[WindowReport, ...]:
        """The windows whose records were uploaded by this call (all but ``"closed"``)."""
        return tuple(r for r in self.windows if r.status != "closed")

    @property
    def records(self) -> int:
        """The records uploaded by this call."""
        return sum(r.n for r in self.sent)

    @property
    def skipped_records(self) -> int:
        """The records skipped as released before."""
        return sum(r.n for r in self.skipped)

    def summary(self) -> str:
        """The result in one line (``privad sensor send``'s last).

        Examples
        --------
        >>> from privad.services.sensor_client import SendResult, SkippedRows
        >>> SendResult((), (SkippedRows(0, 700, (0, 1)),)).summary()
        'sent 0 window(s), 0 record(s); 700 record(s) already released, skipped'
        """
        numbers = [w.window for w in self.sent]
        return (
            f"sent {len(numbers)} window(s), {self.records} record(s)"
            f"{f' (windows {_span(numbers)})' if numbers else ''}; "
            f"{self.skipped_records} record(s) already released, skipped"
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data (``privad sensor send --json``)."""
        return {
            "windows": [
                {
                    "window": r.window,
                    "records": r.n,
                    "status": r.status,
                    "presumed_outliers": r.n_presumed,
                    "outliers": None if r.outliers is None else r.outliers.tolist(),
                    "spend": r.spend_id,
                    "digest": r.digest,
                }
                for r in self.windows
            ],
            "skipped": [
                {"first_row": k.first_row, "records": k.n, "released_as": list(k.windows)}
                for k in self.skipped
            ],
            "records": self.records,
            "skipped_records": self.skipped_records,
            "counts": {
                status: sum(r.status == status for r in self.windows)
                for status in ("sent", "forced", "resumed", "closed")
            },
        }


def send_file(
    data: str | os.PathLike[str] | TextIO,
    *,
    analyst: str,
    correction: str,
    token: str,
    epsilon: float,
    window: int,
    global_sensitivity: Any,
    relaxed_sensitivity: Any = None,
    p_o: float = 10.0,
    scaling: Any = "relaxed-sensitivity",
    d_diff_centres: str = "separate",
    guarantee_unit: str = "record",
    exchange: str = "protected",
    cs_epsilon: float | None = None,
    tp_epsilon: float | None = None,
    columns: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    first_window: int = 0,
    partial: bool = True,
    on_released: str = "skip",
    close: bool = True,
    ledger: str | os.PathLike[str] | None = None,
    journal: str | os.PathLike[str] | None = None,
    scope: str = "relaxed-sensor",
    budget: float | None = None,
    correction_token: str | None = None,
    timeout: float = 60.0,
    retries: int = 3,
    verify: bool | str = True,
    rng: Any = None,
    on_event: Callable[[SendStarted | WindowReport | SkippedRows], None] | None = None,
) -> SendResult:
    """Perturb a CSV file or stream window by window and send it to the two servers.

    The sensor S of the relaxed-DP protocol (steps 1a–1c and 2) as one job: the
    :class:`~privad.relaxed.Sensor` is built and validated once, with ε and ``RS_j`` per
    column (eq. 1: given, or estimated from the first window with a
    :class:`~privad.errors.PrivacyWarning`, :func:`privad.relaxed.stream_sensitivities`);
    both servers are asked first (reachable, token accepted), before anything is spent;
    then every window leaves through :meth:`SensorUploader.send_window`: journalled, its
    release (``Sensor.views().release``: ε_T of Theorem 2 plus ε_CS of the protected
    exchange) spent in scope ``f"{scope}/rows-{DIGEST}"``, uploaded and closed. Rows the
    journal holds are skipped (``on_released``, see :meth:`SensorUploader.send_stream`),
    and what an interrupted run left is completed first.

    Parameters
    ----------
    data:
        A CSV file's path, or an open text stream (e.g. ``sys.stdin``); a header row is
        optional (:func:`privad.services.streams.read_csv_rows`).
    analyst, correction, token, correction_token:
        The servers' URLs, and this sensor's token (at the correction server
        ``correction_token`` when it differs).
    epsilon, relaxed_sensitivity, p_o, global_sensitivity, scaling, d_diff_centres, \
guarantee_unit, exchange, cs_epsilon, tp_epsilon:
        The sensor's parameters (:class:`~privad.relaxed.Sensor`); ``relaxed_sensitivity``
        is one value for every column or one per column, or None (eq. 1 on the first
        window, with the outlier percentage ``p_o``).
    window:
        Records per window.
    columns, exclude:
        The input's columns to send (names or positions), or to leave out.
    first_window, partial, on_released:
        The first new window's number (or after the journal's last); whether a last,
        shorter window is sent; what to do with rows released before (``"skip"``,
        ``"refuse"`` or ``"force"``: released again, charged again).
    close:
        Close each window at the analyst (detection and correction); False only uploads.
    ledger, journal, scope, budget:
        The ledger's and the journal's paths (defaults ``$PRIVAD_LEDGER`` or
        ``~/.privad/ledger.sqlite``, ``$PRIVAD_SENSOR_JOURNAL`` or
        ``~/.privad/sensor-journal.sqlite``); the scopes' base name; the total ε of a
        window's scope when it has none yet (default: one release, so the same records are
        never released twice unless forced).
    timeout, retries, verify:
        The HTTP clients' settings (:class:`~privad.services.clients.AnalystClient`).
    rng:
        A seed or :class:`~privad.noise.Randomness`; ``None``: OS entropy. **Never seed a
        real release.**
    on_event:
        Called with a :class:`SendStarted` before the first window, then with each
        :class:`WindowReport` and :class:`SkippedRows` as it happens.

    Returns
    -------
    SendResult

    Raises
    ------
    Conflict
        A server holds a window number the journal did not send (the message says what
        to do), or :class:`AlreadyReleased` records under ``on_released="refuse"``.
    DataError
        No records, or RS does not match the input's columns.

    Examples
    --------
    >>> import io
    >>> from privad.services.sensor_client import send_file
    >>> data = io.StringIO("t,h\\n20.5,40\\n21.0,41\\n")
    >>> servers = {"analyst": "http://127.0.0.1:8701", "correction": "http://127.0.0.1:8702"}
    >>> send_file(data, **servers, token="s", epsilon=0.5, window=0,
    ...     global_sensitivity=[40, 100])  # checked before any server is asked
    Traceback (most recent call last):
    ...
    privad.errors.ParameterError: window must be an integer >= 1, got 0

    With the two servers running (docs/relaxed.md starts them):

    >>> result = send_file(data, **servers, token="s", epsilon=0.5, window=2,
    ...     relaxed_sensitivity=[2, 5], global_sensitivity=[40, 100])  # doctest: +SKIP
    >>> result.records  # doctest: +SKIP
    2
    """
    size = check_int(window, "window", minimum=1)
    if isinstance(data, (str, os.PathLike)):
        try:
            stream: TextIO = open(data, newline="", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise DataError(f"cannot read {str(data)!r}: {exc.strerror}") from None
        label, source = str(data), str(Path(data).resolve())
    else:
        stream = data
        label = source = str(getattr(data, "name", "<stream>"))
    with contextlib.ExitStack() as stack:
        if stream is not data:
            stack.enter_context(stream)
        settings = {"timeout": timeout, "retries": retries, "verify": verify}
        a_client = stack.enter_context(AnalystClient(analyst, token, **settings))
        c_client = stack.enter_context(
            CorrectionClient(correction, correction_token or token, **settings)
        )
        # fail before any privacy is spent: both servers reachable, both tokens accepted
        a_client.windows()
        c_client.windows()
        rows = read_csv_rows(stream, columns=columns, exclude=exclude, source=label)
        head = list(itertools.islice(rows, size))
        if not head:
            raise DataError(f"{label}: no records to send")
        given = (
            None
            if relaxed_sensitivity is None
            else column_sensitivities(relaxed_sensitivity, len(head[0]), label)
        )
        sensor = Sensor(
            epsilon,
            stream_sensitivities(np.array(head), p_o, given=given),
            scaling=scaling,
            d_diff_centres=d_diff_centres,  # type: ignore[arg-type]
            global_sensitivity=global_sensitivity,
            guarantee_unit=guarantee_unit,  # type: ignore[arg-type]
            exchange=exchange,  # type: ignore[arg-type]
            cs_epsilon=cs_epsilon,
            tp_epsilon=tp_epsilon,
            rng=rng,
        )
        views = sensor.views()
        book = stack.enter_context(
            Ledger(
                ledger if ledger is not None else default_ledger_path(),
                create=True,
                default_budget=budget if budget is not None else views.release.epsilon,
            )
        )
        book_journal = stack.enter_context(ReleaseJournal(journal))
        uploader = SensorUploader(
            sensor, a_client, c_client, ledger=book, scope=scope, close=close, journal=book_journal
        )
        tell = on_event or (lambda event: None)
        tell(SendStarted(views, scope, str(book.path), book_journal.path))
        elsewhere = [
            r.window
            for r in book_journal.releases()
            if r.destination != uploader.destination and r.status in ("pending", "partial")
        ]
        if elsewhere:
            warnings.warn(
                f"{len(elsewhere)} interrupted release(s) in the journal were for other "
                "servers or another token; their records count as released (rerun against "
                "those servers to complete them)",
                PrivadWarning,
                stacklevel=2,
            )
        events = uploader.send_stream(
            itertools.chain(head, rows),
            size,
            first=first_window,
            partial=partial,
            source=source,
            on_released=on_released,
        )
        reports: list[WindowReport] = []
        skipped: list[SkippedRows] = []
        try:
            for event in events:
                (skipped if isinstance(event, SkippedRows) else reports).append(event)  # type: ignore[arg-type]
                tell(event)
        except AlreadyReleased:
            raise
        except Conflict as exc:
            raise Conflict(f"{exc}; {_next_hint(a_client, c_client, book_journal)}") from None
    return SendResult(tuple(reports), tuple(skipped))


def closed_outliers(analyst: AnalystClient, window: int | None = None) -> list[dict[str, Any]]:
    """The analyst's results (the corrected outliers, indices within the window) of
    ``window``, or of each of this sensor's closed windows (``privad sensor result``).

    Examples
    --------
    >>> from privad.services.sensor_client import closed_outliers, outliers_csv
    >>> class Analyst:  # stands in for an AnalystClient with this sensor's token
    ...     def windows(self):
    ...         return [{"window": 0, "status": "closed"}, {"window": 1, "status": "open"}]
    ...     def outliers(self, window):
    ...         return {"window": window, "outliers": [3, 9]}
    >>> closed_outliers(Analyst())
    [{'window': 0, 'outliers': [3, 9]}]
    >>> print(outliers_csv(closed_outliers(Analyst(), 1)), end="")
    window,index
    1,3
    1,9
    """
    if window is not None:
        return [analyst.outliers(window)]
    return [analyst.outliers(w["window"]) for w in analyst.windows() if w["status"] == "closed"]


def closed_window_line(window: int, result: dict[str, Any]) -> str:
    """``privad sensor close``'s line: the analyst's answer to closing ``window``
    (:meth:`~privad.services.clients.AnalystClient.close_window`), its records, |O'|
    before correction and the corrected outliers.

    Examples
    --------
    >>> from privad.services.sensor_client import closed_window_line
    >>> closed_window_line(3, {"n": 400, "n_presumed_outliers": 5, "outliers": [7, 12]})
    'window 3: 400 record(s); 5 presumed outlier(s) before correction, 2 corrected outlier(s)'
    """
    return (
        f"window {window}: {result['n']} record(s); {result['n_presumed_outliers']} presumed "
        f"outlier(s) before correction, {len(result['outliers'])} corrected outlier(s)"
    )


def outliers_csv(results: Iterable[dict[str, Any]]) -> str:
    """The results of :func:`closed_outliers` as CSV: a ``window,index`` line per outlier."""
    lines = ["window,index"] + [f"{r['window']},{i}" for r in results for i in r["outliers"]]
    return "\n".join(lines) + "\n"


def outliers_text(results: list[dict[str, Any]], fmt: str = "csv", one: bool = False) -> str:
    """The results of :func:`closed_outliers` as ``privad sensor result`` writes them: CSV
    (:func:`outliers_csv`) or, ``fmt`` ``"json"``, the analyst's results in full as a JSON
    list (``one``: the one window's result alone).

    Examples
    --------
    >>> from privad.services.sensor_client import outliers_text
    >>> print(outliers_text([{"window": 2, "outliers": [5]}], "json", one=True), end="")
    {
     "window": 2,
     "outliers": [
      5
     ]
    }
    """
    if fmt != "json":
        return outliers_csv(results)
    return json.dumps(results[0] if one else results, indent=1) + "\n"


def _next_hint(a_client: AnalystClient, c_client: CorrectionClient, journal: Any) -> str:
    """What to do after a 409: the servers hold a window number this journal did not
    send."""
    try:
        seen = [w["window"] for w in a_client.windows()] + [w["window"] for w in c_client.windows()]
    except Exception:  # only a hint
        seen = []
    nxt = (
        f"--first-window {max(seen) + 1} (first_window={max(seen) + 1}: the next free number)"
        if seen
        else "--first-window N (first_window=N: a number the servers do not hold)"
    )
    return (
        f"the servers hold this window number of this sensor, and the journal "
        f"{journal.path} did not send it: if another journal sent these records, rerun "
        "with that --journal (sending them again would release them twice); if they are "
        f"new records, give {nxt}"
    )
