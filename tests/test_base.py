"""PrivadEstimator: scikit-learn's BaseEstimator with privad's errors and validation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError

from privad.base import InputTypeError, PrivadEstimator
from privad.errors import DataError, NotFittedError, ParameterError


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
