"""The ``privad`` command: one sub-command group per layer or scheme.

Every :class:`~privad.errors.PrivadError` raised below is turned into one line on standard
error and exit status 2, with no traceback and no partial output file; every
:class:`~privad.errors.PrivadWarning` into one line ``privad: warning: ...``.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import typer
from rich.console import Console

from privad.errors import PrivadError, PrivadWarning

app = typer.Typer(
    name="privad",
    help=(
        "Find anomalies while protecting the privacy of everyone who is not one.\n\n"
        "Run 'privad demo' for a tour on embedded data."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


@app.callback()
def _root() -> None:
    """Find anomalies while protecting the privacy of everyone who is not one."""


def _register() -> None:
    # Imported here so that 'privad --help' lists every group; each module owns one group.
    from privad.cli import budget, datasets, demo, reproduce, rmp, search, sensor, serve, sp

    demo.register(app)
    datasets.register(app)
    budget.register(app)
    sp.register(app)
    reproduce.register(app)
    serve.register(app)
    sensor.register(app)
    search.register(app)
    rmp.register(app)


@contextlib.contextmanager
def _one_line_warnings() -> Iterator[None]:
    """Show privad's own warnings as one line on standard error (others as Python does)."""
    shown = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, PrivadWarning):
            err_console.print(f"privad: warning: {message}", markup=False)
        else:
            shown(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (usage errors are reported by Typer itself, status 2)."""
    _register()
    try:
        with _one_line_warnings():
            app(args=argv, prog_name="privad")
    except PrivadError as exc:
        err_console.print(f"privad: error: {exc}", markup=False)
        sys.exit(2)
