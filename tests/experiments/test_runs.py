"""privad.experiments.runs: a reproduction run, timed and reported (``privad reproduce``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from privad.experiments import relaxed, rmp, runs, sensitive


def test_report_of_a_run() -> None:
    done = runs.ReproductionRun(Path("o"), [Path("o/a.csv"), Path("o/index.html")], 61.25, "x")
    assert done.to_dict() == {
        "out": Path("o"),
        "index": Path("o/index.html"),
        "files": [Path("o/a.csv"), Path("o/index.html")],
        "seconds": 61.25,
        "run": "x",
    }
    assert done.lines() == ["Wrote 2 files to o in 61.2 s (x). Open o/index.html."]
    assert done.shown() == []


def _fake(result: object, calls: list[dict]) -> object:
    def reproduce(directory: Path, **options: object) -> object:
        calls.append({"directory": directory, **options})
        return result

    return reproduce


@pytest.mark.parametrize(
    ("name", "module", "options", "run"),
    [
        ("relaxed", relaxed, {"runs": 3}, "quick run, seed 7"),  # quick: fewer than asked
        ("rmp", rmp, {"seeds": 2, "command": "c"}, "quick run, seeds from 7"),
    ],
)
def test_each_scheme_is_called_with_its_options_and_described(
    monkeypatch, tmp_path, name, module, options, run
) -> None:
    calls: list[dict] = []
    monkeypatch.setattr(module, "reproduce", _fake([tmp_path / "index.html"], calls))
    done = runs.run_reproduction(name, tmp_path, quick=True, seed=7, progress=None, **options)
    assert calls == [{"directory": tmp_path, "quick": True, "seed": 7, "progress": None, **options}]
    assert (done.out, done.files, done.run, done.tables) == (
        tmp_path,
        [tmp_path / "index.html"],
        run,
        {},
    )
    assert done.seconds >= 0 and done.seconds == round(done.seconds, 3)


def test_sensitive_privacy_reports_tables_1_and_2(monkeypatch, tmp_path) -> None:
    t1 = pd.DataFrame(
        {
            "dataset": ["thyroid", "thyroid"],
            "beta": [2, 2],
            "r": [0.5, 0.5],
            "convention": ["self counted", "self not counted"],
            "true_br_anomalies": [9, 11],
            "paper_true_br_anomalies": [10, 10],
        }
    )
    t2 = pd.DataFrame(
        {
            "dataset": ["thyroid"],
            "mean_error_sp": [0.5],
            "paper_mean_error_sp": [0.25],
            "mean_error_dp": [12.0],
            "paper_mean_error_dp": [11.5],
        }
    )
    result = SimpleNamespace(
        files=[tmp_path / "index.html"],
        tables={"table1": t1, "table2": t2, "table3": t2},
        settings=SimpleNamespace(samples=2),
    )
    monkeypatch.setattr(sensitive, "reproduce", _fake(result, []))
    done = runs.run_reproduction("sp", tmp_path, seed=3)
    assert done.run == "full run, seed 3, 2 sampled run(s)"
    assert list(done.tables) == ["table1", "table2"]
    assert done.to_dict()["table2"] == t2.to_dict(orient="records")
    (title1, columns1, rows1), (title2, columns2, rows2) = done.shown()
    assert title1 == "Table 1: true (β,r)-anomalies, ours vs paper"
    assert columns1 == ("dataset", "β", "r", "self counted", "self not counted", "paper")
    assert rows1 == [("thyroid", "2", "0.5", "9", "11", "10")]
    assert columns2 == ("dataset", "SP", "paper SP", "DP", "paper DP")
    assert rows2 == [("thyroid", "0.5000", "0.2500", "12.0000", "11.5000")]


def test_runs_not_given_are_the_reproductions_default(monkeypatch, tmp_path) -> None:
    def reproduce(directory: Path, *, runs: int = 4, **options: object) -> list[Path]:
        return [directory / "index.html"]

    monkeypatch.setattr(relaxed, "reproduce", reproduce)
    assert runs.run_reproduction("relaxed", tmp_path).run == "full run, seed 0, 4 run(s)"
