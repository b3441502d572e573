"""The audit that found the d_diff gap, run on every view (docs/relaxed.md, "Each party's view").

Neighbouring windows: record 0 at the data centre, or moved by one relaxed-sensitivity width
RS₀ (inside the range promised ε-DP). Many perturbations of each; for an event E the
Clopper-Pearson bounds at α = 1e-6 (two-sided) decide whether P₁[E] > e^ε·P₂[E] (or the
reverse) for the ε the view states. The unprotected exchange's views fail, the protected
ones pass.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import beta

from privad.noise import Randomness
from privad.relaxed import Sensor

ALPHA = 1e-6
RUNS = 2000


def _violates(a: np.ndarray, b: np.ndarray, epsilon: float) -> bool:
    """Whether the event counts show P_a > e^ε P_b or P_b > e^ε P_a at confidence 1 − α."""

    def bounds(k: int, n: int) -> tuple[float, float]:
        lo = 0.0 if k == 0 else beta.ppf(ALPHA / 4, k, n - k + 1)
        hi = 1.0 if k == n else beta.ppf(1 - ALPHA / 4, k + 1, n - k)
        return lo, hi

    (alo, ahi), (blo, bhi) = bounds(int(a.sum()), a.size), bounds(int(b.sum()), b.size)
    return bool(alo > math.exp(epsilon) * bhi or blo > math.exp(epsilon) * ahi)


def _windows() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.normal(0.0, 3.0, size=(40, 2))
    X -= X.mean(axis=0)
    rs = np.array([10.0, 10.0])
    near, far = X.copy(), X.copy()
    near[0] = 0.0
    far[0] = [rs[0], 0.0]
    return near, far, rs


def _d_diff0(window: np.ndarray, rs: np.ndarray, seed: int, **kw) -> np.ndarray:
    sensor = Sensor(0.5, rs, global_sensitivity=1000, rng=Randomness(seed), **kw)
    return np.array([sensor.perturb(window)[1].d_diff[0] for _ in range(RUNS)])


def test_correction_servers_view_unprotected_fails_protected_passes() -> None:
    near, far, rs = _windows()
    for exchange, should_fail in (("unprotected", True), ("protected", False)):
        sensor = Sensor(0.5, rs, global_sensitivity=1000, exchange=exchange)
        view = sensor.views().correction.guarantee
        eps = sensor.guarantee().epsilon if view is None else view.epsilon
        a = _d_diff0(near, rs, 1, exchange=exchange)
        b = _d_diff0(far, rs, 2, exchange=exchange)
        found = any(
            _violates(a < t, b < t, eps) or _violates(a > t, b > t, eps)
            for t in (-0.5, -0.1, 0.0, 0.5, 1.0)
        )
        assert found is should_fail, (exchange, (a < -0.5).mean(), (b < -0.5).mean())
        assert (view is None) is should_fail


def test_noisy_d_tp_has_no_atom_at_the_raw_distance() -> None:
    # the analyst's attack: ‖T'[0] − c'‖ − d_TP equals the raw ‖T[0] − c‖ whenever record
    # 0 is the minimum of d_diff over O'; with O' = {0} it always is.
    near, far, rs = _windows()
    from privad.relaxed import CorrectionServer
    from privad.relaxed.messages import AnalystToCorrection

    raw = float(np.linalg.norm(near[0] - near.mean(axis=0)) / 10.0)  # scaled space
    for tp_epsilon, should_fail in ((None, True), (1.0, False)):
        hits = []
        for window, seed in ((near, 5), (far, 6)):
            kw = {"exchange": "unprotected"} if tp_epsilon is None else {"tp_epsilon": tp_epsilon}
            sensor = Sensor(0.5, rs, global_sensitivity=1000, rng=Randomness(seed), **kw)
            got = []
            for _ in range(RUNS // 4):
                to_a, to_cs = sensor.perturb(window)
                cs = CorrectionServer(1.0)
                cs.receive_differences(to_cs)
                d_tp = cs.receive_presumed_outliers(AnalystToCorrection(np.array([0]))).d_tp
                P = to_a.perturbed
                got.append(float(np.linalg.norm(P[0] - P.mean(axis=0))) - d_tp)
            hits.append(np.abs(np.array(got) - raw) < 1e-9)
        eps = 2 * 0.5 + 2 * 0.5 + (tp_epsilon or 0.0)  # a bound on any analyst view here
        # E = {the analyst's candidate equals the near window's raw distance}
        assert _violates(hits[0], hits[1], eps) is should_fail


def test_noisy_d_tp_through_the_correction_service(server_pool, tmp_path) -> None:
    """ε_TP on the wire: the sensor's tp_noise travels in its JSON message to a real
    correction server, which answers the analyst's O' = {0} with d_TP. The analyst's attack
    statistic ‖T'[0] − c'‖ − d_TP (exactly the raw ‖T[0] − c‖ without noise, see the test
    above) must stay within e^ε of its neighbour's for the ε the statement gives d_TP, and
    fails for a noise scale 8 times too small (ratio ≈ e^1.9 at the threshold 0.5)."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from privad.relaxed.messages import AnalystToCorrection
    from privad.services.auth import TokenRegistry
    from privad.services.clients import CorrectionClient
    from privad.services.correction import create_correction_app

    sensor_secret, analyst_secret = "sensor-audit-secret-0123456789", "analyst-audit-secret-0123"
    tokens = TokenRegistry([("s0", sensor_secret)], {"analyst": analyst_secret})
    near, far, rs = _windows()
    runs = 200  # enough for the failing control at α = 1e-6
    window = iter(range(10**6))
    shm = Path("/dev/shm")  # a durable store's fsyncs are free there: the test takes seconds
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else tmp_path) as folder:
        cs = server_pool.start_app(
            create_correction_app(Path(folder) / "cs.sqlite", tokens, outlier_layer_width=1.0)
        )
        sensor_client = CorrectionClient(cs.url, sensor_secret)
        analyst_client = CorrectionClient(cs.url, analyst_secret)

        def statistics(data: np.ndarray, seed: int, **kw) -> np.ndarray:
            sensor = Sensor(0.5, rs, global_sensitivity=1000, rng=Randomness(seed), **kw)
            jobs = [(next(window), *sensor.perturb(data)) for _ in range(runs)]

            def one(job) -> float:  # type: ignore[no-untyped-def]
                w, to_a, to_cs = job
                sensor_client.put_differences(w, to_cs)  # JSON on the wire, stored
                d_tp = analyst_client.presumed_outliers(
                    "s0", w, AnalystToCorrection(np.array([0])), data.shape[0]
                ).d_tp
                P = to_a.perturbed
                return float(np.linalg.norm(P[0] - P.mean(axis=0))) - d_tp

            with ThreadPoolExecutor(8) as pool:  # concurrent requests share the commits
                return np.array(list(pool.map(one, jobs)))

        thresholds = (-1.0, 0.0, 0.5, 1.0, 2.0)
        cases = (
            (dict(cs_epsilon=100.0, tp_epsilon=0.5), None, False),  # d_TP: min(0.5, 100)
            (dict(cs_epsilon=100.0, tp_epsilon=4.0), 0.5, True),
        )  # scale 8× too small
        for kw, claimed, should_fail in cases:
            stated = {
                c.name: c
                for c in Sensor(0.5, rs, global_sensitivity=1000, **kw).views().analyst.components
            }["d_TP"].guarantee
            eps = stated.epsilon if claimed is None else claimed
            a, b = statistics(near, 11, **kw), statistics(far, 12, **kw)
            found = any(
                _violates(a > t, b > t, eps) or _violates(a < t, b < t, eps) for t in thresholds
            )
            assert found is should_fail, (
                kw,
                eps,
                [(np.mean(a > t), np.mean(b > t)) for t in thresholds],
            )
        sensor_client.close()
        analyst_client.close()
        server_pool.stop(cs)
