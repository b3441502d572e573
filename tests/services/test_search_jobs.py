"""privad.services.search_jobs: the thresholds of a local oracle and one search, summarised."""

from __future__ import annotations

import numpy as np
import pytest

from privad.datasets.sources import SeriesData
from privad.errors import ParameterError
from privad.search import halting_rule
from privad.services.search_jobs import LocalData, SearchRun, resolve_thresholds, run_search

SERIES = SeriesData("s", np.array([0.1, 0.2, 3.0, 0.9]), np.array([0, 0, 1, 1]))


def test_derived_thresholds_follow_section_6_1() -> None:
    held = resolve_thresholds(SERIES, None, None, True, None)
    # keep x* = 3.0 (the largest labelled) and the unlabelled 0.1, 0.2; x_j = 0.2, gap 2.8
    assert held.values.tolist() == [0.1, 0.2, 3.0]
    assert held.source_index.tolist() == [0, 1, 2]
    assert held.t_low == pytest.approx(0.2 + 0.28) and held.t_high == pytest.approx(3.0 - 0.28)
    assert "1 other labelled value(s) dropped" in held.how


def test_given_thresholds_keep_every_value() -> None:
    held = resolve_thresholds(SERIES, 1.0, 2.0, False, None)
    assert held.values is SERIES.values and held.source_index is None
    assert held.how == "given (--t-low/--t-high)"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ((1.0, None, False, None), "--t-low and --t-high go together"),
        ((1.0, 2.0, True, None), "not both"),
        ((2.0, 1.0, False, None), "--t-high must be > --t-low"),
        ((None, None, False, None), "the thresholds are needed"),
    ],
)
def test_bad_thresholds_are_refused(given, message) -> None:
    with pytest.raises(ParameterError, match=message):
        resolve_thresholds(SERIES, *given)


def test_unlabelled_data_cannot_derive() -> None:
    with pytest.raises(ParameterError, match="needs labels"):
        resolve_thresholds(SeriesData("u", SERIES.values, None), None, None, True, None)


@pytest.fixture
def values(tmp_path):
    path = tmp_path / "v.npy"
    np.save(path, np.r_[np.linspace(0.0, 1.0, 63), 10.0])
    return str(path)


def test_a_local_search_finds_the_anomaly_and_writes_its_posterior(values, tmp_path) -> None:
    out = tmp_path / "post.csv"
    local = LocalData(t_low=1.0, t_high=5.0)
    run = run_search(
        values, epsilon=1.0, local=local, seed=1, out=out, budget=30, halting=halting_rule(None, 30)
    )
    doc = run.to_dict()
    assert doc["oracle"] == f"local data {values}" and doc["data"] == "v: 64 values"
    assert doc["thresholds"] == "t_l = 1, t_h = 5, given (--t-low/--t-high)"
    assert doc["top"][0]["item"] == 63 and doc["top"][0]["above_t_high"]
    assert not any(row["above_t_high"] for row in doc["top"][1:])
    assert doc["epsilon_spent"] == doc["queries"] * 1.0 <= 30
    assert run.top_rows()[0][1] == "63 (x >= t_h in the local data)"
    assert dict(run.rows())["posterior"] == str(out)
    assert out.read_text().splitlines()[0] == "item,posterior"


@pytest.mark.parametrize(
    ("oracle", "options", "message"),
    [
        ("v", {}, "--epsilon is required with local data"),
        ("http://127.0.0.1:9", {"epsilon": 1.0}, "--token is required"),
        ("http://127.0.0.1:9", {"token": "t", "local": LocalData(t_low=1.0)}, "--t-low applies"),
        ("http://h:9", {"local": LocalData(derive_thresholds=True)}, "--derive-thresholds applies"),
    ],
)
def test_options_of_the_other_kind_of_oracle_are_refused(values, oracle, options, message):
    oracle = values if oracle == "v" else oracle
    with pytest.raises(ParameterError, match=message):
        run_search(oracle, budget=5, halting=halting_rule(None, 5), **options)


def test_the_output_may_not_overwrite_the_input(values) -> None:
    with pytest.raises(ParameterError, match="would overwrite the input"):
        run_search(values, budget=5, halting=halting_rule(None, 5), epsilon=1, out=values)


def test_rows_of_a_server_search_name_its_budget() -> None:
    summary = {
        "kind": "laplace",
        "epsilon_per_query": 0.5,
        "queries": 3,
        "epsilon_spent": 1.5,
        "halted_by": [],
        "max_posterior": 0.25,
        "oracle_budget": {"scope": "o", "remaining": 8.5, "total": 10.0},
        "ledger_account": None,
        "recorded_epsilon": None,
        "scope": "search/h",
        "top": [],
    }
    rows = dict(SearchRun("server http://h", "9 items", "t", summary, None).rows())
    assert rows["oracle"] == "server http://h: laplace, ε = 0.5 per query"
    assert rows["halted by"] == "—"
    assert rows["oracle budget"] == "scope 'o': remaining ε 8.5 of 10"
    assert "ledger" not in rows and "posterior" not in rows


def test_local_data_reads_the_series_and_its_thresholds(values) -> None:
    data, held = LocalData(t_low=1.0, t_high=5.0).read(values)
    assert data.name == "v" and held.values.size == 64 and (held.t_low, held.t_high) == (1, 5)
    assert LocalData().given() == [] and LocalData(column="x").given() == ["--column"]
