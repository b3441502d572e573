"""The estimator's budget cannot be reset or forked (issue 26 item 2), tested as an outsider.

The measure is what was *released*: every successful ``predict(Q, fresh=True)`` (or grid
search fold with a finite score) is one release of five questions farther than 2r apart,
so by Claim 5 it costs exactly ε. Whatever sequence of ``fit``, ``predict``, ``clone``,
``pickle``, ``deepcopy`` and ``GridSearchCV`` runs in one process on one data set, the
ε released stays within the budget, and every spend is in the ledgers the user can read.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from privad.accounting import Ledger
from privad.base import process_ledger
from privad.errors import BudgetExceededError, PrivacyWarning
from privad.sensitive import SensitiveAnomalyIdentifier

X = np.array([[10.0 * i, 0.0] for i in range(30)])  # 10 apart, r = 1: Claim 5's m = 1
Q = X[:5]
y = np.r_[np.zeros(25), np.ones(5)].astype(int)


def _est(epsilon: float, budget: float, **kw) -> SensitiveAnomalyIdentifier:  # type: ignore[no-untyped-def]
    kw.setdefault("rng", 1)
    return SensitiveAnomalyIdentifier(beta=2, r=1.0, epsilon=epsilon, budget=budget, **kw)


def _released(estimators, rounds: int = 2) -> float:  # type: ignore[no-untyped-def]
    """ε released by asking each estimator for fresh answers to Q, ``rounds`` times."""
    total = 0.0
    for _ in range(rounds):
        for est in estimators:
            try:
                est.predict(Q, fresh=True)
            except BudgetExceededError:
                continue
            total += est.epsilon
    return total


def _spent(ledger: Ledger) -> float:
    return sum(s.epsilon for s in ledger.history(include_cancelled=False))


def test_refitting_on_the_same_data_does_not_reset_the_budget() -> None:
    est = _est(0.4, 0.4)
    released = 0.0
    for _ in range(6):  # before: 6 releases, 2.4 ε under a budget of 0.4
        released += _released([est.fit(X)], rounds=1)
    assert released == pytest.approx(0.4)
    assert _spent(est.ledger_) == pytest.approx(0.4)
    # a refit on the same records in another order, or on a subset, is the same data
    est.fit(X[::-1])
    with pytest.raises(BudgetExceededError, match="spent 0.4"):
        est.predict(Q, fresh=True)
    assert est.fit(X[:20]).ledger_.spent("fitted-data", "sensitive") == pytest.approx(0.4)


@pytest.mark.parametrize("fork", ["pickle", "deepcopy", "clone"])
def test_copies_share_the_budget(fork) -> None:  # type: ignore[no-untyped-def]
    est = _est(0.6, 1.0).fit(X)
    copies = {
        "pickle": lambda: pickle.loads(pickle.dumps(est)),
        "deepcopy": lambda: copy.deepcopy(est),
        "clone": lambda: clone(est).fit(X),
    }
    others = [copies[fork]() for _ in range(2)]
    # before: each copy had its own 1.0: 1.8 ε released under budget=1.0
    assert _released([est, *others]) == pytest.approx(0.6)
    for e in (est, *others):
        assert _spent(e.ledger_) == pytest.approx(0.6)  # every copy shows the spend


def test_a_recorded_answer_survives_pickling_without_a_spend() -> None:
    est = _est(0.6, 1.0).fit(X)
    first = est.predict(Q)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Q), first)
    assert _spent(again.ledger_) == pytest.approx(0.6)


def test_a_grid_search_spends_one_budget_and_shows_it() -> None:
    order = np.random.default_rng(1).permutation(len(y))
    grid = GridSearchCV(
        _est(0.4, 1.0), {"beta": [1, 2]}, scoring="roc_auc", cv=3, error_score=np.nan
    )
    with pytest.warns(UserWarning):  # the folds past the budget could not be scored
        grid.fit(X[order], y[order])
    scored = sum(np.isfinite(grid.cv_results_[f"split{i}_test_score"]).sum() for i in range(3))
    # before: all 6 folds released (2.4 ε) and best_estimator_.ledger_ showed nothing
    assert scored == 2  # each fold's test questions are 10 records 10 apart: 0.4
    assert scored * 0.4 <= 1.0
    spends = grid.best_estimator_.ledger_.history(include_cancelled=False)
    assert len(spends) == scored and _spent(grid.best_estimator_.ledger_) == pytest.approx(0.8)
    assert process_ledger(X, "fitted-data") is grid.best_estimator_.ledger_
    # the refit estimator has what is left, 0.2: one more fold's questions are refused
    with pytest.raises(BudgetExceededError):
        grid.best_estimator_.predict(X[:10])


def test_disjoint_records_keep_separate_budgets_until_a_fit_joins_them() -> None:
    a = _est(0.4, 1.0).fit(X[:15])
    b = _est(0.4, 1.0).fit(X[15:])
    assert _released([a], rounds=2) == pytest.approx(0.8)
    assert _released([b.fit(X[15:])], rounds=1) == pytest.approx(0.4)  # other people
    assert a.ledger_ is not b.ledger_
    both = _est(0.1, 1.0).fit(X)  # overlaps both: their losses add up (1.2 > 1.0)
    assert _spent(both.ledger_) == pytest.approx(1.2)
    assert a.ledger_ is both.ledger_ is b.ledger_
    with pytest.raises(BudgetExceededError):
        both.predict(Q, fresh=True)


def test_another_budget_caps_the_records_total_and_scopes_are_apart() -> None:
    est = _est(0.4, 1.0).fit(X)
    assert _released([est]) == pytest.approx(0.8)
    small = _est(0.4, 0.5).fit(X)  # a smaller budget on the same records: already passed
    with pytest.raises(BudgetExceededError, match="already spent ε 0.8"):
        small.predict(Q, fresh=True)
    other = _est(0.4, 0.4, scope="another-study").fit(X)
    assert _released([other]) == pytest.approx(0.4)  # a scope is its own budget
    assert _spent(est.ledger_) == pytest.approx(0.8)


def test_a_persistent_ledger_is_the_way_across_processes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    est = _est(0.4, 1.0).fit(X)
    est.predict(Q)
    blob = tmp_path / "est.pickle"
    blob.write_bytes(pickle.dumps(est))
    unfitted = tmp_path / "clone.pickle"  # how a parallel grid search sends its clones
    unfitted.write_bytes(pickle.dumps(clone(est)))
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as book:
        book.set_budget("study", "sensitive", 1.0)
    script = (
        "import pickle, sys, warnings\n"
        "from privad.accounting import Ledger\n"
        "est = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "print(est.ledger_.spent('fitted-data', 'sensitive'))\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    est.predict(est.X_[5:10])\n"
        "print([w.category.__name__ for w in seen], str(seen[0].message))\n"
        "with Ledger(sys.argv[2]) as book:\n"
        "    est.predict(est.X_[10:15], ledger=book, scope='study')\n"
        "unfitted = pickle.loads(open(sys.argv[3], 'rb').read())\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    unfitted.fit(est.X_)\n"
        "print([w.category.__name__ for w in seen], str(seen[0].message))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(blob), str(path), str(unfitted)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    # the copy carries what was spent here, and says it is a copy when it releases
    assert float(out[0]) == pytest.approx(0.4)
    for line in out[1:]:  # a copy that releases, a clone fitted in another process
        assert line.startswith(f"['{PrivacyWarning.__name__}']") and "persistent ledger" in line
    assert "pickled in process" in out[2]
    with Ledger(path) as book:  # the persistent ledger saw the other process's release
        assert book.spent("study", "sensitive") == pytest.approx(0.4)
    assert _spent(est.ledger_) == pytest.approx(0.4)  # nothing here knows of the copy's


def test_a_question_asked_again_after_a_refit_gets_its_recorded_answer() -> None:
    est = _est(0.4, 0.4)
    first = est.fit(X).predict(Q)
    for again in (est.fit(X), clone(est).fit(X), _est(0.4, 0.4, rng=7).fit(X)):
        np.testing.assert_array_equal(again.predict(Q), first)  # no new noise, no spend
    assert _spent(est.ledger_) == pytest.approx(0.4)
    # another mechanism, or the records in another order, asks new questions: charged
    with pytest.raises(BudgetExceededError):
        _est(0.2, 0.4).fit(X).predict(Q)  # 0.4 + 0.2 > 0.4
    with pytest.raises(BudgetExceededError):
        est.fit(X[::-1]).predict()
