"""Exactness of the samplers, proved with exact rational arithmetic instead of samples.

Two techniques:

1. **Crafted words.** The compiled kernels read raw 64-bit words from a word store; we
   hand them chosen words and check the decision. With the identity
   ``sum_i word_i(p) 2**(-64(i+1)) == p`` (checked exactly with Fractions), this proves
   ``bernoulli(p)`` returns True with probability exactly p: it returns True iff the
   first word that differs from p's expansion is smaller.

2. **Oracle enumeration of the algorithm code.** Every kernel helper is a Numba
   dispatcher whose ``py_func`` is the plain Python source, which looks up the helpers it
   calls as module globals. We run that *same source* in Python with the random
   primitives replaced by oracles that branch on every outcome with its exact rational
   probability, enumerate the decision tree depth-first, and add up the exact
   probability of each output. Paths longer than a depth bound are counted as
   "unfinished" mass U. Then:

   * CKS Algorithm 1 (``_bern_exp_frac``, ``_bern_exp1``, ``_bern_exp_ratio``): the
     finished probability of True is within U of exp(-gamma) (computed to 60 digits),
     with U < 1e-15; any error in the algorithm would show as a discrepancy far above U.
   * The compositions (``_bern_exp`` for gamma > 1, ``_bern_exp_times``,
     ``_bern_logistic``) are checked *symbolically*: their sub-samplers are replaced by
     oracles with arbitrary rational probabilities (stand-ins for exp(-1), exp(-frac)
     ...), and the output probability is exactly the claimed function of them (for the
     infinite loop of the logistic sampler: within U).
   * CKS Algorithm 2 (``_dlap_attempt``): with Bern(exp(-u/t)) and Bern(exp(-1)) given the
     consistent rational stand-ins rho**u and rho**t, the probability of accepting with
     output z is *exactly* proportional to rho**(den |z|) for every |z| whose paths all
     finish within the depth bound; that is the discrete Laplace law for any rho,
     including rho = exp(-1/t).

   What is proved: the control flow of the algorithms, given exact primitives, produces
   exactly the claimed probabilities; the primitives themselves are exact by (1), by the
   Lemire method with an exact 128-bit product (checked below against Python integers),
   and by the threshold construction of the Bern(1/k) chain (checked below).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from privad.noise import _engine

K = _engine.kernels()


# ---------------------------------------------------------------------------------------
# 1. Words: binary expansion and the bernoulli(p) decision on crafted words
# ---------------------------------------------------------------------------------------

DYADIC_CASES = [
    0.3,
    0.5,
    1 / 3,
    math.exp(-1),
    1 - 2**-53,
    1e-21,
    1e-300,
    5e-324,  # smallest subnormal
    2.2250738585072014e-308,  # smallest normal
    3.5e-310,  # subnormal
]


@pytest.mark.parametrize("p", DYADIC_CASES)
def test_dyadic_words_are_the_exact_binary_expansion(p: float) -> None:
    words = [int(K.dyadic_word(p, i)) for i in range(20)]  # 1280 bits cover every double
    assert sum(Fraction(w, 2 ** (64 * (i + 1))) for i, w in enumerate(words)) == Fraction(p)
    assert all(0 <= w < 2**64 for w in words)


def _store(words: list[int]) -> np.ndarray:
    store = np.zeros(K.HEADER + len(words), dtype=np.int64)
    store[K.HEADER :] = np.array(words, dtype=np.uint64).view(np.int64)
    store[0] = K.HEADER
    return store


def _bern_on_words(p: float, words: list[int]) -> tuple[bool | None, int]:
    """Run the compiled bernoulli kernel on these words: (output or None, words read)."""
    store = _store(words)
    out = np.zeros(1, dtype=np.bool_)
    done, resume = K.bern_float_kernel(store, out, 0, np.array([p]))
    if done == 0:  # ran out of words mid-sample: the kernel asks for a replay
        assert resume == K.HEADER
        return None, len(words)
    return bool(out[0]), int(store[0]) - K.HEADER


@pytest.mark.parametrize("p", DYADIC_CASES)
def test_bernoulli_decides_on_the_first_differing_word(p: float) -> None:
    pw = [int(K.dyadic_word(p, i)) for i in range(20)]
    first = next(i for i, w in enumerate(pw) if w)  # first non-zero word of p
    last = max(i for i, w in enumerate(pw) if w)  # last non-zero word of p
    for depth in sorted({0, first, last, last + 1}):
        equal, w = pw[:depth], pw[depth]
        if w > 0:  # a smaller word at the first difference: U < p
            assert _bern_on_words(p, equal + [w - 1, 0]) == (True, depth + 1)
        if w < 2**64 - 1:  # a larger word at the first difference: U > p
            assert _bern_on_words(p, equal + [w + 1, 0]) == (False, depth + 1)
    # equal words keep reading; running out of words asks for a replay (no decision)
    assert _bern_on_words(p, pw[: last + 1]) == (None, last + 1)
    # U's words equal to all of p's and then zeros: U = p is not < p, undecided forever;
    # any later non-zero word decides U > p
    assert _bern_on_words(p, pw[: last + 1] + [0, 0, 1]) == (False, last + 4)


def test_bernoulli_endpoints_read_no_words() -> None:
    assert _bern_on_words(0.0, [0]) == (False, 0)
    assert _bern_on_words(1.0, [2**64 - 1]) == (True, 0)


def test_mul128_matches_python_integers() -> None:
    rs = np.random.default_rng(0)  # test data only
    vals = [0, 1, 2, 3, 2**32 - 1, 2**32, 2**63, 2**64 - 1, 479001600, 2**53 + 1]
    vals += [int(v) for v in rs.integers(0, 2**63, 200, dtype=np.uint64)]
    vals += [int(v) | (1 << 63) for v in rs.integers(0, 2**63, 200, dtype=np.uint64)]
    for a in vals:
        for b in vals[:40]:
            hi, lo = K.mul128(np.uint64(a), np.uint64(b))
            assert (int(hi), int(lo)) == divmod(a * b, 2**64)


def test_chain_thresholds_have_factorial_probabilities() -> None:
    """{R < 12!/k!} for R uniform in [0, 12!) has probability exactly 1/k!: the chain
    Bern(1/2), ..., Bern(1/k) of CKS Algorithm 1 drawn from one uniform."""
    n = K._FACT12
    assert n == math.factorial(12) and n < 2**32
    assert int(K._FACT12_REJECT) == (2**32 - n) % n  # Lemire's rejection threshold
    for k in range(13):
        assert Fraction(int(K._FACT_T[k]), n) == Fraction(1, math.factorial(k))


# ---------------------------------------------------------------------------------------
# 2. Oracle enumeration of the algorithm code
# ---------------------------------------------------------------------------------------


class _NeedBranch(Exception):
    def __init__(self, outcomes: list[tuple[Any, Fraction]]) -> None:
        self.outcomes = outcomes


class _Oracle:
    """Replays a script of outcome indices; raises _NeedBranch past its end."""

    def __init__(self, script: tuple[int, ...]) -> None:
        self.script = script
        self.pos = 0
        self.prob = Fraction(1)

    def draw(self, outcomes: list[tuple[Any, Fraction]]) -> Any:
        outcomes = [(v, p) for v, p in outcomes if p > 0]
        if len(outcomes) == 1:
            return outcomes[0][0]
        if self.pos == len(self.script):
            raise _NeedBranch(outcomes)
        value, p = outcomes[self.script[self.pos]]
        self.pos += 1
        self.prob *= p
        return value

    def bern(self, p: Fraction) -> bool:
        return bool(self.draw([(True, p), (False, 1 - p)]))


def _enumerate(
    run: Callable[[_Oracle], Any], max_depth: int
) -> tuple[dict[Any, Fraction], Fraction]:
    """Exact output distribution of ``run`` over all paths of <= max_depth random draws;
    returns (probability of each output, unfinished mass)."""
    dist: dict[Any, Fraction] = defaultdict(Fraction)
    unfinished = Fraction(0)
    stack: list[tuple[int, ...]] = [()]
    while stack:
        script = stack.pop()
        oracle = _Oracle(script)
        try:
            result = run(oracle)
        except _NeedBranch as need:
            if len(script) >= max_depth:
                unfinished += oracle.prob
            else:
                stack.extend(script + (i,) for i in range(len(need.outcomes)))
            continue
        dist[result] += oracle.prob
    assert sum(dist.values()) + unfinished == 1
    return dict(dist), unfinished


def _exp_neg(x: Fraction, terms: int = 80) -> tuple[Fraction, Fraction]:
    """An interval [lo, hi] containing exp(-x) for 0 <= x <= 2 (alternating series)."""
    total = Fraction(0)
    term = Fraction(1)
    for j in range(terms):
        total += term
        term = -term * x / (j + 1)
    err = abs(term)
    return total - err, total + err


_WS = np.zeros(K.HEADER, dtype=np.int64)  # a word store whose flag is never raised


def _uniform_oracle(oracle: _Oracle, n: int) -> int:
    """uniform{0..n-1}: every value for small n; for n = 12! the chain uniform R, whose
    only uses are comparisons with the thresholds 12!/k!, so its equivalence classes
    are the intervals between thresholds (represented by their lower ends)."""
    if n == K._FACT12:
        cuts = sorted({int(t) for t in K._FACT_T} | {0, n})
        pairs = zip(cuts[:-1], cuts[1:], strict=True)
        return oracle.draw([(lo, Fraction(hi - lo, n)) for lo, hi in pairs])
    assert n <= 64, "enumerate only small uniforms"
    return oracle.draw([(j, Fraction(1, n)) for j in range(n)])


@pytest.fixture
def python_kernels(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Patch kernel helpers: named ones by oracles, the rest by their Python source."""
    state: dict[str, _Oracle] = {}

    def install(**oracles: Callable[..., Any]) -> None:
        for name in (
            "_bern_exp_frac",
            "_bern_exp1",
            "_bern_exp",
            "_bern_exp_times",
            "_bern_logistic",
            "_bern_exp_ratio",
            "_dlap_attempt",
            "_chain_passes",
            "_cks_alg1",
            "_bern_ratio",
        ):
            helper = getattr(K, name)
            monkeypatch.setattr(K, name, getattr(helper, "py_func", helper))
        defaults: dict[str, Callable[..., Any]] = {
            "_uniform_below": lambda n, ws: _uniform_oracle(state["o"], int(n)),
            "_uniform_fact12": lambda ws: _uniform_oracle(state["o"], K._FACT12),
            "_bern_inv": lambda k, ws: state["o"].bern(Fraction(1, int(k))),
            "_next_bit": lambda ws: state["o"].bern(Fraction(1, 2)),
            "_bern_float": lambda x, ws: state["o"].bern(Fraction(x)),
        }
        for name, fn in {**defaults, **oracles}.items():
            monkeypatch.setattr(K, name, fn)

    install.state = state  # type: ignore[attr-defined]
    return install


def _runner(install: Any, body: Callable[[], Any]) -> Callable[[_Oracle], Any]:
    def run(oracle: _Oracle) -> Any:
        install.state["o"] = oracle
        return body()

    return run


@pytest.mark.parametrize("gamma", [0.0, 0.25, 0.5, 0.3, 1 / 3, math.log(2), 0.999, 1.0])
def test_cks_algorithm1_is_exp_minus_gamma(python_kernels: Any, gamma: float) -> None:
    python_kernels()
    dist, unfinished = _enumerate(
        _runner(python_kernels, lambda: K._bern_exp_frac(gamma, _WS)), max_depth=40
    )
    lo, hi = _exp_neg(Fraction(gamma))
    p_true = dist.get(True, Fraction(0))
    assert unfinished < Fraction(1, 10**15)
    assert lo - unfinished <= p_true <= hi
    assert 1 - hi - unfinished <= dist.get(False, Fraction(0)) <= 1 - lo


def test_bern_exp1_is_exp_minus_one(python_kernels: Any) -> None:
    python_kernels()
    dist, unfinished = _enumerate(_runner(python_kernels, lambda: K._bern_exp1(_WS)), 30)
    lo, hi = _exp_neg(Fraction(1))
    assert unfinished < Fraction(1, 10**15)
    assert lo - unfinished <= dist[True] <= hi


@pytest.mark.parametrize(("u", "t"), [(0, 1), (0, 5), (1, 5), (3, 5), (4, 5), (6, 7), (1, 2)])
def test_bern_exp_ratio_is_exp_minus_u_over_t(python_kernels: Any, u: int, t: int) -> None:
    """CKS Algorithm 1 with Bern(u/t) as an exact oracle (``_bern_ratio`` itself is checked
    on crafted words by ``test_bern_ratio_is_exact_and_reads_half_a_word``)."""
    python_kernels(_bern_ratio=lambda params, ws: python_kernels.state["o"].bern(Fraction(u, t)))
    dist, unfinished = _enumerate(
        _runner(python_kernels, lambda: K._bern_exp_ratio(u, t, _WS)), max_depth=40
    )
    lo, hi = _exp_neg(Fraction(u, t))
    assert unfinished < Fraction(1, 10**12)
    assert lo - unfinished <= dist.get(True, Fraction(0)) <= hi


def _twin_store(words: list[int]) -> np.ndarray:
    store = _store(words)
    store[K._SIZE] = store.shape[0]
    return store


@pytest.mark.parametrize(
    ("u", "t"),
    [(0, 1), (1, 5), (3, 5), (4, 5), (6, 7), (1, 3), (2**32, 2**32 + 1), (1, 5 * 2**38)]
    + [(123456789012, 5 * 2**38), (5 * 2**38 - 1, 5 * 2**38), (2**62, 2**63 - 1)],
)
def test_bern_ratio_is_exact_and_reads_half_a_word(u: int, t: int) -> None:
    """Bern(u/t) from a 32-bit uniform x: True for x < c = floor(2**32 u / t), False for
    x > c, and for x = c the exact Bern(rem/t) = [uniform{0..t-1} < rem] with
    rem = 2**32 u - c t, so P[True] = c / 2**32 + rem / (t 2**32) = u/t exactly. Run on
    crafted words with the kernels' source (the Python kernels, which draw what the
    compiled ones draw: tests/noise/test_noise_engines.py)."""
    twin = _engine.python_kernels()
    c, rem = divmod(u << 32, t)
    assert c < 2**32 and Fraction(c, 2**32) + Fraction(rem, t * 2**32) == Fraction(u, t)
    uu = np.uint64(u)
    params = (np.uint64(t), uu >> np.uint64(32), uu << np.uint64(32))

    def run(words: list[int]) -> tuple[bool, int]:
        store = _twin_store(words)
        with np.errstate(over="ignore"):
            out = twin._bern_ratio(params, store)
        return bool(out), int(store[0]) - K.HEADER

    for x in {0, c - 1, c + 1, 2**32 - 1} - {-1, c, 2**32}:
        high = 0xDEADBEEF  # the other half of the word stays for the next half-word read
        assert run([x | high << 32, 7]) == (x < c, 1), x
    # x == c: the answer is [uniform{0..t-1} < rem], read from the same words onwards
    rs = np.random.default_rng(u % 1000)  # test data only
    for _ in range(20):
        words = [c | int(rs.integers(0, 2**32)) << 32] + [int(w) for w in rs.integers(0, 2**63, 3)]
        twin_store = _twin_store(words)
        with np.errstate(over="ignore"):
            twin._next32(twin_store)
            expected = bool(twin._uniform_below(np.int64(t), twin_store) < rem)
        assert run(words) == (expected, int(twin_store[0]) - K.HEADER)


@pytest.mark.parametrize("gamma", [1.5, 2.0, 3.25, 7.0 + 2**-40, 70.5])
def test_bern_exp_composes_floor_and_fraction_exactly(python_kernels: Any, gamma: float) -> None:
    """P[True] = A * B**floor(gamma) where A, B are the probabilities of the sub-samplers
    (stand-ins 2/3 for Bern(exp(-frac)) and 1/3 for Bern(exp(-1))), with frac exact."""
    seen: list[float] = []
    a_prob, b_prob = Fraction(2, 3), Fraction(1, 3)

    def frac_oracle(g: float, ws: Any) -> bool:
        seen.append(g)
        return python_kernels.state["o"].bern(a_prob)

    python_kernels(
        _bern_exp_frac=frac_oracle,
        _bern_exp1=lambda ws: python_kernels.state["o"].bern(b_prob),
    )
    dist, unfinished = _enumerate(_runner(python_kernels, lambda: K._bern_exp(gamma, _WS)), 100)
    assert unfinished == 0
    whole = math.floor(gamma)
    assert dist[True] == a_prob * b_prob**whole
    assert set(seen) == {gamma - whole} and Fraction(gamma - whole) == Fraction(gamma) - whole


@pytest.mark.parametrize(
    ("a", "gamma"),
    [(0, 0.7), (1, 0.7), (3, 0.7), (12, 0.1), (2**40 + 5, 1e-12), (2**62 + 1, 3.0), (255, 1e308)],
)
def test_bern_exp_times_factors_sum_exactly_to_a_gamma(
    python_kernels: Any, a: int, gamma: float
) -> None:
    """The exponents of the Bern(exp(-g)) factors add up to a * gamma exactly (as
    rationals; a factor that overflows to +inf only occurs where a * gamma > 2**1023),
    there is one factor per set bit of a, and the first failure stops the product."""
    seen: list[float] = []

    def always(g: float, ws: Any) -> bool:
        seen.append(g)
        return True

    python_kernels(_bern_exp=always)
    assert K._bern_exp_times(a, gamma, _WS) is True
    assert len(seen) == bin(a).count("1")
    finite = [g for g in seen if math.isfinite(g)]
    if len(finite) == len(seen):
        assert sum(Fraction(g) for g in seen) == a * Fraction(gamma)
    else:
        assert a * Fraction(gamma) > 2**1023
    seen.clear()
    python_kernels(_bern_exp=lambda g, ws: seen.append(g) or False)
    assert K._bern_exp_times(a, gamma, _WS) is (a == 0)
    assert len(seen) == (1 if a else 0)


def test_bern_exp_times_small_a_is_exactly_r_to_the_a(python_kernels: Any) -> None:
    r = Fraction(5, 7)
    gamma = 0.3

    def exp_oracle(g: float, ws: Any) -> bool:
        ratio = Fraction(g) / Fraction(gamma)
        assert ratio.denominator == 1
        return python_kernels.state["o"].bern(r**ratio.numerator)

    python_kernels(_bern_exp=exp_oracle)
    for a in range(0, 20):
        dist, unfinished = _enumerate(
            _runner(python_kernels, lambda a=a: K._bern_exp_times(a, gamma, _WS)), 64
        )
        assert unfinished == 0
        assert dist.get(True, Fraction(0)) == r**a


@pytest.mark.parametrize("x", [0.0, 0.5, 2.0, -2.0, -0.75, 30.0])
def test_bern_logistic_is_one_over_one_plus_exp(python_kernels: Any, x: float) -> None:
    """With Bern(exp(-|x|)) replaced by Bern(q) (q a rational stand-in), P[True] tends
    to q / (1 + q) = 1 / (1 + 1/q) for x >= 0 and 1 / (1 + q) for x < 0, within U."""
    q = Fraction(2, 7) if x != 0 else Fraction(1)
    args: list[float] = []

    def exp_oracle(g: float, ws: Any) -> bool:
        args.append(g)
        return python_kernels.state["o"].bern(q)

    python_kernels(_bern_exp=exp_oracle)
    dist, unfinished = _enumerate(
        _runner(python_kernels, lambda: K._bern_logistic(x, _WS)), max_depth=80
    )
    expected = q / (1 + q) if x >= 0 else 1 / (1 + q)
    assert unfinished < Fraction(1, 10**12)
    assert abs(dist.get(True, Fraction(0)) - expected) <= unfinished
    assert set(args) <= {abs(x)}


def _consts(num: int, den: int) -> tuple[int, int, int]:
    shift, vmax = K._dlap_consts(num, den)
    assert vmax == (K.INT64_MAX - (num - 1)) // num
    assert (shift == -1) if den & (den - 1) else (1 << shift == den)
    return int(shift), int(vmax), K.INT64_MAX


@pytest.mark.parametrize(("num", "den"), [(3, 2), (1, 1), (1, 3), (5, 1), (4, 3), (2, 5), (7, 4)])
def test_cks_algorithm2_is_discrete_laplace(python_kernels: Any, num: int, den: int) -> None:
    """One pass of Algorithm 2 accepts with output z with probability exactly
    c * rho**(den |z|) (rho: any stand-in for exp(-1/num)), for all small |z|."""
    rho = Fraction(4, 5)

    python_kernels(
        _bern_exp_ratio=lambda u, t, ws: python_kernels.state["o"].bern(rho ** int(u)),
        _bern_exp1=lambda ws: python_kernels.state["o"].bern(rho**num),
    )
    depth = 60
    dist, unfinished = _enumerate(
        _runner(python_kernels, lambda: K._dlap_attempt(num, den, *_consts(num, den), _WS)), depth
    )
    accepted = {int(z): p for (ok, z), p in dist.items() if ok}
    base = accepted[0]
    # a path to output z has V <= (|z| + 1) * den / num and V + 4 draws: all paths to
    # |z| <= z_max finish within the depth bound
    z_max = (depth - 6) * num // den - 1
    for z in range(-z_max, z_max + 1):
        assert accepted[z] == base * rho ** (den * abs(z)), z
    # rejections: D = 0, or B = 1 and Y = 0; the acceptance mass is positive
    assert sum(accepted.values()) > 0 and unfinished < 1


def test_attempt_rejects_negative_zero(python_kernels: Any) -> None:
    """B = 1 with Y = 0 is rejected (else 0 would get double weight)."""
    python_kernels(
        _bern_exp_ratio=lambda u, t, ws: True,
        _bern_exp1=lambda ws: False,
        _uniform_below=lambda n, ws: 0,
        _next_bit=lambda ws: True,
    )
    assert K._dlap_attempt(3, 2, *_consts(3, 2), _WS) == (False, 0)
