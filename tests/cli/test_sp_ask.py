"""``privad sp ask`` against a curator on loopback, and ``privad serve sp``'s option errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from privad.cli import serve, sp
from privad.datasets import load
from privad.sensitive import SPMechanism

SECRET = "querier-secret-0123456789abcdef"


@pytest.fixture
def curator(server_pool, tmp_path: Path):
    return server_pool.start_curator(load("thyroid").X, SPMechanism(18, 0.1, 0.1), SECRET, tmp_path)


def test_ask_prints_answers_and_the_remaining_budget(
    privad_cli, curator, tmp_path, monkeypatch
) -> None:
    run = privad_cli(sp)
    monkeypatch.setenv("PRIVAD_CURATOR_TOKEN", SECRET)
    out = tmp_path / "answers.csv"
    code, stdout, err = run(
        "sp", "ask", "--server", curator.url, "--ids", "1,2", "--ids", "3", "--out", str(out)
    )
    assert code == 0, err
    assert "charged ε 0.3" in stdout and "remaining 0.7" in stdout
    rows = list(csv.DictReader(out.open()))
    assert [r["question"] for r in rows] == ["1", "2", "3"]
    assert {r["label"] for r in rows} <= {"0", "1"}
    queries = tmp_path / "q.npy"
    np.save(queries, load("thyroid").X[:2] + 0.5)
    code, stdout, err = run("sp", "ask", "--server", curator.url, "--queries", str(queries))
    assert code == 0, err
    assert "row 1" in stdout and "remaining 0.6" in stdout  # far apart: m = 1
    code, _, err = run("sp", "ask", "--server", curator.url, "--ids", "4,5,6,7,8,9,10")
    assert code == 2 and "429" in err and "Traceback" not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ids", "1", "--queries", "x.csv"], "one of them"),
        ([], "one of them"),
        (["--ids", "a"], "--ids"),
        (["--ids", "1", "--add-query-to-data"], "--add-query-to-data"),
        (["--ids", "1", "--id", "name"], "--id apply only with --queries"),
    ],
)
def test_ask_option_errors(privad_cli, error_line, monkeypatch, args, message) -> None:
    monkeypatch.setenv("PRIVAD_CURATOR_TOKEN", SECRET)
    code, _, err = privad_cli(sp)("sp", "ask", "--server", "http://127.0.0.1:9", *args)
    assert code == 2 and message in error_line(err)


def test_serve_sp_option_errors(privad_cli, error_line, tmp_path) -> None:
    run = privad_cli(serve)
    base = [
        "serve",
        "sp",
        "thyroid",
        "--db",
        str(tmp_path / "c"),
        "--ledger",
        str(tmp_path / "l"),
        "--token",
        f"q={SECRET}",
        "--budget",
        "1",
    ]
    for extra, message in [
        (["--beta", "0", "--r", "0.1", "--epsilon", "0.1"], "--beta"),
        (["--beta", "3", "--r", "-1", "--epsilon", "0.1"], "--r"),
        (["--beta", "3", "--r", "0.1", "--epsilon", "0"], "--epsilon"),
        (["--beta", "3", "--r", "0.1", "--epsilon", "1", "--mechanism", "x"], "--mechanism"),
    ]:
        code, _, err = run(*base, *extra)
        assert code == 2 and message in error_line(err)
    assert not (tmp_path / "c").exists()


def test_ask_labels_answers_with_the_id_column(privad_cli, curator, tmp_path, monkeypatch):
    """``--id COL`` (issue 29 item 6): the query file's id column is not a feature and
    labels each answer, on screen, in --json and in --out."""
    monkeypatch.setenv("PRIVAD_CURATOR_TOKEN", SECRET)
    X = load("thyroid").X[:3] + 0.5
    queries = tmp_path / "q.csv"
    header = "patient," + ",".join(f"f{j}" for j in range(X.shape[1]))
    body = "".join(
        f"p-{7 * i}," + ",".join(map(repr, row.tolist())) + "\n" for i, row in enumerate(X)
    )
    queries.write_text(header + "\n" + body)
    out = tmp_path / "a.csv"
    code, stdout, err = privad_cli(sp)(
        "sp",
        "ask",
        "--server",
        curator.url,
        "--queries",
        str(queries),
        "--id",
        "patient",
        "--out",
        str(out),
        "--json",
    )
    assert code == 0, err
    assert [a["question"] for a in json.loads(stdout)["answers"]] == ["p-0", "p-7", "p-14"]
    assert [r["question"] for r in csv.DictReader(out.open())] == ["p-0", "p-7", "p-14"]


def test_serve_sp_tokens_are_queriers(privad_cli, error_line, tmp_path) -> None:
    """``serve sp`` speaks of queriers, never of sensors (issue 29 item 6)."""
    run = privad_cli(serve, columns=400)
    code, stdout, _ = run("serve", "sp", "--help")
    assert code == 0 and "Querier tokens" in stdout and "sensor" not in stdout.lower()
    args = ["serve", "sp", "thyroid", "--beta", "3", "--r", "0.1", "--epsilon", "0.1"]
    args += ["--budget", "1", "--db", str(tmp_path / "c"), "--ledger", str(tmp_path / "l")]
    code, _, err = run(*args)
    assert code == 2 and "no querier tokens" in error_line(err)
    code, _, err = run(*args, "--token", f"q={SECRET}", "--bound", "nope=0:1")
    assert code == 2 and "'nope', which is not a feature column" in error_line(err)
    assert not (tmp_path / "c").exists()
    tiny = tmp_path / "tiny.csv"  # data the curator cannot serve: refused when it starts
    tiny.write_text("x,y\n1.0,2.0\n1e-160,3.0\n")
    args[2] = str(tiny)
    code, _, err = run(*args, "--token", f"q={SECRET}")
    assert code == 2 and "cannot serve this data: record 1, feature 0" in error_line(err)
