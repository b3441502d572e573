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
    # Typer's own completion options detect the shell from the parent process and take no
    # shell name ('privad --show-completion zsh' printed the bash script, and nothing where
    # no shell is detected, as in CI); the two options below take the shell by name and
    # reuse Typer's scripts and installer.
    add_completion=False,
    pretty_exceptions_enable=False,
)

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def _completion(option: str, what: str, after: str = ".") -> Any:
    """``--install-completion SHELL`` or ``--show-completion SHELL``, run before the rest."""

    def callback(ctx: Any, param: Any, value: str | None) -> None:
        from typer.completion import install_callback, show_callback

        if value is None or ctx.resilient_parsing:
            return
        shell = value.strip().lower()
        if shell not in SHELLS:
            raise PrivadError(f"{option} must be one of {', '.join(SHELLS)}, got {value!r}")
        run = install_callback if option == "--install-completion" else show_callback
        run(ctx, param, shell)

    return typer.Option(
        None,
        option,
        metavar="SHELL",
        is_eager=True,
        expose_value=False,
        callback=callback,
        help=f"{what} for SHELL (bash, zsh, fish, powershell){after}",
    )


@app.callback()
def _root(
    install_completion: str | None = _completion(
        "--install-completion", "Install tab completion of privad"
    ),
    show_completion: str | None = _completion(
        "--show-completion",
        "Print the completion script",
        ", e.g. privad --show-completion bash >> ~/.bashrc.",
    ),
) -> None:
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
    """Console-script entry point: every mistake on the command line is one line on standard
    error and exit status 2, whether Typer finds it (an unknown or missing option), an
    option's type does (:mod:`privad.cli._options`) or the library does (a
    :class:`~privad.errors.PrivadError`)."""
    from typer.completion import completion_init

    completion_init()  # Typer's completion classes answer $_PRIVAD_COMPLETE (tab completion)
    _register()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            # not standalone: Typer's usage errors come here instead of a boxed report
            code = app(args=argv, prog_name="privad", standalone_mode=False)
        except PrivadError as exc:
            _fail(str(exc))
        except typer.TyperException as exc:  # Typer's (Click's) usage errors
            if type(exc).__name__ == "NoArgsIsHelpError":
                sys.exit(2)  # the help is already printed
            _fail(_usage_line(exc))
        except typer.Abort:
            err_console().print("Aborted.", markup=False)
            sys.exit(1)
    if isinstance(code, int) and code:  # typer.Exit(code) inside a command
        sys.exit(code)


def _fail(message: str) -> None:
    err_console().print(f"privad: error: {message}", markup=False)
    sys.exit(2)


def _usage_line(exc: Any) -> str:
    """A usage error as one line, with where to look (``privad sp identify --help``)."""
    param = getattr(exc, "param", None)
    if type(exc).__name__ == "MissingParameter" and param is not None:
        # an argument's name as the help shows it (DATA): its metavar, else its name in
        # capitals (Click's human_readable_name, which Typer 0.29's classes no longer have)
        what = (
            param.opts[0]
            if param.param_type_name == "option"
            else str(param.metavar or (param.name or "argument").upper())
        )
        message = f"{what} is required"
    else:
        message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    return message + (f" (see '{ctx.command_path} --help')" if ctx is not None else "")


def _show_warning(message: Any, category: type[Warning], *_: Any, **__: Any) -> None:
    """A warning as one line on standard error (Python's default adds the source line)."""
    warn(" ".join(str(message).split()))
