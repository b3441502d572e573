"""privad.relaxed.views: each party's view and the release, against hand-computed values.

Setting: ε = 0.5 per value, two columns, RS = (10, 10), GS = 1000, guarantee unit "record":
ε_T = 2·0.5 = 1 and ε'_T = 2·0.5·1000/10 = 100 (Theorem 2 summed over the columns); in the
scaled space D_N = ‖(1, 1)‖ = √2 and D_G = ‖(100, 100)‖, so every d_diff / d_TP mechanism
has ε' = 100·ε.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from privad.errors import ParameterError
from privad.noise import grid_exponent, laplace_epsilon_for
from privad.relaxed import Sensor
from privad.relaxed.views import check_exchange, d_diff_sensitivity, neighbour_diameters

RS = [10.0, 10.0]


def _sensor(**kw) -> Sensor:  # type: ignore[no-untyped-def]
    return Sensor(0.5, RS, global_sensitivity=1000, **kw)


def _eps(g) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    return g.epsilon, g.epsilon_outlier


def test_diameters_and_d_diff_sensitivity() -> None:
    d_n, d_g = neighbour_diameters(RS, RS, [1000.0, 1000.0], "record")
    assert d_n == pytest.approx(math.sqrt(2)) and d_g == pytest.approx(100 * math.sqrt(2))
    assert neighbour_diameters(RS, RS, None, "column") == (1.0, None)
    assert d_diff_sensitivity(2.0, 40, "separate") == pytest.approx((4.0, 2.0 * 41 / 40))
    assert d_diff_sensitivity(2.0, 40, "original") == pytest.approx((6.0, 2.0 * 42 / 40))
    # the sensor's noise scales: Δ₁/ε_CS and Δ_∞/ε_TP for a window of 40 records
    cs, tp = _sensor(cs_epsilon=2.0, tp_epsilon=0.25).d_diff_noise_scales(40)
    assert cs == pytest.approx(2 * math.sqrt(2) / 2.0, rel=1e-9)
    assert tp == pytest.approx(math.sqrt(2) * 41 / 40 / 0.25, rel=1e-9)


def test_protected_views_with_tp_epsilon() -> None:
    v = _sensor(tp_epsilon=0.25).views()  # ε_CS defaults to dε = 1
    assert (v.cs_epsilon, v.tp_epsilon) == (1.0, 0.25)
    # the release, charged: ε_T + ε_CS; ε_TP adds nothing (its noise is data-independent)
    assert _eps(v.release) == pytest.approx((2.0, 200.0))
    assert _eps(v.analyst.guarantee) == pytest.approx((2.0, 200.0))
    assert _eps(v.correction.guarantee) == pytest.approx((2.0, 200.0))
    parts = {c.name: c for c in v.analyst.components}
    assert _eps(parts["T'"].guarantee) == pytest.approx((1.0, 100.0))
    assert _eps(parts["d_TP"].guarantee) == pytest.approx((0.25, 25.0))  # min(ε_TP, ε_CS)
    assert _eps(parts["corrected outliers"].guarantee) == pytest.approx((1.0, 100.0))
    # ε_TP above ε_CS: d_TP alone is still covered by ε_CS
    d_tp = {c.name: c for c in _sensor(tp_epsilon=3.0).views().analyst.components}["d_TP"]
    assert _eps(d_tp.guarantee) == pytest.approx((1.0, 100.0))
    lines = v.lines()
    assert lines[0] == "exchange: protected (ε_CS = 1, ε_TP = 0.25)"
    assert "d_TP: relaxed-dp" in lines[1] and "min(ε_TP, ε_CS)" in lines[1]
    d = v.to_dict()
    assert d["tp_epsilon"] == 0.25 and d["analyst"]["guarantee"]["epsilon"] == 2.0
    assert "post-processing" in d["analyst"]["basis"]


def test_protected_without_tp_and_unprotected() -> None:
    v = _sensor(cs_epsilon=0.5).views()
    assert _eps(v.release) == pytest.approx((1.5, 150.0))
    assert v.lines()[0] == "exchange: protected (ε_CS = 0.5)"
    parts = {c.name: c for c in v.analyst.components}
    assert _eps(parts["d_TP"].guarantee) == pytest.approx((0.5, 50.0))
    u = _sensor(exchange="unprotected").views()
    assert u.analyst.guarantee is None and u.correction.guarantee is None
    assert _eps(u.release) == pytest.approx((1.0, 100.0))  # only T' carries a guarantee
    assert "NONE (unprotected)" in u.lines()[1] and "NONE (unprotected)" in u.lines()[2]


def test_exchange_options_are_checked() -> None:
    for kw in ({"cs_epsilon": 1.0}, {"tp_epsilon": 1.0}):
        with pytest.raises(ParameterError, match="protected exchange only"):
            _sensor(exchange="unprotected", **kw)
    with pytest.raises(ParameterError, match="tp_epsilon"):
        _sensor(tp_epsilon=0.0)
    assert check_exchange("protected", None, 2) == ("protected", None, 2.0)


@pytest.mark.parametrize("n", [1, 40, 10**7])
def test_the_d_diff_noise_meets_the_stated_cs_epsilon_with_all_n_coordinates(n: int) -> None:
    """Issue 26, item 5: grid snapping moves each of the n entries of d_diff by up to 2^k,
    so the noise is ε_CS-DP only if (Δ₁ + n·2^k)/scale ≤ ε_CS (the snapped Laplace's
    closed form, :func:`privad.noise.laplace_epsilon_for`). Counting one coordinate gave
    2 + 6.43e-6 at n = 10⁷ for ε_CS = 2, above the stated ε_CS and the ledger's 10⁻⁶ grid."""
    sensor = _sensor(cs_epsilon=2.0)
    cs, _ = sensor.d_diff_noise_scales(n)
    l1, _ = d_diff_sensitivity(sensor.diameters[0], n, sensor.d_diff_centres)
    assert laplace_epsilon_for(l1, cs, coordinates=n) <= sensor.cs_epsilon == 2.0
    k = grid_exponent(cs)
    exact = (Fraction(l1) + n * Fraction(2) ** k) / Fraction(cs)
    assert exact <= 2  # the same bound in exact rationals
    # and the scale is the smallest that meets it: one double less would not
    smaller = math.nextafter(cs, 0.0)
    assert (Fraction(l1) + n * Fraction(2) ** grid_exponent(smaller)) / Fraction(smaller) > 2
    assert sensor.views().cs_epsilon == 2.0  # what the views state and the ledger charges
