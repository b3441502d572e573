"""Trials of the noisy binary search with checkpoints (section 6.3), run in worker processes."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privad.accounting.exact import to_fraction
from privad.experiments.search.data import TOP_K, _seed
from privad.experiments.search_problems import repeat_search
from privad.noise import Randomness, as_randomness
from privad.search import HaltingRule, SearchProblem
from privad.search.halting import SearchState
from privad.validation import check_int


class _BudgetCheckpoints(HaltingRule):
    """Observe the belief at budget checkpoints b_1 < ... < b_m; stop after the last.

    Before query T + 1 the budget rule b would stop when (T + 1)ε > b: that is when the run
    with budget b ends, so S is read there; the search goes on to the next checkpoint.
    """

    name = "budget"

    def __init__(self, budgets: Sequence[float], anomaly: int, top_k: int) -> None:
        self.budgets = sorted(float(b) for b in budgets)
        self._b = [to_fraction(b) for b in self.budgets]
        self.anomaly, self.top_k = anomaly, top_k
        self.hits: list[tuple[bool, int]] = []

    def query_limit(self, epsilon: float) -> int:
        return int(self._b[-1] // to_fraction(epsilon))

    def fired(self, state: SearchState) -> tuple[str, ...]:
        eps = to_fraction(state.epsilon)
        spent_next = (state.n_queries + 1) * eps
        while len(self.hits) < len(self._b) and spent_next > self._b[len(self.hits)]:
            top = state.posterior.top(min(self.top_k, state.n_items))
            self.hits.append((bool(np.any(top == self.anomaly)), state.n_queries))
        return (self.name,) if len(self.hits) == len(self._b) else ()


class _AlphaCheckpoints(HaltingRule):
    """Observe the belief when max f first exceeds α_1 < ... < α_m; stop after the last."""

    name = "posterior"

    def __init__(self, alphas: Sequence[float], anomaly: int, top_k: int) -> None:
        self.alphas = sorted(float(a) for a in alphas)
        self._log = [math.log(a) for a in self.alphas]
        self.anomaly, self.top_k = anomaly, top_k
        self.hits: list[tuple[bool, int]] = []

    def fired(self, state: SearchState) -> tuple[str, ...]:
        level = state.posterior.max_log_probability()
        while len(self.hits) < len(self._log) and level > self._log[len(self.hits)]:
            top = state.posterior.top(min(self.top_k, state.n_items))
            self.hits.append((bool(np.any(top == self.anomaly)), state.n_queries))
        return (self.name,) if len(self.hits) == len(self._log) else ()


@dataclass
class _Runs:
    """Per-run outcomes of one setting."""

    success: list[bool] = field(default_factory=list)
    queries: list[int] = field(default_factory=list)
    halted: list[tuple[str, ...]] = field(default_factory=list)


def _streams(seed: int, *parts: Any) -> tuple[Randomness, Randomness]:
    oracle_rng, search_rng = as_randomness(_seed(seed, *parts)).spawn(2)
    return oracle_rng, search_rng


def _summary(runs: _Runs, epsilon: float) -> dict[str, Any]:
    c = len(runs.success)
    q = np.asarray(runs.queries, dtype=np.float64)
    return {
        "runs": c,
        "successes": int(sum(runs.success)),
        "error_rate": 1.0 - sum(runs.success) / c,
        "mean_queries": float(q.mean()),
        "mean_privacy": float(q.mean() * epsilon),
        "max_privacy": float(q.max() * epsilon),
    }


def _trials(
    problem: SearchProblem,
    *,
    kind: str,
    epsilon: float,
    runs: int,
    rng_parts: tuple,
    seed: int,
    halting: HaltingRule,
    budget: float | None,
    max_queries: int,
) -> _Runs:
    out = _Runs()
    for res in repeat_search(
        problem,
        runs,
        kind=kind,
        epsilon=epsilon,
        rng=_seed(seed, *rng_parts),
        halting=halting,
        budget=budget,
        top_k=TOP_K,
        max_queries=max_queries,
    ):
        out.success.append(res.contains(problem.anomaly_index))
        out.queries.append(res.n_queries)
        out.halted.append(res.halted_by)
    return out


Progress = Callable[[str], None] | None


def _run_tasks(
    fn: Callable[..., list[dict[str, Any]]],
    tasks: list[tuple[tuple, str]],
    workers: int,
    tick: Progress,
) -> list[dict[str, Any]]:
    """``fn(*args)`` for every ``(args, label)`` in order, in ``workers`` processes if > 1;
    ``tick(label)`` as each finishes. The rows come back in task order."""
    workers = check_int(workers, "workers", minimum=1)
    results: list[list[dict[str, Any]]] = [[] for _ in tasks]
    if workers == 1 or len(tasks) < 2:
        for k, (args, label) in enumerate(tasks):
            results[k] = fn(*args)
            if tick is not None:
                tick(label)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # fork where the platform has it (the children only compute; spawn would re-import
        # the caller's main module, which breaks scripts without a __main__ guard)
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context) as pool:
            futures = {pool.submit(fn, *args): k for k, (args, _) in enumerate(tasks)}
            for future in as_completed(futures):
                k = futures[future]
                results[k] = future.result()
                if tick is not None:
                    tick(tasks[k][1])
    return [row for rows in results for row in rows]
