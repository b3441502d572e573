"""Figures 1–4 of the search paper, each a tidy table and a ``draw_*`` companion."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privad.experiments.search.data import KIND_TITLES, KINDS, PAPER_RATIOS, TOP_K
from privad.experiments.search.trials import (
    Progress,
    _AlphaCheckpoints,
    _BudgetCheckpoints,
    _run_tasks,
    _streams,
    _summary,
    _trials,
)
from privad.search import PosteriorThreshold, SearchProblem, binarized_error_probability, search
from privad.search.theory import randomized_response_p


def _log_axis(ax: Any, values: Any, which: str = "x") -> None:
    """A log axis with plain labels at ``values`` (no minor-tick clutter)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    ticks = sorted({float(v) for v in values if np.isfinite(v) and v > 0})
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(lambda v, _pos: f"{v:g}")


# --------------------------------------------------------------------------------------------
# Figure 1: error vs threshold ratio (ε = 1)
# --------------------------------------------------------------------------------------------


def _figure1_task(
    p: SearchProblem,
    src: str,
    epsilon: float,
    alpha: float,
    budget: float,
    max_queries: int,
    seed: int,
    runs: int,
) -> list[dict[str, Any]]:
    r = _trials(
        p,
        kind="laplace",
        epsilon=epsilon,
        runs=runs,
        seed=seed,
        rng_parts=("figure1", p.name),
        halting=PosteriorThreshold(alpha),
        budget=budget,
        max_queries=max_queries,
    )
    capped = sum(1 for h in r.halted if "posterior" not in h)
    return [
        {
            "dataset": p.name,
            "source": src,
            "n": p.n_items,
            "threshold_ratio": p.threshold_ratio,
            "epsilon": epsilon,
            "alpha": alpha,
            "budget_cap": budget,
            **_summary(r, epsilon),
            "share_capped": capped / runs,
            "p_binarized": binarized_error_probability(epsilon, p.threshold_ratio),
        }
    ]


def figure1(
    problems: Sequence[SearchProblem],
    *,
    runs: int = 100,
    epsilon: float = 1.0,
    alpha: float = 0.5,
    budget: float = 1000.0,
    max_queries: int = 20_000,
    seed: int = 0,
    source: str | Sequence[str] = "",
    workers: int = 1,
    tick: Progress = None,
) -> pd.DataFrame:
    """Error rate of the noisy-max oracle per problem against its threshold ratio (Fig. 1).

    One row per problem: ``dataset``, ``source`` (e.g. ``nab``, ``normal-mixture``), ``n``,
    ``threshold_ratio``, ``epsilon``, ``runs``, ``successes``, ``error_rate``,
    ``mean_queries``, ``mean_privacy``, ``share_capped`` (runs stopped by the budget cap b),
    ``p_binarized`` (eq. 24 at this ratio and ε, for reference). ``workers`` > 1 runs the
    problems in that many processes (same numbers: every setting has its own seed).
    """
    sources = [source] * len(problems) if isinstance(source, str) else list(source)
    tasks = [
        ((p, src, epsilon, alpha, budget, max_queries, seed, runs), p.name)
        for p, src in zip(problems, sources, strict=True)
    ]
    return pd.DataFrame(_run_tasks(_figure1_task, tasks, workers, tick))


_REAL_MARKERS = {"nab": ("D", "black", "NAB series"), "yahoo": ("s", "tab:red", "Yahoo A1 series")}


def draw_figure1(table: pd.DataFrame) -> Any:
    """Error rate against the threshold ratio (log x): lines for the synthetic regimes,
    markers for the real (NAB, Yahoo) series."""
    from privad.experiments.report import new_figure

    fig = new_figure(7.5, 4.2)
    ax = fig.add_subplot(1, 1, 1)
    for src, part in table.groupby("source", sort=False):
        part = part.sort_values("threshold_ratio")
        if src in _REAL_MARKERS:
            marker, color, label = _REAL_MARKERS[str(src)]
            ax.scatter(
                part["threshold_ratio"],
                part["error_rate"],
                marker=marker,
                s=36,
                color=color,
                zorder=3,
                label=label,
            )
        else:
            ax.plot(part["threshold_ratio"], part["error_rate"], marker="o", ms=4, label=src)
    for ratio in PAPER_RATIOS.values():
        ax.axvline(ratio, color="grey", ls=":", lw=0.8)
    ax.text(
        min(PAPER_RATIOS.values()),
        0.55,
        "paper's datasets 6, 8 ",
        ha="right",
        fontsize=7,
        color="grey",
    )
    ratios = table["threshold_ratio"].to_numpy(dtype=np.float64)
    ticks = [10.0**k for k in range(-6, 2)] + [0.2, 0.5, 2.0, 5.0]
    lo, hi = (np.nanmin(ratios), np.nanmax(ratios)) if ratios.size else (0.01, 10.0)
    _log_axis(ax, [t for t in ticks if lo / 1.5 <= t <= hi * 1.5] or [lo, hi])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("threshold ratio (t_h − t_ℓ)/t_ℓ")
    ax.set_ylabel("error rate (i* ∉ S, |S| = 4)")
    eps = table["epsilon"].iloc[0] if len(table) else 1.0
    ax.set_title(f"Figure 1: error vs threshold ratio, noisy-max oracle, ε = {eps:g}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


# --------------------------------------------------------------------------------------------
# Figure 2: error and total privacy risk vs ε, three oracles
# --------------------------------------------------------------------------------------------


def _figure2_task(
    p: SearchProblem, kind: str, eps: float, runs: int, alpha: float, max_queries: int, seed: int
) -> list[dict[str, Any]]:
    r = _trials(
        p,
        kind=kind,
        epsilon=eps,
        runs=runs,
        seed=seed,
        rng_parts=("figure2", p.name, kind, eps),
        halting=PosteriorThreshold(alpha),
        budget=None,
        max_queries=max_queries,
    )
    if kind == "binarized":
        p_or = binarized_error_probability(eps, p.threshold_ratio)
    elif kind == "randomized-response":
        p_or = randomized_response_p(eps)
    else:
        p_or = np.nan
    capped = sum(1 for h in r.halted if "posterior" not in h)
    return [
        {
            "dataset": p.name,
            "threshold_ratio": p.threshold_ratio,
            "kind": kind,
            "epsilon": eps,
            **_summary(r, eps),
            "share_capped": capped / runs,
            "p_oracle": p_or,
        }
    ]


def figure2(
    problems: Sequence[SearchProblem],
    *,
    epsilons: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
    kinds: Sequence[str] = KINDS,
    runs: int = 100,
    alpha: float = 0.5,
    max_queries: int = 20_000,
    seed: int = 0,
    workers: int = 1,
    tick: Progress = None,
) -> pd.DataFrame:
    """Error rate and mean total privacy risk Tε against ε for each oracle (Fig. 2).

    One row per (dataset, kind, ε): the summary columns of :func:`figure1` plus
    ``p_oracle`` (the binary oracles' error probability: eq. 24 for binarized, 1/(1 + e^ε)
    for randomized response; NaN for the noisy maxima) and ``share_capped``.
    """
    tasks = [
        ((p, kind, eps, runs, alpha, max_queries, seed), f"{p.name} {kind} ε={eps:g}")
        for p in problems
        for kind in kinds
        for eps in epsilons
    ]
    return pd.DataFrame(_run_tasks(_figure2_task, tasks, workers, tick))


def draw_figure2(table: pd.DataFrame) -> Any:
    """Per dataset: error rate and mean total privacy risk against ε, one line per oracle."""
    return _error_and_risk(
        table,
        x="epsilon",
        lines=table.groupby("kind", sort=False),
        label=lambda kind: KIND_TITLES.get(str(kind), str(kind)),
        xlabel="privacy parameter ε (per query)",
        log_axes=True,
        title="Figure 2: error and total privacy risk vs ε for the three oracles "
        "(τ = 1(max f > 0.5))",
    )


def _error_and_risk(
    table: pd.DataFrame,
    *,
    x: str,
    lines: Any,
    label: Callable[[Any], str],
    xlabel: str,
    log_axes: bool,
    title: str,
) -> Any:
    """One row per dataset: error rate (left) and mean Tε (right) against ``x``, one line
    per group of ``lines`` (a groupby of ``table``)."""
    from privad.experiments.report import new_figure

    datasets = list(dict.fromkeys(table["dataset"]))
    fig = new_figure(9.5, 3.2 * max(1, len(datasets)))
    axes = fig.subplots(max(1, len(datasets)), 2, squeeze=False)
    row_of = {name: row for row, name in enumerate(datasets)}
    for key, group in lines:
        for name, k in group.groupby("dataset", sort=False):
            k = k.sort_values(x)
            for ax, y in zip(axes[row_of[name]], ("error_rate", "mean_privacy"), strict=True):
                ax.plot(k[x], k[y], marker="o", ms=4, label=label(key))
    for row, name in enumerate(datasets):
        left, right = axes[row]
        left.set_ylabel("error rate")
        left.set_ylim(-0.02, 1.02)
        right.set_ylabel("mean total privacy risk Tε")
        for ax in axes[row]:
            if log_axes:
                _log_axis(ax, table.loc[table["dataset"] == name, x])
            ax.set_xlabel(xlabel)
            ax.set_title(name, fontsize=9)
            ax.grid(alpha=0.3)
        if log_axes:
            right.set_yscale("log")
            right.yaxis.set_major_formatter(lambda v, _pos: f"{v:g}")
            right.yaxis.set_minor_formatter(lambda v, _pos: f"{v:g}")
        left.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


# --------------------------------------------------------------------------------------------
# Figure 3: budget checkpoints (no τ)
# --------------------------------------------------------------------------------------------


def _figure3_task(
    p: SearchProblem, eps: float, budgets: Sequence[float], kind: str, runs: int, seed: int
) -> list[dict[str, Any]]:
    oracle_rng, search_rng = _streams(seed, "figure3", p.name, kind, eps)
    oracle = p.oracle(kind, eps, rng=oracle_rng)
    hits = np.zeros(len(budgets), dtype=np.int64)
    queries = np.zeros(len(budgets), dtype=np.int64)
    for _ in range(runs):
        rule = _BudgetCheckpoints(budgets, p.anomaly_index, TOP_K)
        search(oracle, halting=rule, top_k=TOP_K, max_queries=None, rng=search_rng)
        hits += [h for h, _ in rule.hits]
        queries = np.asarray([t for _, t in rule.hits])
    return [
        {
            "dataset": p.name,
            "threshold_ratio": p.threshold_ratio,
            "kind": kind,
            "epsilon": eps,
            "budget": b,
            "queries": int(t),
            "privacy": float(t) * eps,
            "runs": runs,
            "successes": int(h),
            "error_rate": 1.0 - int(h) / runs,
        }
        for b, h, t in zip(sorted(budgets), hits, queries, strict=True)
    ]


def figure3(
    problems: Sequence[SearchProblem],
    *,
    epsilons: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
    budgets: Sequence[float] = (2.0, 5.0, 10.0, 20.0, 50.0, 100.0),
    kind: str = "laplace",
    runs: int = 100,
    seed: int = 0,
    workers: int = 1,
    tick: Progress = None,
) -> pd.DataFrame:
    """Error rate at budget checkpoints b with τ removed (Fig. 3).

    Each run goes on until its privacy risk passes the largest b; at each checkpoint S is
    read from the belief a run with budget b would return. One row per (dataset, ε, b):
    ``queries`` = ⌊b/ε⌋ (the same for every run), ``error_rate``, ``privacy`` = queries·ε.
    """
    tasks = [
        ((p, eps, tuple(budgets), kind, runs, seed), f"{p.name} ε={eps:g}")
        for p in problems
        for eps in epsilons
    ]
    return pd.DataFrame(_run_tasks(_figure3_task, tasks, workers, tick))


def draw_figure3(table: pd.DataFrame) -> Any:
    """Per dataset: error rate against ε, one line per budget checkpoint b."""
    from privad.experiments.report import new_figure

    datasets = list(dict.fromkeys(table["dataset"]))
    fig = new_figure(9.5, 3.6)
    axes = fig.subplots(1, max(1, len(datasets)), squeeze=False)[0]
    for ax, name in zip(axes, datasets, strict=False):
        part = table[table["dataset"] == name]
        for b, k in part.groupby("budget", sort=True):
            k = k.sort_values("epsilon")
            ax.plot(k["epsilon"], k["error_rate"], marker="o", ms=4, label=f"b = {b:g}")
        _log_axis(ax, part["epsilon"])
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("privacy parameter ε (per query)")
        ax.set_ylabel("error rate")
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(
        "Figure 3: error at budget checkpoints b (τ removed; T = ⌊b/ε⌋ queries)", fontsize=10
    )
    return fig


# --------------------------------------------------------------------------------------------
# Figure 4: halting α checkpoints (no budget)
# --------------------------------------------------------------------------------------------


def _figure4_task(
    p: SearchProblem,
    eps: float,
    levels: Sequence[float],
    kind: str,
    runs: int,
    max_queries: int,
    seed: int,
) -> list[dict[str, Any]]:
    oracle_rng, search_rng = _streams(seed, "figure4", p.name, kind, eps)
    oracle = p.oracle(kind, eps, rng=oracle_rng)
    hits = np.zeros(len(levels), dtype=np.int64)
    reached = np.zeros(len(levels), dtype=np.int64)
    total_q = np.zeros(len(levels), dtype=np.float64)
    for _ in range(runs):
        rule = _AlphaCheckpoints(levels, p.anomaly_index, TOP_K)
        res = search(oracle, halting=rule, top_k=TOP_K, max_queries=max_queries, rng=search_rng)
        got = list(rule.hits)
        reached[: len(got)] += 1
        final = (res.contains(p.anomaly_index), res.n_queries)
        got += [final] * (len(levels) - len(got))
        hits += [h for h, _ in got]
        total_q += [t for _, t in got]
    return [
        {
            "dataset": p.name,
            "threshold_ratio": p.threshold_ratio,
            "kind": kind,
            "epsilon": eps,
            "alpha": a,
            "runs": runs,
            "successes": int(h),
            "error_rate": 1.0 - int(h) / runs,
            "mean_queries": q / runs,
            "mean_privacy": q / runs * eps,
            "share_reached": int(r) / runs,
        }
        for a, h, r, q in zip(levels, hits, reached, total_q, strict=True)
    ]


def figure4(
    problems: Sequence[SearchProblem],
    *,
    epsilons: Sequence[float] = (0.5, 1.0, 2.0),
    alphas: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99),
    kind: str = "laplace",
    runs: int = 100,
    max_queries: int = 20_000,
    seed: int = 0,
    workers: int = 1,
    tick: Progress = None,
) -> pd.DataFrame:
    """Error rate and total privacy risk at halting levels α of τ = 1(max f > α) (Fig. 4).

    Budget removed (``max_queries`` is only a safety cap). One row per (dataset, ε, α):
    ``error_rate``, ``mean_privacy`` (mean Tε when max f first exceeds α), ``mean_queries``,
    ``share_reached`` (runs that reached α before the cap; the others are read at the cap).
    """
    levels = tuple(sorted(float(a) for a in alphas))
    tasks = [
        ((p, eps, levels, kind, runs, max_queries, seed), f"{p.name} ε={eps:g}")
        for p in problems
        for eps in epsilons
    ]
    return pd.DataFrame(_run_tasks(_figure4_task, tasks, workers, tick))


def draw_figure4(table: pd.DataFrame) -> Any:
    """Per dataset: error rate and mean Tε against α, one line per ε."""
    return _error_and_risk(
        table,
        x="alpha",
        lines=table.groupby("epsilon", sort=True),
        label=lambda eps: f"ε = {eps:g}",
        xlabel="halting level α of τ = 1(max f > α)",
        log_axes=False,
        title="Figure 4: error and total privacy risk vs halting level α (no budget)",
    )
