"""Contamination and the provenance of (β, r) for :class:`SensitiveAnomalyIdentifier` (ours).

Scores and contamination
------------------------
The released answers are bits, so PyOD's rule "flag the top c share of the scores" needs a
tie-break: with ``contamination`` c, each question's score is its answer (±1) plus a
tie-break in [0, 0.5), a keyed hash (BLAKE2b) of the question (its position among the
fitted records, or its record's digest) under a salt drawn from the estimator's ``rng`` at
``fit`` (:func:`tiebreak_scores`). The tie-break depends on nothing but the question and the
salt, so the scores, PyOD's ``threshold_`` (:func:`privad.base.contamination_threshold`)
and ``labels_`` are post-processing of the released answers: no privacy cost, and the same
question always gets the same score. The flagged share is then c (up to rounding) whatever
ε is: when the released answers flag more than c, a random part of them is flagged; when
fewer, all of them and random others. Without ``contamination`` the labels are the released
answers (the paper's rule). ``r="private"`` (or ``"data"``) also aims r at c, so that the
released answers themselves flag about c where ε allows (docs/sensitive.md,
"Contamination").

Where (β, r) came from
----------------------
:func:`choose_radius` resolves the estimator's ``r`` and says where it came from, in the
words every spend of the estimator stores under ``metadata["context"]["parameters"]``:
``"given"`` (a number: public input, which privad cannot check), ``"data"`` (read off the
raw data by :func:`~privad.sensitive.propose_parameters`: NOT private) or ``"private"`` (an
ε-DP selection charged to a ledger, :func:`~privad.sensitive.select_radius`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from privad.base import contamination_threshold
from privad.errors import ParameterError
from privad.sensitive.selection import RadiusSelection
from privad.validation import check_nonnegative

__all__ = [
    "DATA_TEXT",
    "GIVEN_TEXT",
    "R_CHOICES",
    "ContaminationScores",
    "check_r",
    "choose_radius",
    "tiebreak_scores",
]

R_CHOICES = ("private", "data")
"""The radii chosen at ``fit`` (``r="private"``, ``"data"``)."""

GIVEN_TEXT = (
    "β and r given by the caller: private only if they came from public input (public "
    "bounds, a public or earlier sample) or from a private selection; privad cannot check"
)
DATA_TEXT = (
    "NOT PRIVATE: r read off the raw data (propose_parameters, contamination {c:g}); the "
    "labels' guarantee does not cover this choice"
)


def check_r(r: Any, beta: int, contamination: Any) -> Any:
    """``r``: a radius ≥ 0, ``"private"``/``"data"`` (with a contamination) or a
    :class:`~privad.sensitive.RadiusSelection` for the same β.

    Examples
    --------
    >>> from privad.sensitive.contamination import check_r
    >>> check_r(0.5, 3, None), check_r("private", 3, 0.05)
    (0.5, 'private')
    """
    if isinstance(r, RadiusSelection):
        if r.beta != beta:
            raise ParameterError(f"r is a private selection for β = {r.beta}, not β = {beta}")
        return r
    if isinstance(r, str):
        if r not in R_CHOICES:
            raise ParameterError(
                f"r must be a number >= 0, 'private', 'data' or a RadiusSelection, got {r!r}"
            )
        if contamination is None:
            raise ParameterError(f"r={r!r} chooses r for a contamination: give contamination")
        return r
    return check_nonnegative(r, "r")


def choose_radius(
    r: Any,
    X: Any,
    p: dict[str, Any],
    *,
    in_memory: bool,
    select: dict[str, Any],
) -> tuple[RadiusSelection | None, dict[str, Any]]:
    """The radius of a checked ``r`` (:func:`check_r`) and where it came from.

    ``p`` holds β, the contamination, ε and the metric; ``select`` the keyword arguments of
    :func:`~privad.sensitive.select_radius` for ``r="private"`` (ledger, scope, ε, radii,
    blocks, notion, k, rng). ``"private"`` and ``"data"`` read ``X`` and need it in memory
    (``in_memory``). Returns (the selection or None, the provenance: ``source``, ``beta``,
    ``r``, ``how`` and, for a selection, its public inputs and spend id).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive.contamination import choose_radius
    >>> choose_radius(0.5, np.zeros((3, 1)), {"beta": 2}, in_memory=True, select={})[1]["source"]
    'given'
    """
    from privad.sensitive.parameters import propose_parameters
    from privad.sensitive.selection import select_radius

    beta = p["beta"]
    if isinstance(r, RadiusSelection):
        return r, r.provenance()
    if not isinstance(r, str):
        return None, {"source": "given", "beta": beta, "r": r, "how": GIVEN_TEXT}
    if not in_memory:
        raise ParameterError(f"r={r!r} needs the records in memory; not with engine='dask'")
    c = p["contamination"]
    if r == "data":
        value = propose_parameters(X, contamination=c, beta=beta, metric=p["metric"])[1]
        return None, {"source": "data", "beta": beta, "r": value, "how": DATA_TEXT.format(c=c)}
    sel = select_radius(X, beta, c, metric=p["metric"], **select)
    return sel, sel.provenance()


def tiebreak_scores(answers: np.ndarray, keys: list[bytes], salt: int | None) -> np.ndarray:
    """±1 from the released ``answers``, plus each question's tie-break in [0, 0.5) when a
    ``salt`` is given (see the module docstring): a keyed BLAKE2b hash of its key.

    Examples
    --------
    >>> import numpy as np
    >>> from privad.sensitive.contamination import tiebreak_scores
    >>> tiebreak_scores(np.array([1, 0]), [b"a", b"b"], None).tolist()
    [1.0, -1.0]
    >>> s = tiebreak_scores(np.array([1, 0]), [b"a", b"b"], 7)
    >>> bool(1.0 <= s[0] < 1.5 and -1.0 <= s[1] < -0.5)
    True
    """
    scores = np.where(np.asarray(answers) == 1, 1.0, -1.0)
    if salt is None:
        return scores
    key = salt.to_bytes(8, "little")
    ties = np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(k, key=key, digest_size=7).digest(), "little")
            for k in keys
        ),
        np.float64,
        len(keys),
    )
    return scores + 0.5 * ties / 2.0**56


class ContaminationScores:
    """PyOD's scores, threshold and labels of a sensitive-privacy estimator (a mixin).

    Of :class:`~privad.sensitive.SensitiveAnomalyIdentifier`: it reads the estimator's
    released answers (``decision_function``), its fitted parameters
    (``_check_fitted()["contamination"]``) and its tie-break salt (drawn at ``fit``).

    Examples
    --------
    >>> from privad.datasets import load
    >>> from privad.sensitive import SensitiveAnomalyIdentifier
    >>> X = load("thyroid").X
    >>> est = SensitiveAnomalyIdentifier(
    ...     20, "private", 1.0, contamination=0.025, count_cap="auto", rng=0
    ... ).fit(X)
    >>> est.parameters_["source"], est.selection_.epsilon
    ('private', 1.0)
    >>> share = est.labels_.mean()  # the top 2.5 % of the released scores
    >>> bool(0.0125 <= share <= 0.05)
    True
    >>> [s.label.split(" (")[0] for s in est.ledger_.history()]
    ['private selection of r for', 'sp']
    """

    _tiebreak_salt: int | None
    n_records_: int
    add_query_to_data: bool

    def _scores(self, Q: Any, answers: np.ndarray) -> np.ndarray:
        """±1 from the released answers, plus the tie-break with a contamination."""
        from privad.sensitive.release import question_keys

        salt = self._tiebreak_salt
        if salt is None:
            return tiebreak_scores(answers, [], None)
        Qa = self._queries(Q)
        keys = (
            [i.to_bytes(8, "little") for i in range(self.n_records_)]
            if Qa is None
            else [bytes([bool(self.add_query_to_data)]) + k for k in question_keys(Qa)]
        )
        return tiebreak_scores(answers, keys, salt)

    @property
    def decision_scores_(self) -> np.ndarray:
        """PRIVATE. The fitted records' released scores (``decision_function()``): their
        first use releases the fitted records' answers (charged once to ``ledger_``), later
        uses read the recorded answers."""
        self._check_fitted()
        return self.decision_function()

    @property
    def threshold_(self) -> float:
        """PyOD's threshold on :attr:`decision_scores_`: with ``contamination`` c,
        :func:`privad.base.contamination_threshold` (post-processing); without, 0.0 (the
        released answers, the paper's rule)."""
        c = self._check_fitted()["contamination"]
        return 0.0 if c is None else contamination_threshold(self.decision_scores_, c)

    @property
    def labels_(self) -> np.ndarray:
        """PRIVATE. 0/1 labels of the fitted records: :attr:`decision_scores_` >
        :attr:`threshold_` (the released answers when ``contamination`` is None)."""
        return (self.decision_scores_ > self.threshold_).astype(np.int64)
