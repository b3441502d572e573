"""Dask jobs that are killed or lose their workers, end to end.

* A ``privad sp identify --engine dask`` driver killed with SIGKILL after its reservation,
  its noisy labels already staged: the next run on the same ``--out`` removes the staging
  folder (one warning line) and succeeds; the killed run's spend stays reserved until
  ``privad budget cancel`` gives it back. The driver runs as a real subprocess against a
  scheduler in this process (its worker is a thread of the test process, so it starts in
  milliseconds); it is paused at the rename of its staging folder (a wrapper around
  ``os.rename``), so that the kill lands after the labels are staged and made durable and
  before they are published; the spend is committed only after the rename.
* ``privad sensor perturb`` whose worker processes are killed (SIGKILL, by the preload
  ``dask_kill_preload.py``) when they start perturbing, after the spends are reserved:
  workers that do not come back make the job fail within ``--worker-timeout`` plus a few
  seconds; workers that a local cluster's nanny restarts and that die again make it fail
  with Dask's KilledWorker. Either way: one line, exit 2, every reservation cancelled, no
  output folder and no staging left.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.accounting import Ledger
from privad.cli import budget, sensor, sp

pytestmark = pytest.mark.slow  # Dask clusters whose workers are killed: minutes in all

PRELOAD = Path(__file__).with_name("dask_kill_preload.py")

ARGS = ("--beta", "3", "--r", "2", "--epsilon", "0.1", "--seed", "3", "--budget", "10")

# privad's command line, paused (forever) when it is about to publish a staged folder.
PAUSED_AT_THE_RENAME = """
import os, sys, time
real = os.rename
def rename(src, dst):
    if str(src).endswith(".part"):
        print("PUBLISHING", flush=True)
        time.sleep(600)
    real(src, dst)
os.rename = rename
from privad.cli import main
main(sys.argv[1:])
"""


def _tcp_cluster(**workers):
    """A LocalCluster in this process whose scheduler subprocesses reach over TCP."""
    from distributed import LocalCluster

    return LocalCluster(
        processes=False,
        protocol="tcp",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},  # 8787 may be taken: Dask warns
        silence_logs=logging.ERROR,
        **workers,
    )


@pytest.fixture(scope="module")
def tcp_scheduler():
    """The address of a LocalCluster with one thread worker in this process, reachable by
    subprocesses over TCP."""
    with _tcp_cluster(n_workers=1, threads_per_worker=1) as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rng = np.random.default_rng(20261124)
    folder = tmp_path / "data"
    folder.mkdir()
    for i, size in enumerate((40, 0, 60)):
        part = pd.DataFrame(
            rng.integers(0, 12, size=(size, 3)).astype(float), columns=["a", "b", "c"]
        )
        part.to_parquet(folder / f"p{i}.parquet", index=False)
    return folder


def _wait_for_line(proc: subprocess.Popen, marker: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if line.startswith(marker):
                return line
            if not line and proc.poll() is not None:
                break
    proc.kill()
    raise AssertionError(f"no {marker!r} line: {proc.stderr.read()}")  # type: ignore[union-attr]


def test_a_killed_drivers_staging_is_removed_by_the_next_run(
    privad_cli, monkeypatch, tmp_path: Path, data: Path, tcp_scheduler: str
) -> None:
    monkeypatch.chdir(tmp_path)
    ledger = tmp_path / "l.sqlite"
    args = [
        "sp",
        "identify",
        str(data),
        *ARGS,
        "--engine",
        "dask",
        "--scheduler",
        tcp_scheduler,
        "--ledger",
        str(ledger),
        "--out",
        "labels",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_AT_THE_RENAME, *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        # a fresh environment compiles the kernels first (about 25 s alone, several times
        # that beside the other test worker): the wait bounds a hang, not the speed
        _wait_for_line(proc, "PUBLISHING", timeout=300)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".labels.")]
    assert len(staged) == 1 and staged[0].name.endswith(".part")
    assert not (tmp_path / "labels").exists()
    assert (staged[0].stat().st_mode & 0o777) == 0o700  # private to its owner while staged
    labels = pd.read_parquet(staged[0])  # the noisy labels were staged when it was killed
    assert len(labels) == 100
    with Ledger(ledger) as book:
        (spend,) = book.history("data")
        assert spend.status == "reserved"  # never committed: nothing was published
        spend_id = spend.id
        reserved = book.spent("data", "sensitive")

    run = privad_cli(budget, sp)
    code, out, err = run(*args)
    assert code == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("privad: warning: removed "), err
    assert staged[0].name in lines[0] and "privad budget cancel ID" in lines[0]
    assert not staged[0].exists()
    assert len(pd.read_parquet(tmp_path / "labels")) == 100
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]

    code, out, _ = run("budget", "show", "--ledger", str(ledger))
    assert code == 0
    row = next(r for r in out.splitlines() if "reserved" in r)
    assert row.split("│")[1].strip() == str(spend_id)
    code, out, err = run("budget", "cancel", str(spend_id), "--ledger", str(ledger))
    assert code == 2 and "refusing to cancel without confirmation" in err  # no standard input
    code, out, err = run("budget", "cancel", str(spend_id), "--ledger", str(ledger), "--yes")
    assert code == 0, err
    assert f"Cancelled reservation #{spend_id}" in out
    with Ledger(ledger) as book:
        assert book.get_spend(spend_id).status == "cancelled"
        assert book.spent("data", "sensitive") == pytest.approx(reserved)  # the second run's
        committed = [s for s in book.history("data") if s.status == "committed"]
        assert len(committed) == 1
        code, _, err = run(
            "budget", "cancel", str(committed[0].id), "--ledger", str(ledger), "--yes"
        )
        assert code == 2 and "is committed" in err


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "archive"
    folder.mkdir()
    rows = np.column_stack([np.linspace(0.0, 10.0, 300), np.linspace(5.0, 6.0, 300)])
    for i in range(3):
        frame = pd.DataFrame(rows[100 * i : 100 * (i + 1)], columns=["t", "h"])
        frame.to_parquet(folder / f"p{i}.parquet", index=False)
    return folder


def _perturb_args(archive: Path, ledger: Path) -> list[str]:
    return [
        "sensor",
        "perturb",
        str(archive),
        "--out",
        "perturbed",
        "--epsilon",
        "0.5",
        "--relaxed-sensitivity",
        "2,0.5",
        "--global-sensitivity",
        "10",
        "--ledger",
        str(ledger),
    ]


def _nothing_left(tmp_path: Path, ledger: Path) -> None:
    """No output, no staging, and every reservation of the job cancelled."""
    assert not (tmp_path / "perturbed").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]
    with Ledger(ledger) as book:
        spends = book.history()
    assert len(spends) == 3 and {s.status for s in spends} == {"cancelled"}


@pytest.mark.timeout(300)  # it used to hang: a hang fails here, a slow machine does not
def test_workers_that_die_for_good_fail_the_job_within_the_timeout(
    privad_cli, error_line, monkeypatch, tmp_path: Path, archive: Path
) -> None:
    from distributed import Client

    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PRIVAD_TEST_KILL_ON_TASK="perturb_block")
    with _tcp_cluster(n_workers=0) as cluster:
        workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    cluster.scheduler_address,
                    "--no-nanny",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--preload",
                    str(PRELOAD),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(2)
        ]
        try:
            with Client(cluster.scheduler_address) as client:
                client.wait_for_workers(2, timeout=120)
            ledger = tmp_path / "l.sqlite"
            code, out, err = privad_cli(sensor)(
                *_perturb_args(archive, ledger),
                "--scheduler",
                cluster.scheduler_address,
                "--worker-timeout",
                "2",
            )
        finally:
            for proc in workers:
                proc.kill()
                proc.wait()
    assert [proc.returncode for proc in workers] == [-signal.SIGKILL] * 2  # killed mid-job
    assert code == 2, (out, err)
    line = error_line(err)
    assert f"the Dask cluster at {cluster.scheduler_address!r} has had no worker for 2 s" in line
    assert "--worker-timeout" in line
    _nothing_left(tmp_path, ledger)


def test_workers_that_keep_dying_fail_the_job_with_killed_worker(
    privad_cli, error_line, monkeypatch, tmp_path: Path, archive: Path
) -> None:
    import dask
    import distributed  # noqa: F401  (its defaults must be in dask's config before the set:
    # a set of "distributed.*" made before the import removes every "distributed" key at
    # its exit, which broke the Dask tests that ran after it in the same worker)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIVAD_TEST_KILL_ON_TASK", "perturb_block")  # the nanny passes it on
    ledger = tmp_path / "l.sqlite"
    with dask.config.set(
        {"distributed.worker.preload": [str(PRELOAD)], "distributed.scheduler.allowed-failures": 0}
    ):
        code, out, err = privad_cli(sensor)(*_perturb_args(archive, ledger), "--workers", "1")
    assert code == 2, (out, err)
    line = error_line(err)
    assert "workers running one of the job's tasks kept dying (KilledWorker" in line
    _nothing_left(tmp_path, ledger)
