"""The tour's section that asks a curator server (``privad serve sp``) over HTTP.

:func:`privad.experiments.tour.tour` takes it as its ``curator`` section (the experiments
layer runs no server): a querier asks about a few Thyroid records by id, asks again, and
asks about two feature vectors, and the section shows the noisy answers, what each request
was charged and the querier's remaining budget.

Examples
--------
>>> from privad.noise import Randomness
>>> section = curator_section(Randomness(0))
>>> [row[2] for row in section.rows]  # ε = 0.1 per id; a repeated question is free
['0.5', '0', '0.1']
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from privad.datasets import load
from privad.experiments.tour import THYROID_BETA, THYROID_R, Section
from privad.noise import Randomness

__all__ = ["curator_section"]


def curator_section(rng: Randomness) -> Section:
    """A querier asks the curator (``privad serve sp``, :mod:`privad.services.curator`)
    about five Thyroid records (three labelled anomalies, two others) by id, asks the same
    again, then asks about two feature vectors, each charged online as Claim 5 of the
    sensitive-privacy paper allows (m·ε for m queried records); the curator holds a budget
    of ε = 1 and answers with the SP mechanism at (β, r) = (18, 0.1), ε = 0.1.

    Parameters
    ----------
    rng:
        The curator's randomness.

    Returns
    -------
    Section
        One row per request: the request, its noisy answers, the ε charged and the budget
        left.
    """
    from privad.geometry.warmup import compile_kernels
    from privad.sensitive import SPMechanism
    from privad.services.app import ThreadedServer
    from privad.services.auth import TokenRegistry
    from privad.services.clients import CuratorClient
    from privad.services.curator import create_curator_app

    compile_kernels()  # before the curator starts: its first request must not compile
    data = load("thyroid")
    secret = "demo-querier-" + "0123456789abcdef"
    with tempfile.TemporaryDirectory() as tmp:
        app = create_curator_app(
            data.X,
            SPMechanism(THYROID_BETA, THYROID_R, 0.1),
            db=Path(tmp) / "c.sqlite",
            ledger=Path(tmp) / "l.sqlite",
            tokens=TokenRegistry([("analyst", secret)]),
            budget=1.0,
            rng=rng,
        )
        ids = [int(i) for i in np.flatnonzero(data.y == 1)[:3]] + [0, 1]
        with ThreadedServer(app) as srv, CuratorClient(srv.url, secret, timeout=600.0) as client:
            first = client.ask_ids(ids)
            again = client.ask_ids(ids)
            far = client.ask_records(data.X[:2] + 0.5)
    return Section(
        f"privad serve sp: a querier asks the curator over HTTP ({srv.url})",
        ("request", "answers (1 = anomaly, noisy)", "charged ε", "remaining"),
        tuple(
            (
                what,
                str(reply["answers"]),
                f"{reply['charged']:g}",
                f"{reply['budget']['remaining']:g}",
            )
            for what, reply in (
                (f"ids {ids}", first),
                ("the same ids again", again),
                ("2 feature vectors (far apart)", far),
            )
        ),
        note="The querier sees noisy bits and its own budget, nothing else. Ids cost ε each, "
        "whatever the data; vectors are charged online by Claim 5 (m·ε for the whole set); "
        "a repeated question gets its recorded answer for free (docs/sensitive.md).",
    )
