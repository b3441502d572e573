"""The console (``privad serve console``, :mod:`privad.services.console`) over loopback.

A ledger with real spends (a curator's answers to two queriers, a Laplace release, an
(ε, δ) budget, a reservation left by a killed run) is served by a threaded console; httpx
checks the JSON twins, the operator's token and the actions, and that a refused action
changes nothing. The browser tests (headless Chromium, skipped when it is absent) drive a
``privad serve console`` process: the rendered pages show the numbers of ``privad budget
show --json``, a refused action changes nothing, and each page is screenshot.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from privad.accounting import Ledger
from privad.accounting import charges as charges_module
from privad.accounting import ledger as ledger_module
from privad.accounting import reservations as reservations_module
from privad.errors import PrivadError
from privad.noise import LaplaceMechanism
from privad.sensitive import SPMechanism
from privad.sensitive.curator import Curator
from privad.services.console import create_console_app

OPERATOR = "operator-secret-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]


def make_ledger(folder: Path) -> tuple[Path, Path]:
    """A ledger with real spends and the curator store that made some of them; the ledger's
    clock steps 40 minutes per reading, so that the charts have a time axis."""
    X = np.array([[i % 17 / 17, i % 5 / 5] for i in range(120)])
    ledger, store = folder / "ledger.sqlite", folder / "curator.sqlite"
    ticks = itertools.count()

    def clock() -> datetime:
        return datetime(2026, 3, 2, 9, tzinfo=UTC) + timedelta(minutes=40 * next(ticks))

    with pytest.MonkeyPatch.context() as mp, Ledger(ledger) as book:
        for module in (ledger_module, charges_module, reservations_module):
            mp.setattr(module, "utc_now", clock)
        curator = Curator(X, SPMechanism(3, 0.1, 0.2), ledger=book, store=store, budget=5, rng=7)
        curator.ask("alice", ids=list(range(10)))
        curator.ask("alice", ids=[3, 4, 50])
        curator.ask("bob", records=X[:4] + 0.01)
        curator.close()
        book.set_budget("sales", "pure-dp", 2.0)
        laplace = LaplaceMechanism(1.0, 0.25).guarantee
        book.spend("sales", laplace, "noisy count of sales")
        book.reserve("sales", laplace, "a run killed before it committed")
        book.set_budget("survey", "pure-dp", 3.0, delta=1e-6)
        for _ in range(3):
            book.spend("survey", LaplaceMechanism(1.0, 0.3).guarantee, "survey answer")
    return ledger, store


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def budget_show(ledger: Path) -> dict[str, Any]:
    """``privad budget show --json --last 0`` in a subprocess."""
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from privad.cli import main; main(sys.argv[1:])"]
        + ["budget", "show", "--json", "--last", "0", "--ledger", str(ledger)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def spent(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_ledger(tmp_path_factory.mktemp("console"))


@pytest.fixture
def console(spent, tmp_path, server_pool) -> tuple[httpx.Client, Path, Path]:
    """A console with the operator token over a fresh copy of the ledger."""
    ledger = tmp_path / "ledger.sqlite"
    shutil.copy(spent[0], ledger)
    app = create_console_app(str(ledger), store=str(spent[1]), operator_token=OPERATOR)
    srv = server_pool.start_app(app)
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        yield client, ledger, spent[1]


BEARER = {"authorization": f"Bearer {OPERATOR}"}


def test_budgets_twin_equals_budget_show(console) -> None:
    client, ledger, _ = console
    data = client.get("/api/budgets").json()
    assert data["budgets"] == budget_show(ledger)["budgets"]
    (reserved,) = data["reservations"]
    assert reserved["label"] == "a run killed before it committed" and reserved["id"] == 5
    alice = data["series"]["curator/alice"]["sensitive"]
    assert [v for _, v in alice] == pytest.approx([2.0, 2.2])  # 10 ids, then 1 new id, ε 0.2
    assert data["series"]["sales"]["pure-dp"][-1][1] == pytest.approx(0.5)


def test_spends_hide_per_record_exposure_from_readers(console) -> None:
    client, _, _ = console
    reader = client.get("/api/spends").json()
    owner = client.get("/api/spends", headers=BEARER).json()
    assert not reader["operator_view"] and owner["operator_view"]
    wrong = {"authorization": "Bearer not-the-operator-0123456789"}
    assert client.get("/api/spends", headers=wrong).status_code == 401
    assert len(reader["spends"]) == 8
    curator_rows = [s for s in reader["spends"] if "per_record" in s["metadata"]]
    assert len(curator_rows) == 3
    for s in curator_rows:
        assert set(s["metadata"]["per_record"]) == {"owner_only"}
    exposed = [s["metadata"]["per_record"] for s in owner["spends"] if s["id"] == 1][0]
    assert exposed["owner_only"] is True and exposed["m"] == 10 and exposed["records"] == 120
    page = client.get("/spends").text
    assert "Hidden: how many answers" in page and "Data owner only" not in page
    assert [(q["querier"], q["requests"], q["epsilon"]) for q in reader["queriers"]] == [
        ("alice", 2, pytest.approx(2.2)),
        ("bob", 1, pytest.approx(0.2)),
    ]


def test_services_reads_the_store_without_writing(console) -> None:
    client, _, store = console
    before = digest(store)
    data = client.get("/api/services").json()
    assert data["role"] == "curator" and data["party"] == "querier"
    assert [(p["name"], p["rows"]) for p in data["parties"]] == [("alice", 11), ("bob", 4)]
    alice = data["parties"][0]["budget"]
    assert (alice["scope"], alice["total"], alice["spent"]) == ("curator/alice", 5.0, 2.2)
    assert "alice" in client.get("/services").text
    assert digest(store) == before


def test_plan_calls_the_planners(console) -> None:
    client, _, _ = console
    data = client.get(
        "/api/plan",
        params={"epsilon": "0.1", "answers": "100", "delta": "1e-6", "budget": "10"},
    ).json()
    from privad.accounting.planner import answers_within, composition_costs

    assert data["cost"] == composition_costs(0.1, 100, 1e-6).to_dict()
    assert data["cost"]["linear_epsilon"] == pytest.approx(10.0)
    assert data["admits"]["answers"] == answers_within(10, 1e-6, 0.1) > 100
    pure = client.get("/api/plan", params={"epsilon": "0.25", "budget": "1"}).json()
    assert pure["admits"]["answers"] == 4 and "cost" not in pure
    assert pure["utility"]["available"] is False
    sp = client.get("/api/plan", params={"epsilon": "0.5", "beta": "3"}).json()
    rows = sp["flag_probability"]["rows"]
    assert [r["anomaly"] for r in rows[:4]] == [True, True, True, False]  # B <= β
    search = client.get(
        "/api/plan", params={"epsilon": "1", "t_low": "1", "t_high": "3", "items": "1000"}
    ).json()["search"]
    assert search["converges"] and search["cost"]["answers"] >= 10
    flat = client.get(  # p = 1/2 in floating point: the plan says so, with no cost
        "/api/plan", params={"epsilon": "1e-12", "t_low": "1", "t_high": "1.000001"}
    ).json()["search"]
    assert flat["converges"] is False and flat["error_probability"] == 0.5
    assert "cost" not in flat and "expected_queries_bound" not in flat
    capped = client.get(  # E[T] > 2000 answers with delta: refused, not computed
        "/api/plan",
        params={"epsilon": "0.01", "t_low": "1", "t_high": "1.5", "delta": "1e-6"},
    )
    assert capped.status_code == 422 and "at most 2000" in capped.json()["detail"]
    bad = client.get("/api/plan", params={"epsilon": "-1"})
    assert bad.status_code == 422 and "epsilon" in bad.json()["detail"]
    assert client.get("/plan", params={"epsilon": "x"}).status_code == 422


def test_utility_table_for_the_chosen_epsilon(tmp_path, spent) -> None:
    for name, row in {
        "sp-eps0.5": {"param": 0.5, "auc": 0.61, "f1": 0.3},
        "sp-eps1": {"param": 1.0, "auc": 0.7, "f1": 0.4},
        "ecod": {"param": None, "auc": 0.9, "f1": 0.5},
    }.items():
        path = tmp_path / "utility" / "thyroid" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"set": "thyroid", "detector": name.split("-")[0], **row}))
    from privad.services.console import plan_data

    data = plan_data({"epsilon": "0.5"}, str(tmp_path / "utility"))["utility"]
    assert data["epsilons"] == [0.5, 1.0]
    assert sorted((r["detector"], r["auc"]) for r in data["rows"]) == [("ecod", 0.9), ("sp", 0.61)]


def test_actions_need_the_operator_token_and_confirmation(console) -> None:
    client, ledger, _ = console
    before = digest(ledger)
    body = {"scope": "sales", "notion": "pure-dp", "epsilon": 4, "confirm": True}
    assert client.post("/api/budgets", json=body).status_code == 401
    wrong = {"authorization": "Bearer not-the-operator-0123456789"}
    assert client.post("/api/budgets", json=body, headers=wrong).status_code == 401
    assert client.post("/api/reservations/5/cancel", json={"confirm": True}).status_code == 401
    unconfirmed = {**body, "confirm": False}
    assert client.post("/api/budgets", json=unconfirmed, headers=BEARER).status_code == 422
    too_low = {**body, "epsilon": 0.1}  # below what was spent: the ledger refuses
    assert client.post("/api/budgets", json=too_low, headers=BEARER).status_code == 422
    committed = client.post("/api/reservations/4/cancel", json={"confirm": True}, headers=BEARER)
    assert committed.status_code == 422 and "not reserved" in committed.json()["detail"]
    assert digest(ledger) == before  # every refusal changed nothing
    done = client.post("/api/budgets", json=body, headers=BEARER).json()
    assert done["total"] == 4.0 and done["spent"] == 0.5
    cancelled = client.post("/api/reservations/5/cancel", json={"confirm": True}, headers=BEARER)
    assert cancelled.json()["remaining"]["pure-dp"] == 3.75
    with Ledger(ledger, create=False) as book:
        assert book.budget("sales", "pure-dp").total_epsilon == 4.0
        assert book.get_spend(5).status == "cancelled"
        assert [e.action for e in book.events("sales")][-2:] == ["set-budget", "cancel"]


def _csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def test_browser_forms_need_a_session_and_its_csrf_token(console) -> None:
    client, ledger, _ = console
    before = digest(ledger)
    form = {"scope": "sales", "notion": "pure-dp", "epsilon": "4", "confirm": "yes"}
    assert client.post("/actions/budget", data=form).status_code == 401
    assert client.post("/login", data={"token": "wrong-token-0123456789"}).status_code == 401
    assert client.post("/login", data={"token": OPERATOR}).status_code == 303
    cookie = client.cookies.get("privad_console")
    assert (
        cookie
        and "httponly"
        in client.post("/login", data={"token": OPERATOR}).headers["set-cookie"].lower()
    )
    page = client.get("/").text
    token = _csrf(page)
    forged = client.post("/actions/budget", data={**form, "csrf": "forged"})
    assert forged.status_code == 403 and "Nothing was changed" in forged.text
    ask = client.post("/actions/budget", data={**form, "confirm": "", "csrf": token})
    assert ask.status_code == 200 and "Set the budget of scope &#x27;sales&#x27;" in ask.text
    assert digest(ledger) == before  # asked, not written
    done = client.post("/actions/budget", data={**form, "csrf": token})
    assert done.status_code == 200 and "Budget set" in done.text
    with Ledger(ledger, create=False) as book:
        assert book.budget("sales", "pure-dp").total_epsilon == 4.0


def test_read_only_console_without_operator_token(spent, server_pool) -> None:
    srv = server_pool.start_app(create_console_app(str(spent[0])))
    before = digest(spent[0])
    with httpx.Client(base_url=srv.url) as client:
        assert "no operator token configured" in client.get("/").text
        assert client.post("/login", data={"token": OPERATOR}).status_code == 401
        body = {"scope": "x", "epsilon": 1, "confirm": True}
        assert client.post("/api/budgets", json=body, headers=BEARER).status_code == 401
        assert client.get("/api/services").json() == {"store": None}
    assert digest(spent[0]) == before


# --------------------------------------------------------------------------------------------
# Headless Chromium against a ``privad serve console`` process
# --------------------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PAGES = {
    "budgets": "/",
    "spends": "/spends",
    "services": "/services",
    "plan": "/plan?epsilon=0.5&answers=20&delta=1e-6&budget=5&beta=3&t_low=1&t_high=3&items=1000",
}
UPDATE_SCREENSHOTS = "PRIVAD_UPDATE_SCREENSHOTS"
"""Set to 1 to copy the screenshots into docs/console/ (see docs/console.md)."""


def chromium(tmp: Path, *args: str) -> str:
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp / 'chromium-profile'}", *args],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return out.stdout


class Cells(HTMLParser):
    """The ``data-value`` cells of each row of the table of class ``cls``."""

    def __init__(self, cls: str) -> None:
        super().__init__()
        self.cls, self.inside, self.rows = cls, False, []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.inside = a.get("class") == self.cls
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "td" and "data-value" in a:
            self.rows[-1].append(a["data-value"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False


@pytest.fixture
def browser_console(spent, tmp_path, spawn_server):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    ledger = tmp_path / "ledger.sqlite"
    shutil.copy(spent[0], ledger)
    os.environ["PRIVAD_CONSOLE_OPERATOR_TOKEN"] = OPERATOR
    try:
        proc, url = spawn_server(
            ["serve", "console", "--ledger", str(ledger), "--store", str(spent[1]),
             "--port", "0"],
            "privad console",
        )  # fmt: skip
    finally:
        del os.environ["PRIVAD_CONSOLE_OPERATOR_TOKEN"]
    yield url, ledger
    proc.terminate()
    proc.wait(timeout=30)


def test_pages_in_chromium_show_the_ledger(browser_console, tmp_path) -> None:
    url, ledger = browser_console
    shown = budget_show(ledger)["budgets"]
    dom = chromium(tmp_path, "--dump-dom", url + "/")
    parser = Cells("budgets")
    parser.feed(dom)
    expected = [
        [repr(v) if v is not None else "" for v in (b["total"], b["spent"], b["pure_spent"],
         b["remaining"], b["delta"], b["delta_spent"])]
        for b in shown
    ]  # fmt: skip
    assert [r for r in parser.rows if r] == expected
    assert dom.count("<svg") == 4 and "a run killed before it committed" in dom
    spends = chromium(tmp_path, "--dump-dom", url + "/spends")
    assert "Hidden: how many answers" in spends and "curator/bob" in spends
    assert "alice" in chromium(tmp_path, "--dump-dom", url + "/services")
    plan = chromium(tmp_path, "--dump-dom", url + PAGES["plan"])
    assert "the job costs ε" in plan and 'data-value="10.0"' in plan
    shots = []
    for name, path in PAGES.items():
        shot = tmp_path / f"console-{name}.png"
        chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,900", url + path)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        shots.append(shot)
    with httpx.Client(base_url=url) as client:  # the operator's views, saved and shot
        client.post("/login", data={"token": OPERATOR})
        owner = {"budgets": client.get("/").text, "spends": client.get("/spends").text}
    assert "Data owner only" in owner["spends"] and "Set a budget" in owner["budgets"]
    for name, anchor in (("budgets", ""), ("spends", "#exposure")):
        saved = tmp_path / f"{name}-operator.html"
        saved.write_text(owner[name])
        shot = tmp_path / f"console-{name}-operator.png"
        chromium(
            tmp_path, f"--screenshot={shot}", "--window-size=1280,900", saved.as_uri() + anchor
        )
        shots.append(shot)
    if os.environ.get(UPDATE_SCREENSHOTS) == "1":
        for shot in shots:
            shutil.copy(shot, ROOT / "docs" / "console" / shot.name.removeprefix("console-"))


def test_refused_action_from_a_browser_changes_nothing(browser_console, tmp_path) -> None:
    url, ledger = browser_console
    before = digest(ledger)
    form = tmp_path / "attack.html"  # a page elsewhere posting to the console: no session
    form.write_text(
        f'<form id="f" method="post" action="{url}/actions/budget">'
        '<input name="scope" value="sales"><input name="epsilon" value="100">'
        '<input name="confirm" value="yes"><input name="csrf" value="guess"></form>'
        "<script>document.getElementById('f').submit()</script>"
    )
    dom = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", form.as_uri())
    assert "Refused (401)" in dom and "Nothing was changed" in dom
    assert digest(ledger) == before
    sales = [b for b in budget_show(ledger)["budgets"] if b["scope"] == "sales"]
    assert sales[0]["total"] == 2.0


def test_services_shows_an_analyst_stores_sensors(tmp_path) -> None:
    import sqlite3

    from privad.services.analyst import AnalystStore
    from privad.services.console import services_data

    path = tmp_path / "analyst.sqlite"
    AnalystStore(path).close()
    with sqlite3.connect(path) as conn:
        rows = [("s1", 0), ("s1", 1), ("s2", 0)]
        conn.executemany(
            "INSERT INTO windows VALUES (?, ?, 1, 1, x'', x'', x'', 0.5, '2026-03-02')", rows
        )
    before = digest(path)
    data = services_data(str(path))
    assert data["role"] == "analyst" and data["party"] == "sensor"
    assert [(p["name"], p["rows"], p["what"]) for p in data["parties"]] == [
        ("s1", 2, "windows"),
        ("s2", 1, "windows"),
    ]
    assert digest(path) == before
    with pytest.raises(PrivadError, match="--store"):
        services_data(str(tmp_path / "missing.sqlite"))


def test_pages_escape_what_the_ledger_holds(tmp_path, server_pool) -> None:
    ledger = tmp_path / "ledger.sqlite"
    evil = '<script>alert("x")</script>'
    with Ledger(ledger) as book:
        book.set_budget(evil, "pure-dp", 1.0)
        book.spend(evil, LaplaceMechanism(1.0, 0.5).guarantee, evil)
    srv = server_pool.start_app(create_console_app(str(ledger)))
    with httpx.Client(base_url=srv.url) as client:
        for path in ("/", "/spends"):
            page = client.get(path).text
            assert evil not in page and "&lt;script&gt;alert(&quot;x&quot;)" in page
        assert client.get("/api/spends").json()["spends"][0]["label"] == evil


def test_serve_console_refuses_bad_options_in_one_line(spent, tmp_path) -> None:
    ledger, missing = str(spent[0]), str(tmp_path / "missing.sqlite")
    for args, says in (
        (["--ledger", missing], "no ledger"),
        (["--ledger", ledger, "--operator-token", "short"], "operator token"),
        (["--ledger", ledger, "--store", missing], "--store"),
    ):
        proc = subprocess.run(
            [sys.executable, "-c", "import sys; from privad.cli import main; main(sys.argv[1:])"]
            + ["serve", "console", "--port", "0", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert proc.stderr.startswith("privad: error:") and proc.stderr.count("\n") == 1
        assert says in proc.stderr
