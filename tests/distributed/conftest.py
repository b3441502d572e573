"""Fixtures of the distributed tests: one in-process Dask cluster per module, and helpers
that write records as Parquet partitions of chosen (uneven, empty) sizes.

The cluster runs its two workers as threads of the test process (``processes=False``):
Numba's OpenMP runtime is not fork-safe, and threads start in milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.distributed import dask_client


@pytest.fixture(scope="module")
def client():
    """A distributed client on a LocalCluster of two single-threaded in-process workers."""
    with dask_client(workers=2, processes=False) as c:
        yield c


def _write_parts(
    folder: Path, X: np.ndarray, sizes: Sequence[int], names: Sequence[str] | None = None
) -> Path:
    """Write the rows of X as Parquet files ``folder/p00.parquet``, ... of ``sizes`` rows."""
    assert sum(sizes) == X.shape[0]
    names = list(names or [f"x{j}" for j in range(X.shape[1])])
    folder.mkdir(parents=True, exist_ok=True)
    start = 0
    for i, size in enumerate(sizes):
        frame = pd.DataFrame(X[start : start + size], columns=names)
        frame.to_parquet(folder / f"p{i:02d}.parquet", index=False)
        start += size
    return folder


@pytest.fixture(scope="session")
def write_parts():
    """``write_parts(folder, X, sizes, names=None)``: X as Parquet partitions of ``sizes``."""
    return _write_parts
