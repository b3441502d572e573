"""Reproduction of the sensitive-privacy paper's evaluation (section 5 and section 3).

Asif, Papakonstantinou, Vaidya, "How to accurately and privately identify anomalies",
CCS 2019. One function per table or figure; each returns a tidy :class:`pandas.DataFrame`
and has a ``draw_*`` companion that turns the table into a matplotlib figure. Nothing here
writes files: :func:`reproduce` (used by ``privad reproduce sp``) does, through
:mod:`privad.experiments.report`.

All errors are the mechanisms' **exact** error probabilities (Claim 2, Theorem 4.7),
computed in log space, never Monte-Carlo estimates, except where a column says "sampled".

Datasets (:func:`load_datasets`)
--------------------------------
Thyroid and Mammography (ODDS, embedded) and the synthetic mixture
(:func:`privad.datasets.make_sensitive_mixture`: n = 20,000, d = 200, PCA to 9, seeded),
with Table 1's (β, r): Thyroid (18, 0.1), Mammography (55, 1.7), Synthetic (97, 3.8).
Credit Fraud and APS Trucks are not available offline; their paper values are listed for
reference only. Ball counts follow the paper's definition (the record itself is counted,
B_x(i, r) includes d(i, i) = 0) everywhere except in Table 1's second convention.

Reconstructions (``docs/papers.md``), each a parameter of the function that uses it:

* "true (β, r)-anomalies" = labelled anomalies that are (β, r)-anomalies (Table 1), and they
  are the positives of Table 3 (the paper's DP recall 0.5250 = 1 − 1/(1 + e^0.1) and B1
  precision ≈ their share of n only fit this reading);
* Table 2's "future queries": 20% of n, uniform over the data's bounding box; a query
  counts as "anomalous" when it would be a (β, r)-anomaly once added to the data
  (footnote 1: B_x(i, r) + 1 ≤ β); queries are answered on x itself (not x + e_i), which
  is what reproduces the paper's numbers;
* k = 1 wherever the paper does not give k (Tables 2–3, Figures 6–8);
* Table 3's "exact" precision and F1 are ratios of expected counts (E[TP]/(E[TP] + E[FP]));
  recall is an exact expectation;
* Figure 3's 2-D data (Appendix A.1 is missing): a Gaussian core with a uniform background;
* Figure 5's β (not given): β = 10 on a grid of states (x_i, B).

Modules: :mod:`~privad.experiments.sensitive.data` (datasets, exact errors),
:mod:`~privad.experiments.sensitive.tables` (Tables 1–3),
:mod:`~privad.experiments.sensitive.figures` (Figures 3, 5, 6–8, 9, per-record loss) and
:mod:`~privad.experiments.sensitive.reproduction` (the page's sections).
"""

from __future__ import annotations

from privad.experiments.sensitive.data import (
    DATASETS,
    GROUP_ANOMALIES,
    GROUP_NORMAL,
    PAPER_TABLE1,
    PAPER_TABLE2,
    PAPER_TABLE3,
    SPData,
    load_dataset,
    load_datasets,
)
from privad.experiments.sensitive.figures import (
    draw_figure3,
    draw_figure5,
    draw_figure6_7,
    draw_figure9,
    draw_per_record_loss,
    figure3,
    figure5,
    figure6_7,
    figure9,
    per_record_loss,
    privacy_map_data,
)
from privad.experiments.sensitive.reproduction import (
    ReproductionResult,
    Settings,
    reproduce,
    settings,
)
from privad.experiments.sensitive.tables import (
    random_queries,
    table1,
    table2,
    table3,
)

__all__ = [
    "DATASETS",
    "GROUP_ANOMALIES",
    "GROUP_NORMAL",
    "PAPER_TABLE1",
    "PAPER_TABLE2",
    "PAPER_TABLE3",
    "ReproductionResult",
    "SPData",
    "Settings",
    "draw_figure3",
    "draw_figure5",
    "draw_figure6_7",
    "draw_figure9",
    "draw_per_record_loss",
    "figure3",
    "figure5",
    "figure6_7",
    "figure9",
    "load_dataset",
    "load_datasets",
    "per_record_loss",
    "privacy_map_data",
    "random_queries",
    "reproduce",
    "settings",
    "table1",
    "table2",
    "table3",
]
