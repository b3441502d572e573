"""``privad serve``: configuration errors are one line with exit status 2 (nothing is served),
and a real server process starts, answers, and stops cleanly on SIGTERM.

The commands run through ``privad.cli.main`` on a fresh Typer app that has only the
``serve`` group, so these tests depend on no other group.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from privad.cli import serve

SECRET = "sensor-secret-0123456789abcdef"
PEER = "analyst-secret-0123456789abcdef"


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch):
    """Run ``privad ARGS`` in-process; return (exit status, stdout, stderr)."""
    monkeypatch.delenv("PRIVAD_ANALYST_TOKEN", raising=False)
    monkeypatch.delenv("PRIVAD_CORRECTION_TOKEN", raising=False)
    return privad_cli(serve)


def test_help_lists_the_servers(run) -> None:
    code, out, _ = run("serve", "--help")
    assert code == 0 and "analyst" in out and "correction" in out
    code, out, _ = run("serve", "analyst", "--help")
    assert code == 0 and "--correction-url" in out and "--eps" in out
    code, out, _ = run("serve", "correction", "--help")
    assert code == 0 and "--outlier-layer-width" in out and "--analyst-token" in out


def test_configuration_errors_are_one_line(error_line, run, tmp_path: Path) -> None:
    db = str(tmp_path / "x.sqlite")
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"s1={SECRET}\n")
    cs = [
        "serve",
        "correction",
        "--db",
        db,
        "--port",
        "0",
        "--outlier-layer-width",
        "0.5",
        "--analyst-token",
        PEER,
    ]
    an = [
        "serve",
        "analyst",
        "--db",
        db,
        "--port",
        "0",
        "--correction-url",
        "http://127.0.0.1:1",
        "--correction-token",
        PEER,
        "--eps",
        "0.5",
        "--min-samples",
        "5",
    ]
    cases = [
        (cs, "no sensor tokens"),
        (cs + ["--token", "s1=short"], "at least 16 characters"),
        (cs + ["--token", "s1"], "NAME=SECRET"),
        (cs + ["--tokens", str(tmp_path / "missing.txt")], "cannot read tokens file"),
        (cs + ["--token", f"s1={SECRET}", "--token", f"s1={SECRET}x"], "given twice"),
        (cs + ["--token", f"s1={SECRET}", "--port", "70000"], "--port must be"),
        (cs + ["--token", f"s1={SECRET}", "--max-fp-share", "2"], "--max-fp-share must be"),
        (
            cs + ["--token", f"s1={SECRET}", "--outlier-layer-width", "-1"],
            "--outlier-layer-width must be",
        ),
        (cs + ["--token", f"s1={SECRET}", "--ssl-certfile", str(tokens)], "go together"),
        (cs + ["--token", f"s1={SECRET}", "--log-level", "loud"], "--log-level must be"),
        (cs + ["--token", f"analyst-x={PEER}"], "same secret"),
        (
            [
                "serve",
                "correction",
                "--db",
                db,
                "--token",
                f"s1={SECRET}",
                "--outlier-layer-width",
                "1",
            ],
            "--analyst-token is required",
        ),
        (an + ["--tokens", str(tokens), "--eps", "0"], "--eps must be"),
        (an + ["--tokens", str(tokens), "--min-samples", "0"], "--min-samples must be"),
        (an + ["--tokens", str(tokens), "--backend", "gpu"], "--backend must be one of"),
        (
            an + ["--tokens", str(tokens), "--correction-url", "localhost:8702"],
            "must start with http",
        ),
        (
            an[:-6] + ["--eps", "1", "--min-samples", "2", "--tokens", str(tokens)],
            "--correction-token is required",
        ),
        (
            [
                "serve",
                "oracle",
                "x.npy",
                "--db",
                db,
                "--epsilon",
                "1",
                "--budget",
                "1",
                "--delta",
                "2",
                "--tokens",
                str(tokens),
            ],
            "--delta must be a number in (0, 1)",
        ),
        (
            [
                "serve",
                "sp",
                "thyroid",
                "--beta",
                "2",
                "--r",
                "1",
                "--epsilon",
                "1",
                "--budget",
                "1",
                "--delta",
                "0",
                "--db",
                db,
                "--ledger",
                db + "-l",
                "--tokens",
                str(tokens),
            ],
            "--delta must be a number in (0, 1)",
        ),
    ]
    for args, words in cases:
        code, out, err = run(*args)
        assert code == 2, (args, out, err)
        assert words in error_line(err), (words, err)


def test_database_of_the_other_role_and_busy_port(error_line, run, tmp_path: Path) -> None:
    from privad.services.correction import CorrectionStore

    db = tmp_path / "cs.sqlite"
    CorrectionStore(db).close()
    code, _, err = run(
        "serve",
        "analyst",
        "--db",
        str(db),
        "--port",
        "0",
        "--token",
        f"s1={SECRET}",
        "--correction-url",
        "http://127.0.0.1:1",
        "--correction-token",
        PEER,
        "--eps",
        "1",
        "--min-samples",
        "2",
    )
    assert code == 2 and "correction database, not a analyst one" in error_line(err)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code, _, err = run(
            "serve",
            "correction",
            "--db",
            str(db),
            "--port",
            str(port),
            "--token",
            f"s1={SECRET}",
            "--analyst-token",
            PEER,
            "--outlier-layer-width",
            "1",
        )
    assert code == 2 and "cannot listen on 127.0.0.1:" in error_line(err)


def _correction(shim: Any, db: Path, tokens: str, *more: str, stderr: int) -> subprocess.Popen:
    """``privad serve correction`` (the serve group alone) on a free port, w_O = 0.25, the
    analyst's token and ``$PRIVAD_TOKENS`` (``tokens``) from the environment; standard
    output a text pipe."""
    args = f"serve correction --db {db} --port 0 --outlier-layer-width 0.25".split()
    env = {**os.environ, "PRIVAD_ANALYST_TOKEN": PEER, "PRIVAD_TOKENS": tokens}
    return subprocess.Popen(
        [sys.executable, "-c", shim("serve"), *args, *more],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
        # a job started in the background of a script inherits SIGINT ignored, and Python
        # then installs no KeyboardInterrupt handler: give the server the default, as a
        # terminal would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.mark.parametrize(
    ("sig", "statuses", "tokens"),
    [
        (signal.SIGTERM, (0, -signal.SIGTERM), ["--token", f"s1={SECRET}"]),
        (signal.SIGINT, (130,), []),  # its tokens from $PRIVAD_TOKENS, off the command line
    ],
    ids=["SIGTERM", "SIGINT"],
)
def test_server_process_starts_answers_and_stops_on_a_signal(
    tmp_path: Path, sig: signal.Signals, statuses: tuple[int, ...], tokens: list[str], privad_shim
) -> None:
    db = tmp_path / "cs.sqlite"
    env_tokens = f"s1={SECRET}\ns2={SECRET}-2"
    proc = _correction(privad_shim, db, env_tokens, *tokens, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("privad correction listening on http://127.0.0.1:"), line
        url = line.split()[-1]
        deadline = time.monotonic() + 20
        while True:
            try:
                r = httpx.get(url + "/v1/health", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert r.json() == {"status": "ok", "role": "correction"}
        r = httpx.get(url + "/v1/windows", headers={"authorization": f"Bearer {SECRET}"})
        assert r.status_code == 200 and r.json() == {"sensor": "s1", "windows": []}
        r = httpx.get(url + "/v1/windows", headers={"authorization": f"Bearer {PEER}"})
        assert r.status_code == 403  # the env var set the analyst's token
        if not tokens:  # both entries of $PRIVAD_TOKENS were read
            r = httpx.get(url + "/v1/windows", headers={"authorization": f"Bearer {SECRET}-2"})
            assert r.status_code == 200 and r.json()["sensor"] == "s2"
    finally:
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    # uvicorn shuts down gracefully, then re-raises the signal (the conventional exit status)
    assert proc.returncode in statuses, err
    assert err.strip().splitlines()[-1] == (  # after the line that the kernels are ready
        f"privad correction: {sig.name} received, stopping: requests in flight finish first, "
        "everything acknowledged is stored"
    )
    assert db.exists() and db.stat().st_mode & 0o777 == 0o600


def test_the_curator_refuses_the_ledger_or_a_garbage_file_as_its_store(
    error_line, run, tmp_path: Path
) -> None:
    import sqlite3

    from privad.accounting import Ledger

    (tmp_path / "d.csv").write_text("x1,x2\n0.1,0.2\n0.3,0.4\n0.5,0.6\n0.2,0.2\n")
    ledger = tmp_path / "l.sqlite"
    Ledger(ledger, create=True).close()
    (tmp_path / "junk.sqlite").write_bytes(b"garbage" * 200)
    common = ["serve", "sp", str(tmp_path / "d.csv"), "--beta", "2", "--r", "0.1"]
    common += ["--epsilon", "0.5", "--budget", "5", "--ledger", str(ledger), "--port", "0"]
    common += ["--token", f"q1={SECRET}"]
    code, out, err = run(*common, "--db", str(ledger))
    assert code == 2 and out == ""
    assert "is a privad ledger (it holds budgets, events, spends)" in error_line(err)
    with sqlite3.connect(ledger) as conn:  # nothing of the curator's was written into it
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert not tables & {"answers", "asked", "meta"}
    code, out, err = run(*common, "--db", str(tmp_path / "junk.sqlite"))
    assert code == 2 and out == ""
    assert "is not a usable SQLite database" in error_line(err)


def test_serve_sp_warns_about_a_large_epsilon_once(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: ``serve sp`` builds and validates the mechanism once (the curator reuses
    it), so ``--epsilon 25`` gives one warning line (the serving itself is stubbed out)."""
    from privad.services import app as service_app

    monkeypatch.setattr(service_app, "run_service", lambda app, **kw: None)
    (tmp_path / "d.csv").write_text("x1,x2\n0.1,0.2\n0.3,0.4\n0.5,0.6\n0.2,0.2\n")
    args = ["serve", "sp", str(tmp_path / "d.csv"), "--beta", "2", "--r", "0.1"]
    args += ["--epsilon", "25", "--budget", "50", "--ledger", str(tmp_path / "l.sqlite")]
    args += ["--db", str(tmp_path / "c.sqlite"), "--port", "0", "--token", f"q1={SECRET}"]
    code, out, err = run(*args)
    assert code == 0 and out == "", err
    warned = [line for line in err.splitlines() if "protects (almost) nothing" in line]
    assert len(warned) == 1, err
    assert warned[0].startswith("privad: warning: epsilon = 25 per answer")


def test_server_loads_its_kernels_before_it_reports_listening(tmp_path: Path, privad_shim) -> None:
    """One line on standard error says the kernels are ready, before ``listening on``: a
    client's first request never waits for a compilation (standard error merged into
    standard output keeps the order of the two flushed lines)."""
    db = tmp_path / "c.sqlite"
    proc = _correction(privad_shim, db, f"s1={SECRET}", stderr=subprocess.STDOUT)
    try:
        lines = [proc.stdout.readline()]  # type: ignore[union-attr]
        while lines[-1] and " listening on " not in lines[-1]:
            lines.append(proc.stdout.readline())  # type: ignore[union-attr]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert lines[-1].startswith("privad correction listening on http://127.0.0.1:"), lines
    ready = [line for line in lines if line.startswith("privad correction: kernels ready in ")]
    assert len(ready) == 1 and ready[0].rstrip().endswith(" s"), lines
    float(ready[0].split()[-2])  # the seconds it took


def test_every_server_warns_when_it_listens_beyond_loopback_without_tls(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared options' one warning, for each server (it was the curator's alone): tokens
    travel in every request, so a server on another address without TLS says so on standard
    error before it serves (the serving itself is stubbed out here)."""
    from privad.accounting import Ledger
    from privad.services import app as service_app

    served: list[str] = []
    monkeypatch.setattr(service_app, "run_service", lambda app, **kw: served.append(kw["host"]))
    Ledger(tmp_path / "l.sqlite", create=True).close()
    correction = ["serve", "correction", "--db", str(tmp_path / "c.sqlite"), "--port", "0"]
    correction += ["--token", f"s1={SECRET}", "--analyst-token", PEER]
    correction += ["--outlier-layer-width", "1"]
    console = ["serve", "console", "--ledger", str(tmp_path / "l.sqlite"), "--port", "0"]
    for args, name in ((correction, "privad correction"), (console, "privad console")):
        code, out, err = run(*args, "--host", "0.0.0.0")
        assert code == 0 and out == "", err
        assert err.splitlines()[-1] == (
            f"{name}: warning: listening on 0.0.0.0 without TLS: tokens and answers travel "
            "in clear text"
        )
        code, _, err = run(*args, "--host", "127.0.0.1")
        assert code == 0 and "without TLS" not in err, err
    assert served == ["0.0.0.0", "127.0.0.1"] * 2
