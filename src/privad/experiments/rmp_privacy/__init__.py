"""The RMP privacy evaluation: the attacks of section 5 run against α and w.

Erfani, Law, Karunasekera, Leckie, Palaniswami, "Privacy-preserving collaborative anomaly
detection for participatory sensing" (PAKDD 2014), section 5. The paper argues its privacy
analytically (eq. 5, eq. 6, Lemma 1, the overcomplete-ICA remark of section 5.2) and
measures only accuracy (Table 1). This module measures the attacks of
:mod:`privad.rmp.attacks`; ``docs/rmp_privacy.md`` discusses the numbers.

One function per table, each returning a tidy :class:`pandas.DataFrame`, and a ``draw_*``
companion returning a matplotlib figure; nothing writes files except
:func:`reproduce_privacy` (CSV, PNG and a page, atomically, through
:mod:`privad.experiments.report`):

* :func:`map_vs_alpha`, :func:`map_vs_w`: MAP reconstruction error (eq. 5) with the exact
  T̃, with the public T, and with the public T by an attacker who knows α; with and without
  the double logistic; on a Gaussian synthetic set and on Abalone.
* :func:`ica_vs_w`: FastICA on independent non-Gaussian attributes, w from below (n + 1)/2
  to above n.
* :func:`collusion_vs_alpha`: a server colluding with one participant, the prior schemes'
  common T against RMP's T_c = T + Δ_c.
* :func:`known_io_vs_k`: the known input-output attack with k known records of the victim.
* :func:`lemma1_table`: Lemma 1 against 10⁶ draws per (α, d), two-sided binomial test at
  10⁻⁶, with the power check against a wrong formula.

Data (:func:`attack_datasets`; records as columns, every attribute min-max scaled to
[0, 1] as in the paper's section 6):

* ``gaussian``: n = 8 correlated Gaussian attributes, AR(1) correlation ρ^|i−j| with
  ρ = 0.7 (our choice: data where eq. 5's Gaussian prior is right), jointly min-max scaled.
* ``abalone``: UCI Abalone, the 8 numeric attributes (:func:`privad.datasets.load_abalone`),
  min-max scaled, shuffled.

The victim holds ``victim`` records; the attacker holds a disjoint sample of ``known``
records of the same population, from which it estimates its prior (``prior="sample"``);
``prior="oracle"`` uses the victim's own statistics (section 5.1's worst case).

Randomness: every setting draws from its own stream, seeded by CRC-32 of the base seed and
the setting's coordinates, so numbers do not depend on the order settings run in. Within a
repeat the same T and Δ serve every attacker and both data spaces (paired comparisons).

Modules: :mod:`~privad.experiments.rmp_privacy.data` (data sets),
:mod:`~privad.experiments.rmp_privacy.attacks` (the attacks as tables),
:mod:`~privad.experiments.rmp_privacy.figures` (Lemma 1 and the figures) and
:mod:`~privad.experiments.rmp_privacy.reproduction` (settings, the evaluation, the page).
"""

from __future__ import annotations

from privad.experiments.rmp_privacy.attacks import (
    collusion_vs_alpha,
    ica_vs_w,
    known_io_vs_k,
    map_vs_alpha,
    map_vs_w,
)
from privad.experiments.rmp_privacy.data import (
    ATTACKERS,
    PAPER_ALPHAS,
    SCENARIOS,
    AttackData,
    abalone_data,
    attack_datasets,
    gaussian_data,
)
from privad.experiments.rmp_privacy.figures import (
    draw_collusion,
    draw_ica_vs_w,
    draw_known_io,
    draw_lemma1,
    draw_map_vs_alpha,
    draw_map_vs_w,
    lemma1_table,
)
from privad.experiments.rmp_privacy.reproduction import (
    TABLES,
    PrivacySettings,
    privacy_evaluation,
    privacy_settings,
    reproduce_privacy,
)

__all__ = [
    "ATTACKERS",
    "PAPER_ALPHAS",
    "SCENARIOS",
    "TABLES",
    "AttackData",
    "PrivacySettings",
    "abalone_data",
    "attack_datasets",
    "collusion_vs_alpha",
    "draw_collusion",
    "draw_ica_vs_w",
    "draw_known_io",
    "draw_lemma1",
    "draw_map_vs_alpha",
    "draw_map_vs_w",
    "gaussian_data",
    "ica_vs_w",
    "known_io_vs_k",
    "lemma1_table",
    "map_vs_alpha",
    "map_vs_w",
    "privacy_evaluation",
    "privacy_settings",
    "reproduce_privacy",
]
