"""``privad sensor perturb``: a partitioned archive perturbed on a Dask cluster, end to end.

Runs against an in-process cluster (``--scheduler``). Checked: one output part per input
partition with the perturbed values in the scaled space, reproducible with a seed and
different between partitions; the archive's guarantee is charged once per job, and a second
release of the same archive is refused before the cluster starts; mistakes are one line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privad.distributed
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
        frame = pd.DataFrame(rows[start:start + size], columns=["t", "h"])
        frame.to_parquet(tmp_path / "archive" / f"p{i}.parquet", index=False)
        start += size
    run_cli = privad_cli(sensor)

    def perturb(*args: str) -> tuple[int, str, str]:
        return run_cli("sensor", "perturb", "archive", "--epsilon", "0.5",
                       "--scheduler", client.scheduler.address, *args)  # fmt: skip

    perturb.rows = rows  # type: ignore[attr-defined]
    return perturb


def test_perturb_writes_one_part_per_partition_and_charges_once(run, tmp_path, monkeypatch
                                                                ) -> None:  # fmt: skip
    ledger = tmp_path / "l.sqlite"
    args = ("--relaxed-sensitivity", "2,0.5", "--seed", "9", "--ledger", str(ledger),
            "--global-sensitivity", "10")  # fmt: skip
    code, out, err = run("--out", "o1", *args)
    assert code == 0, err
    assert "4 partition(s)" in out and "charged once" in out and "--seed" in err
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
        (spend,) = book.history("relaxed-sensor/archive")
        assert spend.status == "committed" and spend.epsilon == g.epsilon
        assert spend.metadata["partitions"] == 4
    # a second release of the archive: refused before the cluster starts (default budget:
    # one release), nothing written
    monkeypatch.setattr(privad.distributed, "dask_client", None)
    code, _, err = run("--out", "o2", *args)
    assert code == 2 and "refused" in err and not (tmp_path / "o2").exists()


def test_seed_reproduces_and_errors_are_one_line(run, tmp_path, error_line) -> None:
    assert run("--out", "a", "--relaxed-sensitivity", "1", "--seed", "4")[0] == 0
    assert run("--out", "b", "--relaxed-sensitivity", "1", "--seed", "4")[0] == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a"), pd.read_parquet(tmp_path / "b"))
    cases = [
        (["--out", "a", "--relaxed-sensitivity", "1"], "already exists"),
        (["--out", "c"], "give --relaxed-sensitivity or --history"),
        (["--out", "c", "--relaxed-sensitivity", "1,2,3"], "2 column(s) but 3"),
        (["--out", "c", "--relaxed-sensitivity", "1", "--columns", "x"], "unknown column"),
        (["--out", "c", "--relaxed-sensitivity", "1", "--ledger", "l"], "--global-sensitivity"),
        (["--out", "c", "--relaxed-sensitivity", "1", "--workers", "1"], "not both"),
    ]
    for args, message in cases:
        code, _, err = run(*args)
        assert code == 2 and message in error_line(err), err
    assert not (tmp_path / "c").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]
