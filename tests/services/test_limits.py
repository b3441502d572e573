"""A server's request limits over loopback: the cap on bytes in flight (503), the header and
body deadlines (408), and a swapped TLS certificate and key (one line, before binding).

Each test waits on events (a handler that has started, a response, a closed socket), never
on the clock: the deadlines are short and every read has a generous safety timeout.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, Request

from privad.errors import ParameterError
from privad.services.app import ServerLimits, ThreadedServer, create_app, run_service
from privad.services.auth import TokenRegistry

SAFETY = 30.0  # seconds: only a broken server ever waits this long


def _app(started: threading.Event, release: threading.Event) -> FastAPI:
    def routes(app: FastAPI) -> None:
        @app.post("/v1/hold")
        async def hold(request: Request) -> dict:
            size = len(await request.body())
            if size > 2000:  # the big request waits until the test releases it
                started.set()
                from starlette.concurrency import run_in_threadpool

                await run_in_threadpool(release.wait, SAFETY)
            return {"size": size}

    return create_app(title="limits test", role="test", routes=routes, tokens=TokenRegistry([]))


def _read_all(sock: socket.socket) -> bytes:
    sock.settimeout(SAFETY)
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_bytes_in_flight_are_capped_with_503_and_free_again_after() -> None:
    started, release = threading.Event(), threading.Event()
    limits = ServerLimits(max_bytes_in_flight=4096)
    with (
        ThreadedServer(_app(started, release), limits=limits) as srv,
        httpx.Client(timeout=SAFETY) as http,
    ):
        result: dict = {}
        big = threading.Thread(
            target=lambda: result.update(r=http.post(srv.url + "/v1/hold", content=b"x" * 3000))
        )
        big.start()
        assert started.wait(SAFETY)  # 3,000 bytes in flight
        with httpx.Client(timeout=SAFETY) as other:
            busy = other.post(srv.url + "/v1/hold", content=b"y" * 2000)
            assert busy.status_code == 503
            assert busy.headers["retry-after"] == "1"
            assert busy.json()["error"] == "server_busy"
            assert "--max-bytes-in-flight" in busy.json()["detail"]
            small = other.post(srv.url + "/v1/hold", content=b"z" * 1000)  # fits beside it
            assert small.status_code == 200 and small.json() == {"size": 1000}
            assert other.get(srv.url + "/v1/health").status_code == 200  # no body: always
        release.set()
        big.join(SAFETY)
        assert result["r"].status_code == 200
        again = http.post(srv.url + "/v1/hold", content=b"y" * 2000)
        assert again.status_code == 200  # the bytes were given back


def test_one_body_larger_than_the_cap_is_taken_when_nothing_else_is_in_flight() -> None:
    release = threading.Event()
    release.set()
    limits = ServerLimits(max_bytes_in_flight=1024)
    with ThreadedServer(_app(threading.Event(), release), limits=limits) as srv:
        resp = httpx.post(srv.url + "/v1/hold", content=b"x" * 5000, timeout=SAFETY)
        assert resp.status_code == 200 and resp.json() == {"size": 5000}


def test_half_sent_headers_and_bodies_get_408_and_are_closed() -> None:
    limits = ServerLimits(header_timeout=0.2, body_timeout=0.2)
    with ThreadedServer(_app(threading.Event(), threading.Event()), limits=limits) as srv:
        host, port = srv.url.removeprefix("http://").split(":")
        half_headers = [socket.create_connection((host, int(port))) for _ in range(20)]
        half_bodies = [socket.create_connection((host, int(port))) for _ in range(20)]
        idle = socket.create_connection((host, int(port)))
        for sock in half_headers:
            sock.sendall(b"POST /v1/hold HTTP/1.1\r\nhost: x\r\n")
        for sock in half_bodies:
            sock.sendall(b"POST /v1/hold HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{")
        for sock in half_headers + half_bodies:
            answer = _read_all(sock)  # the server closes the connection
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
            assert b'"request_timeout"' in answer
            assert (b"--header-timeout" if sock in half_headers else b"--body-timeout") in answer
            sock.close()
        assert _read_all(idle) == b""  # an idle connection is closed without a word
        idle.close()
        assert httpx.get(srv.url + "/v1/health", timeout=SAFETY).status_code == 200


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_bytes_in_flight", 10), ("header_timeout", 0), ("body_timeout", float("inf"))],
)
def test_limits_are_checked(field: str, value: float) -> None:
    with pytest.raises(ParameterError, match=field.replace("_", "-")):
        ServerLimits(**{field: value})


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_a_swapped_tls_certificate_and_key_is_one_line(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    app = _app(threading.Event(), threading.Event())
    with pytest.raises(ParameterError, match="--ssl-certfile .* private key that belongs"):
        run_service(app, name="t", ssl_certfile=str(key), ssl_keyfile=str(cert))
    (tmp_path / "junk.pem").write_text("not a certificate")
    with pytest.raises(ParameterError, match="--ssl-certfile"):
        run_service(app, name="t", ssl_certfile=str(tmp_path / "junk.pem"), ssl_keyfile=str(key))
