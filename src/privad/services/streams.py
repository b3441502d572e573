"""A sensor's input: a CSV file or stream cut into windows of records, read incrementally.

* :func:`read_csv_rows`: numeric rows of a CSV stream, line by line (a live stream on
  standard input works); the first row is a header if any field is not a number.
* :func:`iter_windows`: rows cut into numbered windows of ``size`` records, each yielded as
  soon as its last row is read.
* :func:`read_csv_array`: a whole CSV file as one array (historical data).

``privad sensor send`` feeds :class:`privad.services.sensor_client.SensorUploader` with these.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

import numpy as np

from privad.columns import plan_columns
from privad.errors import DataError, ParameterError

__all__ = ["iter_windows", "read_csv_array", "read_csv_rows"]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_csv_rows(
    stream: TextIO | Iterable[str],
    *,
    columns: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    source: str = "data",
) -> Iterator[list[float]]:
    """Numeric rows of a CSV stream, read line by line.

    The first row is a header if any of its fields is not a number. ``columns`` picks
    columns by header name or 0-based position (default: every column not in ``exclude``;
    :func:`privad.columns.plan_columns`). Every row must have the same number of
    fields and finite numbers in the chosen columns; otherwise a
    :class:`~privad.errors.DataError` names the line.
    """
    reader = csv.reader(stream)
    header: list[str] | None = None
    picks: list[int] | None = None
    width: int | None = None
    for fields in reader:
        lineno = reader.line_num
        if not fields or all(not f.strip() for f in fields):
            continue
        fields = [f.strip() for f in fields]
        if width is None:
            width = len(fields)
            if not all(_is_number(f) for f in fields):
                header = fields
                picks = _pick(columns, exclude, header, width, source)
                continue
            picks = _pick(columns, exclude, None, width, source)
        if len(fields) != width:
            raise DataError(f"{source}: line {lineno} has {len(fields)} field(s), expected {width}")
        assert picks is not None
        try:
            row = [float(fields[j]) for j in picks]
        except ValueError:
            raise DataError(f"{source}: line {lineno} holds a value that is not a number") from None
        if not all(math.isfinite(v) for v in row):
            raise DataError(
                f"{source}: line {lineno} holds NaN or infinity; only finite values are allowed"
            )
        yield row


def _pick(
    columns: Sequence[str] | None,
    exclude: Sequence[str] | None,
    header: list[str] | None,
    width: int,
    source: str,
) -> list[int]:
    """The positions of the chosen columns (by header name or position)."""
    names: list[Any] = list(header) if header is not None else list(range(width))
    plan = plan_columns(names, columns=columns, exclude=exclude, source=source)
    return [names.index(c) for c in plan.features]


def iter_windows(
    rows: Iterable[Sequence[float]], size: int, *, first: int = 0, partial: bool = True
) -> Iterator[tuple[int, np.ndarray]]:
    """Cut rows into windows of ``size`` records: ``(window number, n × d array)``.

    Windows are numbered from ``first``. A final window with fewer than ``size`` records
    is yielded if ``partial`` (default) and dropped otherwise. A window is yielded as soon
    as its last row is read.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ParameterError(f"window size must be an integer >= 1, got {size!r}")
    buf: list[Sequence[float]] = []
    w = int(first)
    for row in rows:
        buf.append(row)
        if len(buf) == size:
            yield w, np.array(buf, dtype=np.float64)
            buf = []
            w += 1
    if buf and partial:
        yield w, np.array(buf, dtype=np.float64)


def read_csv_array(
    path_or_text: str,
    *,
    columns: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    source: str | None = None,
) -> np.ndarray:
    """A whole CSV file as an n × d array (for historical data)."""
    label = source or path_or_text
    try:
        with open(path_or_text, newline="", encoding="utf-8") as handle:
            rows = list(read_csv_rows(handle, columns=columns, exclude=exclude, source=label))
    except OSError as exc:
        raise DataError(f"cannot read {label!r}: {exc.strerror}") from None
    if not rows:
        raise DataError(f"{label}: no records")
    return np.array(rows, dtype=np.float64)
