"""Option parsing shared by the ``privad`` command groups: one line per mistake.

Options are taken as text and parsed here, so that a bad value is a
:class:`~privad.errors.PrivadError` naming the option: ``privad.cli.main`` prints it on one
line and exits with status 2, before any file is written. Output paths (``--out``,
``--output``, ``--ledger``, ...) go through :func:`privad.io.check_output_path` (re-exported
here): their folder must exist and be writable, checked before any work.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import typer

from privad.errors import ParameterError
from privad.io import check_output_path

__all__ = [
    "DELTA_OPTION",
    "check_output_path",
    "existing_file",
    "parse_bounds",
    "parse_choice",
    "parse_columns",
    "parse_delta",
    "parse_float",
    "parse_floats",
    "parse_int",
    "parse_optional_int",
    "parse_scope",
    "parse_seed",
    "required_secret",
]

_T = TypeVar("_T")


def _convert(text: str | None, option: str, convert: Callable[[str], _T], what: str) -> _T:
    """``convert(text)``, or a ParameterError when ``text`` is missing or does not convert."""
    if text is None:
        raise ParameterError(f"{option} is required: {what}")
    try:
        return convert(str(text).strip())
    except ValueError:
        raise ParameterError(f"{option} must be {what}, got {text!r}") from None


MAX_INT = 2**62
"""The largest integer an option takes (ids, counts, seeds): larger ones are refused."""


def parse_int(
    text: str | None,
    option: str,
    *,
    minimum: int | None = None,
    maximum: int = MAX_INT,
    what: str = "an integer",
) -> int:
    """``text`` as an int in [``minimum``, ``maximum``], or a one-line ParameterError
    naming ``option`` (``maximum`` defaults to 2^62: no option needs more, and SQLite and
    NumPy overflow beyond 2^63)."""
    value = _convert(text, option, int, what)
    if value > maximum:
        raise ParameterError(f"{option} must be {what} (at most {maximum}), got {str(text)[:40]!r}")
    if minimum is not None and value < minimum:
        raise ParameterError(f"{option} must be {what}, got {text!r}")
    return value


def parse_float(
    text: str | None,
    option: str,
    *,
    minimum: float = 0.0,
    strict: bool = False,
    maximum: float | None = None,
    what: str = "a number",
) -> float:
    """``text`` as a finite float ≥ (``strict``: >) ``minimum`` and ≤ ``maximum``, or a
    one-line ParameterError naming ``option``."""
    value = _convert(text, option, float, what)
    if (
        not math.isfinite(value)
        or value < minimum
        or (strict and value == minimum)
        or (maximum is not None and value > maximum)
    ):
        raise ParameterError(f"{option} must be {what}, got {text!r}")
    return value


def parse_choice(text: str, option: str, choices: Sequence[str]) -> str:
    """``text`` (case-insensitive) if it is one of ``choices``, else ParameterError."""
    value = str(text).strip().lower()
    if value not in choices:
        raise ParameterError(f"{option} must be one of {', '.join(choices)}, got {text!r}")
    return value


def parse_columns(values: Sequence[str] | None, option: str = "--columns") -> list[str] | None:
    """Repeated and/or comma-separated column names or positions; None when not given."""
    if not values:
        return None
    out = [part.strip() for value in values for part in str(value).split(",")]
    if any(not part for part in out):
        raise ParameterError(f"{option} has an empty column name in {list(values)!r}")
    return out


def parse_optional_int(text: str | None, option: str, minimum: int) -> int | None:
    """None when the option is not given, else ``text`` as an int ≥ ``minimum`` (the error
    says "an integer >= ``minimum``")."""
    if text is None:
        return None
    return parse_int(text, option, minimum=minimum, what=f"an integer >= {minimum}")


def parse_seed(text: str | None) -> int | None:
    """``--seed``: None (fresh OS entropy) or an integer ≥ 0."""
    return parse_optional_int(text, "--seed", 0)


def parse_scope(text: str | None) -> str | None:
    """``--scope``: None (the command's default scope) or a non-empty name, stripped."""
    if text is None:
        return None
    if not text.strip():
        raise ParameterError("--scope must be a non-empty name")
    return text.strip()


def parse_floats(text: str, option: str, *, what: str) -> list[float]:
    """A comma-separated list of finite numbers > 0 (a scalar is a list of one)."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise ParameterError(f"{option} must be {what}, got {text!r}")
    return [parse_float(p, option, strict=True, what=what) for p in parts]


def existing_file(path: str | None, option: str) -> str | None:
    """``path`` if it names a readable file (or None)."""
    if path is None:
        return None
    expanded = os.path.expanduser(path)
    if not os.path.isfile(expanded):
        raise ParameterError(f"{option}: no such file {path!r}")
    return expanded


def required_secret(value: str | None, option: str, env: str) -> str:
    """A token given by ``option`` or its environment variable ``env`` (stripped); required."""
    if value is None or not value.strip():
        raise ParameterError(f"{option} is required (or set ${env})")
    return value.strip()


def parse_bounds(
    values: Sequence[str] | None, path: str | None
) -> dict[str, tuple[float, float]] | None:
    """``--bounds FILE`` and repeated ``--bound COL=LO:HI``: public bounds by column, or
    None when neither is given (a column may be bounded once)."""
    from privad.datasets import read_bounds
    from privad.datasets.preprocessing import check_bounds

    if path is None and not values:
        return None
    out = {} if path is None else read_bounds(path)
    for text in values or []:
        name, eq, span = str(text).rpartition("=")
        lo, colon, hi = span.partition(":")
        if not (eq and colon and name.strip()):
            raise ParameterError(
                f"--bound must be COL=LO:HI (e.g. --bound proline=0:2000), got {text!r}"
            )
        what = "COL=LO:HI with finite numbers LO < HI"
        pair = (
            parse_float(lo, "--bound", minimum=-math.inf, what=what),
            parse_float(hi, "--bound", minimum=-math.inf, what=what),
        )
        column = name.strip()
        if column in out:
            raise ParameterError(
                f"column {column!r} has bounds twice (--bounds file and "
                "--bound, or --bound repeated); give them once"
            )
        out.update(check_bounds({column: pair}, "--bound"))
    return out


LEDGER_HELP = "Ledger file (SQLite). Default: $PRIVAD_LEDGER if set, else ~/.privad/ledger.sqlite."
SCHEDULER_OPTION: Any = typer.Option(
    None,
    "--scheduler",
    metavar="ADDR",
    help="With Dask: the address of a running Dask scheduler (e.g. tcp://10.0.0.5:8786). "
    "Default: start a local cluster (see --workers).",
)
WORKERS_OPTION: Any = typer.Option(
    None,
    "--workers",
    metavar="N",
    help="With Dask and no --scheduler: worker processes of the local cluster (default: one "
    "per core).",
)
WORKER_TIMEOUT_OPTION: Any = typer.Option(
    None,
    "--worker-timeout",
    metavar="S",
    help="With Dask: seconds the cluster may have no worker before the job fails (its "
    "reservation cancelled, no output). Default: 120; raise it for a cluster that starts "
    "its workers on demand.",
)


@dataclass(frozen=True)
class Cluster:
    """Where a Dask job runs: ``--scheduler`` or ``--workers`` (not both), and
    ``--worker-timeout`` (None: the defaults of :func:`privad.distributed.dask_client`)."""

    scheduler: str | None = None
    workers: int | None = None
    worker_timeout: float | None = None

    @property
    def given(self) -> bool:
        """Whether any of the options was given (they apply only to Dask jobs)."""
        return self != Cluster()

    def client(self) -> Any:
        """:func:`privad.distributed.dask_client` for these options."""
        from privad.distributed import dask_client

        return dask_client(self.scheduler, workers=self.workers, worker_timeout=self.worker_timeout)


def parse_cluster(
    scheduler: str | None, workers: str | None, worker_timeout: str | None = None
) -> Cluster:
    """``--scheduler`` (an address) and ``--workers`` (an integer >= 1), not both;
    ``--worker-timeout`` (seconds > 0)."""
    from privad.distributed import check_scheduler_address

    if scheduler is not None and workers is not None:
        raise ParameterError(
            "give --scheduler (an existing cluster) or --workers (a local cluster), not both"
        )
    timeout = (
        None
        if worker_timeout is None
        else parse_float(
            worker_timeout, "--worker-timeout", strict=True, what="seconds > 0 (e.g. 120)"
        )
    )
    return Cluster(
        scheduler=None if scheduler is None else check_scheduler_address(scheduler),
        workers=None
        if workers is None
        else parse_int(workers, "--workers", minimum=1, what="an integer >= 1"),
        worker_timeout=timeout,
    )


DELTA_OPTION: Any = typer.Option(
    None,
    "--delta",
    metavar="D",
    help="Make the budget an (ε, δ) budget with this δ in (0, 1), e.g. 1e-6: answers are then "
    "charged their tight ε (optimal composition, or the privacy-loss distribution), a "
    "service's answers from a prepaid block (see docs/accounting.md). Default: a pure-ε "
    "budget.",
)
"""``--delta``: one declaration for every command that sets a budget (``privad budget set``,
``privad serve oracle``, ``privad serve sp``); parse it with :func:`parse_delta`."""


def parse_delta(text: str | None) -> float | None:
    """``--delta``: None (a pure-ε budget) or a number in (0, 1)."""
    if text is None:
        return None
    value = parse_float(text, "--delta", strict=True, what="a number in (0, 1) (e.g. 1e-6)")
    if value >= 1.0:
        raise ParameterError(f"--delta must be a number in (0, 1) (e.g. 1e-6), got {text!r}")
    return value
