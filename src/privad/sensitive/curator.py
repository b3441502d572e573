"""The trusted curator of sensitive privacy: queriers ask, the curator answers and accounts.

The paper's setting (Asif, Papakonstantinou, Vaidya, CCS 2019, section 2): a curator holds
the database x and answers (β, r)-anomaly identification queries "is record i a
(β, r)-anomaly?" for a querier who never sees x. :class:`Curator` is that party in one
object; :mod:`privad.services.curator` puts it behind HTTP (``privad serve sp``).

What a querier sees
-------------------
Noisy bits (the mechanism's answers), the ε each request cost and its own budget. Never
counts, error probabilities or distances. Record ids 0..n−1 are public in this setting (the
querier asks about record i), so n is public too.

Online charging that leaks nothing
----------------------------------
Every querier has its own budget: ledger scope ``<scope>/<querier>`` under the mechanism's
notion. What a querier can observe (the charge, the remaining budget, a refusal) must depend
only on what it sent, never on the data:

* **Queries by record id** are charged ε per *distinct* record the querier has not asked
  before (sequential composition, Claim 3). A geometric bound (Claim 5) over the queried
  records would read their positions, which are the curator's data, so the charge would
  reveal them; the id charge depends on the ids alone.
* **Queries by feature vector** ("future queries", records not in the data) are charged
  online by Claim 5. Let V_q be the vector questions querier q was answered so far, and
  m(V) = min(|V|, max_t #{s : d(v_s, v_t) ≤ 2r}) Claim 5's 2r bound (radius
  :func:`~privad.sensitive.accounting.claim5_radius`, 2r(1 + 1e-9)). m is non-decreasing
  as V grows, so charging ε·(m(V ∪ N) − m(V)) for a request with new questions N makes the
  total charged ε·m(V_final), whatever the order of arrival. m depends on the querier's
  vectors only. It is the 2r bound alone because that can be updated vector by vector;
  the box search of :func:`privad.sensitive.accounting.claim5_bound` is not incremental, so
  the batch charge of the same set (the smaller of the two bounds) can be lower than the
  online one, never higher. A request that raises no m is answered at no charge (its
  answers are covered by what was charged already) and is recorded.
* Ids and vectors are different questions; their charges add (sequential composition).
* A request that would exceed the budget is refused whole: nothing is spent, nothing
  answered, nothing recorded.
* A querier's budget may be (ε, δ) (``delta=``): its answers are then a stream drawn from
  a prepaid block, the most answers that can touch one record the budget admits by the
  optimal composition theorem, charged once (:class:`~privad.accounting.Ledger`,
  "Streams"); each request draws its charge (new ids, or the rise of m) from it.

Answers are recorded per question, for every querier alike: a repeated question gets the
recorded answer with no new noise, also across restarts; the first time a querier asks a
question it is charged as above even if another querier asked it before (so its charge
depends on its own requests only). Colluding queriers share answers, so together they learn
no more than the union of their questions. Requests are answered one at a time.

Refusals read no data
---------------------
Whether a request is answered, what it is charged, what is left and the text and kind of a
refusal depend only on what the querier sent and on public configuration (n, d, the
mechanism, the budgets, the declared bounds), never on the stored records; the data
reaches the querier only through the noisy answers, each of them charged. The distance
engines refuse pairs of records float64 cannot represent (a span that overflows, values
closer than 2**-511), a check on the data and the queries together; the curator never lets
a question reach it. The data is checked once, when the curator starts, against a public
domain (:class:`~privad.sensitive.domain.QueryDomain`: declared bounds, a magnitude limit,
and for euclidean distances no nonzero value below 2**-459), so that every pair of records
in the domain is representable; data outside it is refused there (the data owner's
business). Each question is then checked against the domain alone: ids against 0..n−1,
vectors against the number of features, finiteness, the bounds and the domain; those
refusals name only the question.

What the curator keeps to itself
--------------------------------
Each charged request's ledger row records, in its metadata (``"per_record"``), how many of
the querier's answers can move with each stored record (c_j = the querier's distinct
questions within r of record j; :class:`~privad.sensitive.accounting.RecordExposure`) next to what
the querier is charged per record (distinct ids plus the online Claim 5 m of its vectors):
the curator's view of who can lose how much (``privad budget statement``). It reads the
data, so no response carries it.

Durability
----------
A request goes through :func:`privad.sensitive.release.release_labels` like every release:
validate; compute the charge (the rules above); reserve it on the ledger (refused: 429,
nothing written); sample the answers of questions nobody asked before; record answers and
the querier's new questions in the curator's SQLite store (one transaction,
``synchronous=FULL``: the release's output); commit the spend; reply. A crash before the
store's commit leaves the reservation counted (the safe side) and no answer recorded; a
crash after it leaves the answers recorded, so a retry gets exactly those answers. No
charged question is ever answered twice differently.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privad.accounting import Guarantee, Ledger, NoBudgetError
from privad.accounting.tight import check_delta
from privad.errors import BudgetExceededError, DataError, LedgerError, ParameterError
from privad.geometry import BallIndex, ball_counts
from privad.geometry.predicate import check_magnitudes, pair_values, threshold
from privad.io import open_sqlite
from privad.noise import as_randomness
from privad.sensitive.accounting import Claim5Bound, RecordExposure, claim5_radius
from privad.sensitive.anomaly import BallStatistics, statistics_from_counts
from privad.sensitive.domain import QueryDomain
from privad.sensitive.mechanisms import AIQMechanism
from privad.sensitive.release import Charge, batch_statistics, question_keys, release_labels
from privad.validation import check_array, check_epsilon

__all__ = ["MAX_BATCH", "Curator", "CuratorAnswer", "OnlineClaim5"]

MAX_BATCH = 100_000
"""Most questions one request may carry."""

_BRUTE_PAIRS = 2_000_000  # below this many pairs the online bound counts without a tree


class OnlineClaim5:
    """Claim 5's bound m for a growing set of query vectors, updated batch by batch.

    Keeps, for every vector v_t asked so far, c_t = #{s : d(v_s, v_t) ≤ R} with
    R = :func:`~privad.sensitive.accounting.claim5_radius` (r), counted by
    :func:`privad.geometry.ball_counts` (the canonical predicate), so :attr:`bound`'s upper
    is Claim 5's 2r bound of the set: never below the upper bound of
    :func:`privad.sensitive.accounting.claim5_bound` of the same set, which is the smaller
    of the 2r bound and the box search's (not incremental, so not used here). Adding N
    vectors to V counts N against V ∪ N and V against N: by brute force when there are few
    pairs (one vector against 10^5 costs a few ms), else with the tree engine.
    """

    def __init__(self, r: float, metric: str, d: int) -> None:
        self.radius = claim5_radius(r)
        self.metric = metric
        self.points = np.zeros((0, d))
        self.counts = np.zeros(0, np.int64)

    def with_new(self, new: np.ndarray) -> tuple[Claim5Bound, np.ndarray]:
        """The bound after adding ``new`` (nothing is changed), and the counts to keep."""
        check_magnitudes([self.points, new], self.metric)  # as every engine's validation
        new_new = self._count(new, new)
        if self.points.shape[0] == 0:
            return _bound(new_new), new_new
        counts = np.concatenate(
            [self.counts + self._count(new, self.points), self._count(self.points, new) + new_new]
        )
        return _bound(counts), counts

    def _count(self, data: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """#data within R of each query: brute force for a few pairs (no tree to build),
        else the geometry engine; both decide with the canonical predicate."""
        if data.shape[0] * queries.shape[0] <= _BRUTE_PAIRS:
            thr = threshold(self.radius, self.metric)
            return (pair_values(queries, data, self.metric) <= thr).sum(axis=1).astype(np.int64)
        return np.asarray(
            ball_counts(data, self.radius, queries=queries, metric=self.metric), np.int64
        )

    def add(self, new: np.ndarray, counts: np.ndarray) -> None:
        """Add ``new`` with the counts :meth:`with_new` returned."""
        self.points = np.vstack([self.points, new])
        self.counts = counts

    @property
    def bound(self) -> Claim5Bound:
        """Claim 5's bound of the vectors so far (m = 0 when there are none)."""
        return _bound(self.counts)


def _bound(counts: np.ndarray) -> Claim5Bound:
    n = int(counts.size)
    upper = int(counts.max()) if n else 0
    return Claim5Bound(n=n, lower=min(1, n), upper=upper)


def _m(bound: Claim5Bound) -> int:
    return bound.m if bound.n else 0


@dataclass(frozen=True)
class CuratorAnswer:
    """The querier's view of one request: answers, what it cost, what is left.

    ``answers`` are 0/1 in request order; ``charged`` the ε this request spent; ``budget``
    the querier's total, spent and remaining ε after it.
    """

    answers: list[int]
    charged: float
    budget: dict[str, Any]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    question BLOB PRIMARY KEY, answer INTEGER NOT NULL CHECK (answer IN (0, 1))
);
CREATE TABLE IF NOT EXISTS asked (
    querier TEXT NOT NULL, question BLOB NOT NULL, seq INTEGER NOT NULL, vector BLOB,
    PRIMARY KEY (querier, question)
);
"""


class Curator:
    """The sensitive-privacy curator (see the module docstring for what it guarantees).

    Parameters
    ----------
    X : array (n, d)
        The database.
    mechanism : AIQMechanism
        How each question is answered (β, r, ε, k, metric, count cap).
    ledger : Ledger
        Where every querier's budget lives (scope ``<scope>/<querier>``).
    store : path
        The curator's SQLite file: recorded answers and every querier's questions. It is
        tied to the data and the mechanism: opening it with others is a ParameterError.
    budget : float > 0
        Each querier's total ε (set in the ledger for a querier without a budget).
    delta : float in (0, 1), optional
        Each querier's budget's δ: an (ε, δ) budget (see the module docstring).
    scope : str
        The prefix of the queriers' ledger scopes.
    rng : seed or Randomness
        The noise (OS entropy by default; a seed is for tests only).
    bounds : mapping {feature position: (lower, upper)}, optional
        Public bounds of some features (:class:`~privad.sensitive.domain.QueryDomain`):
        those features of the data and of every question are mapped to [0, 1] (r is in the
        mapped units); stored values outside are clipped, questions outside are refused.

    Raises
    ------
    DataError
        When the data has a value outside the public domain (see "Refusals" in the module
        docstring): refused here, once, never per question.

    Examples
    --------
    A querier asks about record 4 twice in one request: each new question costs ε, a
    repeated one gets its recorded answer for free.

    >>> import numpy as np
    >>> from privad.accounting import Ledger
    >>> from privad.sensitive import Curator, SPMechanism
    >>> X = np.array([[0.0], [0.1], [0.2], [0.15], [5.0]])
    >>> book = Ledger(":memory:")
    >>> curator = Curator(X, SPMechanism(beta=1, r=0.5, epsilon=1.0), ledger=book,
    ...                   store="curator.sqlite", budget=3.0, rng=0)
    >>> reply = curator.ask("alice", ids=[4, 4])
    >>> reply.answers, reply.charged, reply.budget["remaining"]
    ([1, 1], 1.0, 2.0)
    >>> curator.ask("alice", ids=[4]).charged
    0.0
    """

    def __init__(
        self,
        X: Any,
        mechanism: AIQMechanism,
        *,
        ledger: Ledger,
        store: str | Path,
        budget: float,
        delta: float | None = None,
        scope: str = "curator",
        rng: Any = None,
        bounds: Mapping[int, tuple[float, float]] | None = None,
    ) -> None:
        if not isinstance(mechanism, AIQMechanism):
            raise ParameterError("mechanism must be a privad.sensitive.AIQMechanism")
        self.mechanism = mechanism
        self.budget_total = check_epsilon(budget, "budget")
        self.budget_delta = None if delta is None else check_delta(delta)
        self.scope = scope.strip() if isinstance(scope, str) and scope.strip() else None
        if self.scope is None:
            raise ParameterError(f"scope must be a non-empty name, got {scope!r}")
        self.ledger = ledger
        X = check_array(X, "X")
        self.domain = QueryDomain(X.shape[1], mechanism.metric, bounds)
        # refused here, for the data owner, never per question; a fresh array of its own
        self._X = self.domain.data(X)
        self.n_records, self.n_features = (int(v) for v in self._X.shape)
        self._rng = as_randomness(rng)
        self._lock = threading.RLock()
        self._db = open_sqlite(store, role="curator", schema=_SCHEMA)  # private, its own
        self._check_identity(self._X)
        self._online: dict[str, OnlineClaim5] = {}
        self._exposure: dict[str, _Exposure] = {}
        # x_i of a query vector: how many records equal it (a digest table built once, so a
        # request costs one ball count and no pass over the data)
        self._multiplicity = Counter(question_keys(self._X))
        # the records' own counts, once, before the first query, with the given mechanism
        # (built and validated by the caller, never rebuilt here: issue 30)
        self._own = batch_statistics(self._X, None, mechanism, add=False, engine="auto")
        self._index = BallIndex(self._X, metric=mechanism.metric)

    # -- identity and state -----------------------------------------------------------------

    def _check_identity(self, X: np.ndarray) -> None:
        ident = json.dumps(
            {
                "data": hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest(),
                "shape": list(X.shape),
                **self.mechanism.params(),
                **({"bounds": self.domain.to_dict()["bounds"]} if self.domain.bounds else {}),
            },
            sort_keys=True,
        )
        row = self._db.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('identity', ?)", (ident,))
        elif row[0] != ident:
            raise ParameterError(
                "this curator store belongs to other data or other mechanism parameters "
                f"({row[0]}); its recorded answers would answer different questions: use a "
                "new store file for new data or parameters"
            )

    def close(self) -> None:
        """Close the store (the ledger is the caller's)."""
        with self._lock:
            self._db.close()

    def scope_of(self, querier: str) -> str:
        """The ledger scope of ``querier``."""
        return f"{self.scope}/{querier}"

    def _ensure_budget(self, querier: str) -> str:
        scope = self.scope_of(querier)
        try:
            self.ledger.budget(scope, self.mechanism.notion)
        except NoBudgetError:
            self.ledger.set_budget(
                scope, self.mechanism.notion, self.budget_total, delta=self.budget_delta
            )
        return scope

    def budget(self, querier: str) -> dict[str, Any]:
        """The querier's budget: total, spent and remaining ε (its own, nothing else); for
        an (ε, δ) budget also δ, δ spent and the answers per record it still admits (all
        functions of its own requests)."""
        scope = self._ensure_budget(querier)
        b = self.ledger.budget(scope, self.mechanism.notion)
        out = {
            "notion": self.mechanism.notion,
            "total": float(b.total),
            "spent": float(b.spent),
            "remaining": float(b.remaining),
        }
        if b.delta is not None:
            out.update(
                delta=float(b.delta),
                delta_spent=float(b.delta_spent),
                answers_left=self.ledger.answers_left(scope, self.mechanism.guarantee),
            )
        return out

    def describe(self) -> dict[str, Any]:
        """The public parameters: the mechanism, n and d, each querier's budget."""
        g = self.mechanism.guarantee
        out = {
            **self.mechanism.params(),
            "n_records": self.n_records,
            "n_features": self.n_features,
            "guarantee": g.to_dict(),
            "budget_per_querier": self.budget_total,
            "max_batch": MAX_BATCH,
            "query_domain": self.domain.to_dict(),
        }
        if self.budget_delta is not None:
            out["budget_delta_per_querier"] = self.budget_delta
        return out

    def _online_of(self, querier: str) -> OnlineClaim5:
        state = self._online.get(querier)
        if state is None:  # rebuilt from the store after a restart
            state = OnlineClaim5(self.mechanism.r, self.mechanism.metric, self.n_features)
            rows = self._db.execute(
                "SELECT vector FROM asked WHERE querier = ? AND vector IS NOT NULL ORDER BY seq",
                (querier,),
            ).fetchall()
            if rows:
                pts = np.vstack([np.frombuffer(v, "<f8") for (v,) in rows])
                state.add(pts, state.with_new(pts)[1])
            self._online[querier] = state
        return state

    def _exposure_of(self, querier: str) -> _Exposure:
        """The querier's c_j and distinct ids so far (rebuilt from the store after a restart)."""
        state = self._exposure.get(querier)
        if state is None:
            rows = self._db.execute(
                "SELECT question, vector FROM asked WHERE querier = ?", (querier,)
            ).fetchall()
            ids = [int.from_bytes(q[2:], "little") for q, v in rows if v is None]
            vectors = [np.frombuffer(v, "<f8") for _, v in rows if v is not None]
            points = [self._X[np.asarray(ids, np.int64)]] if ids else []
            points += [np.vstack(vectors)] if vectors else []
            counts = (
                self._index.around(np.vstack(points), self.mechanism.r)
                if points
                else np.zeros(self.n_records, np.int64)
            )
            state = self._exposure[querier] = _Exposure(counts, len(ids))
        return state

    # -- questions ----------------------------------------------------------------------------

    def _id_questions(self, ids: Any) -> tuple[list[bytes], np.ndarray]:
        arr = np.asarray(ids)
        if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
            raise DataError("ids must be a non-empty list of record ids (integers)")
        if arr.size > MAX_BATCH:
            raise DataError(f"at most {MAX_BATCH} questions per request, got {arr.size}")
        bad = arr[(arr < 0) | (arr >= self.n_records)]
        if bad.size:
            raise DataError(f"unknown record id {int(bad[0])}: ids are 0 .. {self.n_records - 1}")
        keys = [b"id" + int(i).to_bytes(8, "little") for i in arr]
        return keys, arr.astype(np.int64)

    def _vector_questions(self, records: Any, add: bool) -> tuple[list[bytes], np.ndarray]:
        Q = self.domain.questions(records)  # reads Q and the public domain only
        if Q.shape[0] > MAX_BATCH:
            raise DataError(f"at most {MAX_BATCH} questions per request, got {Q.shape[0]}")
        tag = b"v1" if add else b"v0"  # two bytes before the digest (read by _statistics)
        return [tag + key for key in question_keys(Q)], Q

    # -- asking -------------------------------------------------------------------------------

    def ask(
        self, querier: str, *, ids: Any = None, records: Any = None, add_query_to_data: bool = False
    ) -> CuratorAnswer:
        """Answer ``ids`` (record ids) or ``records`` (feature vectors) for ``querier``.

        Raises :class:`~privad.errors.BudgetExceededError` (nothing spent, nothing answered)
        when the request's charge exceeds the querier's remaining budget, and
        :class:`~privad.errors.DataError` for a malformed request (nothing spent).
        """
        if (ids is None) == (records is None):
            raise DataError("give ids (record ids) or records (feature vectors), not both")
        if not isinstance(add_query_to_data, bool):
            raise DataError("add_query_to_data must be true or false")
        if ids is not None:
            if add_query_to_data:
                raise DataError("add_query_to_data applies to records (feature vectors) only")
            keys, what = self._id_questions(ids)
        else:
            keys, what = self._vector_questions(records, add_query_to_data)
        with self._lock:
            return self._answer(querier, keys, what, ids is not None, add_query_to_data)

    def _answer(
        self, querier: str, keys: list[bytes], what: np.ndarray, by_id: bool, add: bool
    ) -> CuratorAnswer:
        scope = self._ensure_budget(querier)
        first = _first_positions(keys)  # distinct questions of the request, in order
        asked = self._known(
            "SELECT question FROM asked WHERE querier = ? AND question IN ({})",
            [keys[i] for i in first],
            querier,
        )
        new_q = [i for i in first if keys[i] not in asked]  # new for this querier: charged
        guarantee, bound, state = self._charge(querier, new_q, what, by_id)
        exposure = self._exposure_after(querier, new_q, what, by_id, bound)
        recorded = self._known(
            "SELECT question, answer FROM answers WHERE question IN ({})", [keys[i] for i in first]
        )
        fresh = [i for i in first if keys[i] not in recorded]  # nobody asked: sampled
        label = (
            f"curator: {len(new_q)} new question(s) of querier {querier!r} "
            f"({'record ids' if by_id else 'feature vectors'})"
        )
        meta = {
            **self.mechanism.params(),
            "querier": querier,
            "n_new": len(new_q),
            "by": "id" if by_id else "vector",
        }
        try:
            rel = release_labels(
                self.mechanism,
                ledger=self.ledger,
                scope=scope,
                rng=self._rng,
                statistics=lambda: self._statistics(what, keys, fresh, by_id, add),
                charge=lambda stats: Charge(
                    guarantee,
                    label,
                    meta,
                    bound,
                    None if exposure is None else exposure[0],
                    stream=True,
                ),
                output=_Record(self, querier, keys, what, new_q, fresh, by_id),
                precheck=False,
            )
        except BudgetExceededError as exc:
            raise BudgetExceededError(f"{exc} (querier {querier!r})") from None
        if state is not None:
            state[0].add(*state[1:])
        if exposure is not None:
            self._exposure[querier] = exposure[1]
        recorded.update({keys[i]: a for i, a in zip(fresh, rel.answers.tolist(), strict=True)})
        return CuratorAnswer(
            answers=[int(recorded[k]) for k in keys],
            charged=0.0 if guarantee is None else float(guarantee.cost),
            budget=self.budget(querier),
        )

    def _known(self, sql: str, keys: list[bytes], *first: Any) -> dict[bytes, Any]:
        """Rows of ``sql`` for ``keys`` (in chunks below SQLite's variable limit)."""
        out: dict[bytes, Any] = {}
        for s in range(0, len(keys), 500):
            chunk = keys[s : s + 500]
            rows = self._db.execute(sql.format(",".join("?" * len(chunk))), (*first, *chunk))
            for row in rows:
                out[row[0]] = row[1] if len(row) > 1 else True
        return out

    def _charge(
        self, querier: str, new_q: list[int], what: np.ndarray, by_id: bool
    ) -> tuple[Guarantee | None, Claim5Bound | None, tuple | None]:
        """The guarantee a request is charged (None: nothing new to charge), the online
        Claim 5 bound after it (vectors) and the online state to keep once it succeeds."""
        if not new_q:
            return None, None, None
        mech = self.mechanism
        if by_id:  # data-independent: ε per distinct new record (Claim 3)
            return mech.batch_guarantee(len(new_q)), None, None
        online = self._online_of(querier)
        new_points = what[new_q]
        after, counts = online.with_new(new_points)
        rise = _m(after) - _m(online.bound)
        state = (online, new_points, counts)
        if rise == 0:
            return None, after, state
        g = mech.batch_guarantee(rise)
        return (
            Guarantee(
                g.notion,
                g.epsilon,
                g.neighbouring,
                k=g.k,
                components=g.components,
                description=f"online Claim 5: m rose from {_m(online.bound)} to {_m(after)} "
                f"over {after.n} vector question(s); {rise} × ({mech.guarantee.description})",
            ),
            after,
            state,
        )

    def _exposure_after(
        self,
        querier: str,
        new_q: list[int],
        what: np.ndarray,
        by_id: bool,
        bound: Claim5Bound | None,
    ) -> tuple[RecordExposure, _Exposure] | None:
        """NOT PRIVATE. The querier's exposure once this request's new questions are answered
        (and the state to keep), or None when it asks nothing new. It is charged its
        distinct ids plus the online m of its vectors, per record."""
        if not new_q:
            return None
        old = self._exposure_of(querier)
        points = self._X[what[new_q]] if by_id else what[new_q]
        after = _Exposure(
            old.counts + self._index.around(points, self.mechanism.r),
            old.ids + (len(new_q) if by_id else 0),
        )
        vectors = self._online_of(querier).bound if bound is None else bound
        m = after.ids + _m(vectors)
        return RecordExposure(after.counts, self.mechanism.epsilon, m), after

    def _statistics(
        self, what: np.ndarray, keys: list[bytes], fresh: list[int], by_id: bool, add: bool
    ) -> BallStatistics:
        """Counts of the questions nobody asked before (the only ones sampled). A vector's
        key is its tag and its :func:`question_keys` digest, so x_i is read from it."""
        if by_id:
            s = self._own
            idx = what[fresh]
            return BallStatistics(s.x_i[idx], s.ball[idx], s.capped[idx], s.cap, False)
        Q = what[fresh]
        m = self.mechanism
        ball = self._index.counts(Q, m.r, cap=m.count_cap) if len(fresh) else np.zeros(0, np.int64)
        mult = np.fromiter(
            (self._multiplicity.get(keys[i][2:], 0) for i in fresh), np.int64, len(fresh)
        )
        return statistics_from_counts(ball, mult, add=add, cap=m.count_cap)

    def _store(
        self,
        querier: str,
        keys: list[bytes],
        what: np.ndarray,
        new_q: list[int],
        fresh: list[int],
        sampled: np.ndarray,
        by_id: bool,
    ) -> None:
        """Record the sampled answers and the querier's new questions, in one transaction."""
        seq0 = self._db.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM asked WHERE querier = ?", (querier,)
        ).fetchone()[0]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "INSERT INTO answers (question, answer) VALUES (?, ?)",
                [(keys[i], int(a)) for i, a in zip(fresh, sampled, strict=True)],
            )
            self._db.executemany(
                "INSERT INTO asked (querier, question, seq, vector) VALUES (?, ?, ?, ?)",
                [
                    (
                        querier,
                        keys[i],
                        seq0 + 1 + j,
                        None if by_id else np.ascontiguousarray(what[i], "<f8").tobytes(),
                    )
                    for j, i in enumerate(new_q)
                ],
            )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._db.execute("ROLLBACK")
            raise LedgerError(f"curator store: {exc}") from None


@dataclass(frozen=True)
class _Exposure:
    """A querier's c_j over the stored records and its number of distinct id questions."""

    counts: np.ndarray
    ids: int


@dataclass(frozen=True)
class _Record:
    """The curator's output of a release: the store's transaction (answers of fresh
    questions, the querier's new questions), run before the spend is committed."""

    curator: Curator
    querier: str
    keys: list[bytes]
    what: np.ndarray
    new_q: list[int]
    fresh: list[int]
    by_id: bool

    def staging(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def write(self, _area: Any, answers: np.ndarray, _log_error: Any) -> None:
        self.curator._store(
            self.querier, self.keys, self.what, self.new_q, self.fresh, answers, self.by_id
        )


def _first_positions(keys: list[bytes]) -> list[int]:
    """The position of each key's first occurrence, in order."""
    seen: dict[bytes, int] = {}
    for i, key in enumerate(keys):
        seen.setdefault(key, i)
    return list(seen.values())
