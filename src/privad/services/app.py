"""The app factory and runners of privad's services.

Every privad server (``privad serve analyst``, ``correction``, ``oracle``, ``rmp``, ``sp``)
is a FastAPI app built by :func:`create_app` and run by uvicorn through :func:`run_service`
(or :class:`ThreadedServer` in tests and benchmarks). Both runners apply the server's
:class:`ServerLimits`: a cap on the request bytes in flight (``503`` beyond it), a deadline
for a request's headers and one for its body (``408``), so that neither large bodies sent
together nor connections left half-sent can exhaust the server. :func:`create_app` installs
the one
error body of :mod:`privad.services.errors`, the token registry of
:mod:`privad.services.auth`, ``GET /v1/health`` and the :class:`BodyLimitMiddleware`,
which buffers each request body, answers ``413`` when it exceeds ``max_body_bytes`` and
hands the body to an optional *recorder* (tests use it to keep a transcript of every
message a server received).

Adding a server for another scheme: build its routes in a function that takes the FastAPI
app, pass it to :func:`create_app`, and add one command to ``privad serve``
(:mod:`privad.cli.serve`) that calls :func:`run_service`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from privad.errors import ParameterError, PrivadError
from privad.services.auth import TokenRegistry
from privad.services.bodies import DEFAULT_MAX_BODY_BYTES, Recorder, dumps
from privad.services.errors import error_response, status_of

__all__ = [
    "BodyLimitMiddleware",
    "RequestGate",
    "ServerLimits",
    "ThreadedServer",
    "bind_socket",
    "create_app",
    "run_service",
]

log = logging.getLogger("privad.services")


_Receive = Callable[[], Awaitable[dict]]
_Send = Callable[[dict], Awaitable[None]]


class _HttpMiddleware:
    """An ASGI wrapper that acts on HTTP requests (:meth:`http`) and passes the rest on."""

    app: Any

    async def __call__(self, scope: dict, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: dict, receive: _Receive, send: _Send) -> None:
        raise NotImplementedError


class BodyLimitMiddleware(_HttpMiddleware):
    """ASGI middleware: buffer the request body, 413 above ``max_bytes``, record it.

    The body is read completely (never more than ``max_bytes + 1`` bytes are kept) before
    the app sees it, then replayed to the app; ``recorder("request", "METHOD PATH", body)``
    is called for every request that passes the limit.
    """

    def __init__(self, app: Any, max_bytes: int, recorder: Recorder | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.recorder = recorder

    async def http(self, scope: dict, receive: _Receive, send: _Send) -> None:
        length = _declared_length(scope)
        too_big = length is not None and length > self.max_bytes
        chunks: list[bytes] = []
        size = 0
        if not too_big:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    too_big = True
                    break
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if too_big:
            response = error_response(
                413,
                "body_too_large",
                f"the request body exceeds the limit of {self.max_bytes} bytes; send smaller "
                "windows or raise the server's --max-body-bytes",
                headers={"connection": "close"},
            )
            await response(scope, receive, send)
            return
        body = b"".join(chunks)
        if self.recorder is not None:
            self.recorder("request", f"{scope['method']} {scope['path']}", body)
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


@dataclass(frozen=True)
class ServerLimits:
    """How much work a server takes at once and how long it waits for a request.

    Parameters
    ----------
    max_bytes_in_flight:
        The most request-body bytes received or being handled at once (a body of unknown
        length counts as all of them). A request whose body would go past it while others
        are in flight is answered ``503`` with ``Retry-After`` before its body is read (the
        clients retry); a request is always taken when nothing else is in flight, so one
        body up to ``--max-body-bytes`` always fits.
    header_timeout:
        Seconds a connection may take to send a request's headers (from its opening, or
        from the end of the previous response); then ``408`` and the connection is closed
        (an idle keep-alive connection is closed silently).
    body_timeout:
        Seconds a request may take to send its whole body once its headers are in; then
        ``408`` and the connection is closed.

    Examples
    --------
    >>> ServerLimits(max_bytes_in_flight=2**20, header_timeout=5).body_timeout
    60.0
    """

    max_bytes_in_flight: int = 64 * 1024 * 1024
    header_timeout: float = 10.0
    body_timeout: float = 60.0

    def __post_init__(self) -> None:
        size = self.max_bytes_in_flight
        if isinstance(size, bool) or not isinstance(size, int) or size < 1024:
            raise ParameterError(f"--max-bytes-in-flight must be an integer >= 1024, got {size!r}")
        for option, value in (
            ("--header-timeout", self.header_timeout),
            ("--body-timeout", self.body_timeout),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ParameterError(f"{option} must be a number of seconds, got {value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ParameterError(
                    f"{option} must be a finite number of seconds > 0, got {value!r}"
                )
        object.__setattr__(self, "header_timeout", float(self.header_timeout))
        object.__setattr__(self, "body_timeout", float(self.body_timeout))


def _declared_length(scope: dict) -> int | None:
    """The request body's length from its headers: 0 without a body, None if unknown."""
    headers = dict(scope.get("headers", []))
    if b"content-length" in headers:
        try:
            return max(0, int(headers[b"content-length"]))
        except ValueError:
            return None
    return None if b"transfer-encoding" in headers else 0


class RequestGate(_HttpMiddleware):
    """ASGI wrapper applying :class:`ServerLimits` to every HTTP request: the cap on the
    bytes in flight (``503``) and the body deadline (``408``). The header deadline is the
    connection's (:func:`_header_timeout_protocol`), since an app sees a request only once
    its headers are in.

    Examples
    --------
    >>> async def app(scope, receive, send): ...
    >>> RequestGate(app, ServerLimits(max_bytes_in_flight=4096)).in_flight
    0
    """

    def __init__(self, app: Any, limits: ServerLimits) -> None:
        self.app = app
        self.limits = limits
        self.in_flight = 0  # the event loop's thread only: no lock

    async def http(self, scope: dict, receive: _Receive, send: _Send) -> None:
        length = _declared_length(scope)
        cap = self.limits.max_bytes_in_flight
        size = cap if length is None else min(length, cap)
        if size and self.in_flight and self.in_flight + size > cap:
            await error_response(
                503,
                "server_busy",
                f"the server is receiving or handling {self.in_flight} bytes of requests "
                f"(its --max-bytes-in-flight is {cap}); retry shortly",
                headers={"retry-after": "1", "connection": "close"},
            )(scope, receive, send)
            return
        self.in_flight += size
        deadline = asyncio.get_running_loop().time() + self.limits.body_timeout
        body_done = timed_out = started = False

        async def timed_receive() -> dict:
            nonlocal body_done, timed_out
            if body_done:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                timed_out = body_done = True
                return {"type": "http.disconnect"}
            body_done = message["type"] != "http.request" or not message.get("more_body")
            return message

        async def tracked_send(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, tracked_send)
        finally:
            self.in_flight -= size
        if timed_out and not started:
            await error_response(
                408,
                "request_timeout",
                f"the request body did not arrive within {self.limits.body_timeout:g} s "
                "(the server's --body-timeout)",
                headers={"connection": "close"},
            )(scope, receive, send)


def _header_timeout_protocol(limits: ServerLimits) -> type:
    """uvicorn's h11 protocol with a deadline for each request's headers."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    detail = (
        f"the request headers did not arrive within {limits.header_timeout:g} s (the "
        "server's --header-timeout)"
    )
    body = dumps({"error": "request_timeout", "detail": detail})
    timeout_response = (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
        + body
    )

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:  # a request's headers are in
                self._disarm()

        def on_response_complete(self) -> None:
            self._arm()  # before the next request (possibly pipelined: handled just below)
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(limits.header_timeout, self._expired)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expired(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            if self.conn.trailing_data[0]:  # part of a request came: say why it is dropped
                self.transport.write(timeout_response)
            self.transport.close()

    return HeaderTimeoutProtocol


def create_app(
    *,
    title: str,
    role: str,
    routes: Callable[[FastAPI], None],
    tokens: TokenRegistry,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    recorder: Recorder | None = None,
    on_shutdown: Sequence[Callable[[], None]] = (),
    state: Mapping[str, Any] | None = None,
) -> FastAPI:
    """A FastAPI app with privad's error handlers, body limit, tokens and ``GET /v1/health``.

    ``routes(app)`` adds the server's own endpoints; ``state`` entries become
    ``app.state.<key>``; ``on_shutdown`` callables run when the server stops (close stores
    and clients there).
    """
    if not isinstance(max_body_bytes, int) or max_body_bytes < 1024:
        raise ParameterError(f"max_body_bytes must be an integer >= 1024, got {max_body_bytes!r}")

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        yield
        for fn in on_shutdown:
            with contextlib.suppress(Exception):
                fn()

    app = FastAPI(
        title=title,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/v1/openapi.json",
    )
    app.state.tokens = tokens
    app.state.role = role
    for key, value in (state or {}).items():
        setattr(app.state, key, value)

    @app.exception_handler(PrivadError)
    async def _privad_error(_request: Request, exc: PrivadError) -> JSONResponse:
        status, code = status_of(exc)
        headers = {"www-authenticate": "Bearer"} if status == 401 else None
        return error_response(status, code, str(exc), headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("path", "query"))
            parts.append(f"{where}: {err.get('msg', 'invalid')}")
        return error_response(422, "invalid_parameter", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error")
        return error_response(
            500,
            "internal_error",
            f"internal error ({type(exc).__name__}); nothing was acknowledged",
        )

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        """Liveness: the server's role (no token needed)."""
        return {"status": "ok", "role": role}

    routes(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes, recorder=recorder)
    return app


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ParameterError(f"cannot resolve --host {host!r}: {exc}") from None
    family, kind, proto, _, addr = infos[0]
    # proto must be IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted connections only then
    # (without it, Nagle's algorithm holds each response body for the client's delayed ACK)
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ParameterError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket, scheme: str) -> str:
    host, port = sock.getsockname()[:2]
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def _uvicorn_config(
    app: FastAPI,
    log_level: str,
    ssl_certfile: str | None,
    ssl_keyfile: str | None,
    limits: ServerLimits,
) -> Any:
    import uvicorn

    return uvicorn.Config(
        RequestGate(app, limits),
        http=_header_timeout_protocol(limits),
        log_level=log_level,
        access_log=log_level in ("debug", "info", "trace"),
        server_header=False,
        proxy_headers=False,
        lifespan="on",
        timeout_graceful_shutdown=10,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )


def warm_kernels(name: str) -> None:
    """Load privad's Numba kernels from the cache (compile them if absent) before serving.

    Prints one line on standard error, ``NAME: kernels ready in S s``: a fresh environment
    compiles here, once, not on a client's first request (which would time out).

    Examples
    --------
    >>> warm_kernels("privad example")  # "privad example: kernels ready in ... s" on stderr
    """
    from privad.geometry.warmup import compile_kernels

    print(f"{name}: kernels ready in {compile_kernels():.1f} s", file=sys.stderr, flush=True)


def run_service(
    app: FastAPI,
    *,
    name: str,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    limits: ServerLimits | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve ``app`` with uvicorn until SIGINT/SIGTERM (graceful: requests in flight finish).

    Checks the TLS material (a certificate and the key that matches it), binds
    (``port`` 0 picks a free port), loads (or compiles) the Numba kernels
    (:func:`warm_kernels`: no request waits for them), then calls
    ``announce("NAME listening on URL")`` so
    that scripts can read the address, then serves under ``limits`` (default
    :class:`ServerLimits`). A stop signal prints one line on standard error; SIGINT then
    exits with status 130.
    """
    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise ParameterError("--ssl-certfile and --ssl-keyfile go together")
    if ssl_certfile is not None:
        _check_tls(ssl_certfile, str(ssl_keyfile))
    sock = bind_socket(host, port)
    url = _url(sock, "https" if ssl_certfile else "http")
    warm_kernels(name)
    if ssl_certfile is None and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning(
            "%s listens on %s without TLS: tokens and data cross the network in "
            "clear; use --ssl-certfile/--ssl-keyfile or a TLS proxy",
            name,
            url,
        )
    announce(f"{name} listening on {url}")
    config = _uvicorn_config(app, log_level, ssl_certfile, ssl_keyfile, limits or ServerLimits())
    try:
        _announcing_server(name)(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it stopped on
        sys.exit(130)


def _check_tls(certfile: str, keyfile: str) -> None:
    """Load the certificate and its key as the server will: one line if they do not fit."""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(certfile, keyfile)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ParameterError(
            f"cannot use --ssl-certfile {certfile!r} with --ssl-keyfile {keyfile!r} ({exc}): "
            "give a PEM certificate and the private key that belongs to it"
        ) from None


def _announcing_server(name: str) -> type:
    """uvicorn's server, saying on standard error (once) that it stops and why."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if not self.should_exit:
                print(
                    f"{name}: {signal.Signals(sig).name} received, stopping: requests in "
                    "flight finish first, everything acknowledged is stored",
                    file=sys.stderr,
                    flush=True,
                )
            super().handle_exit(sig, frame)

    return Server


class ThreadedServer:
    """A uvicorn server in a background thread on 127.0.0.1 (tests and benchmarks).

    ``with ThreadedServer(app) as srv: httpx.get(srv.url + "/v1/health")``; :meth:`stop`
    sets ``should_exit`` and joins the thread (requests in flight finish first).
    """

    def __init__(
        self,
        app: FastAPI,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: str = "warning",
        limits: ServerLimits | None = None,
    ) -> None:
        import uvicorn

        self._sock = bind_socket(host, port)
        self.url = _url(self._sock, "http")
        self.server = uvicorn.Server(
            _uvicorn_config(app, log_level, None, None, limits or ServerLimits())
        )
        self._thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self._sock]},
            daemon=True,
            name=f"uvicorn-{self.url}",
        )

    def start(self, timeout: float = 10.0) -> ThreadedServer:
        """Start and wait until the server accepts requests."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.01)
        return self

    def request_stop(self) -> None:
        """Ask the server to exit (returns at once; :meth:`stop` waits)."""
        self.server.should_exit = True

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to exit and wait for its thread."""
        self.request_stop()
        self._thread.join(timeout)
        with contextlib.suppress(OSError):
            self._sock.close()

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
