"""``privad search run`` and ``privad serve oracle``: one-line errors with exit status 2,
a local search with its posterior file and ledger, and a search against a server.

The commands run through ``privad.cli.main`` on a fresh Typer app holding only the
``search`` and ``serve`` groups (``privad.cli.__init__`` is wired by the package owner).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from privad.accounting import ANOMALY_RESTRICTED_DP, Ledger
from privad.cli import search, serve
from privad.datasets import make_search_mixture
from privad.experiments.search_problems import problem_from_dataset
from privad.services.app import ThreadedServer
from privad.services.auth import TokenRegistry
from privad.services.oracle import create_oracle_app

SECRET = "searcher-secret-0123456789abcdef"


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch):
    """Run ``privad ARGS`` in-process; return (exit status, stdout, stderr)."""
    monkeypatch.delenv("PRIVAD_ORACLE_TOKEN", raising=False)
    return privad_cli(search, serve)


@pytest.fixture(scope="module")
def problem():
    return problem_from_dataset(make_search_mixture(n=300, threshold_ratio=2.0, rng=4))


@pytest.fixture
def data_file(tmp_path: Path, problem) -> Path:
    """A labelled CSV series: value,label."""
    path = tmp_path / "series.csv"
    labels = np.zeros(problem.n_items, dtype=int)
    labels[problem.anomaly_index] = 1
    with open(path, "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["value", "label"])
        w.writerows(zip(problem.values.tolist(), labels.tolist(), strict=True))
    return path


def test_help_lists_the_commands(run) -> None:
    code, out, _ = run("search", "--help")
    assert code == 0 and "run" in out
    code, out, _ = run("search", "run", "--help")
    assert code == 0 and "--oracle" in out and "--halting" in out
    code, out, _ = run("serve", "oracle", "--help")
    assert code == 0 and "--derive-thresholds" in out and "--budget" in out


def test_search_errors_are_one_line(error_line, run, data_file: Path, tmp_path: Path) -> None:
    d = str(data_file)
    base = [
        "search",
        "run",
        "--oracle",
        d,
        "--epsilon",
        "1",
        "--budget",
        "50",
        "--labels-column",
        "label",
    ]
    cases = [
        (["search", "run", "--oracle", d, "--epsilon", "1"], "--budget is required"),
        (base[:4] + ["--budget", "50", "--derive-thresholds"], "--epsilon is required"),
        (base + ["--epsilon", "0"], "--epsilon must be"),
        (base + ["--epsilon", "nan"], "--epsilon must be"),
        (base + ["--budget", "-2"], "--budget must be"),
        (base + ["--halting", "sometimes"], "--halting must be"),
        (base + ["--halting", "posterior:1.5"], "posterior:ALPHA"),
        (base + ["--halting", "log-odds:0"], "log-odds:DELTA"),
        (base + ["--kind", "gaussian"], "--kind must be one of"),
        (base + ["--top", "0"], "--top must be"),
        (base + ["--seed", "-1"], "--seed must be"),
        (base + ["--selection", "best"], "--selection must be one of"),
        (base + ["--out", str(tmp_path)], "is a folder"),
        (base + ["--out", d], "would overwrite the input"),
        (base[:8] + ["--t-low", "1"], "go together"),
        (base[:8] + ["--t-low", "2", "--t-high", "1"], "--t-high must be > --t-low"),
        (base[:8], "the thresholds are needed"),
        (base[:8] + ["--derive-thresholds", "--column", "value"], "needs labels"),
        (base[:3] + [str(tmp_path / "missing.csv")] + base[4:], "missing.csv"),
        (
            ["search", "run", "--oracle", "http://127.0.0.1:9", "--budget", "5"],
            "--token is required",
        ),
        (
            [
                "search",
                "run",
                "--oracle",
                "http://127.0.0.1:9",
                "--budget",
                "5",
                "--token",
                SECRET,
                "--t-low",
                "1",
            ],
            "applies to local data",
        ),
        (base[:8] + ["--derive-thresholds", "--t-low", "1", "--t-high", "2"], "not both"),
        (base + ["--t-low", "1", "--t-high", "2"], "strictly between"),
    ]
    for args, words in cases:
        code, out, err = run(*args)
        assert code == 2, (args, out, err)
        assert words in error_line(err), (words, err)
        assert out == "", (args, out)
    assert not (tmp_path / "post.csv").exists()


def test_serve_oracle_errors_are_one_line(error_line, run, data_file: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "o.sqlite")
    base = [
        "serve",
        "oracle",
        str(data_file),
        "--db",
        db,
        "--port",
        "0",
        "--token",
        f"s1={SECRET}",
        "--epsilon",
        "1",
        "--budget",
        "10",
        "--labels-column",
        "label",
    ]
    cases = [
        (base + ["--epsilon", "0"], "--epsilon must be"),
        (base + ["--epsilon", "-1"], "--epsilon must be"),
        (base + ["--budget", "0"], "--budget must be"),
        (base + ["--kind", "max-of-sums"], "--kind must be one of"),
        (base[:7] + base[9:], "no sensor tokens"),
        (base[:-2], "the thresholds are needed"),
        (base[:-2] + ["--t-low", "1", "--t-high", "2"], "strictly between"),
        (base + ["--seed", "x"], "--seed must be"),
        (base + ["--scope", " "], "--scope must be"),
    ]
    for args, words in cases:
        code, out, err = run(*args)
        assert code == 2, (args, out, err)
        assert words in error_line(err), (words, err)


def test_local_search_writes_the_posterior_and_charges_the_ledger(
    run, data_file: Path, tmp_path: Path, problem, monkeypatch
) -> None:
    monkeypatch.setenv("PRIVAD_PROGRESS_DELAY", "0")  # progress lines from the start
    out = tmp_path / "post.csv"
    ledger = tmp_path / "ledger.sqlite"
    code, stdout, err = run(
        "search",
        "run",
        "--oracle",
        str(data_file),
        "--epsilon",
        "1",
        "--budget",
        "40",
        "--derive-thresholds",
        "--labels-column",
        "label",
        "--seed",
        "3",
        "--out",
        str(out),
        "--ledger",
        str(ledger),
        "--scope",
        "series",
    )
    assert code == 0, err
    assert "halted by" in stdout and "posterior" in stdout and "privacy spent Tε" in stdout
    assert f"{problem.anomaly_index} (x >= t_h" in stdout
    assert "created the anomaly-restricted-dp budget of scope 'series'" in stdout
    assert err.startswith("privad: searching: queries answered [0/40, ")  # stderr: progress
    with open(out, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["item", "posterior"] and len(rows) == problem.n_items + 1
    post = np.array([float(r[1]) for r in rows[1:]])
    assert abs(post.sum() - 1) < 1e-9 and int(np.argmax(post)) == problem.anomaly_index
    with Ledger(ledger, create=False) as book:
        spends = book.history("series")
        assert 0 < len(spends) <= 40
        assert book.spent("series", ANOMALY_RESTRICTED_DP) == len(spends)
        assert all(s.label == "noisy group query (laplace)" for s in spends)  # the oracle's
    # the same search with the same seed gives the same posterior, recorded in memory
    code, again, err = run(
        "search",
        "run",
        "--oracle",
        str(data_file),
        "--epsilon",
        "1",
        "--budget",
        "40",
        "--derive-thresholds",
        "--labels-column",
        "label",
        "--seed",
        "3",
        "--out",
        str(tmp_path / "again.csv"),
    )
    assert code == 0, err
    assert (tmp_path / "again.csv").read_text() == out.read_text()
    assert f"{len(spends)} answers recorded, ε {len(spends)}" in " ".join(again.split())


def test_local_search_halts_on_an_approximate_budget(run, data_file: Path, tmp_path: Path) -> None:
    """Randomized response at ε = 1 under (b, δ) = (5, 0.1): 7 answers by the optimal
    composition theorem (δ_7(5) = 0.0965 ≤ 0.1 < δ_8(5) = 0.2293), where --budget 5 alone
    allows 5."""
    ledger = tmp_path / "ledger.sqlite"
    common = [
        "search",
        "run",
        "--oracle",
        str(data_file),
        "--epsilon",
        "1",
        "--kind",
        "rr",
        "--budget",
        "5",
        "--derive-thresholds",
        "--labels-column",
        "label",
        "--seed",
        "3",
        "--halting",
        "max-queries:1000",
        "--scope",
        "rr",
    ]
    code, out, err = run(*common, "--delta", "0.1", "--ledger", str(ledger))
    assert code == 0, err
    text = " ".join(out.split())
    assert "composition of 7 answers" in text and "(7 queries were left in scope 'rr')" in text
    assert "δ 0.1) of (ε 5, δ 0.1), composed tightly" in text
    with Ledger(ledger, create=False) as book:
        assert [s.answers for s in book.history("rr")] == [7] + [1] * 7
        assert float(book.budget("rr", ANOMALY_RESTRICTED_DP).delta_spent) == 0.1
    code, out, err = run(*common)  # the pure budget: 5
    assert code == 0, err
    assert "composition of 5 answers" in " ".join(out.split())


def test_search_against_a_server(error_line, run, tmp_path: Path, problem) -> None:
    app = create_oracle_app(
        tmp_path / "o.sqlite",
        TokenRegistry([("s1", SECRET)]),
        values=problem.values,
        t_low=problem.t_low,
        t_high=problem.t_high,
        epsilon=1.0,
        budget=12.0,
        kind="binarized",
        rng=1,
    )
    with ThreadedServer(app) as srv:
        args = [
            "search",
            "run",
            "--oracle",
            srv.url,
            "--token",
            SECRET,
            "--budget",
            "8",
            "--halting",
            "budget",
        ]
        code, out, err = run(*args)
        assert code == 0, err
        assert "binarized, ε = 1 per query" in out and "halted by        │ budget" in out
        assert "remaining ε 4 of 12" in out
        code, out, err = run(*args)  # 4 queries left at the server: the search stops there
        assert code == 0, err
        assert "oracle budget (4 queries were left at the server)" in out
        code, out, err = run(*args)
        assert code == 2 and "has no budget left" in error_line(err)
        code, out, err = run(*args, "--epsilon", "2")
        assert code == 2 and "--epsilon 2 differs" in error_line(err)
        code, out, err = run(*args, "--kind", "laplace")
        assert code == 2 and "--kind laplace differs" in error_line(err)
        code, out, err = run(
            "search",
            "run",
            "--oracle",
            srv.url,
            "--token",
            "wrong-secret-0123456789",
            "--budget",
            "8",
        )
        assert code == 2 and "unknown token" in error_line(err)


@pytest.fixture(scope="module")
def a1_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Yahoo S5 A1-format series (timestamp,value,is_anomaly) shaped like the paper's
    dataset 8: 300 values skewed toward 0 (largest 1.0) and four labelled anomalies, the
    largest 1.9. Section 6.1's reduction keeps 1.9 and drops the others (t_ℓ = 1.09,
    t_h = 1.81, ratio 0.661); keeping them, x_j = 1.86 and the ratio is 0.017."""
    from privad.noise import as_randomness

    values = as_randomness(8).uniform(0.0, 1.0, size=300) ** 3
    values[17] = 1.0
    labels = np.zeros(values.size, dtype=int)
    for i, x in ((150, 1.9), (151, 1.86), (152, 1.8), (250, 1.5)):
        values[i], labels[i] = x, 1
    path = tmp_path_factory.mktemp("a1") / "real_8.csv"
    rows = [
        f"{1416787200 + 3600 * i},{float(v)!r},{y}"
        for i, (v, y) in enumerate(zip(values, labels, strict=True))
    ]
    path.write_text("timestamp,value,is_anomaly\n" + "\n".join(rows) + "\n")
    return path


def test_derive_thresholds_is_the_papers_reduction_and_finds_the_anomaly_as_the_library_does(
    run, a1_file: Path
) -> None:
    """The issue's finding: on an A1-format series with several labelled anomalies the
    command derived the thresholds from the whole file (ratio 0.017) and found the anomaly
    0 times in 5. It now reduces the series as the library does
    (:func:`~privad.experiments.search_problems.problem_from_series`), and with the same
    seeds every run finds what the library's run finds."""
    import json

    from privad.datasets import load_yahoo
    from privad.experiments.search_problems import problem_from_series
    from privad.noise import as_randomness
    from privad.search import AnyOf, PosteriorThreshold, PrivacyBudget, search

    problem = problem_from_series(load_yahoo(a1_file))
    assert problem.n_items == 297 and problem.source_index[problem.anomaly_index] == 150
    assert round(problem.threshold_ratio, 3) == 0.661
    cli_hits, library_hits = [], []
    for seed in range(8):
        code, out, err = run(
            "search", "run", "--oracle", str(a1_file), "--epsilon", "1", "--budget", "1000",
            "--derive-thresholds", "--seed", str(seed), "--json",
        )  # fmt: skip
        assert code == 0, err
        payload = json.loads(out)
        assert payload["data"] == "yahoo:real_8: 300 values, 297 held by the oracle"
        assert "position 150, 3 other labelled value(s) dropped" in payload["thresholds"]
        top = [row["item"] for row in payload["top"]]  # positions in the file
        cli_hits.append(150 in top)
        search_rng, oracle_rng = as_randomness(seed).spawn(2)
        result = search(
            problem.oracle("laplace", 1.0, rng=oracle_rng),
            halting=AnyOf(PosteriorThreshold(0.5), PrivacyBudget(1000.0)),
            top_k=4,
            rng=search_rng,
        )
        library_hits.append(problem.anomaly_index in result.top)
        assert payload["queries"] == result.n_queries
        assert top == problem.source_index[result.top].tolist()
    assert cli_hits == library_hits and sum(cli_hits) >= 7


def test_serve_oracle_holds_the_reduced_series(run, a1_file: Path, tmp_path: Path, monkeypatch):
    """``privad serve oracle --derive-thresholds`` serves what ``search run`` searches: the
    series reduced to its largest labelled anomaly, with the paper's thresholds."""
    from privad.services import app, oracle

    made: dict = {}
    monkeypatch.setattr(oracle, "create_oracle_app", lambda *a, **kw: made.update(kw))
    monkeypatch.setattr(app, "run_service", lambda *a, **kw: None)
    code, _, err = run(
        "serve", "oracle", str(a1_file), "--db", str(tmp_path / "o.sqlite"), "--port", "0",
        "--token", f"s1={SECRET}", "--epsilon", "1", "--budget", "10", "--derive-thresholds",
    )  # fmt: skip
    assert code == 0, err
    assert made["values"].size == 297 and 1.9 in made["values"] and 1.86 not in made["values"]
    assert (made["t_low"], made["t_high"]) == pytest.approx((1.09, 1.81))
    assert "yahoo:real_8: 297 values" in made["notes"][0]
    assert "3 other labelled value(s) dropped" in made["notes"][0]
    assert err.startswith(f"privad oracle: {made['notes'][0]}\n"), err
