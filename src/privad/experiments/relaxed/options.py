"""The reconstruction options of the correction (Fig. 2), compared on the same perturbed data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privad.errors import ParameterError
from privad.experiments.relaxed.grid import EPSILONS, PAPER_N, SEPARATIONS, RingCache, _seed
from privad.relaxed import (
    AdaptiveDBSCANDetector,
    Analyst,
    CorrectionServer,
    RelaxedReconstruction,
    Sensor,
    SplitRule,
)
from privad.relaxed.correction import estimate_outlier_layer_radius, estimate_outlier_layer_width
from privad.relaxed.messages import SensorToAnalyst, SensorToCorrection
from privad.relaxed.metrics import accuracy, subset_size
from privad.validation import check_int


@dataclass(frozen=True)
class ReconstructionOption:
    """One reading of the correction (Fig. 2): its name, what it does, its choices
    (:class:`~privad.relaxed.RelaxedReconstruction`, of which the analyst's and the
    correction server's parts are used here) and what information flows."""

    name: str
    description: str
    reconstruction: RelaxedReconstruction
    information_flow: str


OPTIONS: tuple[ReconstructionOption, ...] = (
    ReconstructionOption(
        "notes",
        "docs/papers.md literally: I_L2 = {d ≥ d_TP}, I_L3 = {d ≥ d_TP + w_O}, d_TP = min "
        "over TP (previous default)",
        RelaxedReconstruction(reduction="notes"),
        "section 6.2 as printed: A learns d_TP and w_O",
    ),
    ReconstructionOption(
        "notes, d_TP ≥ 0",
        "as notes, d_TP clipped below at 0 (option b)",
        RelaxedReconstruction(reduction="notes", split=SplitRule(d_tp_floor=0.0)),
        "as notes (A learns max(0, d_TP))",
    ),
    ReconstructionOption(
        "notes, d_TP = p5",
        "as notes, d_TP = 5th percentile of d_diff over TP (option b)",
        RelaxedReconstruction(reduction="notes", split=SplitRule(d_tp_percentile=5.0)),
        "as notes (A learns a percentile of d_diff over TP instead of the minimum)",
    ),
    ReconstructionOption(
        "notes, d_FP = d_TP + w_O",
        "as notes, FN_L3's upper bound d_TP + w_O instead of "
        "min FP ('more precise is the outlier layer width', section 6.1; option c)",
        RelaxedReconstruction(reduction="notes", split=SplitRule(d_fp_rule="layer")),
        "as notes",
    ),
    ReconstructionOption(
        "radius, ρ history",
        "default: I_L2 = {d ≥ ρ}, I_L3 = {d ≥ ρ + max(0, d_TP)}, ρ = "
        "inner radius of the historical outlier layer (option a, core distance)",
        RelaxedReconstruction(),
        "as notes, plus A holds ρ, a public constant about past outliers",
    ),
    ReconstructionOption(
        "radius, ρ presumed",
        "as radius, ρ = median d_{c'}(𝒯') over O' − w_O, estimated by A alone (option a)",
        RelaxedReconstruction(outlier_radius="presumed"),
        "exactly section 6.2's messages; A uses only 𝒯', O', d_TP, w_O",
    ),
    ReconstructionOption(
        "radius, d_TP = p5",
        "radius (ρ history) with d_TP = 5th percentile over TP (a+b)",
        RelaxedReconstruction(split=SplitRule(d_tp_percentile=5.0)),
        "as radius, ρ history",
    ),
    ReconstructionOption(
        "radius, d_FP = p5",
        "radius (ρ history) with d_FP = 5th percentile of d_diff over FP (a+c)",
        RelaxedReconstruction(split=SplitRule(d_fp_rule="percentile", d_fp_percentile=5.0)),
        "as radius, ρ history",
    ),
    ReconstructionOption(
        "radius, d_FP = d_TP + w_O",
        "radius (ρ history) with FN_L3's upper bound d_TP + w_O (a+c)",
        RelaxedReconstruction(split=SplitRule(d_fp_rule="layer")),
        "as radius, ρ history",
    ),
    ReconstructionOption(
        "radius, no d_FP",
        "radius (ρ history) without the upper bound d_FP (a+c)",
        RelaxedReconstruction(split=SplitRule(d_fp_rule="none")),
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
    for sep, run, prep in cache.grid("options", separations, n, runs, seed, progress):
        n_rec = prep.X.shape[0]
        base = prep.candidates[0]
        # as run_pipeline: the historical outliers of the single calibration, or of the
        # family (any member's noise) for the adaptive mode
        hist = {
            "history": prep.outliers_of(base),
            "adaptive": np.unique(np.concatenate([prep.outliers_of(c) for c in prep.candidates])),
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
                    rec = opt.reconstruction
                    # ρ from the historical outliers, or the analyst's own estimate
                    given = rho if rec.outlier_radius == "history" else None
                    analyst = rec.analyst(_Fixed(o_prime, n_rec), given)
                    out = _replay(to_a, to_c, analyst, rec.correction_server(w_o))
                    rows.append(
                        {
                            "option": opt.name,
                            **common,
                            "accuracy": accuracy(out, o_true, n_rec),
                            "subset_size": subset_size(out, n_rec),
                        }
                    )
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


def draw_options(summary: pd.DataFrame) -> Any:
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
