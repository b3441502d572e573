"""Labelled time series for the DP noisy binary search: NAB and the Yahoo S5 format.

The noisy-binary-search paper (Bittner, Sarwate, Wright) evaluates on the Yahoo S5 A1
benchmark (section 6.1), whose licence forbids redistribution;
:func:`load_yahoo` reads a user's copy. The Numenta Anomaly Benchmark (NAB, MIT licence) is
the offline stand-in: a few series are embedded, and
:func:`load_nab` reads any series of a full NAB checkout given its root.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from privad.columns import numeric_column
from privad.datasets.containers import TimeSeries, as_labels
from privad.datasets.embedded import data_root, embedded_path
from privad.datasets.formats import existing_file
from privad.errors import DataError, DatasetNotFoundError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_nab", "load_yahoo", "nab_series", "NAB_SOURCE", "NAB_LICENCE", "YAHOO_LICENCE"]

PathLike = str | os.PathLike[str]

NAB_SOURCE = "Numenta Anomaly Benchmark (Lavin & Ahmad, 2015), github.com/numenta/NAB"
NAB_LICENCE = "MIT (Copyright 2014-2024 Numenta Inc.; see data/nab/LICENSE.txt)"
YAHOO_SOURCE = "Yahoo Webscope S5: labeled anomaly detection dataset (A1-A4 benchmarks)"
YAHOO_LICENCE = "Yahoo Webscope data licence (no redistribution); not shipped with privad"

_WINDOWS = "labels/combined_windows.json"


def _nab_windows(root: Path, embedded: bool) -> dict[str, list[list[str]]]:
    path = embedded_path(f"nab/{_WINDOWS}") if embedded else root / _WINDOWS
    if not path.is_file():
        raise DatasetNotFoundError(
            f"no NAB label file at {str(path)!r}; root must be a NAB checkout holding data/ and"
            f" {_WINDOWS}"
        )
    try:
        windows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{str(path)!r} is not a readable NAB windows file: {exc}") from None
    if not isinstance(windows, dict):
        raise DataError(f"{str(path)!r} must map series paths to lists of windows")
    return windows


def nab_series(root: PathLike | None = None) -> list[str]:
    """The NAB series available: the embedded ones, or every labelled one under ``root``.

    Names are ``<category>/<series>`` without ``.csv``, e.g. ``realTraffic/speed_7578``.
    """
    base = data_root() / "nab" if root is None else Path(root).expanduser()
    windows = _nab_windows(base, root is None)
    return sorted(key.removesuffix(".csv") for key in windows)


def _resolve_nab(series: str, names: list[str]) -> str:
    if not isinstance(series, str) or not series.strip():
        raise ParameterError(f"series must be a NAB series name, got {series!r}")
    wanted = series.strip().removeprefix("nab:").removesuffix(".csv")
    if wanted in names:
        return wanted
    matches = [n for n in names if n.rsplit("/", 1)[-1] == wanted]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ParameterError(
            f"NAB series {series!r} is ambiguous: {matches}; give the category too"
        )
    raise DatasetNotFoundError(
        f"unknown NAB series {series!r}; available:"
        f" {', '.join(n.rsplit('/', 1)[-1] for n in names)}"
    )


def load_nab(series: str, root: PathLike | None = None) -> TimeSeries:
    """One NAB series with its anomaly windows.

    The series file has the header ``timestamp,value``; ``labels/combined_windows.json`` maps
    ``<category>/<series>.csv`` to a list of ``[start, end]`` windows. A point is labelled 1
    when its timestamp lies inside a window, both ends included.

    Parameters
    ----------
    series
        ``"speed_7578"``, ``"realTraffic/speed_7578"`` or ``"nab:speed_7578"``.
    root
        a NAB checkout (the folder holding ``data/`` and ``labels/``); default the
        series embedded in privad (see :func:`nab_series`).

    Raises
    ------
    DatasetNotFoundError
        unknown series, missing file.
    DataError
        a malformed file (bad header, unparsable timestamp, non-finite value).
    """
    import pandas as pd  # imported lazily: keeps 'import privad' fast

    embedded = root is None
    base = data_root() / "nab" if embedded else Path(root).expanduser()
    if not embedded and not base.is_dir():
        raise DatasetNotFoundError(f"NAB root {str(base)!r} is not a folder")
    windows_by_key = _nab_windows(base, embedded)
    names = sorted(k.removesuffix(".csv") for k in windows_by_key)
    rel = _resolve_nab(series, names)
    key = f"{rel}.csv"
    csv_path = embedded_path(f"nab/data/{key}") if embedded else base / "data" / key
    if not csv_path.is_file():
        raise DatasetNotFoundError(f"NAB series file {str(csv_path)!r} is missing")
    frame = _read_series_csv(csv_path)
    for column in ("timestamp", "value"):
        if column not in frame.columns:
            raise DataError(
                f"{str(csv_path)!r} must have the header timestamp,value; it has"
                f" {list(frame.columns)}"
            )
    try:
        stamps = pd.to_datetime(frame["timestamp"], format="%Y-%m-%d %H:%M:%S").to_numpy()
    except (ValueError, TypeError) as exc:
        raise DataError(
            f"{str(csv_path)!r}: a timestamp is not 'YYYY-MM-DD HH:MM:SS': {exc}"
        ) from None
    values = numeric_column(frame["value"], "value", str(csv_path))
    windows: list[tuple[np.datetime64, np.datetime64]] = []
    labels = np.zeros(len(frame), dtype=np.int64)
    for window in windows_by_key[key]:
        try:
            start, end = (np.datetime64(pd.Timestamp(t), "ns") for t in window)
        except (ValueError, TypeError) as exc:
            raise DataError(f"NAB window {window!r} of {key} is malformed: {exc}") from None
        windows.append((start, end))
        labels[(stamps >= start) & (stamps <= end)] = 1
    return TimeSeries(
        timestamps=stamps,
        values=values,
        labels=labels,
        windows=windows,
        name=f"nab:{rel.rsplit('/', 1)[-1]}",
        source=f"{NAB_SOURCE}, data/{key}",
        licence=NAB_LICENCE,
        metadata={"series": rel, "path": str(csv_path)},
    )


def _read_series_csv(path: Path) -> pd.DataFrame:
    import pandas as pd  # imported lazily: keeps 'import privad' fast

    try:
        frame = pd.read_csv(path, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise DataError(f"{str(path)!r} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{str(path)!r} is not a readable CSV file: {exc}") from None
    if len(frame) == 0:
        raise DataError(f"{str(path)!r} has a header but no data rows")
    return frame


def load_yahoo(path: PathLike) -> TimeSeries:
    """One series of the Yahoo S5 benchmark (A1 ``real_N.csv`` layout).

    The file has the header ``timestamp,value,is_anomaly`` (A1, A2; A3/A4 files with
    ``timestamps`` and ``anomaly`` are accepted too). Timestamps are integers: A1 numbers
    the points 1..n, A2-A4 use Unix seconds. They are stored as ``datetime64`` read as
    seconds since 1970-01-01 (so A1's point k becomes 1970-01-01 00:00:k), with the raw
    integers in ``metadata["raw_timestamps"]``. Labels are per point; ``windows`` is empty.

    The data may not be redistributed, so privad never ships it; this loader exists so that
    holders of the data can run the noisy-binary-search paper's experiments (section 6) on
    it (``privad reproduce search --yahoo-root``).
    """
    p = existing_file(path, "Yahoo S5 series file")
    frame = _read_series_csv(p)
    columns = {str(c).strip().lower(): c for c in frame.columns}
    ts_col = columns.get("timestamp", columns.get("timestamps"))
    label_col = columns.get("is_anomaly", columns.get("anomaly"))
    if ts_col is None or "value" not in columns or label_col is None:
        raise DataError(
            f"{str(p)!r} must have the header timestamp,value,is_anomaly (Yahoo S5 layout); it"
            f" has {list(frame.columns)}"
        )
    raw = numeric_column(frame[ts_col], str(ts_col), str(p))
    if not np.all(raw == np.round(raw)):
        row = int(np.flatnonzero(raw != np.round(raw))[0])
        raise DataError(
            f"{str(p)!r}: timestamps must be integers; data row {row + 1} holds {raw[row]}"
        )
    raw_int = raw.astype(np.int64)
    values = numeric_column(frame[columns["value"]], "value", str(p))
    labels = as_labels(
        numeric_column(frame[label_col], str(label_col), str(p)),
        len(frame),
        f"column {str(label_col)!r} of {str(p)!r}",
    )
    return TimeSeries(
        timestamps=raw_int.astype("datetime64[s]"),
        values=values,
        labels=labels,
        windows=[],
        name=f"yahoo:{p.stem}",
        source=f"{YAHOO_SOURCE}, {p.name}",
        licence=YAHOO_LICENCE,
        metadata={"raw_timestamps": raw_int, "path": str(p)},
    )
