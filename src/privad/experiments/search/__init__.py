"""Reproduction of the DP noisy binary search paper's evaluation (section 6).

Bittner, Sarwate, Wright, "Using noisy binary search for differentially private anomaly
detection" (section 6). One function per figure; each returns a tidy
:class:`pandas.DataFrame` and has a ``draw_*`` companion that turns it into a matplotlib
figure. Nothing here writes files except :func:`reproduce`, which writes CSVs, PNGs and an
``index.html`` through :mod:`privad.experiments.report`.

Procedure (section 6.2): c runs per setting (``runs``, default the paper's 100), success
when the anomaly i* is among the |S| = 4 items of largest posterior when the search halts,
error rate 1 − successes/c, total privacy risk Tε averaged over the runs; τ = 1(max f > 0.5)
unless a figure varies it. One oracle (its own seeded stream) answers the c runs of a
setting; the searcher (the random order σ) uses another stream.

Data (the Yahoo S5 A1 benchmark of the paper may not be redistributed):

* **Synthetic stand-ins for the paper's datasets 6 and 8** (:func:`regime_problems`):
  :func:`privad.datasets.make_search_mixture` with n = 1,420 (an A1 series' length), a
  mixture of normals at threshold ratio 0.647 (dataset 6) and values skewed toward 0
  (exponential) at 0.701 (dataset 8): the two regimes section 6.1 names, at the ratios it
  gives. The distributions themselves are our reading (the paper does not give them).
* **NAB series** (:func:`nab_problems`): the embedded ones, or every labelled series of a NAB
  checkout (``nab_root``), reduced as in section 6.1
  (:func:`privad.experiments.search_problems.problem_from_series`: the largest labelled
  point and the unlabelled points, every other labelled point dropped; t_h and t_ℓ at 10%
  of the gap to the largest value left); series where that is undefined are listed with
  the reason (:class:`~privad.experiments.search_problems.SkippedSeries`), not silently
  dropped.
  ``other_anomalies="keep"`` runs the earlier reading (the other labelled points stay).
* **Yahoo S5 A1** (:func:`yahoo_problems`, ``yahoo_root``): a user's copy of the paper's own
  benchmark (it cannot be shipped). Its series join Figure 1, and Figures 2–4 run on its
  ``real_6`` and ``real_8`` (the paper's datasets 6 and 8) instead of the synthetic stand-ins.

Reconstructions (the paper leaves these open; each is a :class:`Settings` field):

* Figures 1–2 use b only as a safety cap (``figure1_budget`` = 1,000 at ε = 1, i.e. T ≤ 1,000
  queries; Figure 2 ``max_queries``): a series whose anomaly the noise hides would otherwise
  never halt. Runs stopped by the cap count as they end (usually errors).
* Figure 3's checkpoints b and ε, Figure 4's α and ε grids (the captions give no values).
* Checkpoints are read off one run per repetition (section 6.3: "S is checked ... and the
  algorithm continues"): at budget checkpoint b the belief is the one a run with budget b
  would return (its last query is the last one with (T + 1)ε ≤ b); at α the belief when max f
  first exceeds α.
* Query selection: one uniformly random order per run, median prefixes of it (the library's
  default ``selection="fixed"``, section 4.1), not a fresh permutation per query.

Modules: :mod:`~privad.experiments.search.data` (settings and search problems),
:mod:`~privad.experiments.search.trials` (runs with checkpoints),
:mod:`~privad.experiments.search.figures` (Figures 1–4) and
:mod:`~privad.experiments.search.reproduction` (the page's sections).
"""

from __future__ import annotations

from privad.experiments.search.data import (
    KINDS,
    PAPER_RATIOS,
    Settings,
    nab_problems,
    regime_problems,
    settings,
    yahoo_problems,
)
from privad.experiments.search.figures import (
    draw_figure1,
    draw_figure2,
    draw_figure3,
    draw_figure4,
    figure1,
    figure2,
    figure3,
    figure4,
)
from privad.experiments.search.reproduction import (
    reproduce,
)

__all__ = [
    "KINDS",
    "PAPER_RATIOS",
    "Settings",
    "draw_figure1",
    "draw_figure2",
    "draw_figure3",
    "draw_figure4",
    "figure1",
    "figure2",
    "figure3",
    "figure4",
    "nab_problems",
    "regime_problems",
    "reproduce",
    "settings",
    "yahoo_problems",
]
