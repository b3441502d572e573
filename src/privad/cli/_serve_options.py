"""The options every ``privad serve`` server shares (``--db``, ``--host``, ``--port``,
tokens, ``--max-body-bytes``, the request limits, ``--log-level``, TLS) and
:class:`ServeOptions`, which checks them and runs a server (:mod:`privad.cli.serve`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import typer

from privad.cli._options import EXISTING_FILE, Choice, Integer, Number, check_output_path
from privad.errors import ParameterError

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


PORT = Integer("a TCP port 0..65535", minimum=0, maximum=65535)


# --------------------------------------------------------------------------------------------
# Options every server shares
# --------------------------------------------------------------------------------------------

DB_OPTION: Any = typer.Option(
    ...,
    "--db",
    metavar="PATH",
    help="SQLite file of this server (created if missing; WAL, synchronous=FULL). Each server "
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
MAX_BODY_OPTION: Any = typer.Option(
    16777216,
    "--max-body-bytes",
    metavar="N",
    parser=Integer("a number of bytes >= 1024", minimum=1024).bind("--max-body-bytes"),
    help="Largest request body accepted (bytes, default 16 MiB); larger ones get 413.",
)
MAX_IN_FLIGHT_OPTION: Any = typer.Option(
    64 * 1024 * 1024,
    "--max-bytes-in-flight",
    metavar="N",
    parser=Integer("a number of bytes >= 1024", minimum=1024).bind("--max-bytes-in-flight"),
    help="Most request-body bytes received or handled at once (default 64 MiB); a request "
    "past it while others are in flight gets 503 with Retry-After (clients retry). One body "
    "up to --max-body-bytes is always taken.",
)
HEADER_TIMEOUT_OPTION: Any = typer.Option(
    10.0,
    "--header-timeout",
    metavar="SECONDS",
    parser=Number("a number of seconds > 0", strict=True).bind("--header-timeout"),
    help="Seconds a client may take to send a request's headers (default 10); then 408 and "
    "the connection is closed.",
)
BODY_TIMEOUT_OPTION: Any = typer.Option(
    60.0,
    "--body-timeout",
    metavar="SECONDS",
    parser=Number("a number of seconds > 0", strict=True).bind("--body-timeout"),
    help="Seconds a client may take to send a request's body (default 60); then 408 and the "
    "connection is closed.",
)
LOG_LEVEL_OPTION: Any = typer.Option(
    "warning",
    "--log-level",
    metavar="LEVEL",
    parser=Choice(LOG_LEVELS).bind("--log-level"),
    help="Server log level: critical, error, warning (default), info (with access log), debug.",
)
SSL_CERT_OPTION: Any = typer.Option(
    None,
    "--ssl-certfile",
    metavar="FILE",
    parser=EXISTING_FILE.bind("--ssl-certfile"),
    help="TLS certificate (PEM); with --ssl-keyfile.",
)
SSL_KEY_OPTION: Any = typer.Option(
    None,
    "--ssl-keyfile",
    metavar="FILE",
    parser=EXISTING_FILE.bind("--ssl-keyfile"),
    help="TLS private key (PEM); with --ssl-certfile.",
)


def port_option(default: int) -> Any:
    """``--port`` with a per-server default."""
    return typer.Option(
        default,
        "--port",
        metavar="N",
        parser=PORT.bind("--port"),
        help=f"TCP port (default {default}; 0 picks a free one, printed at start).",
    )


@dataclass(frozen=True)
class ServeOptions:
    """The parsed shared options of a ``privad serve`` command."""

    db: str
    host: str
    port: int
    tokens: list[tuple[str, str]]
    max_body_bytes: int
    log_level: str
    ssl_certfile: str | None
    ssl_keyfile: str | None
    limits: Any  # privad.services.app.ServerLimits (imported when a server runs)

    @classmethod
    def parse(
        cls,
        db: str,
        host: str,
        port: int,
        tokens_file: str | None,
        token: Sequence[str] | None,
        max_body_bytes: int,
        log_level: str,
        ssl_certfile: str | None,
        ssl_keyfile: str | None,
        *,
        max_bytes_in_flight: int,
        header_timeout: float,
        body_timeout: float,
        tokens_required: bool = True,
    ) -> ServeOptions:
        """Parse and check the shared options (one-line ParameterError on a mistake);
        ``tokens_required=False`` for a server whose readers need none (the console)."""
        from privad.services.app import ServerLimits
        from privad.services.auth import load_token_file, parse_token_spec

        pairs: list[tuple[str, str]] = []
        if tokens_file is not None:
            pairs.extend(load_token_file(tokens_file))
        for spec in token or ():
            pairs.append(parse_token_spec(spec))
        if not pairs and tokens_required:
            raise ParameterError(
                "no sensor tokens: give --tokens FILE (NAME=SECRET lines) or --token NAME=SECRET"
            )
        if (ssl_certfile is None) != (ssl_keyfile is None):
            raise ParameterError("--ssl-certfile and --ssl-keyfile go together")
        return cls(
            db=str(check_output_path(db, "--db", "store")),
            host=str(host).strip(),
            port=port,
            tokens=pairs,
            max_body_bytes=max_body_bytes,
            log_level=log_level,
            ssl_certfile=ssl_certfile,
            ssl_keyfile=ssl_keyfile,
            limits=ServerLimits(max_bytes_in_flight, header_timeout, body_timeout),
        )

    def run(self, app: Any, name: str, notes: Sequence[str] = ()) -> None:
        """Serve ``app`` until interrupted (prints ``NAME listening on URL`` first).

        ``notes`` go to standard error first, one ``NAME: NOTE`` line each, so that the first
        line of standard output stays ``NAME listening on URL``.
        """
        import sys

        from privad.services.app import run_service

        for line in notes:
            print(f"{name}: {line}", file=sys.stderr, flush=True)

        run_service(
            app,
            name=name,
            host=self.host,
            port=self.port,
            log_level=self.log_level,
            ssl_certfile=self.ssl_certfile,
            ssl_keyfile=self.ssl_keyfile,
            limits=self.limits,
            announce=lambda line: print(line, flush=True),
        )
