"""A search charged to a ledger: privad.search.session (the body of 'privad search run')."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from privad.accounting import ANOMALY_RESTRICTED_DP, Ledger
from privad.errors import BudgetExceededError, ParameterError
from privad.search import (
    DEFAULT_MAX_QUERIES,
    PrivacyBudget,
    halting_rule,
    ledger_search,
    make_oracle,
)
from privad.search.session import remote_query_cap

VALUES = np.ones(64)
VALUES[17] = 9.0


def _make(book, scope):
    return make_oracle("laplace", VALUES, 2.0, 8.0, 1.0, rng=5, ledger=book, scope=scope)


def test_a_new_ledger_gets_the_budget_and_every_answer_is_charged(tmp_path):
    path = str(tmp_path / "l.sqlite")
    run = ledger_search(
        make_oracle=_make,
        budget=5.0,
        scope="s",
        halting=PrivacyBudget(5.0),
        ledger=path,
        rng=1,
    )
    assert run.notes == ("created the anomaly-restricted-dp budget of scope 's': total ε 5",)
    assert run.result.n_queries == 5  # (T + 1)ε > b stops it at T = 5
    assert float(run.account.spent) == pytest.approx(5.0)
    assert float(run.account.total) == 5.0
    assert run.recorded is None
    with Ledger(path) as book:  # the file holds the five answers
        assert len(book.history("s")) == 5
        assert float(book.budget("s", ANOMALY_RESTRICTED_DP).spent) == pytest.approx(5.0)


def test_an_existing_budget_is_kept_and_the_ledger_stops_the_search(tmp_path):
    path = str(tmp_path / "l.sqlite")
    with Ledger(path, create=True) as book:
        book.set_budget("s", ANOMALY_RESTRICTED_DP, 3.0)
    run = ledger_search(
        make_oracle=_make, budget=50.0, scope="s", halting=PrivacyBudget(50.0), ledger=path
    )
    assert run.notes == ()
    assert run.result.n_queries == 3
    assert run.halted == ("ledger (3 queries were left in scope 's')",)
    assert float(run.account.remaining) == pytest.approx(0.0)


def test_without_a_ledger_the_local_oracle_records_in_its_own():
    run = ledger_search(make_oracle=_make, budget=4.0, scope="s", halting=PrivacyBudget(4.0))
    assert run.account is None
    assert run.recorded == pytest.approx(4.0) == run.result.epsilon_spent


def test_progress_reports_answered_and_planned():
    seen = []
    ledger_search(
        make_oracle=_make,
        budget=3.0,
        scope="s",
        halting=PrivacyBudget(3.0),
        progress=lambda t, planned: seen.append((t, planned)),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_one_oracle_or_one_factory():
    with pytest.raises(ParameterError, match="one"):
        ledger_search(budget=1.0, scope="s", halting=PrivacyBudget(1.0))


def _remote(epsilon=1.0, kind="laplace", left=10):
    return SimpleNamespace(
        epsilon=epsilon,
        description={"kind": kind},
        last_budget={"queries_left": left, "scope": "o", "total": 10, "spent": 10 - left},
        base_url="http://h:1",
    )


def test_remote_query_cap():
    assert remote_query_cap(_remote(left=10)) == 10
    assert remote_query_cap(_remote(left=DEFAULT_MAX_QUERIES + 1)) is None
    assert remote_query_cap(_remote(), epsilon=1.0, kind="laplace") == 10
    with pytest.raises(ParameterError, match="ε = 1 per query; --epsilon 2 differs"):
        remote_query_cap(_remote(), epsilon=2.0)
    with pytest.raises(ParameterError, match="kind 'laplace'; --kind binarized differs"):
        remote_query_cap(_remote(), kind="binarized")
    with pytest.raises(BudgetExceededError, match="no budget left"):
        remote_query_cap(_remote(left=0))


def test_a_remote_oracle_is_checked_before_any_query():
    """ledger_search applies remote_query_cap itself: a server with nothing left, or with
    another ε than the one asked for, is refused before a query is sent."""
    halting = PrivacyBudget(5.0)
    with pytest.raises(BudgetExceededError, match="no budget left"):
        ledger_search(_remote(left=0), budget=5.0, scope="s", halting=halting)
    with pytest.raises(ParameterError, match="--epsilon 2 differs"):
        ledger_search(_remote(), epsilon=2.0, budget=5.0, scope="s", halting=halting)


def test_halting_rule_reads_every_rule_and_keeps_the_budget():
    specs = ["posterior:0.9", "log-odds:0.05", "ben-or-hassidim", "max-queries:7"]
    rule = halting_rule(specs, 3.0)
    assert repr(rule) == (
        "PosteriorThreshold(0.9) | LogOddsThreshold(0.05) | BenOrHassidim() | MaxQueries(7) "
        "| PrivacyBudget(3.0)"
    )
    assert rule.query_limit(1.0) == 3
    assert repr(halting_rule(None, 2.0)) == "PosteriorThreshold(0.5) | PrivacyBudget(2.0)"
    assert repr(halting_rule(["budget"], 2.0)) == "PrivacyBudget(2.0)"
    under_delta = halting_rule(["budget"], 2.0, linear=False)  # the ledger stops it
    assert repr(under_delta) == f"MaxQueries({DEFAULT_MAX_QUERIES})"
    for bad in ("sometimes", "posterior:1.5", "log-odds:0", "max-queries:0", "max-queries:x"):
        with pytest.raises(ParameterError, match="--halting"):
            halting_rule([bad], 1.0)


def test_the_summary_and_the_posterior_file_name_the_items(tmp_path):
    run = ledger_search(make_oracle=_make, budget=4.0, scope="s", halting=PrivacyBudget(4.0), rng=1)
    items = np.arange(VALUES.size) + 100
    data = run.summary(items)
    assert (data["queries"], data["epsilon_spent"], data["recorded_epsilon"]) == (4, 4.0, 4.0)
    assert data["ledger_account"] is None and data["oracle_budget"] is None
    assert data["kind"] == "laplace" and data["epsilon_per_query"] == 1.0
    assert [row["item"] for row in data["top"]] == (run.result.top + 100).tolist()
    assert data["top"][0]["posterior"] == float(run.result.posterior[run.result.top[0]])
    path = tmp_path / "post.csv"
    run.write_posterior(path, items)
    lines = path.read_text().splitlines()
    assert lines[0] == "item,posterior" and len(lines) == VALUES.size + 1
    assert lines[1 + 17].startswith("117,")  # row i names item i + 100
