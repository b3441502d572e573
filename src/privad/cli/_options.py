"""Option types and declarations shared by the ``privad`` command groups: one line per mistake.

Options are typed: each takes a :class:`click.ParamType` of this module (:class:`Number`,
:class:`Integer`, :class:`Choice`, :data:`SEED`, :data:`SCOPE`, :data:`DELTA`, ...), so
``--help`` shows what each takes, the shell completes it, and a bad value is an
:class:`OptionError` naming the option and what it allows, raised while Click parses the
command line: ``privad.cli.main`` prints it on one line and exits with status 2, before the
command runs (nothing is read or written). An option that appears in several command
modules is declared once here (or in :mod:`privad.cli._data`, :mod:`privad.cli._sensitive`,
:mod:`privad.cli._search_options`); where only the help text differs, a small factory takes
it. The ``parse_*`` functions are what the types run; a few checks that need two options
(``--t-high`` > ``--t-low``, ``--count-cap`` >= β + 2) call them from the command. Output
paths (``--out``, ``--output``, ``--ledger``, ...) go through
:func:`privad.io.check_output_path` (re-exported here): their folder must exist and be
writable, checked before any work.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import typer

from privad.errors import ParameterError, PrivadError
from privad.io import check_output_path

__all__ = [
    "DELTA",
    "DELTA_OPTION",
    "SCOPE",
    "SEED",
    "Choice",
    "Integer",
    "Integers",
    "Number",
    "Numbers",
    "OptionError",
    "TextType",
    "check_output_path",
    "existing_file",
    "public_bounds",
    "parse_choice",
    "parse_columns",
    "parse_float",
    "parse_floats",
    "parse_int",
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


def public_bounds(
    pairs: Sequence[tuple[str, tuple[float, float]]] | None, path: str | None
) -> dict[str, tuple[float, float]] | None:
    """``--bounds FILE`` and the repeated ``--bound COL=LO:HI`` (parsed by :data:`BOUND`):
    public bounds by column, or None when neither is given (a column may be bounded once)."""
    from privad.datasets import read_bounds
    from privad.datasets.preprocessing import check_bounds

    if path is None and not pairs:
        return None
    out = {} if path is None else read_bounds(path)
    for column, pair in pairs or []:
        if column in out:
            raise ParameterError(
                f"column {column!r} has bounds twice (--bounds file and "
                "--bound, or --bound repeated); give them once"
            )
        out.update(check_bounds({column: pair}, "--bound"))
    return out


# --------------------------------------------------------------------------------------------
# Option types: a bad value is one line naming the option, raised while Click parses
# --------------------------------------------------------------------------------------------


class OptionError(PrivadError):
    """A bad option value, raised while the command line is parsed; its message names the
    option and what it allows, and ``privad.cli.main`` prints it as one line. Not a
    ValueError on purpose: Typer's conversion would wrap a ValueError in its own message."""


class TextType:
    """The type of an option: :meth:`parse` turns its text into a value or raises a
    ParameterError naming the option; :meth:`bind` makes the ``parser=`` of a
    :func:`typer.Option` for one option name."""

    name = "text"

    def parse(self, text: str, option: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def bind(self, option: str) -> Callable[[Any], Any]:
        """The converter of ``option``: text → value, a bad value → :class:`OptionError`."""

        def convert(value: Any) -> Any:
            if not isinstance(value, str):  # a default, already of the type
                return value
            try:
                return self.parse(value, option)
            except ParameterError as exc:
                raise OptionError(str(exc)) from None

        return convert


class Number(TextType):
    """A finite float ≥ (``strict``: >) ``minimum``, ≤ ``maximum`` (``below``: <);
    ``what`` is the error's description (e.g. "a finite number > 0 (e.g. 0.1)")."""

    name = "number"

    def __init__(
        self,
        what: str,
        *,
        minimum: float = 0.0,
        strict: bool = False,
        maximum: float | None = None,
        below: bool = False,
    ) -> None:
        self.what, self.minimum, self.strict = what, minimum, strict
        self.maximum, self.below = maximum, below

    def parse(self, text: str, option: str) -> float:
        value = parse_float(
            text,
            option,
            minimum=self.minimum,
            strict=self.strict,
            maximum=self.maximum,
            what=self.what,
        )
        if self.below and value == self.maximum:
            raise ParameterError(f"{option} must be {self.what}, got {text!r}")
        return value


class Integer(TextType):
    """An int in [``minimum``, ``maximum``] (``maximum`` 2^62 by default, :data:`MAX_INT`)."""

    name = "integer"

    def __init__(self, what: str, *, minimum: int | None = None, maximum: int = MAX_INT) -> None:
        self.what, self.minimum, self.maximum = what, minimum, maximum

    def parse(self, text: str, option: str) -> int:
        return parse_int(text, option, minimum=self.minimum, maximum=self.maximum, what=self.what)


class Choice(TextType):
    """One of ``choices``, case-insensitive; ``choices`` may be a function that returns them,
    so that a library's own list is read only when the option is given (``privad --help``
    imports no scheme)."""

    name = "choice"

    def __init__(self, choices: Sequence[str] | Callable[[], Sequence[str]]) -> None:
        self.choices = choices

    def parse(self, text: str, option: str) -> str:
        choices = self.choices() if callable(self.choices) else self.choices
        return parse_choice(text, option, tuple(choices))


class Numbers(TextType):
    """A comma-separated list of finite numbers > 0 (a scalar is a list of one)."""

    name = "numbers"

    def __init__(self, what: str) -> None:
        self.what = what

    def parse(self, text: str, option: str) -> list[float]:
        return parse_floats(text, option, what=self.what)


class Integers(TextType):
    """A comma-separated list of ints ≥ ``minimum`` (one value of a repeated option)."""

    name = "integers"

    def __init__(self, what: str, *, minimum: int | None = None) -> None:
        self.what, self.minimum = what, minimum

    def parse(self, text: str, option: str) -> list[int]:
        parts = [p.strip() for p in text.split(",")]
        return [parse_int(p, option, minimum=self.minimum, what=self.what) for p in parts]


class _Scope(TextType):
    name = "scope"

    def parse(self, text: str, option: str) -> str:
        if not text.strip():
            raise ParameterError(f"{option} must be a non-empty name")
        return text.strip()


class _ExistingFile(TextType):
    name = "file"

    def parse(self, text: str, option: str) -> str:
        return existing_file(text, option)  # type: ignore[return-value]


class _Bound(TextType):
    """``COL=LO:HI`` as (column, (lo, hi))."""

    name = "bound"

    def parse(self, text: str, option: str) -> tuple[str, tuple[float, float]]:
        name, eq, span = text.rpartition("=")
        lo, colon, hi = span.partition(":")
        if not (eq and colon and name.strip()):
            raise ParameterError(
                f"{option} must be COL=LO:HI (e.g. {option} proline=0:2000), got {text!r}"
            )
        what = "COL=LO:HI with finite numbers LO < HI"
        return name.strip(), (
            parse_float(lo, option, minimum=-math.inf, what=what),
            parse_float(hi, option, minimum=-math.inf, what=what),
        )


SEED = Integer("an integer >= 0", minimum=0)
"""``--seed``: an integer ≥ 0 (None: fresh OS entropy)."""
SCOPE = _Scope()
"""``--scope``: a non-empty name, stripped (None: the command's default scope)."""
DELTA = Number("a number in (0, 1) (e.g. 1e-6)", strict=True, maximum=1.0, below=True)
"""``--delta``: a number in (0, 1) (None: a pure-ε budget)."""
EXISTING_FILE = _ExistingFile()
"""A readable file, its path with ``~`` expanded."""
BOUND = _Bound()
"""``--bound COL=LO:HI``."""
POSITIVE = Number("a finite number > 0", strict=True)
COUNT = Integer("an integer >= 1", minimum=1)
SECONDS = Number("seconds > 0", strict=True)


def columns_callback(param: typer.CallbackParam, values: Any) -> Any:
    """A repeated option of column names, each value comma-separated, as one list (None when
    not given); an empty name is an OptionError."""
    try:
        return parse_columns(values, param.opts[0])
    except ParameterError as exc:
        raise OptionError(str(exc)) from None


def columns_option(help: str, option: str = "--columns", metavar: str = "COLS") -> Any:
    """A repeated option of column names or positions (each value comma-separated), as one
    list or None: ``--columns``, ``--exclude``."""
    return typer.Option(None, option, metavar=metavar, callback=columns_callback, help=help)


def plan_delta_option() -> Any:
    """``--delta`` of ``privad sp plan`` and ``privad search plan``."""
    return typer.Option(
        None,
        "--delta",
        metavar="D",
        parser=DELTA.bind("--delta"),
        help="δ in (0, 1): also show the optimal composition's ε at this δ.",
    )


def seed_option(help: str, default: int | None = None) -> Any:
    """``--seed S`` (an integer >= 0) with a command's help text."""
    return typer.Option(default, "--seed", metavar="S", parser=SEED.bind("--seed"), help=help)


def timeout_option(help: str = "Seconds per request.") -> Any:
    """``--timeout S`` (seconds > 0, default 60)."""
    return typer.Option(60.0, "--timeout", metavar="S", parser=SECONDS.bind("--timeout"), help=help)


def retries_option(help: str) -> Any:
    """``--retries N`` (an integer >= 0, default 3)."""
    return typer.Option(
        3,
        "--retries",
        metavar="N",
        parser=Integer("an integer >= 0", minimum=0).bind("--retries"),
        help=help,
    )


def ca_cert_option(what: str) -> Any:
    """``--ca-cert FILE``: the CA bundle to verify an https ``what``."""
    return typer.Option(
        None,
        "--ca-cert",
        metavar="FILE",
        parser=EXISTING_FILE.bind("--ca-cert"),
        help=f"CA bundle to verify an https {what}.",
    )


def scope_option(help: str) -> Any:
    """``--scope NAME`` (a non-empty name) with a command's help text."""
    return typer.Option(None, "--scope", metavar="NAME", parser=SCOPE.bind("--scope"), help=help)


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
    parser=Integer("an integer >= 1", minimum=1).bind("--workers"),
    help="With Dask and no --scheduler: worker processes of the local cluster (default: one "
    "per core).",
)
WORKER_TIMEOUT_OPTION: Any = typer.Option(
    None,
    "--worker-timeout",
    metavar="S",
    parser=Number("seconds > 0 (e.g. 120)", strict=True).bind("--worker-timeout"),
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


def cluster_of(scheduler: str | None, workers: int | None, worker_timeout: float | None) -> Cluster:
    """``--scheduler`` (an address) and ``--workers``, not both; ``--worker-timeout``."""
    from privad.distributed import check_scheduler_address

    if scheduler is not None and workers is not None:
        raise ParameterError(
            "give --scheduler (an existing cluster) or --workers (a local cluster), not both"
        )
    return Cluster(
        scheduler=None if scheduler is None else check_scheduler_address(scheduler),
        workers=workers,
        worker_timeout=worker_timeout,
    )


DELTA_OPTION: Any = typer.Option(
    None,
    "--delta",
    metavar="D",
    parser=DELTA.bind("--delta"),
    help="Make the budget an (ε, δ) budget with this δ in (0, 1), e.g. 1e-6: answers are then "
    "charged their tight ε (optimal composition, or the privacy-loss distribution), a "
    "service's answers from a prepaid block (see docs/accounting.md). Default: a pure-ε "
    "budget.",
)
"""``--delta``: one declaration for every command that sets a budget (``privad budget set``,
``privad serve oracle``, ``privad serve sp``)."""
