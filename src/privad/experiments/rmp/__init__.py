"""Reproduction of the RMP paper's evaluation (section 6: Table 1, Figures 2–4, the effect of r).

Erfani, Law, Karunasekera, Leckie, Palaniswami, "Privacy-preserving collaborative anomaly
detection for participatory sensing" (PAKDD 2014; ``rmp-collaborative-anomaly-detection.txt``).

Setup (section 6 and ``docs/papers.md``): the first 1000 records of each dataset, features
min-max scaled to [0, 1], 5 % U(0, 1) anomalies appended (label 1); participants submit
batches of 30 records, each perturbed with its own T_i = T + U(−α, α) after the double
logistic (:class:`privad.rmp.estimator.RMPDetector`); a three-layer AANN (hidden units ≈
half the inputs, learning rate 0.25, momentum 0.85, 300–1000 epochs) is trained on what the
server receives; end-users score records with the public T. The score is the reconstruction
error, the metric the ROC AUC (:func:`sklearn.metrics.roc_auc_score`). "Raw" is the same
AANN on the unperturbed records (:class:`privad.rmp.estimator.AANNDetector`). Table 1 uses
r = n − w = 1 and α ∈ {0.01, 0.1, 0.2, 0.4, 0.6}.

Evaluation protocol. The paper is unsupervised and does not hold data out: we train on all
records, anomalies included, and score the same records (``protocol="same"``, the
default). ``protocol="holdout"`` trains on a stratified random half and scores the other
half, as a check that the numbers are not an artefact of scoring the training records.

Datasets (:data:`DATASETS`, :func:`prepare_dataset`):

* ``abalone``: UCI Abalone, the 8 numeric columns (the paper's n = 8); same data as the paper.
* ``banana-8d``: :func:`privad.datasets.make_banana_8d`, a **reconstruction** of the paper's
  8-attribute Banana set (the paper gives only one sentence about it).
* ``banana-2d``: the classic 2-D Banana set. With n = 2, r = 1 leaves w = 1: every record is
  projected onto a single number before the AANN sees it. Not in the paper; shown because it
  is the Banana most readers know.
* ``gas``: the 128-feature two-class subset of Gas Sensor Array Drift (the paper: 168
  features). External (not shipped): used only when found (``gas_path``, ``$PRIVAD_DATA`` or
  ``[../]shared/datasets/gas``), otherwise skipped with a note.
* ``digits`` (64-D) and ``breast-cancer`` (30-D): scikit-learn's bundled sets as
  higher-dimensional **stand-ins** for HARS (561) and Opportunity (242), which are not
  available offline. Their classes are ignored: every record is a normal record, as the
  paper treats the activity classes of HARS and Opportunity.

One function per result, each returning a tidy :class:`pandas.DataFrame`; nothing writes
files except the ``draw_*`` functions (when given a path) and :func:`reproduce`:

* :func:`evaluate`: per-record scores of every fit (dataset, method, α, r, seed);
  :func:`auc_table` turns them into one row per fit, :func:`roc_curves` into ROC points.
* :func:`table1` (= ``auc_table(evaluate(...))`` for r = 1) and :func:`table1_summary`
  (mean ± sd over seeds, with the paper's value beside); :func:`draw_table1`,
  :func:`draw_roc` (Figures 2–4: one figure per dataset, Raw and each α).
* :func:`dimension_study` and :func:`dimension_summary`: AUC against r/n ("reducing n by 40 %
  only decreases accuracy by about 1 %" for large n, "10 %" for Abalone and Banana);
  :func:`draw_dimension`.

Randomness comes from seeds derived from ``seed`` (CRC-32 of the step's name and
coordinates), so a run is reproducible and every fit has its own stream.

Modules: :mod:`~privad.experiments.rmp.data` (datasets), :mod:`~privad.experiments.rmp.fits`
(fits and scores), :mod:`~privad.experiments.rmp.tables` (Table 1, ROC, the effect of r,
timing) and :mod:`~privad.experiments.rmp.reproduction` (the page's sections).
"""

from __future__ import annotations

from privad.experiments.rmp.data import (
    ALPHAS,
    DATASETS,
    PAPER_TABLE1,
    PROTOCOLS,
    R_FRACTIONS,
    DataCache,
    DatasetSpec,
    paper_table1,
    prepare_dataset,
    r_values,
)
from privad.experiments.rmp.fits import (
    FitSpec,
    auc_table,
    evaluate,
    roc_curves,
)
from privad.experiments.rmp.reproduction import (
    reproduce,
)
from privad.experiments.rmp.tables import (
    dimension_study,
    dimension_summary,
    draw_dimension,
    draw_roc,
    draw_table1,
    table1,
    table1_display,
    table1_specs,
    table1_summary,
)

__all__ = [
    "ALPHAS",
    "DATASETS",
    "PAPER_TABLE1",
    "PROTOCOLS",
    "R_FRACTIONS",
    "DataCache",
    "DatasetSpec",
    "FitSpec",
    "auc_table",
    "dimension_study",
    "dimension_summary",
    "draw_dimension",
    "draw_roc",
    "draw_table1",
    "evaluate",
    "paper_table1",
    "prepare_dataset",
    "r_values",
    "reproduce",
    "roc_curves",
    "table1",
    "table1_display",
    "table1_specs",
    "table1_summary",
]
