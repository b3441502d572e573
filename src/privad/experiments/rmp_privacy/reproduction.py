"""The whole privacy evaluation: settings, every table, and the page's sections.

:func:`reproduce_privacy` fills the skeleton of
:class:`~privad.experiments.report.Reproduction`; its sections can join another page (the
RMP reproduction adds them to its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.experiments.report import Progress, Reproduction, Section
from privad.experiments.rmp_privacy.attacks import (
    collusion_vs_alpha,
    ica_vs_w,
    known_io_vs_k,
    map_vs_alpha,
    map_vs_w,
)
from privad.experiments.rmp_privacy.data import ATTACKERS, PAPER_ALPHAS, SCENARIOS, attack_datasets
from privad.experiments.rmp_privacy.figures import DRAWERS, lemma1_table
from privad.validation import check_int

# --------------------------------------------------------------------------------------------
# The whole evaluation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivacySettings:
    """What :func:`privacy_evaluation` runs (full vs ``quick``)."""

    quick: bool
    seed: int
    victim: int
    known: int
    repeats: int
    alphas: tuple[float, ...]
    w_alpha: float
    ica_ws: tuple[int, ...]
    ica_m: int
    ica_repeats: int
    known_io_ks: tuple[int, ...]
    known_io_alpha: float
    lemma1_samples: int


def privacy_settings(*, quick: bool = False, seed: int = 0) -> PrivacySettings:
    """The full run (20 repeats, 10⁶ Lemma-1 draws per (α, d)) or the quick one (tests)."""
    seed = check_int(seed, "seed", minimum=0)
    if quick:
        return PrivacySettings(
            quick=True,
            seed=seed,
            victim=300,
            known=300,
            repeats=2,
            alphas=(0.01, 0.2, 0.6),
            w_alpha=0.1,
            ica_ws=(3, 7, 8),
            ica_m=1000,
            ica_repeats=1,
            known_io_ks=(0, 4, 8),
            known_io_alpha=0.2,
            lemma1_samples=100_000,
        )
    return PrivacySettings(
        quick=False,
        seed=seed,
        victim=1000,
        known=1000,
        repeats=20,
        alphas=PAPER_ALPHAS,
        w_alpha=0.1,
        ica_ws=(2, 3, 4, 5, 6, 7, 8, 10, 12),
        ica_m=2000,
        ica_repeats=10,
        known_io_ks=(0, 1, 2, 4, 6, 7, 8, 12, 16),
        known_io_alpha=0.2,
        lemma1_samples=1_000_000,
    )


TABLES: tuple[str, ...] = ("map_alpha", "map_w", "ica_w", "collusion", "known_io", "lemma1")
"""The keys of :func:`privacy_evaluation`'s result, in order."""


def privacy_evaluation(
    *, seed: int = 0, quick: bool = False, progress: Progress = None
) -> dict[str, pd.DataFrame]:
    """Every table of the evaluation: keys :data:`TABLES`.

    ``progress(step, done, total)`` is called before each table and at the end.
    """
    cfg = privacy_settings(quick=quick, seed=seed)
    total = len(TABLES) + 1

    def say(text: str, done: int) -> None:
        if progress is not None:
            progress(text, done, total)

    say("data", 0)
    data = attack_datasets(seed=cfg.seed, victim=cfg.victim, known=cfg.known)
    common = {"repeats": cfg.repeats, "seed": cfg.seed}
    out: dict[str, pd.DataFrame] = {}
    say("MAP against alpha", 1)
    out["map_alpha"] = map_vs_alpha(data, alphas=cfg.alphas, **common)
    say("MAP against w", 2)
    out["map_w"] = map_vs_w(data, alpha=cfg.w_alpha, **common)
    say("ICA against w", 3)
    out["ica_w"] = ica_vs_w(ws=cfg.ica_ws, m=cfg.ica_m, repeats=cfg.ica_repeats, seed=cfg.seed)
    say("collusion", 4)
    out["collusion"] = collusion_vs_alpha(data, alphas=cfg.alphas, **common)
    say("known input-output", 5)
    out["known_io"] = known_io_vs_k(data, ks=cfg.known_io_ks, alpha=cfg.known_io_alpha, **common)
    say("Lemma 1", 6)
    out["lemma1"] = lemma1_table(alphas=cfg.alphas, samples=cfg.lemma1_samples, seed=cfg.seed)
    say("done", total)
    return out


def _wide(table: pd.DataFrame, x: str, kinds: dict[str, str]) -> pd.DataFrame:
    """A compact view: relative RMSE (sample prior) per data set, data space and kind."""
    t = table[table["prior"] == "sample"] if "prior" in table else table
    wide = t.pivot_table(
        index=["dataset", "double_logistic", "kind"], columns=x, values="relative_rmse", sort=False
    ).reset_index()
    wide.columns = [c if isinstance(c, str) else f"{x}={c:g}" for c in wide.columns]
    return wide


def reproduce_privacy(
    out_dir: str | Path,
    *,
    seed: int = 0,
    quick: bool = False,
    progress: Progress = None,
    page: str | None = "privacy.html",
) -> dict[str, Any]:
    """Run :func:`privacy_evaluation`; write CSVs, PNGs and a page into ``out_dir``.

    Files: ``privacy_<table>.csv`` and ``privacy_<table>.png`` for each key of
    :data:`TABLES` and, unless ``page`` is None, an HTML page of that name (default
    ``privacy.html``, so that it never replaces another reproduction's ``index.html`` in the
    same folder). All written atomically. Returns ``{"tables": {key: DataFrame}, "files":
    [Path, ...], "sections": [Section, ...], "page": Path | None, "elapsed_s": float}``: a
    caller with its own :class:`~privad.experiments.report.Report` on the same folder can add
    the sections to it (their figure and CSV links are relative to ``out_dir``).
    """
    cfg = privacy_settings(quick=quick, seed=seed)
    r = Reproduction(out_dir, "RMP (Erfani et al.): privacy evaluation of section 5")
    tables = privacy_evaluation(seed=cfg.seed, quick=cfg.quick, progress=progress)
    elapsed = r.elapsed()
    for key in TABLES:
        r.keep(f"privacy_{key}", tables[key], DRAWERS[key])
    sections = _sections(tables, cfg)
    for section in sections:
        r.report.add(section)
    files = r.finish(
        [
            r.provenance(
                "quick (small samples; for tests)" if cfg.quick else "full",
                f"seed {cfg.seed}; {cfg.repeats} draws of T and Δ per setting; victim "
                f"{cfg.victim} records, attacker's sample {cfg.known}",
                elapsed=elapsed,
            ),
            "Paper: Erfani, Law, Karunasekera, Leckie, Palaniswami, 'Privacy-preserving "
            "collaborative anomaly detection for participatory sensing' (PAKDD 2014), section 5. "
            "The paper argues privacy analytically; these are measurements. Discussion: "
            "docs/rmp_privacy.md.",
        ],
        page=page,
    )
    return {
        "tables": tables,
        "files": files,
        "sections": sections,
        "page": None if page is None else r.directory / page,
        "elapsed_s": r.elapsed(),
    }


def _dl_effect(table: pd.DataFrame) -> pd.DataFrame:
    """Exact-T̃ attacker, sample prior: RMSE and share within tolerance without/with eq. 2,
    averaged over α, per data set."""
    t = table[(table["kind"] == "exact") & (table["prior"] == "sample")]
    return (
        t.groupby(["dataset", "double_logistic"], sort=False)[["rmse", "within_tolerance"]]
        .mean()
        .reset_index()
    )


def _dl_effect_text(table: pd.DataFrame) -> Section:
    e = _dl_effect(table)
    parts = []
    for name, g in e.groupby("dataset", sort=False):
        g = g.set_index("double_logistic")
        if False in g.index and True in g.index:
            parts.append(
                f"{name}: RMSE {g.loc[False, 'rmse']:.4f} without, {g.loc[True, 'rmse']:.4f} "
                f"with the double logistic ({g.loc[False, 'within_tolerance']:.1%} and "
                f"{g.loc[True, 'within_tolerance']:.1%} of values within the tolerance)"
            )
    return Section(
        "Does the double logistic stop eq. (5)?",
        text=[
            "Section 5.1 argues that the double logistic (eq. 2) makes the data non-Gaussian and "
            "so hampers MAP estimation. Measured against eq. 5 with the exact T̃ (the "
            "attacker works on Y = eq. 2 of its own sample, maps back with the inverse and "
            "clips to [0, 1]), averaged over α: " + "; ".join(parts) + ". Eq. 5 is the best "
            "linear estimator given the mean and covariance, whatever the distribution, and "
            "eq. 2 is a smooth monotone map close to the identity on [0, 1], so the attack "
            "loses little.",
        ],
        tables=[("Exact-T̃ attacker, sample prior, mean over α", e)],
    )


def _sections(tables: dict[str, pd.DataFrame], cfg: PrivacySettings) -> list[Section]:
    lemma = tables["lemma1"]
    half = lemma[np.isclose(lemma["d_over_alpha"], 2.0 - math.sqrt(2.0))]
    ica = tables["ica_w"]
    show_ica = ica[
        [
            "source",
            "w",
            "regime",
            "ica_mean_abs_corr",
            "recovered",
            "raw_mean_abs_corr",
            "filter_bound_matched",
            "filter_bound_mean",
            "converged_share",
        ]
    ]
    kio = tables["known_io"][
        ["dataset", "k", "rank", "matrix_rms_error", "rmse", "relative_rmse", "within_tolerance"]
    ]
    return [_dl_effect_text(tables["map_alpha"])] + [
        Section.of_kept(
            "privacy_map_alpha",
            "MAP estimation (eq. 5) against α",
            text=[
                "w = n − 1 (the paper's r = 1), n = 8. Attackers: exact = eq. 5 with the "
                "victim's T̃ (section 5.1's worst case); public = eq. 5 with the public T; "
                "public-aware = public T, treating T̃ − T as noise of variance α²/3 (our "
                "tractable reading of eq. 6). Prior from the attacker's own sample; the "
                "oracle prior is in the CSV. Values: RMSE in the [0, 1] data space divided by "
                "the RMSE of the trivial guess (attribute means); below 1 the attack learns "
                "something. Reconstructions clipped to [0, 1] (the range is public).",
            ],
            tables=[
                ("Relative RMSE (sample prior)", _wide(tables["map_alpha"], "alpha", ATTACKERS))
            ],
            figure="Relative RMSE against α; solid: double logistic applied, dashed: not",
            data="all columns, both priors",
        ),
        Section.of_kept(
            "privacy_map_w",
            "MAP estimation (eq. 5) against w",
            text=[f"α = {cfg.w_alpha:g}; w from 1 to n − 1 (r = n − w)."],
            tables=[("Relative RMSE (sample prior)", _wide(tables["map_w"], "w", ATTACKERS))],
            figure="Relative RMSE against w",
        ),
        Section.of_kept(
            "privacy_ica_w",
            "ICA (section 5.2): w ≥ n versus w < n",
            text=[
                "n = 8 independent non-Gaussian attributes (ICA's assumptions need "
                "independence), double logistic applied, T̃ = T + U(−α, α) with α = 0.1; "
                "FastICA with min(w, n) components, matched to the attributes by the "
                "Hungarian assignment on |corr|. recovered = attributes matched with "
                "|corr| ≥ 0.95. raw = the same matching on the rows of Z (no attack); "
                "filter bound = the best |corr| any linear filter of Z reaches (an oracle).",
            ],
            tables=[("ICA against w", show_ica)],
            figure="Mean matched |corr| against w",
        ),
        Section.of_kept(
            "privacy_collusion",
            "Collusion: common T (prior schemes) versus RMP",
            text=[
                "A server colluding with one participant c. Common T: the colluder's matrix "
                "is the victim's; RMP: the colluder reveals T_c = T + Δ_c, the server uses it "
                "(its per-element error is Lemma 1's D) or, knowing α, treats the error as "
                "noise; the public T is the better guess. w = n − 1, double logistic applied.",
            ],
            tables=[("Relative RMSE", _wide(tables["collusion"], "alpha", SCENARIOS))],
            figure="Relative RMSE of the victim's records",
        ),
        Section.of_kept(
            "privacy_known_io",
            "Known input-output attack",
            text=[
                f"α = {cfg.known_io_alpha:g}, w = n − 1. The server knows k of the victim's "
                "records and their outputs, estimates T̃ by least squares corrected from the "
                "public T, and reconstructs the other records with eq. 5. k ≥ n independent "
                "records give T̂ = T̃ exactly; the records stay underdetermined (w < n).",
            ],
            tables=[("Against k", kio)],
            figure="Matrix error and relative RMSE against k",
        ),
        Section.of_kept(
            "privacy_lemma1",
            "Lemma 1",
            text=[
                f"{cfg.lemma1_samples:,} draws of D = A − B per α (A, B ~ U(−α, α), through "
                "privad.noise); two-sided exact binomial test at 10⁻⁶; the same draws tested "
                "against the wrong formula (α − d)/α (power check). At d = (2 − √2)α the "
                "empirical share is "
                + ", ".join(f"{v:.4f}" for v in half["empirical"])
                + " (paper: 50 %). The attacker who guesses the public T itself errs less: "
                "Pr[|Δ| ≥ d] = 1 − d/α (median α/2).",
            ],
            tables=[
                (
                    "Lemma 1",
                    lemma[
                        [
                            "alpha",
                            "d",
                            "empirical",
                            "lemma1",
                            "p_value",
                            "consistent",
                            "p_value_wrong",
                            "wrong_rejected",
                            "centre_empirical",
                            "centre_probability",
                        ]
                    ],
                )
            ],
            figure="Pr[|D| ≥ d] against d/α",
        ),
    ]
