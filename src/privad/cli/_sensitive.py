"""The options of a sensitively private mechanism (``--beta --r --epsilon --k --mechanism
--metric --count-cap``), declared once for ``privad sp`` and ``privad serve sp``."""

from __future__ import annotations

from typing import Any

from privad.cli._options import Choice, Integer, Number, TextType, parse_int
from privad.errors import PrivadError

MECHANISM_CHOICES = ("sp", "dp", "compiled")
METRIC_CHOICES = ("euclidean", "manhattan", "chebyshev")
METRIC_HELP = "Distance between records: euclidean (default), manhattan or chebyshev."


class _WordOr(TextType):
    """One of ``words`` (case-insensitive) or a value of ``other``; anything else is "OPTION
    must be WHAT" (``--count-cap``: none, auto or an integer >= 1, checked against β + 2
    with β; ``--r`` of ``privad sp identify``: a finite number >= 0, or private)."""

    def __init__(self, name: str, words: tuple[str, ...], other: TextType, what: str) -> None:
        self.name, self.words, self.other, self.what = name, words, other, what

    def value(self, text: str, option: str) -> Any:
        word = text.strip().lower()
        if word in self.words:
            return word
        try:
            return self.other.parse(word, option)
        except PrivadError:
            raise ValueError(text) from None


def beta_option(help: str) -> Any:
    """``--beta B`` (required): β of the (β, r)-anomaly."""
    return BETA.option(..., "--beta", "B", help)


def r_option(help: str) -> Any:
    """``--r R`` (required): the radius r."""
    return R.option(..., "--r", "R", help)


def epsilon_option(help: str) -> Any:
    """``--epsilon E`` (required): ε of each answer."""
    return EPSILON.option(..., "--epsilon", "E", help)


BETA = Integer("an integer >= 1 (e.g. --beta 18)", minimum=1)
R = Number("a finite number >= 0 (e.g. --r 0.1)")
EPSILON = Number("a finite number > 0 (e.g. --epsilon 0.1)", strict=True)
BETA_OPTION: Any = beta_option(
    "Required. β of the (β, r)-anomaly: an integer >= 1. A record is an anomaly when "
    "at most β records (itself and its duplicates included) lie within distance r."
)
EPSILON_OPTION: Any = epsilon_option(
    "Required. ε of each answer: a finite number > 0 (smaller = more private; the "
    "paper uses 0.01 to 1). The batch costs min(n, m)·ε (Claim 5)."
)

R_OR_PRIVATE_OPTION: Any = _WordOr(
    "radius", ("private",), R, "a finite number >= 0 or private"
).option(
    ...,
    "--r",
    "R",
    "Required. The radius r: a finite number >= 0 in the units of the features (given: "
    "the statement says so), or private: chosen by an ε-DP selection for --contamination, "
    "charged to the ledger as its own spend before the labels (features in [0, 1], e.g. "
    "with --bounds; see docs/sensitive.md).",
)
CONTAMINATION_OPTION: Any = Number(
    "a number in (0, 0.5] (e.g. 0.05)", strict=True, maximum=0.5
).option(
    None,
    "--contamination",
    "C",
    "The share of anomalies expected, in (0, 0.5] (PyOD's contamination): r is "
    "chosen so that about C of the records are (β, r)-anomalies.",
)
SELECTION_EPSILON_OPTION: Any = EPSILON.option(
    None,
    "--selection-epsilon",
    "E",
    "ε of the private selection of r, a finite number > 0 (default: --epsilon, or 1 "
    "for 'sp params'). Below about 1 the selection often misses (docs/sensitive.md).",
)

K_OPTION: Any = Integer("an integer >= 1", minimum=1).option(
    1,
    "--k",
    "K",
    "k of the k-sensitive neighbourhood graph: an integer >= 1 (default 1). Records "
    "that are normal, or would be after adding/removing k records, are protected; "
    "k >= β + 1 protects everyone (then sp = dp). Ignored by --mechanism dp.",
)

MECHANISM_OPTION: Any = Choice(MECHANISM_CHOICES).option(
    "sp",
    "--mechanism",
    "M",
    "sp (default): U_λk, (ε, k)-sensitively private (Theorem 4.6); dp: the optimal "
    "ε-DP mechanism U_ΔG (Theorem 4.4); compiled: Construction 2 on the ε/2-DP mechanism, "
    "(ε, k)-SP (Theorem 4.7).",
)

METRIC_OPTION: Any = Choice(METRIC_CHOICES).option("euclidean", "--metric", "METRIC", METRIC_HELP)

COUNT_CAP_OPTION: Any = _WordOr(
    "count-cap", ("none", "auto"), Integer("", minimum=1), "none, auto or an integer >= β + 2"
).option(
    "none",
    "--count-cap",
    "C",
    "none (default): exact ball counts. auto, or an integer >= β + 2: stop counting "
    "at C (faster on dense data; same guarantee; records with at least C neighbours get "
    "error e^(-ε(C-β-1))/(1+e^ε) instead of a smaller one; auto makes that <= 1e-30).",
)


def sensitive_mechanism(
    beta: int, r: float, epsilon: float, k: int, name: str, metric: str, count_cap: str | int
) -> Any:
    """The mechanism object of the options ``--beta --r --epsilon --k --mechanism --metric
    --count-cap`` (``--count-cap`` must be at least β + 2: a one-line ParameterError)."""
    from privad.sensitive.mechanisms import aiq_mechanism, auto_count_cap

    if count_cap == "none":
        cap: int | None = None
    elif count_cap == "auto":
        cap = auto_count_cap(beta, epsilon, mechanism=name)
    else:
        cap = parse_int(
            str(count_cap),
            "--count-cap",
            minimum=beta + 2,
            what=f"none, auto or an integer >= β + 2 = {beta + 2}",
        )
    return aiq_mechanism(name, beta=beta, epsilon=epsilon, count_cap=cap, r=r, k=k, metric=metric)
