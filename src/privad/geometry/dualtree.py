"""Compiled (Numba) dual-tree ball counting: the ``"numba"`` engine of ``ball_counts``.

Algorithm
---------
A kd-tree (:mod:`privad.geometry.kdtree`, large leaves) is built over the data and, when
queries are given, a second one over the queries. Pairs of nodes ``(A, B)`` are visited from
the root pair down; for each pair the canonical box bounds of
:mod:`privad.geometry.predicate` decide

* ``min bound > thr``: no pair of points is within ``r``: prune;
* ``max bound <= thr``: every pair is within ``r``: add ``|B|`` to every point of ``A`` at
  once (a per-node counter, pushed down to the points at the end) without touching points;
  this is what makes dense balls cheap;
* otherwise split the larger node. Two leaves meet in :func:`_leaf_pair`: points are first
  sorted out against the other side's box (none within ``r``: dropped; all within: counted
  at once), then against the survivors' tight box; the rest are compared pair by pair.
  Leaves are sorted by their widest feature: sorting-out skips the points too far on it alone
  (binary search, :mod:`privad.geometry.sweep`), and a leaf meets itself in a sweep.

All bounds and comparisons use the canonical arithmetic, so every shortcut takes exactly the
decision the pair-by-pair computation would: counts are identical to the brute force.

Strategies
----------
``"sym"`` (self counts without a cap): the pair ``(A, B)`` is visited once and counts go to
both sides; ``(A, A)`` expands into ``(l, l), (l, r), (r, r)``. The top of the traversal is
cut into tasks (pairs of frontier nodes, largest first) run with ``prange`` under dynamic
scheduling; each thread adds into its own rows, summed at the end.

``"cross"`` (queries, or self counts with a cap): every query point is counted against the
data tree; tasks are query subtrees, which own their counters, so threads never share one.
With a ``cap``, a query node whose points all reached it is marked and skipped, and the
nearer data child is visited first so that dense points reach the cap early. Self counts with
a cap use ``"cross"`` only when a sample says most records reach the cap (then it skips most
of the work); otherwise ``"sym"`` and a final ``min`` are faster.

Small inputs (:data:`privad.geometry.kernels.PARALLEL_MIN_POINTS`) run single-threaded kernels.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from privad.geometry.kdtree import KDTree, build_tree, frontier, widest_feature
from privad.geometry.kernels import (
    accumulator_rows,
    box_bounds,
    gather_box,
    points_box_lower,
    row_values,
    sorting_out_bounds,
)
from privad.geometry.predicate import metric_code
from privad.geometry.sweep import leaf_window, upper_end

_STACK = 1024  # pair stack depth: at most ~3 entries per level of two trees


@njit(cache=True)
def _workspace(d, width):
    """Per-task scratch for :func:`_leaf_pair` (see its unpacking line)."""
    return (
        np.empty(width, np.int64),
        np.empty(width, np.int64),
        np.empty((d, width), np.float64),
        np.empty(width, np.float64),
        np.empty(width, np.float64),
        np.empty(width, np.int64),
        np.empty(width, np.float64),
        np.empty((d, width), np.float64),
        np.empty(d, np.float64),
        np.empty(d, np.float64),
    )


@njit(cache=True)
def _leaf_pair(
    qX,
    qXT,
    qs,
    qe,
    a,
    q_lo,
    q_hi,
    dXT,
    ds,
    de,
    b,
    d_lo,
    d_hi,
    thr,
    metric,
    sym,
    row_limit,
    q_pt,
    d_node_add,
    d_pt,
    ws,
):
    """Count pairs between query leaf ``a`` and data leaf ``b`` (distinct nodes).

    Before any pair is computed, points are sorted out with exact box bounds (those outside
    the :func:`~privad.geometry.sweep.leaf_window` of the box are dropped unseen):

    1. rows (query points) against box ``b``: none within ``r``: dropped; all within ``r``:
       ``|b|`` added at once (and, with ``sym``, one to every point of ``b``); rows whose
       count already reached ``row_limit`` are dropped (capped counts);
    2. columns (data points) against the tight box of the remaining rows, the same way;
    3. rows again against the tight box of the remaining columns.

    The remaining columns are gathered into a contiguous feature-major block and each
    remaining row is compared with it. With ``sym`` the hits also go to the columns.
    """
    rows, cols, g, bmin, bmax, col_hits, buf, rg, box_lo, box_hi = ws
    nb = de - ds
    r0, r1 = leaf_window(q_lo, q_hi, a, d_lo[b], d_hi[b], qXT, qs, qe, thr, metric)
    full = sorting_out_bounds(qXT, r0, r1, d_lo[b], d_hi[b], thr, metric, bmin, bmax)
    nr = 0
    n_full = 0
    for k in range(r1 - r0):
        if bmin[k] <= thr and q_pt[r0 + k] < row_limit:
            if full and bmax[k] <= thr:
                q_pt[r0 + k] += nb
                n_full += 1
            else:
                rows[nr] = r0 + k
                nr += 1
    if sym and n_full > 0:
        d_node_add[b] += n_full
    if nr == 0:
        return
    gather_box(qXT, rows, nr, rg, box_lo, box_hi)
    c0, c1 = leaf_window(d_lo, d_hi, b, box_lo, box_hi, dXT, ds, de, thr, metric)
    full = sorting_out_bounds(dXT, c0, c1, box_lo, box_hi, thr, metric, bmin, bmax)
    nc = 0
    n_full = 0
    for k in range(c1 - c0):
        if bmin[k] <= thr:
            if full and bmax[k] <= thr:
                n_full += 1
                if sym:
                    d_pt[c0 + k] += nr
            else:
                cols[nc] = c0 + k
                nc += 1
    if n_full > 0:
        for t in range(nr):
            q_pt[rows[t]] += n_full
    if nc == 0:
        return
    gather_box(dXT, cols, nc, g, box_lo, box_hi)
    points_box_lower(rg, 0, nr, box_lo, box_hi, metric, bmin)
    kept = 0
    for t in range(nr):
        if bmin[t] <= thr:
            rows[kept] = rows[t]
            kept += 1
    nr = kept
    if sym:
        for k in range(nc):
            col_hits[k] = 0
        for t in range(nr):
            i = rows[t]
            row_values(qX, i, g, 0, nc, buf, metric)
            c = 0
            for k in range(nc):
                hit = buf[k] <= thr
                c += hit
                col_hits[k] += hit
            q_pt[i] += c
        for k in range(nc):
            d_pt[cols[k]] += col_hits[k]
    else:
        for t in range(nr):
            i = rows[t]
            row_values(qX, i, g, 0, nc, buf, metric)
            c = 0
            for k in range(nc):
                c += buf[k] <= thr
            q_pt[i] += c


@njit(cache=True)
def _leaf_self(X, XT, s, e, w, thr, metric, pt, buf):
    """Pairs in one leaf once (a sweep along its sort feature ``w``), and each point with itself."""
    k = s
    for i in range(s, e):
        pt[i] += 1
        k = upper_end(X[i, w], XT, w, max(k, i + 1), e, thr, metric)
        row_values(X, i, XT, i + 1, k, buf, metric)
        c = 0
        for p in range(k - i - 1):
            hit = buf[p] <= thr
            c += hit
            pt[i + 1 + p] += hit
        pt[i] += c


_BIG = np.iinfo(np.int64).max


@njit(cache=True, inline="always")
def _pair_stack(a0, b0):
    """The node-pair stack of a traversal, holding its root pair ``(a0, b0)``."""
    stack_a = np.empty(_STACK, np.int64)
    stack_b = np.empty(_STACK, np.int64)
    stack_a[0] = a0
    stack_b[0] = b0
    return stack_a, stack_b


@njit(cache=True, inline="always")
def _push(stack_a, stack_b, sp, a, b):
    """Push the node pair ``(a, b)``; returns the new stack size."""
    stack_a[sp] = a
    stack_b[sp] = b
    return sp + 1


@njit(cache=True, inline="always")
def _pop(stack_a, stack_b, sp):
    """Pop the top node pair: ``(new stack size, a, b)``."""
    sp -= 1
    return sp, stack_a[sp], stack_b[sp]


@njit(cache=True, inline="always")
def _pair_bounds(qtree, a, dtree, b, metric):
    """Box bounds of node ``a`` of ``qtree`` against node ``b`` of ``dtree``, and the two
    nodes' sizes: ``(lower, upper, |a|, |b|)``."""
    q_start, q_end, _, _, q_lo, q_hi = qtree
    d_start, d_end, _, _, d_lo, d_hi = dtree
    mn, mx = box_bounds(q_lo, q_hi, a, d_lo, d_hi, b, metric)
    return mn, mx, q_end[a] - q_start[a], d_end[b] - d_start[b]


@njit(cache=True, inline="always")
def _split_a(a_leaf, b_leaf, na, nb):
    """Whether to split node ``a`` of a pair (else ``b``): the larger one, unless a leaf."""
    return b_leaf or (not a_leaf and na >= nb)


@njit(cache=True)
def _traverse_sym(a0, b0, X, XT, tree, thr, metric, node_add, pt, ws):
    """Self counts under the node pair (a0, b0), each unordered pair of points once."""
    start, end, left, right, lo, hi = tree
    stack_a, stack_b = _pair_stack(a0, b0)
    sp = 1
    while sp > 0:
        sp, a, b = _pop(stack_a, stack_b, sp)
        mn, mx, na, nb = _pair_bounds(tree, a, tree, b, metric)
        if mn > thr:
            continue
        if mx <= thr:
            node_add[a] += nb
            if a != b:
                node_add[b] += na
            continue
        a_leaf = left[a] < 0
        b_leaf = left[b] < 0
        if a_leaf and b_leaf:
            if a == b:
                w = widest_feature(lo, hi, a)[0]  # the leaf's sort order
                _leaf_self(X, XT, start[a], end[a], w, thr, metric, pt, ws[6])
            else:
                _leaf_pair(
                    X,
                    XT,
                    start[a],
                    end[a],
                    a,
                    lo,
                    hi,
                    XT,
                    start[b],
                    end[b],
                    b,
                    lo,
                    hi,
                    thr,
                    metric,
                    True,
                    _BIG,
                    pt,
                    node_add,
                    pt,
                    ws,
                )
            continue
        if a == b:
            la = left[a]
            ra = right[a]
            sp = _push(stack_a, stack_b, sp, la, la)
            sp = _push(stack_a, stack_b, sp, la, ra)
            sp = _push(stack_a, stack_b, sp, ra, ra)
        elif _split_a(a_leaf, b_leaf, na, nb):
            sp = _push(stack_a, stack_b, sp, right[a], b)
            sp = _push(stack_a, stack_b, sp, left[a], b)
        else:
            sp = _push(stack_a, stack_b, sp, a, right[b])
            sp = _push(stack_a, stack_b, sp, a, left[b])


@njit(cache=True, inline="always")
def _path_add(parent, node_add, a):
    s = 0
    while a >= 0:
        s += node_add[a]
        a = parent[a]
    return s


@njit(cache=True, inline="always")
def _mark_capped(a, top, parent, left, right, capped):
    """Mark ``a`` capped and every ancestor below ``top`` whose two children are capped."""
    capped[a] = True
    while a != top:
        p = parent[a]
        if capped[left[p]] and capped[right[p]]:
            capped[p] = True
            a = p
        else:
            break


@njit(cache=True)
def _traverse_cross(a0, job, ws):
    """Counts of the query points under query node ``a0`` against the whole data tree.

    ``job`` is the tuple :func:`count_cross_trees` builds (the trees, the threshold, the
    cap and the counters). The task owns ``a0``'s subtree (its counters and ``capped``
    flags). With ``use_cap``, query nodes whose points all reached ``cap`` are skipped and
    the nearer data child is visited first, so dense points reach the cap early.

    The walk looks like :func:`_traverse_sym`'s but acts differently on every pair (two
    trees, one-sided counts, caps); only the stack handling is shared (``_push``).
    """
    qX, qXT, qtree, parent, dXT, dtree, thr, metric, cap, use_cap, node_add, pt, capped = job
    q_start, q_end, q_left, q_right, q_lo, q_hi = qtree
    d_start, d_end, d_left, d_right, d_lo, d_hi = dtree
    stack_a, stack_b = _pair_stack(a0, 0)
    sp = 1
    while sp > 0:
        sp, a, b = _pop(stack_a, stack_b, sp)
        if use_cap and capped[a]:
            continue
        mn, mx, na, nb = _pair_bounds(qtree, a, dtree, b, metric)
        if mn > thr:
            continue
        if mx <= thr:
            node_add[a] += nb
            if use_cap and _path_add(parent, node_add, a) >= cap:
                _mark_capped(a, a0, parent, q_left, q_right, capped)
            continue
        a_leaf = q_left[a] < 0
        b_leaf = d_left[b] < 0
        if a_leaf and b_leaf:
            limit = _BIG
            if use_cap:
                limit = cap - _path_add(parent, node_add, a)
            _leaf_pair(
                qX,
                qXT,
                q_start[a],
                q_end[a],
                a,
                q_lo,
                q_hi,
                dXT,
                d_start[b],
                d_end[b],
                b,
                d_lo,
                d_hi,
                thr,
                metric,
                False,
                limit,
                pt,
                node_add,
                pt,
                ws,
            )
            if use_cap:
                done = True
                for i in range(q_start[a], q_end[a]):
                    if pt[i] < limit:
                        done = False
                        break
                if done:
                    _mark_capped(a, a0, parent, q_left, q_right, capped)
            continue
        if _split_a(a_leaf, b_leaf, na, nb):
            sp = _push(stack_a, stack_b, sp, q_right[a], b)
            sp = _push(stack_a, stack_b, sp, q_left[a], b)
        else:
            near = d_left[b]
            far = d_right[b]
            if use_cap:
                ml, _ = box_bounds(q_lo, q_hi, a, d_lo, d_hi, near, metric)
                mr, _ = box_bounds(q_lo, q_hi, a, d_lo, d_hi, far, metric)
                if mr < ml:
                    near, far = far, near
            sp = _push(stack_a, stack_b, sp, a, far)
            sp = _push(stack_a, stack_b, sp, a, near)


@njit(cache=True)
def _push_down(left, right, start, end, acc):
    """Per-point totals (tree order) of the per-node additions ``acc`` (modified in place)."""
    m = left.shape[0]
    n = end[0] - start[0]
    out = np.zeros(n, np.int64)
    for node in range(m):  # parents before children
        if left[node] >= 0:
            acc[left[node]] += acc[node]
            acc[right[node]] += acc[node]
        else:
            v = acc[node]
            for i in range(start[node], end[node]):
                out[i] += v
    return out


# Parallel and serial drivers stay separate functions: Numba's on-disk cache keys a
# function by its source, not its options, so one body compiled both with and without
# ``parallel=True`` would load the wrong version from the cache.


@njit(cache=True, parallel=True)
def _sym_parallel(task_a, task_b, X, XT, tree, thr, metric, node_add, pt, width):
    for t in prange(task_a.shape[0]):
        tid = numba.get_thread_id()
        ws = _workspace(X.shape[1], width)
        _traverse_sym(task_a[t], task_b[t], X, XT, tree, thr, metric, node_add[tid], pt[tid], ws)


@njit(cache=True)
def _sym_serial(task_a, task_b, X, XT, tree, thr, metric, node_add, pt, width):
    ws = _workspace(X.shape[1], width)
    for t in range(task_a.shape[0]):
        _traverse_sym(task_a[t], task_b[t], X, XT, tree, thr, metric, node_add[0], pt[0], ws)


@njit(cache=True, parallel=True)
def _cross_parallel(tasks, job, width):
    # A parallel loop cannot take a tuple holding tuples (the trees): unpacked outside it.
    qX, qXT, qtree, parent, dXT, dtree, thr, metric, cap, use_cap, node_add, pt, capped = job
    for t in prange(tasks.shape[0]):
        ws = _workspace(qX.shape[1], width)
        task = (qX, qXT, qtree, parent, dXT, dtree, thr, metric, cap, use_cap, node_add, pt, capped)
        _traverse_cross(tasks[t], task, ws)


@njit(cache=True)
def _cross_serial(tasks, job, width):
    ws = _workspace(job[0].shape[1], width)
    for t in range(tasks.shape[0]):
        _traverse_cross(tasks[t], job, ws)


def _totals(tree: KDTree, node_add: np.ndarray, pt: np.ndarray) -> np.ndarray:
    """Per-point counts (tree order): pushed-down node additions plus point additions, each
    summed over the accumulator rows (NumPy reductions: one compiled kernel fewer)."""
    out = _push_down(tree.left, tree.right, tree.start, tree.end, node_add.sum(axis=0))
    out += pt.sum(axis=0)
    return out


@njit(cache=True)
def _self_tasks(front, lo, hi, thr, metric, start, end):
    """Pairs (i <= j) of frontier nodes that are not pruned, and their sizes (products)."""
    f = front.shape[0]
    ta = np.empty(f * (f + 1) // 2, np.int64)
    tb = np.empty(f * (f + 1) // 2, np.int64)
    cost = np.empty(f * (f + 1) // 2, np.float64)
    k = 0
    for i in range(f):
        for j in range(i, f):
            a = front[i]
            b = front[j]
            mn, _mx = box_bounds(lo, hi, a, lo, hi, b, metric)
            if mn > thr:
                continue
            ta[k] = a
            tb[k] = b
            cost[k] = float(end[a] - start[a]) * float(end[b] - start[b])
            k += 1
    return ta[:k], tb[:k], cost[:k]


def _parents(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    parent = np.full(left.shape[0], -1, np.int64)
    inner = np.flatnonzero(left >= 0)
    parent[left[inner]] = inner
    parent[right[inner]] = inner
    return parent


def _inverse(perm: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.empty_like(values)
    out[perm] = values
    return out


def _width(*trees: KDTree) -> int:
    return max(int((t.end - t.start).max()) for t in trees)


def count_self_tree(tree: KDTree, thr: float, metric: str) -> np.ndarray:
    """Exact self ball counts over a built tree, symmetric traversal (original row order)."""
    code = metric_code(metric)
    n = tree.points.shape[0]
    n_rows = accumulator_rows(n)
    front = frontier(tree.left, tree.right, max(16, 16 * n_rows))
    ta, tb, cost = _self_tasks(front, tree.lo, tree.hi, thr, code, tree.start, tree.end)
    order = np.argsort(-cost, kind="stable")  # largest first
    ta, tb = ta[order], tb[order]
    node_add = np.zeros((n_rows, tree.n_nodes), np.int64)
    pt = np.zeros((n_rows, n), np.int64)
    args = (
        ta,
        tb,
        tree.points,
        tree.points_t,
        tree.arrays(),
        thr,
        code,
        node_add,
        pt,
        _width(tree),
    )
    if n_rows > 1:
        with numba.parallel_chunksize(1):
            _sym_parallel(*args)
    else:
        _sym_serial(*args)
    return _inverse(tree.perm, _totals(tree, node_add, pt))


def count_cross_trees(
    qtree: KDTree, dtree: KDTree, thr: float, metric: str, cap: int | None
) -> np.ndarray:
    """Ball counts of the points of ``qtree`` against those of ``dtree`` (query row order).

    With ``cap``, counts are ``min(true, cap)`` and capped query nodes are skipped.
    """
    code = metric_code(metric)
    nq = qtree.points.shape[0]
    parallel = accumulator_rows(nq + dtree.points.shape[0]) > 1
    tasks = frontier(qtree.left, qtree.right, 32 * int(numba.get_num_threads()) if parallel else 1)
    parent = _parents(qtree.left, qtree.right)
    use_cap = cap is not None
    cap_value = int(cap) if use_cap else 0
    node_add = np.zeros((1, qtree.n_nodes), np.int64)
    pt = np.zeros((1, nq), np.int64)
    capped = np.zeros(qtree.n_nodes, np.bool_)
    job = (
        qtree.points,
        qtree.points_t,
        qtree.arrays(),
        parent,
        dtree.points_t,
        dtree.arrays(),
        thr,
        code,
        cap_value,
        use_cap,
        node_add[0],
        pt[0],
        capped,
    )
    args = (tasks, job, _width(qtree, dtree))
    if parallel:
        with numba.parallel_chunksize(1):
            _cross_parallel(*args)
    else:
        _cross_serial(*args)
    counts = _totals(qtree, node_add, pt)
    if use_cap:
        np.minimum(counts, cap_value, out=counts)
    return _inverse(qtree.perm, counts)


def count_self(
    data: np.ndarray,
    thr: float,
    metric: str,
    cap: int | None,
    leaf_size: int | None = None,
    strategy: str = "auto",
) -> np.ndarray:
    """Self ball counts (each record counts itself) in the original row order.

    ``strategy``: ``"sym"`` visits each pair of points once (best when few counts reach the
    cap); ``"cross"`` counts every record as a query against the data, skipping records
    whose count reached ``cap``; ``"auto"`` is ``"sym"`` without a cap and otherwise picks
    by the share of capped records in a small deterministic sample.
    """
    tree = build_tree(data) if leaf_size is None else build_tree(data, leaf_size)
    if strategy == "auto":
        strategy = "sym" if cap is None else _pick_strategy(tree, thr, metric, cap)
    if strategy == "sym":
        counts = count_self_tree(tree, thr, metric)
        if cap is not None:
            np.minimum(counts, cap, out=counts)
        return counts
    return count_cross_trees(tree, tree, thr, metric, cap)


_SAMPLE = 512
_CROSS_SHARE = 0.5


def _pick_strategy(tree: KDTree, thr: float, metric: str, cap: int) -> str:
    """``"cross"`` if at least half of a sample of records reach the cap, else ``"sym"``."""
    n = tree.points.shape[0]
    if n <= 4 * _SAMPLE:
        return "cross"
    idx = np.linspace(0, n - 1, _SAMPLE).astype(np.int64)  # tree order: spread over space
    sample = build_tree(tree.points[idx])
    counts = count_cross_trees(sample, tree, thr, metric, cap)
    return "cross" if np.mean(counts >= cap) >= _CROSS_SHARE else "sym"


def count_queries(
    data: np.ndarray,
    queries: np.ndarray,
    thr: float,
    metric: str,
    cap: int | None,
    leaf_size: int | None = None,
) -> np.ndarray:
    """Ball counts of query points against the data (original query order)."""
    size = {} if leaf_size is None else {"leaf_size": leaf_size}
    return count_cross_trees(
        build_tree(queries, **size), build_tree(data, **size), thr, metric, cap
    )
