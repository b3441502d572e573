"""Figures 3, 5, 6–8 and 9 of the sensitive-privacy paper and the per-record privacy loss.

Each figure is a function returning a tidy table and a ``draw_*`` companion.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privad.errors import ParameterError
from privad.experiments.sensitive.data import (
    GROUP_ANOMALIES,
    GROUP_NORMAL,
    LN10,
    SPData,
    _k_for,
    _log_errors,
    _log_mean,
    _seed,
)
from privad.sensitive import ball_statistics, compile_mechanism, is_sensitive, propose_parameters
from privad.sensitive.accounting import RecordExposure, claim5_bound, per_record_privacy_loss
from privad.sensitive.compiler import InputMechanism
from privad.validation import check_epsilon, check_int, check_probability

# --------------------------------------------------------------------------------------------
# Figures 6-8: error distributions
# --------------------------------------------------------------------------------------------


def figure6_7(
    data: Sequence[SPData], epsilons: Sequence[float] = (0.01, 0.1, 1.0), k: int = 1
) -> pd.DataFrame:
    """Figures 6–8: the distribution of the exact per-record error, SP vs DP.

    For every dataset, ε, mechanism (``"SP"``: U_{λ_k}; ``"DP"``: U_{Δ_G}) and group
    (``"true (β,r)-anomalies"``, Figures 6–7; ``"normal records"``, B > β, Figure 8) one row
    with the box-plot statistics of log10 P(error) over the group's records:

    ``dataset``, ``group``, ``epsilon``, ``mechanism``, ``k``, ``n_records``,
    ``mean_error`` (exact mean of the probabilities), ``log10_mean_error``, ``log10_min``,
    ``log10_whislo``, ``log10_q1``, ``log10_median``, ``log10_q3``, ``log10_whishi``,
    ``log10_max`` (whiskers at 1.5 IQR, clipped to the data), ``share_below_1e-15``.
    """
    k = check_int(k, "k", minimum=1)
    rows = []
    for ds in data:
        groups = {GROUP_ANOMALIES: ds.true_br_anomaly, GROUP_NORMAL: ~ds.br_anomaly}
        for eps in epsilons:
            eps = check_epsilon(eps)
            for mech in ("SP", "DP"):
                le = _log_errors(ds, mech.lower(), eps, k)
                for group, mask in groups.items():
                    v = le[mask] / LN10
                    row: dict[str, Any] = {
                        "dataset": ds.title,
                        "group": group,
                        "epsilon": eps,
                        "mechanism": mech,
                        "k": k,
                        "n_records": int(v.size),
                    }
                    row.update(_box_stats(le[mask]))
                    rows.append(row)
    return pd.DataFrame(rows)


def _box_stats(log_err: np.ndarray) -> dict[str, float]:
    if log_err.size == 0:
        keys = (
            "mean_error",
            "log10_mean_error",
            "log10_min",
            "log10_whislo",
            "log10_q1",
            "log10_median",
            "log10_q3",
            "log10_whishi",
            "log10_max",
            "share_below_1e-15",
        )
        return dict.fromkeys(keys, math.nan)
    v = log_err / LN10
    q1, med, q3 = (float(x) for x in np.percentile(v, [25, 50, 75]))
    iqr = q3 - q1
    lo = float(v[v >= q1 - 1.5 * iqr].min())
    hi = float(v[v <= q3 + 1.5 * iqr].max())
    lm = _log_mean(log_err)
    return {
        "mean_error": math.exp(lm),
        "log10_mean_error": lm / LN10,
        "log10_min": float(v.min()),
        "log10_whislo": lo,
        "log10_q1": q1,
        "log10_median": med,
        "log10_q3": q3,
        "log10_whishi": hi,
        "log10_max": float(v.max()),
        "share_below_1e-15": float(np.mean(v < -15.0)),
    }


def draw_figure6_7(table: pd.DataFrame) -> Any:
    """Box plots of log10 P(error) from :func:`figure6_7`: one row of panels per dataset,
    true (β, r)-anomalies (Figures 6–7) left, normal records (Figure 8) right."""
    from privad.experiments.report import new_figure

    names = list(dict.fromkeys(table["dataset"]))
    groups = [GROUP_ANOMALIES, GROUP_NORMAL]
    fig = new_figure(11, 2.9 * len(names) + 0.6)
    axes = fig.subplots(len(names), 2, squeeze=False)
    colours = {"SP": "tab:blue", "DP": "tab:red"}
    for i, name in enumerate(names):
        for j, group in enumerate(groups):
            ax = axes[i][j]
            part = table[(table["dataset"] == name) & (table["group"] == group)]
            part = part.sort_values(["epsilon", "mechanism"], ascending=[True, False])
            stats, labels, cols = [], [], []
            for rec in part.itertuples(index=False):
                r = rec._asdict()
                if not r["n_records"]:
                    continue
                stats.append(
                    {
                        "med": r["log10_median"],
                        "q1": r["log10_q1"],
                        "q3": r["log10_q3"],
                        "whislo": r["log10_whislo"],
                        "whishi": r["log10_whishi"],
                        "fliers": [],
                        "mean": r["log10_mean_error"],
                    }
                )
                labels.append(f"{r['mechanism']}\nε={r['epsilon']:g}")
                cols.append(colours[r["mechanism"]])
            if stats:
                boxes = ax.bxp(stats, showfliers=False, showmeans=True, patch_artist=True)
                for patch, c in zip(boxes["boxes"], cols, strict=True):
                    patch.set_facecolor(c)
                    patch.set_alpha(0.35)
                ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
            n = int(part["n_records"].max()) if len(part) else 0
            ax.set_title(f"{name}: {group} (n = {n})", fontsize=9)
            ax.set_ylabel("log10 P(error)", fontsize=8)
            ax.axhline(math.log10(1 / (1 + math.e**0.1)), color="grey", lw=0.6, ls=":")
            ax.grid(axis="y", alpha=0.3)
    fig.suptitle(
        "Figures 6–8: exact error of SP (blue) and DP (red) per record "
        "(boxes 1.5 IQR, triangle = log10 of the mean error)",
        fontsize=10,
    )
    return fig


# --------------------------------------------------------------------------------------------
# Figure 9: varying k
# --------------------------------------------------------------------------------------------


def figure9(
    data: Sequence[SPData],
    *,
    epsilon: float = 1.0,
    fractions: Sequence[float] = (0.1, 0.2, 0.3),
) -> pd.DataFrame:
    """Figure 9: SP error on the true (β, r)-anomalies for k = ⌊0.1β⌋, ⌊0.2β⌋, ⌊0.3β⌋ (ε = 1).

    k is at least 1 (⌊0.1 · 18⌋ = 1 for Thyroid). Records are ranked per k by their SP error,
    highest first ("the higher the rank, the lower the error"). One row per record and k:
    ``dataset``, ``fraction``, ``k``, ``rank`` (1 = largest error), ``record`` (row index),
    ``ball``, ``x_i``, ``log10_error_sp``, ``log10_error_dp`` (DP does not depend on k),
    ``sensitive`` (whether the record is k-sensitive, where SP = DP).
    """
    epsilon = check_epsilon(epsilon)
    rows = []
    for ds in data:
        idx = np.flatnonzero(ds.true_br_anomaly)
        le_dp = _log_errors(ds, "dp", epsilon, 1)[idx] / LN10
        for frac in fractions:
            k = _k_for(ds.beta, frac)
            le_sp = _log_errors(ds, "sp", epsilon, k)[idx] / LN10
            order = np.argsort(-le_sp, kind="stable")
            sens = np.asarray(is_sensitive(ds.stats.ball[idx], ds.beta, k), dtype=bool)
            for rank, j in enumerate(order, start=1):
                rows.append(
                    {
                        "dataset": ds.title,
                        "fraction": frac,
                        "k": k,
                        "rank": rank,
                        "record": int(idx[j]),
                        "ball": int(ds.stats.ball[idx[j]]),
                        "x_i": int(ds.stats.x_i[idx[j]]),
                        "log10_error_sp": float(le_sp[j]),
                        "log10_error_dp": float(le_dp[j]),
                        "sensitive": bool(sens[j]),
                    }
                )
    return pd.DataFrame(rows)


def draw_figure9(table: pd.DataFrame) -> Any:
    """Figure 9: log10 error against AIQ rank, one panel per dataset, one line per k."""

    def draw(ax: Any, name: str, part: pd.DataFrame) -> None:
        for (frac, k), sub in part.groupby(["fraction", "k"], sort=True):
            ax.plot(sub["rank"], sub["log10_error_sp"], lw=1.2, label=f"SP, k={k} (⌊{frac:g}β⌋)")
        first = part[part["fraction"] == part["fraction"].min()].sort_values("rank")
        ax.plot(first["rank"], first["log10_error_dp"], color="black", ls="--", lw=1, label="DP")
        ax.set_title(f"{name} (ε = 1)", fontsize=9)
        ax.set_xlabel("AIQ rank (by SP error, highest first)", fontsize=8)
        ax.set_ylabel("log10 P(error)", fontsize=8)

    return _panel_per_dataset(
        table, draw, "Figure 9: SP error over the true (β,r)-anomalies for varying k"
    )


def _panel_per_dataset(
    table: pd.DataFrame, draw: Callable[[Any, str, pd.DataFrame], None], title: str
) -> Any:
    """A row of panels, one per dataset of ``table``, each drawn by ``draw(ax, name, part)``
    and given a grid and a legend."""
    from privad.experiments.report import new_figure

    names = list(dict.fromkeys(table["dataset"]))
    fig = new_figure(4.0 * len(names), 3.4)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, name in zip(axes, names, strict=True):
        draw(ax, name, table[table["dataset"] == name])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


# --------------------------------------------------------------------------------------------
# Per-record privacy loss of one batch (ours; the paper charges the worst case only)
# --------------------------------------------------------------------------------------------


def per_record_loss(
    data: Sequence[SPData], *, epsilon: float = 0.1, delta: float = 1e-6, points: int = 24
) -> pd.DataFrame:
    """How much each record loses when every record is labelled in one batch.

    Record j can move the answers of the records within r of it, its own ball count
    c_j = B_x(j, r) of them (:class:`~privad.sensitive.accounting.RecordExposure`); it loses at most
    c_j·ε (linear) or the optimal composition of c_j answers at δ. The batch is charged
    Claim 5's m, the worst case over every possible record. One row per dataset and
    threshold c on a geometric grid of ``points`` counts from 1 to max c_j: the share of
    records with c_j ≤ c, whose loss is then at most c·ε, or the optimal ε of c answers
    (monotone in c, so the grid gives upper bounds of the exact per-record curve).
    """
    epsilon = check_epsilon(epsilon)
    rows = []
    for d in data:
        m = claim5_bound(d.X, d.r, ball_counts_at_r=d.stats.ball).m
        e = RecordExposure(d.stats.ball, epsilon, m, delta)
        grid = np.unique(np.r_[np.geomspace(1, max(1, e.worst), points).round(), e.worst])
        for c in grid.astype(int):
            rows.append(
                {
                    "dataset": d.title,
                    "beta": d.beta,
                    "r": d.r,
                    "epsilon": epsilon,
                    "delta": delta,
                    "n": d.n,
                    "answers": c,
                    "share_of_records": float(np.mean(d.stats.ball <= c)),
                    "linear_loss": c * epsilon,
                    "optimal_loss": e.optimal_loss(c),
                    "max_answers": e.worst,
                    "median_answers": e.summary()["median"],
                    "m": m,
                    "charged_linear": m * epsilon,
                    "charged_optimal": e.optimal_loss(m),
                }
            )
    return pd.DataFrame(rows)


def draw_per_record_loss(table: pd.DataFrame) -> Any:
    """Share of records against their loss (linear and optimal), with the batch's charge."""

    def draw(ax: Any, name: str, part: pd.DataFrame) -> None:
        first = part.iloc[0]
        for col, colour, what in (
            ("linear_loss", "tab:red", "linear (c·ε)"),
            ("optimal_loss", "tab:blue", f"optimal, δ = {first['delta']:g}"),
        ):
            ax.step(
                part[col],
                part["share_of_records"],
                where="post",
                color=colour,
                label=f"record's loss, {what}",
            )
            charged = first["charged_linear" if col == "linear_loss" else "charged_optimal"]
            ax.axvline(charged, color=colour, ls="--", lw=1, label=f"charged (m = {first['m']})")
        ax.set_xscale("log")
        ax.set_title(
            f"{name} (β = {first['beta']}, r = {first['r']:g}, ε = {first['epsilon']:g})",
            fontsize=9,
        )
        ax.set_xlabel("privacy loss ε of a record", fontsize=8)
        ax.set_ylabel("share of records with at most that loss", fontsize=8)

    return _panel_per_dataset(
        table,
        draw,
        "Per-record privacy loss of labelling every record once (curator-only information)",
    )


# --------------------------------------------------------------------------------------------
# Figure 5: the compiler
# --------------------------------------------------------------------------------------------


def figure5(
    *, beta: int = 10, epsilon_m: float = 0.25, k: int = 1, max_ball: int | None = None
) -> pd.DataFrame:
    """Figure 5: Construction 2 applied to the paper's two ε_M-DP input mechanisms.

    (a) the constant-error mechanism, P(error) = 1/(1 + e^{ε_M}) ≈ 0.44 at ε_M = 0.25;
    (b) the optimal DP mechanism U_{Δ_G} at ε_M, P(error) = e^{−ε_M(Δ_G − 1)}/(1 + e^{ε_M})
    ≈ 0.56/e^{0.25Δ_G}. Both are compiled with δ = λ_1 − Δ_G (k = 1, as in the paper) by
    :func:`privad.sensitive.compile_mechanism` (which checks DP and validity first) into
    (2ε_M, k)-SP mechanisms with error P(M(x) ≠ g)·e^{−(ε/4)δ}. β is not given in the paper
    (we use 10). One row per input and state 0 ≤ x_i ≤ B ≤ ``max_ball`` (default 3β):

    ``input`` (``"constant (5a)"``, ``"optimal DP (5b)"``), ``beta``, ``epsilon_m``,
    ``epsilon_sp`` (= 2ε_M), ``k``, ``x_i``, ``ball``, ``anomaly`` (g), ``sensitive``,
    ``delta``, ``input_error``, ``compiled_error``, ``log10_input_error``,
    ``log10_compiled_error``.
    """
    beta = check_int(beta, "beta", minimum=1)
    epsilon_m = check_epsilon(epsilon_m, "epsilon_m")
    k = check_int(k, "k", minimum=1)
    top = 3 * beta if max_ball is None else check_int(max_ball, "max_ball", minimum=1)
    bb, aa = np.meshgrid(np.arange(top + 1), np.arange(top + 1), indexing="ij")
    keep = aa <= bb
    a, b = aa[keep].astype(np.int64), bb[keep].astype(np.int64)
    inputs = {
        "constant (5a)": InputMechanism.constant(epsilon_m),
        "optimal DP (5b)": InputMechanism.optimal_dp(beta, epsilon_m),
    }
    from privad.sensitive.anomaly import anomaly_label

    g = np.asarray(anomaly_label(a, b, beta))
    sens = np.asarray(is_sensitive(b, beta, k), dtype=bool)
    frames = []
    for name, mech in inputs.items():
        compiled = compile_mechanism(mech, beta=beta, k=k)
        le_in = mech.evaluate(a, b)
        le_out = np.asarray(compiled.log_error_probability(a, b), dtype=np.float64)
        frames.append(
            pd.DataFrame(
                {
                    "input": name,
                    "beta": beta,
                    "epsilon_m": epsilon_m,
                    "epsilon_sp": compiled.epsilon,
                    "k": k,
                    "x_i": a,
                    "ball": b,
                    "anomaly": g,
                    "sensitive": sens,
                    "delta": np.asarray(compiled.delta(a, b)),
                    "input_error": np.exp(le_in),
                    "compiled_error": np.exp(le_out),
                    "log10_input_error": le_in / LN10,
                    "log10_compiled_error": le_out / LN10,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def draw_figure5(table: pd.DataFrame) -> Any:
    """Figure 5: heat maps of log10 P(error) over states (x_i, B), input vs compiled, and
    the errors along x_i = 1."""
    from privad.experiments.report import new_figure

    inputs = list(dict.fromkeys(table["input"]))
    fig = new_figure(13, 3.6 * len(inputs))
    axes = fig.subplots(len(inputs), 3, squeeze=False)
    vmin = float(table["log10_compiled_error"].min())
    for i, name in enumerate(inputs):
        part = table[table["input"] == name]
        top = int(part["ball"].max())
        beta = int(part["beta"].iloc[0])
        eps_m, eps = float(part["epsilon_m"].iloc[0]), float(part["epsilon_sp"].iloc[0])
        im = None
        for j, (col, what) in enumerate(
            (
                ("log10_input_error", f"input, {eps_m:g}-DP"),
                ("log10_compiled_error", f"compiled, {eps:g}-SP"),
            )
        ):
            grid = np.full((top + 1, top + 1), np.nan)
            grid[part["x_i"].to_numpy(), part["ball"].to_numpy()] = part[col].to_numpy()
            ax = axes[i][j]
            im = ax.imshow(grid, origin="lower", aspect="auto", vmin=vmin, vmax=0.0, cmap="viridis")
            ax.axvline(beta + 0.5, color="white", lw=0.8, ls="--")
            ax.set_xlabel("B_x(i, r)", fontsize=8)
            ax.set_ylabel("x_i", fontsize=8)
            ax.set_title(f"{name}: {what}", fontsize=9)
        if im is not None:
            fig.colorbar(im, ax=axes[i][:2].tolist(), label="log10 P(error)", shrink=0.9)
        ax = axes[i][2]
        line = part[part["x_i"] == 1].sort_values("ball")
        ax.plot(line["ball"], line["log10_input_error"], label="input (DP)", color="tab:red")
        ax.plot(line["ball"], line["log10_compiled_error"], label="compiled (SP)", color="tab:blue")
        ax.axvline(beta, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("B_x(i, r) (x_i = 1)", fontsize=8)
        ax.set_ylabel("log10 P(error)", fontsize=8)
        ax.set_title(f"{name}: along x_i = 1 (β = {beta})", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(
        "Figure 5: compiling DP mechanisms into SP mechanisms (δ = λ_1 − Δ_G; dashed line: B = β)",
        fontsize=10,
    )
    return fig


# --------------------------------------------------------------------------------------------
# Figure 3: privacy map
# --------------------------------------------------------------------------------------------


def privacy_map_data(n: int = 1000, *, background: float = 0.05, seed: int = 0) -> np.ndarray:
    """2-D example data for Figure 3 (reconstruction; Appendix A.1 is missing).

    ``(1 − background)·n`` points from N(0, I_2) and the rest uniform on [−5, 5]², so that
    there is a dense core, a thinning edge and isolated points.
    """
    from privad.noise import as_randomness

    n = check_int(n, "n", minimum=10)
    background = check_probability(background, "background")
    gen = as_randomness(_seed(seed, "figure3"))
    n_bg = round(background * n)
    core = np.asarray(gen.normal(0.0, 1.0, (n - n_bg, 2)), dtype=np.float64)
    bg = np.asarray(gen.uniform(-5.0, 5.0, (n_bg, 2)), dtype=np.float64)
    return np.vstack([core, bg])


def figure3(
    *,
    ks: Sequence[int] = (1, 7, 14),
    epsilon: float = 0.25,
    n: int = 1000,
    beta: int = 20,
    anomaly_share: float = 0.05,
    seed: int = 0,
    X: np.ndarray | None = None,
    r: float | None = None,
) -> pd.DataFrame:
    """Figure 3: the privacy map of 0.25-SP anomaly identification for k = 1, 7, 14.

    Data: :func:`privacy_map_data` (or ``X``). β = 20 and r from
    :func:`privad.sensitive.propose_parameters` with ``anomaly_share`` (or ``r``): our
    choice, the paper's values are in the missing Appendix A.1. Every record is queried; a
    record's privacy loss is :func:`privad.sensitive.accounting.per_record_privacy_loss`
    (the largest log-ratio any single answer shows about its presence) and the colour is the
    "level of privacy" e^{−loss}. One row per record and k: ``k``, ``record``, ``x1``, ``x2``,
    ``beta``, ``r``, ``epsilon``, ``ball``, ``anomaly``, ``sensitive``, ``loss``,
    ``privacy_level``.
    """
    epsilon = check_epsilon(epsilon)
    data = privacy_map_data(n, seed=seed) if X is None else np.asarray(X, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != 2:
        raise ParameterError(f"Figure 3 needs 2-D data, got shape {data.shape}")
    if r is None:
        beta_used, r = propose_parameters(
            data, beta_fraction=beta / data.shape[0], anomaly_share=anomaly_share
        )
        beta = beta_used
    stats = ball_statistics(data, r)
    frames = []
    for k in ks:
        k = check_int(k, "k", minimum=1)
        loss = per_record_privacy_loss(data, r, beta=beta, epsilon=epsilon, mechanism="sp", k=k)
        frames.append(
            pd.DataFrame(
                {
                    "k": k,
                    "record": np.arange(data.shape[0]),
                    "x1": data[:, 0],
                    "x2": data[:, 1],
                    "beta": beta,
                    "r": r,
                    "epsilon": epsilon,
                    "ball": stats.ball,
                    "anomaly": stats.ball <= beta,
                    "sensitive": np.asarray(is_sensitive(stats.ball, beta, k), dtype=bool),
                    "loss": loss,
                    "privacy_level": np.exp(-loss),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def draw_figure3(table: pd.DataFrame) -> Any:
    """Figure 3: scatter plots coloured by e^{−loss}, one panel per k."""
    from privad.experiments.report import new_figure

    ks = list(dict.fromkeys(table["k"]))
    fig = new_figure(4.2 * len(ks) + 0.8, 4.0)
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    sc = None
    for ax, k in zip(axes, ks, strict=True):
        part = table[table["k"] == k].sort_values("privacy_level", ascending=False)
        sc = ax.scatter(
            part["x1"], part["x2"], c=part["privacy_level"], s=6, cmap="viridis", vmin=0.0, vmax=1.0
        )
        n_sens = int(part["sensitive"].sum())
        ax.set_title(f"k = {k}: {n_sens} of {len(part)} records {k}-sensitive", fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlabel("z1", fontsize=8)
        ax.set_ylabel("z2", fontsize=8)
    if sc is not None:
        fig.colorbar(sc, ax=list(axes), label="privacy level e^(−loss)")
    first = table.iloc[0]
    eps, beta, r = float(first["epsilon"]), int(first["beta"]), float(first["r"])
    fig.suptitle(
        f"Figure 3: privacy map, {eps:g}-SP AIQ on every record (β = {beta}, r = {r:.3g})",
        fontsize=10,
    )
    return fig
