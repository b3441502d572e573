"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from privad.services.common import ThreadedServer


class ServerPool:
    """Threaded servers started by one test; the fixture stops every one at teardown."""

    def __init__(self) -> None:
        self.started: list[ThreadedServer] = []

    def start_app(self, app: Any) -> ThreadedServer:
        srv = ThreadedServer(app).start()
        self.started.append(srv)
        return srv

    def stop(self, srv: ThreadedServer) -> None:
        srv.stop()
        if srv in self.started:
            self.started.remove(srv)

    def close(self) -> None:
        for srv in self.started:  # all at once: each shutdown takes a few 0.1 s ticks
            srv.request_stop()
        for srv in reversed(self.started):
            srv.stop()


@pytest.fixture
def server_pool() -> Iterator[ServerPool]:
    """A :class:`ServerPool`: ``start_app(app)`` runs an app on loopback until teardown."""
    pool = ServerPool()
    yield pool
    pool.close()
