"""Exact arithmetic on privacy parameters.

Every ε that enters the accountant is a Python float. It is read as the *shortest decimal
that round-trips to that float* (its ``repr``: ``0.1`` is read as 1/10, not as the binary
value 0.1000000000000000055...), converted to a :class:`fractions.Fraction`, and from then on
added and compared exactly. So ten spends of ``0.1`` fill a budget of ``1.0`` exactly, and
a spend is refused only when the exact decimal sum would exceed the exact decimal total.

The decimal reading differs from the float's binary value by at most half a unit in the last
place (a relative 1.1e-16), far below the resolution of any floating-point noise sampler;
it is the number the user wrote. ε is stored in the ledger as that decimal text, and sums
as ``"numerator/denominator"`` text, so nothing is rounded on disk either.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from privad.errors import LedgerError

ZERO = Fraction(0)


@lru_cache(maxsize=4096)
def _decimal_fraction(text: str) -> Fraction:
    return Fraction(text)


def epsilon_text(value: float) -> str:
    """The canonical decimal text of a finite float (``repr``), as stored in the ledger."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return repr(value)


def to_fraction(value: float) -> Fraction:
    """The exact rational value of a float read as its shortest round-trip decimal."""
    return _decimal_fraction(epsilon_text(value))


def parse_fraction(text: str, what: str = "value") -> Fraction:
    """Read an exact number stored by the ledger (decimal or ``"p/q"`` text)."""
    try:
        return _decimal_fraction(str(text))
    except (ValueError, ZeroDivisionError, TypeError):
        raise LedgerError(f"ledger holds a malformed {what}: {text!r}") from None


def fraction_text(value: Fraction) -> str:
    """Text that :func:`parse_fraction` reads back to exactly ``value``."""
    return str(value)


def to_float(value: Fraction) -> float:
    """The float nearest to an exact value (for display and for float-typed results)."""
    return float(value)


def fmt(value: Fraction | float | None) -> str:
    """A short human-readable form: the shortest decimal of the nearest float, or a dash."""
    if value is None:
        return "—"
    return repr(float(value))
