"""Attacks on RMP as functions: the privacy analysis of section 5, made measurable.

Erfani, Law, Karunasekera, Leckie, Palaniswami, "Privacy-preserving collaborative anomaly
detection for participatory sensing" (PAKDD 2014), section 5. The evaluation that runs these
attacks against α and w is :mod:`privad.experiments.rmp_privacy`; ``docs/rmp_privacy.md``
discusses what it finds.

Orientation: as in :mod:`privad.rmp.perturbation` and the paper, *records are columns*:
``X`` and ``Y`` are n x m (n attributes, m records), ``Z = T̃ Y`` is w x m, a matrix is w x n.

* **Bayesian estimation, T̃ known** (section 5.1, eq. 5): :func:`map_attack` is the MAP
  estimate of y under an n-variate Gaussian prior, ŷ = ȳ + Σ_y T̃' Σ_z⁻¹ (z − T̃ ȳ) with
  Σ_z = T̃ Σ_y T̃'. The prior comes from :func:`gaussian_prior` (a sample the attacker
  holds) or :func:`oracle_prior` (the victim's true statistics: the worst case).
  :func:`reconstruct` wraps it into what an attacker does end to end: prior in the space of
  Y, eq. (5), back through :func:`~privad.rmp.perturbation.inverse_double_logistic`, clip to
  the public data range.
* **Bayesian estimation, T̃ unknown** (section 5.1, eq. 6): the paper poses a joint,
  non-convex problem and does not solve it. Our reading offers two tractable attackers: plug
  a guess (the public T, or a colluder's T_c) into eq. (5), or, knowing α, treat the unknown
  difference T̃ − guess as i.i.d. zero-mean noise of variance :func:`matrix_error_variance`
  (``matrix_var`` of :func:`map_attack`: the linear MMSE estimate, which is the MAP estimate
  when that noise is approximated as Gaussian).
* **ICA** (section 5.2): :func:`ica_attack` (scikit-learn's FastICA),
  :func:`match_components` (Hungarian assignment on |correlation|) and
  :func:`linear_filter_correlation` (the best any linear filter of Z can do, an oracle bound).
* **Known input-output / collusion** (section 5, introduction; section 3.1, "Resilience to
  Collusion"): :func:`known_io_attack` estimates the victim's matrix from known pairs
  (least squares, corrected from the public T); the collusion scenarios of the evaluation
  feed :func:`reconstruct` the matrix a colluder reveals.
* **Lemma 1**: :func:`lemma1_probability`, :func:`lemma1_quantile`,
  :func:`centre_guess_probability` (the attacker who guesses T itself: our addition) and the
  empirical check :func:`lemma1_check` (two-sided exact binomial test).

All randomness (FastICA's initialisation, the Lemma-1 samples) goes through
:mod:`privad.noise`; scikit-learn's ``random_state`` gets :meth:`Randomness.derive_seed`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy import linalg, optimize, stats

from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike, as_randomness
from privad.rmp.perturbation import inverse_double_logistic
from privad.validation import (
    check_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = [
    "ComponentMatch",
    "GaussianPrior",
    "IcaResult",
    "Lemma1Check",
    "ReconstructionError",
    "binomial_p_value",
    "centre_guess_probability",
    "check_clip",
    "gaussian_prior",
    "ica_attack",
    "known_io_attack",
    "lemma1_check",
    "lemma1_probability",
    "lemma1_quantile",
    "linear_filter_correlation",
    "map_attack",
    "match_components",
    "matrix_error_variance",
    "oracle_prior",
    "reconstruct",
    "reconstruction_error",
    "sample_element_errors",
]


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def _matrix(M: Any, name: str) -> np.ndarray:
    return check_array(M, name, min_rows=1)


def _paired(A: Any, a_name: str, B: Any, b_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Two matrices over the same records (columns), validated."""
    P = _matrix(A, a_name)
    Q = _matrix(B, b_name)
    if P.shape[1] != Q.shape[1]:
        raise DataError(
            f"{a_name} and {b_name} must have the same number of records (columns), got "
            f"{P.shape[1]} and {Q.shape[1]}"
        )
    return P, Q


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a real number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return float(value)


def _check_product(Z: np.ndarray, T: np.ndarray, z_name: str = "Z", t_name: str = "T") -> None:
    if Z.shape[0] != T.shape[0]:
        raise DataError(
            f"{z_name} must have w = {T.shape[0]} rows (the rows of {t_name}, w x n; records "
            f"are columns as in eq. 3), got shape {Z.shape}"
        )


def check_clip(clip: Any) -> tuple[float, float] | None:
    """``None`` or a pair (low, high) of finite reals with low < high."""
    if clip is None:
        return None
    try:
        low, high = clip
    except (TypeError, ValueError):
        raise ParameterError(f"clip must be None or a pair (low, high), got {clip!r}") from None
    low_f, high_f = _real(low, "clip low"), _real(high, "clip high")
    if not low_f < high_f:
        raise ParameterError(f"clip must satisfy low < high, got {clip!r}")
    return low_f, high_f


# --------------------------------------------------------------------------------------------
# Bayesian estimation (section 5.1)
# --------------------------------------------------------------------------------------------


class GaussianPrior(NamedTuple):
    """The attacker's n-variate Gaussian prior on a column y of Y (section 5.1, eq. 5).

    Attributes
    ----------
    mean
        ȳ, shape (n,).
    cov
        Σ_y, shape (n, n), symmetric.
    records
        how many records it was estimated from.
    source
        ``"sample"`` (records the attacker holds) or ``"oracle"`` (the victim's own).
    """

    mean: np.ndarray
    cov: np.ndarray
    records: int
    source: str


def gaussian_prior(Y_sample: Any, *, ridge: float = 0.0, source: str = "sample") -> GaussianPrior:
    """ȳ and Σ_y from records the attacker holds (n x k, records as columns, k >= 2).

    Eq. (5) takes "the sample mean vector and sample covariance matrix of 𝒴" (section 5.1):
    population statistics the attacker has, for example from public data of the same kind or
    from its own (colluding) participant's records. Pass records already in the space of Y:
    apply :func:`~privad.rmp.double_logistic` first when the victim does (the function is
    public). ``ridge`` >= 0 is added to the diagonal of Σ_y (our option, default 0; eq. 5
    needs Σ_z invertible, which :func:`map_attack` handles without it).
    """
    Y = check_array(Y_sample, "Y_sample", min_rows=1)
    if Y.shape[1] < 2:
        raise DataError(
            f"Y_sample must hold at least 2 records (columns) to estimate a covariance, got "
            f"shape {Y.shape}"
        )
    r = check_nonnegative(ridge, "ridge")
    source = check_choice(source, "source", ("sample", "oracle"))
    mean = Y.mean(axis=1)
    cov = np.atleast_2d(np.cov(Y, ddof=1))
    if r > 0:
        cov = cov + r * np.eye(cov.shape[0])
    return GaussianPrior(mean=mean, cov=cov, records=int(Y.shape[1]), source=source)


def oracle_prior(Y_victim: Any, *, ridge: float = 0.0) -> GaussianPrior:
    """The worst case of section 5.1: the prior is the victim's *own* sample statistics.

    Same estimate as :func:`gaussian_prior`, from the very records under attack (n x m).
    """
    return gaussian_prior(Y_victim, ridge=ridge, source="oracle")


def matrix_error_variance(alpha: float, guess: str = "public") -> float:
    """Variance of one element of T̃ − guess for an attacker who knows α (eq. 1).

    ``guess="public"``: the attacker uses the public T, the error is Δ ~ U(−α, α), variance
    α²/3. ``guess="colluder"``: it uses a colluder's T_c = T + Δ_c, the error Δ − Δ_c is the
    D of Lemma 1 (triangular on [−2α, 2α]), variance 2α²/3. ``guess="exact"``: 0.
    """
    a = check_positive(alpha, "alpha")
    guess = check_choice(guess, "guess", ("exact", "public", "colluder"))
    return {"exact": 0.0, "public": a * a / 3.0, "colluder": 2.0 * a * a / 3.0}[guess]


def _prior_arrays(y_mean: Any, y_cov: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    mean = check_array(y_mean, "y_mean", ndim=1)
    cov = check_array(y_cov, "y_cov", min_rows=1)
    if mean.shape != (n,):
        raise DataError(f"y_mean must have n = {n} entries (the columns of T), got {mean.shape}")
    if cov.shape != (n, n):
        raise DataError(f"y_cov must be n x n = {n} x {n}, got shape {cov.shape}")
    scale = max(1.0, float(np.max(np.abs(cov))))
    if not np.allclose(cov, cov.T, rtol=0.0, atol=1e-10 * scale):
        raise DataError("y_cov must be symmetric (a covariance matrix Σ_y)")
    return mean, cov


def map_attack(
    Z: Any,
    T_tilde: Any,
    y_mean: Any,
    y_cov: Any,
    *,
    matrix_var: float = 0.0,
) -> np.ndarray:
    """Eq. (5): the MAP estimate Ŷ of Y from Z = T̃ Y under a Gaussian prior N(ȳ, Σ_y).

    ŷ = ȳ + Σ_y T̃' Σ_z⁻¹ (z − T̃ ȳ), Σ_z = T̃ Σ_y T̃' (section 5.1; Sang et al. 2012, Thm. 1),
    for every column z of ``Z`` (w x m) at once; ``T_tilde`` is w x n (any w; RMP has w < n).
    Σ_z⁻¹ is never formed: a Cholesky solve, or, where Σ_z is singular (a rank-deficient
    prior, or w > n), the minimum-norm least-squares solve (the pseudo-inverse).

    ``matrix_var`` >= 0 (our extension, default 0 = eq. 5 exactly): the attacker does not know
    T̃, uses ``T_tilde`` as a guess, and treats T̃ − guess as i.i.d. zero-mean elements of
    that variance (:func:`matrix_error_variance`). The error term Δy then has covariance
    matrix_var · E‖y‖² · I (with E‖y‖² = tr Σ_y + ‖ȳ‖²) and is uncorrelated with y, so the
    linear MMSE estimate is eq. (5) with Σ_z = T Σ_y T' + matrix_var · E‖y‖² · I.

    Returns Ŷ, n x m.
    """
    Z = _matrix(Z, "Z")
    T = _matrix(T_tilde, "T_tilde")
    _check_product(Z, T, "Z", "T_tilde")
    mean, cov = _prior_arrays(y_mean, y_cov, T.shape[1])
    v = check_nonnegative(matrix_var, "matrix_var")
    sz = T @ cov @ T.T
    if v > 0:
        sz = sz + v * (float(np.trace(cov)) + float(mean @ mean)) * np.eye(T.shape[0])
    sz = 0.5 * (sz + sz.T)
    resid = Z - (T @ mean)[:, None]
    try:
        factor = linalg.cho_factor(sz, lower=True, check_finite=False)
        solved = linalg.cho_solve(factor, resid, check_finite=False)
        # a numerically singular Σ_z can pass Cholesky with a tiny pivot: check the solve
        if not np.isfinite(solved).all() or np.linalg.cond(sz) > 1e12:
            raise linalg.LinAlgError("ill-conditioned")
    except linalg.LinAlgError:
        solved = linalg.lstsq(sz, resid, check_finite=False)[0]
    return mean[:, None] + cov @ T.T @ solved


def reconstruct(
    Z: Any,
    T_guess: Any,
    prior: GaussianPrior,
    *,
    matrix_var: float = 0.0,
    double_logistic_applied: bool = True,
    beta: float | None = None,
    clip: tuple[float, float] | None = (0.0, 1.0),
) -> np.ndarray:
    """The attacker end to end: eq. (5) in the space of Y, then back to the data space.

    ``prior`` must be in the space of Y (estimated from records passed through
    :func:`~privad.rmp.double_logistic` when ``double_logistic_applied``). With
    ``double_logistic_applied`` the estimate is mapped back with
    :func:`~privad.rmp.perturbation.inverse_double_logistic` (β default β*). ``clip``
    (default (0, 1): the paper normalises every attribute to [0, 1], section 6, so the range
    is public; our reading) clips the reconstruction to the data range; ``None`` keeps it as is.

    Returns X̂, n x m.
    """
    if not isinstance(prior, GaussianPrior):
        raise ParameterError(
            f"prior must be a GaussianPrior (from gaussian_prior or oracle_prior), got "
            f"{type(prior).__name__}"
        )
    bounds = check_clip(clip)
    Y_hat = map_attack(Z, T_guess, prior.mean, prior.cov, matrix_var=matrix_var)
    X_hat = inverse_double_logistic(Y_hat, beta) if double_logistic_applied else Y_hat
    if bounds is not None:
        X_hat = np.clip(X_hat, *bounds)
    return X_hat


@dataclass(frozen=True)
class ReconstructionError:
    """How close a reconstruction X̂ is to the truth X (both n x m, same data space).

    Attributes
    ----------
    rmse
        root mean squared error over all attribute values.
    mae
        mean absolute error.
    within_tolerance
        share of attribute values with |x̂ − x| <= tolerance.
    tolerance
        the tolerance used.
    """

    rmse: float
    mae: float
    within_tolerance: float
    tolerance: float


def reconstruction_error(
    X_true: Any, X_hat: Any, *, tolerance: float = 0.05
) -> ReconstructionError:
    """RMSE, MAE and the share of values recovered within ``tolerance``.

    ``tolerance`` (default 0.05, i.e. 5 % of the [0, 1] range of a min-max-scaled attribute;
    our reading, the paper gives no measure) must be > 0.
    """
    X = _matrix(X_true, "X_true")
    H = _matrix(X_hat, "X_hat")
    if X.shape != H.shape:
        raise DataError(f"X_hat must have the shape of X_true {X.shape}, got {H.shape}")
    tol = check_positive(tolerance, "tolerance")
    err = H - X
    return ReconstructionError(
        rmse=float(np.sqrt(np.mean(err * err))),
        mae=float(np.mean(np.abs(err))),
        within_tolerance=float(np.mean(np.abs(err) <= tol)),
        tolerance=tol,
    )


# --------------------------------------------------------------------------------------------
# ICA (section 5.2)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IcaResult:
    """What :func:`ica_attack` recovers: sources up to permutation, scale and sign.

    Attributes
    ----------
    sources
        k x m estimated independent components (records as columns).
    mixing
        w x k estimated mixing matrix (Z ≈ mixing @ sources + mean).
    n_iter
        FastICA iterations.
    converged
        False when FastICA warned that it did not converge.
    """

    sources: np.ndarray
    mixing: np.ndarray
    n_iter: int
    converged: bool


def ica_attack(
    Z: Any,
    n_components: int | None = None,
    *,
    rng: RandomnessLike = None,
    fun: str = "logcosh",
    max_iter: int = 1000,
    tol: float = 1e-4,
) -> IcaResult:
    """Section 5.2: estimate T̃ and Y from Z = T̃ Y alone with FastICA (scikit-learn).

    ICA identifies the sources when (i) w >= n, (ii) the attributes are independent, (iii) at
    most one is Gaussian and (iv) T̃ has full column rank. With w < n (RMP) the problem is
    overcomplete: FastICA can return at most w components, each a mixture. ``n_components``
    (default w; at most w) is how many to extract: an attacker who knows n from the public T
    asks for min(w, n). Whitening ``"unit-variance"``; ``fun``, ``max_iter``, ``tol`` go to
    FastICA; its ``random_state`` is drawn from ``rng`` (:meth:`Randomness.derive_seed`).
    """
    from sklearn.decomposition import FastICA
    from sklearn.exceptions import ConvergenceWarning

    Z = _matrix(Z, "Z")
    w, m = Z.shape
    if m < 2:
        raise DataError(f"Z must hold at least 2 records (columns) for ICA, got shape {Z.shape}")
    k = w if n_components is None else check_int(n_components, "n_components", minimum=1)
    if k > w:
        raise ParameterError(
            f"n_components must be <= w = {w} (FastICA extracts at most as many components as "
            f"observed dimensions; overcomplete ICA is not implemented), got {k}"
        )
    if k > m:
        raise ParameterError(f"n_components must be <= the number of records {m}, got {k}")
    fun = check_choice(fun, "fun", ("logcosh", "exp", "cube"))
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    seed = as_randomness(rng).derive_seed()
    ica = FastICA(
        n_components=k,
        whiten="unit-variance",
        fun=fun,
        max_iter=max_iter,
        tol=tol,
        random_state=seed,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        S = ica.fit_transform(Z.T).T
    converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
    return IcaResult(
        sources=np.asarray(S, dtype=np.float64),
        mixing=np.asarray(ica.mixing_, dtype=np.float64),
        n_iter=int(ica.n_iter_),
        converged=converged,
    )


@dataclass(frozen=True)
class ComponentMatch:
    """A one-to-one matching of estimated components to true attributes.

    Attributes
    ----------
    component
        indices of matched components (rows of the estimate).
    attribute
        the attribute (row of the truth) each is matched to.
    abs_corr
        |Pearson correlation| of each matched pair.
    mean_abs_corr
        their mean (the figure of merit: 1 = recovered up to scale and sign).
    """

    component: np.ndarray
    attribute: np.ndarray
    abs_corr: np.ndarray
    mean_abs_corr: float


def _abs_corr(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """|corr(A_i, B_j)| for rows of A (k x m) and B (n x m); constant rows give 0."""
    a = A - A.mean(axis=1, keepdims=True)
    b = B - B.mean(axis=1, keepdims=True)
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.abs(a @ b.T) / np.outer(na, nb)
    return np.nan_to_num(np.minimum(c, 1.0), nan=0.0, posinf=0.0)


def match_components(S_hat: Any, X_true: Any) -> ComponentMatch:
    """Match estimated components (k x m) to true attributes (n x m) one to one.

    ICA recovers sources only up to permutation, scale and sign, so the matching is the
    Hungarian assignment (:func:`scipy.optimize.linear_sum_assignment`) maximising the sum of
    |correlation|; min(k, n) pairs.
    """
    S, X = _paired(S_hat, "S_hat", X_true, "X_true")
    if S.shape[1] < 2:
        raise DataError("at least 2 records (columns) are needed to correlate")
    C = _abs_corr(S, X)
    rows, cols = optimize.linear_sum_assignment(C, maximize=True)
    vals = C[rows, cols]
    return ComponentMatch(
        component=rows.astype(np.int64),
        attribute=cols.astype(np.int64),
        abs_corr=vals,
        mean_abs_corr=float(vals.mean()),
    )


def linear_filter_correlation(Z: Any, X_true: Any) -> np.ndarray:
    """For each attribute k, the largest |correlation| any linear filter b'z achieves with x_k.

    An oracle bound (it uses the truth): the multiple correlation of x_k on the rows of Z,
    the square root of R² of the least-squares regression of x_k on Z (with intercept). It is
    1 exactly when some filter separates attribute k (section 5.2, after Liu et al. 2006: with
    w <= (n + 1)/2 none does). Returns n values in [0, 1].
    """
    Z, X = _paired(Z, "Z", X_true, "X_true")
    zc = (Z - Z.mean(axis=1, keepdims=True)).T
    xc = (X - X.mean(axis=1, keepdims=True)).T
    coef = linalg.lstsq(zc, xc, check_finite=False)[0]
    fitted = zc @ coef
    ss = np.sum(xc * xc, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.sum(fitted * fitted, axis=0) / ss
    return np.sqrt(np.clip(np.nan_to_num(r2, nan=0.0), 0.0, 1.0))


# --------------------------------------------------------------------------------------------
# Known input-output attack (section 5)
# --------------------------------------------------------------------------------------------


def known_io_attack(Y_known: Any, Z_known: Any, T_public: Any | None = None) -> np.ndarray:
    """Estimate the victim's matrix T̃ from k known input-output pairs (section 5).

    The attacker holds k of the victim's records Y_known (n x k, in the space of Y: apply the
    public double logistic to known inputs) and their outputs Z_known = T̃ Y_known (w x k)
    and solves T̂ Y_known = Z_known by least squares. With k >= n linearly independent known
    records the system is determined and T̂ = T̃ exactly (the perturbation has no additive
    noise); with k < n it is underdetermined and T̂ is, of all matrices that fit, the one
    closest (Frobenius) to ``T_public`` (T̂ = T + (Z_k − T Y_k) Y_k⁺; the minimum-norm solution
    when ``T_public`` is None). Knowing T̃ still leaves the other records underdetermined when
    w < n: reconstruct them with :func:`map_attack`.

    Returns T̂, w x n.
    """
    Y = _matrix(Y_known, "Y_known")
    Zk = _matrix(Z_known, "Z_known")
    if Y.shape[1] != Zk.shape[1]:
        raise DataError(
            f"Y_known and Z_known must hold the same k records (columns), got {Y.shape[1]} and "
            f"{Zk.shape[1]}"
        )
    if T_public is None:
        base = np.zeros((Zk.shape[0], Y.shape[0]))
    else:
        base = _matrix(T_public, "T_public")
        if base.shape != (Zk.shape[0], Y.shape[0]):
            raise DataError(
                f"T_public must be w x n = {Zk.shape[0]} x {Y.shape[0]}, got {base.shape}"
            )
    resid = Zk - base @ Y
    # min-norm solution of C Y = resid for C (w x n): C' from Y' C' = resid'
    correction = linalg.lstsq(Y.T, resid.T, check_finite=False)[0].T
    return base + correction


# --------------------------------------------------------------------------------------------
# Lemma 1
# --------------------------------------------------------------------------------------------


def _check_alpha_d(alpha: Any, d: Any) -> tuple[float, float]:
    a = check_positive(alpha, "alpha")
    dd = check_nonnegative(d, "d")
    if dd > 2.0 * a:
        raise ParameterError(
            f"d must satisfy 0 <= d <= 2*alpha = {2.0 * a!r} (Lemma 1: |D| <= 2 alpha), "
            f"got d={dd!r}"
        )
    return a, dd


def lemma1_probability(alpha: float, d: float) -> float:
    """Lemma 1: Pr[|D| >= d] = (2α − d)² / (4α²) for D = A − B, A, B ~ U(−α, α), 0 <= d <= 2α.

    Section 5.1. D is the error of an attacker whose guess of an element of the victim's
    matrix T̃ = T + Δ is itself T + U(−α, α) (for example a colluder's own matrix).
    """
    a, dd = _check_alpha_d(alpha, d)
    return (2.0 * a - dd) ** 2 / (4.0 * a * a)


def lemma1_quantile(alpha: float, probability: float = 0.5) -> float:
    """The d with Pr[|D| >= d] = ``probability`` under Lemma 1: d = 2α(1 − √p).

    At p = 1/2 it is (2 − √2)α: "a 50 % chance of guessing [an element] wrong by at least
    (2 − √2)α" (section 5.1).
    """
    a = check_positive(alpha, "alpha")
    p = check_probability(probability, "probability")
    return 2.0 * a * (1.0 - math.sqrt(p))


def centre_guess_probability(alpha: float, d: float) -> float:
    """Pr[|Δ| >= d] = max(0, 1 − d/α) for Δ ~ U(−α, α), 0 <= d <= 2α (our addition).

    The error of an attacker who guesses the centre of the box, the public T itself, rather
    than a random point of it (Lemma 1). It is smaller in distribution: its median is α/2
    against (2 − √2)α ≈ 0.586α for Lemma 1, so the public T is the better guess.
    """
    a, dd = _check_alpha_d(alpha, d)
    return max(0.0, 1.0 - dd / a)


def sample_element_errors(
    alpha: float, size: int, *, guess: str = "random", rng: RandomnessLike = None
) -> np.ndarray:
    """``size`` draws of the attacker's error on one element of T̃ (through privad.noise).

    ``guess="random"``: D = A − B with A, B ~ U(−α, α) independent (Lemma 1's D; the
    attacker guesses T + B, e.g. a colluder's matrix). ``guess="centre"``: D = A (it guesses T).
    """
    a = check_positive(alpha, "alpha")
    size = check_int(size, "size", minimum=1)
    guess = check_choice(guess, "guess", ("random", "centre"))
    r = as_randomness(rng)
    A = np.asarray(r.uniform(-a, a, size=size), dtype=np.float64)
    if guess == "centre":
        return A
    return A - np.asarray(r.uniform(-a, a, size=size), dtype=np.float64)


@dataclass(frozen=True)
class Lemma1Check:
    """An empirical check of Pr[|D| >= d] against a formula (two-sided exact binomial test).

    Attributes
    ----------
    alpha, d
        the parameters.
    samples
        draws of D.
    count
        draws with |D| >= d.
    empirical
        count / samples.
    expected
        the formula's probability.
    p_value
        two-sided p-value of :func:`scipy.stats.binomtest`.
    false_alarm
        the test level.
    consistent
        p_value >= false_alarm (the data do not reject the formula).
    """

    alpha: float
    d: float
    samples: int
    count: int
    empirical: float
    expected: float
    p_value: float
    false_alarm: float
    consistent: bool


def binomial_p_value(count: int, samples: int, probability: float) -> float:
    """Two-sided exact binomial p-value; degenerate probabilities 0 and 1 give 1 or 0."""
    if probability <= 0.0:
        return 1.0 if count == 0 else 0.0
    if probability >= 1.0:
        return 1.0 if count == samples else 0.0
    return float(stats.binomtest(count, samples, probability, alternative="two-sided").pvalue)


def lemma1_check(
    alpha: float,
    d: float,
    *,
    samples: int = 1_000_000,
    false_alarm: float = 1e-6,
    formula: Callable[[float, float], float] = lemma1_probability,
    guess: str = "random",
    rng: RandomnessLike = None,
) -> Lemma1Check:
    """Sample |D| (:func:`sample_element_errors`) and test Pr[|D| >= d] = formula(α, d).

    Two-sided exact binomial test at level ``false_alarm`` (default 10⁻⁶, privad's rule for
    sampler tests). ``formula`` defaults to Lemma 1; pass a wrong one (for example
    :func:`centre_guess_probability`) to see the test reject it. ``guess`` picks the
    attacker whose error is sampled.
    """
    a, dd = _check_alpha_d(alpha, d)
    samples = check_int(samples, "samples", minimum=1)
    level = check_probability(false_alarm, "false_alarm", low_open=True, high_open=True)
    if not callable(formula):
        raise ParameterError(f"formula must be callable as formula(alpha, d), got {formula!r}")
    D = sample_element_errors(a, samples, guess=guess, rng=rng)
    count = int(np.count_nonzero(np.abs(D) >= dd))
    expected = float(formula(a, dd))
    if not 0.0 <= expected <= 1.0:
        raise ParameterError(f"formula must return a probability in [0, 1], got {expected!r}")
    p = binomial_p_value(count, samples, expected)
    return Lemma1Check(
        alpha=a,
        d=dd,
        samples=samples,
        count=count,
        empirical=count / samples,
        expected=expected,
        p_value=p,
        false_alarm=level,
        consistent=p >= level,
    )
