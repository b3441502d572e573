"""The one release path of (β, r)-anomaly labels: every private answer is accounted, once.

Every way of asking for sensitive-privacy labels (the estimator's :meth:`predict`, the
command line on one machine or on Dask, a service) ends in :func:`release_labels`, which
owns the sequence

1. **validate**: the mechanism object, the ledger and scope, the number of questions;
2. **early check**: the ledger must be able to pay for one answer before any count is
   computed (a scope with no budget left costs no geometry, and no Dask cluster);
3. **compute** the counts (x_i, B_x(i, r)) the mechanism reads, with whatever engine the
   caller's ``statistics`` uses (Numba, SciPy, Dask). They are never released;
4. **guarantee**: the caller's charge rule; the batch rule (:func:`claim5_charge`) is
   Claim 5's bound m (the counts at r are reused for the lower bound) and the mechanism's
   ``batch_guarantee(n, m)`` = min(n, m)·ε; the curator charges online. The rule may also
   give the per-record exposure (:class:`~privad.sensitive.accounting.RecordExposure`:
   how many answers can move with each stored record); its summary, with the optimal
   composition at the scope's δ when the scope has an (ε, δ) budget, is kept in the
   spend's metadata under ``"per_record"`` (the curator's ledger; never sent to a querier);
5. **reserve** the guarantee in the ledger (check-then-spend, atomic; a refusal raises
   :class:`~privad.errors.BudgetExceededError` and nothing is sampled);
6. **sample** the answers with the mechanism's exact sampler;
7. **write** them where the output's staging area is (a temporary file or folder), make
   them durable (flushed and ``fsync``-ed) and **publish** them (rename into place, or the
   curator's store transaction);
8. **commit** the spend.

A failure before the output is published (a full disk, an I/O error: an
:class:`~privad.errors.OutputError`; any other exception) cancels the reservation and
discards the staged output: nothing left the process, nothing is spent. A process killed
before the rename leaves the spend reserved (counted, and cancellable once its staging is
known unread: ``privad budget cancel``), never committed for an output that does not
exist; killed between the rename and the commit, it leaves the spend reserved with its
output published, which still counts it. The spend's label and metadata are built here from the
mechanism and the batch, so every entry point records the same row for the same job;
callers add what only they know (an output path, an engine) under ``metadata["context"]``.

Recorded answers
----------------
:class:`AnswerRecord` keeps the answers already released, by question, so that asking
again returns the recorded answer with no new noise and no new spend (averaging repeated
releases would otherwise undo the noise). A question is a record of the fitted data (by
position), or a query record (by a digest of its exact float64 value, in memory or in a Dask
collection alike: :func:`question_keys`). Rows repeated
within one request are separate questions (Claim 5 counts them repeatedly), so every
engine draws the same answers; a later request gets the first recorded answer.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from privad.accounting import Guarantee, Ledger, NoBudgetError, Spend
from privad.errors import BudgetExceededError, DataError, ParameterError
from privad.sensitive._dask import dask_claim5_bound, dask_statistics
from privad.sensitive.accounting import Claim5Bound, RecordExposure, claim5_bound, record_exposure
from privad.sensitive.anomaly import BallStatistics, ball_statistics
from privad.sensitive.mechanisms import AIQMechanism

__all__ = [
    "ERROR_COLUMNS",
    "AnswerRecord",
    "Charge",
    "CsvLabels",
    "ParquetLabels",
    "Release",
    "batch_bound",
    "batch_charge",
    "batch_statistics",
    "claim5_charge",
    "question_keys",
    "release_labels",
]

ERROR_COLUMNS = ("error_probability_NOT_PRIVATE", "log10_error_probability_NOT_PRIVATE")
"""Evaluation columns an output may add (computed from the exact counts: never release)."""


@dataclass(frozen=True)
class Charge:
    """What a release is charged: the guarantee (None when earlier spends already cover the
    answers), the ledger row's label and metadata, Claim 5's bound when one was used, the
    per-record exposure when the rule computed it (NOT private), and whether the answers are
    a service's stream (the curator's: drawn from a prepaid block under an (ε, δ) budget,
    :meth:`~privad.accounting.Ledger.spend`)."""

    guarantee: Guarantee | None
    label: str
    metadata: dict[str, Any]
    bound: Claim5Bound | None = None
    exposure: RecordExposure | None = None
    stream: bool = False


@dataclass(frozen=True)
class Release:
    """What one call of :func:`release_labels` released and charged.

    Attributes
    ----------
    answers : int64 array, the noisy 0/1 labels (1 = anomaly), one per question sampled.
    guarantee : the guarantee charged (None: covered by earlier spends).
    bound : Claim 5's bound for the batch, when the charge used one.
    spend : the ledger's committed row (None when nothing was charged).
    statistics : the counts the answers were drawn from (NOT private; for evaluation only).
    exposure : how many answers can move with each stored record, with the optimal
        composition at the scope's δ (NOT private; the curator's; None if not computed).
    """

    answers: np.ndarray
    guarantee: Guarantee | None
    bound: Claim5Bound | None
    spend: Spend | None
    statistics: BallStatistics = field(repr=False)
    exposure: RecordExposure | None = field(default=None, repr=False)


def spend_label(mechanism: AIQMechanism, n_questions: int) -> str:
    """What the ledger records as released."""
    return (
        f"{mechanism.name} (β={mechanism.beta}, r={mechanism.r!r})-anomaly labels for "
        f"{n_questions} record(s)"
    )


def claim5_charge(
    mechanism: AIQMechanism,
    bound: Callable[[BallStatistics], Claim5Bound],
    context: dict[str, Any] | None = None,
    exposure: Callable[[BallStatistics, int], RecordExposure] | None = None,
) -> Callable[[BallStatistics], Charge]:
    """The batch rule: n questions cost min(n, m)·ε with Claim 5's m (Claims 3 and 5).

    ``bound(stats)`` computes the bound (``stats`` lets it reuse the counts at r for the
    lower bound); ``context`` (caller-specific metadata: output path, engine) is stored
    under ``"context"``; ``exposure(stats, m)``, if given, computes the per-record exposure
    of the batch charged min(n, m) answers. The label and the rest of the metadata come
    from the mechanism and the batch, so every caller records the same row for the same job.
    """

    def charge(stats: BallStatistics) -> Charge:
        n = int(stats.x_i.size)
        b = bound(stats)
        metadata = {
            **mechanism.params(),
            "n_queries": n,
            "m": b.m,
            "m_lower": b.lower,
            "m_upper": b.upper,
            "add_query_to_data": bool(stats.added_query),
            "context": dict(context or {}),
        }
        return Charge(
            mechanism.batch_guarantee(n, b.m),
            spend_label(mechanism, n),
            metadata,
            b,
            None if exposure is None else exposure(stats, min(n, b.m)),
        )

    return charge


def batch_statistics(
    X: Any, Q: Any, mechanism: AIQMechanism, *, add: bool, engine: str, summaries: Any = None
) -> BallStatistics:
    """(x_i, B_x(i, r)) of the queries ``Q`` (None: the records ``X`` themselves) on ``X``,
    counted by ``engine`` (:func:`privad.geometry.ball_counts`'s, or ``"dask"``: ``X`` and
    ``Q`` are Dask arrays, counted on the active scheduler, the summary passes kept in the
    dict ``summaries``); ``add``: footnote 1 (each query added to the data). NOT private."""
    if engine == "dask":
        from privad.geometry.distributed import shared_summaries

        with shared_summaries(summaries):
            return dask_statistics(X, Q, mechanism.r, mechanism.metric, mechanism.count_cap, add)
    return ball_statistics(
        X,
        mechanism.r,
        queries=Q,
        metric=mechanism.metric,
        add_query_to_data=add,
        cap=mechanism.count_cap,
        engine=engine,
    )


def batch_bound(
    X: Any,
    Q: Any,
    mechanism: AIQMechanism,
    stats: BallStatistics | None,
    *,
    engine: str,
    summaries: Any = None,
) -> Claim5Bound:
    """Claim 5's bound on m for the queries ``Q`` (None: the records ``X``). For the records
    themselves, the lower bound max B(i, r) is read from their uncapped counts ``stats``
    when known (one pass saved)."""
    queries = X if Q is None else Q
    own = Q is None and mechanism.count_cap is None and stats is not None
    counts = stats.ball if own and not stats.added_query else None  # type: ignore[union-attr]
    if engine == "dask":
        from privad.geometry.distributed import shared_summaries

        with shared_summaries(summaries):
            return dask_claim5_bound(queries, mechanism.r, mechanism.metric, counts)
    return claim5_bound(queries, mechanism.r, metric=mechanism.metric, ball_counts_at_r=counts)


def batch_charge(
    X: Any,
    Q: Any,
    mechanism: AIQMechanism,
    context: dict[str, Any],
    *,
    engine: str,
    summaries: Any = None,
) -> Callable[[BallStatistics], Charge]:
    """The batch rule (:func:`claim5_charge`) for the queries ``Q`` (None: the records
    ``X``) on ``X``, with the per-record exposure of the records of ``X`` (NOT private:
    when the records ask about themselves with uncapped counts, their own ball counts; else
    one pass of the queries around the records). What every batch release charges."""
    own = Q is None and mechanism.count_cap is None

    def exposure(stats: BallStatistics, m: int) -> RecordExposure:
        return record_exposure(
            X,
            mechanism.r,
            epsilon=mechanism.epsilon,
            m=m,
            metric=mechanism.metric,
            queries=None if own else (X if Q is None else Q),
            self_counts=stats.ball if own else None,
        )

    return claim5_charge(
        mechanism,
        lambda stats: batch_bound(X, Q, mechanism, stats, engine=engine, summaries=summaries),
        context,
        exposure,
    )


def release_labels(
    mechanism: AIQMechanism,
    *,
    statistics: Callable[[], BallStatistics],
    charge: Callable[[BallStatistics], Charge],
    ledger: Ledger,
    scope: str,
    rng: Any,
    output: Any = None,
    precheck: bool = True,
    step: Callable[[str], contextlib.AbstractContextManager] | None = None,
) -> Release:
    """Release noisy labels (the sequence of the module docstring).

    Parameters
    ----------
    mechanism : AIQMechanism
        The mechanism, holding β, r, ε, k, metric and count cap.
    statistics : callable
        ``statistics()`` computes the counts (x_i, B) of the questions to sample, in order.
    charge : callable
        ``charge(stats)`` gives the :class:`Charge` (the batch rule is
        :func:`claim5_charge`; the curator charges online, :mod:`privad.sensitive.curator`).
    ledger, scope : the :class:`~privad.accounting.Ledger` and the scope charged.
    rng : the :class:`~privad.noise.Randomness` (or seed) the answers are drawn from.
    output : optional
        Where the answers are written before the commit: an object with ``staging()`` (a
        context manager giving a staging area, made durable and published on normal exit,
        discarded on an exception) and ``write(area, answers, log_error)``; see
        :class:`CsvLabels` and :class:`ParquetLabels`. The spend is reserved before the
        staging is opened and committed after it is published.
    precheck : bool, default True
        Refuse before counting when the budget cannot pay for one answer.
    step : callable, optional
        ``step(text)`` returns a context manager around each stage (progress display).
    """
    if not isinstance(mechanism, AIQMechanism):
        raise ParameterError(
            f"mechanism must be a privad.sensitive.AIQMechanism, got {type(mechanism).__name__}"
        )
    if not isinstance(ledger, Ledger):
        raise ParameterError(
            f"ledger must be a privad.accounting.Ledger, got {type(ledger).__name__}"
        )
    step = step or (lambda text: contextlib.nullcontext())
    if precheck:
        ledger.check(scope, mechanism.guarantee)  # 2. can the budget pay for one answer?
    with step("counting balls"):
        stats = statistics()  # 3. not released
    with step("bounding m (Claim 5)"):
        c = charge(stats)  # 4.
    if c.exposure is not None:  # the curator's own record of who can lose how much
        c = _with_exposure(c, _scope_delta(ledger, scope, mechanism.notion))
    res = None if c.guarantee is None else _reserve(ledger, scope, mechanism, c)  # 5.
    with res or contextlib.nullcontext():  # 8. commits once the output is published
        with _staging(output) as area:  # 7. durable, then published, on leaving
            with step("sampling the answers"):  # 6.
                answers = np.asarray(mechanism.sample(stats.x_i, stats.ball, rng), np.int64)
            if output is not None:
                with step("writing the answers"):
                    output.write(
                        area,
                        answers,
                        lambda: mechanism.log_error_probability(stats.x_i, stats.ball),
                    )
    return Release(
        answers, c.guarantee, c.bound, None if res is None else res.spend, stats, c.exposure
    )


def _scope_delta(ledger: Ledger, scope: str, notion: str) -> float | None:
    """The δ of ``scope``'s (ε, δ) budget under ``notion`` (None: pure, or no budget)."""
    try:
        delta = ledger.budget(scope, notion).delta
    except NoBudgetError:
        return None
    return None if delta is None else float(delta)


def _with_exposure(c: Charge, delta: float | None) -> Charge:
    """The charge with its exposure at ``delta`` and the exposure's summary in the metadata."""
    exposure = replace(c.exposure, delta=delta)  # type: ignore[type-var]
    return replace(c, exposure=exposure, metadata={**c.metadata, "per_record": exposure.summary()})


def _reserve(ledger: Ledger, scope: str, mechanism: AIQMechanism, c: Charge) -> Any:
    """Reserve the charge; a refusal says how the batch's cost came about."""
    assert c.guarantee is not None
    try:
        return ledger.reserve(scope, c.guarantee, c.label, c.metadata, stream=c.stream)
    except BudgetExceededError as exc:
        if c.bound is None:
            raise
        raise BudgetExceededError(
            f"{exc} (the batch costs min(n = {c.bound.n}, m = {c.bound.m}) × ε = "
            f"{mechanism.epsilon:g} by Claim 5; fewer queries, queries farther apart than "
            "2r or a smaller ε cost less)"
        ) from None


@contextlib.contextmanager
def _staging(output: Any) -> Iterator[Any]:
    if output is None:
        yield None
        return
    with output.staging() as area:
        yield area


# -- outputs ---------------------------------------------------------------------------------


def _error_columns(log_error: np.ndarray) -> dict[str, np.ndarray]:
    """The NOT PRIVATE evaluation columns: error probability and its log10."""
    return {ERROR_COLUMNS[0]: np.exp(log_error), ERROR_COLUMNS[1]: log_error / math.log(10.0)}


@dataclass(frozen=True)
class CsvLabels:
    """A CSV file ``index,label`` (``index,id,label`` with ``ids``, the values of the data's
    id column; plus the NOT PRIVATE error columns when ``errors``), written to a temporary
    file, ``fsync``-ed and renamed into place before the spend is committed."""

    path: Path
    errors: bool = False
    ids: np.ndarray | None = None

    @contextlib.contextmanager
    def staging(self) -> Iterator[Any]:
        """The open temporary file; renamed to :attr:`path` when the block succeeds."""
        from privad.io import atomic_write

        with atomic_write(self.path, "w", newline="", encoding="utf-8") as handle:
            yield handle

    def write(self, handle: Any, answers: np.ndarray, log_error: Callable[[], Any]) -> None:
        """Write the rows (index[, id], label[, error probability, log10 of it])."""
        writer = csv.writer(handle)
        columns: list[Any] = [range(answers.size)]
        header = ["index"]
        if self.ids is not None:
            if len(self.ids) != answers.size:
                raise DataError(f"{len(self.ids)} ids for {answers.size} answers")
            columns.append(self.ids.tolist())
            header.append("id")
        columns.append(answers.tolist())
        header.append("label")
        if self.errors:
            cols = _error_columns(np.asarray(log_error()))
            columns += [[repr(float(v)) for v in col] for col in cols.values()]
            header += list(ERROR_COLUMNS)
        writer.writerow(header)
        writer.writerows(zip(*columns, strict=True))


@dataclass(frozen=True)
class ParquetLabels:
    """A new folder of Parquet parts (one per partition of ``lengths`` records; columns
    ``index``, ``label`` and the NOT PRIVATE error columns when ``errors``), staged in a
    temporary folder, ``fsync``-ed and renamed into place before the spend is committed."""

    folder: Path
    lengths: tuple[int, ...]
    errors: bool = False

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """The temporary folder; renamed to :attr:`folder` when the block succeeds."""
        from privad.io import atomic_folder

        with atomic_folder(self.folder) as tmp:
            yield tmp

    def write(self, tmp: Path, answers: np.ndarray, log_error: Callable[[], Any]) -> None:
        """Write one part per partition."""
        from privad.distributed.tables import write_columns

        columns: dict[str, Any] = {"label": answers}
        if self.errors:
            columns.update(_error_columns(np.asarray(log_error())))
        write_columns(tmp, columns, self.lengths)


def _row_digests(block: np.ndarray) -> np.ndarray:
    """A 16-byte BLAKE2b digest of each row's exact float64 value (−0.0 and 0.0 alike)."""
    rows = np.ascontiguousarray(np.asarray(block, np.float64) + 0.0)
    out = np.empty((rows.shape[0], 16), np.uint8)
    for i, row in enumerate(rows):
        out[i] = np.frombuffer(hashlib.blake2b(row.tobytes(), digest_size=16).digest(), np.uint8)
    return out


def question_keys(Q: Any) -> list[bytes]:
    """One key per query record: a 16-byte BLAKE2b digest of its exact float64 value.

    The same for an in-memory array and for a Dask array of the same values (the digests of
    a Dask array are computed on the workers, 16 bytes per record come back), so a question
    gets its recorded answer whichever engine asks it. A collision of two different records
    has probability about 2^-128 per pair.
    """
    if hasattr(Q, "map_blocks") and hasattr(Q, "dask"):  # a Dask array
        digests = Q.map_blocks(_row_digests, chunks=(Q.chunks[0], (16,)), dtype=np.uint8)
        arr = np.asarray(digests.compute())
    else:
        arr = _row_digests(Q)
    return [row.tobytes() for row in arr]


class AnswerRecord:
    """The answers released so far, by question (see the module docstring).

    Answers to the fitted records are kept by position (:meth:`positions`, int8 with −1
    where none); answers to query records by :func:`question_keys`, separately for
    ``add_query_to_data`` False and True (:meth:`vectors`, :meth:`store_vectors`).
    """

    def __init__(self) -> None:
        self._by_position: dict[tuple, np.ndarray] = {}
        self._by_vector: dict[bool, dict[bytes, int]] = {}

    def positions(self, kind: tuple, n: int) -> np.ndarray:
        """The recorded answers of questions 0..n−1 of ``kind`` (int8, −1 = not answered)."""
        return self._by_position.setdefault(kind, np.full(n, -1, np.int8))

    def vectors(self, add: bool, keys: list[bytes]) -> np.ndarray:
        """The recorded answers of the query records with ``keys`` (int8, −1 = none)."""
        book = self._by_vector.get(bool(add), {})
        return np.fromiter((book.get(k, -1) for k in keys), np.int8, len(keys))

    def store_vectors(self, add: bool, keys: list[bytes], answers: np.ndarray) -> None:
        """Record ``answers`` for the query records with ``keys``; they replace earlier ones
        (a fresh release), and within one call the first of repeated keys is kept."""
        pairs = list(zip(keys, np.asarray(answers).tolist(), strict=True))
        self._by_vector.setdefault(bool(add), {}).update(reversed(pairs))

    def __len__(self) -> int:
        return sum(int((a >= 0).sum()) for a in self._by_position.values()) + sum(
            len(b) for b in self._by_vector.values()
        )
