"""privad: find the anomalies, keep everyone else private.

Layers (each imports only the ones before it; ``docs/architecture.md`` has the table,
checked by ``tests/test_import_graph.py``):

0. :mod:`privad.errors`, :mod:`privad.validation`, :mod:`privad.io`, :mod:`privad.base`,
   :mod:`privad.columns`: refusing bad input the same way everywhere.
1. :mod:`privad.noise`: all randomness (exact, floating-point-safe samplers).
2. :mod:`privad.accounting`: guarantees and the privacy budget ledger.
3. :mod:`privad.geometry` (exact ball counts), then :mod:`privad.distributed` (Dask).
4. The schemes: :mod:`privad.sensitive`, :mod:`privad.relaxed`, :mod:`privad.search`,
   :mod:`privad.rmp`.
5. :mod:`privad.datasets`: loaders, embedded data and synthetic generators.
6. :mod:`privad.experiments`: the papers' tables and figures.
7. :mod:`privad.services`: the protocols as HTTP servers and clients.
8. :mod:`privad.cli`: the ``privad`` command.
"""

from privad.errors import PrivadError

__version__ = "0.1.0"

__all__ = ["PrivadError", "__version__"]
