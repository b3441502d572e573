"""Numba kernels behind :mod:`privad.noise` (private; imported on first use only).

Randomness source: a replayable word stream
-------------------------------------------
Every kernel reads uniform 64-bit words from one int64 array ``ws`` (the "word store"):
``ws[:HEADER]`` is the source's small state, ``ws[HEADER:]`` are raw words that the Python
driver (:mod:`privad.noise._engine`) draws in bulk with ``integers(0, 2**64, uint64)``
(about 2 ns a word for PCG64DXSM, versus ~20 ns for a Generator call from compiled code).
The header holds: the read position, the *exhausted* flag, a 32-bit half-word cache, a
single-bit cache and the store's size. The helpers receive the store as a raw pointer
(``_data_ptr``), never as an array: Numba reference-counts array arguments on every call,
an atomic operation that made each word read cost 20-100 ns.

**A sample is never discarded, and never restarted on different words.** A kernel
remembers where each sample starts (read position and caches). If the words run out in
the middle of a sample, the word source returns a dummy word and raises the exhausted
flag; every loop checks the flag and unwinds; the partial sample is dropped *without being
stored*, the caches are restored, and the kernel returns the sample's start position. The
driver then keeps the unread words from that position, appends a fresh block, and calls
the kernel again, which *replays* the same words and continues with the new ones. Each
sample is therefore a deterministic function of the word stream read strictly in order:
exactly what an infinite buffer would give, so the output for a seed does not depend on
the block size. (Restarting a sample on fresh words, or discarding it, would bias the
output toward samples that use few words: a real privacy bug. Drawing the missing words
from the Generator inside compiled code would also be correct, but passing a Generator
through Numba code costs ~25 ns per word read.)

**Generated words.** For NumPy's ``PCG64DXSM`` (``ws[GENERATE] = 1``) the kernels compute the
same words from the generator's state copied into the header (:func:`_pcg64dxsm_next`); the
driver writes the state back. Nothing to store or replay: ~20 % faster Laplace at 10**7.

The bits of a word are split into a 32-bit-half stream and a single-bit stream; each
consumer takes fresh bits that nothing else has read, so this only re-arranges one stream
of independent uniform bits.

Algorithms
----------
* Exact ``Bern(p)`` for a float ``p``: a float is a dyadic rational ``m / 2**q``; a uniform
  ``U`` in [0, 1) is generated lazily 64 bits at a time and compared with the binary
  expansion of ``p``; the first differing word decides ``U < p``.
* Uniform integers in ``[0, n)``: Lemire's multiply-and-reject method (D. Lemire, "Fast
  random integer generation in an interval", ACM TOMACS 2019), exact.
* ``Bern(u/t)`` for integers ``u < t``: a 32-bit uniform compared with ``2**32 u / t`` by an
  exact 128-bit comparison; only on a tie (probability 2**-32) a uniform in ``[0, t)``
  decides. Half a word, where ``[uniform{0..t-1} < u]`` costs a whole word for t > 2**32.
* ``Bern(exp(-gamma))``: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
  Differential Privacy", NeurIPS 2020 (CKS 2020), Algorithm 1.
* Discrete Laplace: CKS 2020, Algorithm 2.

This source also runs as plain Python, loaded a second time under another name (see
``PYTHON_TWIN`` below and :func:`privad.noise._engine.python_kernels`): small draws then
need no compilation. The Python functions behind each ``njit`` dispatcher
(``kernel.py_func``) look up the helpers they call as module globals, so the tests run
the same algorithm code with exact rational "oracles" in place of the random primitives
and compute the exact output distribution (see ``tests/noise/test_noise_exactness.py``).
"""

from __future__ import annotations

import math

import numpy as np

# Imported as itself, this module is compiled by Numba. Loaded a second time under another
# name (``PYTHON_TWIN``, by privad.noise._engine.python_kernels), the same source runs as
# plain Python: ``njit`` is then the identity and the three intrinsics are NumPy-scalar
# functions with the same results, so every kernel runs the same algorithm code on the same
# words with the same (wrapping 64-bit) arithmetic, with nothing to compile.
if __name__ == "privad.noise._kernels":
    from privad.noise._intrinsics import _data_ptr, _float_bits, _mul128, njit
else:

    def njit(**options):  # noqa: ANN003, ANN201
        """The identity decorator (the kernels as plain Python functions)."""
        return lambda fn: fn

    def _data_ptr(arr):  # noqa: ANN001, ANN201
        """The array itself: indexing it reads and writes the same words."""
        return arr

    def _mul128(a, b):  # noqa: ANN001, ANN201
        """(high, low) 64-bit halves of the exact product of uint64 ``a`` and ``b``."""
        product = int(a) * int(b)
        return np.uint64(product >> 64), np.uint64(product & 0xFFFFFFFFFFFFFFFF)

    def _float_bits(x):  # noqa: ANN001, ANN201
        """The IEEE 754 bit pattern of a float64, as int64."""
        return np.float64(x).view(np.int64)


_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_EXHAUSTED = np.uint64(0xFFFFFFFFFFFFFFFF)
_TWO32 = 4294967296
_TWO52 = 4503599627370496.0
INT64_MAX = 9223372036854775807
# bernoulli_exp(gamma) for gamma >= 2**62 runs 2**62 Bern(exp(-1)) trials instead of
# floor(gamma) (and skips the fractional part): a run only gets that far with
# probability exp(-2**62) and would take more than a century, so the cut is
# unobservable; P[True] is then exp(-2**62) instead of exp(-gamma), both < 10**-(10**18).
_MAX_TRIALS = 4611686018427387904
_MAX_TRIALS_F = 4611686018427387904.0

# 12! and the thresholds 12!/k! (index k = 0..12) for drawing the chain
# Bern(1/2), Bern(1/3), ..., Bern(1/k) of CKS Algorithm 1 from one uniform R in [0, 12!):
# the events {R < 12!/k!} are nested and have exact probabilities 1/k!, so
# "Bern(1/k) succeeds given Bern(1/2..1/(k-1)) did" is {R < 12!/k!} (probability 1/k
# given {R < 12!/(k-1)!}). 12! < 2**32, so R costs half a word.
_FACT12 = 479001600
_FACT_T = np.array([_FACT12 // math.factorial(k) for k in range(13)], dtype=np.int64)
_FACT12_REJECT = np.uint64((2**32 - _FACT12) % _FACT12)

# The header of the word store ``ws``.
_POS = 0  # index in ws of the next unread word
_FLAG = 1  # 1 once a read found no word left (the sample in progress is replayed later)
_HAS_HALF = 2  # 1 if ws[_HALF] holds an unused 32-bit half word
_HALF = 3
_NBITS = 4  # number of unused bits left in ws[_BITS]
_BITS = 5
_SIZE = 6  # number of entries of ws (header included)
# The generating source (see "Randomness source" above): ws[GENERATE] = 1 makes the kernels
# compute PCG64DXSM's words from the 128-bit state and increment held in the header.
GENERATE = 7
STATE = 8  # ws[8], ws[9]: the state's high and low words; ws[10], ws[11]: the increment's
HEADER = 12
# NumPy's PCG64DXSM: the 64-bit "cheap multiplier" of its LCG step and of its DXSM output.
_PCG_CHEAP_MULTIPLIER = np.uint64(0xDA942042E4DD58B5)
_S48 = np.uint64(48)

_JIT = {"cache": True, "nogil": True}
# Helpers: separately compiled functions, which LLVM may or may not inline into the kernels
# (inlining all of them at Numba's IR level made the first compilation take ~20 s).
_INLINE = _JIT
# The discrete Laplace path (every released real goes through it) is inlined at the IR
# level: LLVM kept _uniform_below and _dlap_attempt as calls, and inlining this path made
# the kernel about 20 % faster (benchmarks/bench_laplace.py).
_HOT = {"inline": "always", **_JIT}


# ---------------------------------------------------------------------------------------
# The word source
# ---------------------------------------------------------------------------------------


@njit(**_INLINE)
def _pcg64dxsm_next(ws):
    """The next word of NumPy's ``PCG64DXSM`` (its ``pcg_cm_random_r``) from the state in
    ``ws[STATE:STATE + 4]``: the DXSM output of the state, then state = state * M + inc
    mod 2**128 (M the cheap multiplier). Tested against ``random_raw``, word for word."""
    hi = np.uint64(ws[STATE])
    lo = np.uint64(ws[STATE + 1])
    word = hi ^ (hi >> _S32)
    word = word * _PCG_CHEAP_MULTIPLIER
    word = (word ^ (word >> _S48)) * (lo | _ONE)
    mh, ml = _mul128(lo, _PCG_CHEAP_MULTIPLIER)
    low = ml + np.uint64(ws[STATE + 3])
    carry = _ONE if low < ml else _ZERO
    ws[STATE] = np.int64(mh + hi * _PCG_CHEAP_MULTIPLIER + np.uint64(ws[STATE + 2]) + carry)
    ws[STATE + 1] = np.int64(low)
    return word


@njit(**_INLINE)
def _next64(ws):
    """The next uniform 64-bit word: generated (``ws[GENERATE]``), else read from the
    store; a dummy word and the exhausted flag if none is left there."""
    if ws[GENERATE] != 0:
        return _pcg64dxsm_next(ws)
    p = ws[_POS]
    if p < ws[_SIZE]:
        ws[_POS] = p + 1
        return np.uint64(ws[p])
    ws[_FLAG] = 1
    return _EXHAUSTED


@njit(**_INLINE)
def _next32(ws):
    """A uniform integer in [0, 2**32) as uint64 (half of a word; the other half is kept)."""
    if ws[_HAS_HALF] != 0:
        ws[_HAS_HALF] = 0
        return np.uint64(ws[_HALF])
    w = _next64(ws)
    ws[_HALF] = np.int64(w >> _S32)
    ws[_HAS_HALF] = 1
    return w & _M32


@njit(**_INLINE)
def _next_bit(ws):
    """One uniform bit, as a bool (Bern(1/2))."""
    if ws[_NBITS] == 0:
        ws[_BITS] = np.int64(_next64(ws))
        ws[_NBITS] = 64
    ws[_NBITS] -= 1
    w = np.uint64(ws[_BITS])
    ws[_BITS] = np.int64(w >> _ONE)
    return (w & _ONE) != _ZERO


@njit(**_JIT)
def mul128(a, b):
    """Non-inlined entry point to :func:`_mul128` (for tests)."""
    return _mul128(a, b)


@njit(**_HOT)
def _uniform_below(n, ws):
    """A uniform integer in ``[0, n)`` for int64 ``n >= 1`` (Lemire's method, exact)."""
    un = np.uint64(n)
    if n <= _TWO32:
        x = _next32(ws)
        m = x * un
        low = m & _M32
        if low < un:
            t = (np.uint64(_TWO32) - un) % un
            while low < t and ws[_FLAG] == 0:
                x = _next32(ws)
                m = x * un
                low = m & _M32
        return np.int64(m >> _S32)
    x = _next64(ws)
    hi, lo = _mul128(x, un)
    if lo < un:
        t = (_ZERO - un) % un
        while lo < t and ws[_FLAG] == 0:
            x = _next64(ws)
            hi, lo = _mul128(x, un)
    return np.int64(hi)


@njit(**_HOT)
def _uniform_fact12(ws):
    """A uniform integer in [0, 12!) (Lemire's method with the rejection threshold
    (2**32 - 12!) mod 12! precomputed)."""
    un = np.uint64(_FACT12)
    x = _next32(ws)
    m = x * un
    while (m & _M32) < _FACT12_REJECT and ws[_FLAG] == 0:
        x = _next32(ws)
        m = x * un
    return np.int64(m >> _S32)


@njit(**_INLINE)
def _bern_inv(k, ws):
    """Exactly Bern(1/k) for an integer k >= 1."""
    if k == 1:
        return True
    if k == 2:
        return _next_bit(ws)
    return _uniform_below(k, ws) == 0


@njit(**_INLINE)
def _chain_passes(k, r, ws):
    """Bern(1/k) of the chain Bern(1/2), Bern(1/3), ... of CKS Algorithm 1, given that
    Bern(1/2), ..., Bern(1/(k-1)) passed; ``r`` is the chain's uniform in [0, 12!)."""
    if k <= 12:
        return r < _FACT_T[k]
    return _bern_inv(k, ws)


# ---------------------------------------------------------------------------------------
# Exact Bern(p) for a float p (a dyadic rational)
# ---------------------------------------------------------------------------------------


@njit(**_INLINE)
def _float_parts(x):
    """``(m, q)`` with ``x == m / 2**q`` exactly and ``m < 2**53``, for a float 0 < x < 1.

    Read from the bit pattern: biased exponent E and 52-bit fraction F give
    x = (2**52 + F) * 2**(E - 1075) for E > 0 and x = F * 2**-1074 (subnormal) for E = 0.
    """
    bits = _float_bits(x)
    e = (bits >> 52) & 0x7FF
    frac = np.uint64(bits & 0xFFFFFFFFFFFFF)
    if e == 0:
        return frac, np.int64(1074)
    return frac | np.uint64(0x10000000000000), np.int64(1075 - e)


@njit(**_INLINE)
def _dyadic_word(m, q, i):
    """Word ``i`` (bits ``64 i + 1 .. 64 i + 64`` after the binary point) of ``m / 2**q``."""
    s = np.int64(64) * (i + 1) - q
    if s >= 64 or s <= -64:
        return _ZERO
    if s >= 0:
        return m << np.uint64(s)
    return m >> np.uint64(-s)


@njit(**_JIT)
def dyadic_word(x, i):
    """Word ``i`` of the binary expansion of the float ``x`` in (0, 1) (for tests)."""
    m, q = _float_parts(x)
    return _dyadic_word(m, q, np.int64(i))


@njit(**_INLINE)
def _bern_float(x, ws):
    """Exactly Bern(x) for a float x in [0, 1], read as the dyadic rational it is.

    Draws uniform words ``w_0, w_1, ...`` (the binary expansion of U uniform in [0, 1))
    and compares them with the words ``x_0, x_1, ...`` of ``x``'s binary expansion; the
    first word that differs decides ``U < x``:
    P[True] = sum_i 2**(-64 i) * x_i / 2**64 = x.
    """
    if x <= 0.0:
        return False
    if x >= 1.0:
        return True
    m, q = _float_parts(x)
    i = np.int64(0)
    while True:
        pw = _dyadic_word(m, q, i)
        w = _next64(ws)
        if w != pw or ws[_FLAG] != 0:
            return w < pw
        i += 1


# ---------------------------------------------------------------------------------------
# Bern(exp(-gamma)): Canonne, Kamath, Steinke 2020, Algorithm 1
# ---------------------------------------------------------------------------------------


@njit(inline="always", **_JIT)
def _cks_alg1(bern_gamma, params, ws):
    """CKS 2020 Algorithm 1 for gamma in [0, 1], given an exact Bern(gamma) sampler:
    exactly Bern(exp(-gamma)).

    K = 1; while Bern(gamma / K): K += 1; return K odd. Bern(gamma / K) is sampled as
    Bern(1/K) (the chain of ``_chain_passes``, drawn from one uniform in [0, 12!)) and
    Bern(gamma) = ``bern_gamma(params, ws)``, both exact. P[K > k] = gamma**k / k!, so
    P[K odd] = sum_j (-gamma)**j / j! = exp(-gamma).

    Inlined at the Numba IR level, so each caller gets its own copy with ``bern_gamma``
    called directly.
    """
    k = np.int64(1)
    r = np.int64(0)
    while ws[_FLAG] == 0:
        if k > 1 and not _chain_passes(k, r, ws):
            break
        if not bern_gamma(params, ws):
            break
        k += 1
        if k == 2:
            r = _uniform_fact12(ws)
    return (k & 1) == 1


@njit(**_INLINE)
def _bern_exp_frac(gamma, ws):
    """Exactly Bern(exp(-gamma)) for a float gamma in [0, 1] (CKS 2020 Algorithm 1), with
    Bern(gamma) drawn by ``_bern_float``."""
    return _cks_alg1(_bern_float, gamma, ws)


@njit(**_HOT)
def _bern_exp1(ws):
    """Exactly Bern(exp(-1)): CKS 2020 Algorithm 1 with gamma = 1.

    With gamma = 1 every Bern(gamma) succeeds, so the algorithm draws Bern(1/2),
    Bern(1/3), ... until the first failure, at K, and returns [K odd]; P[K > k] = 1/k!.
    We draw the chain up to k = 12 at once (see ``_chain_passes``):
    K = 2 + #{k in 2..12 : R < 12!/k!} for R uniform in [0, 12!); if R = 0 (K > 12,
    probability 1/12!) the chain continues one Bern(1/k) at a time.
    """
    r = _uniform_fact12(ws)
    k = np.int64(2)
    for j in range(11):
        k += r < _FACT_T[j + 2]
    if r == 0:
        k = np.int64(13)
        while ws[_FLAG] == 0 and _bern_inv(k, ws):
            k += 1
    return (k & 1) == 1


@njit(**_INLINE)
def _bern_exp(gamma, ws):
    """Exactly Bern(exp(-gamma)) for a float gamma >= 0 (+inf allowed).

    gamma <= 1: the first branch of CKS 2020 Algorithm 1. gamma > 1: its second branch,
    floor(gamma) Bern(exp(-1)) trials stopping at the first failure, and
    Bern(exp(-(gamma - floor gamma))) (drawn first here: the order of independent factors
    does not matter). ``gamma - floor(gamma)`` is exact in floating point. For
    gamma >= 2**62 only 2**62 trials are run (and no fractional part): see ``_MAX_TRIALS``.
    """
    if gamma <= 1.0:
        return _bern_exp_frac(gamma, ws)
    if gamma >= _MAX_TRIALS_F:
        n = _MAX_TRIALS
    else:
        whole = math.floor(gamma)
        if not _bern_exp_frac(gamma - whole, ws):
            return False
        n = np.int64(whole)
    for _ in range(n):
        if ws[_FLAG] != 0 or not _bern_exp1(ws):
            return False
    return True


@njit(**_INLINE)
def _bern_exp_times(a, gamma, ws):
    """Exactly Bern(exp(-a gamma)) for an integer a >= 0, without forming a * gamma.

    exp(-a gamma) = prod over the set bits j of a of exp(-(2**j gamma)); 2**j gamma is
    computed by doubling, which is exact in floating point (or overflows to +inf, which
    ``_bern_exp`` treats as >= 2**62). One Bern(exp(-(2**j gamma))) per set bit, stopping
    at the first failure.
    """
    g = gamma
    while a > 0:
        if (a & 1) != 0:
            if ws[_FLAG] != 0 or not _bern_exp(g, ws):
                return False
        a >>= 1
        g = g * 2.0
    return True


@njit(**_INLINE)
def _bern_logistic(x, ws):
    """Exactly Bern(1 / (1 + exp(x))) for a finite float x.

    For x >= 0: repeat { A ~ Bern(1/2); A = 0 -> 0; Bern(exp(-x)) -> 1 }, so
    P[1] = (e^-x / 2) / (1 - (1 - e^-x) / 2) = 1 / (1 + e^x). x < 0 by symmetry.
    """
    ax = abs(x)
    out = False
    while ws[_FLAG] == 0:
        if not _next_bit(ws):
            out = False
            break
        if _bern_exp(ax, ws):
            out = True
            break
    return out if x >= 0.0 else not out


# ---------------------------------------------------------------------------------------
# Discrete Laplace: Canonne, Kamath, Steinke 2020, Algorithm 2
# ---------------------------------------------------------------------------------------


@njit(inline="always", **_JIT)
def _bern_ratio(params, ws):
    """Exactly Bern(u/t) for integers 0 <= u < t < 2**63 from half a word (almost always).

    ``params = (t, uh, ul)``: t as uint64 and the 128-bit number 2**32 u as its high and
    low words. A uniform U in [0, 1) is U = (x + V) / 2**32 with x a uniform 32-bit
    integer and V uniform in [0, 1); with D = 2**32 u - x t (an integer), U < u/t iff
    V t < D. So D <= 0 gives False, D >= t gives True, and otherwise
    (x = floor(2**32 u / t), probability 2**-32) the answer is Bern(D/t) =
    [uniform{0..t-1} < D]: P[True] = floor(2**32 u / t) / 2**32 + (D/t) / 2**32 = u/t.
    (Drawing [uniform{0..t-1} < u] directly costs a whole word when t > 2**32, and the
    discrete Laplace of :func:`privad.noise.laplace` has t > 2**40.)
    """
    t, uh, ul = params
    x = _next32(ws)
    ph, pl = _mul128(x, t)  # x t
    if ph > uh or (ph == uh and pl >= ul):
        return False  # D <= 0
    borrow = _ONE if ul < pl else _ZERO
    dh = uh - ph - borrow
    dl = ul - pl  # D = dh 2**64 + dl > 0
    if dh != _ZERO or dl >= t:
        return True
    return _uniform_below(np.int64(t), ws) < np.int64(dl)


@njit(**_HOT)
def _bern_exp_ratio(u, t, ws):
    """Exactly Bern(exp(-u/t)) for integers 0 <= u < t < 2**63 (Algorithm 1 with
    gamma = u/t, with Bern(u/t) drawn by ``_bern_ratio``)."""
    uu = np.uint64(u)
    return _cks_alg1(_bern_ratio, (np.uint64(t), uu >> _S32, uu << _S32), ws)


@njit(**_HOT)
def _dlap_attempt(num, den, shift, vmax, limit, ws):
    """One pass of the loop of CKS 2020 Algorithm 2, scale ``num/den``: (accepted, z).

    U ~ uniform{0..num-1}; D ~ Bern(exp(-U/num)), reject if 0; V ~ number of successes
    of Bern(exp(-1)) before the first failure; X = U + num V; Y = floor(X / den);
    B ~ Bern(1/2), reject if B = 1 and Y = 0; return (1 - 2B) Y.

    ``shift``, ``vmax``: see ``_dlap_consts`` (they avoid two 64-bit divisions, ~40 cycles
    each, per sample).
    """
    u = _uniform_below(num, ws)
    if not _bern_exp_ratio(u, num, ws):
        return False, np.int64(0)
    v = np.int64(0)
    while ws[_FLAG] == 0 and _bern_exp1(ws):
        v += 1
    if ws[_FLAG] != 0:
        return False, np.int64(0)
    # x = u + num * v exactly in int64; overflow needs v > 2**63 / num - 1 successes,
    # probability < exp(-(2**63 / num - 1)), e.g. exp(-1023) for num <= 2**53.
    if v > vmax and v > (INT64_MAX - u) // num:
        raise OverflowError("discrete Laplace sample overflows int64")
    x = u + num * v
    y = x >> shift if shift >= 0 else x // den
    if y > limit:
        raise OverflowError("discrete Laplace sample exceeds the representable range")
    b = _next_bit(ws)
    if b and y == 0:
        return False, np.int64(0)
    return True, -y if b else y


@njit(**_INLINE)
def _dlap_consts(num, den):
    """``shift`` = log2(den) if den is a power of two, else -1; ``vmax``: the largest v
    with u + num v <= INT64_MAX for every u < num."""
    shift = np.int64(-1)
    if den & (den - 1) == 0:
        shift = np.int64(0)
        while (np.int64(1) << shift) != den:
            shift += 1
    return shift, (INT64_MAX - (num - 1)) // num


@njit(**_HOT)
def _dlap_one(num, den, shift, vmax, limit, ws):
    z = np.int64(0)
    while ws[_FLAG] == 0:
        ok, z = _dlap_attempt(num, den, shift, vmax, limit, ws)
        if ok:
            break
    return z


# ---------------------------------------------------------------------------------------
# Array kernels. Each fills out[start:] and returns (next index, resume position): the
# index in ws where the next sample must start reading (= ws.size when the words ran out
# between samples). The driver keeps ws[resume:], appends fresh words, and calls again
# until next index == out.size. A parameter array of length 1 applies to every sample.
# ---------------------------------------------------------------------------------------


@njit(inline="always", **_JIT)
def _fill(store, out, start, sample, params, put):
    """The loop shared by the array kernels: ``put(out, i, sample(i, params, ws))`` for
    i = start, start + 1, ... until ``out`` is full or the words run out.

    A sample interrupted by the exhausted flag is not stored: the header caches are
    restored to the sample's start and its start position is returned.

    ``sample`` and ``put`` are njit helpers passed as arguments. This loop and those helpers
    are inlined at the Numba IR level (``inline="always"``), so each kernel compiles its own
    specialised copy with direct calls: the same machine code as a hand-written loop (and
    the kernels stay cacheable; a dispatcher passed to a separately compiled function
    would not be).
    """
    ws = _data_ptr(store)
    ws[_SIZE] = store.shape[0]
    ws[_FLAG] = 0
    i = start
    while i < out.shape[0]:
        p0 = ws[_POS]
        if p0 >= ws[_SIZE] and ws[GENERATE] == 0:
            return i, p0
        h2, h3, h4, h5 = ws[2], ws[3], ws[4], ws[5]
        r = sample(i, params, ws)
        if ws[_FLAG] != 0:
            ws[1], ws[2], ws[3], ws[4], ws[5] = 0, h2, h3, h4, h5
            return i, p0
        put(out, i, r)
        i += 1
    return i, ws[_POS]


# The per-kernel pieces of ``_fill``: how a sample is stored, and how sample i is drawn.


@njit(inline="always", **_JIT)
def _set(out, i, r):
    out[i] = r


@njit(inline="always", **_JIT)
def _column(x):
    """A parameter array as ``(raw pointer, stride)``: stride 1 for a per-sample array, 0
    for a length-1 one (applies to every sample). A raw pointer, as for the word store: an
    array among the parameters would be reference-counted for every sample (~10 ns)."""
    return _data_ptr(x), (1 if x.shape[0] > 1 else 0)


@njit(inline="always", **_JIT)
def _get(column, i):
    """Sample i's entry of a ``_column``."""
    ptr, stride = column
    return ptr[i * stride]


@njit(inline="always", **_JIT)
def _dlap_at(i, params, ws):
    num, den, shift, vmax, limit = params
    return _dlap_one(num, den, shift, vmax, limit, ws)


@njit(inline="always", **_JIT)
def _rint(v):
    """``numpy.rint(v)`` (round half to even) for a finite float: below 2**52 in magnitude
    by adding and subtracting 2**52, which rounds exactly so (larger doubles are integers)."""
    a = abs(v)
    if a < _TWO52:
        return math.copysign((a + _TWO52) - _TWO52, v)
    return v


@njit(inline="always", **_JIT)
def _laplace_at(i, params, ws):
    """Value i snapped to the grid 2**k plus discrete Laplace noise, back in its units:
    ``ldexp(rint(ldexp(x[i], -k)) + z, k)``, with ``ldexp(v, e)`` computed as ``v * 2**e``
    (one correctly rounded operation, the same result; see ``laplace_kernel``)."""
    x, down1, down2, up, num, den, shift, vmax, limit = params
    z = _dlap_one(num, den, shift, vmax, limit, ws)
    return (_rint(_get(x, i) * down1 * down2) + np.float64(z)) * up


@njit(inline="always", **_JIT)
def _bern_float_at(i, p, ws):
    return _bern_float(_get(p, i), ws)


@njit(inline="always", **_JIT)
def _bern_exp_at(i, gamma, ws):
    return _bern_exp(_get(gamma, i), ws)


@njit(inline="always", **_JIT)
def _bern_exp_times_at(i, params, ws):
    a, gamma = params
    return _bern_exp_times(_get(a, i), _get(gamma, i), ws)


@njit(inline="always", **_JIT)
def _bern_logistic_at(i, x, ws):
    return _bern_logistic(_get(x, i), ws)


@njit(**_JIT)
def dlap_kernel(store, out, start, num, den, limit):
    """``out[i] = z_i``: discrete Laplace, scale num/den, |z| <= limit."""
    shift, vmax = _dlap_consts(num, den)
    return _fill(store, out, start, _dlap_at, (num, den, shift, vmax, limit), _set)


@njit(**_JIT)
def laplace_kernel(store, out, start, x, down1, down2, up, num, den, limit):
    """``out[i] = 2**k (rint(x[i] / 2**k) + z_i)``, z_i discrete Laplace of scale num/den
    with |z_i| <= limit: snapping, noise and scaling back in one pass over the values
    (three NumPy passes and a kernel pass cost about 10 ns a value more at 10**7).

    ``up = 2**k`` and ``down1 * down2 = 2**-k`` are powers of two (``down2 = 1`` unless
    2**-k exceeds the largest double, and then ``down1 = 2**1023`` scales up exactly or
    overflows), so ``v * up`` and ``x * down1 * down2`` round once, exactly as
    ``ldexp(v, k)`` and ``ldexp(x, -k)`` do (Numba's ``ldexp`` costs ~20 ns a call).
    """
    shift, vmax = _dlap_consts(num, den)
    params = (_column(x), down1, down2, up, num, den, shift, vmax, limit)
    return _fill(store, out, start, _laplace_at, params, _set)


@njit(**_JIT)
def bern_float_kernel(store, out, start, p):
    """``out[i] ~ Bern(p[i])`` exactly."""
    return _fill(store, out, start, _bern_float_at, _column(p), _set)


@njit(**_JIT)
def bern_exp_kernel(store, out, start, gamma):
    """``out[i] ~ Bern(exp(-gamma[i]))`` exactly."""
    return _fill(store, out, start, _bern_exp_at, _column(gamma), _set)


@njit(**_JIT)
def bern_exp_times_kernel(store, out, start, a, gamma):
    """``out[i] ~ Bern(exp(-a[i] gamma[i]))`` exactly, without forming the product."""
    return _fill(store, out, start, _bern_exp_times_at, (_column(a), _column(gamma)), _set)


@njit(**_JIT)
def bern_logistic_kernel(store, out, start, x):
    """``out[i] ~ Bern(1 / (1 + exp(x[i])))`` exactly."""
    return _fill(store, out, start, _bern_logistic_at, _column(x), _set)
