"""``privad sensor send/result`` against threaded servers: a stream on standard input, and
one-line errors with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from privad.noise import Randomness
from privad.relaxed import Analyst, CorrectionServer, Sensor, run_protocol


def _csv(X) -> str:  # type: ignore[no-untyped-def]
    return "x1,x2\n" + "".join(f"{a!r},{b!r}\n" for a, b in X.tolist())


def _one_error_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if not x.startswith("privad: warning")]
    assert len(lines) == 1, err
    assert lines[0].startswith("privad: error: ") and "Traceback" not in err
    return lines[0]


@pytest.fixture
def send_stdin(servers, ring, run_cli, send_args) -> Any:  # type: ignore[no-untyped-def]
    """``send_stdin(token, options, X)``: ``privad sensor send -`` with ``X`` on standard
    input, to a new pair of threaded servers, with the ring's relaxed sensitivities; returns
    the analyst server and (status, out, err)."""

    def send(token: str, options: str, X: Any) -> tuple[Any, tuple[int, str, str]]:
        analyst, cs = servers.pair()
        rs = ",".join(repr(v) for v in ring.rs.tolist())
        args = send_args("-", analyst.url, cs.url, token, f"{options} --relaxed-sensitivity {rs}")
        return analyst, run_cli(*args, stdin=_csv(X))

    return send


def test_stream_on_stdin_matches_in_process_protocol(ring, run_cli, secrets, send_stdin) -> None:
    X = ring.data[:1300]
    options = "--epsilon 0.5 --window 500 --first-window 4 --seed 21"
    analyst, (code, out, err) = send_stdin(secrets["s2"], options, X)
    assert code == 0, err
    assert out.count("record(s) sent") == 3 and "(windows 4..6)" in out
    code, out, _ = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s2"], "--format", "json"
    )
    got = json.loads(out)
    assert [(r["window"], r["n"]) for r in got] == [(4, 500), (5, 500), (6, 300)]
    sensor = Sensor(0.5, ring.rs, rng=Randomness(21))
    for r, lo in zip(got, (0, 500, 1000), strict=True):
        run = run_protocol(
            X[lo : lo + 500], sensor, Analyst(ring.detector()), CorrectionServer(ring.w_o)
        )
        assert r["outliers"] == run.outliers.tolist()


def test_no_close_and_partial_drop(ring, run_cli, secrets, send_stdin) -> None:
    options = "--epsilon 1 --window 400 --no-close --partial drop"
    analyst, (code, out, err) = send_stdin(secrets["s3"], options, ring.data[:1000])
    assert code == 0, err
    assert "window 1: 400 record(s) uploaded" in out and "window 2" not in out
    code, out, _ = run_cli("sensor", "result", "--analyst", analyst.url, "--token", secrets["s3"])
    assert out == "window,index\n"  # nothing closed yet
    code, _, err = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s3"], "--window", "0"
    )
    assert code == 2 and "not closed yet" in _one_error_line(err)
    for _ in range(2):  # closing is idempotent
        code, out, err = run_cli(
            "sensor", "close", "--analyst", analyst.url, "--token", secrets["s3"], "--window", "0"
        )
        assert code == 0 and out.startswith("window 0: 400 record(s); "), err
    code, out, _ = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s3"], "--format", "json"
    )
    assert [r["window"] for r in json.loads(out)] == [0]
    code, _, err = run_cli(
        "sensor", "close", "--analyst", analyst.url, "--token", secrets["s3"], "--window", "7"
    )
    assert code == 2 and "(404)" in _one_error_line(err)


def test_sensor_errors_are_one_line(
    servers, ring, run_cli, secrets, send_args, tmp_path: Path, monkeypatch
) -> None:
    analyst, cs = servers.pair()
    data = tmp_path / "d.csv"
    data.write_text(_csv(ring.data[:50]))
    base = ["sensor", "send", str(data), "--analyst", analyst.url, "--correction", cs.url]
    base += ["--epsilon", "1", "--window", "10", "--retries", "0"]
    monkeypatch.delenv("PRIVAD_SENSOR_TOKEN", raising=False)
    cases = [
        (base, "--token is required"),
        (base + ["--token", "wrong-secret-0123456789abcdef"], "(401): unknown token"),
        (base + ["--token", secrets["s0"], "--exchange", "open"], "--exchange must be one of"),
        (
            base + ["--token", secrets["s0"], "--exchange", "unprotected", "--cs-epsilon", "1"],
            "--cs-epsilon applies to --exchange protected only",
        ),
        (
            base
            + ["--token", secrets["s0"], "--history", str(data), "--relaxed-sensitivity", "1,1"],
            "not both",
        ),
        (base + ["--token", secrets["s0"], "--epsilon", "-1"], "--epsilon must be"),
        (base + ["--token", secrets["s0"], "--window", "0"], "--window must be"),
        (base + ["--token", secrets["s0"], "--scaling", "log"], "--scaling must be one of"),
        (
            base + ["--token", secrets["s0"], "--relaxed-sensitivity", "1,1,1"],
            "2 column(s) but 3 relaxed sensitivities",
        ),
        (
            ["sensor", "send", str(tmp_path / "none.csv")] + base[3:] + ["--token", secrets["s0"]],
            "no such file",
        ),
        (
            send_args(data, "http://127.0.0.1:9", cs.url, secrets["s0"], "--epsilon 1")
            + ["--window", "10", "--retries", "0"],
            "cannot reach the analyst",
        ),
        (
            send_args(data, "ftp://x", cs.url, secrets["s0"], "--epsilon 1 --window 10"),
            "must start with",
        ),
    ]
    for args, words in cases:
        code, out, err = run_cli(*args)
        assert code == 2, (args, out, err)
        assert words in _one_error_line(err), (words, err)
    empty = tmp_path / "empty.csv"
    empty.write_text("x1,x2\n")
    code, _, err = run_cli("sensor", "send", str(empty), *base[3:], "--token", secrets["s0"])
    assert code == 2 and "no records" in _one_error_line(err)
    # nothing was stored by any of these
    code, out, _ = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s0"], "--format", "json"
    )
    assert json.loads(out) == []


def test_calibrate_formats(ring, run_cli, to_csv, tmp_path: Path) -> None:
    history = to_csv(tmp_path / "h.csv", ring.history)
    code, out, err = run_cli("sensor", "calibrate", str(history), "--format", "env")
    assert code == 0, err
    env = dict(line.split("=", 1) for line in out.strip().splitlines())
    assert float(env["PRIVAD_EPS"]) == ring.eps
    assert int(env["PRIVAD_MIN_SAMPLES"]) == ring.min_samples
    assert float(env["PRIVAD_W_O"]) == ring.w_o
    assert [float(v) for v in env["PRIVAD_RELAXED_SENSITIVITY"].split(",")] == ring.rs.tolist()
    code, out, _ = run_cli("sensor", "calibrate", str(history))
    assert code == 0 and "w_O (correction --outlier-layer-width)" in out
    code, _, err = run_cli("sensor", "calibrate", str(history), "--p-o", "100")
    assert code == 2 and "--p-o must be" in _one_error_line(err)


def test_json_documents(ring, run_cli, secrets, to_csv, send_stdin, tmp_path: Path) -> None:
    """send, result, close and calibrate with --json: stdout is exactly one JSON document."""
    options = "--epsilon 0.5 --window 500 --seed 5 --json"
    analyst, (code, out, err) = send_stdin(secrets["s4"], options, ring.data[:1000])
    assert code == 0, err
    sent = json.loads(out)
    assert [(w["window"], w["records"], w["status"]) for w in sent["windows"]] == [
        (0, 500, "sent"),
        (1, 500, "sent"),
    ]
    assert sent["records"] == 1000 and sent["counts"]["sent"] == 2
    code, out, err = run_cli(
        "sensor", "result", "--analyst", analyst.url, "--token", secrets["s4"], "--json"
    )
    assert code == 0, err
    assert [r["outliers"] for r in json.loads(out)] == [w["outliers"] for w in sent["windows"]]
    to = ["--analyst", analyst.url, "--token", secrets["s4"]]
    code, out, err = run_cli("sensor", "close", *to, "--window", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["outliers"] == sent["windows"][1]["outliers"]
    history = to_csv(tmp_path / "h.csv", ring.history)
    code, out, err = run_cli("sensor", "calibrate", str(history), "--json")
    assert code == 0, err
    assert json.loads(out)["relaxed_sensitivity"] == ring.rs.tolist()
    # an extra column left out with --exclude gives the same parameters
    wide = tmp_path / "wide.csv"
    lines = history.read_text().splitlines()
    wide.write_text(
        "\n".join([lines[0] + ",site"] + [f"{row},{i}" for i, row in enumerate(lines[1:])]) + "\n"
    )
    code, out2, err = run_cli("sensor", "calibrate", str(wide), "--json", "--exclude", "site")
    assert code == 0, err
    assert json.loads(out2) == json.loads(out)
    code, out, err = run_cli("sensor", "calibrate", str(history), "--json", "--format", "env")
    assert code == 2 and out == "" and "contradict" in _one_error_line(err)
