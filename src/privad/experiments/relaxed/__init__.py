"""Reproduction of the relaxed-DP paper's evaluation (section 7, Figure 3a/3b).

"Relaxed Differentially Private Outlier Detection and Correction" for sensor streams
(Böhler, Bernau, Kerschbaum, DBSec 2017): 100,000 points in R², each coordinate
N(0, 3²), 10 % outliers moved outward to a separation of ≈ 50, 120, 220, 400
(:func:`privad.datasets.make_sensor_ring`); ε ∈ {0.1, 0.5, 1}; mean of 5 runs; DBSCAN as
f_outlier with the same parameters on 𝒯 and 𝒯'. The paper's Figure 3 is given only in prose
(:data:`PAPER_FIGURE3`): ≈ 75 % accuracy at ε = 0.1 for separation ≥ 220, 95–100 % at
ε = 0.5 for all separations, the correction "not always needed" at ε = 1, subset size always
below 20 %.

One function per result, each returning a tidy :class:`pandas.DataFrame`; nothing here writes
files except :func:`draw_figure3` (when given a path) and :func:`reproduce` (through
:mod:`privad.experiments.report`, atomically):

* :func:`figure3`: the whole pipeline (:func:`privad.relaxed.run_pipeline`) per separation,
  ε and run, with the corrected and the uncorrected (O' on 𝒯') accuracy and subset size and
  per-stage timings; :func:`figure3_summary` averages the runs beside the paper's claims;
  :func:`draw_figure3` plots Figure 3a/3b.
* :func:`reconstruction_options`: every reconstruction option of the correction
  (:data:`OPTIONS`) × both DBSCAN calibrations on the same perturbed data, and the
  uncorrected baseline (``docs/relaxed_reproduction.md`` discusses the table).
* :func:`noise_table`: the relaxed sensitivity RS, the noise scale RS/ε and how it compares
  with the separation.
* :func:`streaming_example`: the protocol on a stream of windows with parameters fixed from
  history, as the services run it.

Modules: :mod:`~privad.experiments.relaxed.grid` (data sets, Figure 3, the noise
table), :mod:`~privad.experiments.relaxed.options` (the reconstruction options),
:mod:`~privad.experiments.relaxed.streams` (the stream example and the protected exchange)
and :mod:`~privad.experiments.relaxed.reproduction` (the page's sections).

Randomness comes from seeds derived from ``seed`` (CRC-32 of the step's name and
coordinates), so a run is reproducible and separations, runs and ε get independent streams.
"""

from privad.experiments.relaxed.grid import (
    EPSILONS,
    PAPER_FIGURE3,
    PAPER_N,
    SEPARATIONS,
    RingCache,
    draw_figure3,
    figure3,
    figure3_summary,
    noise_table,
    paper_claim,
)
from privad.experiments.relaxed.options import (
    OPTIONS,
    ReconstructionOption,
    options_summary,
    reconstruction_options,
)
from privad.experiments.relaxed.reproduction import reproduce
from privad.experiments.relaxed.streams import (
    PROTECTED_VARIANTS,
    protected_exchange_grid,
    protected_exchange_summary,
    streaming_example,
)

__all__ = [
    "EPSILONS",
    "OPTIONS",
    "PAPER_FIGURE3",
    "PAPER_N",
    "SEPARATIONS",
    "ReconstructionOption",
    "RingCache",
    "draw_figure3",
    "figure3",
    "figure3_summary",
    "noise_table",
    "options_summary",
    "paper_claim",
    "PROTECTED_VARIANTS",
    "protected_exchange_grid",
    "protected_exchange_summary",
    "reconstruction_options",
    "reproduce",
    "streaming_example",
]
