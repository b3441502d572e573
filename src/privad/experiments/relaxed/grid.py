"""Figure 3a/3b of the relaxed-DP paper: the data sets, the pipeline per cell, the noise table.

The paper's Figure 3 is given only in prose (:data:`PAPER_FIGURE3`). :class:`RingCache`
holds each data set with its RS and DBSCAN family, shared with
:mod:`~privad.experiments.relaxed.options` and :mod:`~privad.experiments.relaxed.streams`.
"""

from __future__ import annotations

import itertools
import math
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.datasets import make_sensor_ring
from privad.io import atomic_write
from privad.relaxed import (
    DBSCANDetector,
    RelaxedReconstruction,
    Sensor,
    relaxed_sensitivity,
    run_pipeline,
)
from privad.relaxed.detectors import dbscan_candidates
from privad.validation import check_int

SEPARATIONS: tuple[float, ...] = (50.0, 120.0, 220.0, 400.0)
"""The paper's separations between core and outlier layer (section 7)."""

EPSILONS: tuple[float, ...] = (0.1, 0.5, 1.0)
"""The paper's privacy levels (Figure 3)."""

PAPER_N = 100_000
"""Points per synthetic data set (section 7)."""

P_O = 10.0
"""Outlier percentage of the synthetic data (section 7) and of eq. (1)."""

PAPER_FIGURE3: dict[str, str] = {
    "accuracy_eps_0.1": "≈ 75 % for separation ≥ 220 ('meaningful accuracy'); lower for 50, 120 "
    "(not stated)",
    "accuracy_eps_0.5": "95–100 % for all separations",
    "accuracy_eps_1": "not stated; 'the correction algorithm is not always needed since the "
    "separation ... is preserved even after perturbation'",
    "subset_size": "always below 20 % (Figure 3b)",
    "abstract": "80 % of outliers in a subset of 10 % of all points at ε = 0.1 on well "
    "separated data",
    "runtime": "correction 30–40 ms for 100,000 points (R 3.3.1, Core i7-4870HQ)",
}
"""What the paper says about Figure 3 (the figure itself is not in the text)."""


def paper_claim(separation: float, epsilon: float) -> tuple[str, str]:
    """The paper's statement for one cell of Figure 3: (accuracy, subset size) as text."""
    if math.isclose(epsilon, 0.1):
        acc = "≈ 0.75" if separation >= 220 else "< 0.75 (not stated)"
    elif math.isclose(epsilon, 0.5):
        acc = "0.95–1.00"
    elif math.isclose(epsilon, 1.0):
        acc = "high (not stated)"
    else:
        acc = "—"
    return acc, "< 0.20"


def _seed(seed: int, *parts: Any) -> int:
    text = ":".join([str(int(seed))] + [str(p) for p in parts])
    return zlib.crc32(text.encode("utf-8"))


# --------------------------------------------------------------------------------------------
# Shared preparation: one data set, its RS and DBSCAN family per (n, separation, run, seed)
# --------------------------------------------------------------------------------------------


@dataclass
class _Prepared:
    X: np.ndarray
    rs: np.ndarray
    T: np.ndarray
    candidates: tuple[DBSCANDetector, ...]
    calibration_s: float
    outliers: dict[DBSCANDetector, np.ndarray] = field(default_factory=dict)

    def outliers_of(self, det: DBSCANDetector) -> np.ndarray:
        if det not in self.outliers:
            self.outliers[det] = det(self.T)
        return self.outliers[det]


class RingCache:
    """Data sets and their DBSCAN calibrations, shared by the functions of one reproduction.

    Calibrating the DBSCAN family on 100,000 points takes seconds and does not depend on
    ε, so :func:`figure3` and :func:`reconstruction_options` reuse it through a cache
    keyed by ``(n, separation, run, seed)``.
    """

    def __init__(self, *, p_o: float = P_O) -> None:
        self.p_o = p_o
        self._items: dict[tuple[int, float, int, int], _Prepared] = {}

    def get(self, n: int, separation: float, run: int, seed: int) -> _Prepared:
        """The prepared data set (generated and calibrated on first use)."""
        key = (int(n), float(separation), int(run), int(seed))
        if key not in self._items:
            X = make_sensor_ring(
                n, separation=separation, rng=_seed(seed, "data", separation, run)
            ).X
            rs = relaxed_sensitivity(X, self.p_o)
            T = Sensor(1.0, rs).scale(X)
            t0 = time.perf_counter()
            cands = dbscan_candidates(T, self.p_o)
            self._items[key] = _Prepared(X, rs, T, cands, time.perf_counter() - t0)
        return self._items[key]

    def grid(
        self,
        what: str,
        separations: Sequence[float],
        n: int,
        runs: int,
        seed: int,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> Iterator[tuple[float, int, _Prepared]]:
        """Every (separation, run) in order, with its prepared data set of ``n`` points.

        ``progress(step, done, total)`` is called before each, the step named ``what``.

        Examples
        --------
        >>> cache = RingCache()
        >>> [(sep, run, prep.X.shape) for sep, run, prep in cache.grid("demo", [50.0], 300, 2, 0)]
        [(50.0, 0, (300, 2)), (50.0, 1, (300, 2))]
        """
        total = len(separations) * runs
        for done, (sep, run) in enumerate(itertools.product(separations, range(runs))):
            if progress is not None:
                progress(f"{what}: separation {sep:g}, run {run + 1}/{runs}", done, total)
            yield sep, run, self.get(n, sep, run, seed)


# --------------------------------------------------------------------------------------------
# Figure 3
# --------------------------------------------------------------------------------------------


def _row(separation: float, epsilon: float, run: int, res: Any, prep: _Prepared) -> dict:
    s = res.summary()
    noise = float(np.mean(res.relaxed_sensitivity)) / epsilon
    row = {
        "separation": separation,
        "epsilon": epsilon,
        "run": run,
        "n": res.n,
        "accuracy": res.accuracy,
        "subset_size": res.subset_size,
        "baseline_accuracy": res.baseline_accuracy,
        "baseline_subset_size": res.baseline_subset_size,
        "n_true_outliers": s["n_true_outliers"],
        "n_presumed_outliers": s["n_presumed_outliers"],
        "n_output": s["n_output"],
        "n_tp": s["n_tp"],
        "n_fp": s["n_fp"],
        "n_fn_l1": s["n_fn_l1"],
        "n_fn_l2": s["n_fn_l2"],
        "n_fn_l3": s["n_fn_l3"],
        "d_tp": s["d_tp"],
        "d_fp": s["d_fp"],
        "w_o": s["w_o"],
        "outlier_radius": s["outlier_radius"],
        "threshold_l2": s["threshold_l2"],
        "threshold_l3": s["threshold_l3"],
        "relaxed_sensitivity": float(np.mean(res.relaxed_sensitivity)),
        "noise_scale": noise,
        "noise_to_separation": noise / separation if separation > 0 else math.inf,
        "dbscan_eps": s.get("dbscan_eps"),
        "dbscan_min_samples": s.get("dbscan_min_samples"),
        "time_dbscan_family_s": prep.calibration_s,
    }
    row.update({k: v for k, v in s.items() if k.startswith("time_")})
    return row


def figure3(
    *,
    separations: Sequence[float] = SEPARATIONS,
    epsilons: Sequence[float] = EPSILONS,
    n: int = PAPER_N,
    runs: int = 5,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    cache: RingCache | None = None,
    reconstruction: RelaxedReconstruction | None = None,
) -> pd.DataFrame:
    """Figure 3a/3b: accuracy and subset size, corrected and uncorrected, per run.

    For each separation and run one data set is drawn; its RS, DBSCAN family, w_O and ρ
    come from the data itself ("historical data" = the data, as in the paper); for each ε
    :func:`~privad.relaxed.run_pipeline` runs with independent noise.

    Parameters
    ----------
    separations, epsilons, n, runs:
        The grid (paper: 50/120/220/400, 0.1/0.5/1, 100,000, 5).
    seed:
        Base seed of the data and the noise.
    progress:
        ``progress(step, done, total)`` before each (separation, run).
    cache:
        A :class:`RingCache` shared with :func:`reconstruction_options`.
    reconstruction:
        Passed to :func:`~privad.relaxed.run_pipeline` (default: the chosen reconstruction;
        the adaptive DBSCAN family comes from ``cache``).

    Returns
    -------
    pandas.DataFrame
        One row per (separation, epsilon, run): ``accuracy``, ``subset_size`` (corrected
        output), ``baseline_accuracy``, ``baseline_subset_size`` (O' on 𝒯', uncorrected),
        the layer sizes, d_TP, d_FP, w_O, ρ, the analyst's thresholds, RS and the noise
        scale RS/ε (measurement units, mean over the two columns), DBSCAN's parameters,
        and ``time_*_s`` per stage (``time_dbscan_family_s``: calibrating the DBSCAN family,
        shared by the three ε).
    """
    runs = check_int(runs, "runs", minimum=1)
    n = check_int(n, "n", minimum=10)
    cache = cache if cache is not None else RingCache()
    rec = RelaxedReconstruction() if reconstruction is None else reconstruction
    rows = []
    for sep, run, prep in cache.grid("Figure 3", separations, n, runs, seed, progress):
        if (
            rec.detector is None
            and rec.dbscan_calibration == "adaptive"
            and rec.dbscan_candidates is None
        ):
            rec_run = replace(rec, dbscan_candidates=prep.candidates)
        else:
            rec_run = rec
        for eps in epsilons:
            res = run_pipeline(
                prep.X,
                eps,
                p_o=cache.p_o,
                rng=_seed(seed, "noise", sep, run, eps),
                reconstruction=rec_run,
            )
            rows.append(_row(float(sep), float(eps), run, res, prep))
    return pd.DataFrame(rows)


def figure3_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean over runs per (separation, epsilon), with the paper's claims beside."""
    cols = [
        "accuracy",
        "subset_size",
        "baseline_accuracy",
        "baseline_subset_size",
        "noise_scale",
        "noise_to_separation",
        "time_correction_s",
    ]
    g = df.groupby(["epsilon", "separation"], sort=True)
    out = g[cols].mean().reset_index()
    out.insert(2, "runs", g.size().to_numpy())
    claims = [paper_claim(s, e) for s, e in zip(out["separation"], out["epsilon"], strict=True)]
    out["paper_accuracy"] = [c[0] for c in claims]
    out["paper_subset_size"] = [c[1] for c in claims]
    return out


def draw_figure3(df: pd.DataFrame, path: str | Path | None = None) -> Any:
    """Figure 3a (accuracy) and 3b (subset size) against separation, one line per ε.

    Solid: corrected output; dashed: uncorrected detection O' on 𝒯'. Means over runs.
    Returns the :class:`matplotlib.figure.Figure`; with ``path`` it is also written there
    as a PNG (Agg backend, atomically).
    """
    from privad.experiments.report import new_figure

    fig = new_figure(10.0, 4.0)
    ax_a, ax_b = fig.subplots(1, 2)
    means = df.groupby(["epsilon", "separation"], sort=True)[
        ["accuracy", "subset_size", "baseline_accuracy", "baseline_subset_size"]
    ].mean()
    colours = ["tab:red", "tab:blue", "tab:green", "tab:purple", "tab:orange"]
    for k, eps in enumerate(sorted(df["epsilon"].unique())):
        m = means.loc[eps]
        c = colours[k % len(colours)]
        for ax, column in ((ax_a, "accuracy"), (ax_b, "subset_size")):
            ax.plot(m.index, 100 * m[column], "o-", color=c, label=f"ε = {eps:g}")
            uncorrected = f"ε = {eps:g}, uncorrected"
            ax.plot(
                m.index, 100 * m[f"baseline_{column}"], "x--", color=c, alpha=0.6, label=uncorrected
            )
    ax_b.axhline(20, color="grey", lw=0.8, ls=":")
    ax_b.text(
        ax_b.get_xlim()[0], 20.5, " paper: always < 20 %", color="grey", fontsize=8, va="bottom"
    )
    for ax, title in (
        (ax_a, "(a) accuracy: outliers found [%]"),
        (ax_b, "(b) subset size [% of n]"),
    ):
        ax.set_xlabel("separation")
        ax.set_title(title)
        ax.set_ylim(0, 105)
        ax.set_xticks(sorted(df["separation"].unique()))
        ax.grid(alpha=0.3)
    ax_a.legend(fontsize=7, loc="lower right")
    if path is not None:
        with atomic_write(Path(path), "wb") as handle:
            fig.savefig(handle, format="png", dpi=110)
    return fig


def noise_table(df: pd.DataFrame) -> pd.DataFrame:
    """RS, the Laplace scale b = RS/ε and how it compares with the separation.

    ``p_coordinate_exceeds_separation`` is ``P(|Y| > separation) = exp(−separation/b)`` for
    one Laplace coordinate: the chance that noise alone carries a point across the gap
    along one axis. From a :func:`figure3` table (means over runs).
    """
    g = (
        df.groupby(["separation", "epsilon"], sort=True)[["relaxed_sensitivity", "noise_scale"]]
        .mean()
        .reset_index()
    )
    g["noise_to_separation"] = g["noise_scale"] / g["separation"]
    g["p_coordinate_exceeds_separation"] = np.exp(-g["separation"] / g["noise_scale"])
    g["noise_exceeds_separation"] = g["noise_scale"] > g["separation"]
    return g
