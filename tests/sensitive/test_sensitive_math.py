"""Unit tests of the closed forms against hand-computed values from the paper."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privad.errors import DataError, ParameterError, PrivadError
from privad.sensitive import InvalidMechanismError, compile_mechanism, is_anomaly, is_sensitive
from privad.sensitive.anomaly import anomaly_label, is_normal
from privad.sensitive.compiler import (
    InputMechanism,
    check_input_mechanism,
    compiled_error_probability,
    compiled_log_error_probability,
    validity_bound,
)
from privad.sensitive.constructions import (
    Construction1,
    error_probability,
    log_error_probability,
    theorem46_bound,
)
from privad.sensitive.mdd import compiler_delta, delta_g, lambda_k

counts = st.integers(min_value=0, max_value=400)


@st.composite
def state(draw, max_beta=60):
    beta = draw(st.integers(1, max_beta))
    b = draw(st.integers(0, 3 * max_beta))
    a = draw(st.integers(0, b))
    return a, b, beta


# ------------------------------------------------------------------------------------------
# Definition 2.2 and Definition 3.1
# ------------------------------------------------------------------------------------------


def test_anomaly_is_at_most_beta_records_in_the_ball():
    # Def. 2.2: "there are at most β records ... i.e. B_x(i, r) ≤ β" (closed inequality)
    assert is_anomaly(3, 3) is True
    assert is_anomaly(4, 3) is False
    assert is_anomaly(1, 1) is True
    # presence is part of the definition (x_i > 0)
    assert is_anomaly(2, 3, x_i=0) is False
    assert is_anomaly(2, 3, x_i=1) is True
    assert anomaly_label(0, 0, 3) == 0
    assert anomaly_label(1, 3, 3) == 1
    assert is_normal(1, 4, 3) is True
    assert is_normal(0, 9, 3) is False  # absent records are neither normal nor anomalous
    # an empty ball means the record is absent, hence not an anomaly
    np.testing.assert_array_equal(is_anomaly(np.arange(6), 3), [0, 1, 1, 1, 0, 0])


def test_sensitivity_threshold():
    # k-sensitive iff B ≥ β + 1 − k
    beta = 10
    assert is_sensitive(10, beta, 1) is True
    assert is_sensitive(9, beta, 1) is False
    assert is_sensitive(8, beta, 3) is True
    assert is_sensitive(7, beta, 3) is False
    assert is_sensitive(0, beta, beta + 1) is True  # k ≥ β + 1: everyone is sensitive


# ------------------------------------------------------------------------------------------
# Equations (2) and (3)
# ------------------------------------------------------------------------------------------


def test_delta_g_hand_values():
    beta = 3
    assert delta_g(0, 2, beta) == 1  # absent, B < β: add i
    assert delta_g(0, 3, beta) == 2  # absent, B ≥ β: 2 + B − β
    assert delta_g(0, 5, beta) == 4
    assert delta_g(2, 2, beta) == 2  # present anomaly: min(x_i, β + 1 − B)
    assert delta_g(1, 3, beta) == 1
    assert delta_g(3, 3, beta) == 1
    assert delta_g(1, 1, beta) == 1
    assert delta_g(2, 6, beta) == 3  # present normal: B − β
    assert delta_g(5, 5, beta) == 2


def test_lambda_k_hand_values():
    beta = 10
    # not sensitive (B < β + 1 − k): β + 1 − B + min(0, x_i − k)
    assert lambda_k(1, 1, beta, 1) == 10
    assert lambda_k(1, 1, beta, 3) == 10 - 2
    assert lambda_k(0, 0, beta, 1) == 10
    assert lambda_k(5, 5, beta, 3) == 6
    # sensitive: Δ_G
    assert lambda_k(1, 10, beta, 1) == delta_g(1, 10, beta) == 1
    assert lambda_k(1, 8, beta, 3) == delta_g(1, 8, beta) == 1
    assert lambda_k(0, 12, beta, 1) == 4


def test_compiler_delta_section_4_2():
    # k = 1, x_i ≥ 1, B < β: δ = max(β + 1 − B − x_i, 0)
    beta = 10
    for a in range(1, 8):
        for b in range(a, 10):
            assert compiler_delta(a, b, beta) == max(beta + 1 - b - a, 0)
    assert compiler_delta(3, 12, beta) == 0


@given(state(), st.integers(1, 80))
@settings(max_examples=300, deadline=None)
def test_bounds_are_ordered(s, k):
    a, b, beta = s
    dg = delta_g(a, b, beta)
    lam = lambda_k(a, b, beta, k)
    assert 1 <= dg <= lam
    assert lam >= lambda_k(a, b, beta, k + 1)  # larger k: more sensitive records, smaller λ
    if k >= beta + 1:
        assert lam == dg


# ------------------------------------------------------------------------------------------
# Claim 2, Theorem 4.6
# ------------------------------------------------------------------------------------------


def test_dp_error_when_lambda_is_one():
    # Table 2: the DP mechanism's mean error 0.4750 at ε = 0.1 is 1/(1 + e^0.1) (λ = 1)
    p = error_probability(1, 1, beta=55, epsilon=0.1)
    assert p == pytest.approx(1 / (1 + math.exp(0.1)), rel=1e-15)
    assert round(p, 4) == 0.4750
    # Figure 5a / 5b constants at ε = 0.25
    assert round(error_probability(0, 0, beta=3, epsilon=0.25), 2) == 0.44
    assert round(math.exp(0.25) / (1 + math.exp(0.25)), 2) == 0.56


def test_claim2_formula():
    beta, eps = 10, 0.7
    for a, b in [(0, 0), (1, 1), (1, 5), (3, 9), (2, 30), (0, 40)]:
        for k in (None, 1, 4):
            lam = delta_g(a, b, beta) if k is None else lambda_k(a, b, beta, k)
            want = math.exp(-eps * (lam - 1)) / (1 + math.exp(eps))
            got = error_probability(a, b, beta=beta, epsilon=eps, k=k)
            assert got == pytest.approx(want, rel=1e-14)
            c1 = Construction1.dp(beta, eps) if k is None else Construction1.sp(beta, k, eps)
            assert c1.error_probability(a, b) == pytest.approx(want, rel=1e-14)


@given(state(), st.integers(1, 80), st.floats(0.01, 5.0))
@settings(max_examples=300, deadline=None)
def test_theorem_4_6_bound(s, k, eps):
    a, b, beta = s
    p = error_probability(a, b, beta=beta, epsilon=eps, k=k)
    bound = theorem46_bound(b, beta=beta, epsilon=eps, k=k)
    if b < beta + 1 - k:
        assert p <= bound * (1 + 1e-12)
    else:
        assert math.isnan(bound)


def test_theorem_4_6_example():
    # "Fix k ≤ β/10. ... B_x(i, r) ≤ β/2 ... errs with probability less than e^{−2εβ/5}"
    beta, eps = 100, 0.1
    for k in range(1, 11):
        for b in range(1, 51):
            for a in (1, b):
                assert error_probability(a, b, beta=beta, epsilon=eps, k=k) < math.exp(
                    -2 * eps * beta / 5
                )


def test_sp_error_never_exceeds_dp_error():
    a = np.arange(0, 30)[:, None]
    b = np.arange(0, 60)[None, :]
    a, b = np.broadcast_arrays(a, b)
    ok = b >= a
    a, b = a[ok], b[ok]
    dp = log_error_probability(a, b, beta=20, epsilon=0.3)
    for k in (1, 5, 20):
        sp = log_error_probability(a, b, beta=20, epsilon=0.3, k=k)
        assert (sp <= dp + 1e-15).all()


# ------------------------------------------------------------------------------------------
# Log-space exactness
# ------------------------------------------------------------------------------------------


def _decimal_log_error(lam: int, eps: float) -> Decimal:
    getcontext().prec = 60
    e = Decimal(eps)
    return -e * (lam - 1) - (1 + e.exp()).ln()


@pytest.mark.parametrize(
    "beta,b,eps",
    [(1022, 1, 0.1), (1022, 1, 1.0), (20000, 3, 0.1), (700, 1, 1.0), (10**6, 5, 0.01)],
)
def test_log_space_is_exact_for_tiny_probabilities(beta, b, eps):
    lam = int(lambda_k(1, b, beta, 1))
    got = log_error_probability(1, b, beta=beta, epsilon=eps, k=1)
    want = _decimal_log_error(lam, eps)
    assert got == pytest.approx(float(want), rel=1e-14)
    p = error_probability(1, b, beta=beta, epsilon=eps, k=1)
    if float(want) > -745:
        assert p == pytest.approx(math.exp(float(want)), rel=1e-12)
    else:
        assert p == 0.0  # below the float range: only the log is representable


def test_log_space_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    for lam_target, eps in [(48, 1.0), (692, 1.0), (6910, 0.1), (10**5, 0.5)]:
        beta = lam_target  # λ_1(1, 1) = β for x_i = B = 1
        got = log_error_probability(1, 1, beta=beta, epsilon=eps, k=1)
        e = mpmath.mpf(eps)
        want = -e * (beta - 1) - mpmath.log(1 + mpmath.exp(e))
        assert got == pytest.approx(float(want), rel=1e-14)
        p = error_probability(1, 1, beta=beta, epsilon=eps, k=1)
        assert p == pytest.approx(float(mpmath.exp(want)), rel=1e-12, abs=0)


def test_1e_minus_300_scale():
    # ε = 1, λ − 1 = 690: t ≈ e^{-690}/(1+e) ≈ 1.2e-300, representable; compare in log space
    p = error_probability(1, 1, beta=691, epsilon=1.0, k=1)
    assert 1e-301 < p < 1e-299
    getcontext().prec = 60
    want = (_decimal_log_error(691, 1.0)).exp()
    assert p == pytest.approx(float(want), rel=1e-12)


def test_large_epsilon_is_stable():
    lp = log_error_probability(1, 1, beta=5, epsilon=800.0, k=1)
    assert math.isfinite(lp)
    assert lp == pytest.approx(-800.0 * 4 - 800.0, rel=1e-15)


# ------------------------------------------------------------------------------------------
# Vectorisation and validation
# ------------------------------------------------------------------------------------------


def test_vectorised_and_broadcast():
    a = np.array([[0], [1], [2]])
    b = np.array([[2, 3, 4, 50]])
    out = log_error_probability(a, b, beta=3, epsilon=0.5, k=1)
    assert out.shape == (3, 4)
    for i in range(3):
        for j in range(4):
            assert out[i, j] == log_error_probability(
                int(a[i, 0]), int(b[0, j]), beta=3, epsilon=0.5, k=1
            )
    assert isinstance(error_probability(1, 2, beta=3, epsilon=0.5), float)
    assert isinstance(delta_g(1, 2, 3), int)
    assert delta_g(np.array([1.0, 2.0]), np.array([2.0, 2.0]), 3).dtype == np.int64
    assert delta_g(np.zeros(0, int), np.zeros(0, int), 3).shape == (0,)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"x_i": -1, "ball": 3}, "x_i"),
        ({"x_i": 4, "ball": 3}, "ball must be >= x_i"),
        ({"x_i": 1.5, "ball": 3}, "integer"),
        ({"x_i": True, "ball": 3}, "boolean"),
        ({"x_i": 1, "ball": float("nan")}, "finite"),
        ({"x_i": 1, "ball": "a"}, "integer"),
        ({"x_i": [1, 2], "ball": [3, 4, 5]}, "broadcast"),
    ],
)
def test_count_validation(kwargs, match):
    with pytest.raises(PrivadError, match=match) as info:
        error_probability(**kwargs, beta=3, epsilon=0.5)
    assert isinstance(info.value, ParameterError) and isinstance(info.value, DataError)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"beta": 0, "epsilon": 0.5}, "beta"),
        ({"beta": 2.5, "epsilon": 0.5}, "beta"),
        ({"beta": 3, "epsilon": 0.0}, "epsilon"),
        ({"beta": 3, "epsilon": -1.0}, "epsilon"),
        ({"beta": 3, "epsilon": float("inf")}, "epsilon"),
        ({"beta": 3, "epsilon": 0.5, "k": 0}, "k"),
        ({"beta": 3, "epsilon": 0.5, "k": 1.5}, "k"),
        ({"beta": 3, "epsilon": 0.5, "cap": 4}, "count_cap"),
    ],
)
def test_parameter_validation(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        log_error_probability(1, 2, **kwargs)


def test_k_above_beta_is_allowed_and_equals_dp():
    a, b = np.array([0, 1, 1, 2]), np.array([0, 1, 3, 9])
    np.testing.assert_array_equal(
        log_error_probability(a, b, beta=3, epsilon=0.2, k=4),
        log_error_probability(a, b, beta=3, epsilon=0.2),
    )


# ------------------------------------------------------------------------------------------
# Construction 2
# ------------------------------------------------------------------------------------------


def test_validity_bound():
    # section 4.2: valid if error ≤ e^{2ε}/(1 + e^{2ε}), ε the input's own DP parameter
    assert validity_bound(0.25) == pytest.approx(math.exp(0.5) / (1 + math.exp(0.5)))


def test_compiled_error_hand_value():
    # Figure 5a input (constant 1/(1 + e^{0.25})), state x_i = 1, B = 1, β = 3, k = 1:
    # Δ_G = 1, λ_1 = 3, δ = 2, compiled ε = 0.5, factor e^{−(ε/4)δ} = e^{−0.25}
    mech = InputMechanism.constant(0.25)
    u = compile_mechanism(mech, beta=3, k=1)
    want = math.exp(-0.25) / (1 + math.exp(0.25))
    assert u.error_probability(1, 1) == pytest.approx(want, rel=1e-14)
    assert u.epsilon == 0.5
    assert compiled_error_probability(1, 1, beta=3, epsilon=0.5, input="constant") == (
        pytest.approx(want, rel=1e-14)
    )
    # Figure 5b input: optimal 0.25-DP; at (1, 1) Δ_G = 1, so the same value
    assert compiled_error_probability(1, 1, beta=3, epsilon=0.5) == pytest.approx(want)
    # sensitive records: compiled error = input error (δ = 0)
    assert compiled_log_error_probability(2, 5, beta=3, epsilon=0.5) == pytest.approx(
        log_error_probability(2, 5, beta=3, epsilon=0.25)
    )


def test_compiled_error_never_exceeds_input():
    mech = InputMechanism.optimal_dp(20, 0.3)
    u = compile_mechanism(mech, beta=20, k=2)
    a, b = np.meshgrid(np.arange(40), np.arange(40), indexing="ij")
    ok = b >= a
    le_u = u.log_error_probability(a[ok], b[ok])
    le_m = mech.log_error(a[ok], b[ok])
    assert (le_u <= le_m + 1e-15).all()


def test_compiler_accepts_the_built_in_inputs():
    for mech in (InputMechanism.constant(0.1), InputMechanism.optimal_dp(7, 1.3)):
        rep = check_input_mechanism(mech, beta=7)
        assert rep.valid and rep.sufficient
        assert rep.max_log_ratio <= mech.epsilon * (1 + 1e-9)


def test_compiler_refuses_an_invalid_dp_mechanism():
    """ε-DP but not valid: correct with probability ½e^{−ε(Δ_G−1)}, errs more far from flips."""
    beta, eps = 3, 0.25

    def log_error(a, b):
        correct = 0.5 * np.exp(-eps * (np.asarray(delta_g(a, b, beta)) - 1.0))
        return np.log1p(-correct)

    mech = InputMechanism(log_error, eps, "far-wrong")
    rep = check_input_mechanism(mech, beta=beta, raise_on_failure=False)
    assert rep.max_log_ratio <= eps * (1 + 1e-9)  # it is DP ...
    assert not rep.valid and not rep.sufficient  # ... but not valid
    with pytest.raises(InvalidMechanismError, match="not valid"):
        compile_mechanism(mech, beta=beta)


def test_compiler_refuses_a_mechanism_that_is_not_dp_at_its_claimed_epsilon():
    mech = InputMechanism.optimal_dp(5, 0.5)
    lying = InputMechanism(mech.log_error, 0.25, "overclaims")
    with pytest.raises(InvalidMechanismError, match="not 0.25-DP"):
        compile_mechanism(lying, beta=5)


def test_compiled_local_check_catches_states_beyond_the_grid():
    beta, eps = 3, 0.25

    def log_error(a, b):  # fine below B = 100, invalid beyond
        base = np.asarray(InputMechanism.optimal_dp(beta, eps).log_error(a, b))
        correct = 0.5 * np.exp(-eps * (np.maximum(np.asarray(b) - 100, 0)))
        return np.where(np.asarray(b) > 100, np.log1p(-correct), base)

    u = compile_mechanism(InputMechanism(log_error, eps), beta=beta, check_up_to=50)
    u.log_error_probability(1, 30)
    with pytest.raises(InvalidMechanismError):
        u.log_error_probability(50, 140)


def test_input_from_probabilities():
    m = InputMechanism.from_error_probability(
        lambda a, b: np.full(np.broadcast(a, b).shape, 1 / (1 + math.exp(0.2))), 0.2
    )
    u = compile_mechanism(m, beta=4)
    assert u.error_probability(0, 0) == pytest.approx(
        1 / (1 + math.exp(0.2)) * math.exp(-0.1 * compiler_delta(0, 0, 4))
    )


def test_construction1_with_any_lambda():
    from privad.noise import Randomness

    c = Construction1(lambda a, b: np.ones(np.broadcast(a, b).shape, dtype=np.int64), 0.3, 3)
    assert c.error_probability(2, 9) == pytest.approx(1 / (1 + math.exp(0.3)))
    assert c.truth(2, 2) == 1
    half = Construction1(lambda a, b: np.full(np.broadcast(a, b).shape, 40.5), 1.0, 3)
    assert half.log_error_probability(1, 1) == pytest.approx(-39.5 - math.log1p(math.e))
    ans = half.sample(np.ones(1000, int), np.ones(1000, int), Randomness(0))
    assert (ans == 1).all()  # error e^{-39.5}/(1+e): never observed
    bad = Construction1(lambda a, b: np.zeros(np.broadcast(a, b).shape), 0.3, 3)
    with pytest.raises(ParameterError, match="λ"):
        bad.error_probability(1, 1)
