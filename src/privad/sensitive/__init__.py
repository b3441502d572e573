"""Sensitive privacy for (β, r)-anomaly identification.

Asif, Papakonstantinou, Vaidya, "How to accurately and privately identify anomalies",
CCS 2019. Modules, one per idea:

* :mod:`.anomaly`: (β, r)-anomaly (Definition 2.2), normality, k-sensitive records
  (Definition 3.1), and the counts (x_i, B_x(i, r)) from data.
* :mod:`.mdd`: Δ_G (equation (2), Lemma 4.3), λ_k (equation (3), Lemma 4.5), the compiler's
  δ, and count caps.
* :mod:`.constructions`: Construction 1 (U_λ), Claim 2's error in log space, exact sampling,
  the optimal DP and the SP mechanisms, Theorem 4.6's bound.
* :mod:`.compiler`: Construction 2 (Theorem 4.7) with validity checking.
* :mod:`.mechanisms`: the three mechanisms as objects that carry their guarantee
  (:class:`SPMechanism`, :class:`DPMechanism`, :class:`CompiledSPMechanism`;
  :func:`aiq_mechanism` by name).
* :mod:`.baselines`: B1 and B2 of section 5, threshold chosen by F1.
* :mod:`.accounting`: Claims 3 and 5, per-record loss.
* :mod:`.release`: the one release path (:func:`~.release.release_labels`), the batch
  charge and the record of released answers.
* :mod:`.jobs`: one call per job: :func:`identify` (``privad sp identify``) and
  :func:`choose_parameters` (``privad sp params``).
* :mod:`.estimator`: :class:`SensitiveAnomalyIdentifier` (scikit-learn conventions).
* :mod:`.curator`: :class:`Curator`, the trusted curator answering queriers with
  per-querier budgets charged online (``privad serve sp``).
* :mod:`.domain`: :class:`~privad.sensitive.domain.QueryDomain`, the curator's public
  domain of records and questions, so that no refusal reads the data.
* :mod:`.parameters`: :func:`propose_parameters`, our reconstruction of Appendix A.2.
* :mod:`.selection`: :func:`select_radius`, an ε-DP choice of r (ours).

The package exports what a user needs; everything else is importable from its module.
:class:`SensitiveAnomalyIdentifier` and :class:`Curator` are imported on first use (they
need scikit-learn, which :func:`identify` and ``privad sp identify`` do not).
"""

from typing import Any

from privad.sensitive._common import InvalidCountsError
from privad.sensitive.anomaly import ball_statistics, is_anomaly, is_sensitive
from privad.sensitive.compiler import InvalidMechanismError, compile_mechanism
from privad.sensitive.domain import QueryDomain
from privad.sensitive.jobs import Identification, choose_parameters, identify
from privad.sensitive.mechanisms import (
    AIQMechanism,
    CompiledSPMechanism,
    DPMechanism,
    SPMechanism,
    aiq_mechanism,
)
from privad.sensitive.parameters import propose_parameters
from privad.sensitive.selection import RadiusSelection, select_radius

__all__ = [
    "AIQMechanism",
    "CompiledSPMechanism",
    "Curator",
    "DPMechanism",
    "Identification",
    "InvalidCountsError",
    "InvalidMechanismError",
    "QueryDomain",
    "RadiusSelection",
    "SPMechanism",
    "SensitiveAnomalyIdentifier",
    "aiq_mechanism",
    "ball_statistics",
    "choose_parameters",
    "compile_mechanism",
    "identify",
    "is_anomaly",
    "is_sensitive",
    "propose_parameters",
    "select_radius",
]

_LAZY = {"SensitiveAnomalyIdentifier": "estimator", "Curator": "curator"}


def __getattr__(name: str) -> Any:
    """The estimator and the curator are imported on first use: they need scikit-learn,
    which the command line's ``sp identify`` does not (importing it costs about a second)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
