"""Fits and scores of the RMP reproduction: one AANN or RMP fit per dataset, α, r and seed."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.datasets import (
    Dataset,
)
from privad.errors import ParameterError
from privad.experiments.rmp.data import _NA, DATASETS, PROTOCOLS, DataCache, _seed
from privad.noise import as_randomness
from privad.rmp.estimator import DEFAULT_EPOCHS
from privad.validation import check_choice, check_int


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
    options = {"threshold": "mu+3sigma", **options}  # the paper's θ (section 4)
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
