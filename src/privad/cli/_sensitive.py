"""The options of a sensitively private mechanism (``--beta --r --epsilon --k --mechanism
--metric --count-cap``), declared once for ``privad sp`` and ``privad serve sp``."""

from __future__ import annotations

from typing import Any

import typer

from privad.cli._options import parse_choice, parse_float, parse_int

MECHANISM_CHOICES = ("sp", "dp", "compiled")
METRIC_CHOICES = ("euclidean", "manhattan", "chebyshev")
METRIC_HELP = "Distance between records: euclidean (default), manhattan or chebyshev."


BETA_OPTION: Any = typer.Option(
    None,
    "--beta",
    metavar="B",
    help="Required. β of the (β, r)-anomaly: an integer >= 1. A record is an anomaly when "
    "at most β records (itself and its duplicates included) lie within distance r.",
)

R_OPTION: Any = typer.Option(
    None,
    "--r",
    metavar="R",
    help="Required. The radius r: a finite number >= 0, in the units of the features "
    "(balls are closed: distance <= r).",
)

EPSILON_OPTION: Any = typer.Option(
    None,
    "--epsilon",
    metavar="E",
    help="Required. ε of each answer: a finite number > 0 (smaller = more private; the "
    "paper uses 0.01 to 1). The batch costs min(n, m)·ε (Claim 5).",
)

K_OPTION: Any = typer.Option(
    "1",
    "--k",
    metavar="K",
    help="k of the k-sensitive neighbourhood graph: an integer >= 1 (default 1). Records "
    "that are normal, or would be after adding/removing k records, are protected; "
    "k >= β + 1 protects everyone (then sp = dp). Ignored by --mechanism dp.",
)

MECHANISM_OPTION: Any = typer.Option(
    "sp",
    "--mechanism",
    metavar="M",
    help="sp (default): U_λk, (ε, k)-sensitively private (Theorem 4.6); dp: the optimal "
    "ε-DP mechanism U_ΔG (Theorem 4.4); compiled: Construction 2 on the ε/2-DP mechanism, "
    "(ε, k)-SP (Theorem 4.7).",
)

METRIC_OPTION: Any = typer.Option("euclidean", "--metric", metavar="METRIC", help=METRIC_HELP)

COUNT_CAP_OPTION: Any = typer.Option(
    "none",
    "--count-cap",
    metavar="C",
    help="none (default): exact ball counts. auto, or an integer >= β + 2: stop counting "
    "at C (faster on dense data; same guarantee; records with at least C neighbours get "
    "error e^(-ε(C-β-1))/(1+e^ε) instead of a smaller one; auto makes that <= 1e-30).",
)


def parse_mechanism(
    beta: str | None,
    r: str | None,
    epsilon: str | None,
    k: str,
    mechanism: str,
    metric: str,
    count_cap: str,
) -> Any:
    """The mechanism object of the options ``--beta --r --epsilon --k --mechanism --metric
    --count-cap`` (one-line ParameterError on a mistake)."""
    from privad.sensitive import aiq_mechanism, auto_count_cap

    beta_v = parse_int(beta, "--beta", minimum=1, what="an integer >= 1 (e.g. --beta 18)")
    eps_v = parse_float(
        epsilon, "--epsilon", strict=True, what="a finite number > 0 (e.g. --epsilon 0.1)"
    )
    mech = parse_choice(mechanism, "--mechanism", MECHANISM_CHOICES)
    cap_text = count_cap.strip().lower()
    if cap_text == "none":
        cap: int | None = None
    elif cap_text == "auto":
        cap = auto_count_cap(beta_v, eps_v, mechanism=mech)
    else:
        cap = parse_int(
            count_cap,
            "--count-cap",
            minimum=beta_v + 2,
            what=f"none, auto or an integer >= β + 2 = {beta_v + 2}",
        )
    return aiq_mechanism(
        mech,
        beta=beta_v,
        epsilon=eps_v,
        count_cap=cap,
        r=parse_float(r, "--r", strict=False, what="a finite number >= 0 (e.g. --r 0.1)"),
        k=parse_int(k, "--k", minimum=1, what="an integer >= 1"),
        metric=parse_choice(metric, "--metric", METRIC_CHOICES),
    )
