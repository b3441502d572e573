"""Connecting to a Dask cluster, or starting a local one, for the length of one job.

:func:`dask_client` is the one way privad gets a :class:`distributed.Client`:

* ``dask_client(scheduler="tcp://host:8786")`` connects to a running scheduler (started with
  ``dask scheduler``, dask-kubernetes, dask-jobqueue, ...). An address that cannot be
  reached within ``timeout`` seconds is a :class:`ClusterError` saying so, not a traceback.
* ``dask_client(workers=N)`` starts a :class:`distributed.LocalCluster` of N worker
  processes with one thread each, and shuts it down at the end. The compiled kernels use
  a pool of Numba threads inside each task; each worker process gets ``cores / N`` of them
  (``NUMBA_NUM_THREADS``), so N workers on one machine do not oversubscribe its cores.

Every worker, local or remote, loads privad's Numba kernels (compiling them where its
environment has none cached) when the client connects or when it joins later, before
it runs a task (:class:`privad.distributed._warm.WarmKernels`).

The client becomes Dask's default scheduler inside the ``with`` block, so the lazy
collections of :mod:`privad.geometry.distributed` and :mod:`privad.relaxed.distributed`
compute on it. Worker processes are started with the ``spawn`` method (distributed's
default), never ``fork``: Numba's OpenMP runtime is not fork-safe.

Lost workers
    A scheduler with no worker keeps its tasks waiting forever. While the block runs, a
    watchdog thread asks the scheduler for its workers every second or so; when it has had
    none for ``worker_timeout`` seconds (default :data:`WORKER_TIMEOUT`; the scheduler
    unreachable counts as none), the watchdog cancels what the client waits for, so the
    job's pending computation fails, and the block ends with a :class:`ClusterError` saying so
    (the job's own cleanup runs first: a release cancels its reservation and discards its
    staged output). A task whose workers kept dying under it (Dask's ``KilledWorker``,
    after ``distributed.scheduler.allowed-failures`` retries) is a :class:`ClusterError`
    too. Workers that die and come back (a local cluster's nannies restart them) within
    the timeout only cost the retries.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from privad.errors import ParameterError, PrivadError
from privad.validation import check_int, check_positive

__all__ = [
    "WORKER_TIMEOUT",
    "ClusterError",
    "check_scheduler_address",
    "dask_client",
    "default_workers",
]

_PROTOCOLS = ("tcp", "tls", "ucx", "ws", "wss", "inproc")

CONNECT_TIMEOUT = 10.0
"""Seconds :func:`dask_client` waits for a scheduler when no ``timeout`` is given."""

WORKER_TIMEOUT = 120.0
"""Seconds a job waits on a cluster with no worker before it fails (``worker_timeout``):
long enough for a local cluster's nannies or a cluster manager to restart lost workers,
short enough that a job whose workers are gone for good ends on its own. Raise it for an
adaptive cluster that starts its workers on demand (a batch queue can take minutes)."""


class ClusterError(PrivadError):
    """The Dask cluster could not be reached or started."""


def default_workers() -> int:
    """Workers of a local cluster when none are asked for: one per core (at least one)."""
    return max(1, os.cpu_count() or 1)


def _numba_env(n_workers: int) -> dict[str, str]:
    """Worker environment: each worker process's compiled kernels get a share of the cores
    (``$NUMBA_NUM_THREADS`` of this process, else all of them) instead of all of them."""
    cores = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    total = int(cores) if cores.isdigit() and int(cores) > 0 else default_workers()
    return {"NUMBA_NUM_THREADS": str(max(1, total // n_workers))}


def check_scheduler_address(address: Any) -> str:
    """A scheduler address ``PROTOCOL://HOST:PORT`` (``HOST:PORT`` means ``tcp://``)."""
    if not isinstance(address, str) or not address.strip():
        raise ParameterError(
            f"the scheduler address must be a non-empty string like tcp://10.0.0.5:8786, "
            f"got {address!r}"
        )
    text = address.strip()
    protocol, sep, rest = text.partition("://")
    if not sep:
        protocol, rest = "tcp", text
    if protocol not in _PROTOCOLS:
        raise ParameterError(
            f"unknown protocol {protocol!r} in scheduler address {text!r}; use one of "
            f"{', '.join(p + '://' for p in _PROTOCOLS)}"
        )
    if protocol != "inproc":
        host, colon, port = rest.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ParameterError(
                f"scheduler address {text!r} needs a host and a port, like "
                "tcp://10.0.0.5:8786 (the address 'dask scheduler' prints)"
            )
    return text if sep else f"tcp://{text}"


@contextlib.contextmanager
def dask_client(
    scheduler: str | None = None,
    *,
    workers: int | None = None,
    threads_per_worker: int = 1,
    processes: bool = True,
    memory_limit: str | float | None = "auto",
    timeout: float | None = None,
    worker_timeout: float | None = None,
) -> Iterator[Any]:
    """A :class:`distributed.Client` for one job: connected to ``scheduler``, or local.

    Parameters
    ----------
    scheduler:
        Address of a running scheduler (``tcp://host:port``; see
        :func:`check_scheduler_address`). ``None``: start a local cluster.
    workers:
        Workers of the local cluster (an int >= 1; default :func:`default_workers`). Not
        allowed together with ``scheduler``: a remote cluster's size is its own business.
    threads_per_worker, processes, memory_limit:
        Passed to :class:`distributed.LocalCluster` (``processes=False`` runs the workers
        as threads of this process, which tests use).
    timeout:
        Seconds to wait for the scheduler (> 0); default :data:`CONNECT_TIMEOUT`.
    worker_timeout:
        Seconds the cluster may have no worker while the block runs before its tasks are
        cancelled (> 0); default :data:`WORKER_TIMEOUT`.

    Raises
    ------
    ClusterError
        The scheduler did not answer within ``timeout``, the local cluster did not start,
        the cluster had no worker for ``worker_timeout`` seconds while the block ran, or a
        task's workers kept dying (``KilledWorker``).
    ParameterError
        A malformed address or worker count, or both ``scheduler`` and ``workers``.
    """
    from distributed import Client, LocalCluster

    timeout = check_positive(CONNECT_TIMEOUT if timeout is None else timeout, "timeout")
    worker_timeout = check_positive(
        WORKER_TIMEOUT if worker_timeout is None else worker_timeout, "worker_timeout"
    )
    if scheduler is not None and workers is not None:
        raise ParameterError(
            "give a scheduler address (an existing cluster) or a number of local workers, not both"
        )
    with contextlib.ExitStack() as stack:
        if scheduler is not None:
            address = check_scheduler_address(scheduler)
            try:
                client = Client(address, timeout=f"{timeout}s", set_as_default=True)
            except (OSError, TimeoutError, ValueError) as exc:
                raise ClusterError(
                    f"cannot reach the Dask scheduler at {address!r} within {timeout:g} s "
                    f"({exc}); check the address that 'dask scheduler' printed, or leave the "
                    "scheduler out to start a local cluster"
                ) from None
        else:
            n = default_workers() if workers is None else check_int(workers, "workers", minimum=1)
            threads = check_int(threads_per_worker, "threads_per_worker", minimum=1)
            extra = {"env": _numba_env(n)} if processes else {}
            try:
                cluster = LocalCluster(
                    n_workers=n,
                    threads_per_worker=threads,
                    processes=bool(processes),
                    memory_limit=memory_limit,
                    dashboard_address=None,
                    # no dashboard, and the scheduler's HTTP routes on a free port: the
                    # default 8787 may be taken (another job), which Dask warns about
                    scheduler_kwargs={"dashboard_address": ":0"},
                    silence_logs=logging.CRITICAL,
                    **extra,
                )
            except (OSError, TimeoutError, RuntimeError, ValueError) as exc:
                raise ClusterError(
                    f"could not start a local Dask cluster of {n} worker(s): {exc}"
                ) from None
            stack.callback(cluster.close)
            client = Client(cluster, set_as_default=True)
        stack.callback(client.close)
        from privad.distributed._warm import WarmKernels

        client.register_plugin(WarmKernels())  # every worker loads the kernels before a task
        where = (
            f"the Dask cluster at {address!r}"
            if scheduler is not None
            else "the local Dask cluster"
        )
        watchdog = _Watchdog(client, worker_timeout, where)
        stack.callback(watchdog.stop)
        try:
            yield client
        except Exception as exc:
            error = _cluster_error(exc, watchdog)
            if error is exc:
                raise
            raise error from None


def _cluster_error(exc: Exception, watchdog: _Watchdog) -> Exception:
    """The error a job's exception stands for: the watchdog's when it stopped the job (its
    cancelled tasks surface as whatever the computation raised), a :class:`ClusterError`
    for Dask's ``KilledWorker``, else the exception itself."""
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        return ClusterError(
            "the Dask workers running one of the job's tasks kept dying (KilledWorker: each "
            "retry lost its worker), so the job was stopped; a worker killed for running out "
            "of memory is the usual cause: give the workers more memory, or use more and "
            "smaller partitions"
        )
    if watchdog.message is not None and not isinstance(exc, PrivadError):
        return ClusterError(watchdog.message)
    return exc


async def _cancel_waiting(client: Any) -> None:
    """Wake everything waiting on the client's unfinished futures with a CancelledError.

    Only the client's side is cancelled (on its event loop): asking the scheduler to cancel
    keys (``Client.cancel``) trips an assertion of its own when a cancelled key has
    dependents that no client wants, as the tasks of a half-computed graph do. The scheduler
    forgets the tasks when the client closes, at the end of :func:`dask_client`.
    """
    for state in list(client.futures.values()):
        if state.status in ("pending", "lost"):
            state.cancel()


class _Watchdog:
    """Stops a job when the cluster has had no worker for ``timeout`` s.

    Polls the scheduler's worker list from a daemon thread every ``min(1, timeout/4)``
    seconds; a failed poll (the scheduler gone) counts as no worker. Then it wakes whatever
    waits on the client's futures (:func:`_cancel_waiting`), and keeps doing so for what
    the job submits next while there is still no worker.
    """

    def __init__(self, client: Any, timeout: float, where: str) -> None:
        self.client = client
        self.timeout = timeout
        self.where = where
        self.message: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="privad-dask-watchdog", daemon=True)
        self._thread.start()

    def _workers(self, wait: float) -> int:
        try:
            return len(self.client.nthreads(callback_timeout=wait))
        except Exception:  # the scheduler is unreachable: as good as no worker
            return 0

    def _run(self) -> None:
        poll = min(1.0, self.timeout / 4)
        last_seen = time.monotonic()
        while not self._stop.wait(poll):
            if self._workers(max(poll, 5.0)):
                last_seen = time.monotonic()
                continue
            if self._stop.is_set() or time.monotonic() - last_seen < self.timeout:
                continue
            self.message = (
                f"{self.where} has had no worker for {self.timeout:g} s, so the job was "
                "stopped; start workers, or give them longer to come back (--worker-timeout, "
                "worker_timeout=)"
            )
            with contextlib.suppress(Exception):
                self.client.sync(_cancel_waiting, self.client)

    def stop(self) -> None:
        """End the thread (before the client closes)."""
        self._stop.set()
        self._thread.join()
