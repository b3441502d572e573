"""Option types and declarations shared by the ``privad`` command groups: one line per mistake.

Every option type is a :class:`ParamType` (Click's type protocol), mostly Click's own
types with privad's message: :class:`Number` (:class:`click.FloatRange`), :class:`Integer`
(:class:`click.IntRange`), :class:`Choice` (:class:`click.Choice`), :data:`EXISTING_FILE`
(:class:`click.Path`), :data:`SEED`, :data:`SCOPE`, :data:`DELTA`, ... A bad value is an
:class:`OptionError` naming the option and what it allows, raised while the command line
is parsed: ``privad.cli.main`` prints it on one line and exits with status 2, before the
command runs (nothing is read or written). An option that appears in several command
modules is declared once here (or in :mod:`privad.cli._data`, :mod:`privad.cli._sensitive`,
:mod:`privad.cli._search_options`); where only the help text differs, a small factory takes
it. Checks that need two options (``--t-high`` > ``--t-low``, ``--count-cap`` >= β + 2)
call :meth:`ParamType.check` or a ``parse_*`` function from the command. Output paths go
through :func:`privad.io.check_output_path` (re-exported here): their folder must exist
and be writable, checked before any work.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import click
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
    "parse_int",
    "required_secret",
]

MAX_INT = 2**62
"""The largest integer an option takes (ids, counts, seeds): larger ones are refused."""


class OptionError(PrivadError):
    """A bad option value, raised while the command line is parsed; its message names the
    option and what it allows, and ``privad.cli.main`` prints it as one line. Not a
    ValueError on purpose: Typer's conversion would wrap a ValueError in its own message."""


class ParamType(click.ParamType):
    """privad's option type: Click's own type protocol (:meth:`convert`), with every failure
    one line naming the option and what it allows.

    A subclass says what it takes (``what``, the error's description) and implements
    :meth:`value`, usually with one of Click's types (:class:`click.FloatRange`,
    :class:`click.IntRange`, :class:`click.Choice`, :class:`click.Path`) or a library
    validator. :meth:`parse` turns whatever :meth:`value` raises into privad's message: a
    :class:`~privad.errors.PrivadError` keeps its own, a ``ValueError`` or
    :class:`click.BadParameter` becomes a ParameterError "OPTION must be WHAT, got 'TEXT'"
    (a type may instead override :meth:`parse`, raising ParameterErrors itself).
    :meth:`convert` raises it as an :class:`OptionError`, and :meth:`bind` makes the
    ``parser=`` of a :func:`typer.Option` (Typer 0.29 takes a function, not a Click type).
    """

    what = "a value"

    def value(self, text: str, option: str) -> Any:  # pragma: no cover - abstract
        """``text`` as this type's value; a bad one raises (ValueError, BadParameter, ...)."""
        raise NotImplementedError

    def parse(self, text: str, option: str) -> Any:
        """``text`` as this type's value, or a one-line ParameterError naming ``option``."""
        try:
            return self.value(text, option)
        except PrivadError:
            raise
        except (ValueError, click.BadParameter):
            raise ParameterError(f"{option} must be {self.what}, got {text!r}") from None

    def check(self, text: str | None, option: str) -> Any:
        """:meth:`parse`; a missing value (None) is a ParameterError too."""
        if text is None:
            raise ParameterError(f"{option} is required: {self.what}")
        return self.parse(str(text), option)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Click's conversion: text → value (a default, already of the type, passes)."""
        if not isinstance(value, str):
            return value
        try:
            return self.check(value, param.opts[0])
        except PrivadError as exc:
            raise OptionError(str(exc)) from None

    def bind(self, option: str) -> Callable[[Any], Any]:
        """The converter of ``option``: text → value, a bad value → :class:`OptionError`."""
        named = SimpleNamespace(opts=[option])  # what convert reads of a click.Parameter
        return lambda value: self.convert(value, named, None)

    def option(self, default: Any, option: str, metavar: str, help: str, **more: Any) -> Any:
        """A :func:`typer.Option` ``option METAVAR`` of this type."""
        return typer.Option(
            default, option, metavar=metavar, parser=self.bind(option), help=help, **more
        )


TextType = ParamType
"""The earlier name of :class:`ParamType`, which the command modules subclass."""


class Number(ParamType):
    """A finite float ≥ (``strict``: >) ``minimum``, ≤ ``maximum`` (``below``: <):
    :class:`click.FloatRange`; ``what`` is the error's description (e.g. "a finite number
    > 0 (e.g. 0.1)")."""

    def __init__(
        self,
        what: str,
        *,
        minimum: float = 0.0,
        strict: bool = False,
        maximum: float | None = None,
        below: bool = False,
    ) -> None:
        self.what = what
        self.range = click.FloatRange(minimum, maximum, min_open=strict, max_open=below)

    def value(self, text: str, option: str) -> float:
        value = self.range.convert(text, None, None)
        if not math.isfinite(value):
            raise ValueError(value)
        return value


class Integer(ParamType):
    """An int in [``minimum``, ``maximum``] (:class:`click.IntRange`; ``maximum`` 2^62 by
    default, :data:`MAX_INT`: SQLite and NumPy overflow beyond 2^63)."""

    def __init__(self, what: str, *, minimum: int | None = None, maximum: int = MAX_INT) -> None:
        self.what, self.maximum = what, maximum
        self.range = click.IntRange(minimum)

    def value(self, text: str, option: str) -> int:
        value = self.range.convert(text, None, None)
        if value > self.maximum:
            raise ParameterError(
                f"{option} must be {self.what} (at most {self.maximum}), got {text[:40]!r}"
            )
        return value


class Choice(ParamType):
    """One of ``choices``, case-insensitive (:class:`click.Choice`); ``choices`` may be a
    function that returns them, so that a library's own list is read only when the option
    is given (``privad --help`` imports no scheme)."""

    def __init__(self, choices: Sequence[str] | Callable[[], Sequence[str]]) -> None:
        self.choices = choices

    def _list(self) -> tuple[str, ...]:
        return tuple(self.choices() if callable(self.choices) else self.choices)

    @property
    def what(self) -> str:  # type: ignore[override]
        return f"one of {', '.join(self._list())}"

    def value(self, text: str, option: str) -> str:
        return click.Choice(self._list(), case_sensitive=False).convert(text.strip(), None, None)


class _List(ParamType):
    """A comma-separated list of values of ``item`` (a scalar is a list of one)."""

    def __init__(self, item: ParamType) -> None:
        self.item, self.what = item, item.what

    def value(self, text: str, option: str) -> list[Any]:
        parts = [p.strip() for p in text.split(",")]
        if not all(parts):
            raise ValueError(text)
        return [self.item.check(part, option) for part in parts]


class Numbers(_List):
    """A comma-separated list of finite numbers > 0 (a scalar is a list of one)."""

    def __init__(self, what: str) -> None:
        super().__init__(Number(what, strict=True))


class Integers(_List):
    """A comma-separated list of ints ≥ ``minimum`` (one value of a repeated option)."""

    def __init__(self, what: str, *, minimum: int | None = None) -> None:
        super().__init__(Integer(what, minimum=minimum))


class _Scope(ParamType):
    what = "a non-empty name"

    def value(self, text: str, option: str) -> str:
        if not text.strip():
            raise ParameterError(f"{option} must be a non-empty name")
        return text.strip()


class _ExistingFile(ParamType):
    """A file that exists (:class:`click.Path`), its path with ``~`` expanded."""

    what = "an existing file"

    def value(self, text: str, option: str) -> str:
        try:
            return click.Path(exists=True, dir_okay=False).convert(
                os.path.expanduser(text), None, None
            )
        except click.BadParameter:
            raise ParameterError(f"{option}: no such file {text!r}") from None


class _Bound(ParamType):
    """``COL=LO:HI`` as (column, (lo, hi))."""

    what = "COL=LO:HI with finite numbers LO < HI"
    _END = Number(what, minimum=-math.inf)

    def value(self, text: str, option: str) -> tuple[str, tuple[float, float]]:
        name, eq, span = text.rpartition("=")
        lo, colon, hi = span.partition(":")
        if not (eq and colon and name.strip()):
            raise ParameterError(
                f"{option} must be COL=LO:HI (e.g. {option} proline=0:2000), got {text!r}"
            )
        return name.strip(), (self._END.check(lo, option), self._END.check(hi, option))


def parse_int(
    text: str | None,
    option: str,
    *,
    minimum: int | None = None,
    maximum: int = MAX_INT,
    what: str = "an integer",
) -> int:
    """``text`` as an int in [``minimum``, ``maximum``], or a one-line ParameterError."""
    return Integer(what, minimum=minimum, maximum=maximum).check(text, option)


def parse_choice(text: str, option: str, choices: Sequence[str]) -> str:
    """``text`` (case-insensitive) if it is one of ``choices``, else ParameterError."""
    return Choice(choices).check(text, option)


def parse_columns(values: Sequence[str] | None, option: str = "--columns") -> list[str] | None:
    """Repeated and/or comma-separated column names or positions; None when not given."""
    if not values:
        return None
    out = [part.strip() for value in values for part in str(value).split(",")]
    if any(not part for part in out):
        raise ParameterError(f"{option} has an empty column name in {list(values)!r}")
    return out


def existing_file(path: str | None, option: str) -> str | None:
    """``path`` if it names a file that exists (or None), with ``~`` expanded."""
    return None if path is None else EXISTING_FILE.parse(path, option)


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


SEED = Integer("an integer >= 0", minimum=0)
"""``--seed``: an integer ≥ 0 (None: fresh OS entropy)."""
SCOPE = _Scope()
"""``--scope``: a non-empty name, stripped (None: the command's default scope)."""
DELTA = Number("a number in (0, 1) (e.g. 1e-6)", strict=True, maximum=1.0, below=True)
"""``--delta``: a number in (0, 1) (None: a pure-ε budget)."""
EXISTING_FILE = _ExistingFile()
"""A file that exists, its path with ``~`` expanded."""
BOUND = _Bound()
"""``--bound COL=LO:HI``."""
POSITIVE = Number("a finite number > 0", strict=True)
COUNT = Integer("an integer >= 1", minimum=1)
SECONDS = Number("seconds > 0", strict=True)


def columns_option(help: str, option: str = "--columns", metavar: str = "COLS") -> Any:
    """A repeated option of column names or positions (each value comma-separated), as one
    list or None: ``--columns``, ``--exclude``."""
    parse = lambda values: parse_columns(values, option)  # noqa: E731
    return typer.Option(None, option, metavar=metavar, callback=parse, help=help)


def plan_delta_option() -> Any:
    """``--delta`` of ``privad sp plan`` and ``privad search plan``."""
    return DELTA.option(
        None, "--delta", "D", "δ in (0, 1): also show the optimal composition's ε at this δ."
    )


def budget_option(example: str, help: str) -> Any:
    """``--budget B``, required: a finite number > 0 (the error's ``example``, e.g. "10")."""
    return Number(f"a finite number > 0 (e.g. {example})", strict=True).option(
        ..., "--budget", "B", help
    )


def command_group(name: str, help: str) -> typer.Typer:
    """A ``privad NAME`` group of commands (``privad NAME`` alone prints its help)."""
    return typer.Typer(name=name, help=help, no_args_is_help=True, add_completion=False)


def seed_option(help: str, default: int | None = None) -> Any:
    """``--seed S`` (an integer >= 0) with a command's help text."""
    return SEED.option(default, "--seed", "S", help)


def timeout_option(help: str = "Seconds per request.") -> Any:
    """``--timeout S`` (seconds > 0, default 60)."""
    return SECONDS.option(60.0, "--timeout", "S", help)


def retries_option(help: str) -> Any:
    """``--retries N`` (an integer >= 0, default 3)."""
    return Integer("an integer >= 0", minimum=0).option(3, "--retries", "N", help)


def ca_cert_option(what: str) -> Any:
    """``--ca-cert FILE``: the CA bundle to verify an https ``what``."""
    return EXISTING_FILE.option(None, "--ca-cert", "FILE", f"CA bundle to verify an https {what}.")


def scope_option(help: str) -> Any:
    """``--scope NAME`` (a non-empty name) with a command's help text."""
    return SCOPE.option(None, "--scope", "NAME", help)


LEDGER_HELP = "Ledger file (SQLite). Default: $PRIVAD_LEDGER if set, else ~/.privad/ledger.sqlite."
SCHEDULER_OPTION: Any = typer.Option(
    None,
    "--scheduler",
    metavar="ADDR",
    help="With Dask: the address of a running Dask scheduler (e.g. tcp://10.0.0.5:8786). "
    "Default: start a local cluster (see --workers).",
)
WORKERS_OPTION: Any = COUNT.option(
    None,
    "--workers",
    "N",
    "With Dask and no --scheduler: worker processes of the local cluster (default: one per core).",
)
WORKER_TIMEOUT_OPTION: Any = Number("seconds > 0 (e.g. 120)", strict=True).option(
    None,
    "--worker-timeout",
    "S",
    "With Dask: seconds the cluster may have no worker before the job fails (its "
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


DELTA_OPTION: Any = DELTA.option(
    None,
    "--delta",
    "D",
    "Make the budget an (ε, δ) budget with this δ in (0, 1), e.g. 1e-6: answers are then "
    "charged their tight ε (optimal composition, or the privacy-loss distribution), a "
    "service's answers from a prepaid block (see docs/accounting.md). Default: a pure-ε "
    "budget.",
)
"""``--delta``: one declaration for every command that sets a budget (``privad budget set``,
``privad serve oracle``, ``privad serve sp``)."""
