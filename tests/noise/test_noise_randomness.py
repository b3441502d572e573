"""The Randomness object: seeding, spawning, coercion, the non-critical draws."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from privad import noise
from privad.errors import ParameterError, PrivadError
from privad.noise import Randomness, as_randomness

SAMPLERS = [
    lambda rng: noise.laplace(np.linspace(-5, 5, 300), 1.5, rng),
    lambda rng: noise.discrete_laplace(7, 2, 300, rng),
    lambda rng: noise.bernoulli(0.3, rng, size=300),
    lambda rng: noise.bernoulli_exp(np.linspace(0, 5, 300), rng),
    lambda rng: noise.bernoulli_log(-0.7, rng, size=300),
    lambda rng: noise.bernoulli_exp_times(np.arange(300), 0.01, rng),
    lambda rng: noise.bernoulli_logistic(np.linspace(-3, 3, 300), rng),
    lambda rng: noise.randomized_response(np.arange(300) % 2, 0.3, rng),
]


def _all_samplers(rng: Randomness) -> list[np.ndarray]:
    return [f(rng) for f in SAMPLERS] + [rng.normal(0.0, 1.0, 10), rng.integers(0, 100, 10)]


def test_same_seed_same_output() -> None:
    a, b = _all_samplers(Randomness(42)), _all_samplers(Randomness(42))
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)
    c = _all_samplers(Randomness(43))
    assert sum(not np.array_equal(x, y) for x, y in zip(a, c, strict=True)) >= 8


def test_int_seed_as_rng_is_reproducible() -> None:
    assert np.array_equal(noise.laplace(np.zeros(50), 1.0, 5), noise.laplace(np.zeros(50), 1.0, 5))
    assert np.array_equal(noise.bernoulli(0.5, 9, size=64), noise.bernoulli(0.5, 9, size=64))


def test_os_entropy_streams_differ() -> None:
    assert not np.array_equal(noise.laplace(np.zeros(20), 1.0), noise.laplace(np.zeros(20), 1.0))
    a, b = Randomness().integers(0, 2**62, 4), Randomness().integers(0, 2**62, 4)
    assert not np.array_equal(a, b)


def test_output_does_not_depend_on_the_word_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels replay a sample whose words ran out, on the same words: the output is
    a function of the raw word stream alone, whatever the block size (1 word forces a
    replay in nearly every sample, including mid-way through the bit and half-word
    caches)."""
    from privad.noise import _engine

    def each_on_a_fresh_stream() -> list[np.ndarray]:
        # (the words left in the last block are dropped, so only the first call on a
        # stream is block-size independent)
        return [f(Randomness(7)) for f in SAMPLERS]

    reference = each_on_a_fresh_stream()
    for block in (1, 2, 3, 17, 1000):
        monkeypatch.setattr(_engine, "BLOCK_WORDS", block)
        for j, (x, y) in enumerate(zip(reference, each_on_a_fresh_stream(), strict=True)):
            assert np.array_equal(x, y), (block, j)


def test_spawn_gives_independent_reproducible_streams() -> None:
    parent = Randomness(2024)
    kids = parent.spawn(4)
    assert len(kids) == 4 and all(isinstance(k, Randomness) for k in kids)
    draws = [k.integers(0, 2**62, 8) for k in kids]
    assert len({tuple(d) for d in draws}) == 4  # all differ
    again = [k.integers(0, 2**62, 8) for k in Randomness(2024).spawn(4)]
    assert all(np.array_equal(x, y) for x, y in zip(draws, again, strict=True))
    # spawning does not advance the parent, and the parent differs from every child
    assert np.array_equal(parent.integers(0, 2**62, 8), Randomness(2024).integers(0, 2**62, 8))
    p = Randomness(2024).integers(0, 2**62, 8)
    assert all(not np.array_equal(p, d) for d in draws)
    # later spawns give new children, never repeats
    more = [k.integers(0, 2**62, 8) for k in parent.spawn(2)]
    assert all(not np.array_equal(m, d) for m in more for d in draws)
    assert parent.spawn(0) == []


def test_spawned_streams_are_not_correlated() -> None:
    a, b = Randomness(1).spawn(2)
    x, y = a.normal(size=100_000), b.normal(size=100_000)
    assert abs(np.corrcoef(x, y)[0, 1]) < 0.02  # |r| ~ N(0, 1/n): 0.02 is 6.3 sigma


def test_as_randomness_coercion() -> None:
    r = Randomness(1)
    assert as_randomness(r) is r
    assert isinstance(as_randomness(None), Randomness)
    assert isinstance(as_randomness(3), Randomness)
    assert isinstance(as_randomness(np.int64(3)), Randomness)
    assert isinstance(as_randomness(np.random.SeedSequence(3)), Randomness)
    g = np.random.Generator(np.random.SFC64(3))
    wrapped = as_randomness(g)
    assert wrapped.generator is g  # shared, not copied
    assert isinstance(as_randomness(np.random.Philox(3)), Randomness)
    for bad in ("seed", 1.5, True, -1, object()):
        with pytest.raises(ParameterError):
            as_randomness(bad)
    with pytest.raises(ParameterError, match="RandomState"):
        Randomness(np.random.RandomState(0))


def test_user_generator_is_advanced_and_works_for_exact_samplers() -> None:
    g = np.random.Generator(np.random.SFC64(123))
    before = repr(g.bit_generator.state)
    y = noise.laplace(np.zeros(100), 2.0, g)
    assert repr(g.bit_generator.state) != before and y.shape == (100,)
    g2 = np.random.Generator(np.random.SFC64(123))
    assert np.array_equal(noise.laplace(np.zeros(100), 2.0, Randomness(g2)), y)


def test_mt19937_words_are_full_64_bit() -> None:
    """MT19937's random_raw yields 32-bit values; the samplers must still see uniform
    64-bit words (a 32-bit word would make bernoulli(0.3) always True)."""
    from scipy import stats

    out = noise.bernoulli(0.3, np.random.Generator(np.random.MT19937(5)), size=200_000)
    ci = stats.binomtest(int(out.sum()), out.size).proportion_ci(1 - 1e-6, method="exact")
    assert ci.low <= 0.3 <= ci.high


def test_default_bit_generator_and_repr() -> None:
    r = Randomness(0)
    assert isinstance(r.generator.bit_generator, np.random.PCG64DXSM)
    assert "PCG64DXSM" in repr(r)


def test_pickle_round_trip_continues_the_stream() -> None:
    r = Randomness(99)
    r.normal(size=3)
    clone = pickle.loads(pickle.dumps(r))
    assert np.array_equal(clone.integers(0, 1000, 10), r.integers(0, 1000, 10))


def test_non_critical_draws() -> None:
    r = Randomness(5)
    u = r.uniform(2.0, 3.0, 1000)
    assert u.shape == (1000,) and (u >= 2).all() and (u < 3).all()
    assert r.normal(1.0, 2.0, (3, 4)).shape == (3, 4)
    assert r.standard_normal(5).shape == (5,)
    ints = r.integers(3, 9, 500)
    assert ints.dtype == np.int64 and ints.min() >= 3 and ints.max() < 9
    assert r.integers(5, size=3).max() < 5
    perm = r.permutation(10)
    assert sorted(perm.tolist()) == list(range(10))
    arr = np.arange(6)
    assert sorted(r.permutation(arr).tolist()) == list(range(6))
    r.shuffle(arr)
    assert sorted(arr.tolist()) == list(range(6))
    c = r.choice(5, 100, True, [0.0, 0.0, 1.0, 0.0, 0.0])
    assert (c == 2).all()
    assert len(set(r.choice(10, 10, replace=False).tolist())) == 10
    t = r.standard_t(2.0, 2000)
    assert t.shape == (2000,) and np.abs(t).max() > 5  # heavy tails
    assert r.exponential(2.0, 10).min() >= 0
    assert r.random(4).shape == (4,)
    assert 0 <= r.derive_seed() < 2**32
    mvn = r.multivariate_normal([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], 7)
    assert mvn.shape == (7, 2)
    assert r.binomial(10, 0.5, 3).shape == (3,)
    assert r.poisson(2.0, 3).shape == (3,)


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.uniform(1.0, 0.0),
        lambda r: r.uniform(0.0, np.inf),
        lambda r: r.normal(0.0, -1.0),
        lambda r: r.normal(np.nan, 1.0),
        lambda r: r.integers(5, 5),
        lambda r: r.integers(0, 10, size=-1),
        lambda r: r.integers(0, 10, size="3"),
        lambda r: r.choice(3, 2, p=[0.5, 0.5, 0.5]),
        lambda r: r.choice(3, 2, p=[-0.5, 0.5, 1.0]),
        lambda r: r.choice(3, 5, replace=False),
        lambda r: r.standard_t(0.0),
        lambda r: r.exponential(-1.0),
        lambda r: r.permutation(-3),
        lambda r: r.spawn(-1),
        lambda r: r.multivariate_normal([0.0], [[-1.0]]),
    ],
)
def test_non_critical_draws_validate(call) -> None:  # noqa: ANN001
    with pytest.raises(PrivadError):
        call(Randomness(0))


@pytest.mark.parametrize(
    "bit_generator",
    [np.random.PCG64, np.random.PCG64DXSM, np.random.SFC64, np.random.Philox, np.random.MT19937],
)
def test_word_blocks_are_the_bit_generators_next_uint64(bit_generator) -> None:  # noqa: ANN001
    """The fast path (random_raw) reads the very words integers(0, 2**64) would."""
    from privad.noise import _engine

    got = _engine._words(np.random.Generator(bit_generator(7)), 1000)
    want = np.random.Generator(bit_generator(7)).integers(0, 2**64, 1000, dtype=np.uint64)
    np.testing.assert_array_equal(got, want.view(np.int64))
