"""The worker plugin that loads privad's Numba kernels when a Dask worker joins a job."""

from __future__ import annotations

import asyncio
from typing import Any

from distributed import WorkerPlugin

from privad.geometry.warmup import compile_kernels


class WarmKernels(WorkerPlugin):
    """Loads (or compiles) the kernels in each worker before it runs privad's tasks.

    :func:`privad.distributed.dask_client` registers it: the client waits until every
    current worker has run :meth:`setup`, and a worker that joins later (a nanny's restart)
    runs it when it starts, so no task compiles. The kernels load in a thread, so the
    worker keeps answering the scheduler's heartbeats while a fresh environment compiles.

    Examples
    --------
    >>> WarmKernels().name  # one per cluster: registering it again replaces it
    'privad-warm-kernels'
    """

    name = "privad-warm-kernels"

    async def setup(self, worker: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(None, compile_kernels)
