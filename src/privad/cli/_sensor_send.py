"""The sending loop of ``privad sensor send`` (:mod:`privad.cli.sensor`): DATA window by
window through :class:`privad.services.sensor_client.SensorUploader` (each window charged to the
ledger and journalled before it leaves), one line per window, and the summary."""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import typer

from privad.cli._options import existing_file
from privad.cli._render import emit, warn
from privad.errors import DataError


@dataclass(frozen=True)
class SendJob:
    """The parsed options of ``privad sensor send``."""

    data: str
    analyst: str
    correction: str
    secret: str
    correction_token: str | None
    eps: float
    size: int
    first: int
    p_o: float
    rs: Any
    scaling: str
    centres: str
    unit: str
    gs: Any
    exchange: str
    cs_eps: float | None
    tp_eps: float | None
    keep_partial: bool
    columns: list[str] | None
    exclude: list[str] | None
    seed: int | None
    ledger: str | None
    journal: str | None
    scope: str
    budget: float | None
    force_rerelease: bool
    timeout: float
    retries: int
    verify: Any
    close: bool
    quiet: bool
    as_json: bool


def send_windows(job: SendJob) -> None:
    """Send DATA window by window (see :func:`privad.cli.sensor.send`) and print the result."""
    from privad.noise import Randomness
    from privad.relaxed import Sensor, stream_sensitivities
    from privad.services.clients import AnalystClient, CorrectionClient
    from privad.services.errors import Conflict
    from privad.services.sensor_client import AlreadyReleased, SensorUploader, SkippedRows
    from privad.services.streams import read_csv_rows

    def say(text: str) -> None:
        if not (job.quiet or job.as_json):
            typer.echo(text)

    stream: Any
    if job.data == "-":
        stream, label = sys.stdin, "<stdin>"
    else:
        path = existing_file(job.data, "DATA")
        try:
            stream = open(path, newline="", encoding="utf-8")
        except OSError as exc:
            raise DataError(f"cannot read {job.data!r}: {exc.strerror}") from None
        label = job.data
    a_client = c_client = None
    try:
        a_client = AnalystClient(
            job.analyst, job.secret, timeout=job.timeout, retries=job.retries, verify=job.verify
        )
        c_client = CorrectionClient(
            job.correction,
            job.correction_token or job.secret,
            timeout=job.timeout,
            retries=job.retries,
            verify=job.verify,
        )
        # fail before any privacy is spent: both servers reachable, both tokens accepted
        a_client.windows()
        c_client.windows()
        rows = read_csv_rows(stream, columns=job.columns, exclude=job.exclude, source=label)
        head = list(itertools.islice(rows, job.size))
        if not head:
            raise DataError(f"{label}: no records to send")
        rs = stream_sensitivities(np.array(head), job.p_o, given=job.rs)
        sensor = Sensor(
            job.eps,
            rs,
            scaling=job.scaling,
            d_diff_centres=job.centres,  # type: ignore[arg-type]
            global_sensitivity=job.gs,
            guarantee_unit=job.unit,  # type: ignore[arg-type]
            exchange=job.exchange,
            cs_epsilon=job.cs_eps,  # type: ignore[arg-type]
            tp_epsilon=job.tp_eps,
            rng=None if job.seed is None else Randomness(job.seed),
        )
        from privad.accounting import Ledger, default_ledger_path
        from privad.relaxed.journal import ReleaseJournal

        views = sensor.views()
        g = views.release
        book = Ledger(
            job.ledger if job.ledger is not None else default_ledger_path(),
            create=True,
            default_budget=job.budget if job.budget is not None else g.epsilon,
        )
        try:
            book_journal = ReleaseJournal(job.journal)
        except BaseException:
            book.close()
            raise
        reports: list[Any] = []
        skipped: list[Any] = []
        n_records = 0
        sent_windows: list[int] = []
        try:
            uploader = SensorUploader(
                sensor,
                a_client,
                c_client,
                ledger=book,
                scope=job.scope,
                close=job.close,
                journal=book_journal,
            )
            say("each window: " + "; ".join(views.lines()))
            say(
                f"charged to scope {job.scope}/rows-DIGEST in {book.path}; "
                f"journal {book_journal.path}"
            )
            elsewhere = [
                r.window
                for r in book_journal.releases()
                if r.destination != uploader.destination and r.status in ("pending", "partial")
            ]
            if elsewhere:
                warn(
                    f"{len(elsewhere)} interrupted release(s) in the journal were for other "
                    "servers or another token; their records count as released (rerun "
                    "against those servers to complete them)"
                )
            events = uploader.send_stream(
                itertools.chain(head, rows),
                job.size,
                first=job.first,
                partial=job.keep_partial,
                source=label if job.data == "-" else str(Path(label).resolve()),
                on_released="force" if job.force_rerelease else "skip",
            )
            while True:
                try:
                    report = next(events, None)
                except Conflict as exc:
                    if isinstance(exc, AlreadyReleased):
                        raise
                    raise Conflict(
                        f"{exc}; {_next_hint(a_client, c_client, book_journal)}"
                    ) from None
                if report is None:
                    break
                if isinstance(report, SkippedRows):
                    skipped.append(report)
                    say(
                        f"rows {report.first_row}..{report.first_row + report.n - 1}: already "
                        f"released (window(s) {_span(report.windows)}); skipped "
                        "(--force-rerelease to release them again, charged)"
                    )
                    continue
                reports.append(report)
                if report.status != "closed":  # "closed": its records were counted before
                    n_records += report.n
                    sent_windows.append(report.window)
                say(_window_line(report))
        finally:
            book.close()
            book_journal.close()
        n_skipped = sum(r.n for r in skipped)
        span = f" (windows {_span(sent_windows)})" if sent_windows else ""
        summary = (
            f"sent {len(sent_windows)} window(s), {n_records} record(s){span}; "
            f"{n_skipped} record(s) already released, skipped"
        )
        payload = {
            "windows": [
                {
                    "window": r.window,
                    "records": r.n,
                    "status": r.status,
                    "presumed_outliers": r.n_presumed,
                    "outliers": r.outliers,
                    "spend": r.spend_id,
                    "digest": r.digest,
                }
                for r in reports
            ],
            "skipped": [
                {"first_row": r.first_row, "records": r.n, "released_as": list(r.windows)}
                for r in skipped
            ],
            "records": n_records,
            "skipped_records": n_skipped,
            "counts": {
                status: sum(r.status == status for r in reports)
                for status in ("sent", "forced", "resumed", "closed")
            },
        }
        emit(
            payload,
            job.as_json,
            lambda console: None if job.quiet else console.print(summary, markup=False),
        )
    finally:
        for client in (a_client, c_client):
            if client is not None:
                client.close()
        if stream is not sys.stdin:
            stream.close()


def _span(numbers: Any) -> str:
    """``"3"`` or ``"3..7"`` (smallest..largest)."""
    lo, hi = min(numbers), max(numbers)
    return str(lo) if lo == hi else f"{lo}..{hi}"


def _window_line(report: Any) -> str:
    """The line ``privad sensor send`` prints for one window's report."""
    how = {
        "sent": "sent",
        "forced": "sent (forced re-release, charged again)",
        "resumed": "sent (completed from the journal: an identical copy)",
        "closed": "closed (uploaded before an interruption)",
    }[report.status]
    if report.outliers is None:
        return f"window {report.window}: {report.n} record(s) {how.replace('sent', 'uploaded', 1)}"
    return (
        f"window {report.window}: {report.n} record(s) {how}; {report.n_presumed} presumed "
        f"outlier(s) before correction, {report.outliers.size} corrected outlier(s)"
    )


def _next_hint(a_client: Any, c_client: Any, journal: Any) -> str:
    """What to do after a 409: the servers hold a window number this journal did not
    send."""
    try:
        seen = [w["window"] for w in a_client.windows()] + [w["window"] for w in c_client.windows()]
    except Exception:  # only a hint
        seen = []
    nxt = (
        f"--first-window {max(seen) + 1} (the next free number)"
        if seen
        else "--first-window N (a number the servers do not hold)"
    )
    return (
        f"the servers hold this window number of this sensor, and the journal "
        f"{journal.path} did not send it: if another journal sent these records, rerun "
        "with that --journal (sending them again would release them twice); if they are "
        f"new records, give {nxt}"
    )
