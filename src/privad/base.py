"""scikit-learn plumbing shared by privad's estimators.

Every privad estimator is a real scikit-learn estimator: it inherits
:class:`sklearn.base.BaseEstimator` (parameters read from the ``__init__`` signature, so
``clone``, ``Pipeline`` and grid searches work), validates with scikit-learn's
``validate_data`` (``n_features_in_``, ``feature_names_in_``) and checks fitted state with
``check_is_fitted``. :class:`PrivadEstimator` adds privad's errors: an unknown parameter is a
:class:`~privad.errors.ParameterError`, a call before ``fit`` a
:class:`~privad.errors.NotFittedError` (which is also scikit-learn's ``NotFittedError``),
and malformed input a :class:`~privad.errors.DataError` (also a ``ValueError``) whose message
says what was wrong. :class:`PrivadEstimator` is made on first use (the module's
``__getattr__``), so importing this module, as the sensitive-privacy jobs and the command
line do for :func:`check_contamination`, imports no scikit-learn. Estimators that release a
noisy result per block of records (a window, a series) keep what they released by the
block's content (:meth:`PrivadEstimator._released`), so asking again returns the same
answers and spends nothing.

The process's in-memory ledgers
-------------------------------
An estimator that releases (sensitive privacy, relaxed DP, the noisy binary search) charges
its own in-memory ledger, ``ledger_``, unless it is given another. That ledger is not the
estimator's: it belongs to the records. A process keeps one *account* per scope and group
of overlapping records: every estimator fitted in this process on records that share a row
with an account's records (the same data, a subset, a superset, a cross-validation fold,
in any order) charges that account's ledger, so ``fit`` again, ``clone(...).fit``, a grid
search's folds and its refit, and copies made with ``pickle`` or ``copy.deepcopy`` all
spend one budget, and each of them shows every spend in ``ledger_``. An estimator's
``budget`` caps that shared total: it is declared on the account before each of its
releases, which is refused if the records' total would pass it (``None``: no cap of the
estimator's own). Records are recognised by their values (a 64-bit hash per row), so
identical rows of different people join one account (more conservative, never less); a
transformation fitted per fold (a scaler inside a grid search) hands the estimator other
values, which this cannot see: give such searches a persistent ledger. Another process
never shares an in-memory ledger: a pickled estimator loaded elsewhere (or a forked
process) carries a copy, and its first release there issues a
:class:`~privad.errors.PrivacyWarning` saying so (docs/accounting.md, "Estimators").
"""

from __future__ import annotations

import functools
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from privad.errors import (
    BudgetExceededError,
    DataError,
    LedgerError,
    ParameterError,
    PrivacyWarning,
)
from privad.io import rows_digest
from privad.validation import check_array

__all__ = [
    "InputTypeError",
    "NotFittedError",  # noqa: F822 (made on first use: __getattr__)
    "PrivadEstimator",  # noqa: F822
    "check_contamination",
    "check_ledger_scope",
    "contamination_threshold",
    "process_ledger",
    "row_hashes",
]

_T = TypeVar("_T")


def check_contamination(contamination: Any, name: str = "contamination") -> float:
    """PyOD's ``contamination``: the share of records to flag, a number in (0, 0.5]."""
    try:
        value = float(contamination)
    except (TypeError, ValueError):
        value = float("nan")
    if isinstance(contamination, bool) or not 0.0 < value <= 0.5:
        raise ParameterError(f"{name} must be a number in (0, 0.5], got {contamination!r}")
    return value


def contamination_threshold(scores: np.ndarray, contamination: float) -> float:
    """PyOD's threshold: the ``100 (1 - contamination)`` percentile of ``scores``.

    A record is flagged when its score is *above* the threshold (``scores > threshold``),
    as PyOD's ``BaseDetector._process_decision_scores`` does. The scores are released
    (noisy) scores, so the threshold and the labels are post-processing: no privacy cost.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.base import contamination_threshold
    >>> scores = np.arange(10.0)
    >>> t = contamination_threshold(scores, 0.2)
    >>> int((scores > t).sum())
    2
    """
    c = check_contamination(contamination)
    return float(np.percentile(np.asarray(scores, dtype=np.float64), 100.0 * (1.0 - c)))


def check_ledger_scope(ledger: Any, scope: Any) -> None:
    """Check the ``ledger`` and ``scope`` a caller gives a release: both, or neither.

    A release charges the caller's ledger under the caller's scope (both given), or the
    estimator's own ``ledger_`` under ``scope_`` (neither); one without the other is a
    :class:`~privad.errors.ParameterError`, raised before anything is computed or charged.

    Examples
    --------
    >>> from privad.accounting import Ledger
    >>> from privad.base import check_ledger_scope
    >>> check_ledger_scope(None, None)  # the estimator's own ledger
    >>> check_ledger_scope(Ledger(":memory:"), "study")
    >>> check_ledger_scope(Ledger(":memory:"), None)
    Traceback (most recent call last):
    ...
    privad.errors.ParameterError: give both ledger and scope, or neither; got ledger only
    """
    if (ledger is None) != (scope is None):
        given = "scope" if ledger is None else "ledger"
        raise ParameterError(f"give both ledger and scope, or neither; got {given} only")


class InputTypeError(DataError, TypeError):
    """Input of a type that cannot be read as numbers (also a TypeError, as scikit-learn
    raises for it)."""


_PROCESS = f"{os.getpid()}-{time.time_ns()}"  # this process (a pickle may come from another)
_GOLDEN, _MIX1, _MIX2 = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xBF58476D1CE4E5B9),
    np.uint64(0x94D049BB133111EB),
)


def row_hashes(rows: Any) -> np.ndarray:
    """The sorted distinct 64-bit hashes of the rows of ``rows`` (n, d): how an account
    recognises records (equal values, ``-0.0`` and ``0.0`` alike, hash equally; another
    row shares a hash with probability about 2^-64, which only joins two accounts).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.base import row_hashes
    >>> X = np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]])
    >>> len(row_hashes(X)), bool(np.isin(row_hashes(X[1:]), row_hashes(X)).all())
    (2, True)
    """
    arr = np.atleast_2d(np.asarray(rows, dtype="<f8")) + 0.0  # -0.0 becomes 0.0
    words = arr.view("<u8")
    h = np.full(words.shape[0], np.uint64(words.shape[1]), dtype=np.uint64)
    t = np.empty_like(h)
    for j in range(words.shape[1]):  # one multiply-xorshift round per word, in place
        h ^= words[:, j]
        h *= _MIX1
        np.right_shift(h, np.uint64(29), out=t)
        h ^= t
    h += _GOLDEN  # SplitMix64's finaliser
    for shift, mix in ((30, _MIX1), (27, _MIX2)):
        np.right_shift(h, np.uint64(shift), out=t)
        h ^= t
        h *= mix
    np.right_shift(h, np.uint64(31), out=t)
    h ^= t
    return np.unique(h)


class _Account:
    """One in-memory ledger shared by every estimator of this process whose records
    overlap ``hashes`` (see the module docstring). ``merged_into`` points to the account
    that took this one over when a fit joined the two."""

    def __init__(self, number: int, scope: str, hashes: np.ndarray, ledger: Any, pid: int) -> None:
        self.number = number
        self.scope = scope
        self.hashes = hashes  # row_hashes of every record charged here
        self.ledger = ledger
        self.pid = pid  # the process the ledger was made in
        self.merged_into: _Account | None = None
        self.records: dict[Any, Any] = {}  # what fits of the same data share (_fitted_record)

    def resolve(self) -> _Account:
        account = self
        while account.merged_into is not None:
            account = account.merged_into
        return account

    def __deepcopy__(self, memo: dict[int, Any]) -> _Account:
        return self  # a deep copy of an estimator charges the same account

    def __reduce__(self) -> tuple[Any, ...]:
        a = self.resolve()  # the pickle carries a copy of the ledger, for another process
        return (_restore_account, (_PROCESS, a.number, a.pid, a.scope, a.hashes, a.ledger))


class _Accounts:
    """The process's accounts, by scope; one lock for every change and every release."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.by_scope: dict[str, list[_Account]] = {}
        self.numbered: dict[int, _Account] = {}

    def new(self, scope: str, hashes: np.ndarray, ledger: Any, pid: int) -> _Account:
        account = _Account(len(self.numbered) + 1, scope, hashes, ledger, pid)
        self.numbered[account.number] = account
        self.by_scope.setdefault(scope, []).append(account)
        return account

    def join(
        self, account: _Account | None, scope: str, hashes: np.ndarray, ledger_class: Any
    ) -> _Account:
        """The account of ``scope`` for records ``hashes``: ``account`` (if given) and every
        account whose records overlap them, merged into one."""
        with self.lock:
            live = self.by_scope.setdefault(scope, [])
            hits = self.overlapping(scope, hashes)
            if account is not None:
                account = account.resolve()
                hits = [account] + [a for a in hits if a is not account]
            if not hits:
                return self.new(scope, hashes, _memory_ledger(ledger_class), os.getpid())
            target = hits[0]
            if len(hits) > 1:
                books = [a.ledger for a in hits]
                target.ledger = _merged_ledger(books, _memory_ledger(ledger_class))
                for other in hits[1:]:
                    other.merged_into = target
                    target.records.update(other.records)
                    target.hashes = np.union1d(target.hashes, other.hashes)
                    live.remove(other)
            target.hashes = np.union1d(target.hashes, hashes)
            return target

    def overlapping(self, scope: str, hashes: np.ndarray) -> list[_Account]:
        """The accounts of ``scope`` that share a record with ``hashes``, oldest first."""
        live = self.by_scope.get(scope, [])
        return [a for a in live if np.isin(hashes, a.hashes, assume_unique=True).any()]

    def restore(
        self, process: str, number: int, pid: int, scope: str, hashes: np.ndarray, ledger: Any
    ) -> _Account:
        """An unpickled account: in the process that pickled it, the account itself (or the
        one it was merged into); elsewhere the copy it carries, joined with the accounts of
        this process it overlaps, still marked with the process it came from."""
        with self.lock:
            if process == _PROCESS and number in self.numbered:
                return self.numbered[number].resolve()
            copy = self.new(scope, hashes, ledger, pid)
            return self.join(copy, scope, hashes, type(ledger))

    def forget(self) -> None:
        """Forget every account, as a new process would start. Forgetting spends forgets
        privacy loss that happened: privad never calls this (the tests do, between tests)."""
        with self.lock:
            self.by_scope.clear()
            self.numbered.clear()


_ACCOUNTS = _Accounts()


def process_ledger(X: Any, scope: str = "fitted-data") -> Any:
    """The in-memory ledger this process's estimators charged for the records ``X`` under
    ``scope``: the ledger of the account of records overlapping ``X`` (accounts ``X``
    overlaps are joined into one), ``None`` when no estimator of this process was fitted
    on any of them. What a grid search spent is here even when its refit was refused.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.base import process_ledger
    >>> from privad.sensitive import SensitiveAnomalyIdentifier
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> est = SensitiveAnomalyIdentifier(beta=1, r=0.5, epsilon=0.1, rng=0, scope="doc")
    >>> _ = est.fit(X).predict(X[:1])
    >>> ledger = process_ledger(X[:5], scope="doc")  # a subset of the fitted records
    >>> ledger is est.ledger_, round(ledger.spent("doc", "sensitive"), 6)
    (True, 0.1)
    """
    hashes = row_hashes(check_array(X, "X"))
    if not isinstance(scope, str) or not scope.strip():
        raise ParameterError(f"scope must be a non-empty string, got {scope!r}")
    scope = scope.strip()
    with _ACCOUNTS.lock:
        hits = _ACCOUNTS.overlapping(scope, hashes)
        if not hits:
            return None
        return _ACCOUNTS.join(hits[0], scope, hashes, type(hits[0].ledger)).ledger


def _restore_account(*args: Any) -> _Account:
    return _ACCOUNTS.restore(*args)


def _memory_ledger(ledger_class: Any) -> Any:
    return ledger_class(":memory:", unbudgeted="record")


def _merged_ledger(ledgers: list[Any], merged: Any) -> Any:
    """``merged`` with the live spends of ``ledgers`` (oldest first) and, where their sum
    allows, the smallest of their budgets: two accounts joined by a fit that overlaps
    both (each record's loss is at most the sum)."""
    spends = sorted(
        (s for book in ledgers for s in book.history(include_cancelled=False)),
        key=lambda s: s.timestamp,
    )
    for s in spends:  # no budget yet: recorded as they were (a reservation stays counted)
        charge = merged.spend if s.status == "committed" else merged.reserve
        charge(s.scope, s.guarantee, s.label, s.metadata)
    totals: dict[tuple[str, str], float] = {}
    for book in ledgers:
        for b in book.budgets():
            totals[b.scope, b.notion] = min(totals.get((b.scope, b.notion), np.inf), b.total)
    for (scope, notion), total in totals.items():
        if merged.spent(scope, notion) <= total:
            merged.set_budget(scope, notion, float(total))
    return merged


def _declare_budget(book: Any, scope: str, notion: str, budget: float, *, strict: bool) -> None:
    """Make ``budget`` the total of ``scope`` under ``notion`` in the account's ledger
    ``book``. When the records have already spent more (``strict``): a
    :class:`~privad.errors.BudgetExceededError`, nothing released."""
    now = [b for b in book.budgets(scope) if b.notion == notion]
    if now and float(now[0].total) == budget:
        return
    spent = book.spent(scope, notion)
    if spent > budget:
        if strict:
            raise BudgetExceededError(
                f"refused: the records of this estimator have already spent ε {spent:g} under "
                f"{notion!r} in scope {scope!r} in this process (fits, clones and copies on the "
                f"same or overlapping records share one ledger), more than its budget "
                f"{budget:g}; nothing was released"
            )
        return
    book.set_budget(scope, notion, budget)


def __getattr__(name: str) -> Any:
    """:class:`PrivadEstimator` (and ``NotFittedError``) are made on first use: they
    subclass scikit-learn's classes, and importing scikit-learn costs about a second, which
    the commands and services that fit no estimator (``privad sp identify``) never pay."""
    if name == "PrivadEstimator":
        return _estimator_class()
    if name == "NotFittedError":
        from privad import errors

        return errors.NotFittedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _estimator_class() -> type:
    """Make :class:`PrivadEstimator` (once), importing scikit-learn."""
    from sklearn.base import BaseEstimator
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError
    from sklearn.utils.validation import check_is_fitted, validate_data

    from privad.errors import NotFittedError

    class PrivadEstimator(BaseEstimator):
        """:class:`sklearn.base.BaseEstimator` with privad's errors and input validation."""

        _releases: dict[str, Any]  # released results by block digest (see _released)
        _account: _Account  # the fitted records' account (see the module docstring)
        budget: float | None  # of the estimators that release: their parameters and scope_
        scope_: str

        @property
        def ledger_(self) -> Any:
            """The in-memory :class:`~privad.accounting.Ledger` of the fitted records' account:
            every release of this process on these records (or records overlapping them) that
            was charged to an estimator's own ledger, whichever estimator or copy made it."""
            account = self.__dict__.get("_account")
            if account is None:
                raise AttributeError(f"this {type(self).__name__} has no ledger_ before fit")
            return account.resolve().ledger

        def __getstate__(self) -> dict[str, Any]:
            """scikit-learn's state, and the process it was pickled in (see
            :meth:`_open_account`)."""
            return {**super().__getstate__(), "_pickled_in": _PROCESS}

        def _open_account(self, hashes: np.ndarray, ledger_class: Any, notion: str) -> None:
            """At ``fit``: join the account of the records with :func:`row_hashes` ``hashes``
            in scope ``scope_`` (a new in-memory ``ledger_class`` for records never seen), and
            declare ``budget`` on it under ``notion`` unless the records have spent more.

            An estimator pickled in another process (a parallel grid search's worker gets its
            clones so) issues a :class:`~privad.errors.PrivacyWarning`: that process never
            sees what is spent here."""
            origin = self.__dict__.get("_pickled_in", _PROCESS)
            if origin != _PROCESS:
                warnings.warn(
                    f"{type(self).__name__}: fitted in process {os.getpid()}, pickled in "
                    f"process {origin.partition('-')[0]} (a worker of a parallel search?): its "
                    "in-memory ledger here is not that process's, so spends here are not "
                    "counted there. To share a budget between processes, charge a persistent "
                    "ledger (privad.accounting.Ledger on a file)",
                    PrivacyWarning,
                    stacklevel=3,
                )
            self._account = _ACCOUNTS.join(None, self.scope_, hashes, ledger_class)
            if self.budget is not None:
                book = self._account.ledger
                _declare_budget(book, self.scope_, notion, float(self.budget), strict=False)

        def _fitted_record(self, key: Any, make: Callable[[], _T]) -> _T:
            """The object that every fit of this process with the same ``key`` (the exact data
            and what decides its answers) shares, made by ``make`` the first time: the record
            of released answers, so a question asked again after a refit gets its answer."""
            return self._account.resolve().records.setdefault(key, make())

        @contextmanager
        def _own_ledger(
            self, notion: str, rows: np.ndarray | None = None, *, ledger: Any = None
        ) -> Iterator[Any]:
            """The account's ledger for one release, held under the process's lock (``ledger``
            instead when the caller gave one).

            The released records ``rows`` (when they are not only the fitted ones) join the
            account first; ``budget`` is declared under ``notion`` (a
            :class:`~privad.errors.BudgetExceededError` when the records have already spent
            more); an account copied from another process issues a
            :class:`~privad.errors.PrivacyWarning`: its spends there are not counted here.
            """
            if ledger is not None:
                yield ledger
                return
            with _ACCOUNTS.lock:
                account = self._account.resolve()
                if rows is not None:
                    hashes = row_hashes(rows)
                    account = _ACCOUNTS.join(account, self.scope_, hashes, type(account.ledger))
                self._account = account
                if account.pid != os.getpid():
                    warnings.warn(
                        f"{type(self).__name__}: this in-memory ledger was made in process "
                        f"{account.pid} and is used in process {os.getpid()} (a pickle loaded "
                        "elsewhere, or a fork): spends here and there are not counted together. "
                        "To share a budget between processes, charge a persistent ledger "
                        "(privad.accounting.Ledger on a file)",
                        PrivacyWarning,
                        stacklevel=4,
                    )
                if self.budget is not None:
                    book = account.ledger
                    _declare_budget(book, self.scope_, notion, float(self.budget), strict=True)
                yield account.ledger

        @contextmanager
        def _fitting(self, ledger: Any, scope: Any) -> Iterator[None]:
            """A ``fit`` whose releases charge ``ledger`` under ``scope`` (both, or neither:
            ``ledger_``; :func:`check_ledger_scope` first). A ledger's refusal inside (a
            :class:`~privad.errors.BudgetExceededError`, or a
            :class:`~privad.errors.LedgerError` such as a missing budget: nothing was
            released) leaves the estimator as it was: a refused fit sets no fitted
            attribute, a refused refit keeps the previous fit."""
            check_ledger_scope(ledger, scope)
            before = dict(self.__dict__)
            try:
                yield
            except (BudgetExceededError, LedgerError):
                self.__dict__.clear()
                self.__dict__.update(before)
                raise

        def __sklearn_tags__(self) -> Any:
            """scikit-learn's tags; an estimator with an ``rng`` parameter (one that releases
            noisy answers) draws OS entropy, so is non-deterministic, unless given a seed."""
            tags = super().__sklearn_tags__()
            if "rng" in self._get_param_names():
                tags.non_deterministic = self.rng is None
            return tags

        def set_params(self, **params: Any) -> Any:
            """Set constructor parameters (scikit-learn convention); refit afterwards."""
            allowed = self._get_param_names()
            for name in params:
                if name.partition("__")[0] not in allowed:  # "estimator__x": a nested parameter
                    raise ParameterError(
                        f"unknown parameter {name!r}; allowed: {', '.join(allowed)}"
                    )
            return super().set_params(**params)

        def _require_fitted(self, attribute: str) -> None:
            """Raise :class:`~privad.errors.NotFittedError` unless ``attribute`` was fitted."""
            try:
                check_is_fitted(self, attribute)
            except SklearnNotFittedError:
                raise NotFittedError(
                    f"this {type(self).__name__} is not fitted yet; call fit(X) first"
                ) from None

        def _validate(self, X: Any, *, reset: bool, min_rows: int = 1) -> np.ndarray:
            """``X`` as a finite float64 (n, d) array through scikit-learn's ``validate_data``
            (which records ``n_features_in_`` and ``feature_names_in_`` on ``reset`` and checks
            them otherwise); its ValueErrors become :class:`~privad.errors.DataError`."""
            try:
                return validate_data(
                    self, X, reset=reset, dtype=np.float64, ensure_min_samples=min_rows
                )
            except DataError:
                raise
            except ValueError as exc:
                raise DataError(f"X: {exc}") from None
            except TypeError as exc:
                raise InputTypeError(f"X: {exc}") from None

        def _released(
            self, data: np.ndarray, release: Callable[[np.ndarray], _T]
        ) -> tuple[_T, np.ndarray]:
            """The result released before for the same records as ``data`` (the same rows, in
            any order, by :func:`~privad.io.rows_digest` of the sorted rows), else
            ``release(data)``, recorded for next time.

            A noisy release is made once per block of records: asking again for the same
            records (or a permutation of them) returns the same answers without new noise or
            spend, so repeated calls cannot average the noise away. Returns the result and
            ``where``: row i of ``data`` is row ``where[i]`` of the block the result was
            released for (per-record arrays of the result are read as ``array[where]``).
            ``fit`` starts an empty record (``self._releases = {}``).
            """
            order = np.lexsort(data.T[::-1])  # rows sorted; ties (equal rows) keep their order
            key = rows_digest(data[order])
            if key not in self._releases:
                self._releases[key] = (release(data), order)
            result, first_order = self._releases[key]
            return result, first_order[np.argsort(order)]

    PrivadEstimator.__module__ = __name__
    PrivadEstimator.__qualname__ = "PrivadEstimator"  # found again here by name
    return PrivadEstimator
