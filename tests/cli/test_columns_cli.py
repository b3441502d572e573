"""``--exclude COL`` and ``--id COL`` on the data commands, end to end.

Excluded columns (and the id) are dropped before any distance: the labels are those of the
file without them, with the same seed. The id column's values (text here) are written to
the output beside the index. Unknown columns and columns with two roles are one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.cli import rmp, sp
from privad.datasets import load

OPERATOR = "operator-secret-0123456789abcdef"
USER = "end-user-secret-0123456789abcdef"


@pytest.fixture
def run(privad_cli, in_tmp_home):
    return privad_cli(sp, rmp)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame]:
    """thyroid's first 800 records as plain.csv (features only) and as wide.csv with a
    text id, a timestamp (which would swamp every distance) and the label."""
    ds = load("thyroid")
    X, y = ds.X[:800], ds.y[:800]
    plain = pd.DataFrame(X, columns=ds.feature_names)
    wide = plain.copy()
    wide.insert(0, "patient", [f"p-{i:04d}" for i in range(800)])
    wide.insert(1, "seen_at", 1.7e9 + 3600.0 * np.arange(800))
    wide["outlier"] = y
    plain.to_csv(tmp_path / "plain.csv", index=False)
    wide.to_csv(tmp_path / "wide.csv", index=False)
    return tmp_path / "plain.csv", tmp_path / "wide.csv", wide


def identify(run, data: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return run(
        "sp",
        "identify",
        str(data),
        "--beta",
        "5",
        "--r",
        "0.1",
        "--epsilon",
        "0.5",
        "--budget",
        "1000",
        "--scope",
        "t",
        "--seed",
        "7",
        "--out",
        str(out),
        *extra,
    )


def test_identify_excludes_before_distances_and_carries_the_id(run, files, tmp_path) -> None:
    plain, wide, frame = files
    code, _, err = identify(run, plain, tmp_path / "plain-labels.csv")
    assert code == 0, err
    columns = "--exclude seen_at --id patient --label outlier".split()
    code, _, err = identify(run, wide, tmp_path / "wide-labels.csv", *columns)
    assert code == 0, err
    want = pd.read_csv(tmp_path / "plain-labels.csv")
    got = pd.read_csv(tmp_path / "wide-labels.csv")
    assert list(got.columns) == ["index", "id", "label"]
    assert got["id"].tolist() == frame["patient"].tolist()
    assert got["label"].tolist() == want["label"].tolist()  # same distances, same draws
    # queries carry their own ids
    frame.iloc[:5].to_csv(tmp_path / "q.csv", index=False)
    queries = ("--queries", str(tmp_path / "q.csv"))
    code, _, err = identify(run, wide, tmp_path / "q-labels.csv", *columns, *queries)
    assert code == 0, err
    assert pd.read_csv(tmp_path / "q-labels.csv")["id"].tolist() == [f"p-{i:04d}" for i in range(5)]
    # sp params sees the same features
    code, out, err = run(
        "sp",
        "params",
        str(wide),
        "--exclude",
        "seen_at",
        "--id",
        "patient",
        "--label",
        "outlier",
        "--json",
    )
    assert code == 0, err
    code, out2, err = run("sp", "params", str(plain), "--json")
    assert code == 0, err
    proposed, expected = json.loads(out), json.loads(out2)
    assert (proposed["beta"], proposed["r"]) == (expected["beta"], expected["r"])
    assert proposed["features"] == expected["features"]
    assert proposed["next"].endswith("--label outlier --exclude seen_at --id patient")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--exclude", "nope"], "unknown excluded column 'nope' in"),
        (["--id", "nope"], "unknown id column 'nope' in"),
        (["--columns", "seen_at", "--exclude", "seen_at"], "'seen_at' is excluded and also"),
        (["--exclude", ""], "--exclude has an empty column name"),
        (["--exclude", "seen_at"], "column 'patient' of"),  # text and not the id: not numeric
        (["--id", "patient", "--exclude", "seen_at", "--engine", "dask"], "--id applies with"),
    ],
)
def test_column_mistakes_are_one_line_and_write_nothing(
    run, files, tmp_path, error_line, args, message
) -> None:
    out = tmp_path / "never.csv"
    code, _, err = identify(run, files[1], out, "--label", "outlier", *args)
    assert code == 2 and message in error_line(err)
    assert not out.exists()


def test_rmp_score_writes_the_id_and_participate_never_sends_it(run, rmp_server, tmp_path) -> None:
    url = rmp_server(2, operator=OPERATOR, user=USER)
    frame = pd.DataFrame(
        {
            "site": [f"s{i}" for i in range(40)],
            "day": np.arange(40.0),
            "a": np.linspace(0.2, 0.8, 40),
            "b": np.linspace(0.7, 0.3, 40),
        }
    )
    frame.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "p").mkdir()
    code, out, err = run(
        "rmp",
        "participate",
        str(tmp_path / "d.csv"),
        "--server",
        url,
        "--exclude",
        "day",
        "--id",
        "site",
        "--key-file",
        str(tmp_path / "p" / "k.npz"),
        "--token-file",
        str(tmp_path / "p" / "t.json"),
        "--seed",
        "1",
    )
    assert code == 0, err
    assert "uploaded 40 record(s) of 2 attributes" in out
    assert run("rmp", "train", "--server", url, "--token", OPERATOR, "--seed", "2")[0] == 0
    scores = tmp_path / "scores.csv"
    code, out, err = run(
        "rmp",
        "score",
        str(tmp_path / "d.csv"),
        "--server",
        url,
        "--token",
        USER,
        "--exclude",
        "day",
        "--id",
        "site",
        "--output",
        str(scores),
    )
    assert code == 0, err
    table = pd.read_csv(scores)
    assert list(table.columns) == ["index", "id", "score", "label"]
    assert table["id"].tolist() == frame["site"].tolist()
