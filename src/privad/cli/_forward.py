"""Pass a command's parsed options on to the one library call that does its job."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["forward"]

T = TypeVar("T")


def forward(job: Callable[..., T], options: Mapping[str, Any], /, *args: Any, **given: Any) -> T:
    """``job(*args, **given)``, each other keyword-only parameter of ``job`` taken from
    ``options`` under the same name.

    ``options`` are a command's parsed options (its ``locals()`` before its first statement):
    a command names an option as the library names the keyword, so it passes the option on
    without copying it; ``given`` are the keywords it computes itself.

    Examples
    --------
    >>> def job(x, *, a=1, b=2, c=3):
    ...     return x, a, b, c
    >>> forward(job, {"a": 10, "b": 20, "quiet": True}, "x", b=0)
    ('x', 10, 0, 3)
    """
    names = [p.name for p in inspect.signature(job).parameters.values() if p.kind is p.KEYWORD_ONLY]
    return job(*args, **{n: options[n] for n in names if n in options and n not in given}, **given)
