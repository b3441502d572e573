"""What ``privad datasets`` shows, for Python users too: a catalogue entry as data
(:func:`entry_dict`) and one dataset or data file described with its summary statistics
(:func:`describe_source`), and the same as text a person reads (:func:`catalogue_rows`,
:func:`entry_fields`, :func:`data_fields`, :func:`statistics_rows`); and what public bounds
did to the features of a run, in one line (:func:`scaling_text`).

Examples
--------
>>> from privad.datasets.summary import describe_source
>>> doc = describe_source("thyroid")
>>> doc["entry"]["kind"], doc["data"]["records"], doc["data"]["anomalies"]
('embedded', 3772, 93)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from privad.datasets.containers import Dataset, TimeSeries
from privad.datasets.embedded import expected_sha256
from privad.datasets.preprocessing import BoundsScaling
from privad.datasets.registry import DatasetInfo, describe, list_datasets, load
from privad.errors import DatasetNotFoundError, ParameterError

__all__ = [
    "catalogue_rows",
    "data_fields",
    "describe_source",
    "entry_dict",
    "entry_fields",
    "scaling_text",
    "statistics_rows",
]

#: The most features :func:`statistics_rows` lists (then a row says how many more).
MAX_FEATURES = 20


def entry_dict(entry: DatasetInfo) -> dict[str, Any]:
    """A catalogue entry as JSON data (its loader left out).

    Examples
    --------
    >>> from privad.datasets import describe
    >>> entry_dict(describe("thyroid"))["shape"]
    [3772, 6]
    """
    return {
        "name": entry.name,
        "kind": entry.kind,
        "shape": None if entry.shape is None else list(entry.shape),
        "anomalies": entry.n_anomalies,
        "anomalies_text": entry.anomalies_text,
        "series": entry.series,
        "description": entry.description,
        "source": entry.source,
        "licence": entry.licence,
        "usage": entry.usage,
        "files": list(entry.files),
    }


def describe_source(
    name: str, *, path: str | None = None, seed: int = 0, stats: bool = True
) -> dict[str, Any]:
    """A catalogue dataset (``name``) or a data file (a path) described: ``{"entry": ...,
    "data": ...}``, ``data`` the summary statistics of the loaded data (None without
    ``stats``; ``{"available": False, "reason": ...}`` for external data not found).

    ``path`` is the file of an external dataset; ``seed`` that of a generated one, so the
    statistics are repeatable. An unknown name that is no file is a
    :class:`~privad.errors.DatasetNotFoundError` with suggestions.
    """
    entry = _registered(name)
    if entry is None:  # a data file, read by the rule of every data file (docs/data.md)
        if path is not None:
            raise ParameterError(
                "--path applies to the external datasets (gas, creditcard, yahoo); "
                f"{name!r} is a file: it is described as it is"
            )
        data = _summary(load(Path(name).expanduser()), None) if stats else None
        return {"entry": {"name": name, "kind": "file"}, "data": data}
    doc: dict[str, Any] = {"entry": entry_dict(entry), "data": None}
    if entry.kind == "embedded":
        doc["entry"]["sha256"] = {f: expected_sha256(f) for f in entry.files}
    if stats:
        try:
            data = _load(entry, path, seed)
        except DatasetNotFoundError as exc:
            if entry.kind != "external" or path is not None:
                raise
            doc["data"] = {"available": False, "reason": str(exc)}
        else:
            doc["data"] = _summary(data, seed if entry.kind == "generated" else None)
    return doc


def _registered(name: str) -> DatasetInfo | None:
    """The registry's entry of ``name``; None for a path that exists (a data file)."""
    try:
        return describe(name)
    except DatasetNotFoundError:
        if Path(name).expanduser().exists():
            return None
        raise


def _load(entry: DatasetInfo, path: str | None, seed: int) -> Dataset | TimeSeries:
    if entry.kind == "external":
        return entry.loader(path=path)
    if path is not None:
        raise ParameterError(f"--path does not apply to the {entry.kind} dataset {entry.name!r}")
    return entry.loader(rng=seed) if entry.kind == "generated" else entry.loader()


def _when(stamp: np.datetime64) -> str:
    return np.datetime_as_string(stamp, unit="s").replace("T", " ")


def _summary(data: Dataset | TimeSeries, seed: int | None) -> dict[str, Any]:
    """Loaded data's summary (``seed``: that of generated data, else None)."""
    if isinstance(data, TimeSeries):
        values = data.values
        return {
            "available": True,
            "points": len(data),
            "from": _when(data.timestamps[0]),
            "to": _when(data.timestamps[-1]),
            "anomalous_points": data.n_anomalies,
            "windows": [[_when(s), _when(e)] for s, e in data.windows],
            "values": {
                "min": values.min(),
                "mean": values.mean(),
                "sd": values.std(),
                "max": values.max(),
            },
        }
    n, d = data.shape
    X = data.X
    info: dict[str, Any] = {
        "available": True,
        "records": n,
        "features": d,
        "anomalies": data.n_anomalies,
        "anomaly_share": None if data.y is None else float(data.y.mean()),
        "seed": seed,
        "statistics": [
            {"feature": f, "min": lo, "mean": mu, "sd": sd, "max": hi}
            for f, lo, mu, sd, hi in zip(
                data.feature_names,
                X.min(axis=0),
                X.mean(axis=0),
                X.std(axis=0),
                X.max(axis=0),
                strict=True,
            )
        ],
    }
    if data.classes is not None:
        values, counts = np.unique(data.classes, return_counts=True)
        info["classes"] = {str(v): int(c) for v, c in zip(values, counts, strict=True)}
    return info


def catalogue_rows(kind: str | None = None) -> list[tuple[str, str, str, str, str]]:
    """The catalogue (of one ``kind``, or all) as text: name, kind, shape, anomalies and
    licence (its short name where it has one) of each entry.

    Examples
    --------
    >>> catalogue_rows("embedded")[0]
    ('thyroid', 'embedded', '3772 x 6', '93', 'BSD-2-Clause')
    """
    return [
        (e.name, e.kind, e.shape_text, e.anomalies_text, e.licence_short or e.licence)
        for e in list_datasets(kind)  # type: ignore[arg-type]
    ]


def entry_fields(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """The fields of a described entry (``describe_source(...)["entry"]``) as text: name,
    kind, shape, anomalies, description, source, licence, usage and its files (with their
    SHA-256 digests for embedded data); a data file has only a name and its kind.

    Examples
    --------
    >>> entry_fields(describe_source("thyroid", stats=False)["entry"])[:3]
    [('name', 'thyroid'), ('kind', 'embedded'), ('shape', '3772 x 6')]
    """
    if entry["kind"] == "file":
        return [("name", entry["name"]), ("kind", "file")]
    rows = [
        ("name", entry["name"]),
        ("kind", entry["kind"]),
        ("shape", "varies" if entry["shape"] is None else "{} x {}".format(*entry["shape"])),
        ("anomalies", entry["anomalies_text"]),
        *((key, entry[key]) for key in ("description", "source", "licence", "usage")),
    ]
    if "sha256" in entry:
        rows += [(f"file {f}", f"sha256 {digest}") for f, digest in entry["sha256"].items()]
    elif entry["files"]:
        rows.append(("file", ", ".join(entry["files"])))
    return [(key, str(value)) for key, value in rows]


def data_fields(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary of loaded data (``describe_source(...)["data"]``, available) as text: a
    time series' points, span, anomalous points, windows and values; a table's shape,
    labelled anomalies, anomaly share, classes and seed.

    Examples
    --------
    >>> data_fields(describe_source("thyroid")["data"])[:2]
    [('loaded', '3772 x 6'), ('labelled anomalies', '93')]
    """
    if "points" in data:  # a time series
        v = data["values"]
        rows = [
            ("points", data["points"]),
            ("from", data["from"]),
            ("to", data["to"]),
            ("anomalous points", data["anomalous_points"]),
            ("windows", "; ".join(f"{s} .. {e}" for s, e in data["windows"]) or "-"),
            ("values", ", ".join(f"{k} {_number(v[k])}" for k in ("min", "mean", "sd", "max"))),
        ]
    else:
        share = data["anomaly_share"]
        rows = [
            ("loaded", f"{data['records']} x {data['features']}"),
            ("labelled anomalies", "unlabelled" if share is None else data["anomalies"]),
        ]
        if share is not None:
            rows.append(("anomaly share", f"{share:.4%}"))
        if "classes" in data:
            rows.append(("classes", ", ".join(f"{v}: {c}" for v, c in data["classes"].items())))
        if data["seed"] is not None:
            rows.append(("seed", data["seed"]))
    return [(key, str(value)) for key, value in rows]


def statistics_rows(statistics: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Per-feature statistics (``describe_source(...)["data"]["statistics"]``) as text:
    feature, min, mean, sd and max (4 significant digits), for the first
    :data:`MAX_FEATURES` features and then a row saying how many more there are.

    Examples
    --------
    >>> statistics_rows([{"feature": "x", "min": 0.0, "mean": 0.5, "sd": 0.25, "max": 1.0}])
    [('x', '0', '0.5', '0.25', '1')]
    """
    rows = [
        (row["feature"], *(_number(row[k]) for k in ("min", "mean", "sd", "max")))
        for row in statistics[:MAX_FEATURES]
    ]
    if len(statistics) > MAX_FEATURES:
        rows.append((f"... {len(statistics) - MAX_FEATURES} more", "", "", "", ""))
    return rows


def _number(value: float) -> str:
    return f"{value:.4g}"


def scaling_text(scaling: BoundsScaling | None) -> str:
    """One line on what the public bounds did (:func:`~privad.datasets.scale_to_bounds`; the
    clip counts are for the person running the analysis, not released).

    Examples
    --------
    >>> scaling_text(None)
    'none (the features in their own units)'
    >>> scaling_text(BoundsScaling({"x": (0.0, 1.0)}, ["x"], ["y"], {"x": 2}, {"x": 1}))[:60]
    'public bounds on 1 column(s), (x − lo)/(hi − lo); 1 column(s'
    """
    if scaling is None:
        return "none (the features in their own units)"
    left = f"; {len(scaling.unscaled)} column(s) in their own units" if scaling.unscaled else ""
    return (
        f"public bounds on {len(scaling.scaled)} column(s), (x − lo)/(hi − lo){left}; "
        f"{scaling.clipped} value(s) outside the bounds clipped (clipping uses only the "
        "bounds, so the guarantee holds; this count is for you, not released)"
    )
