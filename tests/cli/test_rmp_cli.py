"""``privad rmp participate|train|score`` and ``privad serve rmp`` end to end, against a real
mining server on loopback (a uvicorn thread in this process), run in-process through
``privad.cli.main`` on an app holding only the ``rmp`` and ``serve`` groups."""

from __future__ import annotations

import csv
import json
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privad.cli import rmp, serve
from privad.noise import Randomness
from privad.rmp import AANNTraining
from privad.services.rmp import create_rmp_app
from privad.services.rmp_client import RMPClient

N = 5
OPERATOR = "operator-secret-0123456789abcdef"
USER = "end-user-secret-0123456789abcdef"
REGISTRAR = "registrar-secret-0123456789abcdef"


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for env in ("PRIVAD_RMP_OPERATOR_TOKEN", "PRIVAD_RMP_REGISTRATION_TOKEN", "PRIVAD_RMP_TOKEN"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return privad_cli(rmp, serve)


class Servers:
    """Start threaded mining servers in ``server_pool`` (stopped at teardown)."""

    def __init__(self, tmp_path: Path, pool: Any) -> None:
        self.tmp_path = tmp_path
        self.pool = pool

    def start(self, db: str = "mining.sqlite", seed: int = 0, **kwargs: Any) -> str:
        app = create_rmp_app(
            self.tmp_path / db,
            [("alice", USER)],
            operator_token=OPERATOR,
            n=N,
            r=1,
            alpha=0.2,
            rng=seed,
            training=AANNTraining(epochs=10),
            **kwargs,
        )
        return self.pool.start_app(app).url


@pytest.fixture
def servers(tmp_path: Path, server_pool: Any) -> Servers:
    return Servers(tmp_path, server_pool)


def write_data(path: Path, m: int, seed: int, *, label: bool = True) -> tuple[Path, np.ndarray]:
    """m records in [0, 1]^5 (a cluster, 5 % uniform anomalies), with a label column."""
    rng = Randomness(seed)
    X = np.clip(0.5 + 0.05 * rng.normal(size=(m, N)), 0.0, 1.0)
    k = max(2, m // 20)
    X[:k] = rng.uniform(0.0, 1.0, size=(k, N))
    y = np.zeros(m, dtype=int)
    y[:k] = 1
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f"x{j + 1}" for j in range(N)] + (["label"] if label else []))
        for row, lab in zip(X, y, strict=True):
            writer.writerow([repr(float(v)) for v in row] + ([lab] if label else []))
    return path, X


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_participate_train_score_end_to_end(run, servers, tmp_path: Path) -> None:
    url = servers.start()
    d1, _ = write_data(tmp_path / "one.csv", 70, 1)
    d2, _ = write_data(tmp_path / "two.csv", 40, 2)
    (tmp_path / "p1").mkdir()  # privad creates no folder for a path it is given
    k1, t1 = tmp_path / "p1" / "key.npz", tmp_path / "p1" / "token.json"
    args1 = [
        "rmp",
        "participate",
        str(d1),
        "--server",
        url,
        "--label",
        "label",
        "--key-file",
        str(k1),
        "--token-file",
        str(t1),
        "--seed",
        "11",
    ]
    code, out, err = run(*args1)
    assert code == 0, err
    assert "registered as participant participant-1" in out
    assert "uploaded 70 record(s) of 5 attributes in 3 batch(es)" in out and ": 3 new" in out
    assert mode(k1) == 0o600 and mode(t1) == 0o600
    key = k1.read_bytes()

    code, out, err = run(*args1)  # again: the same Z, nothing stored twice
    assert code == 0, err
    assert ": 0 new, 3 already stored" in out and "token from" in out and "private T_i from" in out
    assert k1.read_bytes() == key

    code, out, err = run(
        "rmp",
        "participate",
        str(d2),
        "--server",
        url,
        "--columns",
        "x1,x2,x3",
        "--columns",
        "x4,x5",
        "--key-file",
        str(tmp_path / "k2.npz"),
        "--token-file",
        str(tmp_path / "t2.json"),
        "--name",
        "clinic-2",
        "--batch-size",
        "25",
    )
    assert code == 0, err
    assert "participant clinic-2" in out and "in 2 batch(es)" in out

    code, out, err = run(
        "rmp", "train", "--server", url, "--token", OPERATOR, "--epochs", "12", "--seed", "3"
    )
    assert code == 0, err
    assert "training job 1 started on 110 record(s) from 5 batch(es) of 2 participant(s)" in out
    assert "model 1: 110 record(s), 5 batch(es), 2 participant(s); threshold" in out

    test, X = write_data(tmp_path / "test.csv", 60, 3)
    scores_csv = tmp_path / "scores.csv"
    code, out, err = run(
        "rmp",
        "score",
        str(test),
        "--server",
        url,
        "--token",
        USER,
        "--label",
        "label",
        "--output",
        str(scores_csv),
    )
    assert code == 0, err
    with RMPClient(url, USER) as client:
        _, model = client.model()
    expected = model.decision_function(X)
    table = pd.read_csv(scores_csv)
    assert list(table.columns) == ["index", "score", "label"]
    assert np.array_equal(table["index"], np.arange(60))
    assert np.allclose(table["score"], expected, rtol=1e-15, atol=0.0)
    assert np.array_equal(table["label"], (expected > model.threshold).astype(int))
    flagged = int(table["label"].sum())
    assert f"records 60, flagged {flagged}" in out and "threshold" in out
    assert "ROC AUC against the labels" in out

    parquet = tmp_path / "scores.parquet"  # a participant's token file works for scoring
    code, out, err = run(
        "rmp",
        "score",
        str(test),
        "--server",
        url,
        "--token-file",
        str(t1),
        "--label",
        "label",
        "--model",
        "1",
        "-o",
        str(parquet),
    )
    assert code == 0, err
    assert np.array_equal(pd.read_parquet(parquet)["score"].to_numpy(), expected)


def test_default_key_and_token_files_live_under_home(run, servers, tmp_path: Path) -> None:
    url = servers.start()
    data, _ = write_data(tmp_path / "d.csv", 30, 4)
    code, out, err = run("rmp", "participate", str(data), "--server", url, "--label", "label")
    assert code == 0, err
    folder = tmp_path / "home" / ".privad" / "rmp" / url.split("//")[1].replace(":", "_")
    assert mode(folder / "key.npz") == 0o600 and mode(folder / "token.json") == 0o600
    code, out, err = run("rmp", "participate", str(data), "--server", url, "--label", "label")
    assert code == 0 and "1 already stored" in out


def test_client_errors_are_one_line_and_leave_no_file(
    run, servers, error_line, tmp_path: Path
) -> None:
    url = servers.start()
    data, _ = write_data(tmp_path / "d.csv", 40, 5)
    out_file = tmp_path / "scores.csv"
    key, tok = tmp_path / "key.npz", tmp_path / "tok.json"
    files = ["--key-file", str(key), "--token-file", str(tok)]

    def fails(*args: str, match: str) -> None:
        code, out, err = run(*args)
        assert code == 2, (args, out, err)
        assert match in error_line(err), (match, err)

    fails(
        "rmp",
        "score",
        str(data),
        "--server",
        url,
        "--token",
        USER,
        "--label",
        "label",
        "--output",
        str(out_file),
        match="no model has been trained yet",
    )
    fails("rmp", "train", "--server", url, "--token", OPERATOR, match="no batches stored yet")
    fails(
        "rmp",
        "train",
        "--server",
        url,
        "--token",
        "wrong-token-0123456789abcdef",
        match="unknown token",
    )
    fails("rmp", "train", "--server", url, match="--token is required")
    fails(
        "rmp",
        "participate",
        str(tmp_path / "missing.csv"),
        "--server",
        url,
        *files,
        match="missing.csv",
    )
    fails(
        "rmp", "participate", str(data), "--server", url, *files, match="has 6 attribute column(s)"
    )
    fails("rmp", "participate", str(data), "--server", url, "--columns", "x9", *files, match="x9")
    fails(
        "rmp",
        "participate",
        str(data),
        "--server",
        "http://127.0.0.1:9",
        "--retries",
        "0",
        "--label",
        "label",
        *files,
        match="cannot reach the mining server",
    )
    fails(
        "rmp",
        "participate",
        str(data),
        "--server",
        url,
        "--label",
        "label",
        "--batch-size",
        "31",
        *files,
        match="more than the server accepts",
    )
    fails(
        "rmp", "participate", str(data), "--server", "ftp://x", *files, match="must start with http"
    )
    fails(
        "rmp",
        "score",
        str(data),
        "--server",
        url,
        "--token",
        USER,
        "--output",
        str(tmp_path / "scores.txt"),
        match="--output must end in",
    )
    fails(
        "rmp",
        "score",
        str(data),
        "--server",
        url,
        "--token",
        USER,
        "--model",
        "x",
        match="--model must be",
    )
    fails(
        "rmp",
        "score",
        str(data),
        "--server",
        url,
        "--token",
        USER,
        "--model",
        "999999999999999999999999999999",
        match="at most 4611686018427387904",
    )
    assert not key.exists() and not tok.exists() and not out_file.exists()
    assert not list(tmp_path.glob("*.part"))

    # a participant: then the wrong key or token for another server is refused
    code, _, err = run("rmp", "participate", str(data), "--server", url, "--label", "label", *files)
    assert code == 0, err
    other = servers.start("other.sqlite", seed=9, registration_token=REGISTRAR)
    fails(
        "rmp",
        "participate",
        str(data),
        "--server",
        other,
        "--label",
        "label",
        "--key-file",
        str(key),
        "--token-file",
        str(tmp_path / "t-other.json"),
        match="made for a different public matrix T",
    )
    fails(
        "rmp",
        "participate",
        str(data),
        "--server",
        other,
        "--label",
        "label",
        "--key-file",
        str(tmp_path / "k-other.npz"),
        "--token-file",
        str(tok),
        match="not known to",
    )
    fails(
        "rmp",
        "participate",
        str(data),
        "--server",
        other,
        "--label",
        "label",
        "--key-file",
        str(tmp_path / "k3.npz"),
        "--token-file",
        str(tmp_path / "t3.json"),
        match="missing token",
    )
    code, out, err = run(
        "rmp",
        "participate",
        str(data),
        "--server",
        other,
        "--label",
        "label",
        "--key-file",
        str(tmp_path / "k3.npz"),
        "--token-file",
        str(tmp_path / "t3.json"),
        "--registration-token",
        REGISTRAR,
    )
    assert code == 0, err
    # a token whose participant uploaded batches, without its key: refused
    fails(
        "rmp",
        "participate",
        str(data),
        "--server",
        url,
        "--label",
        "label",
        "--key-file",
        str(tmp_path / "new-key.npz"),
        "--token-file",
        str(tok),
        match="already uploaded 2 batch(es)",
    )
    assert not (tmp_path / "new-key.npz").exists()
    # a score that fails half-way leaves no output file
    fails(
        "rmp",
        "score",
        str(data),
        "--server",
        url,
        "--token",
        USER,
        "--output",
        str(out_file),
        match="no model",
    )
    assert not out_file.exists()


def test_serve_rmp_configuration_errors_are_one_line(run, error_line, tmp_path: Path) -> None:
    db = str(tmp_path / "m.sqlite")
    base = ["serve", "rmp", "--db", db, "--port", "0", "--operator-token", OPERATOR]
    for args, match in [
        ([*base, "--n", "5", "--w", "4", "--alpha", "0.1"], "no end-user tokens"),
        ([*base, "--token", f"u={USER}", "--n", "5", "--w", "4"], "give --n, --w (or --r) and"),
        (
            [*base, "--token", f"u={USER}", "--n", "5", "--w", "5", "--alpha", "0.1"],
            "w must be smaller than n",
        ),
        (
            [*base, "--token", f"u={USER}", "--n", "5", "--w", "4", "--alpha", "1.5"],
            "--alpha must be",
        ),
        ([*base, "--token", f"u={USER}", "--n", "x", "--w", "4", "--alpha", "0.1"], "--n must be"),
        (
            [
                *base,
                "--token",
                f"u={USER}",
                "--n",
                "5",
                "--r",
                "1",
                "--alpha",
                "0.1",
                "--max-batch",
                "0",
            ],
            "--max-batch must be",
        ),
        (
            [
                "serve",
                "rmp",
                "--db",
                db,
                "--token",
                f"u={USER}",
                "--n",
                "5",
                "--r",
                "1",
                "--alpha",
                "0.1",
            ],
            "--operator-token is required",
        ),
        (
            [*base, "--token", f"u={OPERATOR}", "--n", "5", "--r", "1", "--alpha", "0.1"],
            "the same secret",
        ),
    ]:
        code, out, err = run(*args)
        assert code == 2 and out == "", (args, out, err)
        assert match in error_line(err), (match, err)


def test_help_lists_the_commands(run) -> None:
    code, out, _ = run("rmp", "--help")
    assert code == 0 and all(c in out for c in ("participate", "train", "score"))
    code, out, _ = run("serve", "rmp", "--help")
    assert code == 0 and "--operator-token" in out and "--alpha" in out


def test_a_registration_whose_answer_was_lost_is_completed_by_a_rerun(
    run, servers, tmp_path: Path
) -> None:
    url = servers.start()
    data, _ = write_data(tmp_path / "d.csv", 40, 5)
    key, tok = tmp_path / "key.npz", tmp_path / "tok.json"
    # what 'participate' saves before it registers: the answer never came
    tok.write_text(
        json.dumps(
            {
                "server": url,
                "participant": None,
                "name": "clinic-3",
                "token": "a-secret-made-by-the-client-0123456789",
            }
        )
    )
    args = [
        "rmp",
        "participate",
        str(data),
        "--server",
        url,
        "--label",
        "label",
        "--key-file",
        str(key),
        "--token-file",
        str(tok),
    ]
    code, out, err = run(*args)
    assert code == 0, err
    assert "registration of clinic-3 completed" in out
    assert json.loads(tok.read_text())["participant"] == "clinic-3"
    code, out, err = run(*args)  # and again: the same participant, the batches acknowledged
    assert code == 0 and "2 already stored" in out, (out, err)


def test_score_refuses_a_model_trained_for_another_public_t(
    run, servers, error_line, tmp_path: Path
) -> None:
    """A server whose store holds a model made under another T (a restored database, a
    model copied from another server): its scores would mean nothing, so score refuses it."""
    from privad.services.rmp import RMPStore

    url = servers.start()
    data, _ = write_data(tmp_path / "d.csv", 60, 4)
    code, _, err = run(
        "rmp",
        "participate",
        str(data),
        "--server",
        url,
        "--label",
        "label",
        "--key-file",
        str(tmp_path / "k.npz"),
        "--token-file",
        str(tmp_path / "t.json"),
    )
    assert code == 0, err
    code, _, err = run("rmp", "train", "--server", url, "--token", OPERATOR, "--epochs", "5")
    assert code == 0, err
    other = servers.start("other.sqlite", seed=9)  # the same n, another public T
    source, store = RMPStore(tmp_path / "mining.sqlite"), RMPStore(tmp_path / "other.sqlite")
    try:
        meta, npz = source.model("latest")
        job = store.start_job(
            "operator", {}, {"n_records": 60, "n_batches": 2, "n_participants": 1}
        )
        store.add_model(
            job,
            npz,
            {"n_records": 60, "n_batches": 2, "n_participants": 1, "last_batch": 2},
            {},
            meta["threshold"],
            0.1,
        )
    finally:
        source.close()
        store.close()
    out_file = tmp_path / "scores.csv"
    for model in ("latest", "1"):
        code, out, err = run(
            "rmp",
            "score",
            str(data),
            "--server",
            other,
            "--token",
            USER,
            "--label",
            "label",
            "--model",
            model,
            "--output",
            str(out_file),
        )
        assert code == 2, (out, err)
        assert "model 1 was trained for another public T than the server's" in error_line(err)
    assert not out_file.exists() and not list(tmp_path.glob("*.part"))
    code, out, err = run(
        "rmp", "score", str(data), "--server", url, "--token", USER, "--label", "label"
    )  # on its own server the same model scores
    assert code == 0 and "model 1 (" in out, err
