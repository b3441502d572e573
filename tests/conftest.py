"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from privad.services.app import ThreadedServer


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile (or load) privad's Numba kernels once, before any test runs.

    Under pytest-xdist this runs in the controlling process only, before the workers start,
    so no worker and no subprocess a test starts (a server, a Dask worker, a CLI run)
    compiles on its own: they all load the kernels from Numba's cache. Waits in the tests
    then bound hangs, not compilation.
    """
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller did it
        return
    from privad.geometry.warmup import compile_kernels

    compile_kernels()


class ServerPool:
    """Threaded servers started by one test; the fixture stops every one at teardown."""

    def __init__(self) -> None:
        self.started: list[ThreadedServer] = []

    def start_app(self, app: Any) -> ThreadedServer:
        srv = ThreadedServer(app).start()
        self.started.append(srv)
        return srv

    def start_curator(
        self, X: Any, mechanism: Any, secret: str, folder: Any, querier: str = "q", **options: Any
    ) -> ThreadedServer:
        """A sensitive-privacy curator of ``X`` on loopback: one ``querier`` (token
        ``secret``), its database and ledger in ``folder``; ``options`` of
        ``create_curator_app`` (default: budget 1 per querier, rng 3)."""
        from privad.services.auth import TokenRegistry
        from privad.services.curator import create_curator_app

        options = {"budget": 1.0, "rng": 3, **options}
        tokens = TokenRegistry([(querier, secret)])
        stores = {"db": folder / "c.sqlite", "ledger": folder / "l.sqlite"}
        return self.start_app(create_curator_app(X, mechanism, **stores, tokens=tokens, **options))

    def stop(self, srv: ThreadedServer) -> None:
        srv.stop()
        if srv in self.started:
            self.started.remove(srv)

    def close(self) -> None:
        for srv in self.started:  # all at once: each shutdown takes a few 0.1 s ticks
            srv.request_stop()
        for srv in reversed(self.started):
            srv.stop()


@pytest.fixture(autouse=True)
def _fresh_process_ledgers() -> Iterator[None]:
    """Each test starts as a new process would: no estimator's in-memory ledger yet."""
    from privad.base import _ACCOUNTS

    _ACCOUNTS.forget()
    yield


@pytest.fixture
def assert_refused() -> Callable[..., None]:
    """``assert_refused(est, error, *calls, match=None)``: each call raises ``error`` (its
    message matching ``match``) and leaves every attribute of the estimator ``est`` as it
    was (the same objects): nothing released."""

    def check(
        est: Any, error: type[Exception], *calls: Callable[[], Any], match: str | None = None
    ) -> None:
        before = dict(vars(est))
        for call in calls:
            with pytest.raises(error, match=match):
                call()
        assert vars(est).keys() == before.keys()
        assert all(vars(est)[name] is value for name, value in before.items())

    return check


@pytest.fixture
def server_pool() -> Iterator[ServerPool]:
    """A :class:`ServerPool`: ``start_app(app)`` runs an app on loopback until teardown."""
    pool = ServerPool()
    yield pool
    pool.close()


def spawn_privad(args: list[str], banner: str, timeout: float = 30.0) -> tuple[Any, str]:
    """Start ``privad ARGS`` (a server) as a subprocess; return (process, its URL).

    Waits for the first line of standard output, ``BANNER listening on URL``, then until
    ``URL/v1/health`` answers.
    """
    import subprocess
    import sys
    import time

    import httpx

    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from privad.cli import main; main(sys.argv[1:])",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith(f"{banner} listening on http://127.0.0.1:"), (
        line,
        proc.stderr.read() if proc.poll() is not None else "",
    )  # type: ignore[union-attr]
    url = line.split()[-1]
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url + "/v1/health", timeout=1)
            return proc, url
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"{banner} did not answer at {url}"
            time.sleep(0.05)


@pytest.fixture
def spawn_server() -> Any:
    """:func:`spawn_privad`: ``spawn_server(args, banner)`` starts a ``privad serve ...``
    process and returns (process, URL)."""
    return spawn_privad


def shim_source(*groups: str) -> str:
    """Python source that runs ``privad`` (``sys.argv[1:]``) with only the command ``groups``
    (modules of :mod:`privad.cli`), so that a subprocess test depends on no other group."""
    names = ", ".join(groups)
    return f"""
import sys
import typer
import privad.cli as cli
from privad.cli import {names}
app = typer.Typer(name="privad", no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False)
@app.callback()
def _root() -> None:
    '''privad ({names}).'''
cli.app = app
cli._register = lambda: [group.register(app) for group in ({names},)]
cli.main(sys.argv[1:])
"""


@pytest.fixture(scope="session")
def privad_shim() -> Any:
    """:func:`shim_source`: ``[sys.executable, "-c", privad_shim("serve"), *args]`` runs
    ``privad ARGS`` with the ``serve`` group alone."""
    return shim_source


WINE_BOUNDS = {
    name: (float(lower), float(upper))
    for name, lower, upper in (
        entry.split()
        for entry in (
            "alcohol 10 15, malic_acid 0 6, ash 1 4, alcalinity_of_ash 10 30, magnesium 60 170, "
            "total_phenols 0 4, flavanoids 0 5, nonflavanoid_phenols 0 1, proanthocyanins 0 4, "
            "color_intensity 0 13, hue 0 2, od280/od315_of_diluted_wines 1 4, proline 0 2000"
        ).split(", ")
    )
}
"""Round, domain-style bounds of the Wine features (what an analyst would write down from
the measurement ranges, not computed from the data); flavanoids' 5.08 lies above its bound."""


@pytest.fixture(scope="session")
def wine() -> tuple[Any, dict[str, tuple[float, float]]]:
    """scikit-learn's bundled Wine features (178 × 13; proline carries 99.8 % of the
    variance) as a DataFrame, and :data:`WINE_BOUNDS`."""
    from sklearn.datasets import load_wine

    return load_wine(as_frame=True).data, WINE_BOUNDS


@pytest.fixture
def full_disk(tmp_path) -> Any:
    """``full_disk(free)``: a folder on a 64 KiB tmpfs of its own, filled to leave about
    ``free`` bytes (a real full file system; skipped where mounting is not permitted, e.g.
    not root). Unmounted at teardown."""
    import os
    import subprocess

    mounted = []

    def make(free: int) -> Any:
        folder = tmp_path / f"small{len(mounted)}"
        folder.mkdir()
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        mounted.append(folder)
        info = os.statvfs(folder)
        (folder / "filler").write_bytes(b"\0" * max(0, info.f_bavail * info.f_frsize - free))
        return folder

    yield make
    for folder in mounted:
        subprocess.run(["umount", str(folder)], capture_output=True, check=False)


@pytest.fixture(scope="session")
def online_claim5_m() -> Any:
    """``online_claim5_m(V, r)``: the curator's online Claim 5 m of the vector set ``V``,
    ``min(|V|, max_t #{s : d(v_s, v_t) <= claim5_radius(r)})`` (the 2r bound), from every
    pair by the canonical predicate (euclidean)."""
    from privad.geometry.predicate import pair_values, threshold
    from privad.sensitive.accounting import claim5_radius

    def m(V: Any, r: float) -> int:
        within = pair_values(V, V, "euclidean") <= threshold(claim5_radius(r), "euclidean")
        return min(len(V), int(within.sum(axis=1).max()))

    return m
