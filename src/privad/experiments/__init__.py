"""Reproductions of the papers' tables and figures.

One package per paper, split by idea (data, tables or figures, the reproduction). Each
table or figure is a function that returns a tidy table (a :class:`pandas.DataFrame`, one
row per observation, documented columns) and a separate ``draw_*`` function that turns that
table into a :class:`matplotlib.figure.Figure`; the functions never write files.
:mod:`privad.experiments.report` is the skeleton every reproduction fills
(:class:`~privad.experiments.report.Reproduction`: steps whose section functions return the
page's sections; CSV files, PNG figures and an HTML page, all written atomically);
:func:`privad.experiments.runs.run_reproduction` runs one paper's reproduction and reports
it, the job of ``privad reproduce ...``.

* :mod:`privad.experiments.sensitive`: Asif, Papakonstantinou, Vaidya, "How to accurately
  and privately identify anomalies" (CCS 2019): Tables 1–3, Figures 3, 5, 6–8 and 9.
* :mod:`privad.experiments.relaxed`: the relaxed-DP sensor-stream paper's Figure 3a/3b
  (accuracy and size of the corrected outlier set over ε and the separation).
* :mod:`privad.experiments.search`: Bittner, Sarwate, Wright, DP noisy binary search,
  Figures 1–4 on NAB series and synthetic regimes;
  :mod:`privad.experiments.search_problems` makes its search problems from data
  (section 6.1) and runs the trials of section 6.2.
* :mod:`privad.experiments.rmp`: Erfani et al., RMP (PAKDD 2014): Table 1 (AUC of the raw
  AANN and of RMP over α), ROC curves like Figures 2–4, the effect of larger r.
* :mod:`privad.experiments.rmp_privacy`: RMP's section 5 made measurable: MAP, ICA,
  known input-output and collusion attacks, Lemma 1.

matplotlib is needed only by the ``draw_*`` functions and the report (imported there).
"""

from __future__ import annotations

__all__: list[str] = []
