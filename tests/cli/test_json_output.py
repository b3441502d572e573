"""``--json``: every command that prints a result prints exactly one JSON document.

Each command below runs in-process through ``privad.cli.main`` with ``--json``; its standard
output must parse with :func:`json.loads` as a whole (no Rich markup, no progress, nothing
before or after), and the document must hold the result the table view shows. A mistake
with ``--json`` is still one line on standard error with exit status 2 and nothing on
standard output. (``sensor send|result|close|calibrate`` are checked in
tests/services/test_sensor_cli.py beside their servers, ``sensor perturb`` in
test_sensor_perturb.py, ``reproduce relaxed`` in test_reproduce_schemes.py.)
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privad.cli import budget, datasets, rmp, search, sp
from privad.datasets import load, make_search_mixture
from privad.experiments.search_problems import problem_from_dataset
from privad.noise import Randomness
from privad.sensitive import SPMechanism
from privad.sensitive.accounting import claim5_bound

QUERIER = "querier-secret-0123456789abcdef"
OPERATOR = "operator-secret-0123456789abcdef"
USER = "end-user-secret-0123456789abcdef"


@pytest.fixture
def run(privad_cli, in_tmp_home, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PRIVAD_PROGRESS_DELAY", "0")  # progress would show, were it not JSON
    return privad_cli(budget, datasets, rmp, search, sp)


def document(run: Any, *args: str) -> Any:
    """``privad ARGS --json``: the parsed document (stdout is exactly one JSON value)."""
    code, out, err = run(*args, "--json")
    assert code == 0, err
    assert "privad: " not in out and "\x1b[" not in out  # no progress, no terminal codes
    doc = json.loads(out)
    assert out.strip().startswith(("{", "[")) and out.endswith("\n")
    return doc


def test_sp_identify_params_and_plan(run, tmp_path: Path) -> None:
    out = tmp_path / "labels.csv"
    identify = "sp identify thyroid --beta 18 --r 0.1 --epsilon 0.1 --budget 500 --seed 0"
    doc = document(run, *identify.split(), "--out", str(out))
    labels = np.loadtxt(out, delimiter=",", skiprows=1, dtype=int)
    assert doc["answers"] == 3772 == labels.shape[0]
    assert doc["flagged"] == int(labels[:, 1].sum())
    assert doc["guarantee"] == {"notion": "sensitive", "epsilon_per_query": 0.1}
    private = doc["not_for_publication"]  # computed from the data (issue 26 item 6)
    assert "NOT private" in private["note"]
    assert private["m"] == claim5_bound(load("thyroid").X, 0.1).m  # checked by brute force
    assert private["epsilon"] == pytest.approx(0.1 * private["m"])
    assert private["remaining_epsilon"] == pytest.approx(500 - private["epsilon"])
    rest = json.dumps({k: v for k, v in doc.items() if k != "not_for_publication"})
    assert str(private["m"]) not in rest and str(private["epsilon"]) not in rest
    assert "remaining" not in rest
    assert doc["output"] == str(out) and doc["parameters"]["beta"] == 18

    doc = document(run, "sp", "params", "thyroid")
    assert doc["beta"] == 19 and doc["records"] == 3772 and doc["private"] is False
    assert doc["r"] > 0 and doc["next"].startswith("privad sp identify thyroid --beta 19")

    doc = document(run, "sp", "plan", "--beta", "18", "--epsilon", "0.1", "--queries", "10")
    assert doc["beta"] == 18 and doc["cost"]["linear_epsilon"] == pytest.approx(1.0)


def test_budget_commands(run, tmp_path: Path) -> None:
    ledger = str(tmp_path / "b.sqlite")
    doc = document(
        run, "budget", "set", "s1", "--epsilon", "2", "--notion", "sensitive", "--ledger", ledger
    )
    assert doc == {
        "ledger": ledger,
        "scope": "s1",
        "notion": "sensitive",
        "total": 2.0,
        "spent": 0.0,
        "remaining": 2.0,
        "delta": None,
        "delta_spent": None,
    }
    identify = "sp identify thyroid --beta 18 --r 0.1 --epsilon 0.0001 --scope s1 --seed 1"
    document(run, *identify.split(), "--ledger", ledger)
    doc = document(run, "budget", "show", "--ledger", ledger)
    (row,) = doc["budgets"]
    assert row["scope"] == "s1" and row["total"] == 2.0 and row["spends"] == 1
    assert row["remaining"] == pytest.approx(2.0 - row["spent"])
    (spend,) = doc["spends"]
    assert spend["scope"] == "s1" and spend["notion"] == "sensitive"
    assert spend["epsilon"] == pytest.approx(row["spent"])
    doc = document(run, "budget", "statement", "--ledger", ledger)
    assert "Scope 's1'" in doc["statement"] and len(doc["spends"]) == 1
    doc = document(run, "budget", "reset", "--ledger", ledger, "--yes")
    assert doc["reset"] is True and doc["spends_deleted"] == 1
    # --json without --yes: refused (a script cannot answer the question), one line
    code, out, err = run("budget", "reset", "--ledger", ledger, "--json")
    assert (
        code == 2
        and out == ""
        and err.strip().splitlines()[-1].startswith("privad: error: refusing to reset")
    )


def test_datasets_list_and_describe(run) -> None:
    doc = document(run, "datasets", "list")
    names = {d["name"]: d for d in doc["datasets"]}
    assert names["thyroid"]["shape"] == [3772, 6] and names["thyroid"]["anomalies"] == 93
    doc = document(run, "datasets", "describe", "thyroid")
    assert doc["entry"]["name"] == "thyroid" and doc["data"]["records"] == 3772
    X = load("thyroid").X
    stats = doc["data"]["statistics"]
    assert [s["max"] for s in stats] == pytest.approx(X.max(axis=0).tolist())
    assert document(run, "datasets", "describe", "thyroid", "--no-stats")["data"] is None


def test_search_run_and_plan(run, tmp_path: Path) -> None:
    problem = problem_from_dataset(make_search_mixture(n=300, threshold_ratio=2.0, rng=4))
    series = tmp_path / "series.csv"
    np.savetxt(series, problem.values, header="value", comments="")
    doc = document(
        run,
        "search",
        "run",
        "--oracle",
        str(series),
        "--epsilon",
        "1",
        "--budget",
        "40",
        "--t-low",
        str(problem.t_low),
        "--t-high",
        str(problem.t_high),
        "--seed",
        "2",
    )
    assert doc["queries"] >= 1 and doc["epsilon_spent"] == pytest.approx(doc["queries"])
    assert doc["top"][0]["rank"] == 1 and 0 <= doc["top"][0]["item"] < problem.n_items
    doc = document(
        run, "search", "plan", "--epsilon", "1", "--t-low", "1", "--t-high", "3", "--items", "300"
    )
    assert doc["items"] == 300 and doc["threshold_ratio"] == pytest.approx(2.0)


def test_sp_ask(run, server_pool, tmp_path: Path) -> None:
    url = server_pool.start_curator(
        load("thyroid").X, SPMechanism(18, 0.1, 0.1), QUERIER, tmp_path
    ).url
    doc = document(run, "sp", "ask", "--server", url, "--token", QUERIER, "--ids", "1,2")
    assert [a["question"] for a in doc["answers"]] == ["1", "2"]
    assert doc["charged"] == pytest.approx(0.2) and doc["budget"]["remaining"] == pytest.approx(0.8)


def test_rmp_participate_train_score(run, rmp_server, tmp_path: Path) -> None:
    url = rmp_server(3, operator=OPERATOR, user=USER)
    data = tmp_path / "d.csv"
    X = np.clip(0.5 + 0.1 * Randomness(1).normal(size=(40, 3)), 0.0, 1.0)
    with open(data, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["a", "b", "c"])
        writer.writerows(X.tolist())
    (tmp_path / "p").mkdir()
    doc = document(
        run,
        "rmp",
        "participate",
        str(data),
        "--server",
        url,
        "--key-file",
        str(tmp_path / "p" / "k.npz"),
        "--token-file",
        str(tmp_path / "p" / "t.json"),
        "--seed",
        "3",
    )
    assert doc["records"] == 40 and doc["stored"] == doc["batches"] == 2
    doc = document(run, "rmp", "train", "--server", url, "--token", OPERATOR, "--seed", "1")
    assert doc["result"]["status"] == "done" and doc["model"]["n_records"] == 40
    doc = document(run, "rmp", "score", str(data), "--server", url, "--token", USER)
    assert doc["records"] == 40 and 0 <= doc["flagged"] <= 40 and doc["roc_auc"] is None


@pytest.mark.parametrize(
    "args",
    [
        ("sp", "identify", "thyroid", "--beta", "0", "--r", "0.1", "--epsilon", "0.1"),
        ("sp", "params", "no-such-data"),
        ("budget", "show", "--ledger", "missing/ledger.sqlite"),
        ("datasets", "describe", "no-such-data"),
        ("search", "plan", "--epsilon", "-1", "--t-low", "1", "--t-high", "2", "--items", "9"),
    ],
)
def test_errors_with_json_are_one_line_and_no_document(run, error_line, args) -> None:
    code, out, err = run(*args, "--json")
    assert code == 2 and out == ""
    error_line(err)
