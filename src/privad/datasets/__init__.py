"""Datasets for privad: loaders, embedded data, and the papers' synthetic generators.

>>> from privad import datasets
>>> ds = datasets.load("thyroid")            # embedded ODDS Thyroid, 3772 x 6, 93 outliers
>>> ring = datasets.make_sensor_ring(separation=220, rng=0)
>>> ds.X.shape, int(ds.y.sum())
((3772, 6), 93)
>>> rows = ["amount,hour,is_fraud", "12.5,3,0", "980.0,4,1"]
>>> _ = open("my.csv", "w").write("\\n".join(rows))
>>> own = datasets.load("my.csv", label="is_fraud")
>>> own.X.shape, own.y.tolist()
((2, 2), [0, 1])

Modules (one idea each):

* :mod:`~privad.datasets.containers`: :class:`Dataset` and :class:`TimeSeries`;
* :mod:`~privad.datasets.tables`: column selection and validation shared by tabular loaders;
* :mod:`~privad.datasets.formats`: the user's files (``.mat``, CSV, Parquet, NumPy);
* :mod:`~privad.datasets.realdata`: the named real datasets of the papers;
* :mod:`~privad.datasets.timeseries`: NAB and Yahoo S5 series;
* :mod:`~privad.datasets.embedded`: the shipped files and their SHA-256 checks, and where
  external files are looked for (``$PRIVAD_DATA``);
* :mod:`~privad.datasets.preprocessing`: the papers' data preparation steps, and feature
  scaling from public bounds;
* :mod:`~privad.datasets.synthetic`: seeded generators;
* :mod:`~privad.datasets.registry`: the catalogue (:func:`list_datasets`, :func:`describe`)
  and :func:`load`.

Sources and licences of the embedded files: ``privad/datasets/data/NOTICE.md``.
"""

from __future__ import annotations

from privad.datasets.containers import Dataset, TimeSeries
from privad.datasets.embedded import DATA_ENV, data_root, embedded_files
from privad.datasets.formats import load_csv, load_numpy, load_odds, load_parquet
from privad.datasets.preprocessing import (
    BoundsScaling,
    SearchThresholds,
    check_feature_scales,
    inject_uniform_anomalies,
    minmax_scale,
    read_bounds,
    scale_to_bounds,
    single_anomaly_thresholds,
)
from privad.datasets.realdata import (
    load_abalone,
    load_banana,
    load_breastw,
    load_creditcard,
    load_gas,
    load_mammography,
    load_thyroid,
)
from privad.datasets.registry import DatasetInfo, describe, list_datasets, load
from privad.datasets.synthetic import (
    make_banana_8d,
    make_fraud_standin,
    make_search_mixture,
    make_sensitive_mixture,
    make_sensor_ring,
)
from privad.datasets.timeseries import load_nab, load_yahoo, nab_series

__all__ = [
    "BoundsScaling",
    "DATA_ENV",
    "Dataset",
    "DatasetInfo",
    "SearchThresholds",
    "TimeSeries",
    "check_feature_scales",
    "data_root",
    "describe",
    "embedded_files",
    "inject_uniform_anomalies",
    "list_datasets",
    "load",
    "load_abalone",
    "load_banana",
    "load_breastw",
    "load_creditcard",
    "load_csv",
    "load_gas",
    "load_mammography",
    "load_nab",
    "load_numpy",
    "load_odds",
    "load_parquet",
    "load_thyroid",
    "load_yahoo",
    "make_banana_8d",
    "make_fraud_standin",
    "make_search_mixture",
    "make_sensitive_mixture",
    "make_sensor_ring",
    "minmax_scale",
    "nab_series",
    "read_bounds",
    "scale_to_bounds",
    "single_anomaly_thresholds",
]
