"""The options of a search oracle, declared once for ``privad search run`` and ``privad
serve oracle``: the data column and labels, the thresholds t_l and t_h (eq. 1), the oracle
kind; and ``--halting`` (read by :func:`privad.search.halting_rule`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import typer

from privad.cli._data import SeriesData
from privad.cli._options import Number, TextType
from privad.errors import ParameterError

KIND_HELP = (
    "The oracle: laplace (noisy maxima of Q and its complement, eq. 9; default), binarized "
    "(the bit 1(Y > Ybar), eq. 24) or rr (randomized response, eq. 5)."
)
DATA_HELP = (
    "The values x_1..x_{n+1} (>= 0): a NAB series (nab:NAME), a Yahoo S5 series file "
    "(timestamp,value,is_anomaly), a CSV file (one value column, see --column), a .npy "
    "vector or a one-column .npz, or a catalogue name (e.g. search-mixture)."
)

# Options shared with 'privad serve oracle'
COLUMN_OPTION: Any = typer.Option(
    None,
    "--column",
    metavar="COL",
    help="CSV: the value column, by name or 0-based position. Default: 'value' if present, "
    "else the only column besides the labels.",
)
LABELS_OPTION: Any = typer.Option(
    None,
    "--labels-column",
    metavar="COL",
    help="The 0/1 anomaly labels (1 = anomaly), used by --derive-thresholds (implied when "
    "given without --t-low/--t-high), by the rule of every data file: a column, by name or "
    "0-based position; in a .npz first an array stored beside the values, whose array y is "
    "the default. NAB and Yahoo series carry labels. See docs/data.md.",
)
DERIVE_OPTION: Any = typer.Option(
    False,
    "--derive-thresholds",
    help="Section 6.1's reduction: keep the largest labelled value x* and the unlabelled "
    "values (the other labelled ones are dropped); x_j = the largest value kept besides x*, "
    "t_h = x* - 0.1(x* - x_j), t_l = x_j + 0.1(x* - x_j). This reads the data and is NOT "
    "private: in a deployment set --t-low/--t-high from domain knowledge.",
)
T_LOW = Number("a finite number > 0", strict=True)
T_HIGH = Number("a finite number > t_low", strict=True)


def thresholds_options(required: bool, low_help: str, high_help: str) -> tuple[Any, Any]:
    """``--t-low L`` and ``--t-high H`` (t_l < t_h, eq. 1): required, or None by default."""
    default = ... if required else None
    return (
        T_LOW.option(default, "--t-low", "L", low_help),
        T_HIGH.option(default, "--t-high", "H", high_help),
    )


T_LOW_OPTION, T_HIGH_OPTION = thresholds_options(
    False,
    "t_l > 0: every non-anomalous value is <= t_l (eq. 1); also the sensitivity of the "
    "max query (Lemma 1). With --t-high.",
    "t_h > t_l: the anomaly's value is >= t_h (eq. 1).",
)

HALTING_OPTION: Any = typer.Option(
    None,
    "--halting",
    metavar="RULE",
    help="Stopping rule, repeatable (any stops): budget (only b), posterior[:ALPHA] "
    "(max f > α; default posterior:0.5), log-odds:DELTA (eq. 25), ben-or-hassidim, "
    "max-queries:N. The budget b always applies.",
)


class _Kind(TextType):
    """``--kind``: an oracle name (``rr`` is randomized response)."""

    name = "kind"

    def parse(self, text: str, option: str) -> str:
        from privad.search.models import ORACLE_ALIASES

        value = text.strip().lower()
        if value not in ORACLE_ALIASES:
            raise ParameterError(
                f"{option} must be one of laplace, binarized, rr (randomized response), "
                f"got {text!r}"
            )
        return ORACLE_ALIASES[value]


KIND = _Kind()


def kind_option(default: str | None, help: str) -> Any:
    """``--kind K``: the oracle (``privad search run``, ``privad serve oracle``)."""
    return KIND.option(default, "--kind", "K", help)


@dataclass(frozen=True)
class OracleValues:
    """What a local oracle or ``privad serve oracle`` holds: the values, t_ℓ < t_h, where
    the thresholds came from, and ``source_index`` (the position in DATA of each value;
    ``None``: every value of DATA, in order)."""

    values: np.ndarray
    t_low: float
    t_high: float
    how: str
    source_index: np.ndarray | None = None


def resolve_thresholds(
    data: SeriesData,
    t_low: float | None,
    t_high: float | None,
    derive: bool,
    labels_column: str | None,
) -> OracleValues:
    """The oracle's values and (t_ℓ, t_h): from ``--t-low/--t-high`` over all of DATA, or
    section 6.1's single-anomaly reduction of the labelled series
    (:func:`privad.experiments.search_problems.problem_from_labels`: the largest labelled
    point and the unlabelled ones, thresholds at 0.1 of the gap), as the library's
    reproduction does."""
    given = (t_low is not None, t_high is not None)
    if any(given):
        if not all(given):
            raise ParameterError("--t-low and --t-high go together")
        if derive:
            raise ParameterError("give either --t-low/--t-high or --derive-thresholds, not both")
        lo, hi = float(t_low), float(t_high)  # type: ignore[arg-type]
        if not hi > lo:
            raise ParameterError(f"--t-high must be > --t-low (eq. 1), got {t_high} <= {t_low}")
        return OracleValues(data.values, lo, hi, "given (--t-low/--t-high)")
    if not (derive or labels_column is not None):
        raise ParameterError(
            "the thresholds are needed: give --t-low L --t-high H (public knowledge), or "
            "--derive-thresholds to compute them from the labels (section 6.1; not private)"
        )
    if data.labels is None:
        raise ParameterError(
            f"--derive-thresholds needs labels, and {data.name!r} has none: give "
            "--labels-column COL, or --t-low/--t-high"
        )
    from privad.experiments.search_problems import problem_from_labels

    problem = problem_from_labels(data.values, data.labels, name=data.name)
    dropped = data.values.size - problem.n_items
    where = int(problem.source_index[problem.anomaly_index])  # type: ignore[index]
    how = (
        f"derived from the labels (section 6.1; reads the data, not private): the largest "
        f"labelled value at position {where}, {dropped} other labelled value(s) dropped, "
        f"threshold ratio {problem.threshold_ratio:.4g}"
    )
    return OracleValues(problem.values, problem.t_low, problem.t_high, how, problem.source_index)
