"""The papers' data preparation steps, as functions on datasets.

* :func:`inject_uniform_anomalies`: the RMP experiment (``rmp-collaborative-anomaly-detection.txt``,
  section 5): take the first records, scale features to [0, 1], append anomalies drawn
  from U(0, 1) per attribute.
* :func:`single_anomaly_thresholds`: the noisy-binary-search preprocessing
  (``dp-noisy-binary-search.txt``, section 6.1): keep the largest labelled anomaly and
  derive the thresholds t_ℓ and t_h.
* :func:`scale_to_bounds` (with :func:`read_bounds`): scale features to [0, 1] from
  *public* per-column bounds, clipping what lies outside; :func:`check_feature_scales`
  warns when one column dominates the distances. Scaling from the data itself (min-max,
  standardisation) is not private: the scale is a function of every record, so changing
  one record changes every distance (``docs/scaling.md``).
"""

from __future__ import annotations

import csv
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privad.datasets.containers import Dataset, TimeSeries
from privad.errors import DataError, DatasetNotFoundError, FeatureScaleWarning, ParameterError
from privad.validation import check_array, check_int, check_interval, check_probability

if TYPE_CHECKING:
    from privad.noise import RandomnessLike

__all__ = [
    "BoundsScaling",
    "DOMINANT_SHARE",
    "SearchThresholds",
    "check_feature_scales",
    "inject_uniform_anomalies",
    "minmax_scale",
    "read_bounds",
    "scale_to_bounds",
    "single_anomaly_thresholds",
]


def minmax_scale(X: Any) -> np.ndarray:
    """Scale each column to [0, 1] (a constant column becomes 0).

    The scale is the data's own minimum and maximum, so it is **not private**: it is used
    by the RMP evaluation (the paper's normalisation of public benchmark data). For
    private data use :func:`scale_to_bounds` with public bounds.
    """
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

    Parameters
    ----------
    dataset
        the normal records (its labels, if any, are ignored: every input record
        becomes a normal record, y = 0).
    share
        the anomalies' share of the *result* (our reading of "merged with 5%"):
        ``round(share / (1 - share) * n_normal)`` anomalies are appended.
    n_first
        keep only the first ``n_first`` records (``None``: all of them).
    scale
        min-max scale the normal records to [0, 1] first; turn off only when they
        already are.
    rng
        a :class:`privad.noise.Randomness`, a seed, or ``None``.
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

    Attributes
    ----------
    anomaly_index
        i*, the index of the largest-valued labelled anomaly.
    x_anomaly
        x_{i*}.
    x_next
        x_j = max over i != i* of x_i.
    t_low
        t_ℓ = x_j + 0.1 (x_{i*} - x_j).
    t_high
        t_h = x_{i*} - 0.1 (x_{i*} - x_j).
    threshold_ratio
        (t_h - t_ℓ) / t_ℓ, the x-axis of the paper's Figure 1.
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

    Parameters
    ----------
    values
        the series (or a :class:`TimeSeries`, whose labels are then used).
    labels
        0/1 per point; required unless ``values`` is a :class:`TimeSeries`.
    margin
        the 0.1 of the paper; must lie in (0, 0.5) so that t_ℓ < t_h is possible.

    Raises
    ------
    DataError
        the series cannot be used, with the reason: no labelled anomaly, a
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


# --------------------------------------------------------------------------------------------
# Feature scales from public bounds
# --------------------------------------------------------------------------------------------

Bounds = Mapping[str, tuple[float, float]]
"""Public per-column bounds: column name → (lower, upper), lower < upper, both finite."""


def check_bounds(bounds: Bounds, what: str = "bounds") -> dict[str, tuple[float, float]]:
    """``bounds`` as a dict of finite ``(lower, upper)`` with ``lower < upper``.

    Raises
    ------
    ParameterError
        An empty column name, a bound that is not a finite number, or lower >= upper.
    """
    out: dict[str, tuple[float, float]] = {}
    for name, pair in dict(bounds).items():
        column = str(name).strip()
        if not column:
            raise ParameterError(f"{what}: a column name is empty")
        out[column] = check_interval(pair, f"{what}: column {column!r}")
    return out


def read_bounds(path: str | Path) -> dict[str, tuple[float, float]]:
    """Public per-column bounds from a file.

    * ``.json``: ``{"col": [lower, upper], ...}`` or ``{"col": {"lower": l, "upper": u}}``;
    * ``.csv`` (or any other name): a header with the columns ``column,lower,upper`` (in any
      order; other columns ignored), one row per feature.

    Parameters
    ----------
    path
        The file. Its bounds must come from knowledge about the domain (a sensor's range, a
        questionnaire's scale, a published reference range), not from the private data.

    Raises
    ------
    DatasetNotFoundError
        The file does not exist.
    DataError
        The file cannot be read or has the wrong layout.
    ParameterError
        A bound is not a finite number, or lower >= upper (:func:`check_bounds`).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise DatasetNotFoundError(f"bounds file {str(path)!r} not found")
    where = f"bounds file {str(path)!r}"
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read {where}: {exc}") from None
    if p.suffix.lower() == ".json":
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where} is not valid JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise DataError(f"{where} must hold an object {{column: [lower, upper]}}")
        return check_bounds(
            {
                k: (v.get("lower"), v.get("upper")) if isinstance(v, dict) else v
                for k, v in raw.items()
            },
            where,
        )
    rows = list(csv.DictReader(text.splitlines()))
    header = {h.strip().lower(): h for h in (rows[0].keys() if rows else [])}
    if not {"column", "lower", "upper"} <= set(header):
        raise DataError(f"{where} needs a header with the columns column,lower,upper")
    pairs: dict[str, Any] = {}
    for row in rows:
        name = (row[header["column"]] or "").strip()
        if name in pairs:
            raise ParameterError(f"{where}: column {name!r} has two rows")
        pairs[name] = (row[header["lower"]], row[header["upper"]])
    return check_bounds(pairs, where)


@dataclass(frozen=True)
class BoundsScaling:
    """What :func:`scale_to_bounds` did.

    Attributes
    ----------
    bounds
        The bounds applied, by column.
    scaled
        The columns scaled (in the data's order).
    unscaled
        The columns without bounds, left in their own units.
    clipped_below, clipped_above
        Per scaled column, how many values lay below the lower (above the upper) bound and
        were clipped to it. These counts are computed from the data: they are for the
        person running the analysis, not part of any release.
    """

    bounds: dict[str, tuple[float, float]]
    scaled: list[str]
    unscaled: list[str]
    clipped_below: dict[str, int] = field(default_factory=dict)
    clipped_above: dict[str, int] = field(default_factory=dict)

    @property
    def clipped(self) -> int:
        """Values clipped, in all columns."""
        return sum(self.clipped_below.values()) + sum(self.clipped_above.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "bounds": {k: list(v) for k, v in self.bounds.items()},
            "scaled": self.scaled,
            "unscaled": self.unscaled,
            "clipped": self.clipped,
            "clipped_by_column": {
                c: {"below": self.clipped_below[c], "above": self.clipped_above[c]}
                for c in self.scaled
            },
        }


def scale_to_bounds(
    X: Any, bounds: Bounds, feature_names: Sequence[str]
) -> tuple[np.ndarray, BoundsScaling]:
    """Scale features to [0, 1] with public bounds: x ↦ (clip(x, lo, hi) − lo) / (hi − lo).

    A record's scaled value depends only on that record and the bounds, never on the other
    records, so neighbouring datasets stay neighbouring and every guarantee computed on the
    scaled features holds. Values outside the bounds are clipped to them (clipping uses
    only the public bounds too); how many were clipped is reported. Columns without bounds
    are left as they are.

    Parameters
    ----------
    X
        The records, n × d.
    bounds
        Column name → (lower, upper), from knowledge about the domain (:func:`read_bounds`).
    feature_names
        The names of X's columns; every name in ``bounds`` must be one of them.

    Returns
    -------
    (ndarray, BoundsScaling)
        The scaled copy of X and what was done.

    Raises
    ------
    DatasetNotFoundError
        A bound names a column that is not a feature.
    ParameterError
        Bounds that are not finite or not increasing.
    """
    X = check_array(X, "X")
    names = [str(n) for n in feature_names]
    if len(names) != X.shape[1]:
        raise DataError(f"{len(names)} feature names for {X.shape[1]} columns")
    bounds = check_bounds(bounds)
    unknown = [c for c in bounds if c not in names]
    if unknown:
        shown = ", ".join(repr(n) for n in names[:12]) + (" ..." if len(names) > 12 else "")
        raise DatasetNotFoundError(
            f"bounds given for {', '.join(map(repr, unknown))}, which "
            f"is not a feature column; the features are {shown}"
        )
    out = X.copy()
    below: dict[str, int] = {}
    above: dict[str, int] = {}
    for j, name in enumerate(names):
        if name not in bounds:
            continue
        lo, hi = bounds[name]
        below[name] = int(np.count_nonzero(X[:, j] < lo))
        above[name] = int(np.count_nonzero(X[:, j] > hi))
        out[:, j] = (np.clip(X[:, j], lo, hi) - lo) / (hi - lo)
    return out, BoundsScaling(
        bounds={n: bounds[n] for n in names if n in bounds},
        scaled=[n for n in names if n in bounds],
        unscaled=[n for n in names if n not in bounds],
        clipped_below=below,
        clipped_above=above,
    )


DOMINANT_SHARE = 0.9
"""Share of the total variance above which :func:`check_feature_scales` warns."""


def check_feature_scales(
    X: Any, feature_names: Sequence[str], *, threshold: float = DOMINANT_SHARE
) -> tuple[str, float] | None:
    """Warn when one column carries more than ``threshold`` of the features' total variance.

    The mean squared Euclidean distance between two records is twice the sum of the
    column variances, so a column with most of the variance decides the distances, and a
    radius r is then in its units (on Wine, proline carries 99.8 %). The variances are
    computed from the data for this warning only: nothing of them is released.

    Returns
    -------
    (str, float) or None
        The dominant column and its share, after issuing a
        :class:`~privad.errors.FeatureScaleWarning`; None when no column dominates (or
        there is one column, or no variance).
    """
    X = check_array(X, "X")
    variances = X.var(axis=0)
    total = float(variances.sum())
    if X.shape[1] < 2 or not total > 0:
        return None
    j = int(np.argmax(variances))
    share = float(variances[j] / total)
    if share <= threshold:
        return None
    name = str(feature_names[j])
    warnings.warn(
        FeatureScaleWarning(
            f"column {name!r} carries {share:.1%} of the variance of the {X.shape[1]} features, "
            "so distances (and r) are essentially in its units; scale the features with public "
            "bounds (--bound COL=LO:HI or --bounds FILE; privad.datasets.scale_to_bounds) - never "
            "from the data (docs/scaling.md). This share is computed from the data for this "
            "warning only and is not released."
        ),
        stacklevel=2,
    )
    return name, share
