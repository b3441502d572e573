"""Query groups: which items one group query asks about.

A query Q_t is a subset of the items [n+1] (the paper's notation; here items are numbered
0 .. n_items - 1). Every oracle accepts three spellings of it:

* a boolean mask of length ``n_items`` (True = in Q);
* an array of distinct item indices;
* a :class:`PrefixGroup`: the first ``size`` items of a :class:`QueryOrder`, i.e. eq. (10)'s
  Q_t = {i : σ(i) <= M} for a permutation σ. This is the form the search loop uses: it costs
  O(1) to build and lets an oracle answer in O(1) after one O(n) pass per order (prefix and
  suffix maxima), and a remote oracle can receive the order once and then only the sizes.

A query must split the items into two non-empty parts (1 <= |Q| <= n_items - 1): the max
oracle (eq. 9) answers for both Q and its complement, and a maximum over an empty set is
undefined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike, as_randomness
from privad.validation import check_int

__all__ = ["GroupLike", "PrefixGroup", "QueryOrder", "group_mask", "resolve_group"]


class QueryOrder:
    """A read-only permutation of ``range(n_items)``: the order σ of eq. (10).

    ``permutation[j]`` is the item at position j; :attr:`positions` is the inverse
    (``positions[i]`` = σ(i), the position of item i). The array is copied and made
    read-only, so oracles may cache work per order by identity.
    """

    __slots__ = ("_positions", "n_items", "permutation")

    def __init__(self, permutation: Any, *, _trusted: bool = False) -> None:
        perm = np.array(permutation, dtype=np.int64, copy=True)
        if not _trusted:
            if perm.ndim != 1 or perm.size < 1:
                raise DataError(f"a query order must be a 1-D permutation, got shape {perm.shape}")
            seen = np.zeros(perm.size, dtype=bool)
            if perm.min() < 0 or perm.max() >= perm.size:
                raise DataError(f"a query order must be a permutation of range({perm.size})")
            seen[perm] = True
            if not seen.all():
                raise DataError(f"a query order must be a permutation of range({perm.size})")
        perm.setflags(write=False)
        self.permutation: np.ndarray = perm
        self.n_items: int = int(perm.size)
        self._positions: np.ndarray | None = None

    @classmethod
    def random(cls, n_items: int, rng: RandomnessLike = None) -> QueryOrder:
        """A uniformly random order (step 3 of Algorithm 1), drawn from ``rng``."""
        n = check_int(n_items, "n_items", minimum=1)
        perm = np.asarray(as_randomness(rng).permutation(n), dtype=np.int64)
        return cls(perm, _trusted=True)

    @property
    def positions(self) -> np.ndarray:
        """σ: ``positions[i]`` is the position of item i (read-only, computed once)."""
        if self._positions is None:
            pos = np.empty(self.n_items, dtype=np.int64)
            pos[self.permutation] = np.arange(self.n_items, dtype=np.int64)
            pos.setflags(write=False)
            self._positions = pos
        return self._positions

    def prefix(self, size: int, *, complement: bool = False) -> PrefixGroup:
        """The group of the first ``size`` items in this order (or, with ``complement``,
        of the others)."""
        return PrefixGroup(self, size, complement)

    def __repr__(self) -> str:
        return f"QueryOrder(n_items={self.n_items})"


@dataclass(frozen=True, eq=False)
class PrefixGroup:
    """Q = the first ``size`` items of ``order`` (eq. 10 with M(f̃) = size).

    With ``complement=True``, Q is the other side of the same split: the items from
    position ``size`` on. (Searches with a "no anomaly" hypothesis alternate the sides at
    random, so that no item is outside every query.)
    """

    order: QueryOrder
    size: int
    complement: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.order, QueryOrder):
            raise ParameterError(f"order must be a QueryOrder, got {type(self.order).__name__}")
        size = check_int(self.size, "size", minimum=0, maximum=self.order.n_items)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "complement", bool(self.complement))

    @property
    def n_items(self) -> int:
        """Number of items the order ranges over."""
        return self.order.n_items

    @property
    def n_in(self) -> int:
        """|Q|."""
        return self.order.n_items - self.size if self.complement else self.size

    def indices(self) -> np.ndarray:
        """The items of Q (a read-only view, in query order)."""
        perm = self.order.permutation
        return perm[self.size :] if self.complement else perm[: self.size]

    def mask(self) -> np.ndarray:
        """The boolean mask of Q over the items."""
        out = np.zeros(self.order.n_items, dtype=bool)
        out[self.indices()] = True
        return out


GroupLike: TypeAlias = PrefixGroup | np.ndarray | list[int] | tuple[int, ...]
"""What a query accepts: a :class:`PrefixGroup`, a boolean mask, or distinct indices."""


def _check_split(size: int, n_items: int) -> None:
    if size < 1:
        raise DataError("a query group must not be empty (1 <= |Q| <= n_items - 1)")
    if size > n_items - 1:
        raise DataError(
            f"a query group must leave a non-empty complement: |Q| = {size} but there are "
            f"{n_items} items (1 <= |Q| <= n_items - 1)"
        )


def resolve_group(group: Any, n_items: int) -> PrefixGroup | np.ndarray:
    """Validate ``group`` against ``n_items``; return it as a PrefixGroup or a boolean mask.

    Raises :class:`~privad.errors.DataError` for an empty group, a group holding every item,
    a mask of the wrong length, indices out of range or repeated, or a non-integer index.
    """
    if isinstance(group, PrefixGroup):
        if group.n_items != n_items:
            raise DataError(
                f"the query order ranges over {group.n_items} items, the oracle holds {n_items}"
            )
        _check_split(group.n_in, n_items)
        return group
    arr = np.asarray(group)
    if arr.ndim != 1:
        raise DataError(f"a query group must be 1-D (a mask or indices), got shape {arr.shape}")
    if arr.size == 0:
        _check_split(0, n_items)
    if arr.dtype == np.bool_:
        if arr.size != n_items:
            raise DataError(f"a group mask must have length {n_items}, got {arr.size}")
        _check_split(int(np.count_nonzero(arr)), n_items)
        return arr
    if arr.dtype.kind not in "iu":
        raise DataError(
            f"group indices must be integers (or pass a boolean mask), got dtype {arr.dtype}"
        )
    if arr.min() < 0 or arr.max() >= n_items:
        raise DataError(
            f"group indices must lie in [0, {n_items - 1}], got values in "
            f"[{int(arr.min())}, {int(arr.max())}]"
        )
    mask = np.zeros(n_items, dtype=bool)
    mask[arr] = True
    count = int(np.count_nonzero(mask))
    if count != arr.size:
        raise DataError(f"group indices must be distinct: {arr.size - count} repeated")
    _check_split(count, n_items)
    return mask


def group_mask(group: Any, n_items: int) -> np.ndarray:
    """The validated boolean mask of ``group`` (see :func:`resolve_group`)."""
    resolved = resolve_group(group, n_items)
    return resolved.mask() if isinstance(resolved, PrefixGroup) else resolved
