"""Driving the Numba kernels of :mod:`privad.noise._kernels` (private).

The kernels read raw 64-bit words from a word store (see the ``_kernels`` docstring). This
module fills the store in blocks of uniform 64-bit words: the bit generator's
``next_uint64``, read with ``bit_generator.random_raw`` for the 64-bit generators (PCG64,
PCG64DXSM, SFC64, Philox) and with ``generator.integers(0, 2**64, dtype=uint64)`` (the same
words for those, and still correct for MT19937, whose ``random_raw`` gives 32-bit values)
for any other.

When a kernel stops because the words ran out in the middle of a sample, this module
keeps the unread words from that sample's start, appends a fresh block and calls the
kernel again: the sample is *replayed* on the same words and continued, never restarted
on new words nor discarded.
If a call completes no sample, the next one gets at least twice the words, so a sample
that needs many words costs O(its words), not O(its words squared).

Numba and the kernels are imported on first use, so ``import privad.noise`` stays light;
with ``cache=True`` the compiled kernels are written next to the source and later
processes load them in well under a second.

Small draws run the same kernel source as plain Python instead (:func:`python_kernels`):
about 10 microseconds a sample, against 5 to 10 s to compile a kernel in a fresh
environment (and about 0.5 s to import Numba and load it from the cache). A process uses
the Python kernels until it has drawn :data:`PYTHON_SAMPLES` samples with them, then the
compiled ones; both read the same words with the same arithmetic, so the output for a seed
does not depend on which ran (tested).
"""

from __future__ import annotations

import importlib.util
import math
from types import ModuleType
from typing import Any

import numpy as np

from privad.noise.randomness import Randomness

BLOCK_WORDS = 1 << 15
"""Words drawn per block (256 KiB, stays in cache). Outputs do not depend on it."""

# Bit generators whose ``random_raw`` is their ``next_uint64``: for them the words are read
# with ``random_raw`` (the same words, ~15 % faster than ``integers``, which adds a
# bounds check per word); any other (MT19937: 32-bit raw values) through ``integers``.
_RAW64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.SFC64, np.random.Philox)


def _words(generator: np.random.Generator, m: int) -> np.ndarray:
    """``m`` uniform 64-bit words, as int64."""
    bit_generator = generator.bit_generator
    if type(bit_generator) in _RAW64:
        return bit_generator.random_raw(m).view(np.int64)
    return generator.integers(0, 2**64, size=m, dtype=np.uint64).view(np.int64)


PYTHON_SAMPLES = 10_000
"""Samples a process draws with the Python kernels (about 0.2 s) before it switches to the
compiled ones for good; a single call of more samples goes to the compiled ones at once."""

PYTHON_TWIN = "privad.noise._pykernels"
"""The module name of the kernels' source loaded as plain Python (:func:`python_kernels`)."""

_kernels: ModuleType | None = None
_python: ModuleType | None = None
_python_samples = 0


def kernels() -> ModuleType:
    """The compiled kernels module, imported (and Numba loaded) on first use."""
    global _kernels
    if _kernels is None:
        from privad.noise import _kernels as module

        _kernels = module
    return _kernels


def python_kernels() -> ModuleType:
    """The source of :mod:`privad.noise._kernels` loaded as plain Python (no Numba): a
    second module object named :data:`PYTHON_TWIN`, whose kernels are ordinary functions."""
    global _python
    if _python is None:
        origin = importlib.util.find_spec("privad.noise._kernels").origin
        spec = importlib.util.spec_from_file_location(PYTHON_TWIN, origin)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _python = module
    return _python


def _choose(n: int) -> ModuleType:
    """The kernels for a draw of ``n`` samples (see the module docstring)."""
    global _python_samples
    if _kernels is None and _python_samples + n <= PYTHON_SAMPLES:
        _python_samples += n
        return python_kernels()
    return kernels()


def run(
    name: str, rng: Randomness, out: np.ndarray, words_per_item: float, *args: Any
) -> np.ndarray:
    """Fill the 1-D array ``out`` with kernel ``name``; returns ``out``."""
    k = _choose(out.shape[0])
    kernel = getattr(k, name)
    header_len = k.HEADER
    generator = rng.generator
    n = out.shape[0]
    header = np.zeros(header_len, dtype=np.int64)
    tail = np.empty(0, dtype=np.int64)
    stalled = False
    i = 0
    while i < n:
        m = min(BLOCK_WORDS, math.ceil((n - i) * words_per_item) + 16)
        if stalled:
            m = max(m, tail.size)  # one sample needs more words: double what it gets
        store = np.empty(header_len + tail.size + m, dtype=np.int64)
        store[:header_len] = header
        store[header_len : header_len + tail.size] = tail
        store[header_len + tail.size :] = _words(generator, m)
        store[0] = header_len
        with np.errstate(over="ignore"):  # Python kernels: 64-bit wrap-around, as compiled
            i_next, resume = kernel(store, out, i, *args)
        stalled = i_next == i
        i = i_next
        header = store[:header_len].copy()
        tail = store[resume:]
    return out
