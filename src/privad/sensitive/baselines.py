"""Baselines B1 and B2 (end of section 5 of the paper), with the threshold chosen by F1.

For ε, a threshold t ∈ [0, 1], a record i and a database x, the paper defines

    B1_t(x) = 1  iff  O(x) + Lap(1/ε) > t·(||x||_1 + Lap(1/ε)),
    B2_t(x) = 1  iff  O(x) + Lap(β/ε) > t·(||x||_1 + Lap(1/ε)),

where O(x) is the number of (β, r)-anomalies in x (records counted with multiplicity) and
the Laplace draws are independent (fresh for every query). The answer does not depend on i:
these are data-independent coin flips whose bias depends on the share of anomalies, which is
why B1 has recall ≈ 1 and precision ≈ the anomaly share in Table 3. "B1" and "B2" in Table 3
are the members of each family with the highest F1, i.e. t is selected *non-privately* with
the true labels, as in the paper; :func:`select_threshold` does that on sampled answers.

Privacy, as the paper states it: B1 is ε1-DP with ε1 ≥ βε and B2 is ε2-DP with ε2 ≥ ε,
"due to the fact that max_{||x−y||_1=1} |O(x) − O(y)| = β". Two remarks (ours):
the query also releases ||x||_1 + Lap(1/ε), which costs another ε, so a per-query bound under
the paper's sensitivity is (β + 1)ε for B1 and 2ε for B2; and the sensitivity of O is not
β in general — on a line with β copies at −0.9 and β at +0.9 and r = 1, adding one record at
0 turns 2β anomalies normal. :func:`baseline_guarantee` therefore takes the sensitivity of
O as a parameter (default β, the paper's value) and says so in its description.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.accounting import Guarantee
from privad.sensitive._common import check_beta, check_eps
from privad.validation import check_choice, check_int, check_nonnegative, check_positive

__all__ = [
    "FAMILIES",
    "ThresholdSelection",
    "acceptance_probability",
    "baseline_answers",
    "baseline_guarantee",
    "baseline_scales",
    "count_anomalies",
    "f1_score",
    "select_threshold",
]

FAMILIES: tuple[str, ...] = ("B1", "B2")


def baseline_scales(family: str, *, epsilon: float, beta: int) -> tuple[float, float]:
    """Laplace scales (on O(x), on ||x||_1): (1/ε, 1/ε) for B1, (β/ε, 1/ε) for B2."""
    family = check_choice(family, "family", FAMILIES)
    epsilon = check_eps(epsilon)
    beta = check_beta(beta)
    s1 = (1.0 if family == "B1" else float(beta)) / epsilon
    return s1, 1.0 / epsilon


def count_anomalies(
    data: Any, r: float, *, beta: int, metric: str = "euclidean", engine: str = "auto"
) -> int:
    """O(x): the number of records of ``data`` (with multiplicity) that are (β, r)-anomalies."""
    from privad import geometry

    beta = check_beta(beta)
    ball = geometry.ball_counts(data, r, metric=metric, cap=beta + 1, engine=engine)
    return int(np.count_nonzero(np.asarray(ball) <= beta))


def _laplace_sum_survival(c: np.ndarray, a: float, b: float) -> np.ndarray:
    """P(L_a + L_b > c) for independent Laplace(0, a), Laplace(0, b); a > 0, b ≥ 0."""
    c = np.asarray(c, dtype=np.float64)
    x = np.abs(c)
    if b == 0.0:
        tail = 0.5 * np.exp(-x / a)
    elif abs(a - b) <= 1e-7 * max(a, b):
        s = 0.5 * (a + b)
        tail = 0.5 * np.exp(-x / s) * (1.0 + x / (2.0 * s))
    else:
        tail = (a * a * np.exp(-x / a) - b * b * np.exp(-x / b)) / (2.0 * (a * a - b * b))
    return np.where(c >= 0, tail, 1.0 - tail)


def acceptance_probability(
    n_anomalies: int, n_records: int, *, t: Any, epsilon: float, beta: int, family: str
) -> Any:
    """Exact P(B_t(x) = 1) = P(Lap(s1) − t·Lap(s2) > t·n − O) (closed form, vectorised in t).

    The difference of independent centred Laplace variables with scales s1 and t·s2 has the
    survival function (s1²e^{−c/s1} − (ts2)²e^{−c/(ts2)})/(2(s1² − (ts2)²)) for c ≥ 0 (and the
    symmetric one for c < 0; the equal-scale limit is ½e^{−c/s}(1 + c/(2s))).
    """
    n_anomalies = check_int(n_anomalies, "n_anomalies", minimum=0)
    n_records = check_int(n_records, "n_records", minimum=0)
    s1, s2 = baseline_scales(family, epsilon=epsilon, beta=beta)
    t_arr = np.asarray(t, dtype=np.float64)
    if t_arr.size and ((t_arr < 0).any() or (t_arr > 1).any() or np.isnan(t_arr).any()):
        raise ValueError("t must lie in [0, 1]")
    flat = t_arr.ravel()
    out = np.array(
        [_laplace_sum_survival(tt * n_records - n_anomalies, s1, tt * s2) for tt in flat],
        dtype=np.float64,
    ).reshape(t_arr.shape)
    return out.item() if out.ndim == 0 else out


def baseline_answers(
    n_anomalies: int,
    n_records: int,
    *,
    t: float,
    epsilon: float,
    beta: int,
    family: str,
    n_queries: int,
    rng: Any = None,
) -> np.ndarray:
    """Sampled answers of B1_t / B2_t for ``n_queries`` queries (int64 0/1), fresh noise each.

    The Laplace draws use :func:`privad.noise.laplace` (floating-point-safe: snapped to a
    fine grid, exact discrete Laplace), whose ε accounting is marginally above Δ/scale; see
    :func:`privad.noise.laplace_epsilon_for`.
    """
    from privad import noise

    s1, s2 = baseline_scales(family, epsilon=epsilon, beta=beta)
    t = check_nonnegative(t, "t")
    n_queries = check_int(n_queries, "n_queries", minimum=0)
    rng = noise.as_randomness(rng)
    noisy_o = noise.laplace(np.full(n_queries, float(n_anomalies)), s1, rng)
    noisy_n = noise.laplace(np.full(n_queries, float(n_records)), s2, rng)
    return (np.asarray(noisy_o) > t * np.asarray(noisy_n)).astype(np.int64)


def f1_score(y_true: Any, y_pred: Any) -> tuple[float, float, float]:
    """(precision, recall, F1) for 0/1 labels, 1 = anomaly; 0.0 where undefined."""
    y_true = np.asarray(y_true).astype(bool)
    y_pred = np.asarray(y_pred).astype(bool)
    tp = int(np.count_nonzero(y_true & y_pred))
    fp = int(np.count_nonzero(~y_true & y_pred))
    fn = int(np.count_nonzero(y_true & ~y_pred))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


@dataclass(frozen=True)
class ThresholdSelection:
    """The best member of a baseline family on one evaluation set.

    Attributes: ``family``; ``t`` (selected threshold); ``precision``, ``recall``, ``f1`` of
    its sampled answers; ``answers`` (the sampled 0/1 answers for the selected t);
    ``thresholds`` and ``f1_curve`` (F1 of every threshold tried).
    """

    family: str
    t: float
    precision: float
    recall: float
    f1: float
    answers: np.ndarray
    thresholds: np.ndarray
    f1_curve: np.ndarray


def select_threshold(
    y_true: Any,
    n_anomalies: int,
    n_records: int,
    *,
    epsilon: float,
    beta: int,
    family: str,
    thresholds: Any = None,
    rng: Any = None,
) -> ThresholdSelection:
    """Pick t by the F1 of sampled answers against ``y_true``, as in Table 3 (non-private).

    ``y_true`` are the evaluation labels (one per query); every threshold in ``thresholds``
    (default 0, 0.01, ..., 1) gets its own fresh answers, and the t with the highest F1 wins
    (ties: the smallest t). In expectation the F1 of these data-independent answers increases
    with P(answer = 1), so the best t is usually near 0; the empirical choice reproduces the
    paper's procedure including its sampling noise.
    """
    y = np.asarray(y_true).astype(bool).ravel()
    ts = np.linspace(0.0, 1.0, 101) if thresholds is None else np.asarray(thresholds, float)
    if ts.ndim != 1 or ts.size == 0:
        raise ValueError("thresholds must be a non-empty 1-D sequence")
    from privad import noise

    rng = noise.as_randomness(rng)
    best: tuple[float, float, float, float, np.ndarray] | None = None
    curve = np.empty(ts.size)
    for n, t in enumerate(ts):
        ans = baseline_answers(
            n_anomalies,
            n_records,
            t=float(t),
            epsilon=epsilon,
            beta=beta,
            family=family,
            n_queries=y.size,
            rng=rng,
        )
        p, rcl, f1 = f1_score(y, ans)
        curve[n] = f1
        if best is None or f1 > best[3]:
            best = (float(t), p, rcl, f1, ans)
    assert best is not None
    return ThresholdSelection(family, best[0], best[1], best[2], best[3], best[4], ts, curve)


def baseline_guarantee(
    family: str,
    *,
    epsilon: float,
    beta: int,
    sensitivity: float | None = None,
) -> Guarantee:
    """ε-DP guarantee of one B1/B2 answer under an assumed global sensitivity of O(x).

    With sensitivity Δ (default β, the paper's claim) the answer is (Δ/s1 + 1/s2)-DP: the
    Laplace mechanism on O(x) plus the one on ||x||_1 (sensitivity 1). That is (β + 1)ε for
    B1 and 2ε for B2 at Δ = β. See the module docstring: Δ = β does not hold for every
    metric space, so this is a statement conditional on Δ.
    """
    beta = check_beta(beta)
    s1, s2 = baseline_scales(family, epsilon=epsilon, beta=beta)
    delta = float(beta) if sensitivity is None else check_positive(sensitivity, "sensitivity")
    eps = delta / s1 + 1.0 / s2
    if not math.isfinite(eps):
        raise ValueError("non-finite epsilon")
    return Guarantee(
        "pure-dp",
        eps,
        "add or remove one record",
        description=(
            f"baseline {family} (section 5): Laplace on O(x) (assumed sensitivity {delta:g}"
            f"{' = β, as the paper states' if sensitivity is None else ''}) and on ||x||_1"
        ),
    )
