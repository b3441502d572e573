"""Benchmark: RMP against the same AANN on raw data on the utility benchmark's public sets,
and what the threshold rule does to the share flagged (issue 27).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_rmp_thresholds.py                  # 12 sets, seed 0
    .venv/bin/python benchmarks/bench_rmp_thresholds.py --datasets pima,wbc --seeds 0,1,2

Data: the eleven ODDS sets in ``../shared/datasets/odds/*.mat`` (``--odds-root``) and
scikit-learn's ``load_breast_cancer`` (malignant = anomaly), every feature min-max scaled to
[0, 1] on the data (not private: the benchmark's choice, as in the issue's measurement).
Every detector trains and scores on all records (training = test, as in the paper).

Per set and seed: :class:`privad.rmp.AANNDetector` on the raw records and
:class:`privad.rmp.RMPDetector` at each ``--alphas`` (defaults otherwise: 300 epochs,
r = 1, participants of 30 records), all with ``random_state`` = the seed. Reported per
detector: ROC AUC of ``decision_scores_``; with ``contamination`` = the true share,
F1 and the share flagged; with ``threshold="mu+3sigma"`` (the paper's θ), F1 and the share
flagged. The two rules come from one fit (they differ only in the threshold).

This is a benchmark, never a test: minutes per large set on a busy machine.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ODDS = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "odds"


def _sets(root: Path, names: set[str] | None) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    from sklearn.datasets import load_breast_cancer

    from privad.datasets import load_odds

    found = [(p.stem, p) for p in sorted(root.glob("*.mat"))] + [("breast_cancer", None)]
    for name, path in found:
        if names is not None and name not in names:
            continue
        if path is None:
            bc = load_breast_cancer()
            X, y = bc.data, (bc.target == 0).astype(np.int64)
        else:
            ds = load_odds(path)
            X, y = np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y, dtype=np.int64)
        low, high = X.min(axis=0), X.max(axis=0)
        yield name, (X - low) / np.where(high > low, high - low, 1.0), y


def _row(detector: object, y: np.ndarray, c: float) -> str:
    from sklearn.metrics import f1_score, roc_auc_score

    from privad.base import contamination_threshold

    scores = detector.decision_scores_  # type: ignore[attr-defined]
    by_share = scores > contamination_threshold(scores, c)
    by_theta = detector.labels_.astype(bool)  # type: ignore[attr-defined]
    return (
        f"{roc_auc_score(y, scores):.3f} | {f1_score(y, by_share):.3f} | {by_share.mean():.3f} | "
        f"{f1_score(y, by_theta):.3f} | {by_theta.mean():.3f}"
    )


def main(argv: list[str] | None = None) -> None:
    """Print one markdown row per set, seed and detector."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="", help="comma-separated names (default: all)")
    parser.add_argument("--alphas", default="0.01,0.1,0.2")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--odds-root", type=Path, default=ODDS)
    args = parser.parse_args(argv)

    from privad.rmp import AANNDetector, RMPDetector

    names = set(args.datasets.split(",")) if args.datasets else None
    alphas = [float(a) for a in args.alphas.split(",")]
    print("| data | seed | detector | AUC | F1 (contamination) | flagged | F1 (μ + 3σ) | flagged |")
    print("|---|---|---|---|---|---|---|---|")
    for name, X, y in _sets(args.odds_root, names):
        for seed in (int(s) for s in args.seeds.split(",")):
            start = time.perf_counter()
            paper = {"threshold": "mu+3sigma", "random_state": seed}
            fits = [("raw AANN", AANNDetector(**paper).fit(X))]
            fits += [(f"RMP α = {a:g}", RMPDetector(alpha=a, **paper).fit(X)) for a in alphas]
            for label, detector in fits:
                print(f"| {name} | {seed} | {label} | {_row(detector, y, float(y.mean()))} |")
            print(f"<!-- {name} seed {seed}: {time.perf_counter() - start:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
