"""Lemma 1 checked by sampling, and the figures of the privacy evaluation."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privad.experiments.rmp_privacy.data import ATTACKERS, PAPER_ALPHAS, SCENARIOS, _seed
from privad.noise import as_randomness
from privad.rmp.attacks import (
    binomial_p_value,
    centre_guess_probability,
    lemma1_probability,
    sample_element_errors,
)
from privad.validation import check_int, check_positive

# --------------------------------------------------------------------------------------------
# Lemma 1
# --------------------------------------------------------------------------------------------

LEMMA1_FRACTIONS: tuple[float, ...] = (0.0, 0.25, 0.5, 2.0 - math.sqrt(2.0), 1.0, 1.5, 1.9, 2.0)
"""d/α checked by :func:`lemma1_table` ((2 − √2) is the paper's 50 % point)."""


def lemma1_table(
    *,
    alphas: Sequence[float] = PAPER_ALPHAS,
    d_over_alpha: Sequence[float] = LEMMA1_FRACTIONS,
    samples: int = 1_000_000,
    false_alarm: float = 1e-6,
    seed: int = 0,
) -> pd.DataFrame:
    """Lemma 1 against ``samples`` draws of D = A − B per (α, d), A, B ~ U(−α, α).

    One row per α and d = (d/α)·α: ``alpha``, ``d``, ``d_over_alpha``, ``samples``,
    ``count`` (|D| >= d), ``empirical``, ``lemma1`` ((2α − d)²/4α²), ``p_value`` (two-sided
    exact binomial test), ``consistent`` (p >= ``false_alarm``, default 10⁻⁶); the power
    check on the *same* draws: ``p_value_wrong`` against the wrong formula (α − d)/α (the
    one for a single uniform) and ``wrong_rejected``; and the attacker who guesses the public
    T itself (our addition): ``centre_empirical`` from separate draws of |Δ|,
    ``centre_probability`` = max(0, 1 − d/α), ``centre_p_value``, ``centre_consistent``.
    """
    samples = check_int(samples, "samples", minimum=1)
    rows = []
    for alpha in alphas:
        a = check_positive(alpha, "alpha")
        rg_lemma, rg_centre = as_randomness(_seed(seed, "lemma1", a)).spawn(2)
        D = np.abs(sample_element_errors(a, samples, guess="random", rng=rg_lemma))
        C = np.abs(sample_element_errors(a, samples, guess="centre", rng=rg_centre))
        for frac in d_over_alpha:
            d = min(float(frac) * a, 2.0 * a)
            p_lemma = lemma1_probability(a, d)
            p_centre = centre_guess_probability(a, d)
            count = int(np.count_nonzero(D >= d))
            c_count = int(np.count_nonzero(C >= d))
            pv = binomial_p_value(count, samples, p_lemma)
            pw = binomial_p_value(count, samples, p_centre)
            pc = binomial_p_value(c_count, samples, p_centre)
            rows.append(
                {
                    "alpha": a,
                    "d": d,
                    "d_over_alpha": float(frac),
                    "samples": samples,
                    "count": count,
                    "empirical": count / samples,
                    "lemma1": p_lemma,
                    "p_value": pv,
                    "consistent": pv >= false_alarm,
                    "p_value_wrong": pw,
                    "wrong_rejected": pw < false_alarm,
                    "centre_empirical": c_count / samples,
                    "centre_probability": p_centre,
                    "centre_p_value": pc,
                    "centre_consistent": pc >= false_alarm,
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------

_DL_STYLE = {True: "-", False: "--"}
_COLOURS = {
    "exact": "C0",
    "public": "C3",
    "public-aware": "C2",
    "common": "C0",
    "colluder": "C3",
    "colluder-aware": "C1",
}


def _panels(table: pd.DataFrame, width: float = 11.0, height: float = 4.0) -> tuple[Any, list]:
    from privad.experiments.report import new_figure

    names = list(dict.fromkeys(table["dataset"])) if len(table) else ["(empty)"]
    fig = new_figure(width, height)
    axes = [fig.add_subplot(1, len(names), k + 1) for k in range(len(names))]
    return fig, list(zip(names, axes, strict=True))


def _draw_error(
    table: pd.DataFrame, x: str, xlabel: str, title: str, labels: dict[str, str]
) -> Any:
    fig, panels = _panels(table)
    t = table[table["prior"] == "sample"] if "prior" in table else table
    for name, ax in panels:
        part = t[t["dataset"] == name]
        for (kind, dl), g in part.groupby(["kind", "double_logistic"], sort=False):
            g = g.sort_values(x)
            space = " + double logistic" if dl else ", no double logistic"
            label = f"{labels.get(kind, kind)}{space}"
            ax.plot(
                g[x],
                g["relative_rmse"],
                _DL_STYLE[bool(dl)],
                marker="o",
                ms=3,
                color=_COLOURS.get(kind, "grey"),
                label=label,
            )
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.text(
            ax.get_xlim()[0],
            1.0,
            " trivial guess (attribute means)",
            fontsize=7,
            color="grey",
            va="bottom",
        )
        ax.set_xlabel(xlabel)
        ax.set_ylabel("RMSE / RMSE of the trivial guess")
        ax.set_ylim(bottom=0.0)
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
    if panels:
        panels[0][1].legend(fontsize=6.5)
    fig.suptitle(title, fontsize=10)
    return fig


def draw_map_vs_alpha(table: pd.DataFrame) -> Any:
    """Relative RMSE of the MAP attackers against α (sample prior); solid: with the double
    logistic, dashed: without."""
    w = int(table["w"].iloc[0]) if len(table) else 0
    return _draw_error(
        table,
        "alpha",
        "α (noise on the victim's matrix, eq. 1)",
        f"MAP reconstruction (eq. 5) against α, r = n − w = "
        f"{int(table['r'].iloc[0]) if len(table) else 0} (w = {w})",
        ATTACKERS,
    )


def draw_map_vs_w(table: pd.DataFrame) -> Any:
    """Relative RMSE of the MAP attackers against w (sample prior)."""
    a = float(table["alpha"].iloc[0]) if len(table) else 0.0
    return _draw_error(
        table,
        "w",
        "w (rows of T; r = n − w)",
        f"MAP reconstruction (eq. 5) against w, α = {a:g}",
        ATTACKERS,
    )


def draw_collusion(table: pd.DataFrame) -> Any:
    """Relative RMSE of the victim's records under collusion, per scenario, against α."""
    return _draw_error(
        table, "alpha", "α", "A server colluding with one participant: common T vs RMP", SCENARIOS
    )


def draw_known_io(table: pd.DataFrame) -> Any:
    """Matrix error and record RMSE of the known input-output attack against k."""
    from privad.experiments.report import new_figure

    fig = new_figure(10.0, 3.8)
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for name, g in table.groupby("dataset", sort=False):
        g = g.sort_values("k")
        ax1.plot(g["k"], g["matrix_rms_error"], marker="o", ms=3, label=name)
        ax2.plot(g["k"], g["relative_rmse"], marker="o", ms=3, label=name)
    if len(table):
        n = int(table["n"].iloc[0])
        for ax in (ax1, ax2):
            ax.axvline(n, color="grey", ls=":", lw=0.8)
            ax.text(n, ax.get_ylim()[1] * 0.9, " k = n", fontsize=7, color="grey")
    ax1.set_xlabel("k known input-output records")
    ax1.set_ylabel("RMS error of T̂ − T̃")
    ax2.set_xlabel("k known input-output records")
    ax2.set_ylabel("RMSE / trivial guess (other records)")
    ax2.set_ylim(bottom=0.0)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    a = float(table["alpha"].iloc[0]) if len(table) else 0.0
    fig.suptitle(f"Known input-output attack (α = {a:g}): least squares from k pairs", fontsize=10)
    return fig


_ICA_LINES: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("ica_mean_abs_corr", "FastICA (matched)", {"marker": "o"}),
    ("raw_mean_abs_corr", "rows of Z (no attack)", {"marker": "s", "ls": "--"}),
    (
        "filter_bound_matched",
        "best linear filter, same attributes (oracle)",
        {"marker": "^", "ls": ":"},
    ),
    (
        "filter_bound_mean",
        "best linear filter, all n attributes (oracle)",
        {"marker": "v", "ls": ":", "color": "grey"},
    ),
)
"""The lines of :func:`draw_ica_vs_w`: column, label and style of each."""


def draw_ica_vs_w(table: pd.DataFrame) -> Any:
    """Mean matched |corr| of FastICA against w, with the no-attack and oracle-filter lines."""
    from privad.experiments.report import new_figure

    kinds = list(dict.fromkeys(table["source"])) if len(table) else ["(empty)"]
    fig = new_figure(10.0, 3.8)
    for k, kind in enumerate(kinds):
        ax = fig.add_subplot(1, len(kinds), k + 1)
        g = table[table["source"] == kind].sort_values("w")
        for column, label, style in _ICA_LINES:
            ax.plot(g["w"], g[column], ms=3, label=label, **style)
        if len(g):
            n = int(g["n"].iloc[0])
            ax.axvline(n - 0.5, color="grey", lw=0.8)
            ax.axvline((n + 1) / 2, color="grey", lw=0.8, ls=":")
            ax.text(n - 0.45, 0.05, "w ≥ n", fontsize=7, color="grey")
            ax.text((n + 1) / 2, 0.12, " (n+1)/2", fontsize=7, color="grey")
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel("w")
        ax.set_ylabel("mean |corr| with the true attributes")
        ax.set_title(f"{kind} attributes", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("ICA attack (section 5.2): w ≥ n vs w < n", fontsize=10)
    return fig


def draw_lemma1(table: pd.DataFrame) -> Any:
    """Pr[|D| >= d] against d/α: Lemma 1's curve, the centre guess's line, empirical points."""
    from privad.experiments.report import new_figure

    fig = new_figure(6.5, 4.0)
    ax = fig.add_subplot(1, 1, 1)
    u = np.linspace(0.0, 2.0, 201)
    ax.plot(u, (2.0 - u) ** 2 / 4.0, color="C0", label="Lemma 1: (2α − d)²/4α² (guess T + U)")
    ax.plot(
        u,
        np.maximum(0.0, 1.0 - u),
        color="C2",
        ls="--",
        label="guess T: max(0, 1 − d/α) (our addition)",
    )
    if len(table):
        ax.scatter(
            table["d_over_alpha"],
            table["empirical"],
            color="C0",
            s=14,
            zorder=3,
            label="empirical, all α",
        )
        ax.scatter(
            table["d_over_alpha"], table["centre_empirical"], color="C2", s=14, marker="x", zorder=3
        )
    q = 2.0 - math.sqrt(2.0)
    ax.axvline(q, color="grey", lw=0.8, ls=":")
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.text(q, 0.9, " (2 − √2)", fontsize=7, color="grey")
    ax.set_xlabel("d / α")
    ax.set_ylabel("Pr[attacker's error on an element ≥ d]")
    ax.set_title("Lemma 1, checked empirically", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return fig


DRAWERS: dict[str, Callable[[pd.DataFrame], Any]] = {
    "map_alpha": draw_map_vs_alpha,
    "map_w": draw_map_vs_w,
    "ica_w": draw_ica_vs_w,
    "collusion": draw_collusion,
    "known_io": draw_known_io,
    "lemma1": draw_lemma1,
}
"""The ``draw_*`` function of each table of the evaluation, by its key
(:data:`~privad.experiments.rmp_privacy.reproduction.TABLES`)."""
