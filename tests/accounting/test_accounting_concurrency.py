"""Several processes spending against one ledger file must never overspend."""

from __future__ import annotations

import multiprocessing as mp
from fractions import Fraction
from pathlib import Path

from privad.accounting import Guarantee, Ledger
from privad.errors import BudgetExceededError

WORKERS = 4
ATTEMPTS = 15
EPSILON = 0.1
TOTAL = 2.5  # allows exactly 25 spends of 0.1, out of 60 attempts
ALLOWED = 25


def _spend_many(path: str, worker: int, barrier, results, use_reserve: bool, mixed: bool) -> None:
    """Worker: open the ledger, wait for everyone, then try ATTEMPTS spends as fast as possible.

    ``mixed``: every other spend is (ε, 1)-sensitive instead of ε-DP, so the two notions race
    for the sensitive budget (an ε-DP spend counts against it too).
    """
    dp = Guarantee("pure-dp", EPSILON, "add or remove one record")
    sp = Guarantee("sensitive", EPSILON, "1-sensitive neighbourhood graph", k=1)
    accepted = refused = 0
    with Ledger(path, default_budget=1.0 if use_reserve else None) as ledger:
        barrier.wait()
        for i in range(ATTEMPTS):
            g = sp if mixed and (i + worker) % 2 else dp
            try:
                if use_reserve and i % 2:
                    with ledger.reserve("shared", g, f"w{worker}-{i}"):
                        pass
                else:
                    ledger.spend("shared", g, f"w{worker}-{i}", {"worker": worker})
                accepted += 1
            except BudgetExceededError:
                refused += 1
    results.put((worker, accepted, refused))


def _run(path: Path, use_reserve: bool, mixed: bool = False) -> list[tuple[int, int, int]]:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_spend_many, args=(str(path), w, barrier, results, use_reserve, mixed))
        for w in range(WORKERS)
    ]
    for p in procs:
        p.start()
    out = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return out


def test_concurrent_spends_never_overspend(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget("shared", "pure-dp", TOTAL)
    out = _run(path, use_reserve=False)
    assert sum(a for _, a, _ in out) == ALLOWED
    assert sum(r for _, _, r in out) == WORKERS * ATTEMPTS - ALLOWED
    with Ledger(path, create=False) as ledger:
        history = ledger.history("shared")
        assert len(history) == ALLOWED
        assert len({h.label for h in history}) == ALLOWED
        budget = ledger.budget("shared", "pure-dp")
        assert budget.spent == Fraction(5, 2) == budget.total
        assert sum(Fraction(repr(h.epsilon)) for h in history) == budget.total
        ledger.verify()


def test_concurrent_first_use_of_a_fresh_file(tmp_path: Path) -> None:
    """All workers create the file and the (default) budget at the same moment."""
    path = tmp_path / "new" / "ledger.sqlite"
    out = _run(path, use_reserve=True)  # default_budget 1.0: exactly 10 spends of 0.1
    assert sum(a for _, a, _ in out) == 10
    with Ledger(path, create=False) as ledger:
        assert [b.total for b in ledger.budgets()] == [1]
        assert ledger.budget("shared", "pure-dp").spent == 1
        assert len(ledger.history("shared")) == 10
        assert [e.action for e in ledger.events()] == ["default-budget"]
        ledger.verify()


def test_concurrent_dp_and_sp_spends_never_overspend_the_sensitive_budget(tmp_path: Path) -> None:
    """ε-DP and (ε, k)-SP spends race; both count against the sensitive budget."""
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget("shared", "pure-dp", 100.0)
        ledger.set_budget("shared", "sensitive", TOTAL)
    out = _run(path, use_reserve=False, mixed=True)
    assert sum(a for _, a, _ in out) == ALLOWED
    with Ledger(path, create=False) as ledger:
        history = ledger.history("shared")
        assert {h.notion for h in history} == {"pure-dp", "sensitive"}
        assert ledger.budget("shared", "sensitive").spent == Fraction(5, 2)
        dp_total = sum(Fraction(repr(h.epsilon)) for h in history if h.notion == "pure-dp")
        assert ledger.budget("shared", "pure-dp").spent == dp_total
        ledger.verify()
