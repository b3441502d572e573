"""The kernels' source run as plain Python draws exactly what the compiled kernels draw."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest

from privad import noise
from privad.noise import _engine

# Every kernel, with the parameters that take its rare branches: probabilities far below
# 2**-53 and at the endpoints, gamma = 0, 1, > 1 and huge, large a (doubling to
# +inf), negative and huge logistic arguments, the 32- and 64-bit Lemire paths (small and
# large discrete Laplace numerators), power-of-two and other denominators, added noise.
DRAWS: dict[str, Callable[[noise.Randomness], np.ndarray]] = {
    "bernoulli": lambda r: noise.bernoulli(
        np.array([0.0, 1e-30, 0.3, 0.5, 1 - 2**-53, 1.0, 5e-324]), r, size=(60, 7)
    ),
    "bernoulli_exp": lambda r: noise.bernoulli_exp(
        np.array([0.0, 1e-300, 0.2, 1.0, 2.5, 700.0, 2.0**62, 1e308]), r, size=(50, 8)
    ),
    "bernoulli_exp_times": lambda r: noise.bernoulli_exp_times(
        np.array([0, 1, 7, 2**40 + 3, 2**62]), np.array([[0.05], [1.5], [1e300]]), r, size=(3, 5)
    ),
    "bernoulli_logistic": lambda r: noise.bernoulli_logistic(
        np.array([-40.0, -3.0, -0.0, 0.0, 0.7, 40.0, 1e300]), r, size=(40, 7)
    ),
    "laplace": lambda r: noise.laplace(np.linspace(-5, 5, 300), 2.5, r),
    "laplace_coarse": lambda r: noise.laplace(np.linspace(-1, 1, 300), 1e-3, r, granularity_bits=8),
    "discrete_laplace": lambda r: noise.discrete_laplace(3, 2, 300, r),
    "discrete_laplace_large": lambda r: noise.discrete_laplace(2**40 + 7, 3, 300, r),
}


def _draw_with(
    module: ModuleType, name: str, randomness: noise.Randomness, monkeypatch: pytest.MonkeyPatch
) -> np.ndarray:
    monkeypatch.setattr(_engine, "_choose", lambda n: module)
    return DRAWS[name](randomness)


def _draw(module: ModuleType, name: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    return _draw_with(module, name, noise.Randomness(seed), monkeypatch)


@pytest.mark.parametrize("block_words", [3, _engine.BLOCK_WORDS])
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_python_kernels_draw_what_the_compiled_ones_draw(
    name: str, block_words: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 3 words per block: samples run out of words and are replayed, in both engines.
    monkeypatch.setattr(_engine, "BLOCK_WORDS", block_words)
    for seed in (0, 1, 2024):
        compiled = _draw(_engine.kernels(), name, seed, monkeypatch)
        python = _draw(_engine.python_kernels(), name, seed, monkeypatch)
        np.testing.assert_array_equal(python, compiled)
        assert python.dtype == compiled.dtype


def test_python_kernels_are_a_separate_plain_module() -> None:
    twin = _engine.python_kernels()
    assert twin.__name__ == _engine.PYTHON_TWIN
    assert twin is not _engine.kernels()
    assert not hasattr(twin.dlap_kernel, "py_func")  # a plain function
    assert hasattr(_engine.kernels().dlap_kernel, "py_func")  # a Numba dispatcher
    a, b = np.uint64(2**64 - 1), np.uint64(2**63 + 5)
    assert twin._mul128(a, b) == _engine.kernels().mul128(a, b)
    for x in (0.1, 5e-324, 1.0 - 2**-53):
        assert twin._float_bits(x) == np.float64(x).view(np.int64)


def test_the_python_budget_then_the_compiled_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_engine, "_kernels", None)
    monkeypatch.setattr(_engine, "_python_samples", 0)
    monkeypatch.setattr(_engine, "PYTHON_SAMPLES", 100)
    twin = _engine.python_kernels()
    assert _engine._choose(60) is twin
    assert _engine._choose(40) is twin
    assert _engine._choose(1) is not twin  # budget spent: compiled from now on
    assert _engine._choose(1) is not twin
    monkeypatch.setattr(_engine, "_kernels", None)
    monkeypatch.setattr(_engine, "_python_samples", 0)
    assert _engine._choose(101) is not twin  # one draw above the budget: compiled at once


def test_small_draws_in_a_fresh_process_do_not_load_numba() -> None:
    code = (
        "import sys, numpy as np; from privad import noise\n"
        "noise.laplace(np.zeros(500), 1.0, 3); noise.bernoulli_exp_times(3, 0.1, 3, size=500)\n"
        "print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("scale", "g"),
    [(2.5, 40), (2.0**-1000, 40), (2.0**-1060, 8), (1e300, 40), (3.0, 8), (2.0**900, 44)],
)
def test_laplace_is_snap_plus_the_discrete_noise_of_the_same_words(scale: float, g: int) -> None:
    """laplace(x) = ldexp(rint(ldexp(x, -k)) + z, k) with z the discrete Laplace noise of
    the same words (the fused kernel computes ldexp as products of powers of two, also
    where 2**-k exceeds the largest double and where the results are subnormal)."""
    k = noise.grid_exponent(scale, g)
    grid = math.ldexp(1.0, k)
    x = np.array([0.0, -0.0, 0.5, -2.5, 1.0, 1e-300, -3e-320, 5e-324, 1e300, -1.7e308])
    x = np.concatenate([x, np.array([0.5, 1.5, 2.5, -0.5, 7.25]) * grid])  # ties on the grid
    with np.errstate(over="ignore"):
        x = x[np.isfinite(np.rint(np.ldexp(x, -k)))]  # the values this grid can hold
    num, den = math.ldexp(scale, -k).as_integer_ratio()
    for seed in (0, 5):
        z = noise.discrete_laplace(num, den, x.size, noise.Randomness(seed))
        with np.errstate(over="ignore"):
            expected = np.ldexp(np.rint(np.ldexp(x, -k)) + z, k)
        got = noise.laplace(x, scale, noise.Randomness(seed), granularity_bits=g)
        np.testing.assert_array_equal(got.view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("compiled", [True, False])
def test_generated_words_are_numpys_pcg64dxsm_words(compiled: bool) -> None:
    """The kernels' own PCG64DXSM (compiled, and as plain Python) gives NumPy's words, and
    the state written back continues NumPy's stream, buffered 32-bit value kept."""
    k = _engine.kernels() if compiled else _engine.python_kernels()
    for seed in (0, 1, 2**64 + 12345):
        bit_generator = np.random.PCG64DXSM(seed)
        state = bit_generator.state
        state["has_uint32"], state["uinteger"] = 1, 123456789
        bit_generator.state = state
        expected = np.random.PCG64DXSM(seed).random_raw(1001)
        store = _engine.generating_store(k, bit_generator)
        with np.errstate(over="ignore"):
            words = [int(k._next64(store)) for _ in range(1000)]
        assert words == [int(w) for w in expected[:1000]]
        assert store[k._FLAG] == 0  # never exhausted
        _engine.write_back(k, store, bit_generator)
        assert bit_generator.random_raw() == expected[1000]
        assert (bit_generator.state["has_uint32"], bit_generator.state["uinteger"]) == (
            1,
            123456789,
        )


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_draw_uses_up_only_the_words_it_reads(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated (compiled) and stored (Python, blocks of 5 words) runs leave the stream at
    the same place: the stored run hands its unread words back. A stream that cannot be
    stepped back (SFC64) just skips them."""
    monkeypatch.setattr(_engine, "BLOCK_WORDS", 5)
    after = {}
    for module in (_engine.kernels(), _engine.python_kernels()):
        randomness = noise.Randomness(7)
        _draw_with(module, name, randomness, monkeypatch)
        after[module.__name__] = randomness.generator.bit_generator.random_raw(3)
    compiled, python = after.values()
    np.testing.assert_array_equal(python, compiled)
    sfc = noise.Randomness(np.random.SFC64(7))
    _draw_with(_engine.kernels(), name, sfc, monkeypatch)
    assert sfc.generator.bit_generator.random_raw() != np.random.SFC64(7).random_raw()


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parallel draws from 5,000 samples on, in chunks of 1,000 (defaults: 2**20, 2**18)."""
    monkeypatch.setattr(_engine, "PARALLEL_MIN", 5_000)
    monkeypatch.setattr(_engine, "CHUNK", 1_000)


def _chunk_by_chunk(name: str, values: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    """What a parallel draw must give: chunk j drawn alone from the seed's stream advanced by
    j SUBSTREAM words; and the state the stream must end in."""
    parts = []
    n = values.shape[0]
    for j, lo in enumerate(range(0, n, _engine.CHUNK)):
        stream = np.random.PCG64DXSM(seed)
        stream.advance(j * _engine.SUBSTREAM)
        part = values[lo : lo + _engine.CHUNK]
        if name == "laplace":
            parts.append(noise.laplace(part, 2.5, noise.Randomness(stream)))
        else:
            parts.append(noise.bernoulli(part, noise.Randomness(stream)))
    end = np.random.PCG64DXSM(seed)
    end.advance(len(parts) * _engine.SUBSTREAM)
    return np.concatenate(parts), end.state["state"]["state"]


@pytest.mark.parametrize("name", ["laplace", "bernoulli"])
def test_a_parallel_draw_is_its_chunks_drawn_from_disjoint_streams(
    name: str, small_chunks: None
) -> None:
    """Chunk j reads the stream advanced by j SUBSTREAM words, the generator ends past the
    last chunk's stream, and neither depends on the number of threads."""
    import numba

    values = np.linspace(-5, 5, 12_345) if name == "laplace" else np.linspace(0, 1, 12_345)
    expected, end_state = _chunk_by_chunk(name, values, 99)
    threads = numba.get_num_threads()
    try:
        for t in sorted({1, threads}):
            numba.set_num_threads(t)
            randomness = noise.Randomness(99)
            if name == "laplace":
                got = noise.laplace(values, 2.5, randomness)
            else:
                got = noise.bernoulli(values, randomness)
            np.testing.assert_array_equal(got, expected)
            assert randomness.generator.bit_generator.state["state"]["state"] == end_state
    finally:
        numba.set_num_threads(threads)


def test_a_parallel_draw_broadcasts_a_single_parameter(small_chunks: None) -> None:
    """A length-1 parameter applies to every sample of every chunk (not sliced away)."""
    bits = noise.bernoulli(0.25, 5, size=40_000)
    assert bits.shape == (40_000,)
    # Clopper-Pearson at alpha = 1e-6 is about +-0.011 at 40,000 draws of p = 0.25
    assert abs(bits.mean() - 0.25) < 0.011


def test_a_parallel_laplace_draw_has_the_right_scale(small_chunks: None) -> None:
    """Two-sided KS at alpha = 1e-6 through 200 chunks (the power argument of
    tests/noise/test_noise_statistics.py: 200,000 draws reject a 10 % wrong scale)."""
    from scipy import stats

    z = noise.laplace(np.zeros(200_000), 2.5, 2024)
    assert stats.kstest(z, "laplace", args=(0.0, 2.5)).pvalue > 1e-6
    assert stats.kstest(z, "laplace", args=(0.0, 2.25)).pvalue < 1e-6
    assert stats.kstest(z, "laplace", args=(0.0, 2.75)).pvalue < 1e-6


def test_one_compiled_specialisation_whatever_the_inputs_writeable_flags() -> None:
    """A broadcast (read-only) and a copied (writeable) parameter reach the kernel with
    the same type, so the kernels compiled ahead of a job are the only ones it needs (a
    100,000-record job used to compile a second ``bern_exp_times_kernel``)."""
    from privad.noise import _kernels

    m = _engine.PYTHON_SAMPLES + 1  # the compiled kernels, not their plain-Python twins
    rng = noise.Randomness(3)
    a = np.full(m, 3, np.int64)
    noise.bernoulli_exp_times(a, 0.2, rng)  # gamma broadcast: a read-only input
    noise.bernoulli_exp_times(a, np.full(m, 0.2), rng)  # both writeable
    noise.bernoulli_exp_times(3, np.full(m, 0.2), rng)  # a broadcast
    assert len(_kernels.bern_exp_times_kernel.signatures) == 1
    assert not _kernels.bern_exp_times_kernel.signatures[0][3].mutable
