"""Fixtures for the relaxed-DP services: servers on loopback, tokens, ring data, the CLI.

Servers run either as uvicorn threads in this process (:class:`ThreadedServer`, fast) or as
``privad serve ...`` subprocesses (the end-to-end and restart tests), always on 127.0.0.1
with a free port and a temporary SQLite file.
"""

from __future__ import annotations

import io
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import typer

import privad.cli as cli
from privad.cli import sensor as sensor_cli
from privad.cli import serve as serve_cli
from privad.datasets import make_sensor_ring
from privad.relaxed import DBSCANDetector, Sensor, dbscan_parameters, relaxed_sensitivity
from privad.relaxed.correction import estimate_outlier_layer_width
from privad.services.analyst import create_analyst_app
from privad.services.app import ThreadedServer
from privad.services.auth import TokenRegistry
from privad.services.correction import create_correction_app

ANALYST_SECRET = "analyst-peer-secret-0123456789"
SENSOR_SECRETS = {f"s{i}": f"sensor-{i}-secret-abcdefghijklmnop" for i in range(8)}
WINDOW = 2000
GROUPS = ("serve", "sensor")  # the subprocesses run privad with these command groups only
N_WINDOWS = 3


@dataclass(frozen=True)
class Ring:
    """A small sensor ring stream (3 windows) with its public parameters from history."""

    data: np.ndarray
    history: np.ndarray
    rs: np.ndarray
    eps: float
    min_samples: int
    w_o: float

    def detector(self) -> DBSCANDetector:
        return DBSCANDetector(self.eps, self.min_samples)

    def window(self, w: int) -> np.ndarray:
        return self.data[w * WINDOW : (w + 1) * WINDOW]


@pytest.fixture(scope="session")
def ring() -> Ring:
    data = make_sensor_ring(N_WINDOWS * WINDOW, separation=120, rng=0).X
    history = make_sensor_ring(WINDOW, separation=120, rng=1).X
    rs = relaxed_sensitivity(history, 10)
    Hs = Sensor(1.0, rs).scale(history)
    eps, ms = dbscan_parameters(Hs, 10)
    w_o = estimate_outlier_layer_width(Hs, DBSCANDetector(eps, ms)(Hs))
    return Ring(data, history, rs, eps, ms, w_o)


def sensor_registry(with_analyst: bool) -> TokenRegistry:
    return TokenRegistry(
        list(SENSOR_SECRETS.items()), {"analyst": ANALYST_SECRET} if with_analyst else None
    )


class Servers:
    """Start/stop threaded relaxed-DP servers in ``server_pool`` (stopped at teardown)."""

    def __init__(self, tmp_path: Path, ring: Ring, pool: Any) -> None:
        self.tmp_path = tmp_path
        self.ring = ring
        self.pool = pool

    def start_app(self, app: Any) -> ThreadedServer:
        return self.pool.start_app(app)

    def stop(self, srv: ThreadedServer) -> None:
        self.pool.stop(srv)

    def correction(
        self, *, db: str = "cs.sqlite", recorder: Any = None, **kwargs: Any
    ) -> ThreadedServer:
        kwargs.setdefault("outlier_layer_width", self.ring.w_o)
        app = create_correction_app(
            self.tmp_path / db, sensor_registry(True), recorder=recorder, **kwargs
        )
        return self.start_app(app)

    def analyst(
        self,
        correction_url: str,
        *,
        db: str = "analyst.sqlite",
        recorder: Any = None,
        **kwargs: Any,
    ) -> ThreadedServer:
        kwargs.setdefault("detector", self.ring.detector())
        kwargs.setdefault("correction_token", ANALYST_SECRET)
        app = create_analyst_app(
            self.tmp_path / db,
            sensor_registry(False),
            correction_url=correction_url,
            recorder=recorder,
            **kwargs,
        )
        return self.start_app(app)

    def pair(self, **kwargs: Any) -> tuple[ThreadedServer, ThreadedServer]:
        cs = self.correction(recorder=kwargs.get("cs_recorder"))
        a = self.analyst(cs.url, recorder=kwargs.get("analyst_recorder"))
        return a, cs


@pytest.fixture
def servers(tmp_path: Path, ring: Ring, server_pool: Any) -> Servers:
    return Servers(tmp_path, ring, server_pool)


def headers(name: str = "s0") -> dict[str, str]:
    secret = ANALYST_SECRET if name == "analyst" else SENSOR_SECRETS[name]
    return {"authorization": f"Bearer {secret}"}


@pytest.fixture
def auth() -> Callable[[str], dict[str, str]]:
    """``auth("s0")``: the Authorization header of a sensor (or ``"analyst"``)."""
    return headers


class Process:
    """A ``privad serve ...`` subprocess; ``url`` is read from its 'listening on' line."""

    def __init__(self, args: list[str], log: Path, shim: str) -> None:
        self.log = log
        self._err = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", shim, *args],
            stdout=subprocess.PIPE,
            stderr=self._err,
            env={**os.environ, "COLUMNS": "200"},
        )
        self.url = self._read_url(timeout=30.0)

    def _read_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        buf = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                buf += chunk
                if b"\n" in buf:
                    line = buf.split(b"\n", 1)[0].decode()
                    assert " listening on " in line, line
                    url = line.rsplit(" ", 1)[1]
                    self._wait_ready(url, deadline)
                    return url
            elif self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"server did not start: {self.log.read_text()[-2000:]}")

    def _wait_ready(self, url: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/v1/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{url} not healthy")

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown (what was acknowledged must be on disk)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._err.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._err.close()


@pytest.fixture
def spawn(tmp_path: Path, privad_shim: Any) -> Iterator[Callable[..., Process]]:
    """``spawn("serve", "analyst", ...)``: a privad subprocess, stopped at teardown."""
    procs: list[Process] = []

    def _spawn(*args: str) -> Process:
        p = Process(list(args), tmp_path / f"server-{len(procs)}.log", privad_shim(*GROUPS))
        procs.append(p)
        return p

    yield _spawn
    for p in procs:
        p.stop()


def sensor_send(source: Any, analyst: str, correction: str, token: str, options: str) -> list[str]:
    """``privad sensor send SOURCE`` to the two servers with a sensor's ``token``, then
    ``options`` (white-space separated)."""
    to = ["--analyst", analyst, "--correction", correction, "--token", token]
    return ["sensor", "send", str(source), *to, *options.split()]


@pytest.fixture
def send_args() -> Callable[..., list[str]]:
    """:func:`sensor_send`: ``send_args(source, analyst_url, cs_url, token, "--epsilon 1 ...")``
    is the command line of ``privad sensor send``."""
    return sensor_send


class RelaxedProcesses:
    """``privad serve correction`` and ``privad serve analyst`` as subprocesses (``spawn``)
    on free ports, their stores in the test's folder, the sensors' tokens in a file."""

    def __init__(self, tmp_path: Path, spawn: Callable[..., Process]) -> None:
        self.tmp_path, self.spawn = tmp_path, spawn

    def tokens(self, *sensors: str) -> Path:
        """A tokens file (a comment, then NAME=SECRET lines) of ``sensors``."""
        path = self.tmp_path / "tokens.txt"
        path.write_text("# sensors\n" + "".join(f"{s}={SENSOR_SECRETS[s]}\n" for s in sensors))
        return path

    def analyst_args(
        self, cs_url: str, eps: float, min_samples: int, tokens: Path, db: str = "a.sqlite"
    ) -> list[str]:
        """``privad serve analyst`` against the correction server at ``cs_url``."""
        return [
            *f"serve analyst --db {self.tmp_path / db} --port 0 --tokens {tokens}".split(),
            *f"--correction-url {cs_url} --correction-token {ANALYST_SECRET}".split(),
            *f"--eps {eps!r} --min-samples {min_samples}".split(),
        ]

    def pair(
        self, w_o: float, eps: float, min_samples: int, sensors: tuple[str, ...] = ("s0",)
    ) -> tuple[Process, Process]:
        """(correction, analyst), stores ``cs.sqlite`` and ``a.sqlite``."""
        tokens = self.tokens(*sensors)
        cs = self.spawn(
            *f"serve correction --db {self.tmp_path / 'cs.sqlite'} --port 0".split(),
            *f"--tokens {tokens} --analyst-token {ANALYST_SECRET}".split(),
            *f"--outlier-layer-width {w_o!r}".split(),
        )
        return cs, self.spawn(*self.analyst_args(cs.url, eps, min_samples, tokens))


@pytest.fixture
def processes(tmp_path: Path, spawn: Callable[..., Process]) -> RelaxedProcesses:
    """:class:`RelaxedProcesses`: ``processes.pair(w_o, eps, min_samples)`` starts the two
    relaxed-DP servers as ``privad serve`` subprocesses (stopped at teardown)."""
    return RelaxedProcesses(tmp_path, spawn)


@pytest.fixture
def cli_process(tmp_path: Path, privad_shim: Any) -> Iterator[Callable[..., subprocess.Popen]]:
    """``cli_process("sensor", "send", ...)``: ``privad ARGS`` (serve and sensor groups) as a
    subprocess with a pipe on standard input and standard output/error in files
    (``proc.out``, ``proc.err``); killed at teardown if still running."""
    procs: list[subprocess.Popen] = []

    def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        k = len(procs)
        out, err = tmp_path / f"cli-{k}.out", tmp_path / f"cli-{k}.err"
        with open(out, "wb") as o, open(err, "wb") as e:
            proc = subprocess.Popen(
                [sys.executable, "-c", privad_shim(*GROUPS), *args],
                stdin=subprocess.PIPE,
                stdout=o,
                stderr=e,
                env={**os.environ, "COLUMNS": "200", **(env or {})},
            )
        proc.out, proc.err = out, err  # type: ignore[attr-defined]
        procs.append(proc)
        return proc

    yield _start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stdin is not None:
            proc.stdin.close()


@pytest.fixture
def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Callable[..., tuple[int, str, str]]:
    """Run ``privad ARGS`` in-process (serve and sensor groups only): (status, out, err).

    The sensor's default ledger and journal are files in the test's folder; ``sensor
    send`` gets ``--global-sensitivity 400`` unless the test gives one."""
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "default-ledger.sqlite"))
    monkeypatch.setenv("PRIVAD_SENSOR_JOURNAL", str(tmp_path / "default-journal.sqlite"))
    app = typer.Typer(
        name="privad", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False
    )

    @app.callback()
    def _root() -> None:
        """privad (serve and sensor groups)."""

    monkeypatch.setattr(cli, "app", app)
    monkeypatch.setattr(
        cli, "_register", lambda: (serve_cli.register(app), sensor_cli.register(app))
    )
    monkeypatch.setenv("COLUMNS", "200")

    def _run(*args: str, stdin: str = "") -> tuple[int, str, str]:
        if args[:2] == ("sensor", "send") and "--global-sensitivity" not in args:
            args = (*args, "--global-sensitivity", "400")
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        try:
            cli.main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def write_csv(path: Path, X: np.ndarray, header: str = "x1,x2") -> Path:
    """X as a CSV with a header; values written with repr precision."""
    lines = [header] + [",".join(repr(float(v)) for v in row) for row in X]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def to_csv() -> Callable[..., Path]:
    """``to_csv(path, X, header="x1,x2")``: write X as a CSV file."""
    return write_csv


@pytest.fixture
def secrets() -> dict[str, str]:
    """The sensors' secrets by name, plus ``"analyst"``: the analyst's at the CS."""
    return {**SENSOR_SECRETS, "analyst": ANALYST_SECRET}
