"""The noisy group oracle of a remote server as a :class:`privad.search.Oracle`.

:class:`RemoteOracle` talks to ``privad serve oracle`` (:mod:`privad.services.oracle`)
through :class:`~privad.services.clients.OracleClient`, so :func:`privad.search.search`
runs against the server unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.noise import RandomnessLike
from privad.search import Oracle
from privad.search.groups import PrefixGroup, resolve_group
from privad.search.models import model_from_description
from privad.services.clients import ClosesOnExit, OracleClient
from privad.services.errors import NotFound, UpstreamError, closed_on_error
from privad.validation import check_int

__all__ = ["RemoteOracle"]


class RemoteOracle(Oracle, ClosesOnExit):
    """A :class:`privad.search.Oracle` whose data live on an oracle server.

    The answer model is rebuilt from the server's public description
    (:func:`privad.search.models.model_from_description`), so :func:`privad.search.search` runs
    against it unchanged. :meth:`query` sends the group: a
    :class:`~privad.search.groups.PrefixGroup` as (order id, size, complement) after storing its
    order once (and again if the server answers 404, e.g. after a restart); a mask or an
    index array as indices. The server charges each answer to its own ledger and refuses
    queries past its budget (:class:`~privad.errors.BudgetExceededError`); the
    searcher's own accounting, if any, is separate (``search(ledger=...)``).

    Parameters
    ----------
    base_url, token:
        The server (``http://host:port``) and a token it accepts.
    timeout, retries, verify, recorder, transport:
        As for :class:`ServiceClient`. A query retried after a lost answer is charged
        again by the server (never less than what was released).
    """

    def __init__(self, base_url: str, token: str, **client_options: Any) -> None:
        self.client = OracleClient(base_url, token, **client_options)
        with closed_on_error(self.client):
            try:
                info = self.client.model()
                self._model = model_from_description(info["model"])
                self._n_items = check_int(info["n_items"], "n_items", minimum=2)
            except (KeyError, TypeError, ParameterError, DataError) as exc:
                raise UpstreamError(
                    f"the oracle at {self.client.base_url} sent a malformed model description: "
                    f"{exc}"
                ) from None
        self.description: dict[str, Any] = info
        self.last_budget: dict[str, Any] = dict(info.get("budget") or {})
        self.queries_sent = 0
        self._orders: dict[int, tuple[Any, str]] = {}

    @property
    def n_items(self) -> int:
        return self._n_items

    @property
    def base_url(self) -> str:
        """The server's URL."""
        return self.client.base_url

    def _order_id(self, order: Any, *, again: bool = False) -> str:
        key = id(order)
        known = self._orders.get(key)
        if known is not None and known[0] is order and not again:
            return known[1]
        oid = self.client.store_order(order.permutation)
        if len(self._orders) >= 16:  # a fresh order per query: keep only recent ones
            self._orders.pop(next(iter(self._orders)))
        self._orders[key] = (order, oid)
        return oid

    def query(self, group: Any, rng: RandomnessLike = None) -> Any:
        """Send one group query; the checked answer. ``rng`` cannot be given: the server
        draws its own noise."""
        if rng is not None:
            raise ParameterError(
                "a remote oracle draws its noise on the server; rng= cannot be given"
            )
        resolved = resolve_group(group, self._n_items)
        if isinstance(resolved, PrefixGroup):
            oid = self._order_id(resolved.order)
            try:
                data = self.client.query_prefix(oid, resolved.size, resolved.complement)
            except NotFound:  # the server forgot the order (restart, or too many orders)
                oid = self._order_id(resolved.order, again=True)
                data = self.client.query_prefix(oid, resolved.size, resolved.complement)
        else:
            data = self.client.query_indices(np.flatnonzero(resolved))
        self.queries_sent += 1
        if not isinstance(data, dict) or "answer" not in data:
            raise UpstreamError(f"the oracle at {self.base_url} answered without 'answer'")
        if isinstance(data.get("budget"), dict):
            self.last_budget = data["budget"]
        try:
            return self._model.check_answer(data["answer"])
        except DataError as exc:
            raise UpstreamError(
                f"the oracle at {self.base_url} sent a malformed answer: {exc}"
            ) from None

    def budget(self) -> dict[str, Any]:
        """The server's budget now (``GET /v1/budget``)."""
        self.last_budget = self.client.budget()
        return self.last_budget

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def __repr__(self) -> str:
        return f"RemoteOracle({self.base_url!r}, n_items={self._n_items}, {self._model!r})"
