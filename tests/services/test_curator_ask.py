"""``privad.services.curator_ask.ask_curator``: a querier's one call against a curator on
loopback (ids charged ε each once, a repeated id answered as recorded; feature vectors named
by the caller or by row), and the CSV it writes."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from privad.errors import ParameterError
from privad.sensitive import SPMechanism
from privad.services.curator_ask import ask_curator

SECRET = "querier-secret-0123456789abcdef"
X = np.array([[0.0], [0.1], [0.2], [0.15], [5.0]])


@pytest.fixture
def curator(server_pool, tmp_path: Path):
    return server_pool.start_curator(X, SPMechanism(1, 0.5, 0.1), SECRET, tmp_path)


def test_ids_are_charged_once_and_written(curator, tmp_path: Path) -> None:
    out = tmp_path / "answers.csv"
    first = ask_curator(curator.url, SECRET, ids=[0, 4], output=out)
    assert first.questions == ["0", "4"] and first.charged == pytest.approx(0.2)
    assert first.budget["remaining"] == pytest.approx(0.8)
    rows = list(csv.reader(out.open()))
    assert rows == [
        ["question", "label"],
        *([q, str(a)] for q, a in zip(["0", "4"], first.answers, strict=True)),
    ]
    doc = first.to_dict()
    assert doc["server"] == curator.url and doc["output"] == out
    assert doc["answers"] == [
        {"question": q, "label": a} for q, a in zip(["0", "4"], first.answers, strict=True)
    ]
    again = ask_curator(curator.url, SECRET, ids=[4])  # asked before: recorded, free
    assert again.answers == first.answers[1:] and again.charged == 0
    assert again.output is None and again.budget_line.startswith("charged ε 0; budget: spent 0.2")


def test_records_are_named_by_the_caller_or_by_row(curator) -> None:
    # one query far from the data: m = 1, so the batch costs ε
    named = ask_curator(curator.url, SECRET, records=[[9.0]], names=["p-7"])
    assert named.questions == ["p-7"] and named.charged == pytest.approx(0.1)
    rows = ask_curator(curator.url, SECRET, records=[[9.0], [20.0]], add_query_to_data=True)
    assert rows.questions == ["row 0", "row 1"] and len(rows.answers) == 2


def test_ids_or_records_one_of_them() -> None:
    with pytest.raises(ParameterError, match="one of them"):
        ask_curator("http://127.0.0.1:1", SECRET, ids=[1], records=[[0.0]])
