"""The console's HTML (:mod:`privad.services.console`): pages from Python, every value
escaped with :func:`html.escape`, charts drawn here as inline SVG, no JavaScript.

Each number a page shows is also in its cell's ``data-value`` attribute, exactly as the
JSON twin has it (``repr`` of the float), so a test can compare a rendered page with
``privad budget show --json``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any

__all__ = ["View", "chart_svg"]

PALETTE = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989")

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1f2328;
background:#f6f8fa}
header{background:#24292f;color:#fff;padding:.6rem 1.5rem;display:flex;gap:1.5rem;
align-items:center;flex-wrap:wrap}
header a{color:#fff;text-decoration:none}header a.on{border-bottom:2px solid #fff}
header .who{margin-left:auto;font-size:.85rem}
main{max-width:1200px;margin:0 auto;padding:1rem 1.5rem}
table{border-collapse:collapse;background:#fff;margin:.5rem 0 1.2rem;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#eaeef2}td.n{text-align:right;font-variant-numeric:tabular-nums}
.owner{background:#fff8c5}.note{color:#57606a;font-size:.85rem}
.error{background:#ffebe9;border:1px solid #d1242f;padding:.6rem}
form.inline{display:inline}fieldset{background:#fff;border:1px solid #d0d7de;margin:.5rem 0}
label{display:inline-block;margin:.2rem .8rem .2rem 0}input{width:7rem}
.charts{display:flex;flex-wrap:wrap;gap:1rem}.chart{background:#fff;border:1px solid #d0d7de;
padding:.4rem}td.t{white-space:nowrap}code,pre{font-size:.8rem}pre{white-space:pre-wrap}
"""

NAV = (("/", "Budgets"), ("/spends", "Spends"), ("/services", "Services"), ("/plan", "Plan"))


@dataclass(frozen=True)
class View:
    """Who is looking: the operator (with the session's CSRF token) or a reader.

    Examples
    --------
    >>> View(operator=False, csrf=None, can_login=True, ledger="ledger.sqlite").operator
    False
    """

    operator: bool
    csrf: str | None
    can_login: bool
    ledger: str


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "—" if value is None else str(value)


def _num(value: Any) -> str:
    """A numeric cell: shown to 6 digits, exact in ``data-value``."""
    exact = "" if value is None else repr(value)
    return f'<td class="n" data-value="{_e(exact)}">{_e(_fmt(value))}</td>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    if not body:
        body = f'<tr><td colspan="{len(headers)}" class="note">(none)</td></tr>'
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _td(value: Any) -> str:
    return f"<td>{_e(value)}</td>"


def _cells(cell: Callable[[Any], str], record: Mapping[str, Any], *keys: str) -> list[str]:
    """The cells of ``record``'s values under ``keys``, each drawn by ``cell`` (:func:`_td`
    for text, :func:`_num` for a number); a missing key is an empty value."""
    return [cell(record.get(key)) for key in keys]


def _csrf(view: View) -> str:
    return f'<input type="hidden" name="csrf" value="{_e(view.csrf)}">'


def _page(view: View, title: str, path: str, body: str) -> str:
    links = "".join(
        f'<a href="{href}"{" class=on" if href == path else ""}>{_e(name)}</a>'
        for href, name in NAV
    )
    if view.operator:
        who = (
            '<span class="who">operator · <form class="inline" method="post" '
            f'action="/logout">{_csrf(view)}<button>log out</button></form></span>'
        )
    elif view.can_login:
        who = '<span class="who">read-only · <a href="/login">operator login</a></span>'
    else:
        who = '<span class="who">read-only (no operator token configured)</span>'
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(title)} · privad console</title><style>{STYLE}</style></head><body>"
        f"<header><strong>privad console</strong>{links}{who}</header>"
        f'<main><h1>{_e(title)}</h1><p class="note">ledger <code>{_e(view.ledger)}</code></p>'
        f"{body}</main></body></html>"
    )


# --------------------------------------------------------------------------------------------
# Chart
# --------------------------------------------------------------------------------------------


def _span(charts: Iterable[Mapping[str, Sequence[Sequence[Any]]]]) -> tuple[float, float]:
    """The first and last time (POSIX seconds) of the charts' points."""
    times = [
        datetime.fromisoformat(t).timestamp()
        for series in charts
        for pts in series.values()
        for t, _ in pts
    ]
    return min(times, default=0.0), max(times, default=1.0)


def chart_svg(
    title: str,
    series: Mapping[str, Sequence[Sequence[Any]]],
    limits: Mapping[str, float],
    span: tuple[float, float] | None = None,
    width: int = 360,
    height: int = 170,
) -> str:
    """Cumulative ε over time as step lines, one per notion, with each budget's total
    dashed: an inline SVG drawn from the points (ISO time, cumulative ε). ``span`` is the
    time axis (POSIX seconds; default: the points' own), shared by a page's charts.

    Examples
    --------
    >>> svg = chart_svg("d", {"pure-dp": [["2026-01-01T00:00:00+00:00", 0.5]]}, {"pure-dp": 1})
    >>> svg.startswith("<svg") and "polyline" in svg
    True
    """
    left, right, top, bottom = 48, 12, 22, 30
    t0, t1 = span or _span([series])
    if t1 <= t0:
        t0, t1 = t0 - 1.0, t0 + 1.0
    top_y = max([p[1] for pts in series.values() for p in pts] + list(limits.values()) + [1e-9])
    top_y *= 1.08

    def x(t: float) -> float:
        return left + (t - t0) / (t1 - t0) * (width - left - right)

    def y(v: float) -> float:
        return height - bottom - v / top_y * (height - top - bottom)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{_e(title)}: cumulative ε over time">',
        f'<text x="{left}" y="14" font-size="12" font-weight="bold">{_e(title)}</text>',
        f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}" '
        'stroke="#57606a"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{y(0):.1f}" stroke="#57606a"/>',
        f'<text x="{left - 4}" y="{y(0) + 4:.1f}" font-size="10" text-anchor="end">0</text>',
        f'<text x="{left - 4}" y="{top + 8}" font-size="10" text-anchor="end">{top_y:.3g}</text>',
    ]
    for label, t, anchor in ((t0, t0, "start"), (t1, t1, "end")):
        stamp = datetime.fromtimestamp(label, UTC).strftime("%m-%d %H:%M")
        parts.append(
            f'<text x="{x(t):.1f}" y="{height - 10}" font-size="10" text-anchor="{anchor}">'
            f"{_e(stamp)}</text>"
        )
    for i, (notion, pts) in enumerate(sorted(series.items())):
        colour = PALETTE[i % len(PALETTE)]
        coords, last = [f"{x(t0):.1f},{y(0):.1f}"], 0.0
        for stamp, value in pts:
            px = x(datetime.fromisoformat(stamp).timestamp())
            coords += [f"{px:.1f},{y(last):.1f}", f"{px:.1f},{y(value):.1f}"]
            last = value
        coords.append(f"{x(t1):.1f},{y(last):.1f}")
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
            f'points="{" ".join(coords)}"><title>{_e(notion)}</title></polyline>'
        )
        parts.append(
            f'<text x="{width - right}" y="{top + 12 * i}" font-size="10" text-anchor="end" '
            f'fill="{colour}">{_e(notion)} {last:.4g}</text>'
        )
        if notion in limits:
            parts.append(
                f'<line x1="{left}" x2="{width - right}" y1="{y(limits[notion]):.1f}" '
                f'y2="{y(limits[notion]):.1f}" stroke="{colour}" stroke-dasharray="5,4">'
                f"<title>budget of {_e(notion)}: {limits[notion]:g}</title></line>"
            )
    parts.append("</svg>")
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# Pages
# --------------------------------------------------------------------------------------------


def _spend_rows(
    spends: Sequence[Mapping[str, Any]], action: Callable[[int], str] | None
) -> list[list[str]]:
    rows = []
    for s in spends:
        g = s["guarantee"]
        row = [
            f'<td class="n">{s["id"]}</td>',
            '<td class="t">' + _e(s["timestamp"][:19].replace("T", " ")) + "</td>",
            *_cells(_td, s, "scope", "label", "notion"),
            *_cells(_num, s, "epsilon", "tight_epsilon", "delta"),
            _td(s["status"]),
            f"<td><details><summary>{_e(g.get('description') or g['notion'])[:60]}"
            f"</summary><code>{_e(_guarantee_text(g))}</code></details></td>",
        ]
        if action is not None:
            row.append(f"<td>{action(s['id'])}</td>")
        rows.append(row)
    return rows


def _guarantee_text(g: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in g.items() if v not in (None, "", [], {}))


SPEND_HEADERS = [
    "id",
    "when (UTC)",
    "scope",
    "label",
    "notion",
    "ε",
    "tight ε",
    "δ",
    "status",
    "guarantee",
]


def budgets_page(view: View, data: Mapping[str, Any], notions: Sequence[str]) -> str:
    """The budgets: every scope and notion, reservations in flight, spend over time."""
    rows = []
    for b in data["budgets"]:
        implied = "; ".join(
            f"{n} {v:.6g}" for n, v in b["spent_by_notion"].items() if n != b["notion"] and v
        )
        rows.append(
            [
                *_cells(_td, b, "scope", "notion"),
                *_cells(
                    _num, b, "total", "spent", "pure_spent", "remaining", "delta", "delta_spent"
                ),
                _td(implied or "—"),
                f'<td class="n">{b["spends"]}</td>',
            ]
        )
    body = [
        "<p>Spent and remaining ε per scope and notion. A notion counts the spends of the "
        "notions that imply it (the “implied” column); an (ε, δ) budget is charged by "
        "tight accounting (“spent”), its linear total is “pure spent”.</p>",
        _table(
            [
                "scope",
                "notion",
                "total ε",
                "spent ε",
                "pure spent ε",
                "remaining ε",
                "δ",
                "δ spent",
                "implied charges",
                "spends",
            ],
            rows,
            "budgets",
        ),
    ]
    body.append("<h2>Spend over time</h2><div class=charts>")
    limits: dict[str, dict[str, float]] = {}
    for b in data["budgets"]:
        if b["total"] is not None:
            limits.setdefault(b["scope"], {})[b["notion"]] = b["total"]
    span = _span(data["series"].values())
    for scope, series in sorted(data["series"].items()):
        svg = chart_svg(scope, series, limits.get(scope, {}), span)
        body.append(f'<div class="chart">{svg}</div>')
    if not data["series"]:
        body.append('<p class="note">(nothing spent yet)</p>')
    body.append("</div>")
    body += [
        "<h2>Reservations in flight</h2>",
        '<p class="note">Counted against the budget until committed or cancelled; cancel one '
        "only when its run was killed and nothing it computed was seen.</p>",
    ]

    def cancel(spend_id: int) -> str:
        return (
            f'<form class="inline" method="post" action="/actions/cancel">{_csrf(view)}'
            f'<input type="hidden" name="id" value="{spend_id}"><button>cancel…</button></form>'
        )

    body.append(
        _table(
            SPEND_HEADERS + (["action"] if view.operator else []),
            _spend_rows(data["reservations"], cancel if view.operator else None),
            "reservations",
        )
    )
    if view.operator:
        options = "".join(f'<option value="{_e(n)}">{_e(n)}</option>' for n in notions)
        body.append(
            '<h2>Set a budget</h2><form method="post" action="/actions/budget"><fieldset>'
            f'{_csrf(view)}<label>scope <input name="scope" required></label>'
            f'<label>notion <select name="notion">{options}</select></label>'
            '<label>total ε <input name="epsilon" required></label>'
            '<label>δ (optional) <input name="delta"></label>'
            "<button>set…</button></fieldset></form>"
        )
    return _page(view, "Budgets", "/", "".join(body))


def spends_page(view: View, data: Mapping[str, Any]) -> str:
    """The statement row by row, the curator's queriers, per-record exposure (operator)."""
    body = [
        "<p>Every live spend, oldest first, with its guarantee as data.</p>",
        _table(SPEND_HEADERS, _spend_rows(data["spends"], None), "spends"),
        "<h2>Curator: each querier's charges</h2>",
        _table(
            ["scope", "querier", "requests", "ε charged", "last request"],
            (
                [
                    *_cells(_td, q, "scope", "querier"),
                    f'<td class="n">{q["requests"]}</td>',
                    _num(q["epsilon"]),
                    _td(q["last"][:19].replace("T", " ")),
                ]
                for q in data["queriers"]
            ),
            "queriers",
        ),
        '<h2 id="exposure">Per-record exposure</h2>',
    ]
    exposed = [s for s in data["spends"] if "per_record" in s["metadata"]]
    if not view.operator:
        body.append(
            '<p class="note">Hidden: how many answers can move with each stored record '
            "depends on the data, so only the data owner (operator login) sees it.</p>"
        )
    else:
        rows = []
        for s in exposed:
            pr = s["metadata"]["per_record"]
            bins = "; ".join(f"{lo}–{hi}: {n}" for lo, hi, n in pr.get("bins", []))
            rows.append(
                [f'<td class="n">{s["id"]}</td>', _td(s["scope"])]
                + _cells(_num, pr, "m", "records", "max", "median", "p90", "p99")
                + [_td(bins)]
            )
        body.append(
            '<p class="owner">Data owner only (depends on the data, not private): answers '
            "that can move with each stored record, per spend.</p>"
            + _table(
                [
                    "spend",
                    "scope",
                    "charged m",
                    "records",
                    "max",
                    "median",
                    "90%",
                    "99%",
                    "records by answers",
                ],
                rows,
                "owner exposure",
            )
        )
    return _page(view, "Spends", "/spends", "".join(body))


def services_page(view: View, data: Mapping[str, Any]) -> str:
    """A server's store: role, tables, parties."""
    if data.get("store") is None:
        body = (
            '<p class="note">No store: start the console with <code>--store PATH</code> '
            "(a curator, analyst, correction or RMP store) to see its parties.</p>"
        )
        return _page(view, "Services", "/services", body)
    body = [
        f"<p>Store <code>{_e(data['store'])}</code> (opened read-only): role "
        f'<strong class="role">{_e(data["role"])}</strong>, created {_e(data["created_at"])}.</p>',
        _table(
            ["table", "rows"],
            ([_td(t), _num(n)] for t, n in data["tables"].items()),
            "tables",
        ),
    ]
    if data["party"]:
        body.append(f"<h2>{_e(data['party'])}s</h2>")
        budgeted = any("budget" in p for p in data["parties"])
        extra = ["ledger scope", "total ε", "spent ε", "remaining ε"] if budgeted else []

        def row(p: Mapping[str, Any]) -> list[str]:
            cells = [_td(p["name"]), _num(p["rows"]), _td(p["what"])]
            if budgeted:
                b = p.get("budget") or {}
                cells += [_td(b.get("scope"))]
                cells += _cells(_num, b, "total", "spent", "remaining")
            return cells

        body.append(
            _table([data["party"], "rows", "of", *extra], map(row, data["parties"]), "parties")
        )
    return _page(view, "Services", "/services", "".join(body))


PLAN_FIELDS = (
    ("epsilon", "ε per answer"),
    ("answers", "answers per record"),
    ("delta", "δ (optional)"),
    ("budget", "budget ε"),
    ("beta", "β (sp)"),
    ("k", "k (sp)"),
    ("t_low", "t_ℓ (search)"),
    ("t_high", "t_h (search)"),
    ("items", "items (search)"),
    ("error", "search error"),
)


def plan_page(view: View, data: Mapping[str, Any], error: str | None) -> str:
    """The planners' form (GET) and their answers."""
    inputs = data.get("inputs", {})
    fields = "".join(
        f'<label>{_e(text)} <input name="{name}" value="{_e(inputs.get(name, ""))}"></label>'
        for name, text in PLAN_FIELDS
    )
    body = [
        "<p>Closed forms only: nothing is read or spent. Fill ε and what you want to know.</p>",
        f'<form method="get" action="/plan"><fieldset>{fields}<button>plan</button>'
        "</fieldset></form>",
    ]
    if error:
        body.append(f'<p class="error">{_e(error)}</p>')
    eps = inputs.get("epsilon")
    if "cost" in data:
        c = data["cost"]
        opt = (
            ""
            if c["optimal_epsilon"] is None
            else f" and (ε {c['optimal_epsilon']:.6g}, δ {c['delta']:g}) by the optimal "
            "composition theorem"
        )
        body.append(
            f'<p class="cost">With ε {_e(eps)} per answer and {c["answers"]} answers, the job '
            f'costs ε <span data-value="{c["linear_epsilon"]!r}">{c["linear_epsilon"]:.6g}'
            f"</span> by linear composition{_e(opt)}.</p>"
        )
    if "admits" in data:
        a = data["admits"]
        how = (
            "linear composition"
            if a["delta"] is None
            else f"optimal composition at δ {a['delta']:g}"
        )
        body.append(
            f'<p class="admits">A budget of ε {a["budget"]:g} admits '
            f'<strong data-value="{a["answers"]}">{a["answers"]}</strong> answers of ε '
            f"{_e(eps)} ({_e(how)}).</p>"
        )
    if "flag_probability" in data:
        f = data["flag_probability"]
        body.append(
            f"<h2>Sensitive privacy: P(labelled anomaly) by ball count (β = {f['beta']}, "
            f"k = {f['k']})</h2>"
        )
        body.append(
            _table(
                ["B", "anomaly?", "sp", "dp"],
                (
                    [
                        _num(r["ball"]),
                        _td("yes" if r["anomaly"] else "no"),
                        _num(r["sp"]),
                        _num(r["dp"]),
                    ]
                    for r in f["rows"]
                ),
                "flag",
            )
        )
    if "search" in data:
        s = data["search"]
        rows = [
            [_td("threshold ratio R"), _num(s["threshold_ratio"])],
            [_td("answer error p (eq. 24)"), _num(s["error_probability"])],
        ]
        if s["converges"]:
            rows += [
                [_td("E[T] bound (eq. 26)"), _num(s["expected_queries_bound"])],
                [_td("linear ε of the search"), _num(s["cost"]["linear_epsilon"])],
                [_td("optimal ε at δ"), _num(s["cost"]["optimal_epsilon"])],
            ]
        else:
            rows.append([_td("converges"), _td("no: p ≥ 1/2; raise ε or the ratio")])
        body.append("<h2>Noisy binary search</h2>" + _table(["quantity", "value"], rows, "search"))
    body.append(_utility(data.get("utility", {})))
    return _page(view, "Plan before you spend", "/plan", "".join(body))


def _utility(u: Mapping[str, Any]) -> str:
    if not u.get("available"):
        return f'<h2>Utility</h2><p class="note">{_e(u.get("note", ""))}</p>'
    eps = u.get("epsilon")
    head = (
        "<h2>Utility (benchmarks/bench_utility.py)</h2>"
        f'<p class="note">At ε = {_e(eps)}; results exist for ε in '
        f"{_e(', '.join(f'{e:g}' for e in u['epsilons']) or 'none')}.</p>"
    )
    rows = (
        [
            *_cells(_td, r, "set", "detector", "param"),
            *_cells(_num, r, "auc", "f1"),
            _td(r.get("error") or ""),
        ]
        for r in u["rows"]
    )
    return head + _table(["set", "detector", "ε", "AUC", "F1", "note"], rows, "utility")


def login_page(view: View, error: str | None) -> str:
    """The operator's login form."""
    if not view.can_login:
        body = (
            '<p class="note">This console is read-only: it was started without an operator '
            "token.</p>"
        )
    else:
        body = (
            ('<p class="error">' + _e(error) + "</p>" if error else "")
            + '<form method="post" action="/login"><fieldset><label>operator token '
            '<input type="password" name="token" style="width:20rem" autocomplete="off">'
            "</label><button>log in</button></fieldset></form>"
        )
    return _page(view, "Operator login", "/login", body)


def error_page(view: View, status: int, message: str) -> str:
    """A refused request: nothing was changed."""
    return _page(
        view,
        f"Refused ({status})",
        "",
        f'<p class="error">{_e(message)}</p><p>Nothing was changed.</p>',
    )


def _confirm(view: View, action: str, text: str, fields: Mapping[str, Any]) -> str:
    hidden = "".join(
        f'<input type="hidden" name="{_e(k)}" value="{_e(v)}">'
        for k, v in fields.items()
        if v is not None
    )
    return (
        f'<p class="confirm">{_e(text)}</p><form method="post" action="{action}">'
        f'{_csrf(view)}{hidden}<input type="hidden" name="confirm" value="yes">'
        '<button>confirm</button> <a href="/">no, go back</a></form>'
    )


def confirm_budget(
    view: View, scope: str, notion: str, eps: float, delta: float | None, now: Sequence[Any]
) -> str:
    """Ask again before setting a budget."""
    was = (
        f"now total ε {float(now[0].total):g}, spent {float(now[0].spent):g}"
        if now
        else "no budget yet"
    )
    kind = "" if delta is None else f", δ {delta:g}"
    text = f"Set the budget of scope {scope!r} under {notion} to ε {eps:g}{kind} ({was})?"
    fields = {"scope": scope, "notion": notion, "epsilon": repr(eps), "delta": delta}
    return _page(view, "Confirm", "", _confirm(view, "/actions/budget", text, fields))


def confirm_cancel(view: View, spend: Mapping[str, Any]) -> str:
    """Ask again before cancelling a reservation."""
    text = (
        f"Give back the ε of reservation #{spend['id']} ({spend['label']!r}, scope "
        f"{spend['scope']!r}, {spend['notion']}, ε {spend['epsilon']:g})? Only if nothing it "
        "computed was released."
    )
    return _page(view, "Confirm", "", _confirm(view, "/actions/cancel", text, {"id": spend["id"]}))


def done_page(view: View, title: str, data: Mapping[str, Any]) -> str:
    """What an action wrote to the ledger."""
    rows = ([_td(k), _td(v)] for k, v in data.items())
    return _page(view, title, "", _table(["field", "value"], rows, "done") + '<a href="/">back</a>')
