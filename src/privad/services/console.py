"""The console: a small web application over a ledger for the people who own the budget.

``privad serve console --ledger PATH [--store PATH]`` serves server-rendered pages (no
JavaScript, nothing fetched) and, for each page, its JSON twin with the same data:

=================  ===================  ==================================================
page               JSON twin            what it shows
=================  ===================  ==================================================
``/``              ``/api/budgets``     every scope and notion: total, spent, remaining
                                        (pure and (ε, δ)), implied-notion charges,
                                        reservations in flight, spend over time (SVG)
``/spends``        ``/api/spends``      every live spend with its guarantee as data; each
                                        curator querier's charges; per-record exposure
                                        only to the operator, marked so
``/services``      ``/api/services``    a server's store (``--store``, opened read-only):
                                        its role, tables and parties (queriers, sensors)
``/plan``          ``/api/plan``        the closed-form planners (:mod:`privad.accounting
                                        .planner`, :func:`privad.sensitive.accounting
                                        .flag_curve`, :mod:`privad.search.theory`) and the
                                        utility table (``--utility DIR``) at the chosen ε
=================  ===================  ==================================================

Reading needs no token. Two actions change the ledger, with the same library calls as
``privad budget set`` and ``privad budget cancel`` (:meth:`Ledger.set_budget`,
:meth:`Ledger.cancel`); they need the operator token (role ``"operator"``): in a browser,
a login form sets an HttpOnly, SameSite=Strict session cookie and every form carries that
session's CSRF token; a script sends ``Authorization: Bearer SECRET`` to
``POST /api/budgets`` or ``POST /api/reservations/{id}/cancel`` with ``"confirm": true``
(as ``--yes`` with ``--json``). Each browser action shows what it will do and asks again
before it writes. Without an operator token the console is read-only.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sqlite3
import threading
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from privad.accounting import BUDGETED_NOTIONS, NOTIONS, Ledger
from privad.accounting.exact import to_fraction
from privad.accounting.records import RESERVED, Spend
from privad.accounting.statement import account_summary, accounts
from privad.errors import ParameterError, PrivadError
from privad.services import console_pages as pages
from privad.services.app import create_app
from privad.services.auth import Forbidden, Principal, TokenRegistry, require_role
from privad.services.bodies import DEFAULT_MAX_BODY_BYTES
from privad.services.console_plan import number_field, plain, plan_data, utility_rows
from privad.services.errors import ServiceError, status_of
from privad.validation import check_choice, check_epsilon, check_int

__all__ = [
    "OPERATOR_ROLE",
    "budgets_data",
    "create_console_app",
    "plan_data",
    "services_data",
    "spends_data",
]

ROLE = "console"
OPERATOR_ROLE = "operator"
COOKIE = "privad_console"

PARTIES = {
    "curator": ("asked", "querier", "questions"),
    "analyst": ("windows", "sensor", "windows"),
    "correction": ("differences", "sensor", "windows"),
    "rmp": ("batches", "participant", "batches"),
}
"""A store's role → (table, the column naming a party, what its rows are)."""

OPERATOR: Any = Depends(require_role(OPERATOR_ROLE))
"""The dependency of the actions' JSON routes: the operator's bearer token (401/403)."""

HIDDEN = "hidden: the data owner's (operator) view only"


# --------------------------------------------------------------------------------------------
# The data of each page (its JSON twin)
# --------------------------------------------------------------------------------------------


def _charged(spends: list[Spend]) -> list[Spend]:
    """The live spends that charge ε (a draw's block is its charge)."""
    return [s for s in spends if not s.is_draw and s.guarantee.epsilon is not None]


def budgets_data(book: Ledger) -> dict[str, Any]:
    """Every scope and notion as ``privad budget show --json`` lists them, the reservations
    in flight and each scope's cumulative ε over time, per notion.

    Examples
    --------
    >>> from privad.accounting import Guarantee
    >>> with Ledger(":memory:") as book:
    ...     _ = book.set_budget("d", "pure-dp", 2.0)
    ...     _ = book.spend("d", Guarantee("pure-dp", 0.5, "one record"), "q")
    ...     data = budgets_data(book)
    >>> data["budgets"][0]["remaining"], data["series"]["d"]["pure-dp"][-1][1]
    (1.5, 0.5)
    """
    budgets = book.budgets()
    spends = book.history(include_cancelled=False)
    rows = [account_summary(a) for a in accounts(budgets, spends) if NOTIONS[a.notion].has_epsilon]
    series: dict[str, dict[str, list[list[Any]]]] = {}
    totals: dict[tuple[str, str], Fraction] = {}
    for s in sorted(_charged(spends), key=lambda s: (s.timestamp, s.id)):
        key = (s.scope, s.notion)
        totals[key] = totals.get(key, Fraction(0)) + to_fraction(s.epsilon)
        series.setdefault(s.scope, {}).setdefault(s.notion, []).append(
            [s.timestamp.isoformat(), float(totals[key])]
        )
    return plain(
        {
            "ledger": book.path,
            "budgets": rows,
            "reservations": [_spend_dict(s, False) for s in spends if s.status == RESERVED],
            "series": series,
        }
    )


def _spend_dict(s: Spend, operator: bool) -> dict[str, Any]:
    """A spend as ``Spend.to_dict``; its per-record exposure only for the operator."""
    row = s.to_dict()
    meta = dict(row["metadata"])
    if "per_record" in meta:
        meta["per_record"] = (
            {"owner_only": True, **meta["per_record"]} if operator else {"owner_only": HIDDEN}
        )
    row["metadata"] = meta
    return row


def spends_data(book: Ledger, operator: bool) -> dict[str, Any]:
    """Every live spend (oldest first) and each curator querier's charges.

    A spend's ``metadata["per_record"]`` (how many answers can move with each stored
    record: it depends on the data, so it is not private) is shown to the operator with
    ``owner_only: true`` and replaced by a note for everyone else.

    Examples
    --------
    >>> from privad.accounting import Guarantee
    >>> with Ledger(":memory:") as book:
    ...     _ = book.set_budget("c/alice", "pure-dp", 2.0)
    ...     g = Guarantee("pure-dp", 0.5, "one record")
    ...     _ = book.spend("c/alice", g, "q", {"querier": "alice", "per_record": {"m": 1}})
    ...     data = spends_data(book, operator=False)
    >>> data["spends"][0]["metadata"]["per_record"]["owner_only"][:6]
    'hidden'
    >>> data["queriers"][0]["querier"], data["queriers"][0]["epsilon"]
    ('alice', 0.5)
    """
    spends = book.history(include_cancelled=False)
    charging = {s.id for s in _charged(spends)}
    queriers: dict[tuple[str, str], dict[str, Any]] = {}
    for s in spends:
        who = s.metadata.get("querier")
        if not isinstance(who, str):
            continue
        row = queriers.setdefault(
            (s.scope, who),
            {"scope": s.scope, "querier": who, "requests": 0, "epsilon": Fraction(0), "last": ""},
        )
        row["requests"] += 1
        if s.id in charging:
            row["epsilon"] += to_fraction(s.epsilon)
        row["last"] = max(row["last"], s.timestamp.isoformat())
    return plain(
        {
            "ledger": book.path,
            "operator_view": operator,
            "spends": [_spend_dict(s, operator) for s in spends],
            "queriers": [queriers[k] for k in sorted(queriers)],
        }
    )


def _querier_budgets(book: Ledger) -> dict[str, dict[str, Any] | None]:
    """Each curator querier's account (of its latest spend), as :func:`budgets_data` has it."""
    where = {
        s.metadata["querier"]: (s.scope, s.notion)
        for s in book.history(include_cancelled=False)
        if isinstance(s.metadata.get("querier"), str)
    }
    rows = {(r["scope"], r["notion"]): r for r in budgets_data(book)["budgets"]}
    return {name: rows.get(key) for name, key in where.items()}


def services_data(store: str | None, book: Ledger | None = None) -> dict[str, Any]:
    """A server's store, opened read-only: its role, its tables' sizes, its parties.

    Nothing is written to the file (SQLite's ``mode=ro``). ``{"store": None}`` without one.
    A curator's queriers get their budget from ``book``: the account (scope and notion) of
    the querier's latest spend there (``metadata["querier"]``), as on the budgets page.

    Examples
    --------
    >>> import tempfile
    >>> from privad.io import open_sqlite
    >>> path = tempfile.mkdtemp() + "/store.sqlite"
    >>> schema = "CREATE TABLE IF NOT EXISTS windows (sensor TEXT)"
    >>> open_sqlite(path, role="analyst", schema=schema).close()
    >>> data = services_data(path)
    >>> data["role"], data["party"], data["parties"]
    ('analyst', 'sensor', [])
    """
    if store is None:
        return {"store": None}
    path = Path(store).expanduser().resolve()
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ParameterError(f"cannot open --store {str(path)!r} read-only: {exc}") from None
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        meta = dict(conn.execute("SELECT key, value FROM meta")) if "meta" in tables else {}
        role = meta.get("role")
        sizes = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
        parties: list[dict[str, Any]] = []
        table, column, what = PARTIES.get(str(role), (None, None, None))
        if table in tables:
            rows = conn.execute(
                f'SELECT "{column}", COUNT(*) FROM "{table}" GROUP BY "{column}" ORDER BY 1'
            )
            parties = [{"name": name, "rows": n, "what": what} for name, n in rows]
    except sqlite3.Error as exc:
        raise ParameterError(
            f"--store {str(path)!r} is not a readable SQLite store: {exc}"
        ) from None
    finally:
        conn.close()
    if role == "curator" and book is not None:
        budgets = _querier_budgets(book)
        for party in parties:
            party["budget"] = budgets.get(party["name"])
    return {
        "store": str(path),
        "role": role,
        "created_at": meta.get("created_at"),
        "tables": sizes,
        "party": column,
        "parties": parties,
    }


# --------------------------------------------------------------------------------------------
# Sessions and the operator
# --------------------------------------------------------------------------------------------


class _Sessions:
    """Browser sessions of the operator: cookie value → its CSRF token (in memory)."""

    def __init__(self) -> None:
        self._by_id: dict[str, str] = {}
        self._lock = threading.Lock()

    def open(self) -> str:
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._by_id[session] = secrets.token_urlsafe(32)
        return session

    def csrf(self, session: str | None) -> str | None:
        with self._lock:
            return None if session is None else self._by_id.get(session)

    def close(self, session: str | None) -> None:
        with self._lock:
            self._by_id.pop(session or "", None)


def _operator_csrf(request: Request) -> str | None:
    """The CSRF token of the request's operator session, or None (not logged in)."""
    return request.app.state.sessions.csrf(request.cookies.get(COOKIE))


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form body: each field's last value."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}


def _check_form(request: Request, form: Mapping[str, str]) -> None:
    """An operator's browser form: a live session and its CSRF token, else 401/403."""
    expected = _operator_csrf(request)
    if expected is None:
        raise ServiceError("log in with the operator token first", status_code=401)
    if not hmac.compare_digest(form.get("csrf", ""), expected):
        raise Forbidden("the form's CSRF token does not match this session; reload the page")


# --------------------------------------------------------------------------------------------
# The actions (the same library calls as ``privad budget set`` / ``cancel``)
# --------------------------------------------------------------------------------------------


def _budget_request(fields: Mapping[str, Any]) -> tuple[str, str, float, float | None]:
    scope = str(fields.get("scope", "")).strip()
    if not scope:
        raise ParameterError("scope must be a non-empty name")
    notion = check_choice(str(fields.get("notion", "pure-dp")).strip(), "notion", BUDGETED_NOTIONS)
    as_text = {k: str(v) for k, v in fields.items() if v is not None}
    eps = number_field(as_text, "epsilon")
    if eps is None:
        raise ParameterError("epsilon is required: the budget's total ε, a finite number > 0")
    return scope, notion, check_epsilon(eps, "epsilon"), number_field(as_text, "delta")


def _set_budget(book: Ledger, scope: str, notion: str, eps: float, delta: float | None) -> dict:
    b = book.set_budget(scope, notion, eps, delta=delta)
    return plain(
        {
            "ledger": book.path,
            "scope": b.scope,
            "notion": b.notion,
            "total": b.total,
            "spent": b.spent,
            "remaining": b.remaining,
            "delta": b.delta,
            "delta_spent": b.delta_spent if b.delta is not None else None,
        }
    )


def _cancel(book: Ledger, spend_id: int) -> dict:
    spend = book.cancel(spend_id)  # a committed spend: LedgerError (4xx)
    return plain(
        {
            "ledger": book.path,
            "spend": spend.id,
            "scope": spend.scope,
            "cancelled": True,
            "remaining": {b.notion: b.remaining for b in book.budgets(spend.scope)},
        }
    )


def _reservation(book: Ledger, spend_id: Any) -> Spend:
    try:
        number = int(str(spend_id))
    except ValueError:
        raise ParameterError(f"id must be a spend id (an integer >= 1), got {spend_id!r}") from None
    spend = book.get_spend(check_int(number, "id", minimum=1))
    if spend.status != RESERVED:
        raise ParameterError(
            f"spend #{spend.id} is {spend.status}, not reserved: only a reservation in "
            "flight can be cancelled"
        )
    return spend


# --------------------------------------------------------------------------------------------
# The app
# --------------------------------------------------------------------------------------------


def create_console_app(
    ledger: str,
    *,
    store: str | None = None,
    operator_token: str | None = None,
    utility: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """The console's app over the ledger file ``ledger`` (which must exist).

    Parameters
    ----------
    ledger : the ledger file (opened once, never created).
    store : a server's SQLite store, shown on ``/services`` (opened read-only per request).
    operator_token : the operator's secret (>= 16 characters); None: read-only console.
    utility : the folder of ``benchmarks/bench_utility.py``'s saved results, or None.
    max_body_bytes : the largest request body (forms are small).

    Examples
    --------
    >>> import tempfile
    >>> path = tempfile.mkdtemp() + "/ledger.sqlite"
    >>> Ledger(path).close()
    >>> create_console_app(path).title
    'privad console'
    """
    peers = {} if operator_token is None else {OPERATOR_ROLE: operator_token}
    tokens = TokenRegistry(peers=peers)
    if store is not None:
        services_data(store)  # a store that cannot be read is refused at start
    book = Ledger(ledger, create=False)

    def routes(app: FastAPI) -> None:
        def view(request: Request) -> pages.View:
            csrf = _operator_csrf(request)
            return pages.View(
                operator=csrf is not None,
                csrf=csrf,
                can_login=operator_token is not None,
                ledger=book.path,
            )

        def html(body: str, status: int = 200) -> HTMLResponse:
            return HTMLResponse(body, status_code=status)

        def refused(request: Request, exc: PrivadError) -> HTMLResponse:
            status = status_of(exc)[0]
            return html(pages.error_page(view(request), status, str(exc)), status)

        @app.get("/api/budgets")
        def api_budgets() -> JSONResponse:
            """Every scope and notion, reservations in flight, spend over time."""
            return JSONResponse(budgets_data(book))

        @app.get("/", response_class=HTMLResponse)
        def budgets_page(request: Request) -> HTMLResponse:
            return html(pages.budgets_page(view(request), budgets_data(book), BUDGETED_NOTIONS))

        @app.get("/api/spends")
        def api_spends(request: Request) -> JSONResponse:
            """Every live spend; per-record exposure only with the operator token."""
            who = _bearer(request, tokens)
            return JSONResponse(spends_data(book, who is not None))

        @app.get("/spends", response_class=HTMLResponse)
        def spends_page(request: Request) -> HTMLResponse:
            v = view(request)
            return html(pages.spends_page(v, spends_data(book, v.operator)))

        @app.get("/api/services")
        def api_services() -> JSONResponse:
            """The store given with --store, read-only."""
            return JSONResponse(services_data(store, book))

        @app.get("/services", response_class=HTMLResponse)
        def services_page(request: Request) -> HTMLResponse:
            return html(pages.services_page(view(request), services_data(store, book)))

        @app.get("/api/plan")
        def api_plan(request: Request) -> JSONResponse:
            """The planners for the query's fields (see :func:`plan_data`)."""
            return JSONResponse(plan_data(dict(request.query_params), utility))

        @app.get("/plan", response_class=HTMLResponse)
        def plan_page(request: Request) -> HTMLResponse:
            params = dict(request.query_params)
            try:
                data, error = plan_data(params, utility), None
            except PrivadError as exc:
                data, error = {"inputs": params, "utility": utility_rows(utility, None)}, str(exc)
            return html(pages.plan_page(view(request), data, error), 422 if error else 200)

        # -- the operator --------------------------------------------------------------------

        @app.get("/login", response_class=HTMLResponse)
        def login_page(request: Request) -> HTMLResponse:
            return html(pages.login_page(view(request), None))

        @app.post("/login", response_class=HTMLResponse)
        async def login(request: Request) -> Any:
            form = await _form(request)
            principal = tokens.lookup(form.get("token", "").strip())
            if principal is None or principal.role != OPERATOR_ROLE:
                return html(pages.login_page(view(request), "unknown token"), 401)
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(
                COOKIE,
                request.app.state.sessions.open(),
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
            return response

        @app.post("/logout")
        async def logout(request: Request) -> Any:
            form = await _form(request)
            try:
                _check_form(request, form)
            except PrivadError as exc:
                return refused(request, exc)
            request.app.state.sessions.close(request.cookies.get(COOKIE))
            response = RedirectResponse("/", status_code=303)
            response.delete_cookie(COOKIE)
            return response

        @app.post("/actions/budget", response_class=HTMLResponse)
        async def set_budget_form(request: Request) -> HTMLResponse:
            form = await _form(request)
            try:
                _check_form(request, form)
                scope, notion, eps, delta = _budget_request(form)
                if form.get("confirm") != "yes":
                    now = [b for b in book.budgets(scope) if b.notion == notion]
                    return html(pages.confirm_budget(view(request), scope, notion, eps, delta, now))
                done = _set_budget(book, scope, notion, eps, delta)
            except PrivadError as exc:
                return refused(request, exc)
            return html(pages.done_page(view(request), "Budget set", done))

        @app.post("/actions/cancel", response_class=HTMLResponse)
        async def cancel_form(request: Request) -> HTMLResponse:
            form = await _form(request)
            try:
                _check_form(request, form)
                spend = _reservation(book, form.get("id"))
                if form.get("confirm") != "yes":
                    return html(pages.confirm_cancel(view(request), _spend_dict(spend, True)))
                done = _cancel(book, spend.id)
            except PrivadError as exc:
                return refused(request, exc)
            return html(pages.done_page(view(request), "Reservation cancelled", done))

        @app.post("/api/budgets")
        async def api_set_budget(request: Request, _who: Principal = OPERATOR) -> JSONResponse:
            """Set a budget (``{"scope", "notion", "epsilon", "delta", "confirm": true}``)."""
            body = await _json_body(request)
            scope, notion, eps, delta = _budget_request(body)
            return JSONResponse(_set_budget(book, scope, notion, eps, delta))

        @app.post("/api/reservations/{spend_id}/cancel")
        async def api_cancel(
            spend_id: int, request: Request, _who: Principal = OPERATOR
        ) -> JSONResponse:
            """Cancel a reservation in flight (``{"confirm": true}``)."""
            await _json_body(request)
            return JSONResponse(_cancel(book, _reservation(book, spend_id).id))

    app = create_app(
        title="privad console",
        role=ROLE,
        routes=routes,
        tokens=tokens,
        max_body_bytes=max_body_bytes,
        on_shutdown=[book.close],
    )
    app.state.sessions = _Sessions()
    return app


def _bearer(request: Request, tokens: TokenRegistry) -> Principal | None:
    """The operator, when the request carries its bearer token; None without a token (a
    reader); 401 for a token that is not the operator's (a script's mistake, said at once)."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, secret = header.partition(" ")
    principal = tokens.lookup(secret.strip()) if scheme.lower() == "bearer" else None
    if principal is None or principal.role != OPERATOR_ROLE:
        raise ServiceError("unknown token: send the operator's, or none to read", status_code=401)
    return principal


async def _json_body(request: Request) -> dict[str, Any]:
    """An action's JSON object, which must say ``"confirm": true``."""
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        raise ParameterError("the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise ParameterError("the body must be a JSON object")
    if body.get("confirm") is not True:
        raise ParameterError(
            'refusing to change the ledger without confirmation: send "confirm": true'
        )
    return body
