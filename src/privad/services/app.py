"""The app factory and runners of privad's services.

Every privad server (``privad serve analyst``, ``correction``, ``oracle``, ``rmp``, ``sp``)
is a FastAPI app built by :func:`create_app` and run by uvicorn through :func:`run_service`
(or :class:`ThreadedServer` in tests and benchmarks). :func:`create_app` installs the one
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

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from privad.errors import ParameterError, PrivadError
from privad.services.auth import TokenRegistry
from privad.services.bodies import DEFAULT_MAX_BODY_BYTES, Recorder
from privad.services.errors import error_response, status_of

__all__ = [
    "BodyLimitMiddleware",
    "ThreadedServer",
    "bind_socket",
    "create_app",
    "run_service",
]

log = logging.getLogger("privad.services")


class BodyLimitMiddleware:
    """ASGI middleware: buffer the request body, 413 above ``max_bytes``, record it.

    The body is read completely (never more than ``max_bytes + 1`` bytes are kept) before
    the app sees it, then replayed to the app; ``recorder("request", "METHOD PATH", body)``
    is called for every request that passes the limit.
    """

    def __init__(self, app: Any, max_bytes: int, recorder: Recorder | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.recorder = recorder

    async def __call__(
        self,
        scope: dict,
        receive: Callable[[], Awaitable[dict]],
        send: Callable[[dict], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = False
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = False
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
    app: FastAPI, log_level: str, ssl_certfile: str | None, ssl_keyfile: str | None
) -> Any:
    import uvicorn

    return uvicorn.Config(
        app,
        log_level=log_level,
        access_log=log_level in ("debug", "info", "trace"),
        server_header=False,
        proxy_headers=False,
        lifespan="on",
        timeout_graceful_shutdown=10,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )


def run_service(
    app: FastAPI,
    *,
    name: str,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve ``app`` with uvicorn until SIGINT/SIGTERM (graceful: requests in flight finish).

    Binds first (``port`` 0 picks a free port), then calls ``announce("NAME listening on
    URL")`` so that scripts can read the address, then serves.
    """
    import uvicorn

    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise ParameterError("--ssl-certfile and --ssl-keyfile go together")
    sock = bind_socket(host, port)
    url = _url(sock, "https" if ssl_certfile else "http")
    if ssl_certfile is None and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning(
            "%s listens on %s without TLS: tokens and data cross the network in "
            "clear; use --ssl-certfile/--ssl-keyfile or a TLS proxy",
            name,
            url,
        )
    announce(f"{name} listening on {url}")
    server = uvicorn.Server(_uvicorn_config(app, log_level, ssl_certfile, ssl_keyfile))
    server.run(sockets=[sock])


class ThreadedServer:
    """A uvicorn server in a background thread on 127.0.0.1 (tests and benchmarks).

    ``with ThreadedServer(app) as srv: httpx.get(srv.url + "/v1/health")``; :meth:`stop`
    sets ``should_exit`` and joins the thread (requests in flight finish first).
    """

    def __init__(
        self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"
    ) -> None:
        import uvicorn

        self._sock = bind_socket(host, port)
        self.url = _url(self._sock, "http")
        self.server = uvicorn.Server(_uvicorn_config(app, log_level, None, None))
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
