"""ParamsMixin: the scikit-learn parameter protocol from one tuple of names."""

from __future__ import annotations

import pytest
from sklearn.base import clone

from privad.base import ParamsMixin
from privad.errors import NotFittedError, ParameterError


class Toy(ParamsMixin):
    _PARAMS = ("a", "b")

    def __init__(self, a: int = 1, b: str = "x") -> None:
        self.a = a
        self.b = b


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
        Toy()._require_fitted("model_")
    assert issubclass(NotFittedError, AttributeError)
