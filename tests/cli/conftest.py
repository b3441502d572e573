"""Fixtures shared by the CLI tests: ``privad`` run in-process through ``privad.cli.main``
(so a PrivadError becomes one line and exit status 2) on a fresh Typer app that holds only
the command groups under test, so a test depends on no other group."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from types import ModuleType

import pytest
import typer

import privad.cli as cli
from privad.cli._progress import PROGRESS_DELAY_ENV


def _main(
    monkeypatch: pytest.MonkeyPatch,
    groups: Sequence[ModuleType],
    args: Sequence[str],
    *,
    stdin: str = "",
    columns: int = 200,
) -> int:
    """Run ``privad ARGS`` on a fresh app holding ``groups`` (CLI modules with a
    ``register(app)``); returns the exit status."""
    app = typer.Typer(
        name="privad", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False
    )

    @app.callback()
    def _root() -> None:
        """privad (test app)."""

    def _register() -> None:
        for group in groups:
            group.register(app)

    if PROGRESS_DELAY_ENV not in os.environ:  # progress lines only where a test asks for them
        monkeypatch.setenv(PROGRESS_DELAY_ENV, "inf")
    monkeypatch.setattr(cli, "app", app)
    monkeypatch.setattr(cli, "_register", _register)
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        cli.main(list(args))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def _error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("privad: error: ")
    return lines[0]


@pytest.fixture(scope="session")
def error_line():
    """``error_line(stderr)``: checks that standard error is one line ``privad: error: ...``
    (no traceback) and returns it."""
    return _error_line


@pytest.fixture(scope="session")
def privad_main():
    """``privad_main(monkeypatch, groups, args, *, stdin="", columns=200)``: the exit status
    of ``privad ARGS`` (for fixtures with a wider scope, which bring their own monkeypatch)."""
    return _main


@pytest.fixture
def privad_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``privad_cli(*groups, columns=200)`` gives ``run(*args, stdin="")``, which runs
    ``privad ARGS`` in-process and returns (exit status, stdout, stderr)."""

    def make(*groups: ModuleType, columns: int = 200):
        def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
            capsys.readouterr()
            code = _main(monkeypatch, groups, args, stdin=stdin, columns=columns)
            out, err = capsys.readouterr()
            return code, out, err

        return run

    return make


TOKEN_ENVS = (
    "PRIVAD_CURATOR_TOKEN",
    "PRIVAD_ORACLE_TOKEN",
    "PRIVAD_RMP_OPERATOR_TOKEN",
    "PRIVAD_RMP_REGISTRATION_TOKEN",
    "PRIVAD_RMP_TOKEN",
    "PRIVAD_SENSOR_TOKEN",
    "PRIVAD_TOKENS",
)


@pytest.fixture
def in_tmp_home(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """Run in ``tmp_path`` with its own HOME and ledger and no privad token in the
    environment (the user's real ones must never leak into a test)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "ledger.sqlite"))
    for env in TOKEN_ENVS:
        monkeypatch.delenv(env, raising=False)
    return tmp_path


@pytest.fixture(scope="module")
def dask_cluster():
    """A distributed client on an in-process LocalCluster of two single-threaded workers
    (threads of the test process: Numba's OpenMP is not fork-safe), for ``--scheduler``."""
    from privad.distributed import dask_client

    with dask_client(workers=2, processes=False) as client:
        yield client


@pytest.fixture
def rmp_server(server_pool, tmp_path):
    """``rmp_server(n, operator=..., user=...)``: the URL of a fresh RMP mining server over
    loopback for ``n`` attributes (r = 1, α = 0.2, 5 training epochs, T drawn from seed 0),
    with that operator token and one end user, ``alice``, holding ``user``."""
    from privad.rmp.aann import AANNTraining
    from privad.services.rmp import create_rmp_app

    def start(n: int, *, operator: str, user: str) -> str:
        app = create_rmp_app(
            tmp_path / "m.sqlite",
            [("alice", user)],
            operator_token=operator,
            n=n,
            r=1,
            alpha=0.2,
            rng=0,
            training=AANNTraining(epochs=5),
        )
        return server_pool.start_app(app).url

    return start
