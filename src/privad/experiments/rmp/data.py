"""RMP's section-6 datasets: specifications, preparation and the paper's Table 1."""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.datasets import (
    Dataset,
    inject_uniform_anomalies,
    load_abalone,
    load_banana,
    load_gas,
    make_banana_8d,
)
from privad.errors import DatasetNotFoundError, ParameterError
from privad.validation import check_choice, check_int, check_probability

ALPHAS: tuple[float, ...] = (0.01, 0.1, 0.2, 0.4, 0.6)
"""The paper's noise levels α of Table 1."""

R_FRACTIONS: tuple[float, ...] = (0.0, 0.10, 0.25, 0.40, 0.50)
"""r/n of the dimension study; 0 stands for "one attribute" (r = 1, Table 1's setting)."""

PROTOCOLS: tuple[str, ...] = ("same", "holdout")
"""``same``: train on all records and score them (the paper's setup); ``holdout``: train on a
stratified half, score the other half."""

N_FIRST = 1000
"""Records kept per dataset (section 6: "the first 1000 records of each dataset")."""

ANOMALY_SHARE = 0.05
"""Share of U(0, 1) anomalies in the evaluation data (section 6)."""


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of the reproduction and how it relates to the paper's Table 1.

    Attributes
    ----------
    name
        key used by :func:`prepare_dataset` and in every table.
    title
        the label in figures and the report.
    paper_row
        the row of the paper's Table 1 it is compared with (``None``: none).
    relation
        ``"same data"``, ``"subset"``, ``"reconstruction"``, ``"stand-in"`` or
        ``"not in the paper"``.
    note
        one sentence on the differences.
    """

    name: str
    title: str
    paper_row: str | None
    relation: str
    note: str


_SPECS: tuple[DatasetSpec, ...] = (
    DatasetSpec(
        "abalone",
        "Abalone (n = 8)",
        "Abalone",
        "same data",
        "UCI Abalone, the 8 numeric columns (rings included, sex dropped).",
    ),
    DatasetSpec(
        "banana-8d",
        "Banana, 8-D generator",
        "Banana",
        "reconstruction",
        "privad.datasets.make_banana_8d (phased layout): our reading of 'a pair of "
        "bananas in any two dimensions'; the paper's generator is not published.",
    ),
    DatasetSpec(
        "banana-2d",
        "Banana, classic 2-D",
        None,
        "not in the paper",
        "The classic 2-D set; with n = 2, r = 1 leaves w = 1, so every record is "
        "projected onto a single number.",
    ),
    DatasetSpec(
        "gas",
        "Gas (128 features)",
        "Gas",
        "subset",
        "Two-class 128-feature subset of Gas Sensor Array Drift; the paper used 168 features.",
    ),
    DatasetSpec(
        "digits",
        "Digits (64-D)",
        "HARS",
        "stand-in",
        "scikit-learn's load_digits, a 64-D stand-in for HARS (561-D, not available "
        "offline); classes ignored.",
    ),
    DatasetSpec(
        "breast-cancer",
        "Breast cancer (30-D)",
        "Opportunity",
        "stand-in",
        "scikit-learn's load_breast_cancer (569 records, all kept), a 30-D stand-in "
        "for Opportunity (242-D, not available offline); classes ignored.",
    ),
)

DATASETS: dict[str, DatasetSpec] = {s.name: s for s in _SPECS}
"""Every dataset of the reproduction, by name, in the report's order."""

_NA = math.nan
PAPER_TABLE1: pd.DataFrame = pd.DataFrame(
    [
        ("Abalone", 8, 1.00, 0.95, 0.92, 0.87, _NA, _NA),
        ("Banana", 8, 1.00, 0.98, 0.92, 0.81, _NA, _NA),
        ("Gas", 168, 0.99, 0.98, 0.98, 0.98, 0.95, 0.92),
        ("HARS", 561, 0.99, 0.98, 0.98, 0.97, 0.96, 0.95),
        ("Opportunity", 242, 0.99, 0.99, 0.98, 0.94, 0.90, 0.87),
    ],
    columns=["dataset", "n", "raw", *(f"alpha={a:g}" for a in ALPHAS)],
)
"""The paper's Table 1 as printed (AUC; NaN where it says N/A)."""


def paper_table1() -> pd.DataFrame:
    """The paper's Table 1 in tidy form: ``dataset, n, method, alpha, auc`` (NaN for N/A)."""
    rows = []
    for rec in PAPER_TABLE1.itertuples(index=False):
        rows.append(
            {"dataset": rec.dataset, "n": rec.n, "method": "raw", "alpha": _NA, "auc": rec.raw}
        )
        for k, a in enumerate(ALPHAS):
            rows.append(
                {"dataset": rec.dataset, "n": rec.n, "method": "rmp", "alpha": a, "auc": rec[3 + k]}
            )
    return pd.DataFrame(rows)


def _seed(seed: int, *parts: Any) -> int:
    return zlib.crc32("|".join(map(str, ["rmp", int(seed), *parts])).encode("utf-8"))


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def _sklearn_set(name: str) -> Dataset:
    from sklearn.datasets import load_breast_cancer, load_digits

    bunch = load_digits() if name == "digits" else load_breast_cancer()
    spec = DATASETS[name]
    return Dataset(
        X=np.asarray(bunch.data, dtype=np.float64),
        feature_names=[str(f) for f in getattr(bunch, "feature_names", [])],
        name=name,
        description=spec.note,
        source="scikit-learn bundled dataset",
        licence="BSD-3-Clause (scikit-learn); original data CC BY 4.0 (UCI)",
    )


def prepare_dataset(
    name: str,
    *,
    seed: int = 0,
    gas_path: str | Path | None = None,
    n_first: int = N_FIRST,
    anomaly_share: float = ANOMALY_SHARE,
) -> Dataset:
    """One evaluation set of section 6: the first ``n_first`` records scaled to [0, 1], then
    ``anomaly_share`` of U(0, 1) anomalies appended (y = 1), through
    :func:`privad.datasets.inject_uniform_anomalies`.

    Parameters
    ----------
    name
        one of :data:`DATASETS`.
    seed
        seed of the anomalies (and of the 8-D banana generator).
    gas_path
        the Gas file or its folder (``name="gas"``); default: the usual places
        (:func:`privad.datasets.load_gas`).
    n_first
        records kept before the anomalies are appended (paper: 1000; Breast cancer
        has 569).
    anomaly_share
        the anomalies' share of the result (paper: 5 %).

    Raises
    ------
    ParameterError
        an unknown name.
    DatasetNotFoundError
        ``gas`` and the file is not found.
    """
    name = check_choice(name, "dataset", tuple(DATASETS))
    n_first = check_int(n_first, "n_first", minimum=10)
    share = check_probability(anomaly_share, "anomaly_share", high_open=True)
    rng = _seed(seed, "data", name)
    if name == "banana-8d":
        out = make_banana_8d(n_first, 8, anomaly_share=share, rng=rng)
    else:
        if name == "abalone":
            base = load_abalone()
        elif name == "banana-2d":
            base = load_banana()
        elif name == "gas":
            base = load_gas(gas_path)
        else:
            base = _sklearn_set(name)
        out = inject_uniform_anomalies(base, share, n_first=n_first, rng=rng)
    out.name = name
    out.metadata = {**out.metadata, "seed": int(seed)}
    return out


class DataCache:
    """Prepared datasets keyed by ``(name, seed)``, shared by the functions of one run.

    ``gas_path`` is passed to :func:`privad.datasets.load_gas`. :meth:`available` tells
    which of the requested datasets can be loaded and why the others cannot (only ``gas``
    can be missing: it is not shipped).
    """

    def __init__(self, *, gas_path: str | Path | None = None, n_first: int = N_FIRST) -> None:
        self.gas_path = gas_path
        self.n_first = n_first
        self._items: dict[tuple[str, int], Dataset] = {}

    def get(self, name: str, seed: int) -> Dataset:
        """The prepared dataset (built on first use)."""
        key = (str(name), int(seed))
        if key not in self._items:
            self._items[key] = prepare_dataset(
                name, seed=seed, gas_path=self.gas_path, n_first=self.n_first
            )
        return self._items[key]

    def available(self, names: Iterable[str], seed: int = 0) -> tuple[list[str], dict[str, str]]:
        """(names that load, {name: why not} for the others), in the given order."""
        present: list[str] = []
        skipped: dict[str, str] = {}
        for name in names:
            try:
                self.get(name, seed)
            except DatasetNotFoundError as exc:
                skipped[name] = str(exc)
            else:
                present.append(name)
        return present, skipped


def _check_datasets(datasets: Iterable[str]) -> list[str]:
    names = [check_choice(d, "dataset", tuple(DATASETS)) for d in datasets]
    if not names:
        raise ParameterError("datasets must name at least one of " + ", ".join(DATASETS))
    return list(dict.fromkeys(names))


def _check_alphas(alphas: Iterable[float]) -> list[float]:
    from privad.rmp.perturbation import check_alpha

    return [check_alpha(a) for a in alphas]


def _check_seeds(seeds: Iterable[int]) -> list[int]:
    out = [check_int(s, "seed", minimum=0) for s in seeds]
    if not out:
        raise ParameterError("seeds must hold at least one seed (an integer >= 0)")
    return list(dict.fromkeys(out))


def r_values(n: int, fractions: Sequence[float] = R_FRACTIONS) -> list[tuple[float, int]]:
    """(requested r/n, r) for a dataset with n attributes: r = max(1, round(f·n)), at most
    n − 1, duplicates dropped (for n = 2 only r = 1 exists). ``f = 0`` means r = 1."""
    n = check_int(n, "n", minimum=2)
    out: dict[int, float] = {}
    for f in fractions:
        f = check_probability(f, "r fraction", high_open=True)
        r = min(n - 1, max(1, int(round(f * n))))
        out.setdefault(r, f)
    return [(f, r) for r, f in out.items()]
