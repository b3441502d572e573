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
* :mod:`.release`: the one release path (:func:`release_labels`) and the record of
  released answers.
* :mod:`.estimator`: :class:`SensitiveAnomalyIdentifier` (scikit-learn conventions).
* :mod:`.curator`: :class:`Curator`, the trusted curator answering queriers with
  per-querier budgets charged online (``privad serve sp``).
* :mod:`.domain`: :class:`~privad.sensitive.domain.QueryDomain`, the curator's public
  domain of records and questions, so that no refusal reads the data.
* :mod:`.parameters`: :func:`propose_parameters`, our reconstruction of Appendix A.2.
* :mod:`.selection`: :func:`select_radius`, an ε-DP choice of r (ours).
"""

from privad.sensitive._common import InvalidCountsError
from privad.sensitive.accounting import (
    Claim5Bound,
    RecordExposure,
    claim5_bound,
    per_record_privacy_loss,
    record_exposure,
)
from privad.sensitive.anomaly import (
    METRICS,
    BallStatistics,
    anomaly_label,
    ball_statistics,
    is_anomaly,
    is_normal,
    is_sensitive,
)
from privad.sensitive.baselines import (
    ThresholdSelection,
    acceptance_probability,
    baseline_answers,
    baseline_guarantee,
    count_anomalies,
    f1_score,
    select_threshold,
)
from privad.sensitive.compiler import (
    CompiledMechanism,
    InputMechanism,
    InvalidMechanismError,
    ValidityReport,
    check_input_mechanism,
    compile_mechanism,
    compiled_error_probability,
    compiled_log_error_probability,
    validity_bound,
)
from privad.sensitive.constructions import (
    MECHANISMS,
    Construction1,
    error_probability,
    log_error_probability,
    theorem46_bound,
)
from privad.sensitive.estimator import NotFittedError, SensitiveAnomalyIdentifier, auto_count_cap
from privad.sensitive.mdd import compiler_delta, delta_g, lambda_k
from privad.sensitive.mechanisms import (
    AIQMechanism,
    CompiledSPMechanism,
    DPMechanism,
    SPMechanism,
    aiq_mechanism,
    neighbouring_relation,
)
from privad.sensitive.parameters import propose_parameters
from privad.sensitive.release import Release, release_labels
from privad.sensitive.selection import RadiusSelection, select_radius

__all__ = [
    "MECHANISMS",
    "AIQMechanism",
    "METRICS",
    "BallStatistics",
    "Claim5Bound",
    "CompiledMechanism",
    "CompiledSPMechanism",
    "DPMechanism",
    "Construction1",
    "InputMechanism",
    "InvalidCountsError",
    "InvalidMechanismError",
    "NotFittedError",
    "RecordExposure",
    "Release",
    "SPMechanism",
    "SensitiveAnomalyIdentifier",
    "ThresholdSelection",
    "ValidityReport",
    "acceptance_probability",
    "aiq_mechanism",
    "anomaly_label",
    "auto_count_cap",
    "ball_statistics",
    "baseline_answers",
    "baseline_guarantee",
    "check_input_mechanism",
    "claim5_bound",
    "compile_mechanism",
    "compiled_error_probability",
    "compiled_log_error_probability",
    "compiler_delta",
    "count_anomalies",
    "delta_g",
    "error_probability",
    "f1_score",
    "is_anomaly",
    "is_normal",
    "is_sensitive",
    "lambda_k",
    "log_error_probability",
    "neighbouring_relation",
    "per_record_privacy_loss",
    "record_exposure",
    "propose_parameters",
    "RadiusSelection",
    "select_radius",
    "release_labels",
    "select_threshold",
    "theorem46_bound",
    "validity_bound",
]
