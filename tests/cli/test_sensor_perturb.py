"""``privad sensor perturb``: a partitioned archive perturbed on a Dask cluster, end to end.

Runs against an in-process cluster (``--scheduler``). Checked: one output part per input
partition with the perturbed values in the scaled space, reproducible with a seed and
different between partitions; the guarantee is charged once per partition in a scope keyed
by the partition's content digest, so a copy of the archive is refused; mistakes are one
line.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.accounting import Ledger
from privad.cli import sensor
from privad.relaxed import Sensor

SIZES = (200, 0, 200, 50)


@pytest.fixture(scope="module")
def client(dask_cluster):
    return dask_cluster


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, client):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "archive").mkdir()
    block = np.column_stack([np.linspace(0.0, 10.0, 200), np.linspace(5.0, 6.0, 200)])
    rows = np.concatenate([block, block, block[:50]])  # two identical partitions
    start = 0
    for i, size in enumerate(SIZES):
        frame = pd.DataFrame(rows[start : start + size], columns=["t", "h"])
        frame.to_parquet(tmp_path / "archive" / f"p{i}.parquet", index=False)
        start += size
    run_cli = privad_cli(sensor)

    def perturb(*args: str) -> tuple[int, str, str]:
        return run_cli(
            "sensor",
            "perturb",
            "archive",
            "--epsilon",
            "0.5",
            "--scheduler",
            client.scheduler.address,
            *args,
        )

    perturb.rows = rows  # type: ignore[attr-defined]
    return perturb


def test_perturb_writes_one_part_per_partition_and_charges_once(run, tmp_path, monkeypatch) -> None:
    ledger = tmp_path / "l.sqlite"
    # partitions 0 and 1 hold identical records: refused by default (two noisy copies)
    code, _, err = run(
        "--out",
        "o0",
        "--relaxed-sensitivity",
        "2,0.5",
        "--ledger",
        str(ledger),
        "--global-sensitivity",
        "10",
    )
    assert code == 2 and "identical records" in err and not (tmp_path / "o0").exists()
    args = (
        "--relaxed-sensitivity",
        "2,0.5",
        "--seed",
        "9",
        "--ledger",
        str(ledger),
        "--global-sensitivity",
        "10",
        "--budget",
        "2",
    )
    code, out, err = run("--out", "o1", *args)
    assert code == 0, err
    assert "4 partition(s)" in out and "charged once per partition" in out and "--seed" in err
    parts = sorted((tmp_path / "o1").iterdir())
    assert [len(pd.read_parquet(p)) for p in parts] == list(SIZES)
    got = pd.read_parquet(tmp_path / "o1")
    assert list(got.columns) == ["index", "t", "h"]
    scaled = run.rows / np.array([2.0, 0.5])
    noise = got[["t", "h"]].to_numpy() - scaled
    assert not np.any(noise[:200] == noise[200:400])  # identical partitions, other noise
    assert np.abs(noise).mean() == pytest.approx(2.0, rel=0.15)  # Lap(1/ε) in the scaled space
    g = Sensor(0.5, [2.0, 0.5], global_sensitivity=10).guarantee()
    with Ledger(ledger) as book:
        spends = [s for s in book.history() if s.status == "committed"]
        # one spend per partition, keyed by content: the two identical ones share a scope
        assert len(spends) == 4 and len({s.scope for s in spends}) == 3
        assert all(
            s.epsilon == g.epsilon and s.scope.startswith("relaxed-sensor/rows-") for s in spends
        )
    # a copy of the archive under another name is the same records: refused before any
    # noise is drawn, nothing written
    import shutil

    shutil.copytree(tmp_path / "archive", tmp_path / "archive_copy")
    code, _, err = run("--out", "o2", *args)
    assert code == 2 and "refused" in err and not (tmp_path / "o2").exists()


def test_default_ledger_records_an_archive_release(run, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PRIVAD_LEDGER", str(tmp_path / "default.sqlite"))
    code, out, err = run(
        "--out", "o1", "--relaxed-sensitivity", "1", "--global-sensitivity", "10", "--budget", "2"
    )
    assert code == 0, err and "default.sqlite" in out
    with Ledger(tmp_path / "default.sqlite") as book:
        assert len(book.history()) == 4
    # --exclude: the column is neither perturbed nor written
    code, out, err = run(
        "--out",
        "o2",
        "--relaxed-sensitivity",
        "1",
        "--global-sensitivity",
        "10",
        "--budget",
        "2",
        "--exclude",
        "t",
        "--seed",
        "1",
    )
    assert code == 0, err
    assert list(pd.read_parquet(tmp_path / "o2").columns) == ["index", "h"]


def test_seed_reproduces_and_errors_are_one_line(run, tmp_path, error_line, monkeypatch) -> None:
    common = (
        "--relaxed-sensitivity",
        "1",
        "--seed",
        "4",
        "--global-sensitivity",
        "10",
        "--budget",
        "100",
        "--ledger",
        str(tmp_path / "l.sqlite"),
    )
    monkeypatch.setenv("PRIVAD_PROGRESS_DELAY", "0")
    code, _, err = run("--out", "a", *common)
    assert code == 0 and "privad: starting the Dask cluster [" in err  # a line per step
    assert "privad: perturbing 4 partition(s) and writing a [" in err
    code, out, err = run("--out", "b", *common, "--json")  # the result as one JSON document
    assert code == 0, err
    doc = json.loads(out)
    assert doc["partitions"] == 4 and doc["records"] == sum(SIZES)
    assert doc["output"] == "b" and len(doc["scopes"]) == 4
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a"), pd.read_parquet(tmp_path / "b"))
    cases = [
        (["--out", "a", *common], "already exists"),
        (["--out", "c", "--global-sensitivity", "10"], "give --relaxed-sensitivity or --history"),
        (
            ["--out", "c", "--relaxed-sensitivity", "1,2,3", "--global-sensitivity", "10"],
            "2 column(s) but 3",
        ),
        (
            [
                "--out",
                "c",
                "--relaxed-sensitivity",
                "1",
                "--columns",
                "x",
                "--global-sensitivity",
                "10",
            ],
            "unknown column",
        ),
        (["--out", "c", "--relaxed-sensitivity", "1", "--ledger", "l"], "--global-sensitivity"),
        (
            [
                "--out",
                "c",
                "--relaxed-sensitivity",
                "1",
                "--workers",
                "1",
                "--global-sensitivity",
                "10",
            ],
            "not both",
        ),
    ]
    for args, message in cases:
        code, _, err = run(*args)
        assert code == 2 and message in error_line(err), err
    assert not (tmp_path / "c").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]


def test_a_full_disk_cancels_every_partitions_spend(run, tmp_path, error_line) -> None:
    """Issue 26, item 4, for the sensor's perturbed archive: an ENOSPC while the parts are
    made durable (injected at the fsync) is one line, exit 2, no folder, and every
    partition's spend cancelled; the folder is renamed before the spends are committed."""

    def enospc(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    ledger = tmp_path / "l.sqlite"
    args = ("--relaxed-sensitivity", "1", "--global-sensitivity", "10", "--budget", "2")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", enospc)
        code, _, err = run("--out", "o1", "--ledger", str(ledger), *args)
    assert code == 2
    assert "cannot write 'o1': No space left on device" in error_line(err)
    assert not (tmp_path / "o1").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]
    with Ledger(ledger) as book:
        assert [s.status for s in book.history()] == ["cancelled"] * 4
    # the same job with room: every spend is still reserved when the folder appears
    seen = []
    real = os.rename

    def rename(src, dst):  # noqa: ANN001
        with Ledger(ledger) as book:
            seen.append(sorted({s.status for s in book.history()}))
        real(src, dst)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "rename", rename)
        code, _, err = run("--out", "o2", "--ledger", str(ledger), *args)
    assert code == 0, err
    assert seen == [["cancelled", "reserved"]]
    with Ledger(ledger) as book:
        assert sorted(s.status for s in book.history()) == ["cancelled"] * 4 + ["committed"] * 4


def test_a_meaningless_epsilon_is_one_warning_line(run, tmp_path) -> None:
    """Issue 30: the sensor is built and validated once per run, so --epsilon 25 is one
    warning line (the run fixture's --epsilon 0.5 is overridden by the later option)."""
    code, _, err = run(
        "--out",
        "o",
        "--epsilon",
        "25",
        "--relaxed-sensitivity",
        "1",
        "--global-sensitivity",
        "10",
        "--budget",
        "1000",
        "--ledger",
        str(tmp_path / "l.sqlite"),
    )
    assert code == 0, err
    assert err.count("privad: warning: epsilon = 25 per answer") == 1, err


def test_the_library_call_is_the_command(run, tmp_path, client) -> None:
    """Issue 30: ``privad sensor perturb`` is one call of ``privad.relaxed.perturb_archive``:
    with the same seed both write the same archive and charge the same scopes."""
    from privad.relaxed import perturb_archive

    common = ("--relaxed-sensitivity", "2,0.5", "--global-sensitivity", "10", "--seed", "3")
    code, out, err = run("--out", "cli", *common, "--budget", "2", "--json", "--ledger", "a.db")
    assert code == 0, err
    r = perturb_archive(
        "archive",
        "lib",
        epsilon=0.5,
        relaxed_sensitivity=[2.0, 0.5],
        global_sensitivity=10,
        budget=2,
        ledger=tmp_path / "b.db",
        scheduler=client.scheduler.address,
        rng=3,
    )
    assert json.loads(out)["scopes"] == list(r.scopes) and r.partitions == len(SIZES)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cli"), pd.read_parquet(r.output))
    with Ledger(tmp_path / "b.db") as book:
        assert sorted(s.scope for s in book.history()) == sorted(r.scopes)
