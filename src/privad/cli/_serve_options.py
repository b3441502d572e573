"""The options every ``privad serve`` server shares (``--db``, ``--host``, ``--port``,
tokens, ``--max-body-bytes``, the request limits, ``--log-level``, TLS), declared once:
:func:`serve_command` adds them to a server's command, checks them and runs the app the
command builds (:mod:`privad.cli.serve`)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer

from privad.cli._options import (
    EXISTING_FILE,
    Choice,
    Integer,
    Number,
    check_output_path,
    required_secret,
)
from privad.errors import ParameterError

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


PORT = Integer("a TCP port 0..65535", minimum=0, maximum=65535)


def path_option(name: str, help: str, default: Any = ...) -> Any:
    """``--NAME PATH``, a file of the server's own (required unless a ``default`` is given)."""
    return typer.Option(default, name, metavar="PATH", help=help)


# --------------------------------------------------------------------------------------------
# Options every server shares
# --------------------------------------------------------------------------------------------

DB_OPTION: Any = path_option(
    "--db",
    "SQLite file of this server (created if missing; WAL, synchronous=FULL). Each server "
    "needs its own file.",
)
HOST_OPTION: Any = typer.Option(
    "127.0.0.1",
    "--host",
    metavar="HOST",
    help="Address to listen on (default 127.0.0.1). Beyond loopback use TLS "
    "(--ssl-certfile/--ssl-keyfile or a TLS proxy): tokens travel in every request.",
)
TOKENS_OPTION: Any = typer.Option(
    None,
    "--tokens",
    metavar="FILE",
    help="Sensor tokens: one NAME=SECRET per line (# comments). NAME is the sensor id; each "
    "SECRET at least 16 characters.",
)
TOKENS_ENV = "PRIVAD_TOKENS"
"""Tokens from the environment (``NAME=SECRET`` entries separated by white space), read
where no ``--token`` is given: unlike the command line, not visible to other users."""

TOKEN_OPTION: Any = typer.Option(
    None,
    "--token",
    metavar="NAME=SECRET",
    envvar=TOKENS_ENV,
    help="A sensor token (repeatable), in addition to --tokens. Default: $PRIVAD_TOKENS "
    "(NAME=SECRET entries separated by spaces or newlines). Secrets on the command line are "
    "visible to other local users: prefer --tokens FILE or $PRIVAD_TOKENS.",
)
MAX_BODY_OPTION: Any = Integer("a number of bytes >= 1024", minimum=1024).option(
    16777216,
    "--max-body-bytes",
    "N",
    "Largest request body accepted (bytes, default 16 MiB); larger ones get 413.",
)
MAX_IN_FLIGHT_OPTION: Any = Integer("a number of bytes >= 1024", minimum=1024).option(
    64 * 1024 * 1024,
    "--max-bytes-in-flight",
    "N",
    "Most request-body bytes received or handled at once (default 64 MiB); a request "
    "past it while others are in flight gets 503 with Retry-After (clients retry). One body "
    "up to --max-body-bytes is always taken.",
)
HEADER_TIMEOUT_OPTION: Any = Number("a number of seconds > 0", strict=True).option(
    10.0,
    "--header-timeout",
    "SECONDS",
    "Seconds a client may take to send a request's headers (default 10); then 408 and "
    "the connection is closed.",
)
BODY_TIMEOUT_OPTION: Any = Number("a number of seconds > 0", strict=True).option(
    60.0,
    "--body-timeout",
    "SECONDS",
    "Seconds a client may take to send a request's body (default 60); then 408 and the "
    "connection is closed.",
)
LOG_LEVEL_OPTION: Any = Choice(LOG_LEVELS).option(
    "warning",
    "--log-level",
    "LEVEL",
    "Server log level: critical, error, warning (default), info (with access log), debug.",
)
SSL_CERT_OPTION: Any = EXISTING_FILE.option(
    None, "--ssl-certfile", "FILE", "TLS certificate (PEM); with --ssl-keyfile."
)
SSL_KEY_OPTION: Any = EXISTING_FILE.option(
    None, "--ssl-keyfile", "FILE", "TLS private key (PEM); with --ssl-certfile."
)


def secret_option(name: str, env: str, help: str) -> Any:
    """An optional ``--NAME SECRET`` that defaults to the environment variable ``env``
    (a peer's or an operator's token)."""
    return typer.Option(None, name, metavar="SECRET", envvar=env, help=help)


def token_options(who: str, what: str) -> tuple[Any, Any]:
    """``--tokens FILE`` and ``--token NAME=SECRET`` of a server whose users are ``who``
    (the sensors' own pair is :data:`TOKENS_OPTION`, :data:`TOKEN_OPTION`)."""
    return typer.Option(
        None,
        "--tokens",
        metavar="FILE",
        help=f"{who.capitalize()} tokens: one NAME=SECRET per line (# comments); {what}. At "
        f"least one {who} token (--tokens or --token) is required; each SECRET at least 16 "
        "characters.",
    ), typer.Option(
        None,
        "--token",
        metavar="NAME=SECRET",
        envvar=TOKENS_ENV,
        help=f"A {who} token (repeatable), in addition to --tokens. Default: $PRIVAD_TOKENS "
        "(NAME=SECRET entries separated by white space); prefer it or --tokens FILE to the "
        "command line, which other local users can read.",
    )


_TOKENS = (("tokens", str | None), ("token", list[str] | None))
_LIMITS = (
    ("max_body_bytes", int, MAX_BODY_OPTION),
    ("max_bytes_in_flight", int, MAX_IN_FLIGHT_OPTION),
    ("header_timeout", float, HEADER_TIMEOUT_OPTION),
    ("body_timeout", float, BODY_TIMEOUT_OPTION),
    ("log_level", str, LOG_LEVEL_OPTION),
    ("ssl_certfile", str | None, SSL_CERT_OPTION),
    ("ssl_keyfile", str | None, SSL_KEY_OPTION),
)
_SHARED = {"db", "host", "port", *(n for n, _ in _TOKENS), *(n for n, _, _ in _LIMITS)}


def _users(shared: dict[str, Any], who: str, why: str) -> list[tuple[str, str]]:
    """The (NAME, SECRET) pairs of the ``--tokens`` file and the ``--token`` options, taken
    from ``shared``: at least one of the server's users ``who`` (``why`` they need them)."""
    from privad.services.auth import load_token_file, parse_token_spec

    tokens = shared.pop("tokens")
    pairs = [] if tokens is None else list(load_token_file(tokens))
    pairs += [parse_token_spec(spec) for spec in shared.pop("token") or ()]
    if not pairs:
        raise ParameterError(
            f"no {who} tokens: give --tokens FILE (NAME=SECRET lines) or --token "
            f"NAME=SECRET{f' ({why})' if why else ''}"
        )
    return pairs


def _serve(app: Any, name: str, notes: Sequence[str], listen: dict[str, Any]) -> None:
    """Serve ``app`` until interrupted (prints ``NAME listening on URL`` first), with the
    keywords ``listen`` of :func:`privad.services.app.run_service` (host, port, log level,
    TLS, limits).

    ``notes`` go to standard error first, one ``NAME: NOTE`` line each, so that the first
    line of standard output stays ``NAME listening on URL``; the last one warns when the
    server listens beyond loopback without TLS.
    """
    from privad.services.app import run_service

    host = listen["host"]
    if host not in ("127.0.0.1", "localhost", "::1") and listen["ssl_certfile"] is None:
        clear = "tokens and answers travel in clear text"
        notes = [*notes, f"warning: listening on {host} without TLS: {clear}"]
    for line in notes:
        print(f"{name}: {line}", file=sys.stderr, flush=True)
    run_service(app, name=name, announce=lambda line: print(line, flush=True), **listen)


Declaration = Callable[..., None]
"""A server's command as written: its own options as parameters, its help as docstring."""


def serve_command(
    group: typer.Typer,
    name: str,
    *,
    port: int,
    banner: str | None = None,
    server: str | None = None,
    tokens: tuple[Any, Any] | None = (TOKENS_OPTION, TOKEN_OPTION),
    who: str = "sensor",
    why: str = "",
    db: bool = True,
    secrets: Sequence[str] = (),
    prepare: Callable[..., dict[str, Any]] | None = None,
) -> Callable[[Declaration], Declaration]:
    """Register ``spec(**own)`` as ``privad serve NAME`` with the shared options.

    ``spec``'s parameters are the command's own options; the shared ones are added to
    them: the shared ``--db`` first, with the address options (``--host``, ``--port``,
    tokens), unless ``spec`` has its own ``--db`` (then the address options follow the
    command's own), or ``db=False`` (no ``--db``: the console); the request limits, log
    level and TLS last. Once Click has parsed the command line, the shared options are
    checked (the users' tokens, TLS, ``--db`` as an output path), the options named in
    ``secrets`` (peers' tokens) are checked to be given, ``prepare`` (if any) turns the
    options it names into the library's arguments (reading DATA, say), and the library
    composes the server: ``privad.services.servers.SERVER_server(db, tokens,
    max_body_bytes=..., **own)`` (``SERVER`` defaults to ``NAME``; without ``db, tokens``
    where ``tokens`` is None). Its notes go to standard error, and it serves as ``BANNER
    listening on URL`` (default ``privad NAME``). ``tokens``: the ``--tokens``/``--token``
    pair of the server's users ``who`` (``None``: a server without them).

    Examples
    --------
    >>> group = typer.Typer()
    >>> @serve_command(group, "echo", port=8799)
    ... def echo(word: str = typer.Option("hi", "--word")) -> None:
    ...     '''A toy server: its own --word, then the shared options.'''
    >>> command = group.registered_commands[0].callback
    >>> list(inspect.signature(command).parameters)[:7]
    ['db', 'host', 'port', 'tokens', 'token', 'word', 'max_body_bytes']
    """

    def register(spec: Declaration) -> Declaration:
        keyword = inspect.Parameter.KEYWORD_ONLY
        own = [
            p.replace(kind=keyword)
            for p in inspect.signature(spec, eval_str=True).parameters.values()
        ]
        declared = {p.name: p.default for p in own}

        def param(name: str, kind: Any, default: Any) -> inspect.Parameter:
            return inspect.Parameter(name, keyword, default=default, annotation=kind)

        free = f"TCP port (default {port}; 0 picks a free one, printed at start)."
        where = [
            param("host", str, HOST_OPTION),
            param("port", int, PORT.option(port, "--port", "N", free)),
        ]
        if tokens is not None:
            where += [param(n, t, o) for (n, t), o in zip(_TOKENS, tokens, strict=True)]
        if db and "db" not in declared:
            own = [param("db", str, DB_OPTION), *where, *own]
        else:
            own += where
        params = [*own, *(param(n, t, o) for n, t, o in _LIMITS)]

        def command(**options: Any) -> None:
            from privad.services import servers
            from privad.services.app import ServerLimits

            shared = {n: options.pop(n) for n in _SHARED if n in options}
            users = None if tokens is None else _users(shared, who, why)
            if (shared["ssl_certfile"] is None) != (shared["ssl_keyfile"] is None):
                raise ParameterError("--ssl-certfile and --ssl-keyfile go together")
            store = shared.pop("db", None)
            args = () if users is None else (str(check_output_path(store, "--db", "store")), users)
            limits = [
                shared.pop(n) for n in ("max_bytes_in_flight", "header_timeout", "body_timeout")
            ]
            shared.update(host=str(shared["host"]).strip(), limits=ServerLimits(*limits))
            for key in secrets:
                info = declared[key]
                options[key] = required_secret(options[key], info.param_decls[0], info.envvar)
            if prepare is not None:
                options.update(
                    prepare(**{n: options.pop(n) for n in inspect.signature(prepare).parameters})
                )
            compose = getattr(servers, f"{server or name}_server")
            app, notes = compose(*args, max_body_bytes=shared.pop("max_body_bytes"), **options)
            _serve(app, banner or f"privad {name}", notes, shared)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__doc__, command.__name__ = spec.__doc__, spec.__name__
        group.command(name)(command)
        return spec

    return register
