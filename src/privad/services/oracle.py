"""The data holder of the DP noisy binary search as an HTTP server: the noisy group oracle.

Bittner, Sarwate, Wright (``dp-noisy-binary-search.txt``, section 7) need "a sensor or other
measurement device that carries out the noisy aggregate queries directly": whoever searches
for the anomaly never sees the values x_1..x_{n+1}, only noisy answers about *groups*. This
server is that device. It holds the values, answers group queries with one of the three
oracles of :mod:`privad.search.oracles`, built on its own :class:`privad.accounting.Ledger`
(the ``--db`` file) and scope, so that the oracle's one release path charges every answer
there before releasing it (the service itself never spends): ε per answer
under anomaly-restricted DP (Definition 1, Proposition 2), refused once the budget of its
scope is spent. The searcher is a :class:`privad.services.remote_oracle.RemoteOracle`, an
:class:`~privad.search.Oracle` whose ``query`` is a request to this server, so
:func:`privad.search.search` runs unchanged against it.

Endpoints (all but ``/v1/health`` need ``Authorization: Bearer SECRET`` of a ``--token``):

=======  =================  =================================================================
method   path               what
=======  =================  =================================================================
GET      /v1/health         liveness and role (no token)
GET      /v1/model          the public model: n_items, kind, ε, the answer model
                            (:meth:`~privad.search.AnswerModel.describe`: p or the Laplace
                            scale, t_ℓ, t_h), the per-answer guarantee, the budget
GET      /v1/budget         scope, total, spent and remaining ε, queries left
POST     /v1/orders         ``{"permutation": [...]}``: store a query order σ (a permutation
                            of 0..n-1); 201 ``{"order": ID}`` (200 when already stored)
POST     /v1/query          one group query, charged ε, answered:
                            ``{"indices": [i, ...]}`` (Q as item indices), or
                            ``{"order": ID, "size": k, "complement": false}`` (Q = the first
                            k items of the stored order; with ``complement`` the others)
=======  =================  =================================================================

Query forms. Q must split the items into two non-empty parts (1 <= |Q| <= n - 1), indices
distinct and in [0, n - 1]. The search loop asks median prefixes of one random order
(eq. 10 with a fixed σ), so a client stores that order once (n integers) and then sends
three numbers per query; the server keeps prefix and suffix maxima per stored order and
answers in O(1). An order id is a digest of the permutation, so storing the same order
again (after a server restart, say) gives the same id. Orders are kept in memory only (the
last ``max_orders``); a query naming an unknown order gets 404 and the client stores it again.
Orders and query groups are chosen by the searcher and carry nothing about the data: only
answers spend budget.

Answers: ``"answer"`` is ``[Y, Ybar]`` (noisy maxima of Q and of its complement, eq. 9) for
``kind = laplace``, and ``0``/``1`` for ``binarized`` (Z = 1(Y > Ybar), computed here, so
only the bit leaves the server) and ``randomized-response`` (eq. 5).

Privacy accounting. All clients share one budget: the scope protects the data's records,
whoever asks (colluding clients would add their answers up anyway). Each query is
check-then-spend in one ledger transaction by the oracle (exactly one spend per answer,
recording the token name, the query number and |Q|), before the noise is drawn; a query past the
budget gets ``429 {"error": "budget_exhausted", ...}`` and nothing is spent. The budget may
be (ε, δ) (``delta=``, ``privad serve oracle --delta``): the answers are then drawn from a
prepaid block, the most answers the budget admits composed tightly (the Laplace
privacy-loss distribution for the max oracle), charged once when the first answer is asked
(:class:`~privad.accounting.Ledger`, "Streams"); ``queries_left`` counts what is left.
Retrying does not help: the budget never comes back (only ``privad budget reset`` on the
ledger file can do that, which forgets privacy loss that did happen). Malformed or invalid
queries (bad JSON, unknown fields, an empty or full group, an index out of range or
repeated, an unknown order) get a 4xx before anything is charged. The ledger is an SQLite
file with one durable commit per spend, so the spent budget survives a restart or a crash:
an answer is sent only after its spend is on disk. A query whose answer is lost in
transit is still charged (the safe side); a client that retries it is charged again.

Randomness. The oracle draws its noise from its own stream (OS entropy unless ``rng`` is
given: seeds are for tests only, since anyone who knows the seed can remove the noise).
Queries are answered one at a time, in arrival order.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Final

import numpy as np
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from privad.accounting import ANOMALY_RESTRICTED_DP, Ledger, NoBudgetError
from privad.accounting.exact import to_fraction
from privad.errors import BudgetExceededError, DataError, ParameterError
from privad.noise import RandomnessLike
from privad.search import Oracle, make_oracle
from privad.search.groups import PrefixGroup, QueryOrder, resolve_group
from privad.search.models import check_search_data, oracle_kind
from privad.services.app import create_app
from privad.services.auth import SENSOR_ROLE, Principal, TokenRegistry, require_role
from privad.services.bodies import (
    DEFAULT_MAX_BODY_BYTES,
    KIND_SCHEMAS,
    Recorder,
    index_vector,
    json_body,
    parse_json,
)
from privad.services.errors import NotFound, ServiceError, closed_on_error
from privad.validation import check_epsilon, check_int

__all__ = [
    "ROLE",
    "BudgetExhausted",
    "OracleService",
    "create_oracle_app",
    "order_id",
]

ROLE: Final[str] = "oracle"

NOTION: Final[str] = ANOMALY_RESTRICTED_DP


def order_id(permutation: np.ndarray) -> str:
    """The id of a stored order: the first 32 hex digits of SHA-256 over its int64 bytes."""
    data = np.ascontiguousarray(permutation, dtype="<i8").tobytes()
    return hashlib.sha256(data).hexdigest()[:32]


class BudgetExhausted(ServiceError):
    """The query would take the spent ε past the scope's budget (429; nothing spent)."""

    status_code = 429
    code = "budget_exhausted"


class OracleService:
    """The oracle server's state: the oracle (with its ledger and scope), the stored orders.

    Thread-safe: answers are computed one at a time under a lock (the oracle's noise stream
    and its per-order caches are not shared between threads), each after the oracle has
    committed its spend to the ledger.

    Parameters
    ----------
    oracle:
        A local :class:`~privad.search.Oracle` holding the data, built with the server's
        ledger and scope (``make_oracle(..., ledger=, scope=)``); the scope must have an
        ``anomaly-restricted-dp`` budget. The oracle records every answer there.
    kind, t_low, t_high:
        The oracle's name and thresholds (published in :meth:`describe`).
    max_orders:
        How many stored orders are kept (least recently used are dropped first).
    """

    def __init__(
        self, oracle: Oracle, *, kind: str, t_low: float, t_high: float, max_orders: int = 64
    ) -> None:
        if oracle.ledger is None or oracle.scope is None:
            raise ParameterError("the oracle server needs a local oracle that keeps its account")
        self.oracle = oracle
        self.t_low, self.t_high = float(t_low), float(t_high)
        self.ledger: Ledger = oracle.ledger
        self.scope: str = oracle.scope
        self.kind = kind
        self.max_orders = check_int(max_orders, "max_orders", minimum=1)
        self._orders: OrderedDict[str, QueryOrder] = OrderedDict()
        self._lock = threading.Lock()
        self._orders_lock = threading.Lock()
        self.ledger.budget(self.scope, NOTION)  # NoBudgetError now, not at the first query

    # -- public description -----------------------------------------------------------------

    def budget(self) -> dict[str, Any]:
        """The scope's budget as JSON: total, spent, remaining ε, queries left; with an
        (ε, δ) budget also its δ and the δ spent (spent ε is then the tight total)."""
        b = self.ledger.budget(self.scope, NOTION)
        out = {
            "scope": self.scope,
            "notion": NOTION,
            "total": float(b.total),
            "spent": float(b.spent),
            "remaining": float(b.remaining),
            "epsilon_per_query": self.oracle.epsilon,
            "queries_left": self.oracle.answers_left(),
        }
        if b.delta is not None:
            out.update(delta=float(b.delta), delta_spent=float(b.delta_spent))
        return out

    def describe(self) -> dict[str, Any]:
        """The public model: everything a searcher needs, nothing about the values."""
        model = self.oracle.model
        return {
            "n_items": self.oracle.n_items,
            "kind": self.kind,
            "epsilon": model.epsilon,
            "t_low": self.t_low,
            "t_high": self.t_high,
            "model": model.describe(),
            "guarantee": model.guarantee.to_dict(),
            "budget": self.budget(),
            "query_forms": ["indices", "order-prefix"],
        }

    # -- orders -------------------------------------------------------------------------------

    def store_order(self, body: Any) -> tuple[str, bool]:
        """Store the order of ``{"permutation": [...]}``; return (id, newly stored)."""
        if not isinstance(body, dict):
            raise DataError('the body must be a JSON object {"permutation": [...]}')
        unknown = sorted(set(body) - {"permutation"})
        if unknown:
            raise DataError(f'unknown field(s) {unknown}; an order is {{"permutation": [...]}}')
        if "permutation" not in body:
            raise DataError("missing field 'permutation' (a permutation of 0..n-1)")
        perm = index_vector(body["permutation"], "permutation")
        n = self.oracle.n_items
        if perm.size != n:
            raise DataError(f"permutation has {perm.size} entries; the oracle holds {n} items")
        order = QueryOrder(perm)  # DataError unless a permutation of range(n)
        oid = order_id(order.permutation)
        with self._orders_lock:
            if oid in self._orders:
                self._orders.move_to_end(oid)
                return oid, False
            self._orders[oid] = order
            while len(self._orders) > self.max_orders:
                self._orders.popitem(last=False)
        return oid, True

    def _order(self, oid: Any) -> QueryOrder:
        if not isinstance(oid, str):
            raise DataError(f"order must be the id string returned by POST /v1/orders, got {oid!r}")
        with self._orders_lock:
            order = self._orders.get(oid)
            if order is not None:
                self._orders.move_to_end(oid)
        if order is None:
            raise NotFound(
                f"unknown order {oid!r}: store it first with POST /v1/orders (orders are kept "
                f"in memory, the last {self.max_orders}; a restarted server has none)"
            )
        return order

    # -- queries ------------------------------------------------------------------------------

    def parse_group(self, body: Any) -> Any:
        """The query group of a request body (validated; raises 4xx errors, spends nothing)."""
        n = self.oracle.n_items
        if not isinstance(body, dict):
            raise DataError(
                'the body must be a JSON object: {"indices": [...]} or '
                '{"order": ID, "size": k, "complement": false}'
            )
        if "indices" in body:
            unknown = sorted(set(body) - {"indices"})
            if unknown:
                raise DataError(f"unknown field(s) {unknown} beside 'indices'")
            idx = index_vector(body["indices"], "indices")
            if idx.size == 0:
                raise DataError("indices is empty: a query group needs 1 .. n - 1 items")
            return resolve_group(idx, n)
        if "order" in body:
            unknown = sorted(set(body) - {"order", "size", "complement"})
            if unknown:
                raise DataError(
                    f"unknown field(s) {unknown}; a prefix query is "
                    '{"order": ID, "size": k, "complement": false}'
                )
            size = body.get("size")
            if type(size) is not int:
                raise DataError(
                    f"size must be an integer (|Q| = the first size items), got {size!r}"
                )
            complement = body.get("complement", False)
            if type(complement) is not bool:
                raise DataError(f"complement must be true or false, got {complement!r}")
            if not 1 <= size <= n - 1:
                raise DataError(
                    f"size must be in 1 .. {n - 1} (both sides of the split non-empty), got {size}"
                )
            order = self._order(body["order"])
            return resolve_group(PrefixGroup(order, size, complement), n)
        raise DataError(
            "a query needs 'indices' (Q as item indices) or 'order' and 'size' "
            "(Q as a prefix of a stored order)"
        )

    def answer(self, group: Any, client: str) -> dict[str, Any]:
        """Answer ``group`` (already validated by :meth:`parse_group`); the oracle charges ε
        to the ledger first, recording ``client`` (the token name)."""
        with self._lock:
            try:
                raw = self.oracle.query(group, metadata={"client": client})  # type: ignore[call-arg]
            except BudgetExceededError as exc:
                raise BudgetExhausted(f"budget exhausted: {exc}") from None
            spend = self.oracle.last_spend
        if isinstance(raw, bool | np.bool_):
            answer: Any = int(raw)
        else:
            answer = [float(v) for v in raw]
        return {
            "answer": answer,
            "query": spend.id,  # type: ignore[union-attr] "epsilon": self.oracle.epsilon,
            "budget": self.budget(),
        }


_INDICES = KIND_SCHEMAS["indices"]


def create_oracle_app(
    db: str | Path,
    tokens: TokenRegistry,
    *,
    values: Any,
    t_low: float,
    t_high: float,
    epsilon: float,
    budget: float,
    delta: float | None = None,
    kind: str = "laplace",
    scope: str = "oracle",
    rng: RandomnessLike = None,
    max_orders: int = 64,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    recorder: Recorder | None = None,
    notes: list[str] | None = None,
) -> FastAPI:
    """The oracle's FastAPI app.

    Parameters
    ----------
    db:
        The server's ledger file (a :class:`privad.accounting.Ledger`; created if missing).
    tokens:
        The searchers' tokens (role ``"sensor"`` of :class:`TokenRegistry`; the token name is
        recorded with each spend).
    values, t_low, t_high:
        The data and the thresholds of eq. (1) (checked by
        :func:`~privad.search.models.check_search_data`: every value in [0, t_ℓ] or [t_h, ∞)).
    epsilon:
        ε per answer (> 0).
    budget:
        The scope's total ε. Set in the ledger when the scope has no budget or a different
        one (the ledger refuses a total below what was already spent); what was spent
        before a restart stays spent.
    delta:
        The budget's δ in (0, 1): an (ε, δ) budget, whose answers are drawn from a prepaid
        block charged at its tight ε (the Laplace privacy-loss distribution for the max
        oracle); None (default) for a pure-ε budget.
    kind:
        ``laplace``, ``binarized`` or ``randomized-response`` (alias ``rr``).
    scope:
        The ledger scope (one per data set).
    rng:
        The oracle's randomness (tests only; default OS entropy).
    notes:
        If given, lines for the operator are appended (the CLI prints them): how many
        values are >= ``t_high`` where that is not exactly one (the search assumes one
        anomaly), and the budget state.
    """
    kind = oracle_kind(kind)
    epsilon = check_epsilon(epsilon)
    budget = check_epsilon(budget, "budget")
    x, lo, hi = check_search_data(values, t_low, t_high)
    if not isinstance(scope, str) or not scope.strip():
        raise ParameterError("scope must be a non-empty name")
    scope = scope.strip()
    ledger = Ledger(db, create=True)
    with closed_on_error(ledger):
        try:
            current = ledger.budget(scope, NOTION)
        except NoBudgetError:
            current = None
        wanted = None if delta is None else to_fraction(delta)
        if current is None or (current.total, current.delta) != (to_fraction(budget), wanted):
            current = ledger.set_budget(scope, NOTION, budget, delta=delta)
        oracle = make_oracle(kind, x, lo, hi, epsilon, rng=rng, ledger=ledger, scope=scope)
        service = OracleService(oracle, kind=kind, t_low=lo, t_high=hi, max_orders=max_orders)
    if notes is not None:
        above = int((x >= hi).sum())
        if above != 1:  # the operator holds the data; this line is for them only
            notes.append(
                f"note: {above} values are >= t_h; the search assumes exactly one anomaly "
                "(several: search disjoint groups, section 7, privad.search.multiple)"
            )
        state = service.budget()
        kind_text = "" if delta is None else f", δ {delta:g} (tight accounting)"
        notes.append(
            f"scope {scope!r} ({NOTION}) in ledger {ledger.path}: total ε {state['total']:g}"
            f"{kind_text}, spent {state['spent']:g}, remaining {state['remaining']:g} "
            f"({state['queries_left']} queries of ε = {epsilon:g})"
        )
    auth = Depends(require_role(SENSOR_ROLE))

    def routes(app: FastAPI) -> None:
        @app.get("/v1/model")
        def model(who: Principal = auth) -> dict[str, Any]:
            return service.describe()

        @app.get("/v1/budget")
        def budget_state(who: Principal = auth) -> dict[str, Any]:
            return service.budget()

        @app.post("/v1/orders", openapi_extra=json_body({"permutation": _INDICES}, ["permutation"]))
        async def orders(request: Request, who: Principal = auth) -> JSONResponse:
            raw = await request.body()
            oid, new = await run_in_threadpool(lambda: service.store_order(parse_json(raw)))
            return JSONResponse(
                {"order": oid, "n_items": oracle.n_items}, status_code=201 if new else 200
            )

        @app.post(
            "/v1/query",
            openapi_extra=json_body(
                {
                    "indices": _INDICES,
                    "order": {"type": "string"},
                    "size": {"type": "integer"},
                    "complement": {"type": "boolean"},
                }
            ),
        )
        async def query(request: Request, who: Principal = auth) -> dict[str, Any]:
            raw = await request.body()

            def work() -> dict[str, Any]:
                group = service.parse_group(parse_json(raw))
                return service.answer(group, who.name)

            return await run_in_threadpool(work)

    return create_app(
        title="privad noisy group oracle",
        role=ROLE,
        routes=routes,
        tokens=tokens,
        max_body_bytes=max_body_bytes,
        recorder=recorder,
        on_shutdown=(ledger.close,),
        state={"service": service, "ledger": ledger},
    )
