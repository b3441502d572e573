"""Choosing the radius r privately: sample and aggregate, then permute-and-flip (ours).

:func:`privad.sensitive.propose_parameters` reads r off the raw data and is not private.
This module is a fully private replacement for r (β and the contamination c are public
inputs): an ε-DP release of r, charged to the ledger as its own spend before the labels.

Why not a noisy count of (β, r)-anomalies
-----------------------------------------
The natural statistic, A(r) = #{i : B_x(i, r) ≤ β}, has no useful global sensitivity:
adding one record z raises B(i, r) by one for every record within r of z, and every one of
them with B(i, r) = β stops being an anomaly. Those records all lie in the ball of radius
r around z, so their number is bounded only by packing (β times the number of balls of
radius r/2 that cover a ball of radius r: β·2^d for the Chebyshev metric, up to β·5^d for
the Euclidean one), far too many to add noise for. A quantile of the distances to the
β-th neighbour has the same problem.

The mechanism (sample and aggregate; Nissim, Raskhodnikova, Smith 2007)
-----------------------------------------------------------------------
1. **Partition.** Every record goes to one of K blocks (``blocks``, public), independently
   and uniformly (:class:`privad.noise.Randomness`).
2. **One vote per block (not private by itself).** In block b (about n/K records) a record
   has about 1/K of its neighbours, so the full data's rank β becomes τ = β/K. Each record's
   distance to its j-th neighbour in the block, j = max(1, ⌊τ⌋), is scaled to the
   fractional rank τ by (τ/j)^{1/m}, m the block's intrinsic dimension (the number of
   neighbours grows like r^m; Levina and Bickel's estimate from up to 10 neighbours, within
   [1, d]); the
   block's radius is the smallest of these distances that leaves at most ⌊c·n_b⌋ records
   above it (:func:`propose_parameters`' rule), and its vote v_b is the index of the
   smallest radius of the public grid ``radii`` that is at least that (the last one if
   none is). A block with fewer than max(j + 1, 3) records votes for the last radius. These are
   heuristics: they decide how useful r is, never how private.
3. **The private median of the votes.** The utility of radius j is
   u_j = −|#{b : v_b < j} − #{b : v_b > j}| (0 at a median of the votes, also when many
   votes are equal). Permute-and-flip (McKenna and Sheldon 2020) draws the radii in a
   random order and stops at radius j with probability exp(ε (u_j − max u) / 4), sampled
   exactly (:func:`privad.noise.bernoulli_exp`).

Sensitivity and privacy (add or remove one record)
--------------------------------------------------
Let y = x plus one record z. Every record of x is assigned to a block with the same
independent uniform draw in both data sets, so the assignments of x's records have the same
distribution; couple them, and let z have its own draw. Under the coupling the blocks of x
and y differ in z's block only, so the votes differ in at most one block: v_b may change,
every other vote is the same. Then #{b : v_b < j} and #{b : v_b > j} each change by at most
one, so u_j changes by at most two: the utility has sensitivity Δu = 2. Permute-and-flip
with exp(ε (u − max u) / (2Δu)) is
ε-DP for utilities of sensitivity Δu (McKenna and Sheldon 2020, Theorem 1). So for every
fixed assignment of x's records the chosen index has probabilities within e^ε on x and y,
and so has their average over the assignments: the selection is **ε-DP**. The grid, K, β,
c and d are public (they do not depend on x). An ε-DP release is (ε, k)-sensitively private
for every k, so the spend is charged under the notion of the labels it is for
(``"sensitive"`` with their k, or ``"pure-dp"``); the labels then released at the chosen r
compose with it sequentially (ε_selection + the labels' own charge).

Examples
--------
>>> import numpy as np
>>> from privad.accounting import Ledger
>>> from privad.noise import Randomness
>>> from privad.sensitive.selection import select_radius
>>> rng = Randomness(7)
>>> X = np.clip(rng.normal(0.5, 0.1, size=(2000, 2)), 0.0, 1.0)
>>> with Ledger(":memory:", unbudgeted="record") as book:
...     sel = select_radius(X, 20, 0.05, 1.0, ledger=book, scope="demo", rng=rng)
...     spent = book.spent("demo", "sensitive")
>>> sel.source, spent
('private', 1.0)
>>> 0.0 < sel.r < 0.2
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privad.accounting import Guarantee, Ledger, Spend
from privad.base import check_contamination
from privad.errors import DataError, ParameterError
from privad.sensitive._common import check_beta, check_eps, check_k
from privad.sensitive.anomaly import METRICS
from privad.validation import check_array, check_choice, check_int

__all__ = [
    "DEFAULT_BLOCKS",
    "RadiusSelection",
    "block_votes",
    "default_radii",
    "permute_and_flip",
    "select_radius",
]

DEFAULT_BLOCKS = 30
"""K, the number of blocks of :func:`select_radius` (public; more blocks: a sharper private
median, but each block sees fewer records)."""

_ID_NEIGHBOURS = 10  # neighbours per record of a block's intrinsic dimension
_GRID_SIZE = 40
_GRID_SPAN = 1e-2  # the default grid runs from 1e-2 × the diameter to the diameter

_MINKOWSKI = {"euclidean": 2.0, "manhattan": 1.0, "chebyshev": np.inf}
_DIAMETER = {"euclidean": math.sqrt, "manhattan": float, "chebyshev": lambda d: 1.0}


def default_radii(n_features: int, metric: str = "euclidean") -> np.ndarray:
    """The default public grid of radii, for features scaled to [0, 1] by public bounds.

    40 radii spaced evenly in log scale from 10⁻²·D to D, D the diameter of the unit
    cube [0, 1]^d in ``metric`` (√d, d or 1). It reads nothing but d, so it is public;
    features on other scales need their own grid (``radii``).

    Examples
    --------
    >>> from privad.sensitive.selection import default_radii
    >>> g = default_radii(4)
    >>> len(g), float(g[0]), float(g[-1])
    (40, 0.02, 2.0)
    """
    d = check_int(n_features, "n_features", minimum=1)
    metric = check_choice(metric, "metric", METRICS)
    top = _DIAMETER[metric](d)
    return np.geomspace(_GRID_SPAN * top, top, _GRID_SIZE)


def _check_radii(radii: Any) -> np.ndarray:
    """A public grid: finite radii ≥ 0, strictly increasing, at least two."""
    arr = np.asarray(radii, dtype=np.float64)
    if (
        arr.ndim != 1
        or arr.size < 2
        or not np.all(np.isfinite(arr))
        or arr[0] < 0
        or np.any(np.diff(arr) <= 0)
    ):
        raise ParameterError(
            "radii must be at least two finite radii >= 0 in strictly increasing order, "
            f"got {radii!r}"
        )
    return arr


def block_votes(
    X: np.ndarray,
    blocks: np.ndarray,
    n_blocks: int,
    beta: int,
    contamination: float,
    radii: np.ndarray,
    metric: str = "euclidean",
) -> np.ndarray:
    """NOT PRIVATE. Each block's vote: the index in ``radii`` of its radius (step 2 of the
    module docstring). ``blocks[i]`` is record i's block, in 0..n_blocks−1. The distances
    come from SciPy's k-d tree (a block is small; a heuristic needs no exact predicate).

    Examples
    --------
    Two blocks of the line 0, 0.1, ..., 0.9, β = 2 (τ = 1): in each block the records are
    0.2 apart, so at c = 0.2 each block's radius is 0.2, and 0.21 is the first grid radius
    at or above it:

    >>> import numpy as np
    >>> from privad.sensitive.selection import block_votes
    >>> X = np.linspace(0.0, 0.9, 10)[:, None]
    >>> grid = np.array([0.05, 0.1, 0.19, 0.21, 0.5])
    >>> block_votes(X, np.arange(10) % 2, 2, 2, 0.2, grid).tolist()
    [3, 3]
    """
    from scipy.spatial import cKDTree

    tau = beta / n_blocks
    j = max(1, math.floor(tau))
    votes = np.full(n_blocks, radii.size - 1, dtype=np.int64)
    for b in range(n_blocks):
        block = X[blocks == b]
        n_b = block.shape[0]
        if n_b < max(j + 1, 3):
            continue  # too few records: the last radius (a fixed rule)
        near = min(_ID_NEIGHBOURS, n_b - 1)
        ranks = sorted({j + 1, *range(2, near + 2)})  # itself is the first
        dist, _ = cKDTree(block).query(block, k=ranks, p=_MINKOWSKI[metric])
        scale = (tau / j) ** (1.0 / _intrinsic_dimension(dist[:, :near], X.shape[1]))
        d = np.sort(dist[:, ranks.index(j + 1)]) * scale
        rho = d[n_b - 1 - math.floor(contamination * n_b)]
        votes[b] = min(int(np.searchsorted(radii, rho, side="left")), radii.size - 1)
    return votes


def _intrinsic_dimension(dist: np.ndarray, n_features: int) -> float:
    """Levina and Bickel's (2004) maximum-likelihood intrinsic dimension, pooled over the
    records (MacKay and Ghahramani's average of the inverses), from each record's distances
    to its nearest others (columns in increasing order); within [1, d], and d when the
    distances are degenerate (duplicates)."""
    ok = dist[:, 0] > 0
    if not ok.any():
        return float(n_features)
    logs = np.log(dist[ok, -1:] / dist[ok, :-1])  # log(T_k / T_l), l < k
    inverse = float(logs.mean())
    if not inverse > 0:
        return float(n_features)
    return float(min(max(1.0 / inverse, 1.0), n_features))


def permute_and_flip(utility: Any, epsilon: float, sensitivity: float, rng: Any) -> int:
    """Permute-and-flip (McKenna and Sheldon 2020): ε-DP choice of an index of ``utility``.

    Visits the candidates in a uniformly random order and stops at candidate j with
    probability exp(−ε (max u − u_j) / (2 Δu)), sampled exactly; the best candidate is
    always accepted, so it stops. ε-DP when each utility changes by at most
    ``sensitivity`` = Δu between neighbouring data sets.

    Examples
    --------
    >>> from privad.sensitive.selection import permute_and_flip
    >>> permute_and_flip([0.0, -50.0, -60.0], 1.0, 1.0, rng=3)
    0
    """
    from privad import noise

    u = np.asarray(utility, dtype=np.float64)
    if u.ndim != 1 or u.size == 0 or not np.all(np.isfinite(u)):
        raise ParameterError("utility must be a non-empty vector of finite numbers")
    eps = check_eps(epsilon)
    if not (isinstance(sensitivity, int | float) and sensitivity > 0):
        raise ParameterError(f"sensitivity must be a number > 0, got {sensitivity!r}")
    rng = noise.as_randomness(rng)
    gamma = eps * (u.max() - u) / (2.0 * sensitivity)
    for j in rng.permutation(u.size):
        if noise.bernoulli_exp(float(gamma[j]), rng).item():
            return int(j)
    raise AssertionError("unreachable: the best candidate is accepted with probability 1")


def _radius_index(
    X: np.ndarray,
    beta: int,
    contamination: float,
    epsilon: float,
    radii: np.ndarray,
    n_blocks: int,
    metric: str,
    rng: Any,
) -> int:
    """The ε-DP mechanism of the module docstring (steps 1–3), uncharged: the index of the
    chosen radius in ``radii``. :func:`select_radius` charges it."""
    assignment = rng.integers(n_blocks, size=X.shape[0])  # 1. independent, uniform
    votes = block_votes(X, assignment, n_blocks, beta, contamination, radii, metric)  # 2.
    at_most = np.cumsum(np.bincount(votes, minlength=radii.size))  # 3. V_j
    below = np.r_[0, at_most[:-1]]  # V_{j-1}: votes below j
    utility = -np.abs(below - (n_blocks - at_most))  # −|#{v_b < j} − #{v_b > j}|
    return permute_and_flip(utility, epsilon, 2.0, rng)


@dataclass(frozen=True)
class RadiusSelection:
    """A private choice of r (:func:`select_radius`): the radius and how it was chosen.

    Everything here is public or released: the chosen ``r`` (``radii[index]``), the public
    inputs (β, the contamination c, ε, K, the grid, the metric), the guarantee charged and
    the ledger's spend (None when the selection was not charged to a ledger).

    Examples
    --------
    >>> from privad.accounting import Ledger
    >>> from privad.noise import Randomness
    >>> from privad.sensitive import select_radius
    >>> book = Ledger(":memory:")
    >>> _ = book.set_budget("demo", "sensitive", 5.0)
    >>> sel = select_radius(Randomness(0).uniform(size=(200, 2)), 3, 0.05, 1.0,
    ...                     ledger=book, scope="demo", rng=1)
    >>> sel.provenance()["source"], sel.beta, sel.r == sel.radii[sel.index]
    ('private', 3, True)
    """

    r: float
    index: int
    beta: int
    contamination: float
    epsilon: float
    blocks: int
    metric: str
    guarantee: Guarantee
    radii: tuple[float, ...] = field(repr=False)
    spend: Spend | None = None

    source = "private"
    """Where (β, r) came from, in the vocabulary of the jobs' statements."""

    def provenance(self) -> dict[str, Any]:
        """What a job's statement says about (β, r): a private selection charged to the
        ledger (its spend id), with its public inputs."""
        return {
            "source": self.source,
            "beta": self.beta,
            "r": self.r,
            "how": (
                f"r chosen by an ε-DP selection (ε = {self.epsilon:g}; sample and aggregate "
                f"over {self.blocks} blocks, permute-and-flip over {len(self.radii)} public "
                f"radii) for contamination {self.contamination:g}; β = {self.beta} public "
                "input"
            ),
            "epsilon": self.epsilon,
            "contamination": self.contamination,
            "blocks": self.blocks,
            "radii": [float(self.radii[0]), float(self.radii[-1]), len(self.radii)],
            "spend_id": None if self.spend is None else self.spend.id,
        }


def select_radius(
    X: Any,
    beta: int,
    contamination: float,
    epsilon: float,
    *,
    ledger: Ledger,
    scope: str,
    radii: Any = None,
    blocks: int = DEFAULT_BLOCKS,
    metric: str = "euclidean",
    notion: str = "sensitive",
    k: int = 1,
    rng: Any = None,
) -> RadiusSelection:
    """Choose r privately so that about ``contamination`` of the records are
    (β, r)-anomalies, and charge ε to ``ledger`` (the module docstring has the mechanism and
    its privacy argument).

    Parameters
    ----------
    X : (n, d) array, the data (features on the scale of ``radii``).
    beta : int ≥ 1, β of the (β, r)-anomalies the labels will use (public).
    contamination : float in (0, 0.5], the share of anomalies aimed at (public).
    epsilon : float > 0, ε of the selection (ε-DP).
    ledger, scope : the :class:`~privad.accounting.Ledger` and scope charged, before
        anything is computed (a refusal raises
        :class:`~privad.errors.BudgetExceededError` and computes nothing).
    radii : increasing public grid of candidate radii; default :func:`default_radii`
        (features in [0, 1]).
    blocks : int ≥ 2, K (public).
    metric : ``"euclidean"``, ``"manhattan"`` or ``"chebyshev"``.
    notion : ``"sensitive"`` (with ``k``) or ``"pure-dp"``: the notion of the labels the
        radius is for, under which the ε-DP selection is charged.
    rng : seed or :class:`~privad.noise.Randomness`.

    Examples
    --------
    200 records in [0, 1]²; r for 5 % of (3, r)-anomalies, at ε = 1 charged to the ledger:

    >>> from privad.accounting import Ledger
    >>> from privad.noise import Randomness
    >>> from privad.sensitive import select_radius
    >>> book = Ledger(":memory:")
    >>> _ = book.set_budget("demo", "sensitive", 5.0)
    >>> X = Randomness(0).uniform(size=(200, 2))
    >>> sel = select_radius(X, 3, 0.05, 1.0, ledger=book, scope="demo", rng=1)
    >>> round(sel.r, 3), book.remaining("demo", "sensitive")
    (0.105, 4.0)
    """
    from privad import noise

    X = check_array(X, "X")
    beta = check_beta(beta)
    c = check_contamination(contamination)
    eps = check_eps(epsilon)
    metric = check_choice(metric, "metric", METRICS)
    notion = check_choice(notion, "notion", ("sensitive", "pure-dp"))
    n_blocks = check_int(blocks, "blocks", minimum=2)
    grid = default_radii(X.shape[1], metric) if radii is None else _check_radii(radii)
    if not isinstance(ledger, Ledger):
        raise ParameterError(
            f"ledger must be a privad.accounting.Ledger, got {type(ledger).__name__}"
        )
    if X.shape[0] < 2:
        raise DataError(f"a private selection of r needs at least 2 records, got {X.shape[0]}")
    rng = noise.as_randomness(rng)
    guarantee = Guarantee(
        notion,
        eps,
        "add or remove one record",
        k=check_k(k) if notion == "sensitive" else None,
        description=(
            f"ε-DP private selection of r for (β = {beta})-anomalies at contamination {c:g} "
            f"(sample and aggregate, {n_blocks} blocks; permute-and-flip over {grid.size} "
            "public radii)"
        ),
    )
    metadata = {
        "selection": "radius",
        "beta": beta,
        "contamination": c,
        "epsilon": eps,
        "blocks": n_blocks,
        "metric": metric,
        "radii": [float(grid[0]), float(grid[-1]), int(grid.size)],
    }
    label = f"private selection of r for (β={beta}, r)-anomalies at contamination {c:g}"
    with ledger.reserve(scope, guarantee, label, metadata) as reservation:
        index = _radius_index(X, beta, c, eps, grid, n_blocks, metric, rng)
    return RadiusSelection(
        r=float(grid[index]),
        index=index,
        beta=beta,
        contamination=c,
        epsilon=eps,
        blocks=n_blocks,
        metric=metric,
        guarantee=guarantee,
        radii=tuple(float(v) for v in grid),
        spend=reservation.spend,
    )
