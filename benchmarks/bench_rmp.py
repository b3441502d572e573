"""Benchmark: RMP's AANN against other detectors on the same perturbed data, and the
end-user's scoring throughput.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_rmp.py                      # Abalone, Digits, Gas if found
    .venv/bin/python benchmarks/bench_rmp.py --datasets abalone --records 100000
    .venv/bin/python benchmarks/bench_rmp.py --json out.json      # also write the numbers

Part 1, detectors. For each dataset the evaluation data of section 6
(:func:`privad.experiments.rmp.prepare_dataset`: first 1000 records scaled to [0, 1], 5 %
U(0, 1) anomalies) is perturbed once as RMP does it (α = ``--alpha``, r = 1, one
:class:`privad.rmp.roles.Participant` with its own T_i per batch of 30 shuffled records).
Every detector trains on the same perturbed records Z and scores the end-user's view of
all records (double logistic, then the public T), and also, for reference, trains and scores
on the unperturbed records ("raw"). Reported: training time, scoring time and ROC AUC.

* ``privad AANN``: :class:`privad.rmp.roles.MiningServer` (scikit-learn ``MLPRegressor``,
  the paper's settings: hidden ≈ w/2, SGD with learning rate 0.25 and momentum 0.85,
  ``--epochs`` epochs) for RMP; :class:`privad.rmp.estimator.AANNDetector` on the raw data.
* ``PyOD AutoEncoder (defaults)``: ``pyod.models.auto_encoder.AutoEncoder`` as shipped
  (PyTorch; hidden layers [64, 32], Adam, batch norm, dropout, 10 epochs).
* ``PyOD AutoEncoder (matched)``: one hidden layer of the same width, sigmoid, no batch norm
  or dropout, Adam, ``--epochs`` epochs.
* ``IsolationForest`` and ``PCA`` (reconstruction error with as many components as the AANN
  has hidden units): scikit-learn baselines that need no PyTorch.

PyOD's AutoEncoder needs PyTorch: ``pip install -e '.[bench]'`` installs both. Without
them the PyOD rows are skipped with a note.

Part 2, end-user throughput: records per second of :meth:`privad.rmp.RMPModel.
decision_function` (double logistic, public T, AANN reconstruction error) on ``--records``
U(0, 1) records (default 10⁶), in chunks of ``--chunk``; beside it the AANN alone on
already transformed records and PyOD's ``decision_function`` on the same transformed
records. Best of ``--repeats``.

This is a benchmark, never a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

SEED = 20240614


def _pyod_autoencoder() -> Any:
    """PyOD's AutoEncoder class, or the ImportError when PyOD or one of its needs is missing."""
    try:
        from pyod.models.auto_encoder import AutoEncoder
    except ImportError as exc:
        return exc
    return AutoEncoder


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


class _Detector:
    """A detector's fit(Z_rows) / score(rows) pair for part 1."""

    def __init__(
        self,
        name: str,
        fit: Callable[[np.ndarray], Any],
        score: Callable[[Any, np.ndarray], np.ndarray],
    ) -> None:
        self.name, self.fit, self.score = name, fit, score


def _baselines(hidden: int, epochs: int, seed: int) -> list[_Detector]:
    from sklearn.decomposition import PCA
    from sklearn.ensemble import IsolationForest

    def pca_fit(Z: np.ndarray) -> Any:
        return PCA(n_components=min(hidden, Z.shape[1]), random_state=seed).fit(Z)

    def pca_score(model: Any, Z: np.ndarray) -> np.ndarray:
        return ((Z - model.inverse_transform(model.transform(Z))) ** 2).sum(axis=1)

    out = [
        _Detector(
            "IsolationForest",
            lambda Z: IsolationForest(random_state=seed).fit(Z),
            lambda m, Z: -m.score_samples(Z),
        ),
        _Detector(f"PCA ({hidden} components)", pca_fit, pca_score),
    ]
    AutoEncoder = _pyod_autoencoder()
    if not isinstance(AutoEncoder, ImportError):

        def ae(**kw: Any) -> Callable[[np.ndarray], Any]:
            return lambda Z: AutoEncoder(
                contamination=0.05, verbose=0, random_state=seed, device="cpu", **kw
            ).fit(Z)

        out += [
            _Detector("PyOD AutoEncoder (defaults)", ae(), lambda m, Z: m.decision_function(Z)),
            _Detector(
                "PyOD AutoEncoder (matched)",
                ae(
                    hidden_neuron_list=[hidden],
                    hidden_activation_name="sigmoid",
                    batch_norm=False,
                    dropout_rate=0.0,
                    epoch_num=epochs,
                ),
                lambda m, Z: m.decision_function(Z),
            ),
        ]
    return out


def bench_detectors(name: str, *, alpha: float, epochs: int, seed: int) -> tuple[list[dict], Any]:
    """Part 1 for one dataset; also returns the RMP model (for part 2)."""
    from sklearn.metrics import roc_auc_score

    from privad.experiments.rmp import prepare_dataset
    from privad.noise import as_randomness
    from privad.rmp import AANNTraining, public_matrix
    from privad.rmp.aann import default_hidden
    from privad.rmp.estimator import AANNDetector
    from privad.rmp.roles import PARTICIPANT_BATCH, MiningServer, Participant

    data = prepare_dataset(name, seed=seed)
    X, y = data.X, np.asarray(data.y)
    n = X.shape[1]
    rng = as_randomness(seed)
    T = public_matrix(n - 1, n, rng)
    rows = X[np.asarray(rng.permutation(y.size), dtype=np.int64)]
    server = MiningServer(T, alpha, training=AANNTraining(epochs=epochs), rng=rng)
    sent = []
    for start in range(0, y.size, PARTICIPANT_BATCH):
        sent.append(Participant(T, alpha, rng).perturb(rows[start : start + PARTICIPANT_BATCH]))
        server.receive(sent[-1])
    Z_train = np.hstack(sent).T  # what the server holds, records as rows
    fit_s, model = _timed(server.train)
    score_s, scores = _timed(lambda: model.decision_function(X))
    Z_user = model.transform(X)  # the end-user's view of every record
    base = {"dataset": name, "n": n, "records": int(y.size), "alpha": alpha, "epochs": epochs}
    results = [
        {
            **base,
            "data": "RMP-perturbed (w = n - 1)",
            "detector": "privad AANN",
            "fit_s": fit_s,
            "score_s": score_s,
            "auc": roc_auc_score(y, scores),
        }
    ]
    raw = AANNDetector(epochs=epochs, random_state=seed)
    fit_raw, _ = _timed(lambda: raw.fit(X[np.asarray(rng.permutation(y.size))]))
    score_raw, s_raw = _timed(lambda: raw.decision_function(X))
    results.append(
        {
            **base,
            "data": "raw (w = n)",
            "detector": "privad AANN",
            "fit_s": fit_raw,
            "score_s": score_raw,
            "auc": roc_auc_score(y, s_raw),
        }
    )
    for det in _baselines(default_hidden(n - 1), epochs, seed):
        for label, train, test in (
            ("RMP-perturbed (w = n - 1)", Z_train, Z_user),
            ("raw (w = n)", X, X),
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f_s, m = _timed(partial(det.fit, train))
                s_s, sc = _timed(partial(det.score, m, test))
            results.append(
                {
                    **base,
                    "data": label,
                    "detector": det.name,
                    "fit_s": f_s,
                    "score_s": s_s,
                    "auc": roc_auc_score(y, sc),
                }
            )
    return results, model


def bench_throughput(
    name: str, model: Any, *, records: int, chunk: int, repeats: int, seed: int, epochs: int
) -> list[dict]:
    """Part 2: the end-user's records per second, and the AANN / PyOD alone."""
    from privad.noise import as_randomness

    rng = as_randomness(seed)
    n = model.n_features
    X = np.asarray(rng.uniform(0.0, 1.0, size=(records, n)), dtype=np.float64)

    def chunked(fn: Callable[[np.ndarray], np.ndarray], data: np.ndarray) -> float:
        best = np.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            for start in range(0, data.shape[0], chunk):
                fn(data[start : start + chunk])
            best = min(best, time.perf_counter() - t0)
        return best

    Z = np.vstack([model.transform(X[s : s + chunk]) for s in range(0, records, chunk)])
    base = {"dataset": name, "n": n, "w": model.w, "records": records, "chunk": chunk}
    rows = [
        {
            **base,
            "what": "privad RMPModel.decision_function (end-user path)",
            "seconds": chunked(model.decision_function, X),
        },
        {
            **base,
            "what": "privad AANN.errors (transformed records)",
            "seconds": chunked(model.aann.errors, Z),
        },
    ]
    AutoEncoder = _pyod_autoencoder()
    if not isinstance(AutoEncoder, ImportError):
        train = Z[:2000]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ae = AutoEncoder(
                contamination=0.05,
                verbose=0,
                random_state=seed,
                device="cpu",
                hidden_neuron_list=[model.aann.hidden],
                hidden_activation_name="sigmoid",
                batch_norm=False,
                dropout_rate=0.0,
                epoch_num=1,
            ).fit(train)
            rows.append(
                {
                    **base,
                    "what": "PyOD AutoEncoder.decision_function (transformed)",
                    "seconds": chunked(ae.decision_function, Z),
                }
            )
    for row in rows:
        row["records_per_s"] = records / row["seconds"]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets",
        default="abalone,digits,gas",
        help="comma-separated names of privad.experiments.rmp.DATASETS "
        "(gas is skipped when its file is not found)",
    )
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument(
        "--records", type=int, default=1_000_000, help="records scored in part 2 (default 10^6)"
    )
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args(argv)

    from privad.errors import DatasetNotFoundError

    AutoEncoder = _pyod_autoencoder()
    if isinstance(AutoEncoder, ImportError):
        print(f"PyOD's AutoEncoder cannot be imported ({AutoEncoder}): the PyOD rows are skipped")
        print("(pip install -e '.[bench]' installs PyOD, PyTorch and tqdm).")
    else:
        import pyod
        import torch

        print(
            f"PyOD {pyod.__version__}, PyTorch {torch.__version__} "
            f"({torch.get_num_threads()} threads, CPU)"
        )
        with warnings.catch_warnings():  # PyTorch's one-off start-up is not a fit's cost
            warnings.simplefilter("ignore")
            from privad.noise import as_randomness

            warm = np.asarray(as_randomness(0).uniform(0.0, 1.0, size=(64, 4)))
            AutoEncoder(verbose=0, device="cpu", epoch_num=1).fit(warm)
    detectors, throughput = [], []
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        print(f"{name}: detectors ...", flush=True)
        try:
            rows, model = bench_detectors(
                name, alpha=args.alpha, epochs=args.epochs, seed=args.seed
            )
        except DatasetNotFoundError as exc:
            print(f"skipped {name}: {exc}")
            continue
        detectors += rows
        print(f"{name}: throughput on {args.records:,} records ...", flush=True)
        throughput += bench_throughput(
            name,
            model,
            records=args.records,
            chunk=args.chunk,
            repeats=args.repeats,
            seed=args.seed + 1,
            epochs=args.epochs,
        )
    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 60)
    det = pd.DataFrame(detectors)
    thr = pd.DataFrame(throughput)
    print(
        f"\nPart 1: detectors on the same data (α = {args.alpha:g}, r = 1, {args.epochs} "
        "epochs where it applies)"
    )
    print(det.drop(columns=["alpha", "epochs"]).to_string(index=False, float_format="%.4f"))
    print(
        f"\nPart 2: scoring throughput ({args.records:,} U(0, 1) records, chunks of "
        f"{args.chunk:,}, best of {args.repeats})"
    )
    print(thr.to_string(index=False, float_format="%.4g"))
    if args.json is not None:
        payload = {
            "machine": {
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "processor": platform.processor(),
            },
            "arguments": {k: str(v) for k, v in vars(args).items()},
            "detectors": detectors,
            "throughput": throughput,
        }
        args.json.write_text(json.dumps(payload, indent=2, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
