"""The search paper's settings and its search problems: NAB and Yahoo series, synthetic regimes."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.datasets import TimeSeries, load_nab, load_yahoo, make_search_mixture, nab_series
from privad.errors import ParameterError, PrivadError
from privad.experiments.search_problems import OTHER_ANOMALIES, prepare_series, problem_from_dataset
from privad.search import (
    SearchProblem,
)
from privad.validation import check_choice, check_int

KINDS: tuple[str, ...] = ("laplace", "binarized", "randomized-response")
"""The three oracles of Figure 2."""

KIND_TITLES = {
    "laplace": "noisy maxima (eqs. 9, 11)",
    "binarized": "binarized Z = 1(Y > Ȳ) (eq. 24)",
    "randomized-response": "randomized response (eq. 5)",
}

PAPER_RATIOS: dict[str, float] = {"dataset 6": 0.647, "dataset 8": 0.701}
"""Threshold ratios (t_h − t_ℓ)/t_ℓ of the paper's datasets 6 and 8 (section 6.3)."""

REGIMES: tuple[tuple[str, str, str, float], ...] = (
    ("mixture of normals (dataset 6)", "normal-mixture", "dataset 6", 0.647),
    ("skewed toward 0 (dataset 8)", "skewed", "dataset 8", 0.701),
)
"""(name, make_search_mixture kind, paper dataset, threshold ratio) of the two regimes."""

TOP_K = 4
"""|S| (section 6.2)."""


# --------------------------------------------------------------------------------------------
# Settings and data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """What a reproduction run uses (full vs ``quick``); see the module docstring."""

    quick: bool
    seed: int
    runs: int
    n: int
    figure1_ratios: tuple[float, ...]
    figure1_budget: float
    figure2_epsilons: tuple[float, ...]
    figure3_epsilons: tuple[float, ...]
    figure3_budgets: tuple[float, ...]
    figure4_epsilons: tuple[float, ...]
    figure4_alphas: tuple[float, ...]
    max_queries: int
    nab_root: str | None = None
    yahoo_root: str | None = None
    other_anomalies: str = "drop"


def settings(
    *,
    quick: bool = False,
    seed: int = 0,
    runs: int = 100,
    nab_root: str | Path | None = None,
    yahoo_root: str | Path | None = None,
    other_anomalies: str = "drop",
) -> Settings:
    """The full run (c = ``runs`` per setting, n = 1,420) or the quick one (at most 4 runs,
    n = 300, coarse grids; for tests).

    ``other_anomalies``: how real series are reduced to one anomaly
    (:func:`privad.experiments.search_problems.single_anomaly_series`): ``"drop"`` (the
    paper's reading, default) or ``"keep"``.
    """
    seed = check_int(seed, "seed", minimum=0)
    runs = check_int(runs, "runs", minimum=1)
    mode = check_choice(other_anomalies, "other_anomalies", OTHER_ANOMALIES)
    root = None if nab_root is None else str(Path(nab_root).expanduser())
    yahoo = None if yahoo_root is None else str(Path(yahoo_root).expanduser())
    common = {"nab_root": root, "yahoo_root": yahoo, "other_anomalies": mode}
    if quick:
        return Settings(
            quick=True,
            seed=seed,
            runs=min(runs, 4),
            n=300,
            figure1_ratios=(0.1, 0.7, 3.0),
            figure1_budget=100.0,
            figure2_epsilons=(0.5, 2.0),
            figure3_epsilons=(1.0, 4.0),
            figure3_budgets=(2.0, 10.0, 50.0),
            figure4_epsilons=(1.0,),
            figure4_alphas=(0.3, 0.5, 0.9),
            max_queries=2_000,
            **common,
        )
    return Settings(
        quick=False,
        seed=seed,
        runs=runs,
        n=1420,
        figure1_ratios=(0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0),
        figure1_budget=1000.0,
        figure2_epsilons=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
        figure3_epsilons=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
        figure3_budgets=(2.0, 5.0, 10.0, 20.0, 50.0, 100.0),
        figure4_epsilons=(0.5, 1.0, 2.0),
        figure4_alphas=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99),
        max_queries=20_000,
        **common,
    )


def _seed(seed: int, *parts: Any) -> int:
    """A deterministic per-setting seed (independent of the order settings run in)."""
    return zlib.crc32("/".join([str(seed), *map(str, parts)]).encode("utf-8"))


def regime_problems(
    n: int = 1420, *, seed: int = 0, ratios: Sequence[float] | None = None
) -> list[SearchProblem]:
    """The two regimes of section 6.1 as synthetic problems with one planted anomaly.

    With ``ratios`` None: one problem per regime at the paper's ratio (0.647, 0.701); else one
    per regime and ratio. Names say the regime and the ratio.
    """
    out = []
    for title, kind, _paper, paper_ratio in REGIMES:
        for ratio in [paper_ratio] if ratios is None else ratios:
            ds = make_search_mixture(
                n=n, kind=kind, threshold_ratio=float(ratio), rng=_seed(seed, "data", kind, ratio)
            )
            p = problem_from_dataset(ds)
            name = f"{title}" if ratios is None else f"{kind} R={float(ratio):g}"
            out.append(
                SearchProblem(name, p.values, p.t_low, p.t_high, p.anomaly_index, p.threshold_ratio)
            )
    return out


Problems = tuple[list[SearchProblem], pd.DataFrame]
"""The usable problems and the table of every series with its fate."""

_TABLE_COLUMNS = [
    "series",
    "n",
    "labelled_points",
    "used",
    "n_reduced",
    "threshold_ratio",
    "threshold_ratio_other_reading",
    "t_low",
    "t_high",
    "reason",
]


def _series_problems(
    loaded: Sequence[TimeSeries], failed: dict[str, str], other_anomalies: str
) -> Problems:
    """Reduce loaded series; a table of every series (and of those that failed to load)."""
    problems, skipped = prepare_series(loaded, other_anomalies=other_anomalies)
    other = "keep" if other_anomalies == "drop" else "drop"
    compare = {p.name: p.threshold_ratio for p in prepare_series(loaded, other_anomalies=other)[0]}
    why = {s.name: s.reason for s in skipped}
    by_name = {p.name: p for p in problems}
    rows: list[dict[str, Any]] = []
    for ts in loaded:
        p = by_name.get(ts.name)
        rows.append(
            {
                "series": ts.name,
                "n": int(ts.values.size),
                "labelled_points": int(ts.labels.sum()),
                "used": p is not None,
                "n_reduced": 0 if p is None else p.n_items,
                "threshold_ratio": np.nan if p is None else p.threshold_ratio,
                "threshold_ratio_other_reading": compare.get(ts.name, np.nan),
                "t_low": np.nan if p is None else p.t_low,
                "t_high": np.nan if p is None else p.t_high,
                "reason": why.get(ts.name, ""),
            }
        )
    for name, reason in failed.items():
        rows.append(
            {
                "series": name,
                "n": 0,
                "labelled_points": 0,
                "used": False,
                "n_reduced": 0,
                "threshold_ratio": np.nan,
                "threshold_ratio_other_reading": np.nan,
                "t_low": np.nan,
                "t_high": np.nan,
                "reason": reason,
            }
        )
    return problems, pd.DataFrame(rows, columns=_TABLE_COLUMNS)


def nab_problems(root: str | Path | None = None, *, other_anomalies: str = "drop") -> Problems:
    """NAB series reduced as in section 6.1, and a table of every series with its fate.

    ``root``: a NAB checkout (every labelled series); default the embedded series.
    ``other_anomalies``: ``"drop"`` (default: the points of every anomaly window other than
    the largest labelled point are removed) or ``"keep"``
    (:func:`privad.experiments.search_problems.single_anomaly_series`). The table has one
    row per series: name, n, labelled points, used (bool), n after the reduction, threshold
    ratio (and the ratio under the other reading, for comparison), t_ℓ, t_h, reason if
    skipped.
    """
    check_choice(other_anomalies, "other_anomalies", OTHER_ANOMALIES)
    loaded = []
    failed: dict[str, str] = {}
    for name in nab_series(root):
        try:
            loaded.append(load_nab(name, root))
        except PrivadError as exc:  # a malformed file in a user's checkout: listed, not fatal
            failed[f"nab:{name.rsplit('/', 1)[-1]}"] = f"skipped: cannot load: {exc}"
    return _series_problems(loaded, failed, other_anomalies)


def _natural_key(path: Path) -> tuple[str, int, str]:
    stem = path.stem
    head = stem.rstrip("0123456789")
    digits = stem[len(head) :]
    return (head, int(digits) if digits else -1, stem)


def yahoo_problems(root: str | Path, *, other_anomalies: str = "drop") -> Problems:
    """Every series of a Yahoo S5 folder (e.g. A1's ``real_1.csv`` … ``real_67.csv``), reduced
    as in section 6.1; the table as :func:`nab_problems`. Series are named ``yahoo:real_N``.

    Raises
    ------
    ParameterError
        ``root`` is not a folder or holds no ``.csv`` file.
    """
    check_choice(other_anomalies, "other_anomalies", OTHER_ANOMALIES)
    base = Path(root).expanduser()
    if not base.is_dir():
        raise ParameterError(f"Yahoo S5 folder {str(base)!r} is not a folder")
    files = sorted(base.glob("*.csv"), key=_natural_key)
    if not files:
        raise ParameterError(f"Yahoo S5 folder {str(base)!r} holds no .csv series")
    loaded = []
    failed: dict[str, str] = {}
    for path in files:
        name = f"yahoo:{path.stem}"
        try:
            ts = load_yahoo(path)
        except PrivadError as exc:
            failed[name] = f"skipped: cannot load: {exc}"
            continue
        ts.name = name
        loaded.append(ts)
    return _series_problems(loaded, failed, other_anomalies)


YAHOO_FIGURE_SERIES: tuple[tuple[str, str], ...] = (
    ("yahoo:real_6", "dataset 6"),
    ("yahoo:real_8", "dataset 8"),
)
"""The A1 series the paper's Figures 2–4 use (section 6.1)."""
