"""scikit-learn plumbing shared by privad's estimators.

privad's estimators follow scikit-learn's conventions (``__init__`` stores parameters,
``fit`` learns, fitted attributes end in ``_``) without inheriting from
:class:`sklearn.base.BaseEstimator`, whose parameter introspection reads the ``__init__``
signature; :class:`ParamsMixin` gives the same ``get_params``/``set_params`` from one
explicit tuple of names, so ``sklearn.base.clone`` and grid searches work.
"""

from __future__ import annotations

from typing import Any, ClassVar

from privad.errors import NotFittedError, ParameterError

__all__ = ["ParamsMixin"]


class ParamsMixin:
    """``get_params``/``set_params``/``repr`` from the class's ``_PARAMS`` tuple."""

    _PARAMS: ClassVar[tuple[str, ...]] = ()
    _REPR_PARAMS: ClassVar[int | None] = None  # how many parameters repr shows (None: all)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters (scikit-learn convention)."""
        return {name: getattr(self, name) for name in self._PARAMS}

    def set_params(self, **params: Any) -> Any:
        """Set constructor parameters (scikit-learn convention); refit afterwards."""
        for name, value in params.items():
            if name not in self._PARAMS:
                raise ParameterError(
                    f"unknown parameter {name!r}; allowed: {', '.join(self._PARAMS)}"
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        shown = self._PARAMS[: self._REPR_PARAMS]
        args = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        return f"{type(self).__name__}({args})"

    def _require_fitted(self, attribute: str) -> None:
        """Raise :class:`~privad.errors.NotFittedError` unless ``attribute`` was fitted."""
        if not hasattr(self, attribute):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X) first"
            )
