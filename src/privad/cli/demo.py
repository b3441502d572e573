"""``privad demo``: a tour of what privad does, on embedded data (no files needed).

Each scheme adds one section; a section only reads embedded data and writes nothing but
an in-memory ledger (or the one named with ``--ledger``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np
import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from privad.accounting import Ledger
from privad.cli._options import check_output_path
from privad.datasets import list_datasets, load
from privad.noise import LaplaceMechanism, Randomness

if TYPE_CHECKING:
    from privad.search import SearchProblem

# Table 1 of the sensitive-privacy paper gives (β, r) = (18, 0.1) for Thyroid.
THYROID_BETA = 18
THYROID_R = 0.1


def _datasets_section(console: Console) -> None:
    table = Table(title="Embedded datasets (privad datasets list shows all)")
    for column in ("name", "shape", "anomalies", "licence"):
        table.add_column(column)
    for info in list_datasets(kind="embedded"):
        table.add_row(info.name, info.shape_text, info.anomalies_text, info.licence_short)
    console.print(table)


def _noise_section(console: Console, ledger: Ledger, rng: Randomness) -> None:
    data = load("thyroid")
    true_count = float(np.sum(data.y))
    mechanism = LaplaceMechanism(
        sensitivity=1.0, epsilon=0.5, neighbouring="add or remove one record"
    )
    ledger.set_budget("thyroid-counts", "pure-dp", 1.0)
    ledger.spend("thyroid-counts", mechanism.guarantee, "noisy count of labelled anomalies")
    noisy = float(mechanism.release([true_count], rng)[0])
    console.print(
        Panel.fit(
            f"Thyroid has {int(true_count)} labelled anomalies; the ε = 0.5 Laplace mechanism "
            f"releases {noisy:.4f}\n(scale {mechanism.scale:.6g}, outputs on a 2^k grid of step "
            f"{mechanism.grid:.3g}: snapped, exact discrete noise, safe against Mironov's attack)",
            title="privad.noise: a floating-point-safe noisy count",
        )
    )


def _sensitive_section(console: Console, ledger: Ledger, rng: Randomness) -> None:
    from privad.sensitive import SensitiveAnomalyIdentifier

    data = load("thyroid")
    epsilon = 0.1
    table = Table(
        title=(
            f"privad.sensitive on Thyroid ({data.X.shape[0]} records): "
            f"(β, r) = ({THYROID_BETA}, {THYROID_R}), ε = {epsilon} per answer"
        )
    )
    table.add_column("mechanism")
    table.add_column("guarantee (whole batch)")
    for column in ("anomalies flagged", "false alarms", "error: anomalies", "error: normal"):
        table.add_column(column, justify="right")
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
        table.add_row(
            "SP, U_λk (k = 1)" if mechanism == "sp" else "optimal DP, U_ΔG",
            guarantee.summary(),
            f"{int(np.sum(labels[truth == 1]))} of {int(truth.sum())}",
            str(int(np.sum(labels[truth == 0]))),
            f"{errors[truth == 1].mean():.3g}",
            f"{errors[truth == 0].mean():.3g}",
        )
    console.print(table)
    console.print(
        f"On the (β,r)-anomalies SP errs with mean probability {mean_error['sp']:.3f}, "
        f"DP with {mean_error['dp']:.3f} (its floor 1/(1+e^ε) = {1 / (1 + np.exp(epsilon)):.3f}); "
        "on normal records the two are identical, and every 1-sensitive record keeps the "
        "ε-DP-style protection. Labelling every record costs m·ε (Claim 5: m queried records "
        "can share one ball). Error probabilities are exact and shown for evaluation only. "
        "Both runs answered the same records, and ε-DP implies sensitive privacy, so the "
        f"ledger holds {ledger.spent('thyroid', 'sensitive'):g} against the sensitive total."
    )


def _curator_section(console: Console, rng: Randomness) -> None:
    """A querier asks the curator (privad serve sp) about a few Thyroid records, over HTTP."""
    import tempfile

    from privad.geometry.warmup import compile_kernels
    from privad.sensitive import SPMechanism
    from privad.services.app import ThreadedServer
    from privad.services.auth import TokenRegistry
    from privad.services.clients import CuratorClient
    from privad.services.curator import create_curator_app

    compile_kernels()  # before the curator starts: its first request must not compile
    data = load("thyroid")
    secret = "demo-querier-" + "0123456789abcdef"
    with tempfile.TemporaryDirectory() as tmp:
        app = create_curator_app(
            data.X,
            SPMechanism(THYROID_BETA, THYROID_R, 0.1),
            db=Path(tmp) / "c.sqlite",
            ledger=Path(tmp) / "l.sqlite",
            tokens=TokenRegistry([("analyst", secret)]),
            budget=1.0,
            rng=rng,
        )
        ids = [int(i) for i in np.flatnonzero(data.y == 1)[:3]] + [0, 1]
        with ThreadedServer(app) as srv, CuratorClient(srv.url, secret, timeout=600.0) as client:
            first = client.ask_ids(ids)
            again = client.ask_ids(ids)
            far = client.ask_records(data.X[:2] + 0.5)
    table = Table(title=f"privad serve sp: a querier asks the curator over HTTP ({srv.url})")
    for column in ("request", "answers (1 = anomaly, noisy)", "charged ε", "remaining"):
        table.add_column(column)
    for what, reply in (
        (f"ids {ids}", first),
        ("the same ids again", again),
        ("2 feature vectors (far apart)", far),
    ):
        table.add_row(
            what,
            str(reply["answers"]),
            f"{reply['charged']:g}",
            f"{reply['budget']['remaining']:g}",
        )
    console.print(table)
    console.print(
        "The querier sees noisy bits and its own budget, nothing else. Ids cost ε each, "
        "whatever the data; vectors are charged online by Claim 5 (m·ε for the whole set); "
        "a repeated question gets its recorded answer for free (docs/sensitive.md)."
    )


def _relaxed_section(console: Console, rng: Randomness) -> None:
    from privad.datasets import make_sensor_ring
    from privad.relaxed import run_pipeline

    ring = make_sensor_ring(20_000, separation=220.0, rng=rng)
    table = Table(
        title=(
            "privad.relaxed: 20,000 sensor readings perturbed at the source (ring, separation "
            "220); outliers found by DBSCAN on the noisy data, then corrected"
        )
    )
    for column in (
        "ε",
        "outliers found, uncorrected",
        "share flagged",
        "outliers found, corrected",
        "share flagged (corrected)",
    ):
        table.add_column(column, justify="right")
    for epsilon in (0.5, 1.0):
        result = run_pipeline(ring.X, epsilon=epsilon, p_o=10, rng=rng).summary()
        table.add_row(
            f"{epsilon:g}",
            f"{result['baseline_accuracy']:.1%}",
            f"{result['baseline_subset_size']:.1%}",
            f"{result['accuracy']:.1%}",
            f"{result['subset_size']:.1%}",
        )
    console.print(table)
    console.print(
        "The analyst never sees a raw reading; the correction server sees only "
        "distance differences. Services: privad serve analyst|correction."
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


def _search_section(console: Console, rng: Randomness) -> None:
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
    console.print(Panel.fit("\n".join(lines), title="privad.search: DP noisy binary search"))


def _rmp_section(console: Console, ledger: Ledger, rng: Randomness) -> None:
    from sklearn.metrics import roc_auc_score

    from privad.datasets import inject_uniform_anomalies, load_abalone
    from privad.rmp import AANNDetector, RMPDetector

    data = inject_uniform_anomalies(load_abalone(), 0.05, n_first=300, rng=rng)
    table = Table(
        title=(
            f"privad.rmp on Abalone ({data.X.shape[0]} records, 5% U(0,1) anomalies): AANN on "
            "raw records vs. RMP, participants of 30 records each with a private T_i"
        )
    )
    for column in ("data the server sees", "AUC", "flagged anomalies", "false alarms"):
        table.add_column(column, justify="right")
    detectors = [("raw records (no privacy)", AANNDetector(epochs=100, random_state=rng))]
    detectors += [
        (f"RMP, α = {alpha:g}", RMPDetector(alpha=alpha, epochs=100, random_state=rng))
        for alpha in (0.01, 0.2)
    ]
    for name, detector in detectors:
        detector.fit(data.X)
        labels = detector.predict(data.X)
        table.add_row(
            name,
            f"{roc_auc_score(data.y, detector.decision_function(data.X)):.3f}",
            f"{int(labels[data.y == 1].sum())} of {int(data.y.sum())}",
            str(int(labels[data.y == 0].sum())),
        )
        if isinstance(detector, RMPDetector):
            ledger.spend("abalone-rmp", detector.guarantee, f"perturbed records ({name})")
    console.print(table)
    console.print(
        "The server trains on Z_i = T_i · dlog(X_i) only (w = n − 1 = 7); end-users "
        "score their own records with the public T. RMP spends no ε and is not "
        "differential privacy; privad measures how well it resists reconstruction "
        "(docs/rmp_privacy.md: at w = n − 1 a MAP attacker who knows α recovers "
        "most values within ±0.05)."
    )


def demo(
    seed: Annotated[
        int, typer.Option(help="Seed for the randomness, so the tour is repeatable.")
    ] = 0,
    ledger_path: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            help="SQLite ledger to record the tour's spends in (default: an in-memory "
            "ledger, so the tour leaves no file behind).",
        ),
    ] = None,
) -> None:
    """Run a short tour of privad on the embedded datasets (no files needed)."""
    console = Console()
    rng = Randomness(seed)
    if ledger_path is not None:
        check_output_path(ledger_path, "--ledger", "store")
    ledger = Ledger(":memory:" if ledger_path is None else ledger_path)
    console.rule("privad demo: find the anomalies, keep everyone else private")
    _datasets_section(console)
    _noise_section(console, ledger, rng)
    _sensitive_section(console, ledger, rng)
    _curator_section(console, rng)
    _relaxed_section(console, rng)
    _search_section(console, rng)
    _rmp_section(console, ledger, rng)
    console.rule("privad.accounting: what was spent on what")
    console.print(ledger.statement())


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
