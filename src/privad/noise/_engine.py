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
that needs many words costs O(its words), not O(its words squared). At the end, a
``PCG64DXSM`` is stepped back over the words of the last block that no sample read.

For NumPy's default ``PCG64DXSM`` the compiled kernels need no store: they compute the
generator's words from a copy of its state and this module writes the advanced state back
(see the ``_kernels`` docstring). Both ways a draw uses up exactly the words it read;
a draw of :data:`PARALLEL_MIN` samples or more runs in parallel chunks, each on its own
stream jumped ahead (:func:`_run_generating`).

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
from concurrent.futures import ThreadPoolExecutor
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
    """Fill the 1-D array ``out`` with kernel ``name``; returns ``out``.

    Either way the bit generator ends up having given exactly the words the samples read:
    the compiled kernels generate ``PCG64DXSM``'s words themselves (:func:`_run_generating`),
    and a stored run hands the generator's unread words back (:func:`_rewind`). So the next
    draw from the same stream does not depend on which kernels ran. (A parallel draw, of
    :data:`PARALLEL_MIN` samples or more, moves the generator past its chunks' streams.)
    """
    k = _choose(out.shape[0])
    kernel = getattr(k, name)
    args = tuple(_read_only(a) for a in args)
    bit_generator = rng.generator.bit_generator
    if k is _kernels and type(bit_generator) is np.random.PCG64DXSM:
        return _run_generating(kernel, bit_generator, out, args)
    return _run_stored(kernel, k.HEADER, rng.generator, out, words_per_item, args)


def _read_only(arg: Any) -> Any:
    """An array argument as a read-only view (other arguments as they are).

    Numba compiles one specialisation per writeable flag of each array argument, and the
    flag of a kernel's input depends on the caller (a broadcast parameter is read-only, a
    copied one writeable): one flag for every input keeps the kernels that
    :func:`privad.geometry.warmup.compile_kernels` compiled the only ones a job needs.
    """
    if isinstance(arg, np.ndarray) and arg.flags.writeable:
        arg = arg.view()
        arg.flags.writeable = False
    return arg


_MASK64 = (1 << 64) - 1


PARALLEL_MIN = 1 << 20
"""Draws of at least this many samples from a ``PCG64DXSM`` run in parallel chunks."""

CHUNK = 1 << 18
"""Samples per chunk of a parallel draw. Fixed, so the output does not depend on the number
of threads."""

SUBSTREAM = 1 << 100
"""Words between the starts of two chunks' streams (a chunk reads far fewer than this)."""


def _run_generating(
    kernel: Any, bit_generator: np.random.PCG64DXSM, out: np.ndarray, args: tuple
) -> np.ndarray:
    """The kernel computing the generator's words from its state (see the ``_kernels``
    docstring), then the advanced state written back.

    A draw of :data:`PARALLEL_MIN` samples or more is cut into chunks of :data:`CHUNK`,
    drawn on Numba's threads (the kernels release the GIL): chunk j reads the words of the
    stream advanced by j :data:`SUBSTREAM` words (PCG64DXSM's jump-ahead, as in NumPy's
    ``jumped``), and the generator ends advanced past every chunk's stream, so no word is
    read twice. The output for a seed is the same for any number of threads.
    """
    k = kernels()
    n = out.shape[0]
    with bit_generator.lock:
        if n < PARALLEL_MIN:
            store = generating_store(k, bit_generator)
            _fill_generated(kernel, store, out, args)
            write_back(k, store, bit_generator)
            return out
        starts = range(0, n, CHUNK)
        stream = np.random.PCG64DXSM(0)  # a scratch copy of the generator, moved along
        stream.state = bit_generator.state
        streams = []
        for _ in starts:
            streams.append(generating_store(k, stream))
            stream.advance(SUBSTREAM)
        _step(bit_generator, len(starts) * SUBSTREAM)

    def chunk(j: int) -> None:
        lo, hi = starts[j], min(starts[j] + CHUNK, n)
        part = tuple(a[lo:hi] if _per_sample(a, n) else a for a in args)
        _fill_generated(kernel, streams[j], out[lo:hi], part)

    import numba

    with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
        list(pool.map(chunk, range(len(starts))))
    return out


def _per_sample(arg: Any, n: int) -> bool:
    """Whether a kernel argument is a per-sample array (a length-1 one applies to all)."""
    return isinstance(arg, np.ndarray) and arg.ndim == 1 and arg.shape[0] == n


def _fill_generated(kernel: Any, store: np.ndarray, out: np.ndarray, args: tuple) -> None:
    i, _ = kernel(store, out, 0, *args)
    if i != out.shape[0]:  # generated words never run out
        raise RuntimeError(f"kernel {kernel} stopped at sample {i} of {out.shape[0]}")


def generating_store(k: ModuleType, bit_generator: np.random.PCG64DXSM) -> np.ndarray:
    """A word store (header only) that makes kernels module ``k`` generate the words of
    ``bit_generator`` from a copy of its state."""
    inner = bit_generator.state["state"]
    s, inc = inner["state"], inner["inc"]
    store = np.zeros(k.HEADER, dtype=np.int64)
    store[0] = store[k._SIZE] = k.HEADER
    store[k.GENERATE] = 1
    store[k.STATE : k.STATE + 4] = np.array(
        [s >> 64, s & _MASK64, inc >> 64, inc & _MASK64], dtype=np.uint64
    ).view(np.int64)
    return store


def write_back(k: ModuleType, store: np.ndarray, bit_generator: np.random.PCG64DXSM) -> None:
    """Set ``bit_generator``'s state to the one the kernels advanced in ``store``, keeping
    its buffered 32-bit value (which ``random_raw`` does not touch either)."""
    state = bit_generator.state
    high, low = (int(w) for w in store[k.STATE : k.STATE + 2].view(np.uint64))
    state["state"]["state"] = high << 64 | low
    bit_generator.state = state


def _step(bit_generator: np.random.PCG64DXSM, words: int) -> None:
    """Move a ``PCG64DXSM`` by ``words`` words (negative: back; ``advance`` modulo
    2**128), keeping its buffered 32-bit value, which ``advance`` would reset."""
    buffered = bit_generator.state
    bit_generator.advance(words % (1 << 128))
    state = bit_generator.state
    state["has_uint32"], state["uinteger"] = buffered["has_uint32"], buffered["uinteger"]
    bit_generator.state = state


def _rewind(bit_generator: np.random.BitGenerator, words: int) -> None:
    """Step a ``PCG64DXSM`` back by ``words`` unread words; other generators keep the
    unread words skipped."""
    if words and type(bit_generator) is np.random.PCG64DXSM:
        _step(bit_generator, -words)


def _run_stored(
    kernel: Any,
    header_len: int,
    generator: np.random.Generator,
    out: np.ndarray,
    words_per_item: float,
    args: tuple,
) -> np.ndarray:
    """The kernel called on blocks of stored words until ``out`` is full (see the module
    docstring), then the unread words handed back (:func:`_rewind`)."""
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
    _rewind(generator.bit_generator, tail.size)
    return out
