"""Benchmark: what RelaxedDPDetector finds on the twelve public sets, per ε (issue 27).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_relaxed_auc.py                  # ε 0.1 and 1, 12 sets
    .venv/bin/python benchmarks/bench_relaxed_auc.py --epsilon 1 2 --sets thyroid wbc
    .venv/bin/python benchmarks/bench_relaxed_auc.py --csv out.csv     # also write the rows

Data: the ODDS files in ``--odds`` (default ``../shared/datasets/odds``) and scikit-learn's
``load_breast_cancer`` (malignant = outlier). Features are min-max scaled **with the data's
own minimum and maximum** (not private: a deployment takes the bounds from public knowledge,
docs/scaling.md), so every domain width GS_j is 1. No history: RS (eq. 1, p_o = 10), DBSCAN's
calibration, w_O and ρ come from the data, as in the paper's experiments (also not private).

One fit per set and ε, ``contamination`` = the set's true outlier share. From that one
release the rows report, as ROC-AUC against the labels:

* ``auc_centre``: the analyst's centre distance on 𝒯' (``scores="analyst"``, the default);
* ``auc_laplace``: :func:`privad.relaxed.laplace_scores` of the same 𝒯' (``scores="laplace"``);
* ``auc_laplace_no_noise``: the same score on the scaled data without noise (what the score
  could reach if the sensor added none: the detector's own limit on the set);
* ``auc_supervised``: a logistic regression trained **with the labels** on 𝒯' (3-fold
  cross-validated predictions): a reference for how much of the outliers' signal survives
  the local noise at all, not a private detector;

and ``flagged`` (share of ``labels_``: the top contamination share of the Laplace scores),
``candidates`` (share of the paper's corrected superset, ``candidates_``), ``f1`` of the
labels. This is a benchmark, never a test: each row is one noise draw.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from privad.datasets import load_odds
from privad.relaxed import RelaxedDPDetector, laplace_scores
from privad.relaxed.distances import centre_distances
from privad.relaxed.messages import SensorToAnalyst

ROOT = Path(__file__).resolve().parents[1]


def public_sets(odds: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The eleven ODDS sets and breast cancer, features min-max scaled by their own range."""
    raw = {p.stem: (load_odds(p).X, load_odds(p).y) for p in sorted(odds.glob("*.mat"))}
    cancer = load_breast_cancer()
    raw["breast_cancer"] = (cancer.data, (cancer.target == 0).astype(int))
    out = {}
    for name, (X, y) in raw.items():
        X = np.asarray(X, dtype=np.float64)
        lo, hi = X.min(axis=0), X.max(axis=0)
        out[name] = ((X - lo) / np.where(hi > lo, hi - lo, 1.0), np.asarray(y, dtype=int))
    return out


def one_row(name: str, X: np.ndarray, y: np.ndarray, epsilon: float, seed: int) -> dict:
    """One release of ``X`` at ``epsilon`` and the scores read from it (see the module)."""
    c = float(y.mean())
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no history; a zero-RS column falls back to GS
        est = RelaxedDPDetector(
            epsilon=epsilon, global_sensitivity=1.0, contamination=c, scores="laplace", rng=seed
        ).fit(X)
    seconds = time.perf_counter() - start
    (message,) = [
        m for m in est.run_.transcript.received_by("analyst") if isinstance(m, SensorToAnalyst)
    ]
    Tp = message.perturbed
    scaled = X / est.sensor_.divisors
    folds = StratifiedKFold(3, shuffle=True, random_state=seed)
    supervised = cross_val_predict(
        LogisticRegression(max_iter=1000), Tp, y, cv=folds, method="predict_proba"
    )[:, 1]
    return {
        "set": name,
        "n": int(y.size),
        "d": int(X.shape[1]),
        "contamination": round(c, 4),
        "epsilon": epsilon,
        "auc_centre": roc_auc_score(y, centre_distances(Tp, Tp.mean(axis=0))),
        "auc_laplace": roc_auc_score(y, est.decision_scores_),
        "auc_laplace_no_noise": roc_auc_score(y, laplace_scores(scaled, 1.0)),
        "auc_supervised": roc_auc_score(y, supervised),
        "flagged": float(est.labels_.mean()),
        "candidates": est.n_candidates_ / y.size,
        "f1": f1_score(y, est.labels_),
        "zero_rs_columns": int((np.subtract(*np.percentile(X, [95, 5], axis=0)) == 0).sum()),
        "fit_s": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--sets", nargs="+", default=None, help="names (default: all 12)")
    parser.add_argument("--odds", type=Path, default=ROOT.parent / "shared/datasets/odds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args()
    sets = public_sets(args.odds)
    rows = []
    for name in args.sets or list(sets):
        X, y = sets[name]
        for epsilon in args.epsilon:
            rows.append(one_row(name, X, y, epsilon, args.seed))
            print(pd.DataFrame(rows[-1:]).round(3).to_string(index=False, header=False))
    table = pd.DataFrame(rows)
    if args.csv is not None:
        table.to_csv(args.csv, index=False)
    print(table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
