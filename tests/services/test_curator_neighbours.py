"""The curator as an outsider sees it: neighbouring data sets, one fuzzed list of questions,
identical responses apart from the noisy answers (issue 26, item 1).

Whether a request is answered, what it is charged, the budget left and the status and text
of a refusal must not depend on the stored records. Before the fix, ``[1e-160, 5]`` was
answered on X and refused (422, "distinct values 0.0 and 1e-160") on X with one record
replaced by ``[0, 5]``. Both faces are tested: :meth:`Curator.ask` in this process and
``POST /v1/ask`` through the real server on loopback (uvicorn threads).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from privad.accounting import Ledger
from privad.errors import PrivadError
from privad.sensitive import SPMechanism
from privad.sensitive.curator import Curator
from privad.services.auth import TokenRegistry
from privad.services.curator import create_curator_app

SECRET = "neighbour-querier-secret-0123456789"
MECH = SPMechanism(2, 0.8, 0.5)
N = 40
L = 2.0**510  # the public magnitude limit for d = 2, euclidean


def _base() -> np.ndarray:
    return np.random.default_rng(11).uniform(1.0, 10.0, size=(N, 2))


def _replaced(record: list[float]) -> np.ndarray:
    X = _base()
    X[0] = record
    return X


# Neighbours of the base data (one record replaced; n, the public number of records, stays).
NEIGHBOURS = {
    "zero": _replaced([0.0, 5.0]),  # the audit's record: 0 next to a question's 1e-160
    "negative zero": _replaced([-0.0, 5.0]),
    "smallest allowed": _replaced([2.0**-459, 5.0]),
    "edge of the domain": _replaced([L, -L]),  # spans that reach the overflow limit
    "other edge": _replaced([-L, L]),
    "duplicate": _replaced(list(_base()[1])),
}


def _questions() -> list[dict[str, Any]]:
    """One request per entry, the keyword arguments of :meth:`Curator.ask`: tiny, huge,
    subnormal, signed-zero, out-of-domain, wrong-dimension, NaN, malformed and ordinary
    questions, duplicates and repeats, until the budget (20 ε) runs out, then more."""
    tiny = [1e-160, 3e-170, 5e-324, 2.0**-460, 2.0**-459, 2.0**-459 * 1.5, -1e-300, 1e-138]
    huge = [1e154, -1e154, L, -L, 2.0**511, 1.7e308, -1.7e308, L * (1 + 2**-52)]
    rng = np.random.default_rng(5)
    out: list[dict[str, Any]] = []
    for v in tiny + huge + [0.0, -0.0, 5.0]:
        out.append({"records": [[v, 5.0]]})
        out.append({"records": [[5.0, v]], "add_query_to_data": True})
    out += [
        {"records": [[0.0, 5.0], [1e-160, 5.0]]},  # one allowed, one not: refused whole
        {"records": [[L, -L], [-L, L]]},
        {"records": [[math.nan, 5.0]]},
        {"records": [[math.inf, 5.0]]},
        {"records": [[1.0, 2.0, 3.0]]},
        {"records": [[1.0]]},
        {"records": []},
        {"records": [[1.0, 2.0], [3.0]]},
        {"ids": [0, 1, 2]},
        {"ids": [2, 1, 0, 1]},  # repeats: free
        {"ids": [N - 1]},
        {"ids": [N]},
        {"ids": [-1]},
        {"ids": []},
        {"ids": [1.5]},
        {"ids": [1], "records": [[1.0, 2.0]]},
        {"records": rng.uniform(0.0, 11.0, size=(6, 2)).tolist()},
        {"records": [[5.0, 5.0]] * 3},
        {"records": rng.normal(5.0, 3.0, size=(4, 2)).tolist(), "add_query_to_data": True},
        {"ids": list(range(3, 3 + 30))},  # 15 ε: past what is left
        {"ids": list(range(3, 8))},
        {"records": rng.uniform(-100.0, 100.0, size=(30, 2)).tolist()},
        {"ids": list(range(8, 40))},  # refused: the budget is spent
        {"records": [[1e-160, 5.0]]},
        {"ids": [0, 1, 2]},  # still answered: recorded, free
    ]
    return out


def _library_transcript(
    tmp_path: Path, X: np.ndarray, name: str, questions: list | None = None, **kw: Any
) -> list[Any]:
    book = Ledger(tmp_path / f"{name}-ledger.sqlite")
    cur = Curator(X, MECH, ledger=book, store=tmp_path / f"{name}.sqlite", budget=20.0, rng=3, **kw)
    seen: list[Any] = [cur.describe(), cur.budget("q")]
    for question in _questions() if questions is None else questions:
        try:
            a = cur.ask("q", **question)
        except PrivadError as exc:
            seen.append((type(exc).__name__, str(exc)))
        else:
            seen.append((len(a.answers), a.charged, a.budget))
    seen.append(book.spent("curator/q", MECH.notion))
    cur.close()
    book.close()
    return seen


def _without_answers(body: bytes) -> bytes:
    """The body with the noisy bits blanked (their number kept)."""
    return re.sub(rb'"answers":\[[01,]*\]', lambda m: b"x" * len(m.group()), body)


def _http_transcript(pool: Any, tmp_path: Path, X: np.ndarray, name: str, **kw: Any) -> list:
    app = create_curator_app(
        X,
        MECH,
        db=tmp_path / f"{name}.sqlite",
        ledger=tmp_path / f"{name}-ledger.sqlite",
        tokens=TokenRegistry([("q", SECRET)]),
        budget=20.0,
        rng=3,
        **kw,
    )
    srv = pool.start_app(app)
    headers = {"authorization": f"Bearer {SECRET}", "content-type": "application/json"}
    seen = []
    with httpx.Client(base_url=srv.url, headers=headers, timeout=30) as client:
        for route in ("/v1/model", "/v1/budget"):
            r = client.get(route)
            seen.append((r.status_code, r.headers["content-type"], r.content))
        for question in _questions():
            r = client.post("/v1/ask", content=json.dumps(question).encode())  # NaN as NaN
            assert r.status_code < 500, (question, r.text)
            seen.append((r.status_code, r.headers["content-type"], _without_answers(r.content)))
    return seen  # the pool stops every server at once at teardown


def test_the_fuzzed_questions_reach_every_kind_of_reply(tmp_path) -> None:
    """The list is a real fuzz: answers, free repeats, refusals of each kind and 429s."""
    seen = _library_transcript(tmp_path, _base(), "base")[2:-1]
    answered = [s for s in seen if isinstance(s[0], int)]
    refused = [s for s in seen if isinstance(s[0], str)]
    assert len(answered) >= 20 and len(refused) >= 20
    assert {0.0} < {a[1] for a in answered}  # free repeats and charged requests
    assert any(kind == "BudgetExceededError" for kind, _ in refused)
    assert any("public domain" in text for _, text in refused)
    assert any("unknown record id" in text for _, text in refused)


@pytest.mark.parametrize("neighbour", sorted(NEIGHBOURS))
def test_curator_ask_does_not_depend_on_the_data(tmp_path, neighbour) -> None:
    base = _library_transcript(tmp_path, _base(), "base")
    other = _library_transcript(tmp_path, NEIGHBOURS[neighbour], "other")
    for i, (a, b) in enumerate(zip(base, other, strict=True)):
        assert a == b, (i, a, b)


def test_an_added_record_changes_nothing_a_querier_sees_but_n(tmp_path) -> None:
    """Add-one neighbours: n is public; it changes /v1/model's n_records, whether id n
    exists (that question is left out) and the id range a refusal quotes. Nothing else."""
    questions = [q for q in _questions() if N not in q.get("ids", [])]
    base = _library_transcript(tmp_path, _base(), "base", questions)
    other = _library_transcript(tmp_path, np.vstack([_base(), [[0.0, 5.0]]]), "other", questions)
    assert base[0].pop("n_records") + 1 == other[0].pop("n_records")
    assert repr(base) == repr(other).replace(f"0 .. {N}", f"0 .. {N - 1}")


def test_declared_bounds_refuse_questions_by_the_question_alone(tmp_path) -> None:
    """With public bounds on feature 0 ([0, 10], mapped to [0, 1]): a stored value outside
    them is clipped, a question outside them is refused, whatever is stored."""
    bounds = {0: (0.0, 10.0)}
    base = _library_transcript(tmp_path, _base(), "base", bounds=bounds)
    clipped = _library_transcript(tmp_path, _replaced([1e6, 5.0]), "other", bounds=bounds)
    assert base == clipped
    texts = [s[1] for s in base[2:-1] if isinstance(s[0], str)]
    assert any("declared public bounds [0, 10]" in t for t in texts)
    assert base[0]["query_domain"]["bounds"] == {"0": [0.0, 10.0]}


def test_http_responses_are_byte_identical_on_neighbours(server_pool, tmp_path) -> None:
    """Through the real server: status, content type and body bytes (the noisy bits
    blanked) of every reply are the same on the base data and on each neighbour."""
    base = _http_transcript(server_pool, tmp_path, _base(), "base")
    assert {s[0] for s in base} >= {200, 422, 429}
    for neighbour in ("zero", "edge of the domain", "smallest allowed"):
        other = _http_transcript(server_pool, tmp_path, NEIGHBOURS[neighbour], neighbour)
        for i, (a, b) in enumerate(zip(base, other, strict=True)):
            assert a == b, (neighbour, i, a, b)
