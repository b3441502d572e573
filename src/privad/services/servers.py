"""Each privad server composed from plain values: the one library call behind ``privad serve``.

A ``*_server`` function builds one server's parties (its detector, split rule, token
registry, training settings, ...) and its FastAPI app, and says what an operator should
read before it serves (``notes``: the data held, the privacy parameters in force, what a
restart kept). It returns a :class:`Server`; serve its app with
:func:`privad.services.app.run_service` (as ``privad serve NAME`` does) or
:class:`privad.services.app.ThreadedServer`, or call it in process with
``fastapi.testclient.TestClient``. The arguments are the ``privad serve`` options under
the same names, already checked; ``tokens`` are the users' ``(NAME, SECRET)`` pairs, and
the keywords a function does not name itself go to the server's app factory unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from privad.services.bodies import DEFAULT_MAX_BODY_BYTES

__all__ = [
    "Server",
    "analyst_server",
    "console_server",
    "correction_server",
    "curator_server",
    "oracle_server",
    "rmp_server",
]

Tokens = Sequence[tuple[str, str]]


class Server(NamedTuple):
    """A composed server: its FastAPI ``app`` and the ``notes`` for its operator."""

    app: Any
    notes: list[str]


def analyst_server(
    db: str | Path,
    tokens: Tokens,
    *,
    eps: float,
    min_samples: int,
    backend: str = "auto",
    ca_cert: str | None = None,
    **options: Any,
) -> Server:
    """The relaxed-DP analyst A: f_outlier is exact DBSCAN (``eps``, ``min_samples``, step
    1a of the protocol), corrected with the correction server at ``correction_url``.

    ``tokens`` are the sensors'; ``ca_cert`` is the CA bundle that verifies an https
    correction server (None: the system's); ``options`` (``correction_url``,
    ``correction_token``: the analyst's token there, ``columns``, ``timeout``,
    ``max_body_bytes``) go to :func:`~privad.services.analyst.create_analyst_app`.
    Detection runs on one thread unless ``$PARLAY_NUM_THREADS`` says otherwise: the
    'dbscan' package's parallel scheduler keeps an idle worker polling (measured: about 7 %
    of a core while the server waits), and one thread is plenty for windows of thousands
    of records.

    Examples
    --------
    >>> import tempfile
    >>> server = analyst_server(
    ...     tempfile.mkdtemp() + "/analyst.sqlite", [("s1", "sensor-secret-0001")],
    ...     correction_url="http://127.0.0.1:8702", correction_token="analyst-secret-0001",
    ...     eps=0.3, min_samples=4,
    ... )
    >>> server.app.title, server.notes
    ('privad relaxed-DP analyst', [])
    """
    os.environ.setdefault("PARLAY_NUM_THREADS", "1")
    from privad.relaxed.detectors import DBSCANDetector
    from privad.services.analyst import create_analyst_app
    from privad.services.auth import TokenRegistry

    app = create_analyst_app(
        db,
        TokenRegistry(tokens),
        detector=DBSCANDetector(eps, min_samples, backend=backend),
        verify=ca_cert or True,
        **options,
    )
    return Server(app, [])


def correction_server(
    db: str | Path,
    tokens: Tokens,
    *,
    outlier_layer_width: float,
    analyst_token: str,
    min_gap: float = 0.0,
    max_fp_share: float = 0.5,
    **options: Any,
) -> Server:
    """The relaxed-DP correction server CS: the outlier layer width w_O, and the split rule
    of step 3 (reconstruction, :class:`privad.relaxed.SplitRule`: split O' only at a gap
    > ``min_gap``, at most ``max_fp_share`` of O' becomes FP).

    ``tokens`` are the sensors'; ``analyst_token`` is the analyst's; ``options``
    (``max_body_bytes``) go to :func:`~privad.services.correction.create_correction_app`.

    Examples
    --------
    >>> import tempfile
    >>> server = correction_server(
    ...     tempfile.mkdtemp() + "/cs.sqlite", [("s1", "sensor-secret-0001")],
    ...     outlier_layer_width=0.2, analyst_token="analyst-secret-0001",
    ... )
    >>> server.app.title
    'privad relaxed-DP correction server'
    """
    from privad.relaxed.correction import SplitRule
    from privad.services.auth import TokenRegistry
    from privad.services.correction import ANALYST_ROLE, create_correction_app

    app = create_correction_app(
        db,
        TokenRegistry(tokens, {ANALYST_ROLE: analyst_token}),
        outlier_layer_width=outlier_layer_width,
        rule=SplitRule(min_gap=min_gap, max_fp_share=max_fp_share),
        **options,
    )
    return Server(app, [])


def oracle_server(
    db: str | Path,
    tokens: Tokens,
    data: str | Path,
    epsilon: float,
    *,
    column: str | None = None,
    labels_column: str | None = None,
    derive_thresholds: bool = False,
    t_low: float | None = None,
    t_high: float | None = None,
    kind: str = "laplace",
    scope: str | None = None,
    seed: int | None = None,
    **options: Any,
) -> Server:
    """The noisy group oracle of the DP noisy binary search over the series ``data`` (a file
    or a series name, :func:`privad.datasets.sources.load_series`: its ``column`` and
    ``labels_column``), with the thresholds (t_ℓ, t_h) of eq. (1), given or derived from the
    labels (:class:`privad.services.search_jobs.LocalData`, as a local search reads them):
    each answer costs ``epsilon``, within the ``budget`` (and ``delta``) of ``options`` in
    the ledger ``db`` under ``scope`` (default ``oracle/<series name>``). ``seed`` fixes the
    noise, for tests only. ``options`` (``budget``, ``delta``, ``max_orders``,
    ``max_body_bytes``) go to :func:`~privad.services.oracle.create_oracle_app`.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> folder = tempfile.mkdtemp()
    >>> np.save(folder + "/toy.npy", [0.1, 0.2, 0.3, 5.0])
    >>> server = oracle_server(
    ...     folder + "/oracle.sqlite", [("s1", "search-secret-0001")], folder + "/toy.npy", 0.5,
    ...     t_low=1.0, t_high=4.0, budget=10,
    ... )
    >>> server.notes[0]
    'toy: 4 values, t_l = 1, t_h = 4 (given (--t-low/--t-high)); laplace oracle, ε = 0.5 per answer'
    """
    from privad.services.auth import TokenRegistry
    from privad.services.oracle import create_oracle_app
    from privad.services.search_jobs import LocalData

    local = LocalData(column, labels_column, derive_thresholds, t_low, t_high)
    series, held = local.read(str(data))
    notes = [
        f"{series.name}: {held.values.size} values, t_l = {held.t_low:.6g}, "
        f"t_h = {held.t_high:.6g} ({held.how}); {kind} oracle, ε = {epsilon:g} per answer"
    ]
    app = create_oracle_app(
        db,
        TokenRegistry(tokens),
        values=held.values,
        t_low=held.t_low,
        t_high=held.t_high,
        epsilon=epsilon,
        kind=kind,
        scope=scope if scope is not None else f"oracle/{series.name}",
        rng=seed,
        notes=notes,
        **options,
    )
    return Server(app, notes)


def curator_server(
    db: str | Path,
    tokens: Tokens,
    data: Any,
    mechanism: Any,
    *,
    ledger: str | Path,
    budget: float,
    delta: float | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    scope: str | None = None,
    seed: int | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Server:
    """The sensitive-privacy curator over ``data`` (a :class:`privad.datasets.Dataset`):
    queriers ask (β, r)-anomaly questions answered by ``mechanism``, each querier within
    its own ``budget`` (and ``delta``) in ``ledger``, scope ``<scope>/<querier>`` (default
    scope ``curator/<data name>``). ``bounds`` are public per-column bounds by feature
    name (the queries' domain, published in ``/v1/model``); ``seed`` fixes the noise, for
    tests only. The notes say what the curator holds and what the bounds did to ``data``
    (:func:`~privad.datasets.summary.scaling_text`: names checked, clip counts, a dominant
    column).

    Examples
    --------
    >>> import tempfile
    >>> from privad.datasets import Dataset
    >>> from privad.sensitive.mechanisms import aiq_mechanism
    >>> folder = tempfile.mkdtemp()
    >>> data = Dataset(name="toy", X=[[0.0, 1.0], [0.1, 1.0], [5.0, 9.0]], y=None)
    >>> server = curator_server(
    ...     folder + "/curator.sqlite", [("q1", "querier-secret-01")], data,
    ...     aiq_mechanism("sp", beta=1, r=0.5, epsilon=1.0),
    ...     ledger=folder + "/ledger.sqlite", budget=5,
    ... )
    >>> server.notes[0].split(";")[0]
    'toy: 3 records x 2 features'
    """
    from privad.datasets.sources import scale_features
    from privad.datasets.summary import scaling_text
    from privad.services.auth import TokenRegistry
    from privad.services.curator import create_curator_app

    # the operator's view only: the curator maps the raw records itself, with the same
    # arithmetic, and every question alike
    scaling = scale_features(data, bounds)[1]
    names = list(data.feature_names)
    app = create_curator_app(
        data.X,
        mechanism,
        db=db,
        ledger=ledger,
        tokens=TokenRegistry(tokens),
        budget=budget,
        delta=delta,
        scope=scope if scope is not None else f"curator/{data.name}",
        rng=seed,
        bounds=None if not bounds else {names.index(c): b for c, b in bounds.items()},
        max_body_bytes=max_body_bytes,
    )
    per_querier = f"{budget:g}{'' if delta is None else f', δ {delta:g}'}"
    held = (
        f"{data.name}: {data.X.shape[0]} records x {data.X.shape[1]} features; "
        f"{mechanism.guarantee.summary()} per answer; {per_querier} per querier; "
        f"{len(tokens)} querier token(s)"
    )
    return Server(app, [held, f"feature scaling: {scaling_text(scaling)}"])


def rmp_server(
    db: str | Path,
    tokens: Tokens,
    *,
    registration_token: str | None = None,
    seed: int | None = None,
    hidden: int | None = None,
    epochs: int = 500,
    **options: Any,
) -> Server:
    """The RMP mining server (Erfani et al., sections 3-4): the public T (w × n, drawn with
    ``seed`` when ``db`` is new, kept on restart with n, w, α, β), batches of at most
    ``max_batch`` records, and the AANN trained for ``epochs`` with ``hidden`` units.

    ``tokens`` are the end-users'; a blank ``registration_token`` (or None) leaves
    registration open; ``options`` (``operator_token``, who starts training, ``n``, ``w``,
    ``r``, ``alpha``, ``beta``, ``max_batch``, ``max_body_bytes``) go to
    :func:`~privad.services.rmp.create_rmp_app`.

    Examples
    --------
    >>> import tempfile
    >>> db = tempfile.mkdtemp() + "/rmp.sqlite"
    >>> users = [("u1", "end-user-secret-01")]
    >>> config = {"n": 4, "r": 1, "alpha": 0.1, "seed": 7}
    >>> app, notes = rmp_server(db, users, operator_token="operator-secret-01", **config)
    >>> app.title
    'privad RMP mining server'
    """
    from privad.rmp import AANNTraining
    from privad.services.rmp import create_rmp_app

    notes: list[str] = []
    app = create_rmp_app(
        db,
        tokens,
        registration_token=(registration_token or "").strip() or None,
        rng=seed,
        training=AANNTraining(epochs=epochs, hidden=hidden),
        notes=notes,
        **options,
    )
    return Server(app, notes)


def console_server(ledger: str, *, operator_token: str | None = None, **options: Any) -> Server:
    """The web console over the ``ledger`` file (which must exist): its budgets and spends,
    the parties of a server's ``store`` (opened read-only), and plans with the saved
    ``utility`` results; without an ``operator_token`` it is read-only. ``options``
    (``store``, ``utility``, ``max_body_bytes``) go to
    :func:`~privad.services.console.create_console_app`.

    Examples
    --------
    >>> import tempfile
    >>> from privad.accounting import Ledger
    >>> path = tempfile.mkdtemp() + "/ledger.sqlite"
    >>> Ledger(path).close()
    >>> console_server(path).notes == [f"ledger {path}; read-only"]
    True
    """
    from privad.services.console import create_console_app

    app = create_console_app(
        ledger,
        operator_token=None if operator_token is None else operator_token.strip(),
        **options,
    )
    mode = "read-only" if operator_token is None else "operator actions need the token"
    return Server(app, [f"ledger {ledger}; {mode}"])
