"""``privad.sensitive.reports``: what ``privad sp identify`` and ``privad sp params`` print,
as data, checked on a five-record data set whose numbers are counted by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from privad.sensitive import DPMechanism, identify
from privad.sensitive.reports import NOT_FOR_PUBLICATION, IdentificationReport, parameter_report

# four records within 0.2 of each other and one far away (5.0)
X = np.array([[0.0], [0.1], [0.2], [0.15], [5.0]])
TOY = SimpleNamespace(
    name="toy", X=X, y=np.array([0, 0, 0, 0, 1]), feature_names=["x"], n_anomalies=1
)


@pytest.fixture
def identified(tmp_path: Path):
    mechanism = DPMechanism(beta=1, r=0.5, epsilon=2.0)
    return identify(
        X,
        mechanism,
        ledger=tmp_path / "l.sqlite",
        scope="toy",
        output=tmp_path / "labels.csv",
        budget=50.0,
        rng=3,
    )


def test_identification_report_keeps_the_data_dependent_numbers_apart(identified) -> None:
    doc = IdentificationReport(identified, data="toy.csv", dataset="toy").to_dict()
    assert doc["dataset"] == "toy: 5 records x 1 features"
    assert doc["queries"] == "the 5 record(s) of the data" and doc["engine"] == "numba"
    assert doc["answers"] == 5 and doc["flagged"] == int(identified.answers.sum())
    assert doc["guarantee"] == {"notion": "pure-dp", "epsilon_per_query": 2.0}
    # Claim 5: at most 4 queried records (0, 0.1, 0.15, 0.2) lie within 2r = 1 of one
    assert doc["not_for_publication"] == {
        "note": NOT_FOR_PUBLICATION,
        "epsilon": 8.0,
        "m": 4,
        "m_exact": True,
        "remaining_epsilon": 42.0,
    }
    assert doc["warning"] is None and doc["scaling"] is None
    assert doc["note"] == "created the pure-dp budget of scope 'toy': total ε 50"


def test_identification_report_rows_and_lines(identified) -> None:
    asked = dataclasses.replace(identified, add_query_to_data=True, error_probabilities=True)
    report = IdentificationReport(asked, data="toy.csv", dataset="toy", queries="q.csv")
    rows = dict(report.rows(lambda scaling: f"scaling {scaling}"))
    assert rows["queries"] == "5 record(s) of q.csv (each added to the data, footnote 1)"
    assert rows["parameters"] == "β = 1, r = 0.5, k = 1 (unused by dp), metric euclidean"
    assert rows["feature scaling"] == "scaling None"
    assert rows["guarantee"] == "ε-DP: ε = 2 per query"
    assert rows["composed (not for publication)"].startswith("ε = 8 = min(n = 5, m = 4) × ε")
    assert "engine" not in rows
    assert report.lines[0] == f"Not for publication: {NOT_FOR_PUBLICATION}"
    assert report.lines[-1] == f"WARNING: {report.warning}"
    assert "NOT PRIVATE" in report.warning


def test_identification_report_on_a_cluster_names_the_partitions(identified) -> None:
    on_dask = dataclasses.replace(identified, partitions=(3, 2), workers=4)
    report = IdentificationReport(
        on_dask, data="d/", dataset="d", queries="q/", scheduler="tcp://h:1"
    )
    doc = report.to_dict()
    assert doc["dataset"] == "d: 5 records x 1 features in 3 partition(s)"
    assert doc["queries"] == "5 record(s) of q/ in 2 partition(s)"
    assert doc["engine"].startswith("dask on scheduler tcp://h:1 (4 worker(s));")
    assert dict(report.rows(str))["engine"] == doc["engine"]


def test_parameter_report_defaults_to_table_1s_share() -> None:
    report = parameter_report(TOY, data="toy.csv")
    assert (report.beta_fraction, report.share) == (0.005, 0.01)
    # β = max(1, round(0.005·5)) = 1; r = 4.8 leaves no record alone (5.0 reaches 0.2)
    assert (report.choice.beta, report.choice.r) == (1, pytest.approx(4.8))
    doc = report.to_dict()
    assert doc["br_anomalies"] == 0 and doc["labelled_br_anomalies"] == 0
    assert doc["private"] is False and doc["selection"] is None
    assert "Not private" in doc["how"]


def test_parameter_report_for_a_target_share() -> None:
    report = parameter_report(
        TOY,
        data="my toy.csv",
        contamination=0.2,
        options=[("--label", "y"), ("--id", None), ("--columns", "")],
    )
    # β = round(0.2·5) = 1; r = 0.1, the distance from 0 to its neighbour: 5.0 alone
    assert (report.beta_fraction, report.choice.beta, report.choice.r) == (0.2, 1, 0.1)
    assert report.next == "privad sp identify 'my toy.csv' --beta 1 --r 0.1 --epsilon 0.1 --label y"
    rows = dict(report.rows(lambda scaling: "none"))
    assert rows["proposed β"] == "1 (= max(1, round(0.2 × n)))"
    assert rows["(β, r)-anomalies"].startswith("1 of 5 records")
    assert rows["labelled anomalies"] == "1; 1 of them are (β, r)-anomalies"
    assert report.lines == [f"How: {report.how}", f"Next: {report.next}"]


def test_parameter_report_private_selection_is_charged(tmp_path: Path) -> None:
    report = parameter_report(
        TOY,
        data="toy.csv",
        beta=1,
        contamination=0.2,
        private=True,
        selection_epsilon=1.0,
        ledger=tmp_path / "l.sqlite",
        budget=5.0,
        rng=0,
    )
    doc = report.to_dict()
    assert doc["private"] is True and doc["selection"]["beta"] == 1
    assert doc["how"].endswith("(charged to the ledger as its own spend)")
    assert dict(report.rows(str))["proposed β"] == "1 (given)"
    assert report.choice.note == "created the sensitive budget of scope 'toy': total ε 5"
