"""Smoke test of benchmarks/bench_utility.py: ``--quick`` on one tiny set, then ``--only``.

The benchmark itself stays out of the test suite; this checks that the harness runs end to
end on a 120-record stand-in for an ODDS file, writes its page and figures, saves one
result per (set, detector, ε), reuses them, and that the benchmark's own labels at the
contamination flag the top c share of the released scores.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.io import savemat

from privad.noise import as_randomness

pytest.importorskip("pyod")
ROOT = Path(__file__).resolve().parents[1]


def _bench(monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "bench_utility", ROOT / "benchmarks" / "bench_utility.py"
    )
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_utility", module)  # its dataclasses look it up
    spec.loader.exec_module(module)
    return module


def _tiny_odds(folder: Path) -> None:
    """wbc.mat with 110 normal records near the centre of a square and 10 far off."""
    rng = as_randomness(7)
    inliers = 0.5 + 0.05 * rng.standard_normal((110, 3))
    outliers = rng.uniform(0.0, 1.0, (10, 3))
    X = np.vstack([inliers, outliers])
    y = np.r_[np.zeros(110), np.ones(10)].reshape(-1, 1)
    savemat(folder / "wbc.mat", {"X": X, "y": y})


def test_quick_run_writes_the_page_and_reuses_saved_results(tmp_path, capsys, monkeypatch):
    bench = _bench(monkeypatch)
    _tiny_odds(tmp_path)
    cache, out = tmp_path / "cache", tmp_path / "page" / "utility.md"
    args = ["--quick", "--sets", "wbc", "--odds", str(tmp_path), "--cache", str(cache)]
    bench.main([*args, "--out", str(out)])
    err = capsys.readouterr().err
    assert "[10/10] wbc lof" in err and "FAILED" not in err, err

    page = out.read_text()
    assert "### wbc" in page and "min-max from the data (not private)" in page
    for png in ("utility.png", "utility_auc.png"):
        assert (out.parent / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = {p.stem: json.loads(p.read_text()) for p in (cache / "wbc").glob("*.json")}
    expected = ["sp-eps1", "dp-eps1", "sp-private-eps1", "relaxed-eps1", "rmp-alpha0.1"]
    expected += ["aann", "knn", "iforest", "ecod"]
    assert sorted(rows) == sorted([*expected, "lof"])
    for row in rows.values():
        assert 0.0 <= row["auc"] <= 1.0 and row["contamination"] == pytest.approx(10 / 120)
        assert row["statement"]
        if row["labels_at_c"].startswith("benchmark"):  # top c of 120 scores: 10 records
            assert row["flagged"] == pytest.approx(10 / 120)
    for name, row in rows.items():  # every detector's own rule beside PyOD's labels at c
        assert (row["own_flagged"] is None) == (name in ("knn", "iforest", "ecod", "lof"))
    # each row reads only its own spends, although SP rows share the records' ledger
    assert rows["sp-eps1"]["statement"].count("charged") == 1
    assert rows["sp-private-eps1"]["statement"].count("charged") == 2  # selection + labels
    assert "sensitive (ε=" in rows["sp-eps1"]["statement"]
    assert rows["knn"]["statement"] == "none (not private)"

    saved = {p.name: p.read_text() for p in (cache / "wbc").glob("*.json")}
    bench.main([*args, "--out", str(out)])  # everything saved: nothing recomputed
    assert capsys.readouterr().err.count("saved result reused") == len(expected) + 1
    bench.main([*args, "--out", str(out), "--only", "relaxed"])
    assert "[1/1] wbc relaxed ε=1: AUC" in capsys.readouterr().err
    changed = [p.name for p in (cache / "wbc").glob("*.json") if p.read_text() != saved[p.name]]
    assert changed == ["relaxed-eps1.json"]
    assert "PyOD LOF" in out.read_text()  # the page still shows every detector
