"""The sensitive-privacy paper's datasets with their (β, r), ball counts and exact errors."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from privad.sensitive import (
    aiq_mechanism,
    ball_statistics,
)
from privad.sensitive.anomaly import BallStatistics
from privad.validation import check_choice, check_int

LN10 = math.log(10.0)

DATASETS: tuple[str, ...] = ("thyroid", "mammography", "synthetic")
"""The datasets we can reproduce offline, in the paper's table order (reversed)."""

TITLES = {
    "thyroid": "Thyroid",
    "mammography": "Mammography",
    "synthetic": "Synthetic",
    "credit-fraud": "Credit Fraud",
    "aps-trucks": "APS Trucks",
}

PAPER_TABLE1: dict[str, dict[str, Any]] = {
    "credit-fraud": {"n": 284_807, "d": 28, "beta": 1022, "r": 6.7, "true_br_anomalies": 103},
    "aps-trucks": {"n": 60_000, "d": 170, "beta": 282, "r": 16.2, "true_br_anomalies": 677},
    "synthetic": {"n": 20_000, "d": 200, "beta": 97, "r": 3.8, "true_br_anomalies": 201},
    "mammography": {"n": 11_183, "d": 6, "beta": 55, "r": 1.7, "true_br_anomalies": 75},
    "thyroid": {"n": 3_772, "d": 6, "beta": 18, "r": 0.1, "true_br_anomalies": 61},
}
"""Table 1 of the paper (size, dim, (β, r), true (β, r)-anomalies)."""

PAPER_TABLE2: dict[str, dict[str, float]] = {
    "credit-fraud": {"sp": 1.1127e-21, "dp": 0.4750, "sp_anomalous": 1.1127e-21},
    "aps-trucks": {"sp": 2.9719e-13, "dp": 0.4750, "sp_anomalous": 2.9719e-13},
    "synthetic": {"sp": 3.2173e-5, "dp": 0.4750, "sp_anomalous": 3.2173e-5},
    "mammography": {"sp": 0.0022, "dp": 0.4749, "sp_anomalous": 0.0021},
    "thyroid": {"sp": 0.0870, "dp": 0.4750, "sp_anomalous": 0.0867},
}
"""Table 2 of the paper (ε = 0.1): mean error over random queries (SP, DP), and SP's over
the anomalous ones."""

PAPER_TABLE3: dict[str, dict[str, tuple[float, float, float]]] = {
    # dataset -> mechanism -> (precision, recall, F1); ε = 0.1
    "credit-fraud": {
        "B1": (0.0101, 1.0000, 0.0199),
        "B2": (0.0230, 0.0498, 0.0315),
        "DP": (0.9930, 0.5250, 0.6868),
        "SP": (0.9963, 0.9968, 0.9966),
    },
    "aps-trucks": {
        "B1": (0.0115, 1.0000, 0.0227),
        "B2": (0.0165, 0.0753, 0.0271),
        "DP": (0.9870, 0.5263, 0.6865),
        "SP": (0.9931, 0.9954, 0.9943),
    },
    "synthetic": {
        "B1": (0.0101, 1.0000, 0.0199),
        "B2": (0.0114, 0.1189, 0.0208),
        "DP": (0.9930, 0.5250, 0.6868),
        "SP": (0.9963, 0.9968, 0.9966),
    },
    "mammography": {
        "B1": (0.0070, 0.8244, 0.0138),
        "B2": (0.0081, 0.1000, 0.0149),
        "DP": (0.0211, 0.5250, 0.0435),
        "SP": (0.2004, 0.9977, 0.3337),
    },
    "thyroid": {
        "B1": (0.0174, 0.6656, 0.0339),
        "B2": (0.0191, 0.2918, 0.0358),
        "DP": (0.1427, 0.5250, 0.2244),
        "SP": (0.3100, 0.8993, 0.4610),
    },
}
"""Table 3 of the paper (ε = 0.1): precision, recall, F1 of B1, B2, DP and SP."""

GROUP_ANOMALIES = "true (β,r)-anomalies"
GROUP_NORMAL = "normal records"


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SPData:
    """One dataset prepared for the experiments.

    Attributes
    ----------
    key
        ``"thyroid"``, ``"mammography"`` or ``"synthetic"``.
    title
        display name.
    X
        (n, d) records (after PCA for the synthetic set).
    y
        0/1 labels (1 = labelled anomaly).
    beta, r
        the (β, r) used.
    params_source
        where (β, r) come from (``"paper, Table 1"``, or a note).
    note
        how the data was obtained (seed, subsample, PCA).
    d_original
        the dimension before PCA (Table 1's "dim").
    stats
        (x_i, B_x(i, r)) of every record, self counted (the paper's definition).
    """

    key: str
    title: str
    X: np.ndarray
    y: np.ndarray
    beta: int
    r: float
    params_source: str
    note: str
    d_original: int
    stats: BallStatistics = field(repr=False)

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.X.shape[0])

    @property
    def br_anomaly(self) -> np.ndarray:
        """(β, r)-anomalies (Definition 2.2, self counted): B_x(i, r) ≤ β."""
        return self.stats.ball <= self.beta

    @property
    def true_br_anomaly(self) -> np.ndarray:
        """Labelled anomalies that are (β, r)-anomalies ("true (β, r)-anomalies")."""
        return self.br_anomaly & (self.y == 1)


def _seed(seed: int, *parts: str) -> int:
    """A deterministic per-experiment, per-dataset seed (independent of dataset order)."""
    text = "/".join([str(seed), *parts])
    return zlib.crc32(text.encode("utf-8"))


def load_dataset(
    key: str, *, seed: int = 0, synthetic_n: int = 20_000, metric: str = "euclidean"
) -> SPData:
    """Load one dataset with Table 1's (β, r) and its ball statistics.

    ``synthetic_n`` < 20,000 generates a smaller synthetic set (``--quick``) and scales β
    by n/20,000 (rounded; r unchanged), which keeps the expected ball counts relative to β;
    the note says so.
    """
    from privad import datasets

    key = check_choice(key, "dataset", DATASETS)
    seed = check_int(seed, "seed", minimum=0)
    paper = PAPER_TABLE1[key]
    beta, r = int(paper["beta"]), float(paper["r"])
    source = "paper, Table 1"
    if key == "synthetic":
        n = check_int(synthetic_n, "synthetic_n", minimum=200)
        ds = datasets.make_sensitive_mixture(n=n, rng=seed)
        note = f"make_sensitive_mixture(n={n}, d=200, PCA to 9), seed {seed}"
        if n != 20_000:
            beta = max(1, round(beta * n / 20_000))
            source = f"paper's β scaled by n/20000 (β = {beta}), r from Table 1"
            note += " (quick: smaller n)"
        d_original = 200
    else:
        ds = datasets.load(key)
        note = f"ODDS {TITLES[key]}, embedded, raw features"
        d_original = int(ds.X.shape[1])
    assert ds.y is not None
    stats = ball_statistics(ds.X, r, metric=metric)
    return SPData(
        key=key,
        title=TITLES[key],
        X=ds.X,
        y=np.asarray(ds.y, dtype=np.int64),
        beta=beta,
        r=r,
        params_source=source,
        note=note,
        d_original=d_original,
        stats=stats,
    )


def load_datasets(
    keys: Sequence[str] = DATASETS, *, seed: int = 0, synthetic_n: int = 20_000
) -> list[SPData]:
    """:func:`load_dataset` for each key."""
    return [load_dataset(k, seed=seed, synthetic_n=synthetic_n) for k in keys]


def _mechanism(data: SPData, mechanism: str, epsilon: float, k: int) -> Any:
    """The named mechanism on ``data``'s (β, r)."""
    return aiq_mechanism(mechanism, beta=data.beta, r=data.r, epsilon=epsilon, k=k)


def _log_errors(data: SPData, mechanism: str, epsilon: float, k: int) -> np.ndarray:
    return _mechanism(data, mechanism, epsilon, k).log_error_probability(
        data.stats.x_i, data.stats.ball
    )


def _log_mean(log_values: np.ndarray) -> float:
    """log of the mean of exp(log_values), exact for tiny values; -inf when empty."""
    if log_values.size == 0:
        return -math.inf
    return float(logsumexp(log_values) - math.log(log_values.size))


def _k_for(beta: int, fraction: float) -> int:
    return max(1, math.floor(fraction * beta + 1e-9))
