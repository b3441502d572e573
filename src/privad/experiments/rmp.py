"""Reproduction of the RMP paper's evaluation (section 6: Table 1, Figures 2–4, the effect of r).

Erfani, Law, Karunasekera, Leckie, Palaniswami, "Privacy-preserving collaborative anomaly
detection for participatory sensing" (PAKDD 2014; ``rmp-collaborative-anomaly-detection.txt``).

Setup (section 6 and ``docs/papers.md``): the first 1000 records of each dataset, features
min-max scaled to [0, 1], 5 % U(0, 1) anomalies appended (label 1); participants submit
batches of 30 records, each perturbed with its own T_i = T + U(−α, α) after the double
logistic (:class:`privad.rmp.estimator.RMPDetector`); a three-layer AANN (hidden units ≈
half the inputs, learning rate 0.25, momentum 0.85, 300–1000 epochs) is trained on what the
server receives; end-users score records with the public T. The score is the reconstruction
error, the metric the ROC AUC (:func:`sklearn.metrics.roc_auc_score`). "Raw" is the same
AANN on the unperturbed records (:class:`privad.rmp.estimator.AANNDetector`). Table 1 uses
r = n − w = 1 and α ∈ {0.01, 0.1, 0.2, 0.4, 0.6}.

Evaluation protocol. The paper is unsupervised and does not hold data out: we train on all
records, anomalies included, and score the same records (``protocol="same"``, the
default). ``protocol="holdout"`` trains on a stratified random half and scores the other
half, as a check that the numbers are not an artefact of scoring the training records.

Datasets (:data:`DATASETS`, :func:`prepare_dataset`):

* ``abalone``: UCI Abalone, the 8 numeric columns (the paper's n = 8); same data as the paper.
* ``banana-8d``: :func:`privad.datasets.make_banana_8d`, a **reconstruction** of the paper's
  8-attribute Banana set (the paper gives only one sentence about it).
* ``banana-2d``: the classic 2-D Banana set. With n = 2, r = 1 leaves w = 1: every record is
  projected onto a single number before the AANN sees it. Not in the paper; shown because it
  is the Banana most readers know.
* ``gas``: the 128-feature two-class subset of Gas Sensor Array Drift (the paper: 168
  features). External (not shipped): used only when found (``gas_path``, ``$PRIVAD_DATA`` or
  ``[../]shared/datasets/gas``), otherwise skipped with a note.
* ``digits`` (64-D) and ``breast-cancer`` (30-D): scikit-learn's bundled sets as
  higher-dimensional **stand-ins** for HARS (561) and Opportunity (242), which are not
  available offline. Their classes are ignored: every record is a normal record, as the
  paper treats the activity classes of HARS and Opportunity.

One function per result, each returning a tidy :class:`pandas.DataFrame`; nothing writes
files except the ``draw_*`` functions (when given a path) and :func:`reproduce`:

* :func:`evaluate`: per-record scores of every fit (dataset, method, α, r, seed);
  :func:`auc_table` turns them into one row per fit, :func:`roc_curves` into ROC points.
* :func:`table1` (= ``auc_table(evaluate(...))`` for r = 1) and :func:`table1_summary`
  (mean ± sd over seeds, with the paper's value beside); :func:`draw_table1`,
  :func:`draw_roc` (Figures 2–4: one figure per dataset, Raw and each α).
* :func:`dimension_study` and :func:`dimension_summary`: AUC against r/n ("reducing n by 40 %
  only decreases accuracy by about 1 %" for large n, "10 %" for Abalone and Banana);
  :func:`draw_dimension`.

Randomness comes from seeds derived from ``seed`` (CRC-32 of the step's name and
coordinates), so a run is reproducible and every fit has its own stream.
"""

from __future__ import annotations

import importlib.util
import math
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
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
from privad.io import atomic_write
from privad.noise import as_randomness
from privad.rmp.estimator import DEFAULT_EPOCHS
from privad.validation import check_choice, check_int, check_probability

__all__ = [
    "ALPHAS",
    "DATASETS",
    "PAPER_TABLE1",
    "PROTOCOLS",
    "R_FRACTIONS",
    "DataCache",
    "DatasetSpec",
    "FitSpec",
    "auc_table",
    "dimension_study",
    "dimension_summary",
    "draw_dimension",
    "draw_roc",
    "draw_table1",
    "evaluate",
    "paper_table1",
    "prepare_dataset",
    "r_values",
    "reproduce",
    "roc_curves",
    "table1",
    "table1_display",
    "table1_summary",
]

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
    from privad.rmp import check_alpha

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


# --------------------------------------------------------------------------------------------
# Fits and scores
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitSpec:
    """One detector fitted on one prepared dataset.

    ``method`` is ``"raw"`` (the AANN on the unperturbed records; ``alpha`` and ``r`` are
    ``None``) or ``"rmp"``.
    """

    dataset: str
    method: str
    alpha: float | None
    r: int | None
    seed: int

    def label(self) -> str:
        if self.method == "raw":
            return "Raw"
        return f"α = {self.alpha:g}" + ("" if self.r == 1 else f", r = {self.r}")


def _split(y: np.ndarray, protocol: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, scored rows): all and all, or a stratified random half each.

    The training rows are in a random order either way: the paper partitions "a random
    subset" among the participants, and the anomalies are appended at the end of the data.
    """
    rng = as_randomness(seed)
    if protocol == "same":
        rows = np.arange(y.size)
        return np.asarray(rng.permutation(rows), dtype=np.int64), rows
    train, test = [], []
    for label in (0, 1):
        idx = np.asarray(rng.permutation(np.flatnonzero(y == label)), dtype=np.int64)
        half = idx.size // 2
        train.append(idx[:half])
        test.append(idx[half:])
    tr = np.concatenate(train)
    return np.asarray(rng.permutation(tr), dtype=np.int64), np.sort(np.concatenate(test))


def _detector(spec: FitSpec, epochs: int, options: dict[str, Any]) -> Any:
    from privad.rmp.estimator import AANNDetector, RMPDetector

    rs = _seed(spec.seed, "model", spec.dataset, spec.method, spec.alpha, spec.r)
    if spec.method == "raw":
        return AANNDetector(epochs=epochs, random_state=rs, **options)
    return RMPDetector(alpha=spec.alpha, r=spec.r, epochs=epochs, random_state=rs, **options)


def _fit_and_score(
    spec: FitSpec, data: Dataset, *, epochs: int, protocol: str, options: dict[str, Any]
) -> pd.DataFrame:
    y = np.asarray(data.y, dtype=np.int64)
    train, scored = _split(y, protocol, _seed(spec.seed, "split", spec.dataset, protocol))
    det = _detector(spec, epochs, options)
    t0 = time.perf_counter()
    det.fit(data.X[train])
    t1 = time.perf_counter()
    scores = np.asarray(det.decision_function(data.X[scored]), dtype=np.float64)
    t2 = time.perf_counter()
    predicted = np.asarray(det.predict(data.X[scored]), dtype=np.int64)
    n = data.X.shape[1]
    return pd.DataFrame(
        {
            "dataset": spec.dataset,
            "method": spec.method,
            "alpha": _NA if spec.alpha is None else float(spec.alpha),
            "r": 0 if spec.r is None else int(spec.r),
            "n": n,
            "w": n if spec.r is None else n - int(spec.r),
            "hidden": _hidden_of(det),
            "seed": spec.seed,
            "protocol": protocol,
            "epochs": epochs,
            "n_train": train.size,
            "record": scored,
            "label": y[scored],
            "score": scores,
            "predicted": predicted,
            "threshold": float(getattr(det, "threshold_", _NA)),
            "fit_s": t1 - t0,
            "score_s": t2 - t1,
        }
    )


def _hidden_of(det: Any) -> int:
    model = getattr(det, "model_", None)  # RMPDetector: an RMPModel holding the AANN
    aann = getattr(model, "aann", None) or getattr(det, "aann_", None)  # AANNDetector
    hidden = getattr(aann, "hidden", None)
    return int(hidden) if hidden is not None else -1


def evaluate(
    specs: Sequence[FitSpec],
    *,
    epochs: int = DEFAULT_EPOCHS,
    protocol: str = "same",
    cache: DataCache | None = None,
    gas_path: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    progress_offset: int = 0,
    progress_total: int | None = None,
    **detector_options: Any,
) -> pd.DataFrame:
    """Fit one detector per :class:`FitSpec` and score its records.

    Parameters
    ----------
    specs
        the fits.
    epochs
        AANN training epochs (the paper: 300 to 1000; default the estimators'
        :data:`~privad.rmp.estimator.DEFAULT_EPOCHS`).
    protocol
        one of :data:`PROTOCOLS` (module documentation).
    cache
        prepared data shared with other calls (default: a new
        :class:`DataCache` with ``gas_path``).
    progress
        ``progress(step, done, total)`` before each fit; ``progress_offset`` and
        ``progress_total`` place these fits inside a longer run.
    detector_options
        passed to both detectors (for example ``hidden``).

    Returns
    -------
    pandas.DataFrame
        One row per scored record per fit: ``dataset, method, alpha, r, n, w, hidden, seed,
        protocol, epochs, n_train, record`` (row of the prepared data), ``label`` (1 =
        anomaly), ``score`` (the reconstruction error), ``predicted`` (above the μ + 3σ
        threshold), ``threshold``, ``fit_s``, ``score_s``. ``alpha`` is NaN and ``r`` 0
        for Raw.
    """
    epochs = check_int(epochs, "epochs", minimum=1)
    protocol = check_choice(protocol, "protocol", PROTOCOLS)
    cache = cache if cache is not None else DataCache(gas_path=gas_path)
    total = progress_total if progress_total is not None else len(specs)
    frames = []
    for k, spec in enumerate(specs):
        if progress is not None:
            progress(
                f"{DATASETS[spec.dataset].title}: {spec.label()}, seed {spec.seed}"
                + ("" if protocol == "same" else f" ({protocol})"),
                progress_offset + k,
                total,
            )
        frames.append(
            _fit_and_score(
                spec,
                cache.get(spec.dataset, spec.seed),
                epochs=epochs,
                protocol=protocol,
                options=detector_options,
            )
        )
    if not frames:
        raise ParameterError("evaluate needs at least one fit")
    return pd.concat(frames, ignore_index=True)


_FIT_KEYS = ["dataset", "method", "alpha", "r", "seed", "protocol"]


def auc_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per fit of an :func:`evaluate` table.

    Columns: the fit's keys and sizes, ``auc`` (ROC AUC of the reconstruction error against
    the labels), ``detection_rate`` and ``false_alarm_rate`` of the μ + 3σ threshold, the
    threshold, ``fit_s`` and ``score_s``.
    """
    from sklearn.metrics import roc_auc_score

    rows = []
    for key, part in scores.groupby(_FIT_KEYS, sort=False, dropna=False):
        label = part["label"].to_numpy()
        pred = part["predicted"].to_numpy()
        first = part.iloc[0]
        rows.append(
            {
                **dict(zip(_FIT_KEYS, key, strict=True)),
                "n": int(first["n"]),
                "w": int(first["w"]),
                "hidden": int(first["hidden"]),
                "epochs": int(first["epochs"]),
                "n_train": int(first["n_train"]),
                "n_scored": int(label.size),
                "n_anomalies": int(label.sum()),
                "auc": float(roc_auc_score(label, part["score"].to_numpy())),
                "detection_rate": float(pred[label == 1].mean()),
                "false_alarm_rate": float(pred[label == 0].mean()),
                "threshold": float(first["threshold"]),
                "fit_s": float(first["fit_s"]),
                "score_s": float(first["score_s"]),
            }
        )
    return pd.DataFrame(rows)


def roc_curves(scores: pd.DataFrame, *, seed: int | None = None) -> pd.DataFrame:
    """ROC points of every fit of an :func:`evaluate` table (default: the first seed only,
    as the paper's figures show single runs): ``dataset, method, alpha, r, seed, protocol,
    fpr, tpr, auc``."""
    from sklearn.metrics import roc_auc_score, roc_curve

    if seed is None:
        seed = int(scores["seed"].min())
    frames = []
    part_all = scores[scores["seed"] == seed]
    for key, part in part_all.groupby(_FIT_KEYS, sort=False, dropna=False):
        label, score = part["label"].to_numpy(), part["score"].to_numpy()
        fpr, tpr, _ = roc_curve(label, score)
        frame = pd.DataFrame({"fpr": fpr, "tpr": tpr})
        for k, v in zip(_FIT_KEYS, key, strict=True):
            frame.insert(len(frame.columns) - 2, k, v)
        frame["auc"] = float(roc_auc_score(label, score))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------------------------
# Table 1
# --------------------------------------------------------------------------------------------


def table1_specs(
    datasets: Iterable[str], alphas: Iterable[float], seeds: Iterable[int], *, r: int = 1
) -> list[FitSpec]:
    """The fits of Table 1: per dataset and seed, Raw and RMP at each α with the given r."""
    out = []
    for seed in seeds:
        for name in datasets:
            out.append(FitSpec(name, "raw", None, None, seed))
            out += [FitSpec(name, "rmp", float(a), r, seed) for a in alphas]
    return out


def table1(
    *,
    datasets: Iterable[str] = tuple(DATASETS),
    alphas: Iterable[float] = ALPHAS,
    seeds: Iterable[int] = (0,),
    epochs: int = DEFAULT_EPOCHS,
    r: int = 1,
    protocol: str = "same",
    cache: DataCache | None = None,
    gas_path: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    **detector_options: Any,
) -> pd.DataFrame:
    """Table 1: the AUC of Raw and of RMP at each α (r = 1), one row per fit
    (:func:`auc_table`). Datasets that cannot be loaded (only ``gas``) are left out; use
    :meth:`DataCache.available` to say why."""
    cache = cache if cache is not None else DataCache(gas_path=gas_path)
    names, _ = cache.available(_check_datasets(datasets))
    specs = table1_specs(names, _check_alphas(alphas), _check_seeds(seeds), r=r)
    return auc_table(
        evaluate(
            specs,
            epochs=epochs,
            protocol=protocol,
            cache=cache,
            progress=progress,
            **detector_options,
        )
    )


def _paper_auc(name: str, method: str, alpha: float) -> float:
    row = DATASETS[name].paper_row
    if row is None:
        return _NA
    rec = PAPER_TABLE1[PAPER_TABLE1["dataset"] == row].iloc[0]
    if method == "raw":
        return float(rec["raw"])
    col = f"alpha={alpha:g}"
    return float(rec[col]) if col in rec.index else _NA


def table1_summary(auc: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds per (dataset, method, α, r, protocol), with
    the paper's row and value beside (``paper_row``, ``relation``, ``paper_auc``; NaN where
    the paper has N/A or no such dataset)."""
    keys = ["dataset", "method", "alpha", "r", "protocol"]
    g = auc.groupby(keys, sort=False, dropna=False)
    out = g.agg(
        n=("n", "first"),
        w=("w", "first"),
        runs=("auc", "size"),
        auc_mean=("auc", "mean"),
        auc_sd=("auc", "std"),
        detection_rate=("detection_rate", "mean"),
        false_alarm_rate=("false_alarm_rate", "mean"),
        fit_s=("fit_s", "mean"),
    ).reset_index()
    out["auc_sd"] = out["auc_sd"].fillna(0.0)
    out["paper_row"] = [DATASETS[d].paper_row or "—" for d in out["dataset"]]
    out["relation"] = [DATASETS[d].relation for d in out["dataset"]]
    out["paper_auc"] = [
        _paper_auc(d, m, a)
        for d, m, a in zip(out["dataset"], out["method"], out["alpha"], strict=True)
    ]
    out["difference"] = out["auc_mean"] - out["paper_auc"]
    return out


def _cell(mean: float, sd: float, runs: int) -> str:
    return f"{mean:.3f}" if runs < 2 else f"{mean:.3f} ± {sd:.3f}"


def table1_display(summary: pd.DataFrame, protocol: str = "same") -> pd.DataFrame:
    """Table 1 laid out like the paper's: per dataset a row of ours (mean ± sd over seeds)
    and a row of the paper's (its row for that dataset, ``—`` for N/A), columns Raw and
    each α. Text cells, for display."""
    part = summary[
        (summary["protocol"] == protocol) & ((summary["method"] == "raw") | (summary["r"] == 1))
    ]
    alphas = sorted(a for a in part["alpha"].dropna().unique())
    rows = []
    for name in dict.fromkeys(part["dataset"]):
        sub = part[part["dataset"] == name]
        spec = DATASETS[name]
        raw = sub[sub["method"] == "raw"]
        runs = int(sub["runs"].max())
        ours: dict[str, Any] = {
            "dataset": spec.title,
            "source": f"privad ({runs} seed{'s' if runs > 1 else ''})",
            "n": int(sub["n"].iloc[0]),
        }
        ours["Raw"] = (
            _cell(raw["auc_mean"].iloc[0], raw["auc_sd"].iloc[0], runs) if len(raw) else "—"
        )
        paper: dict[str, Any] = {
            "dataset": "",
            "source": f"paper: {spec.paper_row} ({spec.relation})"
            if spec.paper_row
            else "paper: —",
        }
        prow = PAPER_TABLE1[PAPER_TABLE1["dataset"] == spec.paper_row] if spec.paper_row else None
        paper["n"] = int(prow["n"].iloc[0]) if prow is not None else "—"
        paper["Raw"] = f"{prow['raw'].iloc[0]:.2f}" if prow is not None else "—"
        for a in alphas:
            col = f"α = {a:g}"
            cell = sub[(sub["method"] == "rmp") & np.isclose(sub["alpha"], a)]
            ours[col] = (
                _cell(cell["auc_mean"].iloc[0], cell["auc_sd"].iloc[0], runs) if len(cell) else "—"
            )
            value = _paper_auc(name, "rmp", a) if spec.paper_row else _NA
            paper[col] = "—" if math.isnan(value) else f"{value:.2f}"
        rows += [ours, paper]
    return pd.DataFrame(rows)


_COLOURS = (
    "tab:blue",
    "tab:orange",
    "tab:green",
    "tab:red",
    "tab:purple",
    "tab:brown",
    "tab:pink",
    "tab:olive",
)


def _save(fig: Any, path: str | Path | None) -> Any:
    if path is not None:
        with atomic_write(Path(path), "wb") as handle:
            fig.savefig(handle, format="png", dpi=110)
    return fig


def draw_table1(summary: pd.DataFrame, path: str | Path | None = None) -> Any:
    """AUC against α per dataset (r = 1): ours (mean ± sd over seeds, Raw as a dashed
    line) and the paper's values of the corresponding row (crosses). One panel per dataset.
    Returns the figure; with ``path`` also writes it as a PNG (atomically)."""
    from privad.experiments.report import new_figure

    part = summary[
        (summary["protocol"] == "same") & ((summary["method"] == "raw") | (summary["r"] == 1))
    ]
    names = list(dict.fromkeys(part["dataset"]))
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig = new_figure(4.0 * cols, 3.2 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, name in zip(axes, names, strict=False):
        sub = part[part["dataset"] == name]
        rmp = sub[sub["method"] == "rmp"].sort_values("alpha")
        raw = sub[sub["method"] == "raw"]
        ax.errorbar(
            rmp["alpha"],
            rmp["auc_mean"],
            yerr=rmp["auc_sd"],
            fmt="o-",
            color="tab:blue",
            capsize=3,
            label="RMP (privad)",
        )
        if len(raw):
            ax.axhline(raw["auc_mean"].iloc[0], color="black", ls="--", lw=1, label="Raw (privad)")
        pap = rmp.dropna(subset=["paper_auc"])
        if len(pap):
            ax.plot(
                pap["alpha"],
                pap["paper_auc"],
                "x",
                color="tab:red",
                ms=8,
                label=f"paper ({DATASETS[name].paper_row})",
            )
        ax.set_title(DATASETS[name].title, fontsize=10)
        ax.set_xlabel("α")
        ax.set_ylabel("AUC")
        low = float(np.nanmin(sub["auc_mean"] - sub["auc_sd"]))
        ax.set_ylim(min(0.5, low - 0.03), 1.01)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    return _save(fig, path)


def draw_roc(roc: pd.DataFrame, dataset: str, path: str | Path | None = None) -> Any:
    """ROC curves of one dataset like the paper's Figures 2–4: Raw and RMP at each α
    (r = 1, protocol ``same`` if present), AUC in the legend. From :func:`roc_curves`."""
    from privad.experiments.report import new_figure

    part = roc[(roc["dataset"] == dataset) & ((roc["method"] == "raw") | (roc["r"] == 1))]
    if "same" in set(part["protocol"]):
        part = part[part["protocol"] == "same"]
    fig = new_figure(5.0, 4.6)
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    groups = part.groupby(["method", "alpha"], sort=False, dropna=False)
    k = 0
    for (method, alpha), g in sorted(
        groups, key=lambda kv: (kv[0][0] != "raw", np.nan_to_num(kv[0][1]))
    ):
        if method == "raw":
            style: dict[str, Any] = {"color": "black", "lw": 2.0, "label": "Raw"}
        else:
            style = {"color": _COLOURS[k % len(_COLOURS)], "lw": 1.3, "label": f"α = {alpha:g}"}
            k += 1
        style["label"] += f" (AUC {g['auc'].iloc[0]:.3f})"
        ax.plot(g["fpr"], g["tpr"], drawstyle="steps-post", **style)
    seed = int(part["seed"].iloc[0]) if len(part) else 0
    ax.set_title(f"{DATASETS[dataset].title}: ROC (seed {seed})", fontsize=10)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(-0.01, 1.0)
    ax.set_ylim(0.0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)


# --------------------------------------------------------------------------------------------
# The effect of r
# --------------------------------------------------------------------------------------------


def dimension_specs(
    cache: DataCache,
    datasets: Iterable[str],
    seeds: Iterable[int],
    *,
    alpha: float,
    fractions: Sequence[float] = R_FRACTIONS,
    skip_r1: bool = False,
) -> list[FitSpec]:
    """The fits of the dimension study: RMP at ``alpha`` for each r of :func:`r_values`
    (``skip_r1``: leave out r = 1, already fitted for Table 1)."""
    out = []
    for seed in seeds:
        for name in datasets:
            n = cache.get(name, seed).X.shape[1]
            out += [
                FitSpec(name, "rmp", float(alpha), r, seed)
                for _, r in r_values(n, fractions)
                if not (skip_r1 and r == 1)
            ]
    return out


def dimension_study(
    *,
    datasets: Iterable[str] = tuple(DATASETS),
    alpha: float = 0.1,
    fractions: Sequence[float] = R_FRACTIONS,
    seeds: Iterable[int] = (0,),
    epochs: int = DEFAULT_EPOCHS,
    cache: DataCache | None = None,
    gas_path: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    **detector_options: Any,
) -> pd.DataFrame:
    """AUC of RMP at one α against r = n − w, one row per fit (:func:`auc_table`), plus
    Raw per dataset and seed for reference. Section 6 says only that larger n suffers less
    from larger r; it does not say which α it used (default 0.1 here)."""
    from privad.rmp import check_alpha

    cache = cache if cache is not None else DataCache(gas_path=gas_path)
    names, _ = cache.available(_check_datasets(datasets))
    seeds = _check_seeds(seeds)
    specs = [FitSpec(name, "raw", None, None, s) for s in seeds for name in names]
    specs += dimension_specs(cache, names, seeds, alpha=check_alpha(alpha), fractions=fractions)
    return auc_table(
        evaluate(specs, epochs=epochs, cache=cache, progress=progress, **detector_options)
    )


def dimension_summary(auc: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Mean AUC per dataset and r at ``alpha`` (protocol ``same``), with r/n, w and the
    change from r = 1 and from Raw: ``dataset, n, r, w, r_over_n, runs, auc_mean, auc_sd,
    raw_auc, change_from_r1, change_from_raw``."""
    part = auc[auc["protocol"] == "same"]
    raw = part[part["method"] == "raw"].groupby("dataset")["auc"].mean()
    rmp = part[(part["method"] == "rmp") & np.isclose(part["alpha"].fillna(-1), alpha)]
    g = rmp.groupby(["dataset", "r"], sort=False)
    out = g.agg(
        n=("n", "first"),
        w=("w", "first"),
        runs=("auc", "size"),
        auc_mean=("auc", "mean"),
        auc_sd=("auc", "std"),
    ).reset_index()
    out = out.sort_values(
        ["dataset", "r"],
        kind="stable",
        key=lambda s: s.map(list(DATASETS).index) if s.name == "dataset" else s,
    ).reset_index(drop=True)
    out["auc_sd"] = out["auc_sd"].fillna(0.0)
    out.insert(4, "r_over_n", out["r"] / out["n"])
    out.insert(0, "alpha", float(alpha))
    out["raw_auc"] = out["dataset"].map(raw)
    r1 = out[out["r"] == 1].set_index("dataset")["auc_mean"]
    out["change_from_r1"] = out["auc_mean"] - out["dataset"].map(r1)
    out["change_from_raw"] = out["auc_mean"] - out["raw_auc"]
    return out


def draw_dimension(summary: pd.DataFrame, path: str | Path | None = None) -> Any:
    """AUC against r/n, one line per dataset (from :func:`dimension_summary`)."""
    from privad.experiments.report import new_figure

    fig = new_figure(6.5, 4.4)
    ax = fig.subplots()
    for k, (name, g) in enumerate(summary.groupby("dataset", sort=False)):
        c = _COLOURS[k % len(_COLOURS)]
        ax.errorbar(
            100 * g["r_over_n"],
            g["auc_mean"],
            yerr=g["auc_sd"],
            fmt="o-",
            color=c,
            capsize=3,
            label=f"{DATASETS[name].title}",
        )
    alpha = float(summary["alpha"].iloc[0]) if len(summary) else _NA
    ax.set_title(f"RMP (α = {alpha:g}): AUC against r = n − w", fontsize=10)
    ax.set_xlabel("r / n [%]")
    ax.set_ylabel("AUC")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    return _save(fig, path)


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def timing_table(auc: pd.DataFrame) -> pd.DataFrame:
    """Mean training time and end-user scoring throughput per dataset and method
    (protocol ``same``, r = 1), from an :func:`auc_table`."""
    part = auc[(auc["protocol"] == "same") & ((auc["method"] == "raw") | (auc["r"] == 1))]
    g = part.groupby(["dataset", "method"], sort=False)
    out = g.agg(
        n=("n", "first"),
        w=("w", "first"),
        hidden=("hidden", "first"),
        epochs=("epochs", "first"),
        n_train=("n_train", "first"),
        fits=("auc", "size"),
        fit_s=("fit_s", "mean"),
        score_s=("score_s", "mean"),
        n_scored=("n_scored", "first"),
    ).reset_index()
    out["records_per_s"] = out["n_scored"] / out["score_s"].where(out["score_s"] > 0)
    return out


# --------------------------------------------------------------------------------------------
# The whole reproduction
# --------------------------------------------------------------------------------------------


def privacy_available() -> bool:
    """Whether :mod:`privad.experiments.rmp_privacy` (the attack evaluation) is installed."""
    return importlib.util.find_spec("privad.experiments.rmp_privacy") is not None


def reproduce(
    out_dir: str | Path,
    *,
    datasets: Iterable[str] = tuple(DATASETS),
    alphas: Iterable[float] = ALPHAS,
    seeds: int = 5,
    seed: int = 0,
    epochs: int | None = None,
    gas_path: str | Path | None = None,
    quick: bool = False,
    privacy: bool = True,
    holdout: bool = True,
    dimension_alpha: float = 0.1,
    progress: Callable[[str, int, int], None] | None = None,
    command: str = "",
    detector_options: dict[str, Any] | None = None,
) -> list[Path]:
    """Run section 6 and write CSVs, PNGs and ``index.html`` into ``out_dir``; the files.

    Parameters
    ----------
    out_dir
        the output folder (created if missing; files in it are replaced).
    datasets
        names of :data:`DATASETS`; ``gas`` is skipped with a note when its file is
        not found (``gas_path`` given and missing is an error).
    alphas
        Table 1's α values.
    seeds
        repetitions (seeds ``seed .. seed + seeds − 1``); mean ± sd over them.
    seed
        the first seed.
    epochs
        AANN epochs (default the estimators' :data:`~privad.rmp.estimator.
        DEFAULT_EPOCHS`, 300, the low end of the paper's 300–1000, which ``docs/rmp.md``
        measured as the better choice; 15 with ``quick``).
    quick
        a small run for tests (1 seed, 15 epochs, 300 records per dataset, r study
        on two fractions, no held-out check).
    privacy
        also run the attack evaluation (:mod:`privad.experiments.rmp_privacy`,
        files ``privacy_*`` and ``privacy.html`` in ``out_dir``, its sections on our page)
        when it is installed.
    holdout
        also run Table 1 with the held-out protocol (first seed only).
    dimension_alpha
        α of the r study.
    progress
        ``progress(step, done, total)`` before each fit and at the end.
    command
        the command line, shown on the page.
    detector_options
        passed to both detectors (:class:`~privad.rmp.estimator.
        RMPDetector`, :class:`~privad.rmp.estimator.AANNDetector`), for example
        ``{"input_scaling": "zscore"}``; default: their defaults.

    Raises
    ------
    ParameterError
        bad arguments (before anything is written).
    DatasetNotFoundError
        ``gas_path`` given but not found.
    """
    from privad import __version__
    from privad.experiments.report import Report, Section
    from privad.rmp import check_alpha

    names = _check_datasets(datasets)
    alpha_list = _check_alphas(alphas)
    if not alpha_list:
        raise ParameterError("alphas must hold at least one α with 0 < α < 1")
    seeds = check_int(seeds, "seeds", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    epochs = (
        (15 if quick else DEFAULT_EPOCHS)
        if epochs is None
        else check_int(epochs, "epochs", minimum=1)
    )
    dimension_alpha = check_alpha(dimension_alpha)
    options = dict(detector_options or {})
    seed_list = [seed] if quick else list(range(seed, seed + seeds))
    fractions = (0.0, 0.5) if quick else R_FRACTIONS
    run_holdout = holdout and not quick
    cache = DataCache(gas_path=gas_path, n_first=300 if quick else N_FIRST)
    if gas_path is not None and "gas" in names:
        cache.get("gas", seed_list[0])  # an explicit path that does not load is an error
    present, skipped = cache.available(names, seed_list[0])
    if not present:
        raise DatasetNotFoundError(
            "none of the datasets could be loaded: "
            + "; ".join(f"{k}: {v}" for k, v in skipped.items())
        )
    out = Path(out_dir).expanduser()
    report = Report(out, "RMP (Erfani et al., PAKDD 2014): section 6 reproduction")
    t_start = time.perf_counter()

    t1_specs = table1_specs(present, alpha_list, seed_list)
    dim_specs = dimension_specs(
        cache,
        present,
        seed_list,
        alpha=dimension_alpha,
        fractions=fractions,
        skip_r1=any(np.isclose(alpha_list, dimension_alpha)),
    )
    ho_specs = table1_specs(present, alpha_list, seed_list[:1]) if run_holdout else []
    do_privacy = privacy and privacy_available()
    total = len(t1_specs) + len(dim_specs) + len(ho_specs) + (1 if do_privacy else 0) + 1
    done = {"k": 0}

    def run(specs: list[FitSpec], protocol: str = "same") -> pd.DataFrame:
        df = evaluate(
            specs,
            epochs=epochs,
            protocol=protocol,
            cache=cache,
            progress=progress,
            progress_offset=done["k"],
            progress_total=total,
            **options,
        )
        done["k"] += len(specs)
        return df

    # Data
    data_rows = []
    for name in names:
        spec = DATASETS[name]
        row: dict[str, Any] = {
            "dataset": name,
            "title": spec.title,
            "paper_row": spec.paper_row or "—",
            "relation": spec.relation,
        }
        if name in skipped:
            row.update({"status": "skipped", "note": skipped[name]})
        else:
            d = cache.get(name, seed_list[0])
            y = np.asarray(d.y)
            row.update(
                {
                    "status": "used",
                    "records": int(y.size),
                    "normal": int((y == 0).sum()),
                    "anomalies": int(y.sum()),
                    "n": int(d.X.shape[1]),
                    "w (r = 1)": int(d.X.shape[1]) - 1,
                    "note": spec.note,
                }
            )
        data_rows.append(row)
    data_table = pd.DataFrame(data_rows)
    report.write_csv("datasets.csv", data_table)
    skip_text = [f"Skipped {k}: {v}" for k, v in skipped.items()]
    report.add(
        Section(
            "Data",
            text=[
                f"The first {cache.n_first} records of each dataset, every feature min-max scaled "
                f"to [0, 1], then 5 % U(0, 1) anomalies appended (label 1), as section 6 says "
                "(privad.datasets.inject_uniform_anomalies). The anomalies are drawn anew for "
                "every seed. HARS and Opportunity are not available offline: scikit-learn's "
                "digits (64-D) and breast cancer (30-D) stand in for them; the 8-D Banana is our "
                "reconstruction of the paper's generator; the Gas file holds 128 of the paper's "
                "168 features.",
                *skip_text,
            ],
            tables=[("Datasets", data_table)],
            files=[("datasets.csv", "the table")],
        )
    )

    # Table 1 and ROC curves
    scores = run(t1_specs)
    auc = auc_table(scores)
    dim_scores = run(dim_specs) if dim_specs else scores.iloc[0:0]
    ho_auc = auc_table(run(ho_specs, "holdout")) if ho_specs else auc.iloc[0:0]
    summary = table1_summary(pd.concat([auc, ho_auc], ignore_index=True))
    report.write_csv("table1.csv", auc)
    report.write_csv("table1_summary.csv", summary)
    report.save_figure("table1.png", draw_table1(summary))
    roc = roc_curves(scores)
    report.write_csv("roc.csv", roc)
    figures = []
    for name in present:
        file = f"roc_{name}.png"
        report.save_figure(file, draw_roc(roc, name))
        figures.append(
            (
                file,
                f"{DATASETS[name].title}: ROC of Raw and RMP at each α "
                f"(r = 1, seed {seed_list[0]})",
            )
        )
    display = table1_display(summary)
    report.add(
        Section(
            "Table 1: AUC of Raw and RMP (r = 1)",
            text=[
                f"Protocol: every detector is trained on all records of the dataset (anomalies "
                "included, in random batches of 30 records per participant, each participant "
                "with its own T_i) and scores the same records, as the paper's unsupervised setup "
                f"implies. AANN: hidden units ≈ half the inputs, {epochs} epochs, learning rate "
                "0.25, momentum 0.85, weights in [−0.1, 0.1], squared error averaged over the "
                "outputs, SGD mini-batches of 32 (privad.rmp defaults"
                + (f"; changed: {options}" if options else "")
                + "). AUC: ROC AUC "
                f"of the reconstruction error; mean ± sd over {len(seed_list)} seed(s) (new "
                "anomalies, T, Δ_i and initial weights per seed).",
                "The paper's rows for HARS and Opportunity are compared with stand-ins (digits, "
                "breast cancer): only the trend can be compared, not the values.",
            ],
            tables=[("Ours beside the paper", display)],
            figures=[
                (
                    "table1.png",
                    "AUC against α; crosses: the paper's value for the corresponding row",
                ),
                *figures,
            ],
            files=[
                (
                    "table1.csv",
                    "one row per fit (AUC, detection and false-alarm rate of the "
                    "μ + 3σ threshold, timings)",
                ),
                ("table1_summary.csv", "mean and sd over seeds, paper's value beside"),
                ("roc.csv", "the ROC points of the figures"),
            ],
        )
    )
    if ho_specs:
        same = summary[summary["protocol"] == "same"].set_index(["dataset", "method", "alpha"])
        ho = summary[summary["protocol"] == "holdout"].copy()
        ho["auc_same"] = [
            same.loc[(d, m, a), "auc_mean"] if (d, m, a) in same.index else _NA
            for d, m, a in zip(ho["dataset"], ho["method"], ho["alpha"], strict=True)
        ]
        ho = ho[["dataset", "method", "alpha", "n", "w", "auc_mean", "auc_same"]].rename(
            columns={"auc_mean": "auc_holdout"}
        )
        report.write_csv("holdout.csv", ho)
        report.add(
            Section(
                "Check: a held-out half",
                text=[
                    f"Seed {seed_list[0]} only: each detector is trained on a stratified random "
                    "half of the records and scores the other half; auc_same is Table 1's "
                    "value (trained and scored on all records, mean over seeds)."
                ],
                tables=[("Held-out AUC beside Table 1's", ho)],
                files=[("holdout.csv", "the table")],
            )
        )

    # r study
    dim_auc = pd.concat(
        [auc, auc_table(dim_scores)] if len(dim_scores) else [auc], ignore_index=True
    )
    dim = dimension_summary(dim_auc, dimension_alpha)
    report.write_csv("dimension.csv", dim)
    report.save_figure("dimension.png", draw_dimension(dim))
    report.add(
        Section(
            "The effect of r = n − w",
            text=[
                f"RMP at α = {dimension_alpha:g} with r/n ∈ "
                f"{{{', '.join('1 attribute' if f == 0 else f'{100 * f:g} %' for f in fractions)}}}"
                " (r = max(1, round(f·n)), at most n − 1; for the 2-D Banana only r = 1 exists). "
                "The paper: for large n, 'reducing n by 40 % only decreases accuracy by about "
                "1 %'; for Abalone and Banana 'reducing the data dimensionality by half might "
                "result in a 10 % reduction'. It does not say which α; we use "
                f"{dimension_alpha:g}.",
            ],
            tables=[("AUC against r", dim)],
            figures=[("dimension.png", "AUC against r/n per dataset")],
            files=[("dimension.csv", "the table")],
        )
    )

    # Timing
    timing = timing_table(auc)
    report.write_csv("timing.csv", timing)
    report.add(
        Section(
            "Timing",
            text=[
                "Mean training time per fit and the end-user's scoring throughput (double "
                "logistic, public T, the AANN's reconstruction error) on this machine. "
                "benchmarks/bench_rmp.py compares with other detectors on larger inputs."
            ],
            tables=[("Per dataset and method (r = 1)", timing)],
            files=[("timing.csv", "the table")],
        )
    )

    # Privacy (the attacks of section 5), by privad.experiments.rmp_privacy
    if do_privacy:
        k = done["k"]
        sub = (
            None
            if progress is None
            else (lambda step, _d, _t: progress(f"privacy: {step}", k, total))
        )
        if progress is not None:
            progress("privacy: attacks (section 5)", k, total)
        _privacy_section(report, seed=seed, quick=quick, progress=sub)
        done["k"] += 1
    else:
        why = (
            "skipped on request (--skip-privacy)"
            if not privacy
            else "privad.experiments.rmp_privacy is not installed in this version"
        )
        report.add(Section("Privacy: attacks of section 5", text=[f"Not run: {why}."]))

    if progress is not None:
        progress("index.html", total - 1, total)
    elapsed = time.perf_counter() - t_start
    report.intro = [
        f"privad {__version__}. Mode: {'quick' if quick else 'full'}; seeds "
        f"{seed_list[0]}..{seed_list[-1]}; {epochs} epochs; computed in {elapsed:.1f} s."
        + (f" Command: {command}" if command else ""),
        "Paper: Erfani, Law, Karunasekera, Leckie, Palaniswami, 'Privacy-preserving "
        "collaborative anomaly detection for participatory sensing' (PAKDD 2014), section 6. "
        "Discussion of the differences: docs/rmp_reproduction.md.",
    ]
    report.write_html("index.html")
    if progress is not None:
        progress("done", total, total)
    return list(report.written)


def _privacy_section(
    report: Any, *, seed: int, quick: bool, progress: Callable[[str, int, int], None] | None
) -> None:
    """Run the attack evaluation into the report's folder and add its sections to the page.

    :func:`privad.experiments.rmp_privacy.reproduce_privacy` writes ``privacy_*.csv``,
    ``privacy_*.png`` and its own ``privacy.html`` beside our files; its sections' links are
    relative to that folder, so they are added to our page as they are.
    """
    from privad.experiments import rmp_privacy  # type: ignore[attr-defined]

    result = rmp_privacy.reproduce_privacy(
        report.directory, seed=seed, quick=quick, progress=progress
    )
    report.written.extend(Path(p) for p in result.get("files", []))
    for section in result.get("sections", []):
        report.add(section)
