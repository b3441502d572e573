"""``privad.distributed.dask_client``: connect to a scheduler or start a local cluster."""

from __future__ import annotations

import time

import dask
import pytest

import privad.distributed.cluster as cluster
from privad.distributed import ClusterError, check_scheduler_address, dask_client
from privad.errors import ParameterError, PrivadError


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"),
        ("scheduler.example.org:8786", "tcp://scheduler.example.org:8786"),
        (" tls://[::1]:8786 ", "tls://[::1]:8786"),
        ("inproc://192.0.2.2/123/1", "inproc://192.0.2.2/123/1"),
    ],
)
def test_scheduler_addresses(address: str, expected: str) -> None:
    assert check_scheduler_address(address) == expected


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("", "non-empty"),
        (None, "non-empty"),
        ("http://host:80", "unknown protocol"),
        ("tcp://host", "host and a port"),
        ("tcp://:8786", "host and a port"),
        ("tcp://host:99999", "host and a port"),
    ],
)
def test_bad_scheduler_addresses(address, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        check_scheduler_address(address)


def test_argument_errors() -> None:
    with pytest.raises(ParameterError, match="not both"), dask_client("tcp://h:1", workers=2):
        pass
    with pytest.raises(ParameterError, match="workers"), dask_client(workers=0):
        pass
    with pytest.raises(ParameterError, match="timeout"), dask_client("tcp://h:1", timeout=0):
        pass


@pytest.mark.timeout(120)  # it used to hang: a hang fails here, a slow machine does not
def test_unreachable_scheduler_is_a_privad_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 0.3)
    with pytest.raises(
        ClusterError, match="cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'"
    ):
        with dask_client("tcp://127.0.0.1:9"):
            pass
    assert issubclass(ClusterError, PrivadError)


def test_local_cluster_and_connecting_to_it() -> None:
    with dask_client(workers=2, processes=False) as local:
        assert len(local.scheduler_info()["workers"]) == 2
        assert dask.compute(dask.delayed(sum)([1, 2, 3]))[0] == 6  # the default scheduler
        with dask_client(local.scheduler.address) as remote:
            assert remote.submit(lambda x: x + 1, 1).result() == 2
        assert local.status == "running"  # a connection never stops the cluster it joined
    assert local.status == "closed"


def test_every_worker_loads_the_kernels_before_a_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client registers the warm-up plugin: each worker ran it (here: counted calls)
    before the client was handed out, and a worker that joins later runs it too."""
    import privad.distributed._warm as warm

    calls: list[int] = []
    monkeypatch.setattr(warm, "compile_kernels", lambda: calls.append(1) or 0.0)
    with dask_client(workers=2, processes=False) as client:
        assert len(calls) == 2
        ran = client.run(lambda dask_worker: "privad-warm-kernels" in dask_worker.plugins)
        assert list(ran.values()) == [True, True]
        client.cluster.scale(3)
        client.wait_for_workers(3, timeout=60)
        assert len(calls) == 3


@pytest.mark.timeout(120)  # tasks used to wait forever: a hang fails here
def test_a_cluster_without_workers_fails_the_job_within_the_worker_timeout() -> None:
    """Tasks on a scheduler with no worker used to wait forever; now the block ends with a
    ClusterError once the cluster has had no worker for worker_timeout seconds."""
    import logging

    from distributed import LocalCluster

    with LocalCluster(
        n_workers=0,
        processes=False,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},
        silence_logs=logging.CRITICAL,
    ) as empty:
        with pytest.raises(
            ClusterError,
            match=r"has had no worker for 0\.5 s, so the job was "
            r"stopped.*--worker-timeout",
        ):
            with dask_client(empty.scheduler_address, worker_timeout=0.5):
                dask.delayed(sum)([1, 2]).compute()
    with pytest.raises(ParameterError, match="worker_timeout"), dask_client(worker_timeout=0):
        pass


def test_the_watchdog_leaves_a_healthy_job_alone() -> None:
    with dask_client(workers=1, processes=False, worker_timeout=0.2) as client:
        time.sleep(0.6)  # several polls, all seeing the worker
        assert dask.delayed(sum)([1, 2]).compute() == 3
        assert len(client.scheduler_info()["workers"]) == 1
