"""Exhaustive checks of the paper's privacy claims on small record domains.

Databases are count vectors over a small record space X (the 5-point line of Figure 4 with
the ℓ1 metric, and a small 2-D grid). For every database of size ≤ N we build, by brute force
from the definitions,

* the neighbourhood graph G (databases at ℓ1 distance 1, Definition 4.2);
* the k-sensitive neighbourhood graph G_S (Definition 3.1: the edge x ~ x + e_j is kept iff
  j is k-sensitive w.r.t. x or x + e_j, where "k-sensitive" is decided literally: some y with
  ||x − y||_1 ≤ k has y_j > 0 and B_y(j, r) > β);

and check the closed forms of the package against them: the sensitivity test, Δ_G as the exact
mdd of G (Lemma 4.3), λ_k as a 1-Lipschitz lower bound of the mdd of G_S (Lemma 4.5), the ε-DP
inequality for U_{Δ_G} on every edge of G, the (ε, k)-SP inequality for U_{λ_k} on every edge
of G_S, and the (ε, k)-SP inequality for the compiler's output (Theorem 4.7) on the Figure 5
inputs. Claim 5's batch charge m·ε is checked against the exact composed loss on small
domains scaled to extreme magnitudes (1e-160 ... 1e+150, r = 0): it covers the loss, or the
input is refused with a DataError.

Truncation. The real graphs are infinite; we only have databases of size ≤ N. Every edge we
build is a real edge, so Lipschitz and privacy inequalities checked on them are sound. Graph
distances are not: a shortest path may leave the truncated region, so the BFS distance D_N
in the truncated graph is only an upper bound of the true distance D. It is exact whenever
|x| + D_N ≤ N: a path of length D ≤ D_N from x only visits databases of size ≤ |x| + D ≤ N,
so the true shortest path lies inside the truncated graph and D_N ≤ D. We therefore assert
equalities and lower bounds of the mdd only on databases with |x| + D_N ≤ N (and check that
there are many of them), and assert the always-sound one-sided bounds (Δ_G ≤ D_N, λ_k ≤ D_N)
everywhere. The sensitivity brute force looks at databases up to size N + k, so it is exact
for every database of size ≤ N.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from privad.errors import DataError
from privad.geometry.predicate import METRICS, MIN_GAP, pair_values, threshold
from privad.geometry.reference import count_brute
from privad.sensitive import SensitiveAnomalyIdentifier, compile_mechanism, is_sensitive
from privad.sensitive.accounting import claim5_bound, claim5_radius
from privad.sensitive.anomaly import anomaly_label
from privad.sensitive.compiler import InputMechanism
from privad.sensitive.constructions import log_error_probability, log_output_probabilities
from privad.sensitive.mdd import delta_g, lambda_k

TOL = 1e-9


def enumerate_histograms(n_cells: int, max_size: int) -> np.ndarray:
    """All count vectors of length n_cells with total ≤ max_size (int64, one per row)."""
    rows = [c for c in itertools.product(range(max_size + 1), repeat=n_cells) if sum(c) <= max_size]
    return np.array(rows, dtype=np.int64)


@dataclass
class Domain:
    """Record space, ball matrix, all databases up to size N, and the G edges among them."""

    name: str
    points: np.ndarray  # coordinates of the records of X
    in_ball: np.ndarray  # in_ball[i, j] = d(i, j) <= r
    beta: int
    N: int
    X: np.ndarray  # databases (V, |X|)
    B: np.ndarray  # B[v, i] = B_x(i, r)
    size: np.ndarray
    edge_u: np.ndarray  # edge u -> v = u + e_j
    edge_v: np.ndarray
    edge_j: np.ndarray

    @property
    def n_cells(self) -> int:
        return self.points.shape[0]


def _index(X: np.ndarray, base: int) -> dict[tuple[int, ...], int]:
    return {tuple(row): n for n, row in enumerate(X)}


def make_domain(name: str, points: np.ndarray, r: float, ord: float, beta: int, N: int) -> Domain:
    diff = points[:, None, :] - points[None, :, :]
    dist = np.linalg.norm(diff, ord=ord, axis=2)
    in_ball = dist <= r + 1e-12
    X = enumerate_histograms(points.shape[0], N)
    B = X @ in_ball.T.astype(np.int64)
    idx = _index(X, N + 1)
    us, vs, js = [], [], []
    for u, row in enumerate(X):
        if row.sum() >= N:
            continue
        for j in range(points.shape[0]):
            y = row.copy()
            y[j] += 1
            us.append(u)
            vs.append(idx[tuple(y)])
            js.append(j)
    return Domain(
        name,
        points,
        in_ball,
        beta,
        N,
        X,
        B,
        X.sum(axis=1),
        np.array(us),
        np.array(vs),
        np.array(js),
    )


@cache
def line_domain() -> Domain:
    """Figure 4: X = {1, ..., 5} (here 0..4) on a line, ℓ1, (β = 3, r = 1)."""
    return make_domain("line5", np.arange(5, dtype=float)[:, None], 1.0, 1, 3, 12)


@cache
def grid_domain() -> Domain:
    """A 2 × 3 grid, Euclidean, r = 1 (4-neighbourhood), β = 3."""
    pts = np.array([(a, b) for a in range(2) for b in range(3)], dtype=float)
    return make_domain("grid2x3", pts, 1.0, 2, 3, 9)


@cache
def sensitivity(dom_name: str, k: int) -> np.ndarray:
    """sens[v, j]: record j is k-sensitive w.r.t. database v, by Definition 3.1 literally.

    Multi-source BFS on the ℓ1 lattice of databases of size ≤ N + k from every database where
    j is present and normal; j is k-sensitive w.r.t. x iff that ℓ1 distance is ≤ k. (Lattice
    shortest paths between x and y stay within size max(|x|, |y|), so the truncation at N + k
    is exact for |x| ≤ N.)
    """
    dom = {"line5": line_domain, "grid2x3": grid_domain}[dom_name]()
    L = enumerate_histograms(dom.n_cells, dom.N + k)
    BL = L @ dom.in_ball.T.astype(np.int64)
    idx = _index(L, 0)
    us, vs = [], []
    for u, row in enumerate(L):
        if row.sum() >= dom.N + k:
            continue
        for j in range(dom.n_cells):
            y = row.copy()
            y[j] += 1
            us.append(u)
            vs.append(idx[tuple(y)])
    n = len(L)
    adj = coo_matrix((np.ones(len(us)), (us, vs)), shape=(n, n)).tocsr()
    pos = np.array([idx[tuple(row)] for row in dom.X])
    sens = np.zeros((len(dom.X), dom.n_cells), dtype=bool)
    for j in range(dom.n_cells):
        normal = np.flatnonzero((L[:, j] > 0) & (BL[:, j] > dom.beta))
        dist = dijkstra(
            adj, directed=False, indices=normal, unweighted=True, min_only=True, limit=k + 0.5
        )
        sens[:, j] = dist[pos] <= k
    return sens


def sensitive_edges(dom: Domain, k: int) -> np.ndarray:
    """Mask over G's edges: x ~ x + e_j is in G_S iff j is k-sensitive w.r.t. either end."""
    s = sensitivity(dom.name, k)
    return s[dom.edge_u, dom.edge_j] | s[dom.edge_v, dom.edge_j]


def graph_distances_to_flip(dom: Domain, edge_mask: np.ndarray) -> np.ndarray:
    """D_N[v, i]: truncated-graph BFS distance from v to the nearest y with g(i, y) ≠ g(i, v)."""
    n = len(dom.X)
    u, v = dom.edge_u[edge_mask], dom.edge_v[edge_mask]
    adj = coo_matrix((np.ones(len(u)), (u, v)), shape=(n, n)).tocsr()
    D = np.full((n, dom.n_cells), np.inf)
    for i in range(dom.n_cells):
        g = np.asarray(anomaly_label(dom.X[:, i], dom.B[:, i], dom.beta))
        for c in (0, 1):
            sources = np.flatnonzero(g == c)
            if sources.size == 0:
                continue
            dist = dijkstra(adj, directed=False, indices=sources, unweighted=True, min_only=True)
            D[g != c, i] = dist[g != c]
    return D


def exact_mask(dom: Domain, D: np.ndarray) -> np.ndarray:
    """Where the truncated distance is the true one: |x| + D_N ≤ N (see the module docstring)."""
    return dom.size[:, None] + D <= dom.N


DOMAINS = [line_domain, grid_domain]


# ----------------------------------------------------------------------------------------
# Definition 3.1: the closed-form sensitivity test
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", DOMAINS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_sensitivity_closed_form_matches_definition(make, k):
    dom = make()
    brute = sensitivity(dom.name, k)
    closed = np.asarray(is_sensitive(dom.B, dom.beta, k))
    assert (brute == closed).all()
    assert brute.any() and (~brute).any()


def test_every_record_is_sensitive_when_k_exceeds_beta():
    dom = line_domain()
    assert sensitivity(dom.name, dom.beta + 1).all()


# ----------------------------------------------------------------------------------------
# Lemma 4.3: Δ_G is the mdd of the full graph and is 1-Lipschitz
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", DOMAINS)
def test_delta_g_is_the_exact_mdd_of_the_neighbourhood_graph(make):
    dom = make()
    D = graph_distances_to_flip(dom, np.ones(len(dom.edge_u), dtype=bool))
    dg = np.asarray(delta_g(dom.X, dom.B, dom.beta))
    assert (dg <= D).all()  # sound everywhere: D_N >= true mdd = Δ_G
    ok = exact_mask(dom, D)
    assert ok.mean() > 0.3
    assert (dg[ok] == D[ok]).all()
    # every case of equation (2) occurs among the verified databases
    a, b = dom.X[ok], dom.B[ok]
    beta = dom.beta
    cases = [
        (a == 0) & (b < beta),
        (a == 0) & (b >= beta),
        (a > 0) & (b <= beta),
        (a > 0) & (b > beta),
    ]
    assert all(c.any() for c in cases)


@pytest.mark.parametrize("make", DOMAINS)
def test_delta_g_is_1_lipschitz_on_the_neighbourhood_graph(make):
    dom = make()
    dg = np.asarray(delta_g(dom.X, dom.B, dom.beta))
    assert (np.abs(dg[dom.edge_u] - dg[dom.edge_v]) <= 1).all()


# ----------------------------------------------------------------------------------------
# Lemma 4.5: λ_k is a 1-Lipschitz lower bound of the mdd of the k-sensitive graph
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", DOMAINS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_lambda_k_is_a_lipschitz_lower_bound_of_the_sensitive_mdd(make, k):
    dom = make()
    mask = sensitive_edges(dom, k)
    D = graph_distances_to_flip(dom, mask)
    lam = np.asarray(lambda_k(dom.X, dom.B, dom.beta, k))
    dg = np.asarray(delta_g(dom.X, dom.B, dom.beta))
    assert (lam >= 1).all() and (lam >= dg).all()
    assert (lam <= D).all()  # sound everywhere (D_N >= true mdd >= λ_k)
    ok = exact_mask(dom, D)
    assert ok.mean() > 0.3
    assert (lam[ok] <= D[ok]).all()
    if k < dom.beta:
        # not vacuous: λ_k improves on Δ_G somewhere, and is tight somewhere it improves
        assert (lam > dg).any()
        assert ((lam == D) & (lam > dg) & ok).any()
    else:
        # k >= β: only B = 0 (absent, empty ball) is not k-sensitive, and there λ_k = Δ_G = 1
        assert (lam == dg).all()
    # 1-Lipschitz on every edge of G_S
    u, v = dom.edge_u[mask], dom.edge_v[mask]
    assert (np.abs(lam[u] - lam[v]) <= 1).all()


def test_lambda_k_fails_theorem_4_1_on_the_full_graph():
    """Teeth: on G, λ_1 exceeds 1 across edges where g flips, so it is no lower bound of Δ_G.

    (As a function of (x_i, B), λ_k happens to move by at most 1 along every edge of G; what
    breaks DP is that it stays large across the non-sensitive edges where the answer flips,
    e.g. adding the first copy of an isolated record.)
    """
    dom = line_domain()
    lam = np.asarray(lambda_k(dom.X, dom.B, dom.beta, 1))
    g = np.asarray(anomaly_label(dom.X, dom.B, dom.beta))
    flip = g[dom.edge_u] != g[dom.edge_v]
    assert (lam[dom.edge_u][flip] > 1).any()
    assert (np.abs(lam[dom.edge_u] - lam[dom.edge_v]) <= 1).all()


def test_figure_4_examples():
    """Section 4's remarks on Figure 4 (X = {1..5}, β = 3, r = 1, k = 1), with exact BFS mdds."""
    dom = line_domain()
    D = graph_distances_to_flip(dom, sensitive_edges(dom, 1))
    idx = _index(dom.X, 0)
    i = 4  # the record "5"

    def mdd(x):
        v = idx[x]
        assert dom.size[v] + D[v, i] <= dom.N  # exact
        return D[v, i]

    assert mdd((3, 0, 0, 0, 1)) > mdd((3, 2, 1, 0, 1))
    assert mdd((3, 0, 0, 0, 1)) > mdd((3, 0, 1, 0, 1))


# ----------------------------------------------------------------------------------------
# Theorems 4.1, 4.4, 4.6: the mechanisms satisfy their privacy inequalities on every edge
# ----------------------------------------------------------------------------------------


def _log_outputs(dom: Domain, log_err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    g = np.asarray(anomaly_label(dom.X, dom.B, dom.beta))
    return log_output_probabilities(g, log_err)


def _max_edge_log_ratio(dom: Domain, log_err: np.ndarray, mask: np.ndarray) -> float:
    lp0, lp1 = _log_outputs(dom, log_err)
    u, v = dom.edge_u[mask], dom.edge_v[mask]
    return float(max(np.abs(lp0[u] - lp0[v]).max(), np.abs(lp1[u] - lp1[v]).max()))


@pytest.mark.parametrize("make", DOMAINS)
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_optimal_dp_mechanism_is_dp_on_the_full_graph(make, epsilon):
    dom = make()
    le = np.asarray(log_error_probability(dom.X, dom.B, beta=dom.beta, epsilon=epsilon))
    full = np.ones(len(dom.edge_u), dtype=bool)
    worst = _max_edge_log_ratio(dom, le, full)
    assert worst <= epsilon * (1 + TOL)
    assert worst >= epsilon * (1 - 1e-6)  # the constraint is tight somewhere (optimality)


@pytest.mark.parametrize("make", DOMAINS)
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_sp_mechanism_is_sensitively_private(make, k, epsilon):
    dom = make()
    le = np.asarray(log_error_probability(dom.X, dom.B, beta=dom.beta, epsilon=epsilon, k=k))
    assert _max_edge_log_ratio(dom, le, sensitive_edges(dom, k)) <= epsilon * (1 + TOL)


@pytest.mark.parametrize("make", DOMAINS)
def test_sp_mechanism_is_not_dp_and_not_sp_for_larger_k(make):
    """Teeth: U_{λ_1} violates ε-DP on G and (ε, 2)-SP on the 2-sensitive graph."""
    dom = make()
    eps = 1.0
    le = np.asarray(log_error_probability(dom.X, dom.B, beta=dom.beta, epsilon=eps, k=1))
    full = np.ones(len(dom.edge_u), dtype=bool)
    assert _max_edge_log_ratio(dom, le, full) > eps * 1.5
    assert _max_edge_log_ratio(dom, le, sensitive_edges(dom, 2)) > eps * 1.5


# ----------------------------------------------------------------------------------------
# Theorem 4.7: the compiler's output on the Figure 5 inputs
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", DOMAINS)
@pytest.mark.parametrize("which", ["constant", "optimal-dp"])
@pytest.mark.parametrize("k", [1, 2])
def test_compiled_figure5_mechanisms_are_sensitively_private(make, which, k):
    dom = make()
    eps_m = 0.25  # Figure 5: the inputs are 0.25-DP
    if which == "constant":
        mech = InputMechanism.constant(eps_m)
    else:
        mech = InputMechanism.optimal_dp(dom.beta, eps_m)
    compiled = compile_mechanism(mech, beta=dom.beta, k=k)
    assert compiled.epsilon == 2 * eps_m
    le = np.asarray(compiled.log_error_probability(dom.X, dom.B))
    # the input itself is ε_M-DP on G
    le_in = mech.log_error(dom.X, dom.B)
    full = np.ones(len(dom.edge_u), dtype=bool)
    assert _max_edge_log_ratio(dom, np.asarray(le_in), full) <= eps_m * (1 + TOL)
    # the output is (2ε_M, k)-SP on G_S, and never errs more than the input
    assert _max_edge_log_ratio(dom, le, sensitive_edges(dom, k)) <= 2 * eps_m * (1 + TOL)
    assert (le <= le_in + 1e-12).all()
    assert (le < le_in - 1e-6).any()


def test_paper_delta_is_not_a_lower_bound_for_k2():
    """Why the compiler uses δ = λ_k − Δ_G: the paper's λ_1 − Δ_G (k = 1) is not a lower bound
    of Δ_{G_S} − Δ_G for the 2-sensitive graph, so Theorem 4.7's hypothesis fails for k = 2."""
    dom = line_domain()
    D2 = graph_distances_to_flip(dom, sensitive_edges(dom, 2))
    ok = exact_mask(dom, D2)
    dg = np.asarray(delta_g(dom.X, dom.B, dom.beta))
    delta1 = np.asarray(lambda_k(dom.X, dom.B, dom.beta, 1)) - dg
    delta2 = np.asarray(lambda_k(dom.X, dom.B, dom.beta, 2)) - dg
    assert (delta1[ok] > (D2 - dg)[ok]).any()
    assert (delta2[ok] <= (D2 - dg)[ok]).all()


# ----------------------------------------------------------------------------------------
# Count caps (privad.sensitive.mdd): λ^c keeps Theorem 4.1's hypotheses
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", DOMAINS)
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("extra", [2, 3, 5])
def test_capped_bounds_stay_lipschitz_lower_bounds_and_private(make, k, extra):
    dom = make()
    cap = dom.beta + extra
    Bc = np.minimum(dom.B, cap)  # what the geometry layer returns with cap=c
    ac = np.minimum(dom.X, Bc)
    assert (dom.B >= cap).any()  # the cap bites on this domain
    lam = np.asarray(lambda_k(ac, Bc, dom.beta, k, cap=cap))
    dg = np.asarray(delta_g(ac, Bc, dom.beta, cap=cap))
    # lower bounds of the exact ones (hence of the mdds) and still >= 1
    assert (lam <= np.asarray(lambda_k(dom.X, dom.B, dom.beta, k))).all()
    assert (dg <= np.asarray(delta_g(dom.X, dom.B, dom.beta))).all()
    assert (dg >= 1).all()
    # 1-Lipschitz: λ^c on G_S, Δ_G^c on G
    mask = sensitive_edges(dom, k)
    u, v = dom.edge_u[mask], dom.edge_v[mask]
    assert (np.abs(lam[u] - lam[v]) <= 1).all()
    assert (np.abs(dg[dom.edge_u] - dg[dom.edge_v]) <= 1).all()
    # the capped mechanisms keep their guarantees
    eps = 1.0
    le_sp = np.asarray(log_error_probability(ac, Bc, beta=dom.beta, epsilon=eps, k=k, cap=cap))
    le_dp = np.asarray(log_error_probability(ac, Bc, beta=dom.beta, epsilon=eps, cap=cap))
    assert _max_edge_log_ratio(dom, le_sp, mask) <= eps * (1 + TOL)
    full = np.ones(len(dom.edge_u), dtype=bool)
    assert _max_edge_log_ratio(dom, le_dp, full) <= eps * (1 + TOL)
    # the compiled mechanism on the capped optimal ε/2-DP input as well
    compiled = compile_mechanism(
        InputMechanism.optimal_dp(dom.beta, eps / 2, cap=cap), beta=dom.beta, k=k
    )
    le_c = np.asarray(compiled.log_error_probability(ac, Bc))
    assert _max_edge_log_ratio(dom, le_c, mask) <= eps * (1 + TOL)
    # and their errors are upper bounds of the uncapped ones
    le_exact = np.asarray(log_error_probability(dom.X, dom.B, beta=dom.beta, epsilon=eps, k=k))
    assert (le_sp >= le_exact - 1e-12).all()


def test_naive_capping_breaks_lipschitz():
    """Teeth: evaluating Δ_G at (min(x_i, c), min(B, c)) jumps by 2 when the first copy of an
    absent record with a full ball is added; that is why λ^c sets c − β beyond the cap."""
    dom = line_domain()
    cap = dom.beta + 2
    Bc = np.minimum(dom.B, cap)
    ac = np.minimum(dom.X, Bc)
    naive = np.asarray(delta_g(ac, Bc, dom.beta))  # no cap= argument: the naive rule
    assert (np.abs(naive[dom.edge_u] - naive[dom.edge_v]) >= 2).any()


# ----------------------------------------------------------------------------------------
# Claim 5 at every magnitude: the charge m·ε covers the exact composed loss, or the input
# is refused (euclidean: distinct values of a feature closer than 2**-511 underflow)
# ----------------------------------------------------------------------------------------

EPS = 0.5
#: 2**-511 is the smallest allowed gap; 1e-160 and 5e-324 fall below it (refused for
#: euclidean only); 1e150 squares to ~1e300, just below overflow.
SCALES = [1.0, 2.0**-511, 1e-150, 1e-160, 5e-324, 1e150]
LINE = np.arange(-2.0, 3.0)[:, None]
CROSS = np.array([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
UNDERFLOW = r"closer than 2\*\*-511 .*Allowed: distinct values of a feature"
TINY_OFFSETS = [1.2e-162, -1.2e-162, 5e-324, 2.0**-512]


def _radii(scale: float) -> list[float]:
    return [0.0, 1e-170, scale, 1.5 * scale]


def _multisets(points: np.ndarray, max_size: int) -> list[np.ndarray]:
    """Every query batch of 1..max_size records of ``points`` (repetitions allowed)."""
    return [
        points[list(c)]
        for size in range(1, max_size + 1)
        for c in itertools.combinations_with_replacement(range(points.shape[0]), size)
    ]


def _underflows(A: np.ndarray) -> bool:
    """Some feature of A has two distinct values closer than 2**-511 (the refusal rule)."""
    return any((np.diff(np.unique(A[:, c])) < MIN_GAP).any() for c in range(A.shape[1]))


def _added_records(P: np.ndarray) -> np.ndarray:
    """Records j a neighbour may add: the domain, every midpoint, and the domain moved by
    offsets far below the underflow gap (these need not pass the check themselves)."""
    mid = ((P[:, None, :] + P[None, :, :]) / 2).reshape(-1, P.shape[1])
    moved = [P + np.eye(P.shape[1])[c] * t for t in TINY_OFFSETS for c in range(P.shape[1])]
    return np.concatenate([P, mid, *moved])


@pytest.mark.parametrize("points", [LINE, CROSS], ids=["line", "cross"])
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("scale", SCALES)
def test_claim5_upper_bound_counts_every_ball_at_every_magnitude(points, metric, scale):
    """m ≥ #{queries within r of j} for every record j, or the queries are refused."""
    P = points * scale
    J = _added_records(P)
    refused = 0
    for r in _radii(scale):
        for Q in _multisets(P, 3):
            if metric == "euclidean" and _underflows(Q):
                with pytest.raises(DataError, match=UNDERFLOW):
                    claim5_bound(Q, r, metric=metric)
                refused += 1
                continue
            bound = claim5_bound(Q, r, metric=metric)
            within = pair_values(J, Q, metric) <= threshold(r, metric)  # no check on J
            assert within.sum(axis=1).max() <= bound.upper
            if r == 0.0:  # r = 0: duplicates only
                _, mult = np.unique(Q, axis=0, return_counts=True)
                assert bound.lower == mult.max()
    assert (refused > 0) == (metric == "euclidean" and scale in (1e-160, 5e-324))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("scale", SCALES)
def test_charged_guarantee_covers_the_composed_loss_at_every_magnitude(metric, scale):
    """guarantee(Q).epsilon ≥ Σ over queries of the exact loss of every record (each record
    of X is one that a neighbouring database lacks), or the input is refused."""
    P = LINE * scale
    with_midpoints = np.unique(_added_records(P)[: P.shape[0] * (P.shape[0] + 1)], axis=0)
    worst, accepted = 0.0, 0
    for X in (P, with_midpoints):
        for r in _radii(scale):
            est = SensitiveAnomalyIdentifier(
                beta=1, r=r, epsilon=EPS, mechanism="dp", metric=metric
            ).fit(X)
            for Q in _multisets(P, 2):
                if metric == "euclidean" and _underflows(np.concatenate([X, Q])):
                    with pytest.raises(DataError, match=UNDERFLOW):
                        est.privacy_loss(Q, combine="sum")
                    continue
                charged = est.guarantee(Q).epsilon
                lost = float(est.privacy_loss(Q, combine="sum").max())
                assert lost <= charged * (1 + 1e-12)
                worst = max(worst, lost / charged)
                accepted += 1
    assert (accepted == 0) == (metric == "euclidean" and scale in (1e-160, 5e-324))
    assert accepted == 0 or worst > 0.99  # not vacuous: the charge is tight somewhere


def _audit_cases(q: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The audit's databases {0} with queries at ±q (1-D) and on the axes (2-D)."""
    cross = CROSS[1:] * q
    return [(np.zeros((1, 1)), np.array([[q], [-q]])), (np.zeros((1, 2)), cross)]


@pytest.mark.parametrize("r", [0.0, 1e-170])
def test_audit_case_is_refused(r):
    """Queries at ±1.2e-162: on the raw predicate record 0 is within r of every query while
    the 2r count puts no two queries together, so m·ε = 0.5 would be charged for a loss of
    1.0 (1.5 for 2.0 in 2-D). The check refuses it, saying what is wrong and what is allowed."""
    for X, Q in _audit_cases(1.2e-162):
        est = SensitiveAnomalyIdentifier(beta=1, r=r, epsilon=EPS).fit(X)
        for call in (est.guarantee, est.statistics, est.privacy_loss):
            with pytest.raises(DataError, match=UNDERFLOW):
                call(Q)
        # why: the raw predicate breaks the triangle inequality Claim 5 relies on
        assert (pair_values(X, Q, "euclidean") <= threshold(r, "euclidean")).all()
        thr2 = threshold(claim5_radius(r), "euclidean")
        assert count_brute(Q, None, thr2, "euclidean", None).max() < Q.shape[0]


def test_audit_case_rescaled_by_a_power_of_two_is_charged_exactly():
    """The same geometry times 2**400 (exact) is accepted, and m·ε equals the loss."""
    q = 1.2e-162 * 2.0**400
    for X, Q in _audit_cases(q):
        est = SensitiveAnomalyIdentifier(beta=1, r=q, epsilon=EPS).fit(X)
        lost = float(est.privacy_loss(Q, combine="sum").max())
        assert est.guarantee(Q).epsilon == lost == EPS * Q.shape[0]
