"""The RMP perturbation: public matrix T, participant matrices T_i, double logistic, Z_i = T_i Y_i.

Erfani, Law, Karunasekera, Leckie, Palaniswami, "Privacy-preserving collaborative anomaly
detection for participatory sensing" (PAKDD 2014), section 3.2.

Orientation. The paper writes a participant's data as X_i in R^{n x m_i}: *records are
columns*, n attributes by m_i records. The functions of this module keep the paper's
orientation (``X`` is n x m, ``Z`` is w x m). The roles and the estimator
(:mod:`privad.rmp.roles`, :mod:`privad.rmp.estimator`) take records as rows, like
scikit-learn, and transpose at this boundary.

All randomness (T and Δ_i) is drawn through :mod:`privad.noise`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from scipy import integrate, optimize

from privad.accounting import Guarantee
from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike, as_randomness
from privad.validation import check_array, check_finite_array, check_int, check_positive


def _integrated_squared_gap(beta: float) -> float:
    """∫_0^1 [1 − exp(−β x²) − x]² dx, the objective below eq. (2)."""
    value, _ = integrate.quad(lambda x: (1.0 - math.exp(-beta * x * x) - x) ** 2, 0.0, 1.0)
    return value


@functools.cache
def beta_star() -> float:
    """β* = argmin_β ∫_0^1 [1 − exp(−β x²) − x]² dx (section 3.2, below eq. 2), ≈ 2.8124.

    Computed, not hard-coded: bounded scalar minimisation (SciPy) of the integral evaluated
    by adaptive quadrature. The paper prints "≈ 2.81".

    Examples
    --------
    >>> from privad.rmp import beta_star
    >>> round(beta_star(), 4)
    2.8124
    """
    result = optimize.minimize_scalar(
        _integrated_squared_gap,
        bounds=(0.1, 20.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(result.x)


def _check_beta(beta: float | None) -> float:
    return beta_star() if beta is None else check_positive(beta, "beta")


def double_logistic(X: Any, beta: float | None = None) -> np.ndarray:
    """Eq. (2), element-wise: y = sgn(x) [1 − exp(−β x²)].

    Stage 1 of RMP. ``beta`` defaults to :func:`beta_star`. Any shape; finite values only.
    On [−1, 1] (the paper's normalised data) it approximates the identity and maps into
    (−1, 1).

    Examples
    --------
    >>> from privad.rmp import double_logistic
    >>> double_logistic([0.0, 0.5, -1.0]).round(4).tolist()
    [0.0, 0.505, -0.9399]
    """
    X = check_finite_array(X, "X")
    b = _check_beta(beta)
    return np.sign(X) * -np.expm1(-b * X * X)


def inverse_double_logistic(Y: Any, beta: float | None = None) -> np.ndarray:
    """The inverse of eq. (2): x = sgn(y) sqrt(−ln(1 − |y|) / β), for |y| < 1.

    Used by the attacks, which reconstruct Y and then map it back to the data space.
    Values with |y| >= 1 (outside the image of eq. 2) are clipped to just below 1.
    """
    Y = check_finite_array(Y, "Y")
    b = _check_beta(beta)
    a = np.minimum(np.abs(Y), np.nextafter(1.0, 0.0))
    return np.sign(Y) * np.sqrt(-np.log1p(-a) / b)


def check_alpha(alpha: Any) -> float:
    """α of eq. (1): a real number with 0 < α < 1."""
    a = check_positive(alpha, "alpha")
    if not a < 1.0:
        raise ParameterError(f"alpha must satisfy 0 < alpha < 1 (eq. 1 of the paper), got {a!r}")
    return a


def check_dimensions(w: Any, n: Any) -> tuple[int, int]:
    """w and n of T in R^{w x n}: integers with 1 <= w < n (RMP enforces w < n, section 3)."""
    n = check_int(n, "n", minimum=2)
    w = check_int(w, "w", minimum=1)
    if not w < n:
        raise ParameterError(
            f"w must be smaller than n (RMP projects to fewer dimensions than attributes, so "
            f"ICA cannot separate the data; section 5.2), got w={w}, n={n}"
        )
    return w, n


def public_matrix(w: int, n: int, rng: RandomnessLike = None) -> np.ndarray:
    """The public random matrix T in R^{w x n} with U(0, 1) elements, w < n (section 3.2).

    Examples
    --------
    >>> from privad.rmp import public_matrix
    >>> T = public_matrix(2, 3, rng=1)
    >>> T.shape, bool(((0 <= T) & (T <= 1)).all())
    ((2, 3), True)
    """
    w, n = check_dimensions(w, n)
    return np.asarray(as_randomness(rng).uniform(0.0, 1.0, size=(w, n)), dtype=np.float64)


def check_public_matrix(T: Any) -> np.ndarray:
    """A public matrix: finite, 2-D, w x n with w < n."""
    T = check_array(T, "T")
    check_dimensions(T.shape[0], T.shape[1])
    return T


def participant_matrix(T: Any, alpha: float, rng: RandomnessLike = None) -> np.ndarray:
    """Eq. (1): T_i = T + Δ_i, with every element of Δ_i drawn from U(−α, α), 0 < α < 1.

    Examples
    --------
    >>> from privad.rmp import participant_matrix, public_matrix
    >>> T = public_matrix(2, 3, rng=1)
    >>> T_i = participant_matrix(T, 0.3, rng=2)
    >>> bool((abs(T_i - T) < 0.3).all())
    True
    """
    T = check_public_matrix(T)
    a = check_alpha(alpha)
    delta = as_randomness(rng).uniform(-a, a, size=T.shape)
    return T + delta


def perturb(T_i: Any, Y: Any) -> np.ndarray:
    """Eq. (3): Z_i = T_i Y_i, with T_i (w x n) and Y_i (n x m, records as columns).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.rmp import double_logistic, participant_matrix, perturb, public_matrix
    >>> T_i = participant_matrix(public_matrix(2, 3, rng=1), 0.3, rng=2)
    >>> Y = double_logistic(np.full((3, 4), 0.5))  # n = 3 attributes, 4 records as columns
    >>> perturb(T_i, Y).shape  # w x m: only these leave the participant
    (2, 4)
    """
    T_i = check_public_matrix(T_i)
    Y = check_array(Y, "Y", min_rows=1)
    if Y.shape[0] != T_i.shape[1]:
        raise DataError(
            f"Y must have n = {T_i.shape[1]} rows (attributes; records are columns in eq. 3), "
            f"got shape {Y.shape}"
        )
    return T_i @ Y


def guarantee(alpha: float, w: int, n: int) -> Guarantee:
    """What RMP promises, as data: no ε; resistance to reconstruction (section 5).

    Recorded in the ledger with notion ``"rmp"`` (it spends no budget).

    Examples
    --------
    >>> from privad.rmp import guarantee
    >>> g = guarantee(0.3, 2, 3)
    >>> g.notion, g.epsilon
    ('rmp', None)
    """
    a = check_alpha(alpha)
    w, n = check_dimensions(w, n)
    miss = (2.0 - math.sqrt(2.0)) * a
    return Guarantee(
        notion="rmp",
        epsilon=None,
        neighbouring="none: RMP is not a differential-privacy mechanism",
        description=(
            f"RMP perturbation with alpha={a:g}, w={w} < n={n}: double logistic (eq. 2, "
            f"beta*={beta_star():.4f}) then a private matrix T_i = T + U(-alpha, alpha) "
            f"(eq. 1, 3). An attacker who knows T guesses each element of T_i wrong by at "
            f"least {miss:.4g} with probability 1/2 (Lemma 1); the paper argues that with "
            f"w < n ICA cannot separate the attributes (section 5.2). Measured attacks "
            f"(docs/rmp_privacy.md) recover much of the data at w = n - 1: this is not a "
            f"formal guarantee."
        ),
    )
