"""The tour of ``privad demo``: every scheme once, on embedded data, as data a reader (or
the command line) can show.

:func:`tour` runs the sections in order with one :class:`~privad.noise.Randomness` and one
ledger, and yields each as a :class:`Section`: a table (its title, columns and rows) or a
panel of text, and a note. It reads only embedded data and writes nothing but the ledger it
is given. The curator's section runs a server, so it lives with the services
(:func:`privad.services.curator_tour.curator_section`) and is passed in.

Examples
--------
>>> from privad.experiments.tour import datasets_section
>>> datasets_section().rows[0][:2]
('thyroid', '3772 x 6')
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from privad.accounting import Ledger
from privad.datasets import list_datasets, load
from privad.noise import LaplaceMechanism, Randomness

if TYPE_CHECKING:
    from privad.search import SearchProblem

__all__ = ["Section", "tour"]

# Table 1 of the sensitive-privacy paper gives (β, r) = (18, 0.1) for Thyroid.
THYROID_BETA = 18
THYROID_R = 0.1


@dataclass(frozen=True)
class Section:
    """One part of the tour: a table (``columns``, ``rows``; the columns from ``right`` on
    right-justified) or, without columns, a panel of ``text``; then ``note``, a paragraph.

    Examples
    --------
    >>> Section("a panel", text="some text").columns
    ()
    """

    title: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    right: int | None = None
    text: str = ""
    note: str = ""


def datasets_section() -> Section:
    """The embedded datasets."""
    return Section(
        "Embedded datasets (privad datasets list shows all)",
        ("name", "shape", "anomalies", "licence"),
        tuple(
            (info.name, info.shape_text, info.anomalies_text, info.licence_short)
            for info in list_datasets(kind="embedded")
        ),
    )


def noise_section(ledger: Ledger, rng: Randomness) -> Section:
    """A floating-point-safe noisy count, spent in ``ledger``."""
    data = load("thyroid")
    true_count = float(np.sum(data.y))
    mechanism = LaplaceMechanism(
        sensitivity=1.0, epsilon=0.5, neighbouring="add or remove one record"
    )
    ledger.set_budget("thyroid-counts", "pure-dp", 1.0)
    ledger.spend("thyroid-counts", mechanism.guarantee, "noisy count of labelled anomalies")
    noisy = float(mechanism.release([true_count], rng)[0])
    return Section(
        "privad.noise: a floating-point-safe noisy count",
        text=f"Thyroid has {int(true_count)} labelled anomalies; the ε = 0.5 Laplace mechanism "
        f"releases {noisy:.4f}\n(scale {mechanism.scale:.6g}, outputs on a 2^k grid of step "
        f"{mechanism.grid:.3g}: snapped, exact discrete noise, safe against Mironov's attack)",
    )


def sensitive_section(ledger: Ledger, rng: Randomness) -> Section:
    """Sensitive privacy against optimal DP on Thyroid, both answered through ``ledger``."""
    from privad.sensitive import SensitiveAnomalyIdentifier

    data = load("thyroid")
    epsilon = 0.1
    rows = []
    mean_error = {}
    for mechanism in ("dp", "sp"):
        model = SensitiveAnomalyIdentifier(
            beta=THYROID_BETA, r=THYROID_R, epsilon=epsilon, k=1, mechanism=mechanism, rng=rng
        ).fit(data.X)
        truth = model.true_labels()
        notion = model.mechanism_.notion
        guarantee = model.guarantee()
        # ε-DP implies sensitive privacy: the dp run already counts against the sensitive
        # total, so each budget is what was spent under it plus this run
        ledger.set_budget("thyroid", notion, ledger.spent("thyroid", notion) + guarantee.epsilon)
        labels = model.predict(ledger=ledger, scope="thyroid")
        errors = model.error_probability()
        mean_error[mechanism] = errors[truth == 1].mean()
        rows.append(
            (
                "SP, U_λk (k = 1)" if mechanism == "sp" else "optimal DP, U_ΔG",
                guarantee.summary(),
                f"{int(np.sum(labels[truth == 1]))} of {int(truth.sum())}",
                str(int(np.sum(labels[truth == 0]))),
                f"{errors[truth == 1].mean():.3g}",
                f"{errors[truth == 0].mean():.3g}",
            )
        )
    return Section(
        f"privad.sensitive on Thyroid ({data.X.shape[0]} records): "
        f"(β, r) = ({THYROID_BETA}, {THYROID_R}), ε = {epsilon} per answer",
        (
            "mechanism",
            "guarantee (whole batch)",
            "anomalies flagged",
            "false alarms",
            "error: anomalies",
            "error: normal",
        ),
        tuple(rows),
        right=2,
        note=f"On the (β,r)-anomalies SP errs with mean probability {mean_error['sp']:.3f}, "
        f"DP with {mean_error['dp']:.3f} (its floor 1/(1+e^ε) = {1 / (1 + np.exp(epsilon)):.3f}); "
        "on normal records the two are identical, and every 1-sensitive record keeps the "
        "ε-DP-style protection. Labelling every record costs m·ε (Claim 5: m queried records "
        "can share one ball). Error probabilities are exact and shown for evaluation only. "
        "Both runs answered the same records, and ε-DP implies sensitive privacy, so the "
        f"ledger holds {ledger.spent('thyroid', 'sensitive'):g} against the sensitive total.",
    )


def relaxed_section(rng: Randomness) -> Section:
    """Sensor readings perturbed at the source, outliers found and corrected."""
    from privad.datasets import make_sensor_ring
    from privad.relaxed import run_pipeline

    ring = make_sensor_ring(20_000, separation=220.0, rng=rng)
    rows = []
    for epsilon in (0.5, 1.0):
        result = run_pipeline(ring.X, epsilon=epsilon, p_o=10, rng=rng).summary()
        rows.append(
            (
                f"{epsilon:g}",
                f"{result['baseline_accuracy']:.1%}",
                f"{result['baseline_subset_size']:.1%}",
                f"{result['accuracy']:.1%}",
                f"{result['subset_size']:.1%}",
            )
        )
    return Section(
        "privad.relaxed: 20,000 sensor readings perturbed at the source (ring, separation "
        "220); outliers found by DBSCAN on the noisy data, then corrected",
        (
            "ε",
            "outliers found, uncorrected",
            "share flagged",
            "outliers found, corrected",
            "share flagged (corrected)",
        ),
        tuple(rows),
        right=0,
        note="The analyst never sees a raw reading; the correction server sees only "
        "distance differences. Services: privad serve analyst|correction.",
    )


SEARCH_SERIES = "nab:ec2_request_latency_system_failure"
SEARCH_HOPELESS = "nab:ambient_temperature_system_failure"
SEARCH_EPSILON = 1.0
SEARCH_BUDGET = 300.0
SEARCH_ALPHA = 0.9
SEARCH_DELTA = 0.1


def _search_plan(problem: SearchProblem) -> tuple[float, bool]:
    """Eq. (26)'s bound on the expected number of queries at the binarized oracle's error
    probability (eq. 24), and whether b = SEARCH_BUDGET covers it at SEARCH_EPSILON."""
    from privad.search import binarized_error_probability, expected_queries_bound

    p = binarized_error_probability(SEARCH_EPSILON, problem.threshold_ratio)
    bound = expected_queries_bound(problem.n_items, p, SEARCH_DELTA)
    return bound, bound * SEARCH_EPSILON <= SEARCH_BUDGET


def search_section(rng: Randomness) -> Section:
    """Plan a noisy binary search on two NAB series, then run the one the budget covers."""
    from privad.accounting import ANOMALY_RESTRICTED_DP
    from privad.experiments.search_problems import problem_from_series
    from privad.search import PosteriorThreshold, search

    lines = [
        f"Each series is reduced to its largest labelled anomaly and its unlabelled points "
        f"(section 6.1), thresholds from the labels (not private: a deployment gives them). "
        f"Plan before spending: eq. (26) bounds the expected number of queries (δ = "
        f"{SEARCH_DELTA:g}, error probability p of eq. 24); the search runs only if that "
        f"bound times ε = {SEARCH_EPSILON:g} fits the budget b = {SEARCH_BUDGET:g}."
    ]
    hopeless = problem_from_series(load(SEARCH_HOPELESS))
    bound, ok = _search_plan(hopeless)
    lines.append(
        f"{SEARCH_HOPELESS}: threshold ratio {hopeless.threshold_ratio:.3f}, about {bound:,.0f} "
        f"queries expected: {'within' if ok else 'far beyond'} b, so "
        f"{'it would run' if ok else 'not searched, nothing spent'}."
    )
    problem = problem_from_series(load(SEARCH_SERIES))
    bound, ok = _search_plan(problem)
    if ok:
        oracle_rng, search_rng = rng.spawn(2)  # the data holder's noise, the searcher's σ
        oracle = problem.oracle("laplace", SEARCH_EPSILON, rng=oracle_rng, budget=SEARCH_BUDGET)
        result = search(
            oracle, budget=SEARCH_BUDGET, halting=PosteriorThreshold(SEARCH_ALPHA), rng=search_rng
        )
        found = problem.anomaly_index in set(np.asarray(result.top).tolist())
        lines.append(
            f"{SEARCH_SERIES}: {problem.n_items} values after the reduction, threshold ratio "
            f"{problem.threshold_ratio:.3f}, at most {bound:.0f} queries expected. The "
            f"searcher asked {result.n_queries} noisy group queries (Laplace max oracle, "
            f"τ = 1(max f > {SEARCH_ALPHA:g})) and the anomaly is "
            f"{'in' if found else 'NOT in'} its top {len(result.top)}. Total privacy cost, "
            f"as the oracle's ledger recorded it: ε = "
            f"{oracle.ledger.spent(oracle.scope, ANOMALY_RESTRICTED_DP):g} "
            f"({result.n_queries} answers at ε = {SEARCH_EPSILON:g}; anomaly-restricted DP "
            f"for every other value, the anomaly itself unprotected)."
        )
    else:  # pragma: no cover - the embedded series fits the budget
        lines.append(f"{SEARCH_SERIES}: about {bound:,.0f} queries expected; not searched.")
    return Section("privad.search: DP noisy binary search", text="\n".join(lines))


def rmp_section(ledger: Ledger, rng: Randomness) -> Section:
    """AANN on raw records against RMP on Abalone; RMP's guarantee recorded in ``ledger``."""
    from sklearn.metrics import roc_auc_score

    from privad.datasets import inject_uniform_anomalies, load_abalone
    from privad.rmp import AANNDetector, RMPDetector

    data = inject_uniform_anomalies(load_abalone(), 0.05, n_first=300, rng=rng)
    detectors = [("raw records (no privacy)", AANNDetector(epochs=100, random_state=rng))]
    detectors += [
        (f"RMP, α = {alpha:g}", RMPDetector(alpha=alpha, epochs=100, random_state=rng))
        for alpha in (0.01, 0.2)
    ]
    rows = []
    for name, detector in detectors:
        detector.fit(data.X)
        labels = detector.predict(data.X)
        rows.append(
            (
                name,
                f"{roc_auc_score(data.y, detector.decision_function(data.X)):.3f}",
                f"{int(labels[data.y == 1].sum())} of {int(data.y.sum())}",
                str(int(labels[data.y == 0].sum())),
            )
        )
        if isinstance(detector, RMPDetector):
            ledger.spend("abalone-rmp", detector.guarantee, f"perturbed records ({name})")
    return Section(
        f"privad.rmp on Abalone ({data.X.shape[0]} records, 5% U(0,1) anomalies): AANN on "
        "raw records vs. RMP, participants of 30 records each with a private T_i",
        ("data the server sees", "AUC", "flagged anomalies", "false alarms"),
        tuple(rows),
        right=0,
        note="The server trains on Z_i = T_i · dlog(X_i) only (w = n − 1 = 7); end-users "
        "score their own records with the public T. RMP spends no ε and is not "
        "differential privacy; privad measures how well it resists reconstruction "
        "(docs/rmp_privacy.md: at w = n − 1 a MAP attacker who knows α recovers "
        "most values within ±0.05).",
    )


def tour(
    ledger: Ledger,
    rng: Randomness,
    curator: Callable[[Randomness], Section] | None = None,
) -> Iterator[Section]:
    """The tour's sections in order, each computed when it is reached; ``curator`` (the
    section that asks a curator server, :func:`privad.services.curator_tour.curator_section`)
    runs after the sensitive one with the same ``rng``.

    Examples
    --------
    >>> from privad.accounting import Ledger
    >>> from privad.noise import Randomness
    >>> with Ledger(":memory:") as ledger:
    ...     sections = tour(ledger, Randomness(0))
    ...     print(next(sections).title)
    ...     print(next(sections).title)
    Embedded datasets (privad datasets list shows all)
    privad.noise: a floating-point-safe noisy count
    """
    yield datasets_section()
    yield noise_section(ledger, rng)
    yield sensitive_section(ledger, rng)
    if curator is not None:
        yield curator(rng)
    yield relaxed_section(rng)
    yield search_section(rng)
    yield rmp_section(ledger, rng)
