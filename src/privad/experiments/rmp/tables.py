"""Table 1, ROC curves, the effect of r and the timing table, with their drawings."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.experiments.rmp.data import (
    _NA,
    ALPHAS,
    DATASETS,
    PAPER_TABLE1,
    R_FRACTIONS,
    DataCache,
    _check_alphas,
    _check_datasets,
    _check_seeds,
    r_values,
)
from privad.experiments.rmp.fits import FitSpec, auc_table, evaluate
from privad.io import atomic_write
from privad.rmp.estimator import DEFAULT_EPOCHS


def table1_specs(
    datasets: Iterable[str], alphas: Iterable[float], seeds: Iterable[int], *, r: int = 1
) -> list[FitSpec]:
    """The fits of Table 1: per dataset and seed, Raw and RMP at each α with the given r."""
    out = []
    for seed in seeds:
        for name in datasets:
            out.append(FitSpec(name, "raw", None, None, seed))
            out += [FitSpec(name, "rmp", float(a), r, seed) for a in alphas]
    return out


def table1(
    *,
    datasets: Iterable[str] = tuple(DATASETS),
    alphas: Iterable[float] = ALPHAS,
    seeds: Iterable[int] = (0,),
    epochs: int = DEFAULT_EPOCHS,
    r: int = 1,
    protocol: str = "same",
    cache: DataCache | None = None,
    gas_path: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    **detector_options: Any,
) -> pd.DataFrame:
    """Table 1: the AUC of Raw and of RMP at each α (r = 1), one row per fit
    (:func:`auc_table`). Datasets that cannot be loaded (only ``gas``) are left out; use
    :meth:`DataCache.available` to say why."""
    cache = cache if cache is not None else DataCache(gas_path=gas_path)
    names, _ = cache.available(_check_datasets(datasets))
    specs = table1_specs(names, _check_alphas(alphas), _check_seeds(seeds), r=r)
    return auc_table(
        evaluate(
            specs,
            epochs=epochs,
            protocol=protocol,
            cache=cache,
            progress=progress,
            **detector_options,
        )
    )


def _paper_auc(name: str, method: str, alpha: float) -> float:
    row = DATASETS[name].paper_row
    if row is None:
        return _NA
    rec = PAPER_TABLE1[PAPER_TABLE1["dataset"] == row].iloc[0]
    if method == "raw":
        return float(rec["raw"])
    col = f"alpha={alpha:g}"
    return float(rec[col]) if col in rec.index else _NA


_AUC_STATS = {
    "n": ("n", "first"),
    "w": ("w", "first"),
    "runs": ("auc", "size"),
    "auc_mean": ("auc", "mean"),
    "auc_sd": ("auc", "std"),
}
"""The named aggregations of :func:`_auc_summary`: column → (column of the AUC table, how)."""


def _auc_summary(groups: Any, **extra: tuple[str, str]) -> pd.DataFrame:
    """Per group of an :func:`auc_table`: ``n``, ``w``, ``runs``, ``auc_mean`` and ``auc_sd``
    (0 for a single run), then the ``extra`` aggregates (``name=(column, function)``)."""
    out = groups.agg(**_AUC_STATS, **extra).reset_index()
    out["auc_sd"] = out["auc_sd"].fillna(0.0)
    return out


def table1_summary(auc: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds per (dataset, method, α, r, protocol), with
    the paper's row and value beside (``paper_row``, ``relation``, ``paper_auc``; NaN where
    the paper has N/A or no such dataset)."""
    keys = ["dataset", "method", "alpha", "r", "protocol"]
    g = auc.groupby(keys, sort=False, dropna=False)
    out = _auc_summary(
        g,
        detection_rate=("detection_rate", "mean"),
        false_alarm_rate=("false_alarm_rate", "mean"),
        fit_s=("fit_s", "mean"),
    )
    out["paper_row"] = [DATASETS[d].paper_row or "—" for d in out["dataset"]]
    out["relation"] = [DATASETS[d].relation for d in out["dataset"]]
    out["paper_auc"] = [
        _paper_auc(d, m, a)
        for d, m, a in zip(out["dataset"], out["method"], out["alpha"], strict=True)
    ]
    out["difference"] = out["auc_mean"] - out["paper_auc"]
    return out


def _cell(mean: float, sd: float, runs: int) -> str:
    return f"{mean:.3f}" if runs < 2 else f"{mean:.3f} ± {sd:.3f}"


def table1_display(summary: pd.DataFrame, protocol: str = "same") -> pd.DataFrame:
    """Table 1 laid out like the paper's: per dataset a row of ours (mean ± sd over seeds)
    and a row of the paper's (its row for that dataset, ``—`` for N/A), columns Raw and
    each α. Text cells, for display."""
    part = summary[
        (summary["protocol"] == protocol) & ((summary["method"] == "raw") | (summary["r"] == 1))
    ]
    alphas = sorted(a for a in part["alpha"].dropna().unique())
    rows = []
    for name in dict.fromkeys(part["dataset"]):
        sub = part[part["dataset"] == name]
        spec = DATASETS[name]
        raw = sub[sub["method"] == "raw"]
        runs = int(sub["runs"].max())
        ours: dict[str, Any] = {
            "dataset": spec.title,
            "source": f"privad ({runs} seed{'s' if runs > 1 else ''})",
            "n": int(sub["n"].iloc[0]),
        }
        ours["Raw"] = (
            _cell(raw["auc_mean"].iloc[0], raw["auc_sd"].iloc[0], runs) if len(raw) else "—"
        )
        paper: dict[str, Any] = {
            "dataset": "",
            "source": f"paper: {spec.paper_row} ({spec.relation})"
            if spec.paper_row
            else "paper: —",
        }
        prow = PAPER_TABLE1[PAPER_TABLE1["dataset"] == spec.paper_row] if spec.paper_row else None
        paper["n"] = int(prow["n"].iloc[0]) if prow is not None else "—"
        paper["Raw"] = f"{prow['raw'].iloc[0]:.2f}" if prow is not None else "—"
        for a in alphas:
            col = f"α = {a:g}"
            cell = sub[(sub["method"] == "rmp") & np.isclose(sub["alpha"], a)]
            ours[col] = (
                _cell(cell["auc_mean"].iloc[0], cell["auc_sd"].iloc[0], runs) if len(cell) else "—"
            )
            value = _paper_auc(name, "rmp", a) if spec.paper_row else _NA
            paper[col] = "—" if math.isnan(value) else f"{value:.2f}"
        rows += [ours, paper]
    return pd.DataFrame(rows)


_COLOURS = (
    "tab:blue",
    "tab:orange",
    "tab:green",
    "tab:red",
    "tab:purple",
    "tab:brown",
    "tab:pink",
    "tab:olive",
)


def _save(fig: Any, path: str | Path | None) -> Any:
    if path is not None:
        with atomic_write(Path(path), "wb") as handle:
            fig.savefig(handle, format="png", dpi=110)
    return fig


def draw_table1(summary: pd.DataFrame, path: str | Path | None = None) -> Any:
    """AUC against α per dataset (r = 1): ours (mean ± sd over seeds, Raw as a dashed
    line) and the paper's values of the corresponding row (crosses). One panel per dataset.
    Returns the figure; with ``path`` also writes it as a PNG (atomically)."""
    from privad.experiments.report import new_figure

    part = summary[
        (summary["protocol"] == "same") & ((summary["method"] == "raw") | (summary["r"] == 1))
    ]
    names = list(dict.fromkeys(part["dataset"]))
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig = new_figure(4.0 * cols, 3.2 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, name in zip(axes, names, strict=False):
        sub = part[part["dataset"] == name]
        rmp = sub[sub["method"] == "rmp"].sort_values("alpha")
        raw = sub[sub["method"] == "raw"]
        ax.errorbar(
            rmp["alpha"],
            rmp["auc_mean"],
            yerr=rmp["auc_sd"],
            fmt="o-",
            color="tab:blue",
            capsize=3,
            label="RMP (privad)",
        )
        if len(raw):
            ax.axhline(raw["auc_mean"].iloc[0], color="black", ls="--", lw=1, label="Raw (privad)")
        pap = rmp.dropna(subset=["paper_auc"])
        if len(pap):
            ax.plot(
                pap["alpha"],
                pap["paper_auc"],
                "x",
                color="tab:red",
                ms=8,
                label=f"paper ({DATASETS[name].paper_row})",
            )
        ax.set_title(DATASETS[name].title, fontsize=10)
        ax.set_xlabel("α")
        ax.set_ylabel("AUC")
        low = float(np.nanmin(sub["auc_mean"] - sub["auc_sd"]))
        ax.set_ylim(min(0.5, low - 0.03), 1.01)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    return _save(fig, path)


def draw_roc(roc: pd.DataFrame, dataset: str, path: str | Path | None = None) -> Any:
    """ROC curves of one dataset like the paper's Figures 2–4: Raw and RMP at each α
    (r = 1, protocol ``same`` if present), AUC in the legend. From :func:`roc_curves`."""
    from privad.experiments.report import new_figure

    part = roc[(roc["dataset"] == dataset) & ((roc["method"] == "raw") | (roc["r"] == 1))]
    if "same" in set(part["protocol"]):
        part = part[part["protocol"] == "same"]
    fig = new_figure(5.0, 4.6)
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    groups = part.groupby(["method", "alpha"], sort=False, dropna=False)
    k = 0
    for (method, alpha), g in sorted(
        groups, key=lambda kv: (kv[0][0] != "raw", np.nan_to_num(kv[0][1]))
    ):
        if method == "raw":
            style: dict[str, Any] = {"color": "black", "lw": 2.0, "label": "Raw"}
        else:
            style = {"color": _COLOURS[k % len(_COLOURS)], "lw": 1.3, "label": f"α = {alpha:g}"}
            k += 1
        style["label"] += f" (AUC {g['auc'].iloc[0]:.3f})"
        ax.plot(g["fpr"], g["tpr"], drawstyle="steps-post", **style)
    seed = int(part["seed"].iloc[0]) if len(part) else 0
    ax.set_title(f"{DATASETS[dataset].title}: ROC (seed {seed})", fontsize=10)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(-0.01, 1.0)
    ax.set_ylim(0.0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)


# --------------------------------------------------------------------------------------------
# The effect of r
# --------------------------------------------------------------------------------------------


def dimension_specs(
    cache: DataCache,
    datasets: Iterable[str],
    seeds: Iterable[int],
    *,
    alpha: float,
    fractions: Sequence[float] = R_FRACTIONS,
    skip_r1: bool = False,
) -> list[FitSpec]:
    """The fits of the dimension study: RMP at ``alpha`` for each r of :func:`r_values`
    (``skip_r1``: leave out r = 1, already fitted for Table 1)."""
    out = []
    for seed in seeds:
        for name in datasets:
            n = cache.get(name, seed).X.shape[1]
            out += [
                FitSpec(name, "rmp", float(alpha), r, seed)
                for _, r in r_values(n, fractions)
                if not (skip_r1 and r == 1)
            ]
    return out


def dimension_study(
    *,
    datasets: Iterable[str] = tuple(DATASETS),
    alpha: float = 0.1,
    fractions: Sequence[float] = R_FRACTIONS,
    seeds: Iterable[int] = (0,),
    epochs: int = DEFAULT_EPOCHS,
    cache: DataCache | None = None,
    gas_path: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    **detector_options: Any,
) -> pd.DataFrame:
    """AUC of RMP at one α against r = n − w, one row per fit (:func:`auc_table`), plus
    Raw per dataset and seed for reference. Section 6 says only that larger n suffers less
    from larger r; it does not say which α it used (default 0.1 here)."""
    from privad.rmp.perturbation import check_alpha

    cache = cache if cache is not None else DataCache(gas_path=gas_path)
    names, _ = cache.available(_check_datasets(datasets))
    seeds = _check_seeds(seeds)
    specs = [FitSpec(name, "raw", None, None, s) for s in seeds for name in names]
    specs += dimension_specs(cache, names, seeds, alpha=check_alpha(alpha), fractions=fractions)
    return auc_table(
        evaluate(specs, epochs=epochs, cache=cache, progress=progress, **detector_options)
    )


def dimension_summary(auc: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Mean AUC per dataset and r at ``alpha`` (protocol ``same``), with r/n, w and the
    change from r = 1 and from Raw: ``dataset, n, r, w, r_over_n, runs, auc_mean, auc_sd,
    raw_auc, change_from_r1, change_from_raw``."""
    part = auc[auc["protocol"] == "same"]
    raw = part[part["method"] == "raw"].groupby("dataset")["auc"].mean()
    rmp = part[(part["method"] == "rmp") & np.isclose(part["alpha"].fillna(-1), alpha)]
    g = rmp.groupby(["dataset", "r"], sort=False)
    out = (
        _auc_summary(g)
        .sort_values(
            ["dataset", "r"],
            kind="stable",
            key=lambda s: s.map(list(DATASETS).index) if s.name == "dataset" else s,
        )
        .reset_index(drop=True)
    )
    out.insert(4, "r_over_n", out["r"] / out["n"])
    out.insert(0, "alpha", float(alpha))
    out["raw_auc"] = out["dataset"].map(raw)
    r1 = out[out["r"] == 1].set_index("dataset")["auc_mean"]
    out["change_from_r1"] = out["auc_mean"] - out["dataset"].map(r1)
    out["change_from_raw"] = out["auc_mean"] - out["raw_auc"]
    return out


def draw_dimension(summary: pd.DataFrame, path: str | Path | None = None) -> Any:
    """AUC against r/n, one line per dataset (from :func:`dimension_summary`)."""
    from privad.experiments.report import new_figure

    fig = new_figure(6.5, 4.4)
    ax = fig.subplots()
    for k, (name, g) in enumerate(summary.groupby("dataset", sort=False)):
        c = _COLOURS[k % len(_COLOURS)]
        ax.errorbar(
            100 * g["r_over_n"],
            g["auc_mean"],
            yerr=g["auc_sd"],
            fmt="o-",
            color=c,
            capsize=3,
            label=f"{DATASETS[name].title}",
        )
    alpha = float(summary["alpha"].iloc[0]) if len(summary) else _NA
    ax.set_title(f"RMP (α = {alpha:g}): AUC against r = n − w", fontsize=10)
    ax.set_xlabel("r / n [%]")
    ax.set_ylabel("AUC")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    return _save(fig, path)


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def timing_table(auc: pd.DataFrame) -> pd.DataFrame:
    """Mean training time and end-user scoring throughput per dataset and method
    (protocol ``same``, r = 1), from an :func:`auc_table`."""
    part = auc[(auc["protocol"] == "same") & ((auc["method"] == "raw") | (auc["r"] == 1))]
    g = part.groupby(["dataset", "method"], sort=False)
    out = g.agg(
        n=("n", "first"),
        w=("w", "first"),
        hidden=("hidden", "first"),
        epochs=("epochs", "first"),
        n_train=("n_train", "first"),
        fits=("auc", "size"),
        fit_s=("fit_s", "mean"),
        score_s=("score_s", "mean"),
        n_scored=("n_scored", "first"),
    ).reset_index()
    out["records_per_s"] = out["n_scored"] / out["score_s"].where(out["score_s"] > 0)
    return out
