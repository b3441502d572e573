"""The papers' data preparation steps, as functions on datasets.

* :func:`inject_uniform_anomalies`: the RMP experiment (``rmp-collaborative-anomaly-detection.txt``,
  section 5): take the first records, scale features to [0, 1], append anomalies drawn
  from U(0, 1) per attribute.
* :func:`single_anomaly_thresholds`: the noisy-binary-search preprocessing
  (``dp-noisy-binary-search.txt``, section 6.1): keep the largest labelled anomaly and
  derive the thresholds t_ℓ and t_h.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from privad.datasets.containers import Dataset, TimeSeries
from privad.errors import DataError, ParameterError
from privad.validation import check_array, check_int, check_probability

if TYPE_CHECKING:
    from privad.noise import RandomnessLike

__all__ = [
    "minmax_scale",
    "inject_uniform_anomalies",
    "SearchThresholds",
    "single_anomaly_thresholds",
]


def minmax_scale(X: Any) -> np.ndarray:
    """Scale each column to [0, 1] (a constant column becomes 0)."""
    X = check_array(X, "X")
    low = X.min(axis=0)
    span = X.max(axis=0) - low
    span[span == 0] = 1.0
    return (X - low) / span


def _anomaly_count(n_normal: int, share: float) -> int:
    return int(round(share / (1.0 - share) * n_normal)) if share > 0 else 0


def inject_uniform_anomalies(
    dataset: Dataset,
    share: float = 0.05,
    *,
    n_first: int | None = 1000,
    scale: bool = True,
    rng: RandomnessLike = None,
) -> Dataset:
    """The RMP evaluation data: normal records scaled to [0, 1] plus U(0, 1) anomalies.

    RMP, section 5: "We ran the experiment on the first 1000 records of each dataset.
    Feature values ... are normalised between [0, 1] and merged with 5% anomalous records,
    which are randomly drawn from U(0, 1)". A public follow-up of the same group appends the
    anomalies after the normal records (``docs/papers.md``), which is what this does.

    Args:
        dataset: the normal records (its labels, if any, are ignored: every input record
            becomes a normal record, y = 0).
        share: the anomalies' share of the *result* (our reading of "merged with 5%"):
            ``round(share / (1 - share) * n_normal)`` anomalies are appended.
        n_first: keep only the first ``n_first`` records (``None``: all of them).
        scale: min-max scale the normal records to [0, 1] first; turn off only when they
            already are.
        rng: a :class:`privad.noise.Randomness`, a seed, or ``None``.
    """
    from privad.noise import as_randomness

    share = check_probability(share, "share", high_open=True)
    X = dataset.X
    if n_first is not None:
        X = X[: check_int(n_first, "n_first", minimum=1)]
    if scale:
        X = minmax_scale(X)
    elif X.min() < 0 or X.max() > 1:
        raise DataError("scale=False needs records already in [0, 1]; pass scale=True")
    n_anomalies = _anomaly_count(X.shape[0], share)
    generator = as_randomness(rng)
    anomalies = np.asarray(generator.uniform(0.0, 1.0, (n_anomalies, X.shape[1])), dtype=np.float64)
    y = np.concatenate([np.zeros(X.shape[0], np.int64), np.ones(n_anomalies, np.int64)])
    return replace(
        dataset,
        X=np.vstack([X, anomalies]),
        y=y,
        classes=None,  # the appended anomalies have no class
        name=f"{dataset.name}+uniform",
        description=(
            f"{dataset.description} First {X.shape[0]} records"
            f"{', min-max scaled to [0, 1]' if scale else ''}, then {n_anomalies} U(0, 1)"
            " anomalies appended (RMP paper, section 5)."
        ).strip(),
        metadata={**dataset.metadata, "anomaly_share": share, "n_normal": int(X.shape[0])},
    )


@dataclass(frozen=True)
class SearchThresholds:
    """The single-anomaly reduction of a labelled series (noisy binary search, section 6.1).

    Attributes:
        anomaly_index: i*, the index of the largest-valued labelled anomaly.
        x_anomaly: x_{i*}.
        x_next: x_j = max over i != i* of x_i.
        t_low: t_ℓ = x_j + 0.1 (x_{i*} - x_j).
        t_high: t_h = x_{i*} - 0.1 (x_{i*} - x_j).
        threshold_ratio: (t_h - t_ℓ) / t_ℓ, the x-axis of the paper's Figure 1.
    """

    anomaly_index: int
    x_anomaly: float
    x_next: float
    t_low: float
    t_high: float
    threshold_ratio: float


def single_anomaly_thresholds(
    values: Any, labels: Any | None = None, *, margin: float = 0.1
) -> SearchThresholds:
    """Reduce a labelled series to one anomaly and two thresholds (noisy binary search, 6.1).

    "Each dataset in the benchmark is preprocessed down to single anomaly by selecting the
    largest anomalous point in each dataset and selecting thresholds by letting
    x_j = max{x_i : i != i*} and setting t_h = x_{i*} - .1(x_{i*} - x_j) and
    t_ℓ = x_j + .1(x_{i*} - x_j)."

    Args:
        values: the series (or a :class:`TimeSeries`, whose labels are then used).
        labels: 0/1 per point; required unless ``values`` is a :class:`TimeSeries`.
        margin: the 0.1 of the paper; must lie in (0, 0.5) so that t_ℓ < t_h is possible.

    Raises:
        DataError: the series cannot be used, with the reason: no labelled anomaly, a
            negative value (the paper's data model has x_i >= 0), fewer than two points, or
            t_h <= t_ℓ (the largest anomaly is not above every other point).
    """
    if isinstance(values, TimeSeries):
        labels = values.labels if labels is None else labels
        values = values.values
    x = check_array(values, "values", ndim=1, min_rows=2)
    if labels is None:
        raise DataError("labels are required to find the anomaly")
    lab = np.asarray(labels).reshape(-1)
    if lab.shape != x.shape:
        raise DataError(f"{lab.shape[0]} labels for {x.shape[0]} values")
    margin = check_probability(margin, "margin", low_open=True, high_open=True)
    if margin >= 0.5:
        raise ParameterError(f"margin must be in (0, 0.5), got {margin!r}")
    if (x < 0).any():
        raise DataError(
            f"skipped: {int((x < 0).sum())} negative value(s); the noisy binary search needs"
            " values >= 0"
        )
    anomalous = np.flatnonzero(lab == 1)
    if anomalous.size == 0:
        raise DataError("skipped: the series has no labelled anomaly")
    i_star = int(anomalous[np.argmax(x[anomalous])])
    others = np.delete(x, i_star)
    x_star, x_j = float(x[i_star]), float(others.max())
    gap = x_star - x_j
    t_high, t_low = x_star - margin * gap, x_j + margin * gap
    if not t_high > t_low:
        raise DataError(
            f"skipped: t_h = {t_high:g} <= t_l = {t_low:g}: the largest labelled anomaly"
            f" ({x_star:g}) is not above every other value (max {x_j:g})"
        )
    return SearchThresholds(
        anomaly_index=i_star,
        x_anomaly=x_star,
        x_next=x_j,
        t_low=t_low,
        t_high=t_high,
        threshold_ratio=(t_high - t_low) / t_low,
    )
