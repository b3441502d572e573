"""Rich tables from rows of text: the one builder of the tables the commands print (budgets
and spends, datasets, the tour's sections, a search's top items, reproduced tables)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from rich.table import Table


def rows_table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    right: Collection[str] = (),
    options: Mapping[str, Mapping[str, Any]] | None = None,
    empty: Sequence[str] = (),
    **table: Any,
) -> Table:
    """A table of ``rows`` (cells as text) under ``columns``, its title left-justified unless
    ``table`` (Rich's ``Table`` options) says otherwise; the columns named in ``right`` are
    right-justified, ``options`` gives a column more of Rich's column options, and a table
    without rows shows the one row ``empty`` (if given).

    Examples
    --------
    >>> table = rows_table("t", ("name", "n"), [], right=("n",), empty=("(none)",))
    >>> [c.justify for c in table.columns], table.row_count
    (['left', 'right'], 1)
    """
    out = Table(title=title, **{"title_justify": "left", **table})
    for name in columns:
        justify = "right" if name in right else "left"
        out.add_column(name, **{"justify": justify, **(options or {}).get(name, {})})
    for row in [[str(cell) for cell in row] for row in rows] or ([empty] if empty else []):
        out.add_row(*row)
    return out
