"""``privad serve console`` (:mod:`privad.services.console`): a web console over a ledger,
on the options every ``privad serve`` server shares; registered by :mod:`privad.cli.serve`."""

from __future__ import annotations

import typer

from privad.cli._serve_options import (
    BODY_TIMEOUT_OPTION,
    HEADER_TIMEOUT_OPTION,
    HOST_OPTION,
    LOG_LEVEL_OPTION,
    MAX_BODY_OPTION,
    MAX_IN_FLIGHT_OPTION,
    SSL_CERT_OPTION,
    SSL_KEY_OPTION,
    ServeOptions,
    port_option,
)

__all__ = ["serve_console"]


def serve_console(
    ledger: str = typer.Option(
        ..., "--ledger", metavar="PATH", help="The ledger file to show (it must exist)."
    ),
    store: str | None = typer.Option(
        None,
        "--store",
        metavar="PATH",
        help="A server's store (curator, analyst, correction, rmp) to show on /services; "
        "opened read-only, never written.",
    ),
    utility: str | None = typer.Option(
        None,
        "--utility",
        metavar="DIR",
        help="Saved results of benchmarks/bench_utility.py (benchmarks/results/utility), "
        "shown on /plan at the chosen ε.",
    ),
    operator_token: str | None = typer.Option(
        None,
        "--operator-token",
        metavar="SECRET",
        envvar="PRIVAD_CONSOLE_OPERATOR_TOKEN",
        help="The operator's secret: with it, a login may set budgets and cancel stale "
        "reservations. Default: $PRIVAD_CONSOLE_OPERATOR_TOKEN; none: read-only console.",
    ),
    host: str = HOST_OPTION,
    port: int = port_option(8706),
    max_body_bytes: int = MAX_BODY_OPTION,
    max_bytes_in_flight: int = MAX_IN_FLIGHT_OPTION,
    header_timeout: float = HEADER_TIMEOUT_OPTION,
    body_timeout: float = BODY_TIMEOUT_OPTION,
    log_level: str = LOG_LEVEL_OPTION,
    ssl_certfile: str | None = SSL_CERT_OPTION,
    ssl_keyfile: str | None = SSL_KEY_OPTION,
) -> None:
    """A web console over a ledger: budgets, spends, a store's parties, plans (docs/console.md)."""
    from privad.services.console import create_console_app

    common = ServeOptions.parse(
        ledger, host, port, None, None, max_body_bytes, log_level, ssl_certfile, ssl_keyfile,
        max_bytes_in_flight=max_bytes_in_flight, header_timeout=header_timeout,
        body_timeout=body_timeout, tokens_required=False,
    )  # fmt: skip
    app = create_console_app(
        ledger,
        store=store,
        operator_token=None if operator_token is None else operator_token.strip(),
        utility=utility,
        max_body_bytes=common.max_body_bytes,
    )
    mode = "read-only" if operator_token is None else "operator actions need the token"
    common.run(app, "privad console", [f"ledger {ledger}; {mode}"])
