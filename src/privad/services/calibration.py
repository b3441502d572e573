"""A relaxed-DP deployment's public parameters, fixed from a historical CSV file.

:func:`calibrate_file` is ``privad sensor calibrate`` as one call: it reads the history
(:func:`privad.services.streams.read_csv_array`) and fixes what the sensor, the analyst and
the correction server are configured with (:func:`privad.relaxed.pipeline.server_parameters`:
RS_j by eq. (1), DBSCAN's ``eps`` and minPts, the outlier layer's width w_O). Not private:
like the paper's parameters, they are read in the clear from past data before the protocol
runs. The :class:`Deployment` it returns writes itself as lines, as shell assignments or as
JSON-ready data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Deployment", "calibrate_file"]


@dataclass(frozen=True)
class Deployment:
    """The public parameters of a deployment (the fields of
    :func:`~privad.relaxed.pipeline.server_parameters`).

    Attributes
    ----------
    n, p_o, scaling
        the history's number of records, its outlier percentage and step 1a's scaling.
    relaxed_sensitivity, divisors
        RS_j per column (eq. 1) and step 1a's divisors.
    eps, min_samples, historical_outliers
        DBSCAN's parameters in the scaled space, and the outliers it finds in the history.
    outlier_layer_width
        w_O of the correction server.

    Examples
    --------
    >>> from privad.services.calibration import Deployment
    >>> d = Deployment(600, 10.0, "none", [2.5, 4.0], [1.0, 1.0], 0.25, 3, 0.5, 57)
    >>> print(*d.env(), sep="\\n")
    PRIVAD_RELAXED_SENSITIVITY=2.5,4.0
    PRIVAD_EPS=0.25
    PRIVAD_MIN_SAMPLES=3
    PRIVAD_W_O=0.5
    >>> d.lines()[1]
    'relaxed sensitivity RS (sensor --relaxed-sensitivity): 2.5, 4'
    """

    n: int
    p_o: float
    scaling: Any
    relaxed_sensitivity: list[float]
    divisors: list[float]
    eps: float
    min_samples: int
    outlier_layer_width: float
    historical_outliers: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (``privad sensor calibrate --json``)."""
        return asdict(self)

    def lines(self) -> tuple[str, ...]:
        """Each parameter with the option of the party that takes it."""
        rs = ", ".join(f"{v:.6g}" for v in self.relaxed_sensitivity)
        return (
            f"history: {self.n} record(s), p_o = {self.p_o:g}%, scaling {self.scaling}",
            f"relaxed sensitivity RS (sensor --relaxed-sensitivity): {rs}",
            f"DBSCAN eps, minPts (analyst --eps, --min-samples): {self.eps!r}, "
            f"{self.min_samples} ({self.historical_outliers} historical outliers)",
            f"w_O (correction --outlier-layer-width): {self.outlier_layer_width!r}",
        )

    def env(self) -> tuple[str, ...]:
        """``NAME=VALUE`` lines for a shell's ``eval`` (values in full precision)."""
        return (
            f"PRIVAD_RELAXED_SENSITIVITY={','.join(repr(v) for v in self.relaxed_sensitivity)}",
            f"PRIVAD_EPS={self.eps!r}",
            f"PRIVAD_MIN_SAMPLES={self.min_samples}",
            f"PRIVAD_W_O={self.outlier_layer_width!r}",
        )


def calibrate_file(
    path: str,
    *,
    p_o: float = 10.0,
    columns: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    scaling: Any = "relaxed-sensitivity",
    min_samples: int | None = None,
    source: str | None = None,
) -> Deployment:
    """Fix a deployment's public parameters from the historical CSV file ``path``.

    ``p_o``: the history's outlier percentage (eq. 1); ``columns``, ``exclude``: the
    columns to use (names or positions) or to leave out; ``scaling``: step 1a's;
    ``min_samples``: DBSCAN's minPts (default: 0.5 % of the history's records, at least 2);
    ``source``: the file's name in messages (default ``path``).

    Raises
    ------
    DataError
        An unreadable file, no records, or a value that is not a number.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.datasets import make_sensor_ring
    >>> from privad.services.calibration import calibrate_file
    >>> np.savetxt("history.csv", make_sensor_ring(600, rng=1).X, delimiter=",")
    >>> d = calibrate_file("history.csv", p_o=10)
    >>> round(d.eps, 4), d.min_samples, d.historical_outliers
    (0.1585, 3, 57)
    """
    from privad.relaxed.pipeline import server_parameters
    from privad.services.streams import read_csv_array

    H = read_csv_array(path, columns=columns, exclude=exclude, source=source)
    return Deployment(**server_parameters(H, p_o, scaling=scaling, min_samples=min_samples))
