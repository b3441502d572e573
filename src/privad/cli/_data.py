"""The data options of the ``privad`` commands (DATA, ``--columns``, ``--label``,
``--exclude``, ``--bound(s)``, ``--id``), shared by ``privad sp``, ``rmp``, ``serve`` and
``search``; reading DATA is the library's (:mod:`privad.datasets.sources`, whose names are
also importable from here)."""

from __future__ import annotations

from typing import Any

import typer

from privad.cli._options import BOUND, columns_option
from privad.datasets.sources import (  # noqa: F401 - the commands' names for the library's
    align_queries,
    load_series,
    load_table,
    scale_features,
)
from privad.datasets.summary import scaling_text  # noqa: F401 - a run's scaling in one line

DATA_HELP = (
    "A dataset name from 'privad datasets list' (thyroid, mammography, breastw, ...; "
    "generated sets use --seed), a data file (.csv, .parquet, .npy, .npz or .mat) or a "
    "folder of Parquet parts (read in file-name order; with --engine dask also a CSV glob)."
)
COLUMNS_HELP = (
    "Feature columns to use, by name or 0-based position; repeat the option or separate "
    "with commas (e.g. --columns x1,x2). Default: every column except --label."
)
LABEL_HELP = (
    "Where the 0/1 anomaly labels are (1 = anomaly), the same rule for every format: a "
    "column, by name or 0-based position, left out of the features; in a .npz or .mat file "
    "first an array stored beside the data (by name). Default: the labels stored with the "
    "data (a catalogue dataset's own, the array y of a .npz or .mat file); a CSV or Parquet "
    "table has none unless --label names a column. See docs/data.md."
)
COLUMNS_OPTION: Any = columns_option(COLUMNS_HELP)
LABEL_OPTION: Any = typer.Option(None, "--label", metavar="COL", help=LABEL_HELP)
EXCLUDE_OPTION: Any = columns_option(
    option="--exclude",
    metavar="COL",
    help="A column that is not a feature (a timestamp, a free-text field, ...), by name or "
    "0-based position; repeat the option or separate with commas. Dropped before any "
    "distance is computed.",
)
BOUNDS_OPTION: Any = typer.Option(
    None,
    "--bounds",
    metavar="FILE",
    help="Public per-column bounds: CSV with the columns column,lower,upper, or JSON "
    '{"col": \\[lower, upper]}. Bounded features are scaled to [0, 1] as (x − lo)/(hi − lo), '
    "values outside clipped (both use only the bounds, so the guarantee holds). Never "
    "computed from the data: see docs/scaling.md.",
)
BOUND_OPTION: Any = BOUND.option(
    None,
    "--bound",
    "COL=LO:HI",
    "A public bound of one column, e.g. --bound proline=0:2000 (repeatable; with or "
    "without --bounds). Scaled like --bounds.",
)
ID_OPTION: Any = typer.Option(
    None,
    "--id",
    metavar="COL",
    help="The column that identifies records (numbers or text): not a feature; its values "
    "are carried into the output (an id column beside index).",
)
