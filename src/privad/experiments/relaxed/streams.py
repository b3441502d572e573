"""The protocol on a stream of windows, and the protected exchange on Figure 3's grid."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privad.datasets import make_sensor_ring
from privad.errors import ParameterError
from privad.experiments.relaxed.grid import EPSILONS, P_O, PAPER_N, SEPARATIONS, RingCache, _seed
from privad.experiments.relaxed.options import _Fixed, _replay
from privad.relaxed import (
    AdaptiveDBSCANDetector,
    RelaxedExchange,
    RelaxedReconstruction,
    Sensor,
    calibrate,
    relaxed_sensitivity,
    run_protocol,
)
from privad.relaxed.correction import estimate_outlier_layer_radius, estimate_outlier_layer_width
from privad.relaxed.metrics import accuracy, subset_size
from privad.validation import check_int

DEFAULT = RelaxedReconstruction()
"""The reconstruction of :func:`~privad.relaxed.run_pipeline`'s defaults."""


def streaming_example(
    *,
    windows: int = 8,
    window_size: int = 2_000,
    separation: float = 220.0,
    epsilon: float = 0.5,
    seed: int = 0,
) -> pd.DataFrame:
    """The protocol on a sensor stream: parameters from history, one protocol run per window.

    RS (eq. 1), the DBSCAN family, w_O and ρ are fixed once from a historical window of the
    same size (drawn separately); then each window of the stream (a fresh sample of the same
    ring distribution) is perturbed with fresh noise and corrected by fresh parties, as the
    services do (``privad sensor send``). Nothing from a window is used to set parameters
    except the analyst's choice among the DBSCAN family on its own 𝒯'.

    Returns
    -------
    pandas.DataFrame
        One row per window: ``window``, ``n``, ``accuracy``, ``subset_size``,
        ``baseline_accuracy``, ``baseline_subset_size``, ``n_presumed``, ``n_output``,
        ``dbscan_min_samples``, ``time_detection_ms``, ``time_correction_ms``.
    """
    windows = check_int(windows, "windows", minimum=1)
    window_size = check_int(window_size, "window_size", minimum=10)
    history = make_sensor_ring(
        window_size, separation=separation, rng=_seed(seed, "stream-history")
    ).X
    rs = relaxed_sensitivity(history, P_O)
    sensor = Sensor(epsilon, rs, rng=_seed(seed, "stream-noise"))
    cal = calibrate(sensor.scale(history), P_O, DEFAULT)  # the family, w_O and ρ
    assert isinstance(cal.detector, AdaptiveDBSCANDetector)
    cands = cal.detector.candidates
    rows = []
    for w in range(windows):
        X = make_sensor_ring(
            window_size, separation=separation, rng=_seed(seed, "stream-window", w)
        ).X
        detector = AdaptiveDBSCANDetector(cands, P_O)
        analyst = DEFAULT.analyst(detector, cal.outlier_radius)
        run = run_protocol(X, sensor, analyst, DEFAULT.correction_server(cal.w_o))
        assert detector.selected is not None
        o_true = detector.selected(sensor.scale(X))
        rows.append(
            {
                "window": w,
                "n": window_size,
                "accuracy": accuracy(run.outliers, o_true, window_size),
                "subset_size": subset_size(run.outliers, window_size),
                "baseline_accuracy": accuracy(run.presumed_outliers, o_true, window_size),
                "baseline_subset_size": subset_size(run.presumed_outliers, window_size),
                "n_true_outliers": int(o_true.size),
                "n_presumed": int(run.presumed_outliers.size),
                "n_output": int(run.outliers.size),
                "dbscan_min_samples": detector.selected.min_samples,
                "time_detection_ms": 1000 * run.timings["detection"],
                "time_correction_ms": 1000 * run.timings["correction"],
            }
        )
    return pd.DataFrame(rows)


PROTECTED_VARIANTS: tuple[tuple[float | None, float | None], ...] = (
    (None, None),
    (0.5, None),
    (1.0, None),
    (2.0, None),
    (4.0, None),
    (1.0, 0.5),
    (1.0, 1.0),
)
"""The exchanges :func:`protected_exchange_grid` compares, as ``(ε_CS, ε_TP)`` factors of the
perturbation's ε per record (dε): ``(None, None)`` is the paper's unprotected exchange,
``(f, None)`` the protected one with ε_CS = f·dε and exact-but-noisy-d_diff d_TP, ``(f, g)``
adds the d_TP noise of ε_TP = g·dε."""


def _variant_label(cs: float | None, tp: float | None) -> str:
    if cs is None:
        return "unprotected"
    return f"protected ε_CS={cs:g}·dε" + ("" if tp is None else f", ε_TP={tp:g}·dε")


def protected_exchange_grid(
    separations: Sequence[float] = SEPARATIONS,
    epsilons: Sequence[float] = EPSILONS,
    variants: Sequence[tuple[float | None, float | None]] = PROTECTED_VARIANTS,
    *,
    n: int = PAPER_N,
    runs: int = 5,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    cache: RingCache | None = None,
) -> pd.DataFrame:
    """Accuracy and subset size of the protected exchange against ε_CS and ε_TP (Figure 3's grid).

    The data sets, their calibration and the perturbation's noise seeds are those of
    :func:`figure3` (same ``seed``), so the ``"unprotected"`` rows are Figure 3's runs. Every
    variant perturbs 𝒯 with the same noise (the same 𝒯', hence the same O', computed once);
    the variants differ only in the noise on d_diff (ε_CS) and on d_TP (ε_TP), and each runs
    steps 3–5 with fresh parties and :func:`~privad.relaxed.run_pipeline`'s defaults
    (adaptive DBSCAN, the "radius" reduction with ρ and w_O from the historical outliers).

    Parameters
    ----------
    separations, epsilons, n, runs:
        The grid (paper: 50/120/220/400, 0.1/0.5/1, 100,000, 5).
    variants:
        ``(ε_CS factor, ε_TP factor)`` pairs, see :data:`PROTECTED_VARIANTS`.
    seed:
        Base seed of the data and the noise (as :func:`figure3`).
    progress:
        ``progress(step, done, total)`` before each (separation, run).
    cache:
        A :class:`RingCache` shared with other functions of the same reproduction.

    Returns
    -------
    pandas.DataFrame
        One row per (separation, ε, variant, run): ``exchange`` (label), ``cs_factor``,
        ``tp_factor``, ``cs_epsilon``, ``tp_epsilon`` (absolute, per record),
        ``charged_epsilon`` (ε_T + ε_CS per record, what a window is charged; ε_TP costs
        nothing on top, see :mod:`privad.relaxed.views`), ``accuracy``, ``subset_size``,
        ``baseline_accuracy``, ``baseline_subset_size`` (O' before correction, the same for
        every variant) and ``n_output``. :func:`protected_exchange_summary` averages the runs.
    """
    runs = check_int(runs, "runs", minimum=1)
    n = check_int(n, "n", minimum=10)
    variants = [
        (None if cs is None else float(cs), None if tp is None else float(tp))
        for cs, tp in variants
    ]
    if any(cs is None and tp is not None for cs, tp in variants):
        raise ParameterError(
            "ε_TP applies to the protected exchange only: give an ε_CS factor "
            "with every ε_TP factor"
        )
    cache = cache if cache is not None else RingCache()
    rows: list[dict[str, Any]] = []
    total = len(separations) * runs
    done = 0
    for sep in separations:
        for run in range(runs):
            if progress is not None:
                progress(
                    f"protected exchange: separation {sep:g}, run {run + 1}/{runs}", done, total
                )
            prep = cache.get(n, sep, run, seed)
            n_rec, d = prep.X.shape
            # as run_pipeline: w_O and ρ from the records any member of the family labels as
            # noise on the history (= the data)
            hist = np.unique(np.concatenate([prep.outliers_of(c) for c in prep.candidates]))
            w_o = estimate_outlier_layer_width(prep.T, hist)
            rho = estimate_outlier_layer_radius(prep.T, hist)
            for eps in epsilons:
                o_prime = chosen = None
                for cs, tp in variants:
                    exchange = (
                        RelaxedExchange()
                        if cs is None
                        else RelaxedExchange(
                            "protected", cs * d * eps, None if tp is None else tp * d * eps
                        )
                    )
                    sensor = Sensor(
                        eps,
                        prep.rs,
                        exchange=exchange.kind,
                        cs_epsilon=exchange.cs_epsilon,
                        tp_epsilon=exchange.tp_epsilon,
                        rng=_seed(seed, "noise", sep, run, eps),
                    )
                    to_a, to_c = sensor.perturb(prep.X)  # 𝒯' first: the same for every variant
                    if o_prime is None:
                        adaptive = AdaptiveDBSCANDetector(prep.candidates, cache.p_o)
                        chosen, o_prime = adaptive.select(to_a.perturbed)
                    analyst = DEFAULT.analyst(_Fixed(o_prime, n_rec), rho)
                    out = _replay(to_a, to_c, analyst, DEFAULT.correction_server(w_o))
                    o_true = prep.outliers_of(chosen)
                    rows.append(
                        {
                            "separation": float(sep),
                            "epsilon": float(eps),
                            "run": run,
                            "n": n_rec,
                            "exchange": _variant_label(cs, tp),
                            "cs_factor": cs,
                            "tp_factor": tp,
                            "cs_epsilon": exchange.cs_epsilon,
                            "tp_epsilon": exchange.tp_epsilon,
                            "charged_epsilon": d * eps + (exchange.cs_epsilon or 0.0),
                            "accuracy": accuracy(out, o_true, n_rec),
                            "subset_size": subset_size(out, n_rec),
                            "baseline_accuracy": accuracy(o_prime, o_true, n_rec),
                            "baseline_subset_size": subset_size(o_prime, n_rec),
                            "n_output": int(out.size),
                        }
                    )
            done += 1
    return pd.DataFrame(rows)


def protected_exchange_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean (and range) over runs of :func:`protected_exchange_grid` per (separation, ε,
    exchange), in the order of the grid."""
    keys = ["separation", "epsilon", "exchange"]
    g = df.groupby(keys, sort=False)
    out = g[["charged_epsilon", "accuracy", "subset_size"]].mean()
    for col in ("accuracy", "subset_size"):
        out[f"{col}_min"] = g[col].min()
        out[f"{col}_max"] = g[col].max()
    out["runs"] = g.size()
    return out.reset_index()
