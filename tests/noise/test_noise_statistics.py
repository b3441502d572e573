"""Two-sided statistical tests of the samplers at alpha = 1e-6, with fixed seeds.

Every test checks both directions: the sample is consistent with the correct law
(p-value > 1e-6) *and* inconsistent with a law 10% off in each direction (p-value < 1e-6),
so too little noise and too much noise are both caught. Each test first asserts, by an
exact or conservative power computation, that its sample size decides both directions
with error probability at most ~1e-6 (so a pass is not luck, and a failure is a bug).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privad import noise

ALPHA = 1e-6


# ---------------------------------------------------------------------------------------
# Laplace: Kolmogorov-Smirnov
# ---------------------------------------------------------------------------------------


def _laplace_cdf_gap(ratio: float) -> float:
    """sup_x |F_b(x) - F_{ratio b}(x)| for Laplace CDFs (the KS distance)."""
    u = np.linspace(0.0, 20.0, 200_001)
    return float(np.max(np.abs(0.5 * np.exp(-u) - 0.5 * np.exp(-u / ratio))))


def test_ks_sample_size_decides_both_directions() -> None:
    """Power: by the DKW inequality, with n = 200,000 the empirical CDF is within
    eps_n = sqrt(ln(2/alpha) / (2n)) = 0.0060 of the true one except with probability
    alpha. The KS distance between Laplace(b) and Laplace(0.9 b) or Laplace(1.1 b) is
    >= 0.0175, so the statistic against a wrong scale is >= 0.0175 - 0.0060 > 0.0060
    (the alpha-level critical value): the wrong scale is rejected with probability
    >= 1 - alpha, and the right one accepted with probability >= 1 - alpha."""
    n = 200_000
    eps_n = math.sqrt(math.log(2 / ALPHA) / (2 * n))
    for ratio in (0.9, 1.1):
        assert _laplace_cdf_gap(ratio) - eps_n > eps_n


@pytest.mark.parametrize("scale", [2.5, 1e-3, 7e5])
def test_laplace_noise_has_the_right_scale(scale: float) -> None:
    n = 200_000
    rng = noise.Randomness(20240601)
    x = rng.uniform(-1e3, 1e3, n) * scale
    y = noise.laplace(x, scale, rng)
    z = y - x  # exact up to one rounding of |y| and the grid snap (<= scale * 2**-41)
    assert stats.kstest(z, "laplace", args=(0.0, scale)).pvalue > ALPHA
    assert stats.kstest(z, "laplace", args=(0.0, 0.9 * scale)).pvalue < ALPHA
    assert stats.kstest(z, "laplace", args=(0.0, 1.1 * scale)).pvalue < ALPHA


def test_laplace_mechanism_noise_matches_its_scale() -> None:
    mech = noise.LaplaceMechanism(sensitivity=2.0, epsilon=0.5, coordinates=200_000)
    z = mech.release(np.zeros(200_000), rng=7)
    assert stats.kstest(z, "laplace", args=(0.0, mech.scale)).pvalue > ALPHA
    assert stats.kstest(z, "laplace", args=(0.0, 4.0 * 0.9)).pvalue < ALPHA
    assert stats.kstest(z, "laplace", args=(0.0, 4.0 * 1.1)).pvalue < ALPHA


def test_laplace_agrees_with_opendp() -> None:
    """Two-sample KS against OpenDP's vector Laplace (2e4 draws each, ~0.3 s)."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    n, scale = 20_000, 3.0
    meas = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), scale=scale
    )
    theirs = np.asarray(meas([0.0] * n))
    ours = noise.laplace(np.zeros(n), scale, 11)
    assert stats.ks_2samp(ours, theirs).pvalue > ALPHA


# ---------------------------------------------------------------------------------------
# Discrete Laplace: chi-square against the exact pmf
# ---------------------------------------------------------------------------------------


def _dlap_bin_probs(rho: float, edges: np.ndarray) -> np.ndarray:
    """Exact probabilities of the bins [edges[i], edges[i+1]) for
    P[Z = z] = (1 - rho) / (1 + rho) * rho**|z|; the outer bins take the tails."""
    log_rho = math.log(rho)

    def cdf(z: np.ndarray) -> np.ndarray:  # P[Z <= z] for integer z
        z = np.asarray(z, dtype=float)
        neg = np.exp(np.abs(z) * log_rho) / (1 + rho)  # z < 0: rho**|z| / (1 + rho)
        pos = 1 - np.exp(np.maximum(z + 1, 0.0) * log_rho) / (1 + rho)  # 1 - rho**(z+1)/(1+rho)
        return np.where(z < 0, neg, pos)

    upper = cdf(edges[1:-1] - 1)
    probs = np.diff(np.concatenate([[0.0], upper, [1.0]]))
    return probs


def _bins(num: int, den: int, nbins: int = 40) -> np.ndarray:
    t = num / den
    qs = stats.laplace.ppf(np.linspace(0, 1, nbins + 1)[1:-1], scale=t)
    return np.unique(np.concatenate([[-(2**62)], np.round(qs).astype(np.int64), [2**62]]))


def _chi2_pvalue(counts: np.ndarray, probs: np.ndarray) -> float:
    n = counts.sum()
    expected = n * probs
    return float(stats.chi2.sf(np.sum((counts - expected) ** 2 / expected), len(probs) - 1))


DLAP_CASES = [(3, 2), (1, 3), (7, 1), (1, 1), (10**6 + 3, 1000), (2**45 + 12345, 2**12)]


@pytest.mark.parametrize(("num", "den"), DLAP_CASES)
def test_discrete_laplace_pmf(num: int, den: int) -> None:
    """Chi-square on ~40 near-equiprobable bins of the exact pmf, tails pooled into the
    outer bins (every bin expects thousands of draws). Power: for the 10%-wrong scales
    the noncentrality lambda gives P[chi2(df, lambda) <= critical] < alpha, asserted
    before sampling."""
    n = 1_000_000
    rho = math.exp(-den / num)
    edges = _bins(num, den)
    probs = _dlap_bin_probs(rho, edges)
    df = len(probs) - 1
    crit = stats.chi2.isf(ALPHA, df)
    wrong = [_dlap_bin_probs(math.exp(-den / (num * f)), edges) for f in (0.9, 1.1)]
    for q in wrong:
        lam = n * np.sum((probs - q) ** 2 / q)
        assert stats.ncx2.cdf(crit, df, lam) < ALPHA, "sample too small to decide"
    z = noise.discrete_laplace(num, den, n, noise.Randomness(num % 1000 + den))
    assert z.dtype == np.int64 and z.shape == (n,)
    counts = np.histogram(z, bins=edges.astype(float))[0]
    assert counts.sum() == n
    assert _chi2_pvalue(counts, probs) > ALPHA
    for q in wrong:
        assert _chi2_pvalue(counts, q) < ALPHA


def test_discrete_laplace_is_symmetric_and_small_scale_mostly_zero() -> None:
    z = noise.discrete_laplace(1, 20, 100_000, 3)  # P[Z != 0] = 2 rho / (1 + rho), rho = e^-20
    assert np.count_nonzero(z) <= 1
    z = noise.discrete_laplace(5, 1, 400_000, 4)
    pos, neg = np.count_nonzero(z > 0), np.count_nonzero(z < 0)
    assert stats.binomtest(pos, pos + neg, 0.5).pvalue > ALPHA


def test_discrete_laplace_with_tiny_word_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 2 words force a replay in the middle of most samples: the law is
    unchanged (and so are the samples themselves, see test_noise_randomness)."""
    from privad.noise import _engine

    monkeypatch.setattr(_engine, "BLOCK_WORDS", 2)
    num, den, n = 3, 2, 20_000
    rho = math.exp(-den / num)
    edges = _bins(num, den, 12)
    z = noise.discrete_laplace(num, den, n, 5)
    counts = np.histogram(z, bins=edges.astype(float))[0]
    assert _chi2_pvalue(counts, _dlap_bin_probs(rho, edges)) > ALPHA


# ---------------------------------------------------------------------------------------
# Bernoulli samplers: exact binomial (Clopper-Pearson) intervals at level 1 - 1e-6
# ---------------------------------------------------------------------------------------


def _cp_interval(k: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - ALPHA, method="exact")
    return ci.low, ci.high


def _decides(p: float, n: int) -> bool:
    """Power: for every count in the central 1 - 2e-7 range of Binomial(n, p), the
    interval excludes 0.9 p and 1.1 p (where <= 1). The interval ends are monotone in
    the count, so checking the two extreme counts suffices."""
    k_lo = int(stats.binom.ppf(1e-7, n, p))
    k_hi = int(stats.binom.isf(1e-7, n, p))
    ok_low = _cp_interval(k_lo, n)[0] > 0.9 * p
    ok_high = 1.1 * p > 1 or _cp_interval(k_hi, n)[1] < 1.1 * p
    return ok_low and ok_high


def _check_rate(k: int, n: int, p: float) -> None:
    lo, hi = _cp_interval(k, n)
    assert lo <= p <= hi, f"{k}/{n} inconsistent with p={p}"
    assert not lo <= 0.9 * p <= hi, f"{k}/{n} cannot tell p={p} from 0.9 p"
    if 1.1 * p <= 1:
        assert not lo <= 1.1 * p <= hi, f"{k}/{n} cannot tell p={p} from 1.1 p"


N_BERN = 200_000


def _run_cases(sample: np.ndarray, ps: list[float], n: int) -> None:
    counts = sample.reshape(len(ps), n).sum(axis=1)
    for k, p in zip(counts, ps, strict=True):
        assert _decides(p, n), f"n={n} too small to decide p={p} at alpha={ALPHA}"
        _check_rate(int(k), n, p)


def test_bernoulli_rates() -> None:
    ps = [0.5, 0.3, 1 / 3, math.exp(-1), 1 / (1 + math.exp(2)), 0.9, 0.1]
    sample = noise.bernoulli(np.repeat(ps, N_BERN), 101)
    assert sample.dtype == np.bool_
    _run_cases(sample, ps, N_BERN)


def test_bernoulli_exp_rates() -> None:
    gammas = [0.0, 0.25, 0.5, 1.0, 2.0, 2.5, 1.0 + 2**-30]
    sample = noise.bernoulli_exp(np.repeat(gammas, N_BERN), 102)
    _run_cases(sample, [math.exp(-g) for g in gammas], N_BERN)


def test_bernoulli_log_rates() -> None:
    log_ps = [math.log(0.3), -1.0, -2.0, math.log(0.75)]
    sample = noise.bernoulli_log(np.repeat(log_ps, N_BERN), 103)
    _run_cases(sample, [math.exp(v) for v in log_ps], N_BERN)


def test_bernoulli_exp_times_rates() -> None:
    cases = [(3, 0.7), (1, 0.5), (5, 0.2), (0, 5.0), (10**6, 1e-6), (2, 1.05)]
    a = np.repeat([c[0] for c in cases], N_BERN)
    g = np.repeat([c[1] for c in cases], N_BERN)
    sample = noise.bernoulli_exp_times(a, g, 104)
    _run_cases(sample, [math.exp(-ai * gi) for ai, gi in cases], N_BERN)


def test_bernoulli_logistic_rates() -> None:
    xs = [0.0, 2.0, -2.0, 1.0, -0.5]
    sample = noise.bernoulli_logistic(np.repeat(xs, N_BERN), 105)
    _run_cases(sample, [1 / (1 + math.exp(x)) for x in xs], N_BERN)


def test_randomized_response_flip_rates() -> None:
    rng = noise.Randomness(106)
    bits = rng.integers(0, 2, 4 * N_BERN)
    for j, p in enumerate([0.25, 0.1, 0.5, 1 / 3]):
        chunk = bits[j * N_BERN : (j + 1) * N_BERN]
        out = noise.randomized_response(chunk, p, rng)
        assert out.dtype == chunk.dtype and set(np.unique(out)) <= {0, 1}
        assert _decides(p, N_BERN)
        _check_rate(int(np.count_nonzero(out != chunk)), N_BERN, p)
    same = noise.randomized_response(bits.astype(bool), 0.0, rng)
    assert np.array_equal(same, bits.astype(bool))


def test_tiny_probabilities_never_hit_at_a_million() -> None:
    """p = exp(-30) ~ 9.4e-14 (and smaller): at n = 1e6, P[any hit] <= n p ~ 1e-7 < alpha,
    so zero hits is the right two-sided call; one hit would reject p at alpha."""
    n = 1_000_000
    for log_p in (-30.0, -700.0, -1e4, math.log(1e-21), math.log(1e-300)):
        assert n * math.exp(log_p) < ALPHA
    assert not noise.bernoulli_exp(30.0, 107, size=n).any()
    assert not noise.bernoulli_log(-700.0, 108, size=n).any()
    assert not noise.bernoulli_exp(1e4, 109, size=n).any()
    assert not noise.bernoulli(1e-21, 110, size=n).any()
    assert not noise.bernoulli_log(math.log(1e-300), 111, size=n).any()
    assert not noise.bernoulli_exp_times(10**9, 3e-8, 112, size=n).any()  # exp(-30)
    assert not noise.bernoulli_logistic(40.0, 113, size=n).any()
    assert noise.bernoulli_logistic(-40.0, 114, size=n).all()


def test_moderately_small_probability_is_detected() -> None:
    """p = exp(-5) ~ 6.7e-3 at n = 2e6: +-10% is decided."""
    n, g = 2_000_000, 5.0
    p = math.exp(-g)
    assert _decides(p, n)
    k = int(noise.bernoulli_exp(g, 115, size=n).sum())
    _check_rate(k, n, p)
