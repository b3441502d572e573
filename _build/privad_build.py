"""privad's build backend: setuptools', plus compiling the Numba kernels of an editable install.

``pip install -e .`` builds an editable wheel whose modules are the checkout's own files, so
the kernels Numba compiles here, into ``src/privad/**/__pycache__`` (``cache=True``), are the
ones every later process loads: the first real job does not compile. The compilation runs
in pip's build environment, which has Numba (``build-system.requires``); its cache is used
whenever the installed Numba is the same version (pip picks the newest for both), and when it
is not, Numba compiles on first use as it would without this step. A failure here never
fails the install: it prints one line and the kernels compile on first use.

A regular wheel gets nothing from this (its files are copied and their timestamps, which
Numba's cache checks, change), so :func:`build_wheel` is setuptools' own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every hook setuptools defines)

_COMPILE = (
    "import sys; sys.path.insert(0, 'src'); "
    "from privad.geometry.warmup import compile_kernels; compile_kernels()"
)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):  # noqa: ANN001, ANN201
    """setuptools' editable wheel, then the kernels compiled into the checkout's cache."""
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    if os.environ.get("PRIVAD_SKIP_KERNEL_BUILD"):
        return name
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _COMPILE], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    if proc.returncode == 0:
        print(
            f"privad: Numba kernels ready (compiled or loaded) in {seconds:.0f} s", file=sys.stderr
        )
    else:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        print(
            f"privad: kernels not compiled at install ({last}); they compile on first use",
            file=sys.stderr,
        )
    return name
