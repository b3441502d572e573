"""The ``privad`` command: one sub-command group per layer or scheme.

Every :class:`~privad.errors.PrivadError` raised below is turned into one line on standard
error and exit status 2, with no traceback and no partial output file; every warning is
one line ``privad: warning: ...`` on standard error. What commands print goes through
:mod:`privad.cli._render`.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import typer

from privad.cli._render import err_console, warn
from privad.errors import PrivadError

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


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (usage errors are reported by Typer itself, status 2)."""
    _register()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            app(args=argv, prog_name="privad")
        except PrivadError as exc:
            err_console().print(f"privad: error: {exc}", markup=False)
            sys.exit(2)


def _show_warning(message: Any, category: type[Warning], *_: Any, **__: Any) -> None:
    """A warning as one line on standard error (Python's default adds the source line)."""
    warn(" ".join(str(message).split()))
