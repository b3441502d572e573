"""Network services: privad's protocol parties as real HTTP servers (FastAPI + uvicorn).

The relaxed-DP sensor-stream scheme (:mod:`privad.relaxed`, docs/relaxed.md) runs as three
roles:

* the analyst A, :func:`~privad.services.analyst.create_analyst_app`
  (``privad serve analyst``): stores 𝒯' per sensor and window, runs f_outlier, and drives
  the correction with CS when a sensor closes a window;
* the correction server CS, :func:`~privad.services.correction.create_correction_app`
  (``privad serve correction``): holds only d_diff (and the d_TP noise of ε_TP) per sensor
  and window, and w_O;
* the sensor S, :class:`~privad.services.sensor_client.SensorUploader`
  (``privad sensor send``): perturbs locally, journals and charges, uploads, closes.

What every server shares lives in one module per idea: :mod:`privad.services.errors`
(the error body and statuses), :mod:`privad.services.bodies` (request bodies: JSON checks,
decoding, OpenAPI declarations), :mod:`privad.services.auth` (tokens and roles),
:mod:`privad.services.store` (the SQLite store with group commit) and
:mod:`privad.services.app` (the app factory, its middleware and the uvicorn runners). The
submodules import FastAPI, uvicorn and httpx; import them explicitly
(``from privad.services.analyst import ...``).
"""

from __future__ import annotations

__all__: list[str] = []
