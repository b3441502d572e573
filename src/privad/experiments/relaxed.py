"""Reproduction of the relaxed-DP paper's evaluation (section 7, Figure 3a/3b).

"Relaxed Differentially Private Outlier Detection and Correction" for sensor streams
(Böhler, Bernau, Kerschbaum, DBSec 2017): 100,000 points in R², each coordinate
N(0, 3²), 10 % outliers moved outward to a separation of ≈ 50, 120, 220, 400
(:func:`privad.datasets.make_sensor_ring`); ε ∈ {0.1, 0.5, 1}; mean of 5 runs; DBSCAN as
f_outlier with the same parameters on 𝒯 and 𝒯'. The paper's Figure 3 is given only in prose
(:data:`PAPER_FIGURE3`): ≈ 75 % accuracy at ε = 0.1 for separation ≥ 220, 95–100 % at
ε = 0.5 for all separations, the correction "not always needed" at ε = 1, subset size always
below 20 %.

One function per result, each returning a tidy :class:`pandas.DataFrame`; nothing here writes
files except :func:`draw_figure3` (when given a path) and :func:`reproduce` (through
:mod:`privad.experiments.report`, atomically):

* :func:`figure3`: the whole pipeline (:func:`privad.relaxed.run_pipeline`) per separation,
  ε and run, with the corrected and the uncorrected (O' on 𝒯') accuracy and subset size and
  per-stage timings; :func:`figure3_summary` averages the runs beside the paper's claims;
  :func:`draw_figure3` plots Figure 3a/3b.
* :func:`reconstruction_options`: every reconstruction option of the correction
  (:data:`OPTIONS`) × both DBSCAN calibrations on the same perturbed data, and the
  uncorrected baseline (``docs/relaxed_reproduction.md`` discusses the table).
* :func:`noise_table`: the relaxed sensitivity RS, the noise scale RS/ε and how it compares
  with the separation.
* :func:`streaming_example`: the protocol on a stream of windows with parameters fixed from
  history, as the services run it.

Randomness comes from seeds derived from ``seed`` (CRC-32 of the step's name and
coordinates), so a run is reproducible and separations, runs and ε get independent streams.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.datasets import make_sensor_ring
from privad.errors import ParameterError
from privad.io import atomic_write
from privad.relaxed import (
    AdaptiveDBSCANDetector,
    Analyst,
    CorrectionServer,
    DBSCANDetector,
    Sensor,
    accuracy,
    dbscan_candidates,
    estimate_outlier_layer_radius,
    estimate_outlier_layer_width,
    relaxed_sensitivity,
    run_pipeline,
    run_protocol,
    subset_size,
)
from privad.relaxed.messages import SensorToAnalyst, SensorToCorrection
from privad.validation import check_int

__all__ = [
    "EPSILONS",
    "OPTIONS",
    "PAPER_FIGURE3",
    "PAPER_N",
    "SEPARATIONS",
    "ReconstructionOption",
    "RingCache",
    "draw_figure3",
    "figure3",
    "figure3_summary",
    "noise_table",
    "options_summary",
    "paper_claim",
    "PROTECTED_VARIANTS",
    "protected_exchange_grid",
    "protected_exchange_summary",
    "reconstruction_options",
    "reproduce",
    "streaming_example",
]

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
    **pipeline_options: Any,
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
    pipeline_options:
        Passed to :func:`~privad.relaxed.run_pipeline` (default: its defaults, the chosen
        reconstruction).

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
    rows = []
    total = len(separations) * runs
    done = 0
    for sep in separations:
        for run in range(runs):
            if progress is not None:
                progress(f"Figure 3: separation {sep:g}, run {run + 1}/{runs}", done, total)
            prep = cache.get(n, sep, run, seed)
            kw = dict(pipeline_options)
            if (
                "detector" not in kw
                and kw.get("dbscan_calibration", "adaptive") == "adaptive"
                and "dbscan_candidates" not in kw
            ):
                kw["dbscan_candidates"] = prep.candidates
            for eps in epsilons:
                res = run_pipeline(
                    prep.X, eps, p_o=cache.p_o, rng=_seed(seed, "noise", sep, run, eps), **kw
                )
                rows.append(_row(float(sep), float(eps), run, res, prep))
            done += 1
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
        ax_a.plot(m.index, 100 * m["accuracy"], "o-", color=c, label=f"ε = {eps:g}")
        ax_a.plot(
            m.index,
            100 * m["baseline_accuracy"],
            "x--",
            color=c,
            alpha=0.6,
            label=f"ε = {eps:g}, uncorrected",
        )
        ax_b.plot(m.index, 100 * m["subset_size"], "o-", color=c, label=f"ε = {eps:g}")
        ax_b.plot(
            m.index,
            100 * m["baseline_subset_size"],
            "x--",
            color=c,
            alpha=0.6,
            label=f"ε = {eps:g}, uncorrected",
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


# --------------------------------------------------------------------------------------------
# The reconstruction options
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReconstructionOption:
    """One reading of the correction (Fig. 2): the analyst's and the server's keywords.

    ``analyst`` keys: ``reduction`` and ``radius`` (``"history"``: ρ from the historical
    outliers given to the analyst; ``"presumed"``: the analyst's own estimate);
    ``server`` holds :class:`~privad.relaxed.CorrectionServer` keywords.
    """

    name: str
    description: str
    analyst: dict[str, Any]
    server: dict[str, Any]
    information_flow: str


OPTIONS: tuple[ReconstructionOption, ...] = (
    ReconstructionOption(
        "notes",
        "docs/papers.md literally: I_L2 = {d ≥ d_TP}, I_L3 = {d ≥ d_TP + w_O}, d_TP = min "
        "over TP (previous default)",
        {"reduction": "notes"},
        {},
        "section 6.2 as printed: A learns d_TP and w_O",
    ),
    ReconstructionOption(
        "notes, d_TP ≥ 0",
        "as notes, d_TP clipped below at 0 (option b)",
        {"reduction": "notes"},
        {"d_tp_floor": 0.0},
        "as notes (A learns max(0, d_TP))",
    ),
    ReconstructionOption(
        "notes, d_TP = p5",
        "as notes, d_TP = 5th percentile of d_diff over TP (option b)",
        {"reduction": "notes"},
        {"d_tp_percentile": 5.0},
        "as notes (A learns a percentile of d_diff over TP instead of the minimum)",
    ),
    ReconstructionOption(
        "notes, d_FP = d_TP + w_O",
        "as notes, FN_L3's upper bound d_TP + w_O instead of "
        "min FP ('more precise is the outlier layer width', section 6.1; option c)",
        {"reduction": "notes"},
        {"d_fp_rule": "layer"},
        "as notes",
    ),
    ReconstructionOption(
        "radius, ρ history",
        "default: I_L2 = {d ≥ ρ}, I_L3 = {d ≥ ρ + max(0, d_TP)}, ρ = "
        "inner radius of the historical outlier layer (option a, core distance)",
        {"reduction": "radius", "radius": "history"},
        {},
        "as notes, plus A holds ρ, a public constant about past outliers",
    ),
    ReconstructionOption(
        "radius, ρ presumed",
        "as radius, ρ = median d_{c'}(𝒯') over O' − w_O, estimated by A alone (option a)",
        {"reduction": "radius", "radius": "presumed"},
        {},
        "exactly section 6.2's messages; A uses only 𝒯', O', d_TP, w_O",
    ),
    ReconstructionOption(
        "radius, d_TP = p5",
        "radius (ρ history) with d_TP = 5th percentile over TP (a+b)",
        {"reduction": "radius", "radius": "history"},
        {"d_tp_percentile": 5.0},
        "as radius, ρ history",
    ),
    ReconstructionOption(
        "radius, d_FP = p5",
        "radius (ρ history) with d_FP = 5th percentile of d_diff over FP (a+c)",
        {"reduction": "radius", "radius": "history"},
        {"d_fp_rule": "percentile", "d_fp_percentile": 5.0},
        "as radius, ρ history",
    ),
    ReconstructionOption(
        "radius, d_FP = d_TP + w_O",
        "radius (ρ history) with FN_L3's upper bound d_TP + w_O (a+c)",
        {"reduction": "radius", "radius": "history"},
        {"d_fp_rule": "layer"},
        "as radius, ρ history",
    ),
    ReconstructionOption(
        "radius, no d_FP",
        "radius (ρ history) without the upper bound d_FP (a+c)",
        {"reduction": "radius", "radius": "history"},
        {"d_fp_rule": "none"},
        "as radius, ρ history",
    ),
)
"""The options evaluated by :func:`reconstruction_options`; ``"radius, ρ history"`` is the
default of :func:`privad.relaxed.run_pipeline`."""

DBSCAN_MODES: tuple[str, ...] = ("history", "adaptive")
"""DBSCAN calibrations compared (option d): the single history calibration (minPts = 0.5 %
of n) and the adaptive family (default)."""


class _Fixed:
    """A detector that returns a precomputed O' (the same 𝒯' is corrected many ways)."""

    def __init__(self, noise: np.ndarray, n: int) -> None:
        self.noise, self.n = noise, n

    def __call__(self, X: np.ndarray) -> np.ndarray:
        if X.shape[0] != self.n:
            raise ParameterError("the precomputed O' belongs to another data set")
        return self.noise


def _replay(
    to_analyst: SensorToAnalyst,
    to_correction: SensorToCorrection,
    analyst: Analyst,
    server: CorrectionServer,
) -> np.ndarray:
    """The message sequence of :func:`privad.relaxed.run_protocol` from given step-2 messages."""
    server.receive_differences(to_correction)
    presumed = analyst.receive_data(to_analyst)
    thresholds = server.receive_presumed_outliers(presumed)
    layers = analyst.receive_thresholds(thresholds)
    return analyst.receive_result(server.receive_layers(layers))


def reconstruction_options(
    *,
    separations: Sequence[float] = SEPARATIONS,
    epsilons: Sequence[float] = EPSILONS,
    n: int = PAPER_N,
    runs: int = 5,
    seed: int = 0,
    options: Sequence[ReconstructionOption] = OPTIONS,
    progress: Callable[[str, int, int], None] | None = None,
    cache: RingCache | None = None,
) -> pd.DataFrame:
    """Every reconstruction option × DBSCAN calibration on the same perturbed data.

    For each separation, run and ε the sensor perturbs once (same seeds as :func:`figure3`);
    O' is computed once per DBSCAN calibration; then each option runs the protocol's steps
    3–5 with fresh parties. O (the evaluation's true outliers) uses the same DBSCAN
    parameters as O' (for the adaptive family: the candidate chosen on 𝒯').

    Returns
    -------
    pandas.DataFrame
        One row per (option, dbscan, separation, epsilon, run) with ``accuracy`` and
        ``subset_size``; option ``"uncorrected"`` is O' itself.
    """
    runs = check_int(runs, "runs", minimum=1)
    cache = cache if cache is not None else RingCache()
    rows: list[dict] = []
    total = len(separations) * runs
    done = 0
    for sep in separations:
        for run in range(runs):
            if progress is not None:
                progress(f"options: separation {sep:g}, run {run + 1}/{runs}", done, total)
            prep = cache.get(n, sep, run, seed)
            n_rec = prep.X.shape[0]
            base = prep.candidates[0]
            # as run_pipeline: the historical outliers of the single calibration, or of the
            # family (any member's noise) for the adaptive mode
            hist = {
                "history": prep.outliers_of(base),
                "adaptive": np.unique(
                    np.concatenate([prep.outliers_of(c) for c in prep.candidates])
                ),
            }
            layer = {
                mode: (
                    estimate_outlier_layer_width(prep.T, o),
                    estimate_outlier_layer_radius(prep.T, o),
                )
                for mode, o in hist.items()
            }
            for eps in epsilons:
                sensor = Sensor(
                    eps,
                    prep.rs,
                    exchange="unprotected",  # the paper's exchange
                    rng=_seed(seed, "noise", sep, run, eps),
                )
                to_a, to_c = sensor.perturb(prep.X)
                adaptive = AdaptiveDBSCANDetector(prep.candidates, cache.p_o)
                chosen, _ = adaptive.select(to_a.perturbed)
                assert adaptive.noise_sets is not None
                modes = {
                    "history": (base, adaptive.noise_sets[0]),
                    "adaptive": (chosen, adaptive.noise_sets[prep.candidates.index(chosen)]),
                }
                for mode, (det, o_prime) in modes.items():
                    o_true = prep.outliers_of(det)
                    w_o, rho = layer[mode]
                    common = {
                        "separation": float(sep),
                        "epsilon": float(eps),
                        "run": run,
                        "dbscan": mode,
                        "dbscan_eps": det.eps,
                        "dbscan_min_samples": det.min_samples,
                    }
                    rows.append(
                        {
                            "option": "uncorrected",
                            **common,
                            "accuracy": accuracy(o_prime, o_true, n_rec),
                            "subset_size": subset_size(o_prime, n_rec),
                        }
                    )
                    for opt in options:
                        a_kw = dict(opt.analyst)
                        source = a_kw.pop("radius", None)
                        if a_kw.get("reduction") == "radius" and source == "history":
                            a_kw["outlier_radius"] = rho
                        analyst = Analyst(_Fixed(o_prime, n_rec), **a_kw)
                        server = CorrectionServer(w_o, **opt.server)
                        out = _replay(to_a, to_c, analyst, server)
                        rows.append(
                            {
                                "option": opt.name,
                                **common,
                                "accuracy": accuracy(out, o_true, n_rec),
                                "subset_size": subset_size(out, n_rec),
                            }
                        )
            done += 1
    return pd.DataFrame(rows)


def options_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy and subset size over runs: one row per (option, dbscan, ε), one column
    pair per separation (``acc_50``, ``sub_50``, …)."""
    m = df.groupby(["option", "dbscan", "epsilon", "separation"], sort=False)[
        ["accuracy", "subset_size"]
    ].mean()
    wide = m.unstack("separation")
    wide.columns = [f"{'acc' if a == 'accuracy' else 'sub'}_{s:g}" for a, s in wide.columns]
    order = [c for s in sorted(df["separation"].unique()) for c in (f"acc_{s:g}", f"sub_{s:g}")]
    return wide[order].reset_index()


# --------------------------------------------------------------------------------------------
# A stream of windows
# --------------------------------------------------------------------------------------------


def streaming_example(
    *,
    windows: int = 8,
    window_size: int = 2_000,
    separation: float = 220.0,
    epsilon: float = 0.5,
    seed: int = 0,
) -> pd.DataFrame:
    """The protocol on a sensor stream: parameters from history, one protocol run per window.

    RS (eq. 1), the DBSCAN family, w_O and ρ are fixed once from a historical window of the
    same size (drawn separately); then each window of the stream (a fresh sample of the same
    ring distribution) is perturbed with fresh noise and corrected by fresh parties, as the
    services do (``privad sensor send``). Nothing from a window is used to set parameters
    except the analyst's choice among the DBSCAN family on its own 𝒯'.

    Returns
    -------
    pandas.DataFrame
        One row per window: ``window``, ``n``, ``accuracy``, ``subset_size``,
        ``baseline_accuracy``, ``baseline_subset_size``, ``n_presumed``, ``n_output``,
        ``dbscan_min_samples``, ``time_detection_ms``, ``time_correction_ms``.
    """
    windows = check_int(windows, "windows", minimum=1)
    window_size = check_int(window_size, "window_size", minimum=10)
    history = make_sensor_ring(
        window_size, separation=separation, rng=_seed(seed, "stream-history")
    ).X
    rs = relaxed_sensitivity(history, P_O)
    sensor = Sensor(epsilon, rs, rng=_seed(seed, "stream-noise"))
    H = sensor.scale(history)
    cands = dbscan_candidates(H, P_O)
    hist_o = np.unique(np.concatenate([c(H) for c in cands]))
    w_o = estimate_outlier_layer_width(H, hist_o)
    rho = estimate_outlier_layer_radius(H, hist_o)
    rows = []
    for w in range(windows):
        X = make_sensor_ring(
            window_size, separation=separation, rng=_seed(seed, "stream-window", w)
        ).X
        detector = AdaptiveDBSCANDetector(cands, P_O)
        analyst = Analyst(detector, outlier_radius=rho)
        run = run_protocol(X, sensor, analyst, CorrectionServer(w_o))
        assert detector.selected is not None
        o_true = detector.selected(sensor.scale(X))
        rows.append(
            {
                "window": w,
                "n": window_size,
                "accuracy": accuracy(run.outliers, o_true, window_size),
                "subset_size": subset_size(run.outliers, window_size),
                "baseline_accuracy": accuracy(run.presumed_outliers, o_true, window_size),
                "baseline_subset_size": subset_size(run.presumed_outliers, window_size),
                "n_true_outliers": int(o_true.size),
                "n_presumed": int(run.presumed_outliers.size),
                "n_output": int(run.outliers.size),
                "dbscan_min_samples": detector.selected.min_samples,
                "time_detection_ms": 1000 * run.timings["detection"],
                "time_correction_ms": 1000 * run.timings["correction"],
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# The whole reproduction
# --------------------------------------------------------------------------------------------


def _draw_options(summary: pd.DataFrame) -> Any:
    from privad.experiments.report import new_figure

    fig = new_figure(11.0, 3.8)
    eps_values = sorted(summary["epsilon"].unique())
    axes = fig.subplots(1, len(eps_values), sharey=True)
    axes = np.atleast_1d(axes)
    seps = sorted({float(c.split("_")[1]) for c in summary.columns if c.startswith("sub_")})
    for ax, eps in zip(axes, eps_values, strict=True):
        part = summary[(summary["epsilon"] == eps) & (summary["dbscan"] == "adaptive")]
        for _, r in part.iterrows():
            ax.plot(seps, [100 * r[f"sub_{s:g}"] for s in seps], "o-", ms=3, label=r["option"])
        ax.set_title(f"ε = {eps:g} (adaptive DBSCAN)")
        ax.set_xlabel("separation")
        ax.set_xticks(seps)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("subset size [% of n]")
    axes[-1].legend(fontsize=6)
    return fig


def reproduce(
    out_dir: str | Path,
    *,
    quick: bool = False,
    seed: int = 0,
    runs: int = 5,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[Path]:
    """Run Figure 3, the options table, the noise table and the stream example; write them.

    Writes into ``out_dir`` (atomically, ``index.html`` last): ``figure3.csv`` (one row per
    separation, ε and run), ``figure3_summary.csv``, ``figure3.png``, ``options.csv``,
    ``options_summary.csv``, ``options.png``, ``noise.csv``, ``streaming.csv`` and
    ``index.html``.

    Parameters
    ----------
    out_dir:
        Output folder (created if missing).
    quick:
        Small data (4,000 points, 1 run) for tests and a first look; the full run uses the
        paper's 100,000 points and ``runs`` runs.
    seed:
        Base seed (data and noise).
    runs:
        Runs per cell (paper: 5); quick mode uses 1.
    progress:
        ``progress(step, done, total)`` before each step and once at the end.

    Returns
    -------
    list of Path
        Every file written, ``index.html`` last.
    """
    from privad import __version__
    from privad.experiments.report import Report, Section

    runs = check_int(runs, "runs", minimum=1)
    n = 4_000 if quick else PAPER_N
    runs_used = 1 if quick else runs
    report = Report(Path(out_dir), "Relaxed DP for sensor streams: Figure 3 reproduction")
    cache = RingCache()
    state: dict[str, pd.DataFrame] = {}
    t_start = time.perf_counter()

    total = 5
    position = {"k": 0}

    def sub() -> Callable[[str, int, int], None] | None:
        """Inner progress as step names under the outer (done, total)."""
        if progress is None:
            return None
        return lambda step, _done, _total: progress(step, position["k"], total)

    def step_figure3() -> None:
        df = figure3(n=n, runs=runs_used, seed=seed, cache=cache, progress=sub())
        state["figure3"] = df
        summary = figure3_summary(df)
        report.write_csv("figure3.csv", df)
        report.write_csv("figure3_summary.csv", summary)
        report.save_figure("figure3.png", draw_figure3(df))
        show = summary[
            [
                "epsilon",
                "separation",
                "runs",
                "accuracy",
                "paper_accuracy",
                "subset_size",
                "paper_subset_size",
                "baseline_accuracy",
                "baseline_subset_size",
                "noise_to_separation",
            ]
        ]
        report.add(
            Section(
                "Figure 3a/3b: accuracy and subset size",
                text=[
                    f"{n:,} points per data set, {runs_used} run(s) per cell, p_o = 10 %. "
                    "Defaults of privad.relaxed.run_pipeline: RS by eq. (1), DBSCAN from the "
                    "adaptive family calibrated on the data itself (the paper's experiments use "
                    "the data as history), the 'radius' reduction with ρ = inner radius of the "
                    "historical outlier layer, d_TP and d_FP as the paper's minima.",
                    "Accuracy: share of O = f_outlier(𝒯) in the corrected output; subset size: "
                    "its size as a share of n; baseline: O' = f_outlier(𝒯') without correction. "
                    "The paper gives Figure 3 only in prose (paper_* columns).",
                ],
                tables=[("Mean over runs, beside the paper", show)],
                figures=[
                    (
                        "figure3.png",
                        "Figure 3a (accuracy) and 3b (subset size); dashed: uncorrected O'",
                    )
                ],
                files=[
                    ("figure3.csv", "one row per separation, ε and run, with timings"),
                    ("figure3_summary.csv", "means over runs"),
                ],
            )
        )

    def step_noise() -> None:
        t = noise_table(state["figure3"])
        report.write_csv("noise.csv", t)
        report.add(
            Section(
                "Noise scale against separation",
                text=[
                    "RS = ρ_95 − ρ_5 per column (eq. 1) is about 12–14 for every separation "
                    "(the outliers are 10 % of the points, so the 5th and 95th percentiles fall "
                    "at the core's edge). The Laplace scale RS/ε is therefore ≈ 125 at ε = 0.1: "
                    "larger than the separations 50 and 120 and half of 220. "
                    "p_coordinate_exceeds_separation = exp(−separation/b) is the chance that one "
                    "coordinate's noise alone spans the gap.",
                ],
                tables=[("Noise scale b = RS/ε (measurement units)", t)],
                files=[("noise.csv", "the table")],
            )
        )

    def step_options() -> None:
        df = reconstruction_options(n=n, runs=runs_used, seed=seed, cache=cache, progress=sub())
        summary = options_summary(df)
        report.write_csv("options.csv", df)
        report.write_csv("options_summary.csv", summary)
        report.save_figure("options.png", _draw_options(summary))
        flows = pd.DataFrame(
            [
                {
                    "option": o.name,
                    "description": o.description,
                    "information flow": o.information_flow,
                }
                for o in OPTIONS
            ]
        )
        report.add(
            Section(
                "Reconstruction options of the correction (Fig. 2)",
                text=[
                    "Each option corrects the same perturbed data (same seeds as Figure 3); "
                    "'history' DBSCAN is the single calibration (minPts = 0.5 % of n), "
                    "'adaptive' the family from which the analyst picks on 𝒯' (default). "
                    "acc_S / sub_S: mean accuracy / subset size at separation S. See "
                    "docs/relaxed_reproduction.md for the reasoning.",
                ],
                tables=[("Options", flows), ("Mean over runs", summary)],
                figures=[("options.png", "Subset size per option (adaptive DBSCAN), log scale")],
                files=[
                    ("options.csv", "one row per option, DBSCAN mode, separation, ε and run"),
                    ("options_summary.csv", "means over runs"),
                ],
            )
        )

    def step_stream() -> None:
        t = streaming_example(
            windows=3 if quick else 8, window_size=1_000 if quick else 2_000, seed=seed
        )
        report.write_csv("streaming.csv", t)
        report.add(
            Section(
                "A sensor stream: one protocol run per window",
                text=[
                    "Separation 220, ε = 0.5, windows of a stream; RS, the DBSCAN family, w_O "
                    "and ρ fixed once from a separate historical window of the same size, fresh "
                    "noise and fresh parties per window (as privad sensor send does).",
                ],
                tables=[("Per window", t)],
                files=[("streaming.csv", "the table")],
            )
        )

    steps: list[tuple[str, Callable[[], None]]] = [
        ("Figure 3", step_figure3),
        ("noise table", step_noise),
        ("reconstruction options", step_options),
        ("stream example", step_stream),
    ]
    assert total == len(steps) + 1
    for k, (name, fn) in enumerate(steps):
        position["k"] = k
        if progress is not None:
            progress(name, k, total)
        fn()
    if progress is not None:
        progress("index.html", len(steps), total)
    elapsed = time.perf_counter() - t_start
    report.intro = [
        f"privad {__version__}. Mode: {'quick (4,000 points, 1 run)' if quick else 'full'}; "
        f"seed {seed}; computed in {elapsed:.1f} s.",
        "Paper: 'Relaxed Differentially Private Outlier Detection and Correction' (sensor "
        "streams), section 7. Its Figure 2 (the correction box) and Figure 3 are missing from "
        "the text; the box is reconstructed (docs/papers.md, privad.relaxed.correction) and "
        "Figure 3 is compared with the paper's prose. Full discussion: "
        "docs/relaxed_reproduction.md.",
    ]
    report.write_html("index.html")
    if progress is not None:
        progress("done", total, total)
    return list(report.written)


PROTECTED_VARIANTS: tuple[tuple[float | None, float | None], ...] = (
    (None, None),
    (0.5, None),
    (1.0, None),
    (2.0, None),
    (4.0, None),
    (1.0, 0.5),
    (1.0, 1.0),
)
"""The exchanges :func:`protected_exchange_grid` compares, as ``(ε_CS, ε_TP)`` factors of the
perturbation's ε per record (dε): ``(None, None)`` is the paper's unprotected exchange,
``(f, None)`` the protected one with ε_CS = f·dε and exact-but-noisy-d_diff d_TP, ``(f, g)``
adds the d_TP noise of ε_TP = g·dε."""


def _variant_label(cs: float | None, tp: float | None) -> str:
    if cs is None:
        return "unprotected"
    return f"protected ε_CS={cs:g}·dε" + ("" if tp is None else f", ε_TP={tp:g}·dε")


def protected_exchange_grid(
    separations: Sequence[float] = SEPARATIONS,
    epsilons: Sequence[float] = EPSILONS,
    variants: Sequence[tuple[float | None, float | None]] = PROTECTED_VARIANTS,
    *,
    n: int = PAPER_N,
    runs: int = 5,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    cache: RingCache | None = None,
) -> pd.DataFrame:
    """Accuracy and subset size of the protected exchange against ε_CS and ε_TP (Figure 3's grid).

    The data sets, their calibration and the perturbation's noise seeds are those of
    :func:`figure3` (same ``seed``), so the ``"unprotected"`` rows are Figure 3's runs. Every
    variant perturbs 𝒯 with the same noise (the same 𝒯', hence the same O', computed once);
    the variants differ only in the noise on d_diff (ε_CS) and on d_TP (ε_TP), and each runs
    steps 3–5 with fresh parties and :func:`~privad.relaxed.run_pipeline`'s defaults
    (adaptive DBSCAN, the "radius" reduction with ρ and w_O from the historical outliers).

    Parameters
    ----------
    separations, epsilons, n, runs:
        The grid (paper: 50/120/220/400, 0.1/0.5/1, 100,000, 5).
    variants:
        ``(ε_CS factor, ε_TP factor)`` pairs, see :data:`PROTECTED_VARIANTS`.
    seed:
        Base seed of the data and the noise (as :func:`figure3`).
    progress:
        ``progress(step, done, total)`` before each (separation, run).
    cache:
        A :class:`RingCache` shared with other functions of the same reproduction.

    Returns
    -------
    pandas.DataFrame
        One row per (separation, ε, variant, run): ``exchange`` (label), ``cs_factor``,
        ``tp_factor``, ``cs_epsilon``, ``tp_epsilon`` (absolute, per record),
        ``charged_epsilon`` (ε_T + ε_CS per record, what a window is charged; ε_TP costs
        nothing on top, see :mod:`privad.relaxed.views`), ``accuracy``, ``subset_size``,
        ``baseline_accuracy``, ``baseline_subset_size`` (O' before correction, the same for
        every variant) and ``n_output``. :func:`protected_exchange_summary` averages the runs.
    """
    runs = check_int(runs, "runs", minimum=1)
    n = check_int(n, "n", minimum=10)
    variants = [
        (None if cs is None else float(cs), None if tp is None else float(tp))
        for cs, tp in variants
    ]
    if any(cs is None and tp is not None for cs, tp in variants):
        raise ParameterError(
            "ε_TP applies to the protected exchange only: give an ε_CS factor "
            "with every ε_TP factor"
        )
    cache = cache if cache is not None else RingCache()
    rows: list[dict[str, Any]] = []
    total = len(separations) * runs
    done = 0
    for sep in separations:
        for run in range(runs):
            if progress is not None:
                progress(
                    f"protected exchange: separation {sep:g}, run {run + 1}/{runs}", done, total
                )
            prep = cache.get(n, sep, run, seed)
            n_rec, d = prep.X.shape
            # as run_pipeline: w_O and ρ from the records any member of the family labels as
            # noise on the history (= the data)
            hist = np.unique(np.concatenate([prep.outliers_of(c) for c in prep.candidates]))
            w_o = estimate_outlier_layer_width(prep.T, hist)
            rho = estimate_outlier_layer_radius(prep.T, hist)
            for eps in epsilons:
                o_prime = chosen = None
                for cs, tp in variants:
                    kw: dict[str, Any] = (
                        {"exchange": "unprotected"}
                        if cs is None
                        else {
                            "exchange": "protected",
                            "cs_epsilon": cs * d * eps,
                            "tp_epsilon": None if tp is None else tp * d * eps,
                        }
                    )
                    sensor = Sensor(eps, prep.rs, rng=_seed(seed, "noise", sep, run, eps), **kw)
                    to_a, to_c = sensor.perturb(prep.X)  # 𝒯' first: the same for every variant
                    if o_prime is None:
                        adaptive = AdaptiveDBSCANDetector(prep.candidates, cache.p_o)
                        chosen, o_prime = adaptive.select(to_a.perturbed)
                    analyst = Analyst(_Fixed(o_prime, n_rec), outlier_radius=rho)
                    out = _replay(to_a, to_c, analyst, CorrectionServer(w_o))
                    o_true = prep.outliers_of(chosen)
                    rows.append(
                        {
                            "separation": float(sep),
                            "epsilon": float(eps),
                            "run": run,
                            "n": n_rec,
                            "exchange": _variant_label(cs, tp),
                            "cs_factor": cs,
                            "tp_factor": tp,
                            "cs_epsilon": kw.get("cs_epsilon"),
                            "tp_epsilon": kw.get("tp_epsilon"),
                            "charged_epsilon": d * eps + (kw.get("cs_epsilon") or 0.0),
                            "accuracy": accuracy(out, o_true, n_rec),
                            "subset_size": subset_size(out, n_rec),
                            "baseline_accuracy": accuracy(o_prime, o_true, n_rec),
                            "baseline_subset_size": subset_size(o_prime, n_rec),
                            "n_output": int(out.size),
                        }
                    )
            done += 1
    return pd.DataFrame(rows)


def protected_exchange_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean (and range) over runs of :func:`protected_exchange_grid` per (separation, ε,
    exchange), in the order of the grid."""
    keys = ["separation", "epsilon", "exchange"]
    g = df.groupby(keys, sort=False)
    out = g[["charged_epsilon", "accuracy", "subset_size"]].mean()
    for col in ("accuracy", "subset_size"):
        out[f"{col}_min"] = g[col].min()
        out[f"{col}_max"] = g[col].max()
    out["runs"] = g.size()
    return out.reset_index()
