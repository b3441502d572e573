"""The catalogue of named datasets, and :func:`load`, which opens a name or a file.

Three kinds of entries:

* ``embedded``: shipped inside privad (``thyroid``, ``mammography``, ``breastw``,
  ``abalone``, ``banana``, and ``nab:<series>`` for the embedded NAB series);
* ``external``: read from the user's copy (``gas``, ``creditcard``, ``yahoo``);
* ``generated``: the seeded generators of :mod:`privad.datasets.synthetic`.

Shapes and anomaly counts of the entries are recorded here, so that :func:`list_datasets`
reads no file; a test checks them against the data.
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from privad.datasets.containers import Dataset, TimeSeries
from privad.datasets.formats import load_csv, load_numpy, load_odds, load_parquet
from privad.datasets.realdata import (
    ABALONE_LICENCE,
    ABALONE_SOURCE,
    BANANA_LICENCE,
    BANANA_SOURCE,
    CREDITCARD_LICENCE,
    CREDITCARD_SOURCE,
    GAS_LICENCE,
    GAS_SOURCE,
    ODDS_LICENCE,
    ODDS_SOURCE,
    load_abalone,
    load_banana,
    load_breastw,
    load_creditcard,
    load_gas,
    load_mammography,
    load_thyroid,
)
from privad.datasets.synthetic import (
    GENERATED_LICENCE,
    GENERATED_SOURCE,
    make_banana_8d,
    make_fraud_standin,
    make_search_mixture,
    make_sensitive_mixture,
    make_sensor_ring,
)
from privad.datasets.timeseries import (
    NAB_LICENCE,
    NAB_SOURCE,
    YAHOO_LICENCE,
    YAHOO_SOURCE,
    load_nab,
    load_yahoo,
)
from privad.errors import DatasetNotFoundError, ParameterError

__all__ = ["DatasetInfo", "list_datasets", "describe", "load", "Kind"]

Kind = Literal["embedded", "generated", "external"]


@dataclass(frozen=True)
class DatasetInfo:
    """One entry of the catalogue.

    Attributes
    ----------
    name
        the name :func:`load` accepts.
    kind
        ``"embedded"``, ``"generated"`` or ``"external"``.
    shape
        (records, features) of the data as shipped, as generated with the default
        parameters, or of the original external file; ``None`` when it varies.
    n_anomalies
        records labelled 1, as above; ``None`` when unlabelled or random.
    anomalies_note
        how to read ``n_anomalies`` when it is ``None`` (or a caveat).
    description
        what the data is, and where the papers use it.
    source
        where it comes from.
    licence
        its licence.
    loader
        the function :func:`load` calls (keyword options are passed on).
    usage
        how to call it, e.g. ``load("gas", path=...)``.
    files
        the embedded files (relative to ``privad/datasets/data``) or the external
        file name.
    series
        ``True`` when the loader returns a :class:`TimeSeries`.
    licence_short
        a short form of ``licence`` for tables.
    """

    name: str
    kind: Kind
    shape: tuple[int, int] | None
    n_anomalies: int | None
    description: str
    source: str
    licence: str
    loader: Callable[..., Dataset | TimeSeries]
    usage: str = ""
    anomalies_note: str = ""
    files: tuple[str, ...] = ()
    series: bool = False
    licence_short: str = ""

    @property
    def anomalies_text(self) -> str:
        """``n_anomalies`` for display ("93", "~200 (random)", "unlabelled")."""
        if self.n_anomalies is not None:
            return str(self.n_anomalies)
        return self.anomalies_note or "-"

    @property
    def shape_text(self) -> str:
        """``shape`` for display ("3772 x 6", or "varies")."""
        return "varies" if self.shape is None else f"{self.shape[0]} x {self.shape[1]}"


# NAB series shipped in privad/datasets/data/nab: (category/series, points, anomalous points).
_NAB_EMBEDDED: tuple[tuple[str, int, int, str], ...] = (
    (
        "realKnownCause/ambient_temperature_system_failure",
        7267,
        726,
        "hourly office ambient temperature ending in a system failure; 2 windows",
    ),
    (
        "realKnownCause/ec2_request_latency_system_failure",
        4032,
        346,
        "AWS EC2 CPU usage (5 min) ending in a documented API server failure; 3 windows",
    ),
    (
        "realKnownCause/rogue_agent_key_hold",
        1882,
        190,
        "key-hold times of a user with a rogue agent; 2 windows",
    ),
    ("realTraffic/speed_7578", 1127, 116, "Minnesota traffic sensor speed readings; 4 windows"),
    (
        "artificialWithAnomaly/art_daily_jumpsup",
        4032,
        403,
        "artificial daily pattern with an upward jump; 1 window",
    ),
)


def _entries() -> dict[str, DatasetInfo]:
    entries: list[DatasetInfo] = [
        DatasetInfo(
            "thyroid",
            "embedded",
            (3772, 6),
            93,
            "ODDS Thyroid: 6 features in [0, 1], hyperfunction = outlier (sensitive privacy,"
            " Table 1, beta=18, r=0.1).",
            ODDS_SOURCE,
            ODDS_LICENCE,
            load_thyroid,
            "load('thyroid')",
            files=("odds/thyroid.mat",),
        ),
        DatasetInfo(
            "mammography",
            "embedded",
            (11183, 6),
            260,
            "ODDS Mammography: 6 standardised features, malignant = outlier (sensitive privacy,"
            " Table 1, beta=55, r=1.7).",
            ODDS_SOURCE,
            ODDS_LICENCE,
            load_mammography,
            "load('mammography')",
            files=("odds/mammography.mat",),
        ),
        DatasetInfo(
            "breastw",
            "embedded",
            (683, 9),
            239,
            "ODDS Breast Cancer Wisconsin (original): 9 integer features, malignant = outlier.",
            ODDS_SOURCE,
            ODDS_LICENCE,
            load_breastw,
            "load('breastw')",
            files=("odds/breastw.mat",),
        ),
        DatasetInfo(
            "abalone",
            "embedded",
            (4177, 8),
            None,
            "UCI Abalone: 7 measurements and the ring count (sex dropped; sex='onehot' adds 3"
            " columns). RMP paper, Table 1.",
            ABALONE_SOURCE,
            ABALONE_LICENCE,
            load_abalone,
            "load('abalone', sex='drop'|'onehot')",
            anomalies_note="unlabelled",
            files=("abalone/abalone.data",),
        ),
        DatasetInfo(
            "banana",
            "embedded",
            (5300, 2),
            None,
            "Classic 2-D Banana set: two banana-shaped classes (+1/-1 in `classes`).",
            BANANA_SOURCE,
            BANANA_LICENCE,
            load_banana,
            "load('banana')",
            anomalies_note="unlabelled",
            files=("banana/banana.zip",),
        ),
    ]
    for rel, points, anomalous, text in _NAB_EMBEDDED:
        short = rel.rsplit("/", 1)[-1]
        entries.append(
            DatasetInfo(
                f"nab:{short}",
                "embedded",
                (points, 1),
                anomalous,
                f"NAB {rel}: {text}. Points inside a window are labelled 1. Stand-in for Yahoo S5"
                " (DP noisy binary search).",
                f"{NAB_SOURCE}, data/{rel}.csv",
                NAB_LICENCE,
                partial(load_nab, rel),
                f"load('nab:{short}')",
                files=(f"nab/data/{rel}.csv", "nab/labels/combined_windows.json"),
                series=True,
            )
        )
    entries += [
        DatasetInfo(
            "gas",
            "external",
            (5574, 128),
            None,
            "Gas Sensor Array Drift, two-class 128-feature subset (gas in `classes`). RMP"
            " paper, Table 1. 2.7 MB, not shipped.",
            GAS_SOURCE,
            GAS_LICENCE,
            load_gas,
            "load('gas', path='gas-drift.npz')",
            anomalies_note="unlabelled",
            files=("gas-drift.npz",),
        ),
        DatasetInfo(
            "creditcard",
            "external",
            (284807, 30),
            492,
            "Kaggle Credit Card Fraud: Time, V1..V28, Amount; Class = 1 for fraud. Sensitive"
            " privacy, Table 1 (PCA to 6). Not shipped; see generated 'fraud-standin'.",
            CREDITCARD_SOURCE,
            CREDITCARD_LICENCE,
            load_creditcard,
            "load('creditcard', path='creditcard.csv')",
            files=("creditcard.csv",),
        ),
        DatasetInfo(
            "yahoo",
            "external",
            None,
            None,
            "Yahoo S5 A1 series (timestamp,value,is_anomaly), one file per series. DP noisy"
            " binary search, section 6. Not redistributable; NAB series stand in.",
            YAHOO_SOURCE,
            YAHOO_LICENCE,
            _load_yahoo_entry,
            "load('yahoo', path='real_6.csv')",
            anomalies_note="per series",
            files=("real_<N>.csv",),
            series=True,
        ),
        DatasetInfo(
            "sensitive-mixture",
            "generated",
            (20000, 9),
            None,
            "Sensitive-privacy synthetic mixture: (1-rho)N(0,I) + anomaly components at"
            " +-m e_t, d=200, PCA to 9 (section 5).",
            GENERATED_SOURCE,
            GENERATED_LICENCE,
            make_sensitive_mixture,
            "load('sensitive-mixture', rng=0, magnitude='paper'|'dong2019')",
            anomalies_note="~200 (random)",
        ),
        DatasetInfo(
            "sensor-ring",
            "generated",
            (100000, 2),
            10000,
            "Relaxed-DP sensor data: core N(0, 3^2 I), outer 10% moved out to a radial gap of"
            " `separation` (section 7).",
            GENERATED_SOURCE,
            GENERATED_LICENCE,
            make_sensor_ring,
            "load('sensor-ring', separation=120, rng=0)",
        ),
        DatasetInfo(
            "fraud-standin",
            "generated",
            (284807, 6),
            492,
            "Heavy-tailed, correlated Student-t stand-in for Credit Fraud after PCA to 6.",
            GENERATED_SOURCE,
            GENERATED_LICENCE,
            make_fraud_standin,
            "load('fraud-standin', rng=0)",
        ),
        DatasetInfo(
            "search-mixture",
            "generated",
            (1420, 1),
            1,
            "Nonnegative values with one planted anomaly at a chosen threshold ratio (DP noisy"
            " binary search, section 6); kind='normal-mixture'|'skewed'.",
            GENERATED_SOURCE,
            GENERATED_LICENCE,
            make_search_mixture,
            "load('search-mixture', kind='skewed', threshold_ratio=0.7, rng=0)",
        ),
        DatasetInfo(
            "banana-8d",
            "generated",
            (1053, 8),
            53,
            "8-attribute banana (reconstruction of the RMP paper's Banana) scaled to [0, 1]"
            " with 5% U(0, 1) anomalies appended.",
            GENERATED_SOURCE,
            GENERATED_LICENCE,
            make_banana_8d,
            "load('banana-8d', rng=0)",
        ),
    ]
    short = {
        ODDS_LICENCE: "BSD-2-Clause",
        ABALONE_LICENCE: "CC BY 4.0",
        BANANA_LICENCE: "BSD-3-Clause",
        NAB_LICENCE: "MIT",
        GAS_LICENCE: "CC BY 4.0 (UCI)",
        CREDITCARD_LICENCE: "ODbL 1.0, not shipped",
        YAHOO_LICENCE: "no redistribution",
        GENERATED_LICENCE: "MIT (privad)",
    }
    return {e.name: replace(e, licence_short=short.get(e.licence, e.licence)) for e in entries}


def _load_yahoo_entry(path: str | os.PathLike[str] | None = None) -> TimeSeries:
    if path is None:
        raise DatasetNotFoundError(
            "the Yahoo S5 benchmark is not shipped with privad (its licence forbids"
            " redistribution); pass the path of one series file: load('yahoo', path='real_6.csv')"
        )
    return load_yahoo(path)


_REGISTRY: dict[str, DatasetInfo] | None = None


def _registry() -> dict[str, DatasetInfo]:
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _entries()
    return _REGISTRY


def _normalise(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _lookup(name: str) -> DatasetInfo | None:
    registry = _registry()
    if name in registry:
        return registry[name]
    wanted = _normalise(name)
    for key, entry in registry.items():
        if _normalise(key) == wanted:
            return entry
    return None


def _unknown(name: str) -> DatasetNotFoundError:
    names = list(_registry())
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return DatasetNotFoundError(
        f"unknown dataset {name!r}{hint} Known names: {', '.join(names)}"
        " ('privad datasets list' shows them); or give the path of a .mat, .csv, .parquet,"
        " .npy or .npz file"
    )


def list_datasets(kind: Kind | None = None) -> list[DatasetInfo]:
    """The catalogue, optionally only one kind (``"embedded"``, ``"generated"``, ``"external"``)."""
    if kind is not None and kind not in ("embedded", "generated", "external"):
        raise ParameterError(
            f"kind must be one of 'embedded', 'generated', 'external', got {kind!r}"
        )
    return [e for e in _registry().values() if kind is None or e.kind == kind]


def describe(name: str) -> DatasetInfo:
    """The catalogue entry of ``name`` (case and ``_``/``-`` do not matter).

    Raises
    ------
    DatasetNotFoundError
        an unknown name, with close matches when there are some.
    """
    if not isinstance(name, str):
        raise ParameterError(f"name must be a string, got {name!r}")
    entry = _lookup(name)
    if entry is None:
        raise _unknown(name)
    return entry


_EXTENSIONS: dict[str, Callable[..., Dataset]] = {
    ".mat": load_odds,
    ".csv": load_csv,
    ".parquet": load_parquet,
    ".pq": load_parquet,
    ".npy": load_numpy,
    ".npz": load_numpy,
}


def load(name_or_path: str | os.PathLike[str], **options: Any) -> Dataset | TimeSeries:
    """Load a dataset by catalogue name, or a file by its extension.

    * a catalogue name (see :func:`list_datasets`): the entry's loader with ``options``,
      e.g. ``load("thyroid")``, ``load("sensor-ring", separation=220, rng=1)``,
      ``load("gas", path="data/gas-drift.npz")``;
    * ``"nab:<series>"``: :func:`~privad.datasets.load_nab` (``root=`` for a NAB checkout);
    * a path: ``.mat`` :func:`load_odds`, ``.csv`` :func:`load_csv`, ``.parquet``/``.pq``
      or a folder :func:`load_parquet`, ``.npy``/``.npz`` :func:`load_numpy`, with
      ``options`` passed on (``columns=``, ``label=``, ``key=``, ...).

    Raises
    ------
    DatasetNotFoundError
        neither a known name nor an existing file.
    ParameterError
        an option the loader does not take, or an unknown extension.
    """
    if isinstance(name_or_path, str):
        entry = _lookup(name_or_path)
        if entry is not None:
            return _call(entry.loader, entry.name, options)
        if name_or_path.strip().lower().startswith("nab:"):
            return _call(load_nab, "nab", {"series": name_or_path.strip()[4:], **options})
    elif not isinstance(name_or_path, os.PathLike):
        raise ParameterError(f"expected a dataset name or a path, got {name_or_path!r}")
    path = Path(name_or_path).expanduser()
    suffix = path.suffix.lower()
    if path.is_dir():
        return _call(load_parquet, str(path), {"path": path, **options})
    if suffix in _EXTENSIONS:
        return _call(_EXTENSIONS[suffix], str(path), {"path": path, **options})
    if path.exists():
        raise ParameterError(
            f"cannot tell the format of {str(path)!r} from its extension {suffix or '(none)'};"
            " supported: .mat, .csv, .parquet, .pq, .npy, .npz or a folder of Parquet files."
            " Call load_csv/load_parquet/load_numpy/load_odds directly"
        )
    raise _unknown(str(name_or_path))


def _call(loader: Callable[..., Any], what: str, options: dict[str, Any]) -> Any:
    try:
        inspect.signature(loader).bind(**options)
    except TypeError as exc:  # a wrong keyword is the caller's mistake, not a bug
        raise ParameterError(f"{what}: {exc}") from None
    return loader(**options)
