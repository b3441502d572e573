"""``privad sp identify`` and ``privad sp params``, end to end through ``privad.cli.main``.

A fresh Typer app with only the ``budget`` and ``sp`` groups stands in for the full command
(as in test_budget.py), so these tests depend on no other group. Every failure must be one
line on standard error, exit status 2, no traceback and no output file.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad import datasets
from privad.accounting import Ledger
from privad.cli import budget, sp
from privad.sensitive import SPMechanism
from privad.sensitive.accounting import claim5_bound

BETA, R, EPS = "18", "0.1", "0.1"


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Run ``privad ARGS`` in-process (budget and sp groups only); return (exit status,
    stdout, stderr)."""
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "default.sqlite"))
    monkeypatch.chdir(tmp_path)
    return privad_cli(budget, sp)


def _no_stray_files(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".part")]


@pytest.fixture(scope="module")
def thyroid_cost() -> float:
    """The composed ε of labelling every Thyroid record at (18, 0.1), ε = 0.1 (Claim 5)."""
    X = datasets.load("thyroid").X
    m = claim5_bound(X, 0.1).m
    g = SPMechanism(18, 0.1, 0.1).batch_guarantee(X.shape[0], m)
    return float(g.epsilon)


def _identify(ledger: Path, out: Path, *extra: str) -> list[str]:
    return [
        "sp",
        "identify",
        "thyroid",
        "--beta",
        BETA,
        "--r",
        R,
        "--epsilon",
        EPS,
        "--ledger",
        str(ledger),
        "--out",
        str(out),
        "--seed",
        "0",
        *extra,
    ]


def test_identify_writes_labels_and_spends_the_composed_epsilon(
    run, tmp_path: Path, thyroid_cost: float
) -> None:
    ledger, out = tmp_path / "l.sqlite", tmp_path / "labels.csv"
    code, _, err = run(
        "budget",
        "set",
        "thyroid",
        "--epsilon",
        "1000",
        "--notion",
        "sensitive",
        "--ledger",
        str(ledger),
    )
    assert code == 0, err
    code, stdout, err = run(*_identify(ledger, out))
    assert code == 0, err
    frame = pd.read_csv(out)
    assert list(frame.columns) == ["index", "label"]
    assert len(frame) == 3772
    assert frame["index"].tolist() == list(range(3772))
    assert set(frame["label"].unique()) <= {0, 1}
    with Ledger(ledger) as book:
        assert book.spent("thyroid", "sensitive") == thyroid_cost
        (spend,) = book.history("thyroid")
        assert spend.status == "committed" and spend.guarantee.k == 1
    # the summary: records, queries, flagged, guarantee, composed ε, remaining
    assert "3772 records" in stdout and "flagged" in stdout
    assert f"ε = {thyroid_cost:g}" in stdout and "Claim 5" in stdout
    assert f"remaining ε {1000 - thyroid_cost:g}" in stdout
    _no_stray_files(tmp_path)
    # the same seed gives the same noisy labels
    out2 = tmp_path / "again.csv"
    assert run(*_identify(ledger, out2))[0] == 0
    assert out.read_text() == out2.read_text()


def test_identify_refuses_when_the_budget_is_short(
    run, error_line, tmp_path: Path, thyroid_cost
) -> None:
    ledger, out = tmp_path / "l.sqlite", tmp_path / "labels.csv"
    assert (
        run(
            "budget",
            "set",
            "thyroid",
            "--epsilon",
            "1",
            "--notion",
            "sensitive",
            "--ledger",
            str(ledger),
        )[0]
        == 0
    )
    code, stdout, err = run(*_identify(ledger, out))
    assert code == 2
    line = error_line(err)
    assert "refused" in line and "Claim 5" in line
    assert not out.exists()
    _no_stray_files(tmp_path)
    with Ledger(ledger) as book:
        assert book.spent("thyroid", "sensitive") == 0.0
        assert book.history("thyroid") == []


def test_identify_without_a_budget_is_an_error_and_budget_creates_it(
    run, error_line, tmp_path: Path, thyroid_cost: float
) -> None:
    ledger, out = tmp_path / "new.sqlite", tmp_path / "labels.csv"
    code, _, err = run(*_identify(ledger, out))
    assert code == 2
    assert "privad budget set" in error_line(err) and "--budget" in err
    assert not out.exists() and not ledger.exists()
    code, stdout, err = run(*_identify(ledger, out, "--budget", "400"))
    assert code == 0, err
    assert out.exists() and "created the sensitive budget" in stdout
    with Ledger(ledger) as book:
        assert book.budget("thyroid", "sensitive").total_epsilon == 400.0
        assert book.spent("thyroid", "sensitive") == thyroid_cost
    # the DP mechanism is charged to the pure-dp budget, which does not exist yet
    code, _, err = run(*_identify(ledger, tmp_path / "dp.csv", "--mechanism", "dp"))
    assert code == 2 and "pure-dp" in error_line(err)
    assert not (tmp_path / "dp.csv").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--beta", "0"], "--beta must be an integer >= 1"),
        (["--beta", "1.5"], "--beta must be an integer >= 1"),
        (["--epsilon", "0"], "--epsilon must be a finite number > 0"),
        (["--epsilon", "-1"], "--epsilon must be a finite number > 0"),
        (["--epsilon", "inf"], "--epsilon must be a finite number > 0"),
        (["--r", "-0.5"], "--r must be a finite number >= 0"),
        (["--k", "0"], "--k must be an integer >= 1"),
        (["--mechanism", "laplace"], "--mechanism must be one of sp, dp, compiled"),
        (["--metric", "cosine"], "--metric must be one of"),
        (["--columns", "nope"], "unknown column 'nope'"),
        (["--label", "nope"], "unknown label column 'nope'"),
        (["--count-cap", "3"], "--count-cap must be none, auto or an integer >= β + 2"),
        (["--add-query-to-data"], "--add-query-to-data applies only with --queries"),
        (["--queries", "missing.csv"], "not found"),
        (["--seed", "x"], "--seed must be an integer >= 0"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(
    run, error_line, tmp_path: Path, args, message
) -> None:
    ledger, out = tmp_path / "l.sqlite", tmp_path / "labels.csv"
    base = {"--beta": BETA, "--r": R, "--epsilon": EPS}
    for i in range(0, len(args) - 1):
        base.pop(args[i], None)
    argv = [
        "sp",
        "identify",
        "thyroid",
        "--ledger",
        str(ledger),
        "--out",
        str(out),
        "--budget",
        "1000",
    ]
    for key, value in base.items():
        argv += [key, value]
    code, _, err = run(*argv, *args)
    assert code == 2
    assert message in error_line(err)
    assert not out.exists()
    assert not ledger.exists()  # nothing was opened or created before the options were checked
    _no_stray_files(tmp_path)


@pytest.mark.parametrize(
    ("data", "message"),
    [("no-such-file.csv", "not found"), ("thyroidd", "unknown dataset 'thyroidd'")],
)
def test_unknown_data_is_one_line(run, error_line, tmp_path: Path, data: str, message: str) -> None:
    out = tmp_path / "labels.csv"
    code, _, err = run(
        "sp",
        "identify",
        data,
        "--beta",
        BETA,
        "--r",
        R,
        "--epsilon",
        EPS,
        "--out",
        str(out),
        "--budget",
        "10",
    )
    assert code == 2
    assert message in error_line(err)
    assert not out.exists()


def test_missing_required_option_is_one_line(run, error_line, tmp_path: Path) -> None:
    code, _, err = run("sp", "identify", "thyroid", "--r", R, "--epsilon", EPS)
    assert code == 2
    assert "--beta is required" in error_line(err)


def test_csv_data_with_columns_label_queries_and_error_probabilities(run, tmp_path: Path) -> None:
    ds = datasets.load("thyroid")
    frame = pd.DataFrame(ds.X, columns=[f"f{j}" for j in range(6)])
    frame.insert(0, "is_anomaly", ds.y)
    frame.to_csv(tmp_path / "thy.csv", index=False)
    queries = ds.X[:40][:, [3, 0, 1, 2, 4, 5]]  # other column order, matched by name
    pd.DataFrame(queries, columns=["f3", "f0", "f1", "f2", "f4", "f5"]).to_csv(
        tmp_path / "q.csv", index=False
    )
    out = tmp_path / "q-labels.csv"
    code, stdout, err = run(
        "sp",
        "identify",
        "thy.csv",
        "--label",
        "is_anomaly",
        "--columns",
        "f0,f1,f2",
        "--columns",
        "f3,f4,f5",
        "--queries",
        "q.csv",
        "--beta",
        BETA,
        "--r",
        R,
        "--epsilon",
        EPS,
        "--with-error-probabilities",
        "--out",
        str(out),
        "--budget",
        "50",
        "--seed",
        "3",
    )
    assert code == 0, err
    assert "NOT PRIVATE" in stdout and "40 record(s) of q.csv" in stdout
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 40
    assert set(rows[0]) == {
        "index",
        "label",
        "error_probability_NOT_PRIVATE",
        "log10_error_probability_NOT_PRIVATE",
    }
    for row in rows:
        p = float(row["error_probability_NOT_PRIVATE"])
        assert 0.0 <= p <= 1.0 / (1.0 + math.exp(0.1)) + 1e-12
        assert float(row["log10_error_probability_NOT_PRIVATE"]) == pytest.approx(
            math.log10(p), abs=1e-9
        )
    # the scope defaults to the file's name
    with Ledger(tmp_path / "default.sqlite") as book:
        assert book.spent("thy", "sensitive") > 0


def test_params_on_thyroid(run, error_line, tmp_path: Path) -> None:
    code, stdout, err = run("sp", "params", "thyroid")
    assert code == 0, err
    assert "reconstruction of Appendix A.2" in stdout
    assert "proposed β" in stdout and "19" in stdout  # round(0.005 · 3772) = 19
    assert "(β, r)-anomalies" in stdout and "labelled anomalies" in stdout
    assert "Not private" in stdout
    assert "privad sp identify thyroid --beta 19" in stdout
    code, _, err = run("sp", "params", "thyroid", "--anomaly-share", "1.5")
    assert code == 2 and "--anomaly-share" in error_line(err)
    code, _, err = run("sp", "params", "thyroid", "--metric", "nope")
    assert code == 2 and "--metric" in error_line(err)


# The same 60 records in every format: three features, then the labels (3 anomalies) as the
# column "lab" of a table, the array y beside X (.npz, .mat) or the last column (.npy).
def _labelled_files(folder: Path) -> dict[str, Path]:
    import scipy.io

    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 3))
    y = np.zeros(60, dtype=np.int64)
    y[:3] = 1
    table = pd.DataFrame(X, columns=["a", "b", "c"]).assign(lab=y)
    paths = {k: folder / f"d.{k}" for k in ("csv", "parquet", "npz", "mat", "npy")}
    table.to_csv(paths["csv"], index=False)
    table.to_parquet(paths["parquet"], index=False)
    np.savez(paths["npz"], X=X, y=y)
    scipy.io.savemat(paths["mat"], {"X": X, "y": y.reshape(-1, 1)})
    np.save(paths["npy"], np.column_stack([X, y]))
    return paths


@pytest.mark.parametrize(
    ("fmt", "label", "features"),
    [
        ("mat", ["--label", "y"], 3),
        ("mat", [], 3),
        ("npz", [], 3),
        ("npz", ["--label", "y"], 3),
        ("csv", ["--label", "lab"], 3),
        ("csv", ["--label", "3"], 3),
        ("parquet", ["--label", "lab"], 3),
        ("npy", ["--label", "3"], 3),
        ("npy", ["--label", "x3"], 3),
        ("csv", [], 4),
        ("parquet", [], 4),
        ("npy", [], 4),
    ],
)
def test_params_reads_labels_by_one_rule_for_every_format(
    run, tmp_path: Path, fmt: str, label: list[str], features: int
) -> None:
    path = _labelled_files(tmp_path)[fmt]
    code, stdout, err = run("sp", "params", str(path), *label)
    assert code == 0, err
    assert f"60 records x {features} features" in stdout
    if features == 3:
        assert "labelled anomalies │ 3;" in stdout
    else:  # a table's label column is read only when --label names it
        assert "the data has no labels (use --label COL)" in stdout


@pytest.mark.parametrize("fmt", ["csv", "parquet", "npz", "mat", "npy"])
def test_an_unknown_label_is_one_line_naming_what_exists(
    run, error_line, tmp_path: Path, fmt: str
) -> None:
    path = _labelled_files(tmp_path)[fmt]
    code, _, err = run("sp", "params", str(path), "--label", "z")
    assert code == 2
    line = error_line(err)
    assert "'z'" in line and ("'lab'" in line if fmt in ("csv", "parquet") else "x0" in line)


def test_help_states_the_label_rule(run) -> None:
    for command in ("identify", "params"):
        code, stdout, _ = run("sp", command, "--help")
        text = " ".join(stdout.replace("│", " ").split())
        assert code == 0
        assert "the same rule for every format" in text and "array y of a .npz or .mat" in text


def test_parsers() -> None:
    from privad.cli._options import parse_columns, parse_int
    from privad.errors import ParameterError

    assert parse_columns(["a,b", "c"]) == ["a", "b", "c"]
    assert parse_columns(None) is None
    with pytest.raises(ParameterError, match="--x has an empty column name"):
        parse_columns(["a,", "c"], "--x")
    assert parse_int("7", "--x", minimum=1) == 7


def test_a_large_epsilon_is_warned_about_once(run, tmp_path: Path) -> None:
    """Issue 30: the mechanism is built and validated once per run, so ``--epsilon 25``
    (above the per-answer warning level of 20) gives exactly one warning line."""
    ledger, out = tmp_path / "l.sqlite", tmp_path / "labels.csv"
    args = _identify(ledger, out, "--budget", "1e9")
    args[args.index("--epsilon") + 1] = "25"
    code, _, err = run(*args)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if "protects (almost) nothing" in line]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("privad: warning: epsilon = 25 per answer")


_PROBE = (
    "import atexit, sys\n"
    "{preload}\n"
    "from privad.cli import main\n"
    "atexit.register(lambda: print('SKLEARN-LOADED', 'sklearn' in sys.modules, file=sys.stderr))\n"
    "main(sys.argv[1:])\n"
)


def _sklearn_loaded(args: list[str], preload: str = "") -> bool:
    """Whether ``privad ARGS``, run in a fresh process, had scikit-learn imported at exit."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(preload=preload), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    marker = [line for line in proc.stderr.splitlines() if line.startswith("SKLEARN-LOADED")]
    assert marker, proc.stderr
    return marker[-1].split()[-1] == "True"


def test_identify_imports_no_scikit_learn(tmp_path: Path) -> None:
    """Issue 28: ``sp identify`` (in memory, private r included) pays for no scikit-learn
    import; the same probe sees it once the estimator is imported."""
    ledger = str(tmp_path / "l.sqlite")
    args = _identify(Path(ledger), tmp_path / "labels.csv", "--budget", "1000", "--json")
    assert not _sklearn_loaded(args)
    private = ["--r", "private", "--contamination", "0.05", "--out", str(tmp_path / "p.csv")]
    args = [*args[: args.index("--r")], *args[args.index("--r") + 2 :], *private]
    args.remove("--out")  # the first --out and its path
    args.remove(str(tmp_path / "labels.csv"))
    assert not _sklearn_loaded(args)
    preload = "import privad.sensitive.estimator"
    assert _sklearn_loaded(["sp", "plan", "--beta", "10", "--epsilon", "0.1"], preload=preload)
