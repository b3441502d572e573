"""A Dask worker preload for the fault tests: the worker kills itself (SIGKILL, as the
out-of-memory killer would) when it starts a task whose key contains
``$PRIVAD_TEST_KILL_ON_TASK`` (Dask may fuse a task into others, whose key then holds its
name). Given to workers as ``--preload PATH`` or through the
``distributed.worker.preload`` setting; never imported by the tests themselves."""

from __future__ import annotations

import os
import signal

from distributed import WorkerPlugin

NAME = os.environ.get("PRIVAD_TEST_KILL_ON_TASK", "")


class KillOnTask(WorkerPlugin):
    """SIGKILL this worker process when a task whose key contains NAME starts."""

    def transition(self, key, start, finish, **kwargs) -> None:
        if finish == "executing" and NAME and NAME in str(key):
            os.kill(os.getpid(), signal.SIGKILL)


async def dask_setup(worker) -> None:
    await worker.plugin_add(KillOnTask(), name="privad-test-kill-on-task")
