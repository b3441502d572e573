"""Composition rules: the guarantee of several mechanisms run together.

All three functions work within one notion; they refuse to mix notions, because a sum of an
ε-DP ε and a sensitive-privacy ε is not a guarantee of either notion. They also require one
neighbouring relation (the theorems are stated for a fixed relation); where the relations
differ, pass ``neighbouring=`` to state the relation under which the result holds (for
sensitive privacy: the intersection of the neighbourhood graphs, Claims 3 and 4).

Sums are exact (see :mod:`privad.accounting.exact`): ``0.1 + 0.2`` composes to ``0.3``.
For ``"sensitive"`` the result carries ``k = min(k_i)``: for a fixed normality property a
k1-sensitive graph is a subgraph of the k2-sensitive graph when k1 <= k2, so the
intersection of the graphs is the one with the smallest k. For ``"relaxed-dp"`` the outlier
parameter ε' composes by the same rule as ε. ``"rmp"`` guarantees compose to ``"rmp"``
(still no ε).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction

from privad.accounting.exact import to_float, to_fraction
from privad.accounting.guarantee import Guarantee
from privad.accounting.tight import Component, merge
from privad.errors import ParameterError
from privad.validation import check_int


def _collect(guarantees: Iterable[Guarantee], rule: str) -> list[Guarantee]:
    items = list(guarantees)
    if not items:
        raise ParameterError(f"{rule} composition needs at least one guarantee, got none")
    for g in items:
        if not isinstance(g, Guarantee):
            raise ParameterError(
                f"{rule} composition takes Guarantee objects, got {type(g).__name__}"
            )
    notions = sorted({g.notion for g in items})
    if len(notions) > 1:
        raise ParameterError(
            f"cannot compose guarantees of different notions {notions}: {rule} composition "
            "holds within one notion; account for each notion separately"
        )
    return items


def _relation(items: list[Guarantee], neighbouring: str | None, rule: str) -> str:
    if neighbouring is not None:
        if not isinstance(neighbouring, str) or not neighbouring.strip():
            raise ParameterError(
                f"neighbouring must be a non-empty description, got {neighbouring!r}"
            )
        return neighbouring
    relations = list(dict.fromkeys(g.neighbouring for g in items))
    if len(relations) > 1:
        raise ParameterError(
            f"cannot {rule}-compose guarantees under different neighbouring relations "
            f"{relations}; pass neighbouring=... to state the relation the result holds for"
        )
    return relations[0]


def _combine(
    items: list[Guarantee],
    op: Callable[[list[Fraction]], Fraction],
    neighbouring: str,
    description: str,
    components: tuple[Component, ...] = (),
) -> Guarantee:
    first = items[0]
    epsilon = None
    if first.epsilon is not None:
        epsilon = to_float(op([to_fraction(g.epsilon) for g in items]))  # type: ignore[arg-type]
    eps_out = None
    if first.epsilon_outlier is not None:
        eps_out = to_float(op([to_fraction(g.epsilon_outlier) for g in items]))  # type: ignore[arg-type]
    k = None
    if first.k is not None:
        k = min(g.k for g in items)  # type: ignore[type-var]
    return Guarantee(
        notion=first.notion,
        epsilon=epsilon,
        neighbouring=neighbouring,
        k=k,
        epsilon_outlier=eps_out,
        description=description,
        components=components if epsilon is not None else (),
    )


def _describe(items: list[Guarantee], rule: str, description: str | None) -> str:
    if description is not None:
        return description
    if len(items) == 1:
        return items[0].description
    return f"{rule} composition of {len(items)} mechanisms"


def sequential(
    guarantees: Iterable[Guarantee],
    *,
    neighbouring: str | None = None,
    description: str | None = None,
) -> Guarantee:
    """The guarantee of running all mechanisms on the same data: ε adds up.

    Basic sequential composition: if M_i is ε_i-DP then (M_1, ..., M_n), even chosen
    adaptively, is (Σ ε_i)-DP (Dwork, McSherry, Nissim, Smith 2006; Dwork and Roth 2014,
    Theorem 3.14 and Theorem 3.16 with δ = 0; McSherry 2009, PINQ, Theorem 1). The same
    holds for sensitive privacy with the intersection of the neighbourhood graphs (Asif et
    al. 2019, Claim 3; result k = min k_i), for anomaly-restricted DP (Bittner et al.,
    Definition 4 applied to anomaly-restricted neighbours) and for relaxed DP, where ε and ε'
    each add.

    Raises :class:`~privad.errors.ParameterError` for an empty input, for mixed notions, or
    for differing neighbouring relations without an explicit ``neighbouring``.

    Examples
    --------
    >>> from privad.accounting import Guarantee, sequential
    >>> g = Guarantee("pure-dp", 0.5, "add or remove one record")
    >>> sequential([g, g]).epsilon
    1.0
    """
    items = _collect(guarantees, "sequential")
    return _combine(
        items,
        lambda xs: sum(xs, Fraction(0)),
        _relation(items, neighbouring, "sequential"),
        _describe(items, "sequential", description),
        merge(c for g in items for c in g.accounting_components),
    )


def parallel(
    guarantees: Iterable[Guarantee],
    *,
    neighbouring: str | None = None,
    description: str | None = None,
) -> Guarantee:
    """The guarantee of mechanisms run on *disjoint* parts of the data: the largest ε.

    Parallel composition: if M_i is ε_i-DP and reads only the part D_i of a partition of the
    data, then (M_1(D_1), ..., M_n(D_n)) is (max ε_i)-DP (McSherry 2009, PINQ, Theorem 2;
    Bittner et al., Definition 5). For sensitive privacy, Asif et al. 2019, Claim 4 (result
    k = min k_i); for relaxed DP, ε and ε' each take the maximum.

    The caller is responsible for the parts being disjoint; this function only does the
    arithmetic. Raises :class:`~privad.errors.ParameterError` as :func:`sequential` does.

    Examples
    --------
    >>> from privad.accounting import Guarantee, parallel
    >>> parts = [Guarantee("pure-dp", e, "add or remove one record") for e in (0.5, 0.25)]
    >>> parallel(parts).epsilon
    0.5
    """
    items = _collect(guarantees, "parallel")
    return _combine(
        items,
        max,
        _relation(items, neighbouring, "parallel"),
        _describe(items, "parallel", description),
        _parallel_components(items),
    )


def _parallel_components(items: list[Guarantee]) -> tuple[Component, ...]:
    """On one neighbouring pair only one part moves: its components, if all parts agree;
    otherwise one answer of the largest ε (a valid, looser description)."""
    first = items[0].accounting_components
    if all(g.accounting_components == first for g in items):
        return first
    if items[0].epsilon is None:
        return ()
    return (Component.pure(max(g.epsilon for g in items)),)  # type: ignore[type-var]


def scaled(g: Guarantee, m: int, *, description: str | None = None) -> Guarantee:
    """The guarantee ``g`` with ε (and ε') multiplied by the integer ``m >= 1``.

    Used where one individual can be affected by at most ``m`` independent runs of the
    mechanism: m sequential queries (Claim 3; Definition 4 of Bittner et al.), and for
    sensitive privacy Claim 5 of Asif et al. 2019 (answering anomaly-identification queries
    for records of which at most ``m`` lie in any ball of radius max r_t is mε-sensitively
    private). The result's components are ``g``'s, each used m times as often, so the
    (ε, δ) accountant composes m answers (:mod:`privad.accounting.tight`). Not for group
    privacy (one run, a group of m records): its mε holds, but its (ε, δ) is not that of m
    answers, so build that guarantee directly. The neighbouring relation and ``k`` are
    kept. ``"rmp"`` is returned unchanged (no ε to scale).

    Examples
    --------
    >>> from privad.accounting import Guarantee, scaled
    >>> g = Guarantee("pure-dp", 0.5, "add or remove one record", description="noisy count")
    >>> three = scaled(g, 3)
    >>> three.epsilon, three.description
    (1.5, '3 × (noisy count)')
    """
    if not isinstance(g, Guarantee):
        raise ParameterError(f"scaled takes a Guarantee, got {type(g).__name__}")
    m = check_int(m, "m", minimum=1)
    epsilon = None if g.epsilon is None else to_float(m * to_fraction(g.epsilon))
    eps_out = None if g.epsilon_outlier is None else to_float(m * to_fraction(g.epsilon_outlier))
    if description is None:
        description = g.description if m == 1 else f"{m} × ({g.description or g.summary()})"
    return Guarantee(
        notion=g.notion,
        epsilon=epsilon,
        neighbouring=g.neighbouring,
        k=g.k,
        epsilon_outlier=eps_out,
        description=description,
        components=tuple(c.times(m) for c in g.accounting_components),
    )


def per_ball(
    guarantees: Iterable[Guarantee],
    m: int,
    *,
    neighbouring: str | None = None,
    description: str | None = None,
) -> Guarantee:
    """Sensitive privacy's per-ball rule (Asif et al. 2019, Claim 5): ``m · max ε_t``.

    For anomaly-identification queries about records i_1, ..., i_n, each answered by an
    ε_t-sensitively private mechanism that reads only the ball of radius r_t around i_t, if
    at most ``m`` of the queried records lie in any ball of radius max r_t, then answering
    all of them is (m · max ε_t)-sensitively private for k = min k_t. This is
    ``scaled(parallel(guarantees), m)``; ``m`` must be an integer >= 1 and is the caller's
    bound (the geometry layer computes it).

    Examples
    --------
    >>> from privad.accounting import Guarantee, per_ball
    >>> query = Guarantee("sensitive", 0.1, "k-sensitive", k=2)
    >>> both = per_ball([query, query], 4)   # at most 4 queried records in any ball
    >>> both.epsilon, both.k
    (0.4, 2)
    """
    items = _collect(guarantees, "per-ball")
    base = parallel(items, neighbouring=neighbouring, description=description)
    if description is None:
        description = f"per-ball composition of {len(items)} queries, m = {m}"
    return scaled(base, m, description=description)
