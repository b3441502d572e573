"""The console's planners (:mod:`privad.services.console`, ``/plan``): the closed forms of
:mod:`privad.accounting.planner` and the plans of :mod:`privad.experiments.plans` (the
library's ``sp plan`` and ``search plan``) for a form's fields, and the saved results of
``benchmarks/bench_utility.py`` at the chosen ε. Nothing here reads data or a ledger.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from privad.accounting.exact import to_fraction
from privad.accounting.planner import answers_within, composition_costs
from privad.accounting.tight import check_delta
from privad.errors import ParameterError
from privad.experiments.plans import search_plan, sp_plan
from privad.validation import check_epsilon, check_int

__all__ = ["number_field", "plain", "plan_data", "utility_rows"]


def plain(value: Any) -> Any:
    """JSON-ready: Fractions as floats (as ``privad budget show --json``), times as ISO.

    Examples
    --------
    >>> from fractions import Fraction
    >>> plain({"spent": Fraction(1, 4), "parts": [Fraction(3, 4)]})
    {'spent': 0.25, 'parts': [0.75]}
    """
    if isinstance(value, Fraction | float):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def number_field(params: Mapping[str, str], name: str) -> float | None:
    """A form field as a finite number (None when empty); a ParameterError naming it
    otherwise.

    Examples
    --------
    >>> number_field({"epsilon": " 0.5 ", "delta": ""}, "epsilon"), number_field({}, "delta")
    (0.5, None)
    """
    text = params.get(name, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be a finite number, got {text!r}")
    return value


LARGEST = {"answers": 10**9, "beta": 10**3, "k": 10**4, "items": 10**12}
"""The largest value of each integer field (a form is answered at once: no long loops)."""


def _integer(params: Mapping[str, str], name: str, minimum: int) -> int | None:
    value = number_field(params, name)
    if value is None:
        return None
    if value != int(value):
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return check_int(int(value), name, minimum=minimum, maximum=LARGEST[name])


OPTIMAL_LIMIT = 2_000
"""The most answers whose optimal composition a request computes (about a second each;
``privad sp plan --answers N --delta D`` has no limit)."""


def _check_optimal(n: int, what: str) -> None:
    if n > OPTIMAL_LIMIT:
        raise ParameterError(
            f"with delta, {what} must be at most {OPTIMAL_LIMIT} answers here, got {n} (the "
            "optimal composition is computed per request); use 'privad sp plan' for more"
        )


def _costs(eps: float, n: int, delta: float | None) -> Any:
    """:func:`composition_costs`, refused beyond :data:`OPTIMAL_LIMIT` answers with δ."""
    if delta is not None:
        _check_optimal(n, "answers")
    return composition_costs(eps, n, delta)


_SEARCH_KEYS = (
    "threshold_ratio",
    "error_probability",
    "converges",
    "expected_queries_bound",
    "cost",
)
"""What the console shows of :func:`privad.experiments.plans.search_plan`."""


def plan_data(params: Mapping[str, str], utility: str | None) -> dict[str, Any]:
    """The planners for the form's fields (absent fields: that planner is not run).

    ``epsilon`` (per answer) with ``answers``: the job's cost (linear and, with ``delta``,
    optimal); with ``budget``: how many answers it admits; with ``beta`` (and ``k``): the
    flag probability by ball count of ``sp plan``; with ``t_low``, ``t_high``, ``items``:
    the noisy binary search's expected queries and their cost (``search plan``).

    Examples
    --------
    >>> data = plan_data({"epsilon": "0.1", "answers": "100", "budget": "1"}, None)
    >>> data["cost"]["linear_epsilon"], data["admits"]["answers"]
    (10.0, 10)
    """
    eps = number_field(params, "epsilon")
    delta = number_field(params, "delta")
    delta = None if delta is None else check_delta(delta, "delta")
    out: dict[str, Any] = {"inputs": {k: v for k, v in params.items() if v}}
    if eps is None:
        return {**out, "utility": utility_rows(utility, None)}
    eps = check_epsilon(eps, "epsilon")
    n = _integer(params, "answers", 1)
    if n is not None:
        out["cost"] = _costs(eps, n, delta).to_dict()
    budget = number_field(params, "budget")
    if budget is not None:
        budget = check_epsilon(budget, "budget")
        admitted = int(to_fraction(budget) / to_fraction(eps))  # linear composition
        if delta is not None:
            _check_optimal(admitted, "budget/epsilon")
            admitted = answers_within(budget, delta, eps)
        out["admits"] = {"budget": budget, "delta": delta, "answers": admitted}
    beta = _integer(params, "beta", 1)
    if beta is not None:
        k = _integer(params, "k", 1) or 1
        rows = sp_plan(beta, eps, k)["flag_probability"]
        out["flag_probability"] = {"beta": beta, "k": k, "rows": rows}
    lo, hi, items = number_field(params, "t_low"), number_field(params, "t_high"), None
    if lo is not None and hi is not None:
        items = _integer(params, "items", 1) or 1000
        err = number_field(params, "error")
        err = 0.05 if err is None else check_delta(err, "error")
        plan = search_plan(eps, lo, hi, items, err, delta, strict=False, costs=_costs)
        out["search"] = {"items": items, "error": err} | {
            key: plan[key] for key in _SEARCH_KEYS if key in plan
        }
    out["utility"] = utility_rows(utility, eps)
    return plain(out)


def utility_rows(folder: str | None, eps: float | None) -> dict[str, Any]:
    """The saved results of ``benchmarks/bench_utility.py`` (``<set>/<detector>*.json``)
    for ``eps``: the rows at that ε and those without one (PyOD); absent: say so.

    Examples
    --------
    >>> utility_rows(None, 1.0)["available"]
    False
    """
    if folder is None or not Path(folder).is_dir():
        return {
            "available": False,
            "note": "no utility results: run benchmarks/bench_utility.py and start the "
            "console with --utility benchmarks/results/utility",
        }
    rows, epsilons = [], set()
    for path in sorted(Path(folder).glob("*/*.json")):
        try:
            row = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        param = row.get("param")
        if isinstance(param, int | float) and row.get("detector") not in ("rmp",):
            epsilons.add(float(param))
        if param is None or (eps is not None and math.isclose(float(param), eps)):
            rows.append(
                {
                    k: row.get(k)
                    for k in ("set", "detector", "param", "records", "auc", "f1", "error")
                }
            )
    return {"available": True, "epsilon": eps, "epsilons": sorted(epsilons), "rows": rows}
