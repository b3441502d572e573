"""The sensitive-privacy curator as an HTTP server (``privad serve sp``).

A trusted curator holds the database and answers "is record i a (β, r)-anomaly?" for
queriers who never see the data (Asif, Papakonstantinou, Vaidya, CCS 2019). The logic, the
online charging and the durability rules are those of :class:`privad.sensitive.Curator`;
this module is its HTTP face.

Endpoints (all but ``/v1/health`` need ``Authorization: Bearer SECRET`` of a querier token;
the token's name is the querier):

=======  ==============  ====================================================================
method   path            what
=======  ==============  ====================================================================
GET      /v1/health      liveness and role (no token)
GET      /v1/model       the public parameters: mechanism, β, r, ε, k, metric, count cap,
                         n_records, n_features, the per-answer guarantee, the budget per
                         querier, the largest batch, the query domain (declared bounds,
                         magnitude limit, smallest nonzero value)
GET      /v1/budget      the querier's own budget: total, spent, remaining ε (an (ε, δ)
                         budget: also δ, δ spent and the answers per record left)
POST     /v1/ask         ``{"ids": [i, ...]}`` (record ids) or ``{"records": [[...], ...],
                         "add_query_to_data": false}`` (feature vectors; footnote 1 with
                         ``true``): ``{"answers": [0/1, ...], "charged": ε, "budget": {...}}``
=======  ==============  ====================================================================

A request past the querier's budget gets ``429 {"error": "budget_exhausted"}``: nothing is
spent, nothing answered. Malformed requests (bad JSON, unknown fields, an unknown id, a
wrong dimension, NaN, booleans or strings for numbers, an empty or too large batch, a vector
outside the public query domain) get 4xx with nothing spent. The querier never receives
counts, error probabilities or distances: there is no evaluation endpoint.

Whether a request is answered, what it costs and the status and text of a refusal depend
only on what the querier sent and on the public configuration (``/v1/model``: n, d, the
mechanism, the budget, the query domain with its declared bounds), never on the stored
records (:class:`privad.sensitive.Curator`, "Refusals read no data"); data the curator
cannot serve is refused when the server starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from fastapi import Depends, FastAPI, Request
from starlette.concurrency import run_in_threadpool

from privad.accounting import Ledger
from privad.errors import BudgetExceededError, DataError
from privad.sensitive.curator import Curator
from privad.sensitive.mechanisms import AIQMechanism
from privad.services.app import create_app
from privad.services.auth import SENSOR_ROLE, Principal, TokenRegistry, require_role
from privad.services.bodies import (
    DEFAULT_MAX_BODY_BYTES,
    KIND_SCHEMAS,
    Recorder,
    float_matrix,
    json_body,
    parse_json,
)
from privad.services.errors import closed_on_error
from privad.services.oracle import BudgetExhausted

__all__ = ["ROLE", "create_curator_app", "parse_ask"]

ROLE: Final[str] = "curator"

_ASK_FIELDS = {"ids", "records", "add_query_to_data"}


def parse_ask(body: Any) -> dict[str, Any]:
    """The keyword arguments of :meth:`Curator.ask` from a request body (DataError if bad)."""
    if not isinstance(body, dict):
        raise DataError(
            'the body must be a JSON object: {"ids": [...]} or {"records": '
            '[[...], ...], "add_query_to_data": false}'
        )
    unknown = sorted(set(body) - _ASK_FIELDS)
    if unknown:
        raise DataError(f"unknown field(s) {unknown}; allowed: {sorted(_ASK_FIELDS)}")
    ids, records = body.get("ids"), body.get("records")
    if ids is not None:
        if not isinstance(ids, list) or not all(type(i) is int for i in ids):
            raise DataError("ids must be a list of integers (record ids)")
    return {
        "ids": ids,
        # exact JSON types, as every server's float fields: a boolean is not 1.0
        "records": None if records is None else float_matrix(records, "records"),
        "add_query_to_data": body.get("add_query_to_data", False),
    }


def create_curator_app(
    X: Any,
    mechanism: AIQMechanism,
    *,
    db: str | Path,
    ledger: str | Path,
    tokens: TokenRegistry,
    budget: float,
    delta: float | None = None,
    scope: str = "curator",
    rng: Any = None,
    bounds: Mapping[int, tuple[float, float]] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    recorder: Recorder | None = None,
) -> FastAPI:
    """The curator's FastAPI app.

    Parameters
    ----------
    X : the database (n, d).
    mechanism : the (β, r)-AIQ mechanism answering every question.
    db : the curator's store (recorded answers, each querier's questions; SQLite).
    ledger : the ledger file holding each querier's budget (scope ``<scope>/<querier>``).
    tokens : the queriers' tokens (their names are the queriers).
    budget : each querier's total ε.
    delta : each querier's budget's δ (an (ε, δ) budget, its answers drawn from a prepaid
        block); None for a pure-ε budget.
    rng : the noise (tests only; default OS entropy).
    bounds : public bounds {feature position: (lower, upper)} (the query domain's, see
        :class:`privad.sensitive.domain.QueryDomain`); None for none.
    """
    book = Ledger(ledger, create=True)
    with closed_on_error(book):
        curator = Curator(
            X,
            mechanism,
            ledger=book,
            store=db,
            budget=budget,
            delta=delta,
            scope=scope,
            rng=rng,
            bounds=bounds,
        )
    auth = Depends(require_role(SENSOR_ROLE))

    def routes(app: FastAPI) -> None:
        @app.get("/v1/model")
        def model(who: Principal = auth) -> dict[str, Any]:
            return curator.describe()

        @app.get("/v1/budget")
        def budget_state(who: Principal = auth) -> dict[str, Any]:
            return {"querier": who.name, **curator.budget(who.name)}

        @app.post(
            "/v1/ask",
            openapi_extra=json_body(
                {
                    "ids": {"type": "array", "items": {"type": "integer"}},
                    "records": KIND_SCHEMAS["matrix"],
                    "add_query_to_data": {"type": "boolean"},
                }
            ),
        )
        async def ask(request: Request, who: Principal = auth) -> dict[str, Any]:
            raw = await request.body()

            def work() -> dict[str, Any]:
                kwargs = parse_ask(parse_json(raw))
                try:
                    out = curator.ask(who.name, **kwargs)
                except BudgetExceededError as exc:
                    raise BudgetExhausted(f"budget exhausted: {exc}") from None
                return {"answers": out.answers, "charged": out.charged, "budget": out.budget}

            return await run_in_threadpool(work)

    def close() -> None:
        curator.close()
        book.close()

    return create_app(
        title="privad sensitive-privacy curator",
        role=ROLE,
        routes=routes,
        tokens=tokens,
        max_body_bytes=max_body_bytes,
        recorder=recorder,
        on_shutdown=(close,),
        state={"curator": curator, "ledger": book},
    )
