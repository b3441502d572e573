"""The options of a search oracle, declared once for ``privad search run`` and ``privad
serve oracle``: the data column and labels, the thresholds t_l and t_h (eq. 1), the oracle
kind; and ``--halting`` (read by :func:`privad.search.halting_rule`). What the options
select is read by :func:`privad.services.search_jobs.resolve_thresholds`."""

from __future__ import annotations

from typing import Any

import typer

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


def thresholds_options(required: bool, low_help: str, high_help: str) -> tuple[Any, Any]:
    """``--t-low L`` and ``--t-high H`` (t_l < t_h, eq. 1): required, or None by default."""
    default = ... if required else None
    return (
        Number("a finite number > 0", strict=True).option(default, "--t-low", "L", low_help),
        Number("a finite number > t_low", strict=True).option(default, "--t-high", "H", high_help),
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


def kind_option(default: str | None, help: str) -> Any:
    """``--kind K``: the oracle (``privad search run``, ``privad serve oracle``)."""
    return _Kind().option(default, "--kind", "K", help)
