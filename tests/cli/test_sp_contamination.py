"""``privad sp params`` and ``privad sp identify`` with a contamination: r aimed at it from
the data, or chosen privately; every job says where its (β, r) came from (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privad import datasets
from privad.accounting import Ledger
from privad.cli import budget, sp
from privad.sensitive import propose_parameters
from privad.sensitive.selection import default_radii


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "default.sqlite"))
    monkeypatch.chdir(tmp_path)
    return privad_cli(budget, sp)


def _json(run, *args: str) -> dict:
    code, out, err = run(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_params_aim_r_at_the_contamination(run) -> None:
    doc = _json(run, "sp", "params", "thyroid", "--contamination", "0.025", "--beta", "20")
    X = datasets.load("thyroid").X
    assert (doc["beta"], doc["r"]) == propose_parameters(X, contamination=0.025, beta=20)
    assert doc["private"] is False and doc["anomaly_share"] == 0.025
    assert doc["br_anomalies"] <= 0.025 * 3772


def test_params_private_selection_is_charged(run, tmp_path: Path) -> None:
    ledger = tmp_path / "p.sqlite"
    doc = _json(
        run,
        *("sp", "params", "thyroid", "--private", "--beta", "20", "--contamination", "0.025"),
        *("--ledger", str(ledger), "--budget", "5", "--seed", "1"),
    )
    assert doc["private"] is True and doc["r"] in default_radii(6)
    assert doc["selection"]["source"] == "private" and doc["selection"]["epsilon"] == 1.0
    with Ledger(ledger) as book:
        (spend,) = book.history()
        assert spend.id == doc["selection"]["spend_id"] and spend.epsilon == 1.0
        assert spend.scope == "thyroid" and spend.label.startswith("private selection of r")


def test_identify_private_route_end_to_end(run, tmp_path: Path) -> None:
    ledger, out = tmp_path / "i.sqlite", tmp_path / "labels.csv"
    doc = _json(
        run,
        *("sp", "identify", "thyroid", "--beta", "20", "--r", "private", "--epsilon", "1"),
        *("--contamination", "0.05", "--selection-epsilon", "2", "--count-cap", "auto"),
        *("--ledger", str(ledger), "--budget", "1e5", "--seed", "0", "--out", str(out)),
    )
    where = doc["parameters_from"]
    assert where["source"] == "private" and where["epsilon"] == 2.0
    assert doc["parameters"]["r"] == where["r"] and where["r"] in default_radii(6)
    with Ledger(ledger) as book:
        selection, labels = book.history()
        assert selection.epsilon == 2.0 and selection.id == where["spend_id"]
        assert labels.metadata["context"]["parameters"] == where
        assert labels.metadata["r"] == where["r"]
    assert 0.025 <= doc["flagged"] / doc["answers"] <= 0.1


def test_identify_says_a_given_r_is_given(run, tmp_path: Path) -> None:
    doc = _json(
        run,
        *("sp", "identify", "thyroid", "--beta", "18", "--r", "0.1", "--epsilon", "0.1"),
        *("--budget", "500", "--seed", "0", "--out", str(tmp_path / "l.csv")),
    )
    assert doc["parameters_from"]["source"] == "given"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("sp", "params", "thyroid", "--private"), "--private needs --beta"),
        (("sp", "params", "thyroid", "--ledger", "x.sqlite"), "only with --private"),
        (("sp", "params", "thyroid", "--contamination", "0.7"), "--contamination"),
        (("sp", "params", "thyroid", "--contamination", "0.1", "--anomaly-share", "0.1"), "once"),
        (
            ("sp", "identify", "thyroid", "--beta", "5", "--r", "private", "--epsilon", "1"),
            "give --contamination",
        ),
        (
            ("sp", "identify", "thyroid", "--beta", "5", "--r", "0.1", "--epsilon", "1")
            + ("--contamination", "0.1"),
            "only with --r private",
        ),
        (
            ("sp", "identify", "thyroid", "--beta", "5", "--r", "private", "--epsilon", "1")
            + ("--contamination", "0.1", "--engine", "dask"),
            "--engine numba",
        ),
        (("sp", "identify", "thyroid", "--beta", "5", "--r", "nope", "--epsilon", "1"), "--r"),
    ],
)
def test_bad_options_are_one_line(run, error_line, tmp_path: Path, args, needle) -> None:
    code, out, err = run(*args)
    assert code == 2 and needle in error_line(err) and out == ""
    assert not (tmp_path / "x.sqlite").exists()
