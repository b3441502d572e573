"""RMP's attacks measured: MAP estimation (5.1), collusion, known input-output, ICA (5.2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privad.errors import ParameterError
from privad.experiments.rmp_privacy.data import (
    ATTACKERS,
    GUESS_OF,
    PAPER_ALPHAS,
    SCENARIOS,
    AttackData,
    _seed,
)
from privad.noise import Randomness, as_randomness
from privad.rmp.attacks import (
    gaussian_prior,
    ica_attack,
    known_io_attack,
    lemma1_quantile,
    linear_filter_correlation,
    match_components,
    matrix_error_variance,
    oracle_prior,
    reconstruct,
    reconstruction_error,
)
from privad.rmp.perturbation import check_alpha, double_logistic
from privad.validation import check_choice, check_int, check_positive

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


def _sd(values: np.ndarray) -> float:
    """The sample standard deviation over the repeats; NaN for one repeat."""
    return values.std(ddof=1) if len(values) > 1 else np.nan


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
                "rmse_sd": _sd(a[:, 0]),
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
) -> dict[str, Any]:
    """The arguments every grid of :func:`_attack_rows` shares, checked, by its names."""
    repeats = check_int(repeats, "repeats", minimum=1)
    tolerance = check_positive(tolerance, "tolerance")
    clip = _check_clip_arg(clip)
    dls = [bool(d) for d in dls]
    if not dls:
        raise ParameterError("double_logistic must list at least one of False, True")
    priors = [check_choice(p, "prior", ("sample", "oracle")) for p in priors]
    if not priors:
        raise ParameterError("priors must list at least one of 'sample', 'oracle'")
    return {"repeats": repeats, "tolerance": tolerance, "clip": clip, "dls": dls, "priors": priors}


def _check_kinds(kinds: Sequence[str], allowed: dict[str, str], name: str) -> list[str]:
    kinds = [check_choice(k, name, tuple(allowed)) for k in kinds]
    if not kinds:
        raise ParameterError(f"{name}s must list at least one of {', '.join(allowed)}")
    return kinds


def _check_w(w: int, n: int) -> int:
    return check_int(w, "w", minimum=1, maximum=n - 1)


def _over_alpha(r: int, alphas: Sequence[float]) -> Callable[[AttackData], Iterator]:
    """The grid points of a sweep over α at w = n − r: ``(w, α)`` for each data set."""
    r = check_int(r, "r", minimum=1)
    checked = [check_alpha(a) for a in alphas]

    def points(data: AttackData) -> Iterator[tuple[int, float]]:
        w = _check_w(data.n - r, data.n)
        yield from ((w, a) for a in checked)

    return points


def _grid(
    datasets: Sequence[AttackData],
    points: Callable[[AttackData], Iterator[tuple[int, float]]],
    kinds: list[str],
    common: dict[str, Any],
    **attack: Any,
) -> pd.DataFrame:
    """One frame of :func:`_attack_rows` over every data set and its ``(w, α)`` points, for
    ``kinds`` and the ``common`` arguments of :func:`_check_common`."""
    rows = [
        row
        for data in datasets
        for w, alpha in points(data)
        for row in _attack_rows(data, w=w, alpha=alpha, kinds=kinds, **common, **attack)
    ]
    return pd.DataFrame(rows)


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
    common = _check_common(repeats, tolerance, clip, double_logistic, priors)
    kinds = _check_kinds(attackers, ATTACKERS, "attacker")
    return _grid(datasets, _over_alpha(r, alphas), kinds, common, seed=seed, tag="map")


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
    common = _check_common(repeats, tolerance, clip, double_logistic, priors)
    kinds = _check_kinds(attackers, ATTACKERS, "attacker")
    a = check_alpha(alpha)

    def points(data: AttackData) -> Iterator[tuple[int, float]]:
        for w in range(1, data.n) if ws is None else ws:
            yield _check_w(w, data.n), a

    return _grid(datasets, points, kinds, common, seed=seed, tag="map")


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
    common = _check_common(repeats, tolerance, clip, double_logistic, ("sample",))
    kinds = _check_kinds(scenarios, SCENARIOS, "scenario")
    return _grid(datasets, _over_alpha(r, alphas), kinds, common, seed=seed, tag="collusion")


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
                    "rmse_sd": _sd(v[:, 1]),
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
                    "ica_sd": _sd(v[:, 0]),
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
