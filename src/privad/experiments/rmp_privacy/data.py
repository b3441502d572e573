"""The attacked data sets of RMP's privacy evaluation and the attackers' names."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.errors import ParameterError
from privad.noise import as_randomness
from privad.validation import check_int

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
