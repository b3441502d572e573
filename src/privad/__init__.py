"""privad: find the anomalies, keep everyone else private.

Layers (each imports only the ones below it; see ``docs/architecture.md``):

1. :mod:`privad.noise`: all randomness (exact, floating-point-safe samplers).
2. :mod:`privad.accounting`: the privacy budget ledger.
3. :mod:`privad.datasets`: loaders, embedded data and synthetic generators.
4. The scheme packages (:mod:`privad.sensitive`, ... as they land).
5. :mod:`privad.cli`: the ``privad`` command.
"""

from privad.errors import PrivadError

__version__ = "0.1.0"

__all__ = ["PrivadError", "__version__"]
