"""PrivadEstimator: scikit-learn's BaseEstimator with privad's errors and validation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError

from privad.accounting import Guarantee, Ledger
from privad.base import InputTypeError, PrivadEstimator, process_ledger, row_hashes
from privad.errors import BudgetExceededError, DataError, NotFittedError, ParameterError


class Toy(PrivadEstimator):
    def __init__(self, a: int = 1, b: str = "x") -> None:
        self.a = a
        self.b = b

    def fit(self, X, y=None):  # noqa: ANN001, ANN201
        self.X_ = self._validate(X, reset=True)
        return self


def test_get_set_params_and_clone() -> None:
    toy = Toy(a=3)
    assert toy.get_params() == {"a": 3, "b": "x"}
    assert toy.set_params(b="y") is toy and toy.b == "y"
    copy = clone(toy)
    assert copy is not toy and copy.get_params() == toy.get_params()
    assert repr(toy) == "Toy(a=3, b='y')"


def test_unknown_parameter_and_not_fitted() -> None:
    with pytest.raises(ParameterError, match="unknown parameter 'c'; allowed: a, b"):
        Toy().set_params(c=1)
    with pytest.raises(NotFittedError, match="Toy is not fitted yet"):
        Toy()._require_fitted("X_")
    assert issubclass(NotFittedError, AttributeError)
    assert issubclass(NotFittedError, SklearnNotFittedError)


def test_validation_errors_are_privad_errors() -> None:
    assert Toy().fit([[1.0, 2.0]]).n_features_in_ == 2
    with pytest.raises(DataError, match="NaN"):
        Toy().fit([[np.nan, 1.0]])
    with pytest.raises(InputTypeError):
        Toy().fit([[{}, 1.0]])


# -- the process's in-memory ledgers (issue 26) --------------------------------------------


def test_row_hashes_recognise_records_by_value() -> None:
    X = np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [0.0, -0.0]])
    h = row_hashes(X)
    assert h.dtype == np.uint64 and len(h) == 3  # the repeated row once, sorted
    assert np.all(np.diff(h.astype(object)) > 0)
    np.testing.assert_array_equal(row_hashes(X[::-1]), h)  # any order
    np.testing.assert_array_equal(row_hashes([[0.0, 0.0]]), row_hashes([[-0.0, 0.0]]))
    assert np.isin(row_hashes(X[1:2]), h).all()
    # a row is its values in order, and its width counts: no collision between these
    other = row_hashes([[2.0, 1.0], [1.0, np.nextafter(2.0, 3.0)]])  # swapped; one ulp off
    assert not np.isin(other, h).any()
    assert not np.isin(row_hashes([[1.0, 2.0, 0.0]]), row_hashes([[1.0, 2.0]])).any()


class Spender(PrivadEstimator):
    """A releasing estimator reduced to its accounting: each ``release`` spends ``cost``."""

    def __init__(self, cost: float = 1.0, budget=None, scope: str = "s") -> None:  # noqa: ANN001
        self.cost = cost
        self.budget = budget
        self.scope = scope

    def fit(self, X, y=None):  # noqa: ANN001, ANN201
        data = self._validate(X, reset=True)
        self.scope_ = self.scope
        self._open_account(row_hashes(data), Ledger, "pure-dp")
        return self

    def release(self, rows=None) -> None:  # noqa: ANN001
        with self._own_ledger("pure-dp", rows) as book:
            g = Guarantee("pure-dp", self.cost, "add or remove one record")
            book.spend(self.scope_, g, "a release")


def _live(book) -> list[float]:  # noqa: ANN001
    return [s.epsilon for s in book.history(include_cancelled=False)]


def test_joined_accounts_add_their_spends_and_keep_the_smaller_budget() -> None:
    X = np.arange(20.0).reshape(10, 2)
    a, b = Spender(1.0, budget=5.0).fit(X[:5]), Spender(2.0, budget=4.0).fit(X[5:])
    a.release()
    b.release()
    assert a.ledger_ is not b.ledger_ and _live(a.ledger_) == [1.0]
    kept = pickle.loads(pickle.dumps(a))  # pickled before the join
    c = Spender(1.0).fit(X[4:6])  # records of both groups join them: 1 + 2, budget min(5, 4)
    assert a.ledger_ is b.ledger_ is c.ledger_ is kept.ledger_  # everyone follows the join
    assert sorted(_live(c.ledger_)) == [1.0, 2.0]
    assert c.ledger_.budget("s", "pure-dp").total == 4
    with pytest.raises(BudgetExceededError):
        b.release()  # 3 + 2 > 4
    c.release()  # no budget of its own: the account's 4 caps it, 3 + 1 <= 4
    a.release()  # a declares its own 5 before it releases: 4 + 1 <= 5
    with pytest.raises(BudgetExceededError, match="already spent ε 5 .* more than its budget 4"):
        b.release()
    assert sum(_live(a.ledger_)) == 5.0


def test_a_scope_and_other_records_are_other_accounts() -> None:
    X = np.arange(20.0).reshape(10, 2)
    a = Spender().fit(X)
    a.release()
    assert Spender(scope="t").fit(X).ledger_ is not a.ledger_
    assert Spender().fit(X + 100.0).ledger_ is not a.ledger_
    assert Spender().fit(X[3:4]).ledger_ is a.ledger_
    assert process_ledger(X[:2], "s") is a.ledger_ and process_ledger(X + 100.0, "t") is None
    with pytest.raises(ParameterError, match="scope"):
        process_ledger(X, " ")
    with pytest.raises(AttributeError, match="no ledger_ before fit"):
        Spender().ledger_  # noqa: B018
