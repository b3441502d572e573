"""``privad sp identify --engine dask``, end to end, on an in-process Dask cluster.

The command connects to the test cluster with ``--scheduler`` (its workers are threads of
this process). Checked: the Parquet parts (one per input partition, empty ones included)
hold exactly the labels and error probabilities of ``--engine numba`` with the same seed;
the ledger is charged once per job, before the output folder appears; a job refused or
failing at any point leaves the ledger's spent ε unchanged and no output or temporary
folder; every mistake is one line and exit status 2. With ``--queries`` (partitioned query
files) the parts follow the query partitions and hold the labels of ``--engine numba
--queries`` with the same seed, with and without ``--add-query-to-data``.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest

import privad.distributed
import privad.distributed.tables as tables
import privad.geometry.distributed as geometry_distributed
from privad.accounting import Ledger
from privad.cli import budget, sp
from privad.errors import DataError
from privad.geometry.distributed import plan_ball_counts

SIZES = (37, 0, 120, 0, 43)
ARGS = ("--beta", "3", "--r", "2", "--epsilon", "0.1", "--seed", "3")


@pytest.fixture(scope="module")
def client(dask_cluster):
    return dask_cluster


@pytest.fixture(scope="module")
def records() -> np.ndarray:
    rng = np.random.default_rng(20260802)
    return rng.integers(0, 15, size=(sum(SIZES), 3)).astype(np.float64)


@pytest.fixture
def folder(tmp_path: Path, records: np.ndarray) -> Path:
    """The records as Parquet partitions of SIZES rows, plus the whole table as one file."""
    data = tmp_path / "data"
    data.mkdir()
    start = 0
    for i, size in enumerate(SIZES):
        part = pd.DataFrame(records[start : start + size], columns=["a", "b", "c"])
        part.to_parquet(data / f"p{i}.parquet", index=False)
        start += size
    pd.DataFrame(records, columns=["a", "b", "c"]).to_parquet(tmp_path / "all.parquet")
    return data


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, client):
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "default.sqlite"))
    monkeypatch.chdir(tmp_path)
    return privad_cli(budget, sp)


def _dask(client, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "sp",
        "identify",
        str(data),
        *ARGS,
        "--engine",
        "dask",
        "--scheduler",
        client.scheduler.address,
        "--out",
        str(out),
        *extra,
    ]


def _no_leftovers(tmp_path: Path) -> None:
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]


def _spent(ledger: Path, scope: str = "data") -> float:
    with Ledger(ledger) as book:
        assert not [s for s in book.history(scope) if s.status == "reserved"]
        return book.spent(scope, "sensitive")


def test_dask_output_equals_numba_and_spends_once(run, client, folder, tmp_path) -> None:
    ledger = tmp_path / "l.sqlite"
    out = tmp_path / "labels"
    code, stdout, err = run(
        *_dask(
            client,
            folder,
            out,
            "--ledger",
            str(ledger),
            "--budget",
            "100",
            "--with-error-probabilities",
        )
    )
    assert code == 0, err
    assert "5 partition(s)" in stdout and "dask" in stdout
    parts = sorted(out.iterdir())
    assert [p.name for p in parts] == [f"part-0000{i}.parquet" for i in range(5)]
    assert [len(pd.read_parquet(p)) for p in parts] == list(SIZES)
    got = pd.read_parquet(out)
    # the single-machine engine on the same records, same seed
    code, _, err = run(
        "sp",
        "identify",
        str(tmp_path / "all.parquet"),
        *ARGS,
        "--scope",
        "one",
        "--ledger",
        str(ledger),
        "--budget",
        "100",
        "--out",
        "one.csv",
        "--with-error-probabilities",
    )
    assert code == 0, err
    want = pd.read_csv(tmp_path / "one.csv")
    assert list(got.columns) == list(want.columns)
    for column in want.columns:
        np.testing.assert_array_equal(got[column].to_numpy(), want[column].to_numpy())
    # the single-machine engine also reads the Parquet folder (its parts in file-name order)
    code, _, err = run(
        "sp",
        "identify",
        str(folder),
        *ARGS,
        "--scope",
        "two",
        "--ledger",
        str(ledger),
        "--budget",
        "100",
        "--out",
        "two.csv",
        "--with-error-probabilities",
    )
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "two.csv"), want)
    with Ledger(ledger) as book:
        (spend,) = book.history("data")
        assert spend.status == "committed" and spend.metadata["context"]["partitions"] == 5
        assert spend.epsilon == book.history("one")[0].epsilon  # the same Claim 5 cost
    _no_leftovers(tmp_path)


def test_csv_glob_columns_and_label(run, client, tmp_path, records) -> None:
    (tmp_path / "csv").mkdir()
    labels = (records[:, 0] > 10).astype(int)
    for i, (a, b) in enumerate([(0, 60), (60, 60), (60, 200)]):
        pd.DataFrame(
            {"y": labels[a:b], "a": records[a:b, 0], "b": records[a:b, 1], "c": records[a:b, 2]}
        ).to_csv(tmp_path / "csv" / f"{i}.csv", index=False)
    code, _, err = run(
        *_dask(
            client,
            tmp_path / "csv" / "*.csv",
            tmp_path / "out",
            "--label",
            "y",
            "--columns",
            "1,c",
            "--budget",
            "100",
        )
    )
    assert code == 0, err
    got = pd.read_parquet(tmp_path / "out")
    pd.DataFrame({"a": records[:, 0], "c": records[:, 2]}).to_csv("ac.csv", index=False)
    code, _, err = run("sp", "identify", "ac.csv", *ARGS, "--budget", "100", "--out", "w.csv")
    assert code == 0, err
    np.testing.assert_array_equal(got["label"], pd.read_csv("w.csv")["label"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--columns", "zz"], "unknown column 'zz'"),
        (["--queries", "q.npy"], "give --queries as a Parquet folder or file"),
        (["--queries", "missing/"], "give --queries as a Parquet folder or file"),
        (["--add-query-to-data"], "applies only with --queries"),
        (["--workers", "2"], "not both"),
        (["--engine", "numba"], "--workers and --worker-timeout apply only with --engine dask"),
        (["--engine", "spark"], "--engine must be one of numba, dask"),
    ],
)
def test_option_errors_are_one_line(
    run, client, error_line, folder, tmp_path, extra, message
) -> None:
    code, _, err = run(*_dask(client, folder, tmp_path / "out", "--budget", "1", *extra))
    assert code == 2
    assert message in error_line(err)
    assert not (tmp_path / "out").exists()
    _no_leftovers(tmp_path)


def test_input_output_and_scheduler_errors(
    run, client, error_line, folder, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(privad.distributed.cluster, "CONNECT_TIMEOUT", 0.5)
    cases = [
        (
            [
                "sp",
                "identify",
                str(folder),
                *ARGS,
                "--engine",
                "dask",
                "--scheduler",
                "tcp://127.0.0.1:9",
                "--budget",
                "1",
            ],
            "cannot reach the Dask scheduler",
        ),
        (
            [
                "sp",
                "identify",
                str(folder),
                *ARGS,
                "--engine",
                "dask",
                "--scheduler",
                "tcp://no-port",
                "--budget",
                "1",
            ],
            "needs a host and a port",
        ),
        (
            ["sp", "identify", "thyroid", *ARGS, "--engine", "dask", "--budget", "1"],
            "--engine dask reads partitioned files",
        ),
        (_dask(client, folder, folder, "--budget", "1"), "already exists"),
        (
            ["sp", "identify", str(folder), *ARGS, "--engine", "dask", "--workers", "0"],
            "--workers must be an integer >= 1",
        ),
    ]
    for args, message in cases:
        code, _, err = run(*args)
        assert code == 2
        assert message in error_line(err)
    bad = pd.DataFrame({"a": [1.0, np.nan], "b": [0.0, 1.0], "c": [2.0, 3.0]})
    bad.to_parquet(folder / "p9.parquet", index=False)
    code, _, err = run(*_dask(client, folder, tmp_path / "out", "--budget", "1"))
    assert code == 2
    line = error_line(err)
    assert "partition 5" in line and "NaN" in line
    assert not (tmp_path / "out").exists()
    assert _spent(tmp_path / "default.sqlite") == 0.0
    _no_leftovers(tmp_path)


def test_budget_refusals_spend_nothing(
    run, client, error_line, folder, tmp_path, monkeypatch
) -> None:
    ledger = tmp_path / "l.sqlite"
    first = _dask(client, folder, tmp_path / "first", "--ledger", str(ledger), "--budget", "100")
    assert run(*first)[0] == 0
    cost = _spent(ledger)
    assert cost > 0.1  # m > 1: more than one answer's ε
    # a budget that covers one answer but not the job: refused after Claim 5's bound
    with Ledger(ledger) as book:
        book.set_budget("data", "sensitive", cost + 0.1 + cost / 2)
    second = _dask(client, folder, tmp_path / "second", "--ledger", str(ledger))
    code, _, err = run(*second)
    assert code == 2 and "refused" in error_line(err) and "Claim 5" in err
    assert _spent(ledger) == cost
    # an exhausted budget: refused before any worker starts
    with Ledger(ledger) as book:
        book.set_budget("data", "sensitive", cost + 0.05)

    def no_cluster(*args, **kwargs):
        raise AssertionError("the cluster must not start")

    monkeypatch.setattr(privad.distributed, "dask_client", no_cluster)
    code, _, err = run(*second)
    assert code == 2 and "before starting the Dask cluster" in error_line(err)
    assert _spent(ledger) == cost
    assert not (tmp_path / "second").exists()
    _no_leftovers(tmp_path)


def _fail_on_part(index: int):
    real = tables.write_part

    def write_part(folder, i, frame):
        if i == index:
            raise DataError("disk full (injected)")
        return real(folder, i, frame)

    return write_part


def _failing_multiplicities(data, *, queries=None, partitions=None):
    def boom(block):
        raise DataError("worker lost its disk (injected)")

    return da.from_array(np.zeros(3, np.int64), chunks=1).map_blocks(boom, dtype=np.int64)


@pytest.mark.parametrize(
    ("module", "name", "replacement", "history"),
    [
        # after the reservation, when two parts were written: the reservation is cancelled
        (tables, "write_part", _fail_on_part(2), ["cancelled"]),
        # on a worker, while counting (before the reservation): nothing was ever charged
        (geometry_distributed, "multiplicities_dask", _failing_multiplicities, []),
    ],
)
def test_a_job_failing_mid_way_spends_nothing_and_writes_nothing(
    run, client, error_line, folder, tmp_path, monkeypatch, module, name, replacement, history
) -> None:
    ledger = tmp_path / "l.sqlite"
    monkeypatch.setattr(module, name, replacement)
    code, _, err = run(
        *_dask(client, folder, tmp_path / "out", "--ledger", str(ledger), "--budget", "100")
    )
    assert code == 2 and "injected" in error_line(err)
    assert not (tmp_path / "out").exists()
    _no_leftovers(tmp_path)
    assert _spent(ledger) == 0.0
    with Ledger(ledger) as book:
        assert [s.status for s in book.history("data")] == history


Q_SIZES = (9, 0, 14, 6)


@pytest.fixture
def query_folder(tmp_path: Path, records: np.ndarray) -> tuple[Path, np.ndarray]:
    """Query records on the data's lattice: data rows moved by exactly r = 2 along one axis
    (pairs at distance exactly r, some across a cell border), rows half a step off, and
    records of the data itself; in partitions of Q_SIZES rows (one empty), with the columns
    in another order and an extra column, as one folder and as one file."""
    steps = np.zeros((10, 3))
    steps[np.arange(10), np.arange(10) % 3] = np.where(np.arange(10) % 2, 2.0, -2.0)
    Q = np.vstack([records[:10] + steps, records[10:18] + 0.5, records[40:51]])
    assert Q.shape[0] == sum(Q_SIZES)
    frame = pd.DataFrame(
        {"c": Q[:, 2], "extra": np.arange(len(Q)) * 1e9, "a": Q[:, 0], "b": Q[:, 1]}
    )
    folder = tmp_path / "queries"
    folder.mkdir()
    start = 0
    for i, size in enumerate(Q_SIZES):
        frame.iloc[start : start + size].to_parquet(folder / f"q{i}.parquet", index=False)
        start += size
    frame.to_parquet(tmp_path / "queries.parquet", index=False)
    return folder, Q


def test_queries_equal_numba_queries(run, client, folder, query_folder, tmp_path, records) -> None:
    queries, Q = query_folder
    # the partitions meet a cell border between a query and a data record exactly r apart
    plan = plan_ball_counts(
        da.from_array(records, chunks=(SIZES, 3)),
        2.0,
        queries=da.from_array(Q, chunks=(Q_SIZES, 3)),
    )
    d_cells, q_cells = plan.cells_of(records), plan.cells_of(Q)
    dist = np.sqrt(((Q[:, None, :] - records[None, :, :]) ** 2).sum(axis=2))
    at_r = np.argwhere(dist == 2.0)
    assert plan.n_cells > 1 and (q_cells[at_r[:, 0]] != d_cells[at_r[:, 1]]).any()
    ledger = tmp_path / "l.sqlite"
    for add in ([], ["--add-query-to-data"]):
        out = tmp_path / f"labels{len(add)}"
        code, stdout, err = run(
            *_dask(
                client,
                folder,
                out,
                "--queries",
                str(queries),
                "--ledger",
                str(ledger),
                "--budget",
                "100",
                "--with-error-probabilities",
                *add,
            )
        )
        assert code == 0, err
        assert f"{len(Q)} record(s) of {queries} in 4 partition(s)" in stdout
        parts = sorted(out.iterdir())
        assert [len(pd.read_parquet(p)) for p in parts] == list(Q_SIZES)
        got = pd.read_parquet(out)
        csv = tmp_path / f"one{len(add)}.csv"
        code, _, err = run(
            "sp",
            "identify",
            str(tmp_path / "all.parquet"),
            *ARGS,
            "--scope",
            "one",
            "--ledger",
            str(ledger),
            "--budget",
            "100",
            "--out",
            str(csv),
            "--queries",
            str(tmp_path / "queries.parquet"),
            "--with-error-probabilities",
            *add,
        )
        assert code == 0, err
        want = pd.read_csv(csv)
        assert list(got.columns) == list(want.columns)
        for column in want.columns:
            np.testing.assert_array_equal(got[column].to_numpy(), want[column].to_numpy())
    assert want["label"].sum() > 0 and (want["label"] == 0).sum() > 0
    with Ledger(ledger) as book:
        spends, singles = book.history("data"), book.history("one")
        assert [s.status for s in spends] == ["committed", "committed"]
        assert [s.epsilon for s in spends] == [s.epsilon for s in singles]
        assert spends[1].metadata["add_query_to_data"] is True
        assert spends[0].metadata["context"]["query_partitions"] == 4
    _no_leftovers(tmp_path)


def test_query_errors_are_one_line_and_spend_nothing(
    run, client, error_line, folder, tmp_path
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    pd.DataFrame({"u": [1.0], "v": [2.0]}).to_parquet(bad / "q.parquet", index=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    pd.DataFrame({"a": [], "b": [], "c": []}, dtype=float).to_parquet(empty / "q.parquet")
    nan = tmp_path / "nan"
    nan.mkdir()
    pd.DataFrame({"a": [1.0], "b": [1.0], "c": [1.0]}).to_parquet(nan / "q0.parquet")
    pd.DataFrame({"a": [1.0, np.nan], "b": [1.0, 2.0], "c": [0.0, 1.0]}).to_parquet(
        nan / "q1.parquet"
    )
    cases = [
        (bad, "the queries have 2 column(s) but the data has 3 (a, b, c)"),
        (empty, "has no data rows"),
        (nan, "partition 1"),
        (tmp_path / "nothing-*.csv", "no file matches"),
    ]
    for queries, message in cases:
        code, _, err = run(
            *_dask(client, folder, tmp_path / "out", "--queries", str(queries), "--budget", "100")
        )
        assert code == 2, err
        assert message in error_line(err)
        assert not (tmp_path / "out").exists()
    assert _spent(tmp_path / "default.sqlite") == 0.0
    _no_leftovers(tmp_path)


def _row(spend) -> tuple:
    """A ledger row without what only its caller knows (time, id, the context)."""
    meta = {key: value for key, value in spend.metadata.items() if key != "context"}
    return spend.label, spend.epsilon, spend.guarantee, spend.status, meta


def test_three_entry_points_release_identically(run, client, folder, tmp_path, records) -> None:
    """The CLI on one machine, the CLI on Dask and the estimator: identical labels and
    identical ledger rows for the same data and seed (one release path)."""
    from privad.base import _ACCOUNTS
    from privad.sensitive import SensitiveAnomalyIdentifier

    ledger = tmp_path / "l.sqlite"
    code, _, err = run(
        *_dask(
            client,
            folder,
            tmp_path / "d",
            "--ledger",
            str(ledger),
            "--budget",
            "100",
            "--scope",
            "s1",
        )
    )
    assert code == 0, err
    code, _, err = run(
        "sp",
        "identify",
        str(folder),
        *ARGS,
        "--ledger",
        str(ledger),
        "--budget",
        "100",
        "--scope",
        "s2",
        "--out",
        "n.csv",
    )
    assert code == 0, err
    # the CLI ran in this process: its answers are the records' answers here, and a new
    # estimator would get them back without a release; start as a new process would
    _ACCOUNTS.forget()
    est = SensitiveAnomalyIdentifier(3, 2.0, 0.1, rng=3).fit(records)
    with Ledger(ledger) as book:
        book.set_budget("s3", "sensitive", 100)
        labels = est.predict(ledger=book, scope="s3")
        rows = [book.history(s) for s in ("s1", "s2", "s3")]
    assert all(len(r) == 1 for r in rows), [[(s.scope, s.label, s.status) for s in r] for r in rows]
    assert _row(rows[0][0]) == _row(rows[1][0]) == _row(rows[2][0])
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "d")["label"], labels)
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "n.csv")["label"], labels)


def test_a_full_disk_cancels_the_spend_and_publishes_nothing(
    run, client, error_line, folder, tmp_path
) -> None:
    """Issue 26, item 4, on the Dask engine: an ENOSPC when the parts are made durable
    (injected: the fsync of the staging folder) is one line, exit 2, no folder, and the
    spend cancelled, never committed."""

    def enospc(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    ledger, out = tmp_path / "l.sqlite", tmp_path / "labels"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", enospc)
        code, _, err = run(*_dask(client, folder, out, "--ledger", str(ledger), "--budget", "100"))
    assert code == 2
    assert f"cannot write '{out}': No space left on device" in error_line(err)
    assert not out.exists()
    _no_leftovers(tmp_path)
    with Ledger(ledger) as book:
        assert [s.status for s in book.history("data")] == ["cancelled"]
    assert _spent(ledger) == 0.0
