"""The RMP privacy evaluation: the attacks of section 5 run against α and w.

Erfani, Law, Karunasekera, Leckie, Palaniswami, "Privacy-preserving collaborative anomaly
detection for participatory sensing" (PAKDD 2014), section 5. The paper argues its privacy
analytically (eq. 5, eq. 6, Lemma 1, the overcomplete-ICA remark of section 5.2) and
measures only accuracy (Table 1). This module measures the attacks of
:mod:`privad.rmp.attacks`; ``docs/rmp_privacy.md`` discusses the numbers.

One function per table, each returning a tidy :class:`pandas.DataFrame`, and a ``draw_*``
companion returning a matplotlib figure; nothing writes files except
:func:`reproduce_privacy` (CSV, PNG and a page, atomically, through
:mod:`privad.experiments.report`):

* :func:`map_vs_alpha`, :func:`map_vs_w`: MAP reconstruction error (eq. 5) with the exact
  T̃, with the public T, and with the public T by an attacker who knows α; with and without
  the double logistic; on a Gaussian synthetic set and on Abalone.
* :func:`ica_vs_w`: FastICA on independent non-Gaussian attributes, w from below (n + 1)/2
  to above n.
* :func:`collusion_vs_alpha`: a server colluding with one participant, the prior schemes'
  common T against RMP's T_c = T + Δ_c.
* :func:`known_io_vs_k`: the known input-output attack with k known records of the victim.
* :func:`lemma1_table`: Lemma 1 against 10⁶ draws per (α, d), two-sided binomial test at
  10⁻⁶, with the power check against a wrong formula.

Data (:func:`attack_datasets`; records as columns, every attribute min-max scaled to
[0, 1] as in the paper's section 6):

* ``gaussian``: n = 8 correlated Gaussian attributes, AR(1) correlation ρ^|i−j| with
  ρ = 0.7 (our choice: data where eq. 5's Gaussian prior is right), jointly min-max scaled.
* ``abalone``: UCI Abalone, the 8 numeric attributes (:func:`privad.datasets.load_abalone`),
  min-max scaled, shuffled.

The victim holds ``victim`` records; the attacker holds a disjoint sample of ``known``
records of the same population, from which it estimates its prior (``prior="sample"``);
``prior="oracle"`` uses the victim's own statistics (section 5.1's worst case).

Randomness: every setting draws from its own stream, seeded by CRC-32 of the base seed and
the setting's coordinates, so numbers do not depend on the order settings run in. Within a
repeat the same T and Δ serve every attacker and both data spaces (paired comparisons).
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.errors import ParameterError
from privad.noise import Randomness, as_randomness
from privad.rmp.attacks import (
    binomial_p_value,
    centre_guess_probability,
    gaussian_prior,
    ica_attack,
    known_io_attack,
    lemma1_probability,
    lemma1_quantile,
    linear_filter_correlation,
    match_components,
    matrix_error_variance,
    oracle_prior,
    reconstruct,
    reconstruction_error,
    sample_element_errors,
)
from privad.rmp.perturbation import check_alpha, double_logistic
from privad.validation import check_choice, check_int, check_positive

__all__ = [
    "ATTACKERS",
    "PAPER_ALPHAS",
    "SCENARIOS",
    "AttackData",
    "PrivacySettings",
    "abalone_data",
    "attack_datasets",
    "collusion_vs_alpha",
    "draw_collusion",
    "draw_ica_vs_w",
    "draw_known_io",
    "draw_lemma1",
    "draw_map_vs_alpha",
    "draw_map_vs_w",
    "gaussian_data",
    "ica_vs_w",
    "known_io_vs_k",
    "lemma1_table",
    "map_vs_alpha",
    "map_vs_w",
    "privacy_evaluation",
    "privacy_settings",
    "reproduce_privacy",
]

PAPER_ALPHAS: tuple[float, ...] = (0.01, 0.1, 0.2, 0.4, 0.6)
"""The α of the paper's Table 1."""

ATTACKERS: dict[str, str] = {
    "exact": "eq. 5 with the exact T̃ (worst case)",
    "public": "eq. 5 with the public T in place of T̃",
    "public-aware": "public T, α known: T̃ − T as noise (our reading of eq. 6)",
}
"""The MAP attackers of :func:`map_vs_alpha` and :func:`map_vs_w`."""

SCENARIOS: dict[str, str] = {
    "common": "common T (prior schemes): the colluder reveals the victim's matrix",
    "colluder": "RMP: eq. 5 with the colluder's T_c",
    "colluder-aware": "RMP: colluder's T_c, α known (error variance 2α²/3)",
    "public-aware": "RMP: public T, α known (error variance α²/3)",
}
"""The collusion scenarios of :func:`collusion_vs_alpha`."""

GUESS_OF: dict[str, tuple[str, str]] = {
    # scenario or attacker -> (matrix the attacker plugs in, matrix_error_variance guess)
    "exact": ("exact", "exact"),
    "public": ("public", "exact"),
    "public-aware": ("public", "public"),
    "common": ("public", "exact"),
    "colluder": ("colluder", "exact"),
    "colluder-aware": ("colluder", "colluder"),
}

Progress = Callable[[str, int, int], None] | None


def _seed(seed: int, *parts: Any) -> int:
    """A per-setting seed: CRC-32 of the base seed and the setting's coordinates."""
    return zlib.crc32(":".join([str(int(seed)), *map(str, parts)]).encode("utf-8"))


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttackData:
    """A victim's records and the attacker's own sample of the same population.

    Attributes
    ----------
    name
        ``"gaussian"`` or ``"abalone"``.
    victim
        n x m_v, records as columns, values in [0, 1].
    known
        n x m_k, the attacker's sample (disjoint from the victim's records).
    description
        one line.
    """

    name: str
    victim: np.ndarray
    known: np.ndarray
    description: str

    @property
    def n(self) -> int:
        """Number of attributes."""
        return int(self.victim.shape[0])


def _split(name: str, data: np.ndarray, victim: int, known: int, description: str) -> AttackData:
    if data.shape[1] < victim + known:
        raise ParameterError(
            f"victim + known must be <= {data.shape[1]} records for {name}, got {victim} + {known}"
        )
    return AttackData(
        name, data[:, :victim].copy(), data[:, victim : victim + known].copy(), description
    )


def gaussian_data(
    n: int = 8,
    *,
    rho: float = 0.7,
    victim: int = 1000,
    known: int = 1000,
    rng: Any = None,
) -> AttackData:
    """n correlated Gaussian attributes (correlation ρ^|i−j|), jointly min-max scaled to
    [0, 1]. Data where eq. (5)'s Gaussian prior is right (our choice of covariance)."""
    n = check_int(n, "n", minimum=2)
    victim = check_int(victim, "victim", minimum=2)
    known = check_int(known, "known", minimum=2)
    if not (isinstance(rho, int | float) and -1.0 < float(rho) < 1.0):
        raise ParameterError(f"rho must be a real number in (-1, 1), got {rho!r}")
    idx = np.arange(n)
    cov = float(rho) ** np.abs(np.subtract.outer(idx, idx))
    G = as_randomness(rng).multivariate_normal(np.zeros(n), cov, size=victim + known)
    from privad.datasets.preprocessing import minmax_scale

    X = minmax_scale(G).T
    text = f"Gaussian, n = {n}, correlation {float(rho):g}^|i-j|, min-max scaled"
    return _split("gaussian", X, victim, known, text)


def abalone_data(*, victim: int = 1000, known: int = 1000, rng: Any = None) -> AttackData:
    """UCI Abalone (8 numeric attributes, the paper's Table 1), min-max scaled, shuffled."""
    from privad.datasets import load_abalone
    from privad.datasets.preprocessing import minmax_scale

    victim = check_int(victim, "victim", minimum=2)
    known = check_int(known, "known", minimum=2)
    X = minmax_scale(load_abalone().X)
    X = X[as_randomness(rng).permutation(X.shape[0])].T
    return _split("abalone", X, victim, known, "UCI Abalone, 8 numeric attributes, min-max scaled")


def attack_datasets(*, seed: int = 0, victim: int = 1000, known: int = 1000) -> list[AttackData]:
    """The two data sets of the evaluation: ``gaussian`` (n = 8) and ``abalone`` (n = 8)."""
    return [
        gaussian_data(8, victim=victim, known=known, rng=_seed(seed, "data", "gaussian")),
        abalone_data(victim=victim, known=known, rng=_seed(seed, "data", "abalone")),
    ]


# --------------------------------------------------------------------------------------------
# MAP estimation (section 5.1)
# --------------------------------------------------------------------------------------------


def _matrices(r: Randomness, w: int, n: int, alpha: float) -> dict[str, np.ndarray]:
    """Public T (w x n, U(0, 1)), the victim's T̃ = T + Δ_v and a colluder's T_c = T + Δ_c.

    Drawn directly (not with :func:`~privad.rmp.public_matrix`) so that w >= n, which RMP
    refuses, can be studied too."""
    T = np.asarray(r.uniform(0.0, 1.0, size=(w, n)), dtype=np.float64)
    victim = T + np.asarray(r.uniform(-alpha, alpha, size=(w, n)), dtype=np.float64)
    colluder = T + np.asarray(r.uniform(-alpha, alpha, size=(w, n)), dtype=np.float64)
    return {"public": T, "exact": victim, "colluder": colluder}


def _space(X: np.ndarray, dl: bool) -> np.ndarray:
    return double_logistic(X) if dl else X


def _check_clip_arg(clip: Any) -> tuple[float, float] | None:
    from privad.rmp.attacks import check_clip

    return check_clip(clip)


def _attack_rows(
    data: AttackData,
    *,
    w: int,
    alpha: float,
    kinds: Sequence[str],
    dls: Sequence[bool],
    priors: Sequence[str],
    repeats: int,
    tolerance: float,
    clip: tuple[float, float] | None,
    seed: int,
    tag: str,
) -> list[dict[str, Any]]:
    """Rows of one (data set, w, α) for every kind (attacker or scenario), dl and prior."""
    n = data.n
    acc: dict[tuple[bool, str, str], list[Any]] = {}
    # priors and baselines depend only on the data space
    prepared = {}
    for dl in dls:
        Yv, Yk = _space(data.victim, dl), _space(data.known, dl)
        for prior in priors:
            p = gaussian_prior(Yk) if prior == "sample" else oracle_prior(Yv)
            guess_x = (data.known if prior == "sample" else data.victim).mean(axis=1)
            guess = np.repeat(guess_x[:, None], data.victim.shape[1], axis=1)
            base = reconstruction_error(data.victim, guess, tolerance=tolerance)
            prepared[(dl, prior)] = (Yv, p, base)
    for rep in range(repeats):
        r = as_randomness(_seed(seed, tag, data.name, w, alpha, rep))
        mats = _matrices(r, w, n, alpha)
        for dl in dls:
            for prior in priors:
                Yv, p, _ = prepared[(dl, prior)]
                Z_rmp = mats["exact"] @ Yv
                Z_common = mats["public"] @ Yv if "common" in kinds else None
                for kind in kinds:
                    matrix, guess = GUESS_OF[kind]
                    T_guess = mats[matrix]
                    # the common-T scheme: the victim itself uses the public T
                    victim_matrix = mats["public"] if kind == "common" else mats["exact"]
                    Z = Z_common if kind == "common" else Z_rmp
                    var = matrix_error_variance(alpha, guess) if guess != "exact" else 0.0
                    X_hat = reconstruct(
                        Z, T_guess, p, matrix_var=var, double_logistic_applied=dl, clip=clip
                    )
                    e = reconstruction_error(data.victim, X_hat, tolerance=tolerance)
                    diff = T_guess - victim_matrix
                    acc.setdefault((dl, prior, kind), []).append(
                        (
                            e.rmse,
                            e.mae,
                            e.within_tolerance,
                            float(np.sqrt(np.mean(diff * diff))),
                            float(np.mean(np.abs(diff) >= lemma1_quantile(alpha))),
                        )
                    )
    rows = []
    for (dl, prior, kind), vals in acc.items():
        a = np.asarray(vals)
        base = prepared[(dl, prior)][2]
        rows.append(
            {
                "dataset": data.name,
                "n": n,
                "w": w,
                "r": n - w,
                "alpha": alpha,
                "double_logistic": dl,
                "prior": prior,
                "kind": kind,
                "repeats": repeats,
                "rmse": a[:, 0].mean(),
                "rmse_sd": a[:, 0].std(ddof=1) if repeats > 1 else np.nan,
                "mae": a[:, 1].mean(),
                "within_tolerance": a[:, 2].mean(),
                "tolerance": tolerance,
                "baseline_rmse": base.rmse,
                "baseline_within_tolerance": base.within_tolerance,
                "relative_rmse": a[:, 0].mean() / base.rmse,
                "matrix_rms_error": a[:, 3].mean(),
                "share_elements_off": a[:, 4].mean(),
            }
        )
    return rows


def _check_common(
    repeats: int, tolerance: float, clip: Any, dls: Sequence[bool], priors: Sequence[str]
) -> tuple[int, float, Any, list[bool], list[str]]:
    repeats = check_int(repeats, "repeats", minimum=1)
    tolerance = check_positive(tolerance, "tolerance")
    clip = _check_clip_arg(clip)
    dls = [bool(d) for d in dls]
    if not dls:
        raise ParameterError("double_logistic must list at least one of False, True")
    priors = [check_choice(p, "prior", ("sample", "oracle")) for p in priors]
    if not priors:
        raise ParameterError("priors must list at least one of 'sample', 'oracle'")
    return repeats, tolerance, clip, dls, priors


def _check_kinds(kinds: Sequence[str], allowed: dict[str, str], name: str) -> list[str]:
    kinds = [check_choice(k, name, tuple(allowed)) for k in kinds]
    if not kinds:
        raise ParameterError(f"{name}s must list at least one of {', '.join(allowed)}")
    return kinds


def _check_w(w: int, n: int) -> int:
    return check_int(w, "w", minimum=1, maximum=n - 1)


_MAP_DOC = """
    One row per data set, w, α, data space, prior and attacker (``kind``, one of
    :data:`ATTACKERS`), averaged over ``repeats`` draws of T and Δ: ``dataset``, ``n``,
    ``w``, ``r`` = n − w, ``alpha``, ``double_logistic`` (the victim applied eq. 2; the
    attacker then works on Y and maps back with its inverse), ``prior`` (``sample`` or
    ``oracle``), ``kind``, ``repeats``, ``rmse`` (in the [0, 1] data space) and ``rmse_sd``
    over repeats, ``mae``, ``within_tolerance`` (share of values within ``tolerance``),
    ``baseline_rmse`` / ``baseline_within_tolerance`` (the trivial guess: the prior's
    attribute means), ``relative_rmse`` = rmse / baseline_rmse (< 1: the attack learns
    something), ``matrix_rms_error`` (RMS of guess − T̃), ``share_elements_off`` (elements
    off by at least (2 − √2)α). Reconstructions are clipped to ``clip`` (default [0, 1]).
"""


def map_vs_alpha(
    datasets: Sequence[AttackData],
    *,
    alphas: Sequence[float] = PAPER_ALPHAS,
    r: int = 1,
    attackers: Sequence[str] = tuple(ATTACKERS),
    double_logistic: Sequence[bool] = (False, True),
    priors: Sequence[str] = ("sample", "oracle"),
    repeats: int = 20,
    tolerance: float = 0.05,
    clip: tuple[float, float] | None = (0.0, 1.0),
    seed: int = 0,
) -> pd.DataFrame:
    """MAP reconstruction error (eq. 5) against α at w = n − r (default r = 1, the paper's)."""
    repeats, tolerance, clip, dls, priors = _check_common(
        repeats, tolerance, clip, double_logistic, priors
    )
    kinds = _check_kinds(attackers, ATTACKERS, "attacker")
    rows: list[dict[str, Any]] = []
    for data in datasets:
        w = _check_w(data.n - check_int(r, "r", minimum=1), data.n)
        for alpha in alphas:
            rows += _attack_rows(
                data,
                w=w,
                alpha=check_alpha(alpha),
                kinds=kinds,
                dls=dls,
                priors=priors,
                repeats=repeats,
                tolerance=tolerance,
                clip=clip,
                seed=seed,
                tag="map",
            )
    return pd.DataFrame(rows)


map_vs_alpha.__doc__ = (map_vs_alpha.__doc__ or "") + _MAP_DOC


def map_vs_w(
    datasets: Sequence[AttackData],
    *,
    ws: Sequence[int] | None = None,
    alpha: float = 0.1,
    attackers: Sequence[str] = tuple(ATTACKERS),
    double_logistic: Sequence[bool] = (False, True),
    priors: Sequence[str] = ("sample",),
    repeats: int = 20,
    tolerance: float = 0.05,
    clip: tuple[float, float] | None = (0.0, 1.0),
    seed: int = 0,
) -> pd.DataFrame:
    """MAP reconstruction error (eq. 5) against w (r = n − w) at one α (default 0.1).

    ``ws`` default: every w from 1 to n − 1.
    """
    repeats, tolerance, clip, dls, priors = _check_common(
        repeats, tolerance, clip, double_logistic, priors
    )
    kinds = _check_kinds(attackers, ATTACKERS, "attacker")
    a = check_alpha(alpha)
    rows: list[dict[str, Any]] = []
    for data in datasets:
        for w in range(1, data.n) if ws is None else ws:
            rows += _attack_rows(
                data,
                w=_check_w(w, data.n),
                alpha=a,
                kinds=kinds,
                dls=dls,
                priors=priors,
                repeats=repeats,
                tolerance=tolerance,
                clip=clip,
                seed=seed,
                tag="map",
            )
    return pd.DataFrame(rows)


map_vs_w.__doc__ = (map_vs_w.__doc__ or "") + _MAP_DOC


# --------------------------------------------------------------------------------------------
# Collusion and known input-output (section 3.1, section 5)
# --------------------------------------------------------------------------------------------


def collusion_vs_alpha(
    datasets: Sequence[AttackData],
    *,
    alphas: Sequence[float] = PAPER_ALPHAS,
    r: int = 1,
    scenarios: Sequence[str] = tuple(SCENARIOS),
    double_logistic: Sequence[bool] = (True,),
    repeats: int = 20,
    tolerance: float = 0.05,
    clip: tuple[float, float] | None = (0.0, 1.0),
    seed: int = 0,
) -> pd.DataFrame:
    """A server colluding with one participant c, against α (section 3.1).

    Scenarios (:data:`SCENARIOS`): ``common``, the prior schemes, where every participant
    uses the public T, so the colluder's matrix *is* the victim's and the server runs eq. (5)
    with it; against RMP, where the colluder reveals only T_c = T + Δ_c, the server uses
    T_c (``colluder``: its error on each element of T̃ is Lemma 1's D), or knows α and treats
    the error as noise (``colluder-aware``, variance 2α²/3; ``public-aware``, the public T,
    variance α²/3: the better guess). Same w, data and prior (the attacker's sample) in every
    scenario; the same draws of T, Δ_v, Δ_c in a repeat. Columns as :func:`map_vs_alpha`,
    with ``kind`` the scenario; ``share_elements_off`` is Lemma 1's Pr[|D| >= (2 − √2)α]
    (1/2) for ``colluder*`` and 1 − (2 − √2) ≈ 0.414 for ``public-aware``.
    """
    repeats, tolerance, clip, dls, _ = _check_common(
        repeats, tolerance, clip, double_logistic, ("sample",)
    )
    kinds = _check_kinds(scenarios, SCENARIOS, "scenario")
    rows: list[dict[str, Any]] = []
    for data in datasets:
        w = _check_w(data.n - check_int(r, "r", minimum=1), data.n)
        for alpha in alphas:
            a = check_alpha(alpha)
            rows += _attack_rows(
                data,
                w=w,
                alpha=a,
                kinds=kinds,
                dls=dls,
                priors=("sample",),
                repeats=repeats,
                tolerance=tolerance,
                clip=clip,
                seed=seed,
                tag="collusion",
            )
    return pd.DataFrame(rows)


def known_io_vs_k(
    datasets: Sequence[AttackData],
    *,
    ks: Sequence[int] = (0, 1, 2, 4, 6, 7, 8, 12, 16),
    alpha: float = 0.2,
    r: int = 1,
    double_logistic: bool = True,
    repeats: int = 20,
    tolerance: float = 0.05,
    clip: tuple[float, float] | None = (0.0, 1.0),
    seed: int = 0,
) -> pd.DataFrame:
    """The known input-output attack: the server knows k of the victim's records and their
    outputs (a colluder, or public records), estimates T̃ by least squares
    (:func:`~privad.rmp.attacks.known_io_attack`, corrected from the public T) and
    reconstructs the victim's *other* records with eq. (5).

    With k >= n independent known records T̂ = T̃ exactly; with k < n the part of each row of
    Δ orthogonal to the known records stays unknown, and the attacker (knowing α) treats it
    as noise: matrix_var = (α²/3) tr(Q M)/tr(M), with Q the projection off the span of the
    known records and M = Σ_y + ȳȳ' (our reading). One row per data set and k: ``dataset``,
    ``n``, ``w``, ``alpha``, ``k``, ``rank`` (of the known records), ``repeats``,
    ``matrix_rms_error`` (RMS of T̂ − T̃), ``rmse``, ``rmse_sd``, ``within_tolerance``,
    ``baseline_rmse``, ``relative_rmse``.
    """
    repeats = check_int(repeats, "repeats", minimum=1)
    tolerance = check_positive(tolerance, "tolerance")
    clip = _check_clip_arg(clip)
    a = check_alpha(alpha)
    dl = bool(double_logistic)
    rows: list[dict[str, Any]] = []
    for data in datasets:
        n = data.n
        w = _check_w(n - check_int(r, "r", minimum=1), n)
        Yv_all, Yk = _space(data.victim, dl), _space(data.known, dl)
        prior = gaussian_prior(Yk)
        m2 = prior.cov + np.outer(prior.mean, prior.mean)
        for k in ks:
            k = check_int(k, "k", minimum=0, maximum=data.victim.shape[1] - 2)
            vals = []
            ranks = []
            for rep in range(repeats):
                rg = as_randomness(_seed(seed, "known-io", data.name, w, a, k, rep))
                mats = _matrices(rg, w, n, a)
                order = rg.permutation(data.victim.shape[1])
                known_idx, other_idx = order[:k], order[k:]
                Yv = Yv_all[:, other_idx]
                Xv = data.victim[:, other_idx]
                if k == 0:
                    T_hat, rank = mats["public"], 0
                    Q = np.eye(n)
                else:
                    Ykn = Yv_all[:, known_idx]
                    T_hat = known_io_attack(Ykn, mats["exact"] @ Ykn, mats["public"])
                    rank = int(np.linalg.matrix_rank(Ykn))
                    P = Ykn @ np.linalg.pinv(Ykn)
                    Q = np.eye(n) - P
                var = (a * a / 3.0) * float(np.trace(Q @ m2) / np.trace(m2))
                X_hat = reconstruct(
                    mats["exact"] @ Yv,
                    T_hat,
                    prior,
                    matrix_var=max(var, 0.0),
                    double_logistic_applied=dl,
                    clip=clip,
                )
                e = reconstruction_error(Xv, X_hat, tolerance=tolerance)
                diff = T_hat - mats["exact"]
                vals.append((float(np.sqrt(np.mean(diff * diff))), e.rmse, e.within_tolerance))
                ranks.append(rank)
            v = np.asarray(vals)
            guess = np.repeat(data.known.mean(axis=1)[:, None], data.victim.shape[1], axis=1)
            base = reconstruction_error(data.victim, guess, tolerance=tolerance)
            rows.append(
                {
                    "dataset": data.name,
                    "n": n,
                    "w": w,
                    "alpha": a,
                    "double_logistic": dl,
                    "k": k,
                    "rank": int(np.median(ranks)),
                    "repeats": repeats,
                    "matrix_rms_error": v[:, 0].mean(),
                    "rmse": v[:, 1].mean(),
                    "rmse_sd": v[:, 1].std(ddof=1) if repeats > 1 else np.nan,
                    "within_tolerance": v[:, 2].mean(),
                    "baseline_rmse": base.rmse,
                    "relative_rmse": v[:, 1].mean() / base.rmse,
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# ICA (section 5.2)
# --------------------------------------------------------------------------------------------


def _sources(kind: str, n: int, m: int, r: Randomness) -> np.ndarray:
    """n independent non-Gaussian attributes in [0, 1] (records as columns)."""
    if kind == "uniform":
        return np.asarray(r.uniform(0.0, 1.0, size=(n, m)), dtype=np.float64)
    # Laplace: exponential magnitude, random sign, then min-max scaled per attribute
    mag = np.asarray(r.exponential(1.0, size=(n, m)), dtype=np.float64)
    sign = np.where(np.asarray(r.random(size=(n, m))) < 0.5, -1.0, 1.0)
    L = mag * sign
    lo, hi = L.min(axis=1, keepdims=True), L.max(axis=1, keepdims=True)
    return (L - lo) / (hi - lo)


def _regime(w: int, n: int) -> str:
    if w >= n:
        return "w >= n (not RMP)"
    if w <= (n + 1) / 2:
        return "w <= (n+1)/2"
    return "(n+1)/2 < w < n"


def ica_vs_w(
    *,
    n: int = 8,
    ws: Sequence[int] = (2, 3, 4, 5, 6, 7, 8, 10, 12),
    sources: Sequence[str] = ("uniform", "laplace"),
    m: int = 2000,
    alpha: float = 0.1,
    double_logistic: bool = True,
    repeats: int = 10,
    recovered_at: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """FastICA on Z = T̃ Y with n independent non-Gaussian attributes, against w (section 5.2).

    Per repeat: n independent attributes (``uniform`` U(0, 1), or ``laplace`` min-max scaled;
    ICA's assumptions need independence), Y = eq. 2 of them when ``double_logistic``, a fresh
    T (U(0, 1), w x n, drawn directly so that w >= n is possible) and T̃ = T + U(−α, α), then
    :func:`~privad.rmp.attacks.ica_attack` with min(w, n) components, matched to the true
    attributes X (Hungarian on |corr|). One row per source and w: ``source``, ``n``, ``w``,
    ``regime``, ``alpha``, ``double_logistic``, ``m``, ``repeats``, ``ica_mean_abs_corr`` (mean
    |corr| of matched pairs, averaged over repeats) and ``ica_sd``, ``ica_min_abs_corr``,
    ``recovered`` (mean number of attributes matched with |corr| >= ``recovered_at``),
    ``raw_mean_abs_corr`` (the same matching on the rows of Z itself: no attack),
    ``filter_bound_mean`` / ``filter_bound_max`` (over the n attributes, the best |corr| any
    linear filter of Z reaches: an oracle bound, 1 = separable), ``filter_bound_matched``
    (that bound averaged over the attributes ICA was matched to: ICA's ceiling),
    ``converged_share``.
    """
    n = check_int(n, "n", minimum=2)
    m = check_int(m, "m", minimum=10)
    a = check_alpha(alpha)
    repeats = check_int(repeats, "repeats", minimum=1)
    thr = check_positive(recovered_at, "recovered_at")
    dl = bool(double_logistic)
    kinds = [check_choice(s, "source", ("uniform", "laplace")) for s in sources]
    rows = []
    for kind in kinds:
        for w in ws:
            w = check_int(w, "w", minimum=1)
            acc = []
            for rep in range(repeats):
                rg = as_randomness(_seed(seed, "ica", kind, n, w, m, a, rep))
                X = _sources(kind, n, m, rg)
                Y = _space(X, dl)
                Tt = _matrices(rg, w, n, a)["exact"]
                Z = Tt @ Y
                res = ica_attack(Z, min(w, n), rng=rg)
                match = match_components(res.sources, X)
                raw = match_components(Z, X)
                bound = linear_filter_correlation(Z, X)
                acc.append(
                    (
                        match.mean_abs_corr,
                        float(match.abs_corr.min()),
                        float(np.sum(match.abs_corr >= thr)),
                        raw.mean_abs_corr,
                        float(bound.mean()),
                        float(bound.max()),
                        float(res.converged),
                        float(bound[match.attribute].mean()),
                    )
                )
            v = np.asarray(acc)
            rows.append(
                {
                    "source": kind,
                    "n": n,
                    "w": w,
                    "regime": _regime(w, n),
                    "alpha": a,
                    "double_logistic": dl,
                    "m": m,
                    "repeats": repeats,
                    "ica_mean_abs_corr": v[:, 0].mean(),
                    "ica_sd": v[:, 0].std(ddof=1) if repeats > 1 else np.nan,
                    "ica_min_abs_corr": v[:, 1].mean(),
                    "recovered": v[:, 2].mean(),
                    "recovered_at": thr,
                    "raw_mean_abs_corr": v[:, 3].mean(),
                    "filter_bound_mean": v[:, 4].mean(),
                    "filter_bound_max": v[:, 5].mean(),
                    "filter_bound_matched": v[:, 7].mean(),
                    "converged_share": v[:, 6].mean(),
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Lemma 1
# --------------------------------------------------------------------------------------------

LEMMA1_FRACTIONS: tuple[float, ...] = (0.0, 0.25, 0.5, 2.0 - math.sqrt(2.0), 1.0, 1.5, 1.9, 2.0)
"""d/α checked by :func:`lemma1_table` ((2 − √2) is the paper's 50 % point)."""


def lemma1_table(
    *,
    alphas: Sequence[float] = PAPER_ALPHAS,
    d_over_alpha: Sequence[float] = LEMMA1_FRACTIONS,
    samples: int = 1_000_000,
    false_alarm: float = 1e-6,
    seed: int = 0,
) -> pd.DataFrame:
    """Lemma 1 against ``samples`` draws of D = A − B per (α, d), A, B ~ U(−α, α).

    One row per α and d = (d/α)·α: ``alpha``, ``d``, ``d_over_alpha``, ``samples``,
    ``count`` (|D| >= d), ``empirical``, ``lemma1`` ((2α − d)²/4α²), ``p_value`` (two-sided
    exact binomial test), ``consistent`` (p >= ``false_alarm``, default 10⁻⁶); the power
    check on the *same* draws: ``p_value_wrong`` against the wrong formula (α − d)/α (the
    one for a single uniform) and ``wrong_rejected``; and the attacker who guesses the public
    T itself (our addition): ``centre_empirical`` from separate draws of |Δ|,
    ``centre_probability`` = max(0, 1 − d/α), ``centre_p_value``, ``centre_consistent``.
    """
    samples = check_int(samples, "samples", minimum=1)
    rows = []
    for alpha in alphas:
        a = check_positive(alpha, "alpha")
        rg_lemma, rg_centre = as_randomness(_seed(seed, "lemma1", a)).spawn(2)
        D = np.abs(sample_element_errors(a, samples, guess="random", rng=rg_lemma))
        C = np.abs(sample_element_errors(a, samples, guess="centre", rng=rg_centre))
        for frac in d_over_alpha:
            d = min(float(frac) * a, 2.0 * a)
            p_lemma = lemma1_probability(a, d)
            p_centre = centre_guess_probability(a, d)
            count = int(np.count_nonzero(D >= d))
            c_count = int(np.count_nonzero(C >= d))
            pv = binomial_p_value(count, samples, p_lemma)
            pw = binomial_p_value(count, samples, p_centre)
            pc = binomial_p_value(c_count, samples, p_centre)
            rows.append(
                {
                    "alpha": a,
                    "d": d,
                    "d_over_alpha": float(frac),
                    "samples": samples,
                    "count": count,
                    "empirical": count / samples,
                    "lemma1": p_lemma,
                    "p_value": pv,
                    "consistent": pv >= false_alarm,
                    "p_value_wrong": pw,
                    "wrong_rejected": pw < false_alarm,
                    "centre_empirical": c_count / samples,
                    "centre_probability": p_centre,
                    "centre_p_value": pc,
                    "centre_consistent": pc >= false_alarm,
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------

_DL_STYLE = {True: "-", False: "--"}
_COLOURS = {
    "exact": "C0",
    "public": "C3",
    "public-aware": "C2",
    "common": "C0",
    "colluder": "C3",
    "colluder-aware": "C1",
}


def _panels(table: pd.DataFrame, width: float = 11.0, height: float = 4.0) -> tuple[Any, list]:
    from privad.experiments.report import new_figure

    names = list(dict.fromkeys(table["dataset"])) if len(table) else ["(empty)"]
    fig = new_figure(width, height)
    axes = [fig.add_subplot(1, len(names), k + 1) for k in range(len(names))]
    return fig, list(zip(names, axes, strict=True))


def _draw_error(
    table: pd.DataFrame, x: str, xlabel: str, title: str, labels: dict[str, str]
) -> Any:
    fig, panels = _panels(table)
    t = table[table["prior"] == "sample"] if "prior" in table else table
    for name, ax in panels:
        part = t[t["dataset"] == name]
        for (kind, dl), g in part.groupby(["kind", "double_logistic"], sort=False):
            g = g.sort_values(x)
            space = " + double logistic" if dl else ", no double logistic"
            label = f"{labels.get(kind, kind)}{space}"
            ax.plot(
                g[x],
                g["relative_rmse"],
                _DL_STYLE[bool(dl)],
                marker="o",
                ms=3,
                color=_COLOURS.get(kind, "grey"),
                label=label,
            )
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.text(
            ax.get_xlim()[0],
            1.0,
            " trivial guess (attribute means)",
            fontsize=7,
            color="grey",
            va="bottom",
        )
        ax.set_xlabel(xlabel)
        ax.set_ylabel("RMSE / RMSE of the trivial guess")
        ax.set_ylim(bottom=0.0)
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
    if panels:
        panels[0][1].legend(fontsize=6.5)
    fig.suptitle(title, fontsize=10)
    return fig


def draw_map_vs_alpha(table: pd.DataFrame) -> Any:
    """Relative RMSE of the MAP attackers against α (sample prior); solid: with the double
    logistic, dashed: without."""
    w = int(table["w"].iloc[0]) if len(table) else 0
    return _draw_error(
        table,
        "alpha",
        "α (noise on the victim's matrix, eq. 1)",
        f"MAP reconstruction (eq. 5) against α, r = n − w = "
        f"{int(table['r'].iloc[0]) if len(table) else 0} (w = {w})",
        ATTACKERS,
    )


def draw_map_vs_w(table: pd.DataFrame) -> Any:
    """Relative RMSE of the MAP attackers against w (sample prior)."""
    a = float(table["alpha"].iloc[0]) if len(table) else 0.0
    return _draw_error(
        table,
        "w",
        "w (rows of T; r = n − w)",
        f"MAP reconstruction (eq. 5) against w, α = {a:g}",
        ATTACKERS,
    )


def draw_collusion(table: pd.DataFrame) -> Any:
    """Relative RMSE of the victim's records under collusion, per scenario, against α."""
    return _draw_error(
        table, "alpha", "α", "A server colluding with one participant: common T vs RMP", SCENARIOS
    )


def draw_known_io(table: pd.DataFrame) -> Any:
    """Matrix error and record RMSE of the known input-output attack against k."""
    from privad.experiments.report import new_figure

    fig = new_figure(10.0, 3.8)
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for name, g in table.groupby("dataset", sort=False):
        g = g.sort_values("k")
        ax1.plot(g["k"], g["matrix_rms_error"], marker="o", ms=3, label=name)
        ax2.plot(g["k"], g["relative_rmse"], marker="o", ms=3, label=name)
    if len(table):
        n = int(table["n"].iloc[0])
        for ax in (ax1, ax2):
            ax.axvline(n, color="grey", ls=":", lw=0.8)
            ax.text(n, ax.get_ylim()[1] * 0.9, " k = n", fontsize=7, color="grey")
    ax1.set_xlabel("k known input-output records")
    ax1.set_ylabel("RMS error of T̂ − T̃")
    ax2.set_xlabel("k known input-output records")
    ax2.set_ylabel("RMSE / trivial guess (other records)")
    ax2.set_ylim(bottom=0.0)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    a = float(table["alpha"].iloc[0]) if len(table) else 0.0
    fig.suptitle(f"Known input-output attack (α = {a:g}): least squares from k pairs", fontsize=10)
    return fig


def draw_ica_vs_w(table: pd.DataFrame) -> Any:
    """Mean matched |corr| of FastICA against w, with the no-attack and oracle-filter lines."""
    from privad.experiments.report import new_figure

    kinds = list(dict.fromkeys(table["source"])) if len(table) else ["(empty)"]
    fig = new_figure(10.0, 3.8)
    for k, kind in enumerate(kinds):
        ax = fig.add_subplot(1, len(kinds), k + 1)
        g = table[table["source"] == kind].sort_values("w")
        ax.plot(g["w"], g["ica_mean_abs_corr"], marker="o", ms=3, label="FastICA (matched)")
        ax.plot(
            g["w"], g["raw_mean_abs_corr"], marker="s", ms=3, ls="--", label="rows of Z (no attack)"
        )
        ax.plot(
            g["w"],
            g["filter_bound_matched"],
            marker="^",
            ms=3,
            ls=":",
            label="best linear filter, same attributes (oracle)",
        )
        ax.plot(
            g["w"],
            g["filter_bound_mean"],
            marker="v",
            ms=3,
            ls=":",
            color="grey",
            label="best linear filter, all n attributes (oracle)",
        )
        if len(g):
            n = int(g["n"].iloc[0])
            ax.axvline(n - 0.5, color="grey", lw=0.8)
            ax.axvline((n + 1) / 2, color="grey", lw=0.8, ls=":")
            ax.text(n - 0.45, 0.05, "w ≥ n", fontsize=7, color="grey")
            ax.text((n + 1) / 2, 0.12, " (n+1)/2", fontsize=7, color="grey")
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel("w")
        ax.set_ylabel("mean |corr| with the true attributes")
        ax.set_title(f"{kind} attributes", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("ICA attack (section 5.2): w ≥ n vs w < n", fontsize=10)
    return fig


def draw_lemma1(table: pd.DataFrame) -> Any:
    """Pr[|D| >= d] against d/α: Lemma 1's curve, the centre guess's line, empirical points."""
    from privad.experiments.report import new_figure

    fig = new_figure(6.5, 4.0)
    ax = fig.add_subplot(1, 1, 1)
    u = np.linspace(0.0, 2.0, 201)
    ax.plot(u, (2.0 - u) ** 2 / 4.0, color="C0", label="Lemma 1: (2α − d)²/4α² (guess T + U)")
    ax.plot(
        u,
        np.maximum(0.0, 1.0 - u),
        color="C2",
        ls="--",
        label="guess T: max(0, 1 − d/α) (our addition)",
    )
    if len(table):
        ax.scatter(
            table["d_over_alpha"],
            table["empirical"],
            color="C0",
            s=14,
            zorder=3,
            label="empirical, all α",
        )
        ax.scatter(
            table["d_over_alpha"], table["centre_empirical"], color="C2", s=14, marker="x", zorder=3
        )
    q = 2.0 - math.sqrt(2.0)
    ax.axvline(q, color="grey", lw=0.8, ls=":")
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.text(q, 0.9, " (2 − √2)", fontsize=7, color="grey")
    ax.set_xlabel("d / α")
    ax.set_ylabel("Pr[attacker's error on an element ≥ d]")
    ax.set_title("Lemma 1, checked empirically", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------------------------------------
# The whole evaluation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivacySettings:
    """What :func:`privacy_evaluation` runs (full vs ``quick``)."""

    quick: bool
    seed: int
    victim: int
    known: int
    repeats: int
    alphas: tuple[float, ...]
    w_alpha: float
    ica_ws: tuple[int, ...]
    ica_m: int
    ica_repeats: int
    known_io_ks: tuple[int, ...]
    known_io_alpha: float
    lemma1_samples: int


def privacy_settings(*, quick: bool = False, seed: int = 0) -> PrivacySettings:
    """The full run (20 repeats, 10⁶ Lemma-1 draws per (α, d)) or the quick one (tests)."""
    seed = check_int(seed, "seed", minimum=0)
    if quick:
        return PrivacySettings(
            quick=True,
            seed=seed,
            victim=300,
            known=300,
            repeats=2,
            alphas=(0.01, 0.2, 0.6),
            w_alpha=0.1,
            ica_ws=(3, 7, 8),
            ica_m=1000,
            ica_repeats=1,
            known_io_ks=(0, 4, 8),
            known_io_alpha=0.2,
            lemma1_samples=100_000,
        )
    return PrivacySettings(
        quick=False,
        seed=seed,
        victim=1000,
        known=1000,
        repeats=20,
        alphas=PAPER_ALPHAS,
        w_alpha=0.1,
        ica_ws=(2, 3, 4, 5, 6, 7, 8, 10, 12),
        ica_m=2000,
        ica_repeats=10,
        known_io_ks=(0, 1, 2, 4, 6, 7, 8, 12, 16),
        known_io_alpha=0.2,
        lemma1_samples=1_000_000,
    )


TABLES: tuple[str, ...] = ("map_alpha", "map_w", "ica_w", "collusion", "known_io", "lemma1")
"""The keys of :func:`privacy_evaluation`'s result, in order."""


def privacy_evaluation(
    *, seed: int = 0, quick: bool = False, progress: Progress = None
) -> dict[str, pd.DataFrame]:
    """Every table of the evaluation: keys :data:`TABLES`.

    ``progress(step, done, total)`` is called before each table and at the end.
    """
    cfg = privacy_settings(quick=quick, seed=seed)
    total = len(TABLES) + 1

    def say(text: str, done: int) -> None:
        if progress is not None:
            progress(text, done, total)

    say("data", 0)
    data = attack_datasets(seed=cfg.seed, victim=cfg.victim, known=cfg.known)
    common = {"repeats": cfg.repeats, "seed": cfg.seed}
    out: dict[str, pd.DataFrame] = {}
    say("MAP against alpha", 1)
    out["map_alpha"] = map_vs_alpha(data, alphas=cfg.alphas, **common)
    say("MAP against w", 2)
    out["map_w"] = map_vs_w(data, alpha=cfg.w_alpha, **common)
    say("ICA against w", 3)
    out["ica_w"] = ica_vs_w(ws=cfg.ica_ws, m=cfg.ica_m, repeats=cfg.ica_repeats, seed=cfg.seed)
    say("collusion", 4)
    out["collusion"] = collusion_vs_alpha(data, alphas=cfg.alphas, **common)
    say("known input-output", 5)
    out["known_io"] = known_io_vs_k(data, ks=cfg.known_io_ks, alpha=cfg.known_io_alpha, **common)
    say("Lemma 1", 6)
    out["lemma1"] = lemma1_table(alphas=cfg.alphas, samples=cfg.lemma1_samples, seed=cfg.seed)
    say("done", total)
    return out


def _wide(table: pd.DataFrame, x: str, kinds: dict[str, str]) -> pd.DataFrame:
    """A compact view: relative RMSE (sample prior) per data set, data space and kind."""
    t = table[table["prior"] == "sample"] if "prior" in table else table
    wide = t.pivot_table(
        index=["dataset", "double_logistic", "kind"], columns=x, values="relative_rmse", sort=False
    ).reset_index()
    wide.columns = [c if isinstance(c, str) else f"{x}={c:g}" for c in wide.columns]
    return wide


def reproduce_privacy(
    out_dir: str | Path,
    *,
    seed: int = 0,
    quick: bool = False,
    progress: Progress = None,
    page: str | None = "privacy.html",
) -> dict[str, Any]:
    """Run :func:`privacy_evaluation`; write CSVs, PNGs and a page into ``out_dir``.

    Files: ``privacy_<table>.csv`` and ``privacy_<table>.png`` for each key of
    :data:`TABLES` and, unless ``page`` is None, an HTML page of that name (default
    ``privacy.html``, so that it never replaces another reproduction's ``index.html`` in the
    same folder). All written atomically. Returns ``{"tables": {key: DataFrame}, "files":
    [Path, ...], "sections": [Section, ...], "page": Path | None, "elapsed_s": float}``: a
    caller with its own :class:`~privad.experiments.report.Report` on the same folder can add
    the sections to it (their figure and CSV links are relative to ``out_dir``).
    """
    from privad import __version__
    from privad.experiments.report import Report, Section

    t0 = time.perf_counter()
    cfg = privacy_settings(quick=quick, seed=seed)
    tables = privacy_evaluation(seed=cfg.seed, quick=cfg.quick, progress=progress)
    elapsed = time.perf_counter() - t0
    out = Path(out_dir).expanduser()
    report = Report(out, "RMP (Erfani et al.): privacy evaluation of section 5")
    drawers = {
        "map_alpha": draw_map_vs_alpha,
        "map_w": draw_map_vs_w,
        "ica_w": draw_ica_vs_w,
        "collusion": draw_collusion,
        "known_io": draw_known_io,
        "lemma1": draw_lemma1,
    }
    for key in TABLES:
        report.write_csv(f"privacy_{key}.csv", tables[key])
        report.save_figure(f"privacy_{key}.png", drawers[key](tables[key]))
    sections = _sections(tables, cfg, Section)
    for s in sections:
        report.add(s)
    mode = "quick (small samples; for tests)" if cfg.quick else "full"
    report.intro = [
        f"privad {__version__}. Mode: {mode}; seed {cfg.seed}; {cfg.repeats} draws of T and Δ "
        f"per setting; victim {cfg.victim} records, attacker's sample {cfg.known}; computed in "
        f"{elapsed:.1f} s.",
        "Paper: Erfani, Law, Karunasekera, Leckie, Palaniswami, 'Privacy-preserving "
        "collaborative anomaly detection for participatory sensing' (PAKDD 2014), section 5. "
        "The paper argues privacy analytically; these are measurements. Discussion: "
        "docs/rmp_privacy.md.",
    ]
    path = report.write_html(page) if page is not None else None
    return {
        "tables": tables,
        "files": list(report.written),
        "sections": sections,
        "page": path,
        "elapsed_s": time.perf_counter() - t0,
    }


def _dl_effect(table: pd.DataFrame) -> pd.DataFrame:
    """Exact-T̃ attacker, sample prior: RMSE and share within tolerance without/with eq. 2,
    averaged over α, per data set."""
    t = table[(table["kind"] == "exact") & (table["prior"] == "sample")]
    return (
        t.groupby(["dataset", "double_logistic"], sort=False)[["rmse", "within_tolerance"]]
        .mean()
        .reset_index()
    )


def _dl_effect_text(table: pd.DataFrame) -> Any:
    from privad.experiments.report import Section

    e = _dl_effect(table)
    parts = []
    for name, g in e.groupby("dataset", sort=False):
        g = g.set_index("double_logistic")
        if False in g.index and True in g.index:
            parts.append(
                f"{name}: RMSE {g.loc[False, 'rmse']:.4f} without, {g.loc[True, 'rmse']:.4f} "
                f"with the double logistic ({g.loc[False, 'within_tolerance']:.1%} and "
                f"{g.loc[True, 'within_tolerance']:.1%} of values within the tolerance)"
            )
    return Section(
        "Does the double logistic stop eq. (5)?",
        text=[
            "Section 5.1 argues that the double logistic (eq. 2) makes the data non-Gaussian and "
            "so hampers MAP estimation. Measured against eq. 5 with the exact T̃ (the "
            "attacker works on Y = eq. 2 of its own sample, maps back with the inverse and "
            "clips to [0, 1]), averaged over α: " + "; ".join(parts) + ". Eq. 5 is the best "
            "linear estimator given the mean and covariance, whatever the distribution, and "
            "eq. 2 is a smooth monotone map close to the identity on [0, 1], so the attack "
            "loses little.",
        ],
        tables=[("Exact-T̃ attacker, sample prior, mean over α", e)],
    )


def _sections(tables: dict[str, pd.DataFrame], cfg: PrivacySettings, Section: Any) -> list[Any]:
    lemma = tables["lemma1"]
    half = lemma[np.isclose(lemma["d_over_alpha"], 2.0 - math.sqrt(2.0))]
    ica = tables["ica_w"]
    show_ica = ica[
        [
            "source",
            "w",
            "regime",
            "ica_mean_abs_corr",
            "recovered",
            "raw_mean_abs_corr",
            "filter_bound_matched",
            "filter_bound_mean",
            "converged_share",
        ]
    ]
    kio = tables["known_io"][
        ["dataset", "k", "rank", "matrix_rms_error", "rmse", "relative_rmse", "within_tolerance"]
    ]
    return [_dl_effect_text(tables["map_alpha"])] + [
        Section(
            "MAP estimation (eq. 5) against α",
            text=[
                "w = n − 1 (the paper's r = 1), n = 8. Attackers: exact = eq. 5 with the "
                "victim's T̃ (section 5.1's worst case); public = eq. 5 with the public T; "
                "public-aware = public T, treating T̃ − T as noise of variance α²/3 (our "
                "tractable reading of eq. 6). Prior from the attacker's own sample; the "
                "oracle prior is in the CSV. Values: RMSE in the [0, 1] data space divided by "
                "the RMSE of the trivial guess (attribute means); below 1 the attack learns "
                "something. Reconstructions clipped to [0, 1] (the range is public).",
            ],
            tables=[
                ("Relative RMSE (sample prior)", _wide(tables["map_alpha"], "alpha", ATTACKERS))
            ],
            figures=[
                (
                    "privacy_map_alpha.png",
                    "Relative RMSE against α; solid: double logistic applied, dashed: not",
                )
            ],
            files=[("privacy_map_alpha.csv", "all columns, both priors")],
        ),
        Section(
            "MAP estimation (eq. 5) against w",
            text=[f"α = {cfg.w_alpha:g}; w from 1 to n − 1 (r = n − w)."],
            tables=[("Relative RMSE (sample prior)", _wide(tables["map_w"], "w", ATTACKERS))],
            figures=[("privacy_map_w.png", "Relative RMSE against w")],
            files=[("privacy_map_w.csv", "all columns")],
        ),
        Section(
            "ICA (section 5.2): w ≥ n versus w < n",
            text=[
                "n = 8 independent non-Gaussian attributes (ICA's assumptions need "
                "independence), double logistic applied, T̃ = T + U(−α, α) with α = 0.1; "
                "FastICA with min(w, n) components, matched to the attributes by the "
                "Hungarian assignment on |corr|. recovered = attributes matched with "
                "|corr| ≥ 0.95. raw = the same matching on the rows of Z (no attack); "
                "filter bound = the best |corr| any linear filter of Z reaches (an oracle).",
            ],
            tables=[("ICA against w", show_ica)],
            figures=[("privacy_ica_w.png", "Mean matched |corr| against w")],
            files=[("privacy_ica_w.csv", "all columns")],
        ),
        Section(
            "Collusion: common T (prior schemes) versus RMP",
            text=[
                "A server colluding with one participant c. Common T: the colluder's matrix "
                "is the victim's; RMP: the colluder reveals T_c = T + Δ_c, the server uses it "
                "(its per-element error is Lemma 1's D) or, knowing α, treats the error as "
                "noise; the public T is the better guess. w = n − 1, double logistic applied.",
            ],
            tables=[("Relative RMSE", _wide(tables["collusion"], "alpha", SCENARIOS))],
            figures=[("privacy_collusion.png", "Relative RMSE of the victim's records")],
            files=[("privacy_collusion.csv", "all columns")],
        ),
        Section(
            "Known input-output attack",
            text=[
                f"α = {cfg.known_io_alpha:g}, w = n − 1. The server knows k of the victim's "
                "records and their outputs, estimates T̃ by least squares corrected from the "
                "public T, and reconstructs the other records with eq. 5. k ≥ n independent "
                "records give T̂ = T̃ exactly; the records stay underdetermined (w < n).",
            ],
            tables=[("Against k", kio)],
            figures=[("privacy_known_io.png", "Matrix error and relative RMSE against k")],
            files=[("privacy_known_io.csv", "all columns")],
        ),
        Section(
            "Lemma 1",
            text=[
                f"{cfg.lemma1_samples:,} draws of D = A − B per α (A, B ~ U(−α, α), through "
                "privad.noise); two-sided exact binomial test at 10⁻⁶; the same draws tested "
                "against the wrong formula (α − d)/α (power check). At d = (2 − √2)α the "
                "empirical share is "
                + ", ".join(f"{v:.4f}" for v in half["empirical"])
                + " (paper: 50 %). The attacker who guesses the public T itself errs less: "
                "Pr[|Δ| ≥ d] = 1 − d/α (median α/2).",
            ],
            tables=[
                (
                    "Lemma 1",
                    lemma[
                        [
                            "alpha",
                            "d",
                            "empirical",
                            "lemma1",
                            "p_value",
                            "consistent",
                            "p_value_wrong",
                            "wrong_rejected",
                            "centre_empirical",
                            "centre_probability",
                        ]
                    ],
                )
            ],
            figures=[("privacy_lemma1.png", "Pr[|D| ≥ d] against d/α")],
            files=[("privacy_lemma1.csv", "all columns")],
        ),
    ]
