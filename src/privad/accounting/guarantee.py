"""The privacy guarantee a mechanism declares, as data.

Every mechanism in privad states what it guarantees (which notion, which ε, under which
neighbouring relation) as a :class:`Guarantee`, so that tests and the accountant can read it
without running the mechanism. Guarantees are combined by the functions in
:mod:`privad.accounting.composition` and charged to a budget by
:class:`privad.accounting.ledger.Ledger`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from privad.accounting.notions import NOTION_NAMES, NOTIONS, RELAXED_DP, RMP
from privad.accounting.tight import Component, merge
from privad.errors import ParameterError
from privad.validation import check_choice, check_epsilon, check_int, check_positive

_FIELDS = (
    "notion",
    "epsilon",
    "neighbouring",
    "k",
    "epsilon_outlier",
    "description",
    "components",
)


@dataclass(frozen=True)
class Guarantee:
    """A privacy guarantee: a notion, its parameters and its neighbouring relation.

    Parameters
    ----------
    notion:
        One of :data:`~privad.accounting.notions.NOTION_NAMES`: ``"pure-dp"`` (ε-DP),
        ``"sensitive"`` ((ε, k)-sensitive privacy), ``"anomaly-restricted-dp"`` (ε-DP for the
        non-anomalous individuals), ``"relaxed-dp"`` (ε for non-outliers, ε' for outliers) or
        ``"rmp"`` (reconstruction resistance, no ε).
    epsilon:
        The privacy parameter ε, a finite number > 0. For ``"rmp"`` it must be ``None`` or
        ``0`` and is stored as ``None``: RMP makes no ε-DP claim and never spends budget.
    neighbouring:
        The neighbouring relation in words, for example ``"add or remove one record"``.
        Must not be empty.
    k:
        For ``"sensitive"`` only (and required there): the k of the k-sensitive
        neighbourhood graph, an integer >= 1.
    epsilon_outlier:
        For ``"relaxed-dp"`` only (and required there): ε' for outliers, finite and >= ε
        (ε' = ε·GS/RS in the relaxed-sensitivity theorem).
    description:
        Free text: which mechanism, which query.
    components:
        What the release is made of, for (ε, δ) accounting
        (:class:`~privad.accounting.tight.Component`): how many answers of which mechanism
        can move with one record. Empty (default) means one ε-DP answer. Their linear sum
        Σ count·ε must equal ``epsilon`` (up to a relative 10⁻⁹): they describe the same
        release. :func:`~privad.accounting.composition.scaled` and
        :func:`~privad.accounting.composition.sequential` fill them in.

    Examples
    --------
    >>> from privad.accounting import Guarantee
    >>> g = Guarantee("pure-dp", 0.5, "add or remove one record", description="noisy count")
    >>> g.summary()
    'pure-dp (ε=0.5)'
    >>> Guarantee("sensitive", 0.1, "k-sensitive", k=2).k
    2
    """

    notion: str
    epsilon: float | None
    neighbouring: str
    k: int | None = None
    epsilon_outlier: float | None = None
    description: str = ""
    components: tuple[Component, ...] = ()

    def __post_init__(self) -> None:
        notion = check_choice(self.notion, "notion", NOTION_NAMES)
        info = NOTIONS[notion]
        if info.has_epsilon:
            epsilon: float | None = check_epsilon(self.epsilon, "epsilon")
        else:
            if self.epsilon is not None and not _is_zero(self.epsilon):
                raise ParameterError(
                    f"epsilon must be None (or 0) for notion {notion!r}, which carries no ε, "
                    f"got {self.epsilon!r}"
                )
            epsilon = None
        if not isinstance(self.neighbouring, str) or not self.neighbouring.strip():
            raise ParameterError(
                "neighbouring must be a non-empty description of the neighbouring relation "
                f"(e.g. 'add or remove one record'), got {self.neighbouring!r}"
            )
        if info.needs_k:
            if self.k is None:
                raise ParameterError(f"k is required for notion {notion!r} (an integer >= 1)")
            k: int | None = check_int(self.k, "k", minimum=1)
        elif self.k is not None:
            raise ParameterError(
                f"k applies only to notion 'sensitive', got k={self.k!r} for {notion!r}"
            )
        else:
            k = None
        if info.needs_epsilon_outlier:
            if self.epsilon_outlier is None:
                raise ParameterError(
                    f"epsilon_outlier (ε' for outliers, >= epsilon) is required for {notion!r}"
                )
            eps_out: float | None = check_positive(self.epsilon_outlier, "epsilon_outlier")
            assert epsilon is not None
            if eps_out < epsilon:
                raise ParameterError(
                    f"epsilon_outlier must be >= epsilon ({epsilon!r}) for {RELAXED_DP!r} "
                    f"(ε' = ε·GS/RS >= ε), got {eps_out!r}"
                )
        elif self.epsilon_outlier is not None:
            raise ParameterError(
                f"epsilon_outlier applies only to notion {RELAXED_DP!r}, "
                f"got epsilon_outlier={self.epsilon_outlier!r} for {notion!r}"
            )
        else:
            eps_out = None
        if not isinstance(self.description, str):
            raise ParameterError(f"description must be a string, got {self.description!r}")
        object.__setattr__(self, "notion", notion)
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "neighbouring", self.neighbouring.strip())
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "epsilon_outlier", eps_out)
        object.__setattr__(self, "components", _check_components(self.components, epsilon))

    @property
    def accounting_components(self) -> tuple[Component, ...]:
        """:attr:`components`, or one ε-DP answer when none are given (empty for ``"rmp"``)."""
        if self.components or self.epsilon is None:
            return self.components
        return (Component.pure(self.epsilon),)

    @property
    def cost(self) -> float:
        """The ε this guarantee charges to a budget: ε, or 0.0 for ``"rmp"``."""
        return 0.0 if self.epsilon is None else self.epsilon

    @property
    def spends_budget(self) -> bool:
        """Whether charging this guarantee uses budget (False only for ``"rmp"``)."""
        return NOTIONS[self.notion].has_epsilon

    def summary(self) -> str:
        """One line: notion and parameters, e.g. ``"(ε=0.5, k=2)-sensitive privacy"``."""
        if self.notion == RMP:
            return "RMP (reconstruction resistance, no ε)"
        params = [f"ε={self.epsilon!r}"]
        if self.k is not None:
            params.append(f"k={self.k}")
        if self.epsilon_outlier is not None:
            params.append(f"ε'={self.epsilon_outlier!r} for outliers")
        return f"{self.notion} ({', '.join(params)})"

    def __str__(self) -> str:
        return f"{self.summary()}; neighbouring: {self.neighbouring}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_dict` reads it back to an equal guarantee."""
        out = {name: getattr(self, name) for name in _FIELDS[:-1]}
        if self.components:
            out["components"] = [c.to_dict() for c in self.components]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Guarantee:
        """Rebuild (and re-validate) a guarantee from :meth:`to_dict` output."""
        if not isinstance(data, Mapping):
            raise ParameterError(f"a guarantee must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_FIELDS))
        if unknown:
            raise ParameterError(
                f"unknown guarantee field(s) {unknown}; allowed: {', '.join(_FIELDS)}"
            )
        missing = [name for name in ("notion", "neighbouring") if name not in data]
        if missing:
            raise ParameterError(f"guarantee is missing field(s) {missing}")
        kwargs = dict(data)
        kwargs.setdefault("epsilon", None)
        comps = kwargs.pop("components", None) or ()
        if not isinstance(comps, list | tuple):
            raise ParameterError(f"components must be a list, got {comps!r}")
        kwargs["components"] = tuple(Component.from_dict(c) for c in comps)
        return cls(**kwargs)


def _check_components(components: object, epsilon: float | None) -> tuple[Component, ...]:
    if not isinstance(components, tuple | list):
        raise ParameterError(f"components must be a tuple of Component, got {components!r}")
    if not components:
        return ()
    if epsilon is None:
        raise ParameterError("components apply only to notions with an ε, not to 'rmp'")
    parts = merge(components)
    linear = sum(c.count * c.epsilon for c in parts)
    if not math.isclose(linear, epsilon, rel_tol=1e-9):
        raise ParameterError(
            f"the components' linear sum Σ count·ε = {linear!r} must equal epsilon "
            f"{epsilon!r}: they describe the same release"
        )
    if len(parts) == 1 and parts[0].kind == "pure" and parts[0].count == 1:
        return ()  # one ε-DP answer: the default, kept canonical so equal guarantees compare equal
    return parts


def _is_zero(value: Any) -> bool:
    try:
        return not isinstance(value, bool) and math.isfinite(value) and value == 0
    except TypeError:
        return False
