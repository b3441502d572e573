"""The attacks of the RMP paper's section 5 (privad.rmp.attacks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privad.errors import DataError, ParameterError, PrivadError
from privad.noise import as_randomness
from privad.rmp import double_logistic, participant_matrix, public_matrix
from privad.rmp.attacks import (
    GaussianPrior,
    centre_guess_probability,
    check_clip,
    gaussian_prior,
    ica_attack,
    known_io_attack,
    lemma1_check,
    lemma1_probability,
    lemma1_quantile,
    linear_filter_correlation,
    map_attack,
    match_components,
    matrix_error_variance,
    oracle_prior,
    reconstruct,
    reconstruction_error,
    sample_element_errors,
)

FALSE_ALARM = 1e-6

# -------------------------------------------------------------------------------------------
# Eq. (5) by hand
# -------------------------------------------------------------------------------------------

T2x3 = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
YBAR = np.array([1.0, 2.0, 3.0])
Z1 = np.array([[5.0], [6.0]])


def test_eq5_by_hand_identity_prior():
    # Σ_z = T T' = [[2, 1], [1, 2]], z − T ȳ = [1, 1], Σ_z⁻¹ [1, 1] = [1, 1]/3,
    # ŷ = ȳ + T' [1, 1]/3 = [4/3, 7/3, 11/3]
    y = map_attack(Z1, T2x3, YBAR, np.eye(3))
    np.testing.assert_allclose(y[:, 0], [4 / 3, 7 / 3, 11 / 3], rtol=0, atol=1e-12)


def test_eq5_by_hand_diagonal_prior():
    # Σ_y = diag(1, 1, 2): Σ_z = [[3, 2], [2, 3]], Σ_z⁻¹ [1, 1] = [1, 1]/5,
    # ŷ = ȳ + Σ_y T' [1, 1]/5 = [1, 2, 3] + [1, 1, 4]/5
    y = map_attack(Z1, T2x3, YBAR, np.diag([1.0, 1.0, 2.0]))
    np.testing.assert_allclose(y[:, 0], [1.2, 2.2, 3.8], rtol=0, atol=1e-12)


def test_eq5_with_matrix_noise_by_hand():
    # matrix_var v adds v (tr Σ_y + ‖ȳ‖²) I = 17 v I; v = 1/17: Σ_z = [[3, 1], [1, 3]],
    # Σ_z⁻¹ [1, 1] = [1, 1]/4, ŷ = [1, 2, 3] + [1, 1, 2]/4
    y = map_attack(Z1, T2x3, YBAR, np.eye(3), matrix_var=1 / 17)
    np.testing.assert_allclose(y[:, 0], [1.25, 2.25, 3.5], rtol=0, atol=1e-12)


def test_eq5_satisfies_the_constraint_and_handles_many_columns():
    rng = as_randomness(3)
    T = public_matrix(4, 6, rng=rng)
    Y = np.asarray(rng.uniform(0, 1, size=(6, 50)))
    prior = gaussian_prior(np.asarray(rng.uniform(0, 1, size=(6, 200))))
    Y_hat = map_attack(T @ Y, T, prior.mean, prior.cov)
    assert Y_hat.shape == (6, 50)
    np.testing.assert_allclose(T @ Y_hat, T @ Y, atol=1e-10)  # ŷ ∈ {y : z = T̃ y} (eq. 4)


def test_singular_prior_falls_back_to_least_squares():
    # a rank-1 prior makes Σ_z singular for w = 2: the pseudo-inverse solve still works
    cov = np.outer([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    y = map_attack(Z1, T2x3, YBAR, cov)
    assert np.isfinite(y).all()
    # the estimate moves only along the prior's direction (1, 1, 1)
    d = y[:, 0] - YBAR
    np.testing.assert_allclose(d, d[0] * np.ones(3), atol=1e-9)


def _gaussian(n: int, m: int, seed: int) -> np.ndarray:
    idx = np.arange(n)
    cov = 0.7 ** np.abs(np.subtract.outer(idx, idx))
    G = as_randomness(seed).multivariate_normal(np.zeros(n), cov, size=m)
    return np.clip(0.5 + 0.15 * G, 0.0, 1.0).T


@pytest.mark.parametrize("with_dl", [False, True])
def test_map_with_exact_matrix_beats_the_mean_guess(with_dl):
    n, w = 8, 7
    X, known = _gaussian(n, 500, 1), _gaussian(n, 500, 2)
    f = double_logistic if with_dl else (lambda a: a)
    rng = as_randomness(4)
    T = public_matrix(w, n, rng=rng)
    Tv = participant_matrix(T, 0.2, rng=rng)
    Z = Tv @ f(X)
    X_hat = reconstruct(Z, Tv, gaussian_prior(f(known)), double_logistic_applied=with_dl)
    err = reconstruction_error(X, X_hat)
    trivial = reconstruction_error(X, np.repeat(known.mean(axis=1)[:, None], 500, axis=1))
    assert err.rmse < 0.4 * trivial.rmse
    assert err.within_tolerance > trivial.within_tolerance + 0.3
    # the oracle prior (the victim's own statistics) is at least as good, here
    oracle = reconstruct(Z, Tv, oracle_prior(f(X)), double_logistic_applied=with_dl)
    assert reconstruction_error(X, oracle).rmse < 1.1 * err.rmse


def test_reconstruct_clips_to_the_data_range():
    rng = as_randomness(5)
    X = np.asarray(rng.uniform(0, 1, size=(4, 100)))
    T = np.asarray(rng.uniform(0, 1, size=(3, 4)))
    far_prior = GaussianPrior(np.full(4, 5.0), np.eye(4), 10, "sample")
    out = reconstruct(T @ X, T, far_prior, double_logistic_applied=False)
    assert out.min() >= 0.0 and out.max() <= 1.0
    raw = reconstruct(T @ X, T, far_prior, double_logistic_applied=False, clip=None)
    assert raw.max() > 1.0


def test_matrix_error_variances():
    assert matrix_error_variance(0.3, "public") == pytest.approx(0.03)
    assert matrix_error_variance(0.3, "colluder") == pytest.approx(0.06)
    assert matrix_error_variance(0.3, "exact") == 0.0
    # the sampled errors have those variances
    e = sample_element_errors(0.3, 200_000, guess="random", rng=6)
    assert e.var() == pytest.approx(0.06, rel=0.02)
    c = sample_element_errors(0.3, 200_000, guess="centre", rng=6)
    assert c.var() == pytest.approx(0.03, rel=0.02)


# -------------------------------------------------------------------------------------------
# Collusion and known input-output
# -------------------------------------------------------------------------------------------


def _low_rank(n: int, rank: int, m: int, seed: int) -> np.ndarray:
    """Data on a rank-dimensional subspace: eq. 5 with the exact matrix recovers it when
    rank <= w."""
    r = as_randomness(seed)
    A = np.asarray(r.uniform(-1, 1, size=(n, rank)))
    S = np.asarray(r.uniform(0, 1, size=(rank, m)))
    return A @ S


def test_collusion_common_matrix_recovers_exactly_rmp_error_grows_with_alpha():
    n, w = 6, 5
    Y = _low_rank(n, 4, 400, 7)
    prior = gaussian_prior(_low_rank(n, 4, 400, 7)[:, :300])  # same subspace, known records
    common = []
    rmp: dict[float, list[float]] = {0.05: [], 0.2: [], 0.6: []}
    for rep in range(5):
        rng = as_randomness(100 + rep)
        T = public_matrix(w, n, rng=rng)
        # prior schemes: everyone, the victim included, uses T; the colluder reveals it
        Xc = reconstruct(T @ Y, T, prior, double_logistic_applied=False, clip=None)
        common.append(reconstruction_error(Y, Xc).rmse)
        for alpha in rmp:
            Tv = participant_matrix(T, alpha, rng=rng)  # the victim's private matrix
            Tc = participant_matrix(T, alpha, rng=rng)  # the colluder's, revealed
            var = matrix_error_variance(alpha, "colluder")
            X_hat = reconstruct(
                Tv @ Y, Tc, prior, matrix_var=var, double_logistic_applied=False, clip=None
            )
            rmp[alpha].append(reconstruction_error(Y, X_hat).rmse)
    assert max(common) < 1e-8
    means = [float(np.mean(rmp[a])) for a in (0.05, 0.2, 0.6)]
    assert means[0] > 1e-3
    assert means[0] < means[1] < means[2]


def test_known_io_attack_recovers_the_matrix_with_n_known_records():
    n, w = 5, 4
    rng = as_randomness(8)
    T = public_matrix(w, n, rng=rng)
    Tv = participant_matrix(T, 0.3, rng=rng)
    Yk = np.asarray(rng.uniform(0, 1, size=(n, n + 3)))
    T_hat = known_io_attack(Yk, Tv @ Yk, T)
    np.testing.assert_allclose(T_hat, Tv, atol=1e-10)
    np.testing.assert_allclose(known_io_attack(Yk, Tv @ Yk), Tv, atol=1e-10)


def test_known_io_attack_with_fewer_records_fits_them_and_moves_minimally_from_T():
    n, w, k = 6, 5, 3
    rng = as_randomness(9)
    T = public_matrix(w, n, rng=rng)
    Tv = participant_matrix(T, 0.3, rng=rng)
    Yk = np.asarray(rng.uniform(0, 1, size=(n, k)))
    T_hat = known_io_attack(Yk, Tv @ Yk, T)
    np.testing.assert_allclose(T_hat @ Yk, Tv @ Yk, atol=1e-10)  # fits the known pairs
    # the correction lies in the span of the known records (minimum Frobenius norm)
    P = Yk @ np.linalg.pinv(Yk)
    np.testing.assert_allclose((T_hat - T) @ (np.eye(n) - P), 0.0, atol=1e-10)
    assert np.linalg.norm(T_hat - Tv) < np.linalg.norm(T - Tv)


# -------------------------------------------------------------------------------------------
# ICA (section 5.2)
# -------------------------------------------------------------------------------------------


def test_match_components_undoes_permutation_scale_and_sign():
    rng = as_randomness(10)
    X = np.asarray(rng.uniform(0, 1, size=(4, 500)))
    S = np.array([-3.0, 0.5, 2.0, -1.0])[:, None] * X[[2, 0, 3, 1]] + 7.0
    m = match_components(S, X)
    assert m.mean_abs_corr == pytest.approx(1.0)
    assert dict(zip(m.component.tolist(), m.attribute.tolist(), strict=True)) == {
        0: 2,
        1: 0,
        2: 3,
        3: 1,
    }


def _ica_case(n: int, w: int, seed: int) -> tuple[float, float]:
    rng = as_randomness(seed)
    X = np.asarray(rng.uniform(0, 1, size=(n, 2000)))  # independent, non-Gaussian
    T = np.asarray(rng.uniform(0, 1, size=(w, n)))
    Z = (T + np.asarray(rng.uniform(-0.1, 0.1, size=(w, n)))) @ double_logistic(X)
    res = ica_attack(Z, min(w, n), rng=rng)
    assert res.sources.shape == (min(w, n), 2000) and res.converged
    return match_components(res.sources, X).mean_abs_corr, float(
        linear_filter_correlation(Z, X).max()
    )


def test_ica_recovers_independent_sources_when_w_equals_n():
    corr, bound = _ica_case(6, 6, 11)
    assert corr > 0.95
    assert bound > 0.99  # with w = n every attribute is (almost) separable


def test_ica_does_not_recover_the_sources_when_w_is_small():
    corr, bound = _ica_case(6, 3, 12)  # w <= (n + 1)/2
    assert corr < 0.9
    assert bound < 0.95  # no linear filter of Z separates an attribute


def test_ica_is_deterministic_given_the_seed():
    rng = as_randomness(13)
    Z = np.asarray(rng.uniform(0, 1, size=(3, 300)))
    a = ica_attack(Z, rng=5).sources
    b = ica_attack(Z, rng=5).sources
    np.testing.assert_array_equal(a, b)


# -------------------------------------------------------------------------------------------
# Lemma 1
# -------------------------------------------------------------------------------------------


def test_lemma1_formula_values():
    assert lemma1_probability(0.3, 0.0) == 1.0
    assert lemma1_probability(0.3, 0.6) == 0.0
    assert lemma1_probability(0.3, 0.3) == pytest.approx(0.25)
    q = lemma1_quantile(0.3)
    assert q == pytest.approx((2 - math.sqrt(2)) * 0.3)
    assert lemma1_probability(0.3, q) == pytest.approx(0.5)
    assert centre_guess_probability(0.3, 0.15) == pytest.approx(0.5)
    assert centre_guess_probability(0.3, 0.45) == 0.0


CASES = [(0.01, 0.004), (0.1, 0.02), (0.2, 0.2), (0.4, 0.5), (0.6, 1.0)]


@pytest.mark.parametrize(("alpha", "d"), CASES)
def test_lemma1_holds_empirically(alpha, d):
    check = lemma1_check(
        alpha, d, samples=1_000_000, false_alarm=FALSE_ALARM, rng=int(1000 * alpha + 10 * d)
    )
    assert check.consistent, check
    assert check.expected == lemma1_probability(alpha, d)


@pytest.mark.parametrize(("alpha", "d"), CASES)
def test_lemma1_check_rejects_wrong_formulas(alpha, d):
    seed = int(1000 * alpha + 10 * d)
    single = lemma1_check(alpha, d, formula=centre_guess_probability, rng=seed)
    assert not single.consistent, single  # (α − d)/α: the law of one uniform, not of D
    other_alpha = lemma1_check(
        alpha, d, formula=lambda a, x: lemma1_probability(1.02 * a, x), rng=seed
    )
    assert not other_alpha.consistent, other_alpha


def test_the_papers_fifty_percent_claim():
    for alpha in (0.01, 0.2, 0.6):
        d = (2 - math.sqrt(2)) * alpha
        check = lemma1_check(alpha, d, formula=lambda a, x: 0.5, rng=77)
        assert check.consistent, check
        assert check.empirical == pytest.approx(0.5, abs=0.003)


def test_guessing_the_public_matrix_follows_the_single_uniform_law():
    check = lemma1_check(0.2, 0.1, formula=centre_guess_probability, guess="centre", rng=78)
    assert check.consistent, check
    assert not lemma1_check(0.2, 0.1, guess="centre", rng=78).consistent


# -------------------------------------------------------------------------------------------
# Bad input
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: map_attack(np.ones((3, 2)), T2x3, YBAR, np.eye(3)),  # Z has 3 rows, w = 2
        lambda: map_attack(Z1, T2x3, YBAR[:2], np.eye(3)),  # ȳ too short
        lambda: map_attack(Z1, T2x3, YBAR, np.eye(2)),  # Σ_y wrong shape
        lambda: map_attack(Z1, T2x3, YBAR, np.triu(np.ones((3, 3)))),  # not symmetric
        lambda: map_attack(Z1, T2x3, YBAR, np.eye(3), matrix_var=-1.0),
        lambda: map_attack(np.array([[np.nan], [1.0]]), T2x3, YBAR, np.eye(3)),
        lambda: gaussian_prior(np.ones((3, 1))),  # one record
        lambda: gaussian_prior(np.ones((3, 4)), ridge=-1.0),
        lambda: reconstruct(Z1, T2x3, (YBAR, np.eye(3))),  # not a prior
        lambda: reconstruct(Z1, T2x3, gaussian_prior(np.eye(3)), clip=(1.0, 0.0)),
        lambda: check_clip((0.0,)),
        lambda: reconstruction_error(np.ones((2, 3)), np.ones((3, 2))),
        lambda: reconstruction_error(np.ones((2, 3)), np.ones((2, 3)), tolerance=0.0),
        lambda: ica_attack(np.ones((2, 50)), 3),  # k > w
        lambda: ica_attack(np.ones((2, 50)), fun="tanh"),
        lambda: match_components(np.ones((2, 5)), np.ones((2, 6))),
        lambda: known_io_attack(np.ones((3, 4)), np.ones((2, 5))),
        lambda: known_io_attack(np.ones((3, 4)), np.ones((2, 4)), np.ones((3, 3))),
        lambda: matrix_error_variance(0.1, "nobody"),
        lambda: matrix_error_variance(0.0),
        lambda: lemma1_probability(0.1, 0.3),  # d > 2α
        lambda: lemma1_probability(0.1, -0.01),
        lambda: lemma1_probability(0.0, 0.0),
        lambda: lemma1_quantile(0.1, 1.5),
        lambda: lemma1_check(0.1, 0.1, samples=0),
        lambda: lemma1_check(0.1, 0.1, false_alarm=0.0),
        lambda: lemma1_check(0.1, 0.1, formula=lambda a, d: 2.0, samples=10),
        lambda: sample_element_errors(0.1, 10, guess="edge"),
    ],
)
def test_bad_input_raises_privad_errors(call):
    with pytest.raises(PrivadError) as info:
        call()
    assert isinstance(info.value, ParameterError | DataError)
    assert str(info.value)
