"""What the sensitive-privacy jobs report, as data and as a console summary.

* :class:`IdentificationReport`: one :func:`~privad.sensitive.identify` run described with
  the inputs it was given (``privad sp identify``): its ``to_dict()`` is the command's JSON,
  its ``rows`` and ``lines`` the summary table and the notes under it. The numbers computed
  from the queried records (Claim 5's m, the composed and the remaining ε) are kept apart as
  not for publication (:data:`NOT_FOR_PUBLICATION`).
* :func:`parameter_report`: (β, r) proposed for a data set, or r chosen by the ε-DP selection
  (:func:`~privad.sensitive.choose_parameters`), with how they were found and the
  ``privad sp identify`` command that uses them (``privad sp params``),
  :class:`ParameterReport`.

A report reads nothing and spends nothing beyond the job it describes; the feature scaling
is described by the caller (``describe_scaling``), who applied it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from privad.accounting import Ledger
from privad.noise import RandomnessLike
from privad.sensitive.jobs import Identification, ParameterChoice, Step, choose_parameters

__all__ = [
    "NOT_FOR_PUBLICATION",
    "IdentificationReport",
    "ParameterReport",
    "parameter_report",
]

NOT_FOR_PUBLICATION = (
    "Claim 5's m, the composed ε = min(n, m)·ε and the remaining ε are computed from the "
    "queried records (a bound on the most of them in one ball of radius r; without "
    "--queries they are the data's own records), so they are a function of the data and NOT "
    "private: they are for the data owner's accounting. Publish the labels, the parameters "
    "and the per-query ε, not these numbers."
)
"""What an identification report says of its data-dependent numbers (in ``to_dict()``: the
``not_for_publication`` object)."""

Rows = list[tuple[str, str]]


@dataclass(frozen=True)
class IdentificationReport:
    """An :class:`~privad.sensitive.Identification` with the inputs it was given: what
    ``privad sp identify`` prints.

    Attributes
    ----------
    result : the identification.
    data, dataset : the data as given (file, folder or catalogue name) and its name.
    queries : the query records as given, or None (the data's own records were asked).
    id_column : the id column carried to the output, or None.
    scaling : the public-bounds scaling applied to the features (``to_dict()``), or None.
    scheduler : the Dask scheduler's address, or None (a local cluster, or in memory).

    Examples
    --------
    >>> from privad.sensitive import DPMechanism, identify
    >>> from privad.sensitive.reports import IdentificationReport
    >>> res = identify([[0, 0], [0, 0.1], [3, 3]], DPMechanism(beta=1, r=0.5, epsilon=2.0),
    ...                ledger="rep.sqlite", scope="rep", output="rep.csv", budget=50.0, rng=1)
    >>> report = IdentificationReport(res, data="three.csv", dataset="three")
    >>> doc = report.to_dict()
    >>> doc["queries"], doc["answers"], doc["not_for_publication"]["epsilon"]
    ('the 3 record(s) of the data', 3, 4.0)
    >>> report.rows(lambda scaling: "none")[0]
    ('data', 'three: 3 records x 2 features')
    """

    result: Identification
    data: str
    dataset: str
    queries: str | None = None
    id_column: str | None = None
    scaling: Any = None
    scheduler: str | None = None

    def _inputs(self) -> tuple[str, str, str | None]:
        """The summary's data, queries and engine (None in memory) texts."""
        res, n_q = self.result, int(self.result.answers.size)
        data = f"{self.dataset}: {res.n_records} records x {res.n_features} features"
        if self.queries is None:
            queries = f"the {n_q} record(s) of the data"
        else:
            queries = f"{n_q} record(s) of {self.queries}"
        engine = None
        if res.partitions is not None:
            where = f"scheduler {self.scheduler}" if self.scheduler else "a local cluster"
            engine = (
                f"dask on {where} ({res.workers} worker(s)); answers sampled on this "
                "machine from the gathered counts (identical to --engine numba)"
            )
            data += f" in {res.partitions[0]} partition(s)"
            if self.queries is not None:
                queries += f" in {res.partitions[1]} partition(s)"
        if res.add_query_to_data:
            queries += " (each added to the data, footnote 1)"
        return data, queries, engine

    @property
    def warning(self) -> str | None:
        """The warning that the error-probability columns are not private, when written."""
        if not self.result.error_probabilities:
            return None
        return (
            "the error-probability columns are NOT PRIVATE (computed from the exact "
            "counts); use them for evaluation only, never release them."
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (``privad sp identify --json``)."""
        res, (data_text, queries_text, engine_text) = self.result, self._inputs()
        m, n_q = res.mechanism, int(res.answers.size)
        return {
            "command": "sp identify",
            "data": self.data,
            "dataset": data_text,
            "queries": queries_text,
            "engine": engine_text or "numba",
            "parameters": {
                "beta": m.beta,
                "r": m.r,
                "k": m.k,
                "metric": m.metric,
                "mechanism": m.name,
                "count_cap": m.count_cap,
                "epsilon": m.epsilon,
            },
            "parameters_from": res.parameters,
            "mechanism": m.guarantee.description,
            "answers": n_q,
            "flagged": res.flagged,
            "guarantee": {"notion": res.guarantee.notion, "epsilon_per_query": m.epsilon},
            "not_for_publication": {
                "note": NOT_FOR_PUBLICATION,
                "epsilon": res.guarantee.epsilon,
                "m": min(res.bound.m, n_q),
                "m_exact": bool(res.bound.exact),
                "remaining_epsilon": res.remaining,
            },
            "scope": res.scope,
            "ledger": res.ledger,
            "output": res.output,
            "id_column": self.id_column,
            "scaling": None if self.scaling is None else self.scaling.to_dict(),
            "note": res.note,
            "warning": self.warning,
        }

    def rows(self, describe_scaling: Callable[[Any], str]) -> Rows:
        """The summary table's (what, value) rows; ``describe_scaling(scaling)`` is the
        feature scaling's row."""
        res, m, bound = self.result, self.result.mechanism, self.result.bound
        n_q, (data_text, queries_text, engine_text) = int(res.answers.size), self._inputs()
        per_query = "ε-DP" if m.name == "dp" else f"(ε, k = {m.k})-sensitive privacy"
        k_text = f"k = {m.k}" + (" (unused by dp)" if m.name == "dp" else "")
        cap_note = "" if m.count_cap is None else f", count cap {m.count_cap}"
        exact = "exact" if bound.exact else f"between {bound.lower} and {bound.upper}"
        return [
            ("data", data_text),
            ("queries", queries_text),
            *([("engine", engine_text)] if engine_text else []),
            ("parameters", f"β = {m.beta}, r = {m.r:g}, {k_text}, metric {m.metric}{cap_note}"),
            ("(β, r) from", res.parameters["how"]),
            ("feature scaling", describe_scaling(self.scaling)),
            ("mechanism", m.guarantee.description),
            ("flagged as anomalies", f"{res.flagged} of {n_q} (noisy labels)"),
            ("guarantee", f"{per_query}: ε = {m.epsilon:g} per query"),
            (
                "composed (not for publication)",
                f"ε = {res.guarantee.epsilon:g} = min(n = {n_q}, m = {min(bound.m, n_q)}) × ε "
                f"(Claim 5: at most m queries in any ball of radius r; m {exact})",
            ),
            (
                "ledger (not for publication)",
                f"scope {res.scope!r} ({res.guarantee.notion}) in {res.ledger}: "
                f"remaining ε {res.remaining:g}",
            ),
            ("output", str(res.output)),
        ]

    @property
    def lines(self) -> list[str]:
        """The lines under the table: what is not for publication, the budget's note and
        the warning, if any."""
        lines = [f"Not for publication: {NOT_FOR_PUBLICATION}"]
        lines += [self.result.note] if self.result.note else []
        return lines + ([f"WARNING: {self.warning}"] if self.warning else [])


@dataclass(frozen=True)
class ParameterReport:
    """(β, r) for a data set (:func:`parameter_report`), with how they were found and the
    command that uses them: what ``privad sp params`` prints.

    Attributes
    ----------
    choice : the parameters and the records' (β, r)-anomalies (NOT private: exact counts).
    data : the data as given (a file, a folder or a catalogue name).
    dataset : the data set (``name``, ``X``, ``y``, ``feature_names``, ``n_anomalies``).
    scaling : the public-bounds scaling applied to the features (``to_dict()``), or None.
    metric, beta_fraction, share, contamination : as given to :func:`choose_parameters`.
    beta_given : whether β was given rather than proposed.
    options : the options that select the data's columns, repeated in :attr:`next`.
    """

    choice: ParameterChoice
    data: str
    dataset: Any
    scaling: Any
    metric: str
    beta_fraction: float
    share: float
    contamination: float | None = None
    beta_given: bool = False
    options: tuple[tuple[str, str], ...] = ()

    @property
    def labelled_anomalies(self) -> int | None:
        """How many of the labelled anomalies are (β, r)-anomalies (None without labels)."""
        y = self.dataset.y
        return None if y is None else int((self.choice.anomalies & (y == 1)).sum())

    @property
    def how(self) -> str:
        """How (β, r) were found."""
        if self.choice.selection is not None:
            how = self.choice.selection.provenance()["how"]
            return how + " (charged to the ledger as its own spend)"
        return (
            "β is the target share of n (round(c·n)), a fixed share (Table 1 has β/n ≈ "
            "0.005, the default without a target) or given, and r a quantile of the distance "
            "to the (β+1)-th nearest record (Knorr and Ng's DB(p, D) outliers; PyOD's KNN "
            "rule). Not private: it reads the raw data; use it on public or held-out data, or "
            "account for it separately (or use --private)."
        )

    @property
    def next(self) -> str:
        """The ``privad sp identify`` command with these (β, r), at ε = 0.1."""
        return (
            f"privad sp identify {shlex.quote(self.data)} --beta {self.choice.beta} "
            f"--r {self.choice.r:.6g} --epsilon 0.1"
            + "".join(f" {option} {shlex.quote(value)}" for option, value in self.options)
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (``privad sp params --json``)."""
        choice, ds, selection = self.choice, self.dataset, self.choice.selection
        return {
            "command": "sp params",
            "data": self.data,
            "dataset": ds.name,
            "records": ds.X.shape[0],
            "features": list(ds.feature_names),
            "metric": self.metric,
            "beta_fraction": self.beta_fraction,
            "anomaly_share": self.share,
            "beta": choice.beta,
            "r": choice.r,
            "br_anomalies": int(choice.anomalies.sum()),
            "labelled_anomalies": ds.n_anomalies,
            "labelled_br_anomalies": self.labelled_anomalies,
            "scaling": None if self.scaling is None else self.scaling.to_dict(),
            "private": selection is not None,  # r; the counts above never are
            "contamination": self.contamination,
            "selection": None if selection is None else selection.provenance(),
            "how": self.how,
            "next": self.next,
        }

    def rows(self, describe_scaling: Callable[[Any], str]) -> Rows:
        """The summary table's (what, value) rows; ``describe_scaling(scaling)`` is the
        feature scaling's row."""
        ds, beta, r, private = self.dataset, self.choice.beta, self.choice.r, self.choice.selection
        (n, d), flagged = ds.X.shape, int(self.choice.anomalies.sum())
        if private is not None:
            how_r = "ε-DP selection, see How)"
        else:
            how_r = f"smallest r leaving at most {self.share:g}·n records with B_x(i, r) <= β)"
        labelled = (
            "the data has no labels (use --label COL)"
            if ds.y is None
            else f"{ds.n_anomalies}; {self.labelled_anomalies} of them are (β, r)-anomalies"
        )
        return [
            ("data", f"{ds.name}: {n} records x {d} features"),
            ("feature scaling", describe_scaling(self.scaling)),
            (
                "proposed β",
                f"{beta} (given)"
                if self.beta_given
                else f"{beta} (= max(1, round({self.beta_fraction:g} × n)))",
            ),
            ("proposed r", f"{r:.6g} ({self.metric}; {how_r}"),
            (
                "(β, r)-anomalies" + (" (NOT PRIVATE)" if private is not None else ""),
                f"{flagged} of {n} records (ball counts include the record itself, Definition 2.2)",
            ),
            ("labelled anomalies", labelled),
        ]

    @property
    def lines(self) -> list[str]:
        """The lines under the table: how (β, r) were found and the next command."""
        return [f"How: {self.how}", f"Next: {self.next}"]


def parameter_report(
    dataset: Any,
    *,
    data: str,
    scaling: Any = None,
    anomaly_share: float | None = None,
    beta_fraction: float | None = None,
    options: Sequence[tuple[str, str | None]] = (),
    beta: int | None = None,
    metric: str = "euclidean",
    contamination: float | None = None,
    scope: str | None = None,
    private: bool = False,
    selection_epsilon: float | None = None,
    ledger: Ledger | str | os.PathLike[str] | None = None,
    budget: float | None = None,
    rng: RandomnessLike = None,
    step: Step | None = None,
) -> ParameterReport:
    """(β, r) for ``dataset`` by :func:`~privad.sensitive.choose_parameters`, reported.

    The target share c of anomalies is ``contamination`` or ``anomaly_share``
    (default 0.01, :func:`~privad.sensitive.parameters.target_share`); β = max(1,
    round(F·n)) with F ``beta_fraction``, by default c when a share is given, else Table 1's
    β/n = 0.005 (unless ``beta`` is given). With ``private``, r is chosen by the ε-DP
    selection and charged to ``scope`` (default: the dataset's name) of ``ledger``.

    Parameters
    ----------
    dataset : a data set with ``name``, ``X`` (scaled), ``y`` (or None), ``feature_names``
        and ``n_anomalies``, e.g. from :func:`privad.datasets.load`.
    data : the data as given (repeated in the next command).
    scaling : the public-bounds scaling applied to ``dataset.X``, or None.
    anomaly_share, beta_fraction : c and F above (None: their defaults).
    options : (option, value) pairs that select the data's columns, repeated in the next
        command when the value is not None or empty (e.g. ``("--label", "y")``).
    beta, metric, contamination, private, selection_epsilon, ledger, budget, rng, step : as
        for :func:`~privad.sensitive.choose_parameters`.
    scope : the scope charged with ``private`` (None: the dataset's name).

    Returns
    -------
    ParameterReport

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from privad.sensitive.reports import parameter_report
    >>> X = np.array([[0.0], [0.1], [0.2], [0.15], [5.0]])
    >>> ds = SimpleNamespace(name="toy", X=X, y=np.array([0, 0, 0, 0, 1]),
    ...                      feature_names=["x"], n_anomalies=1)
    >>> report = parameter_report(ds, data="toy.csv", beta=1, anomaly_share=0.2,
    ...                           options=[("--label", "y")])
    >>> report.labelled_anomalies, report.next
    (1, 'privad sp identify toy.csv --beta 1 --r 0.1 --epsilon 0.1 --label y')
    """
    from privad.sensitive.parameters import TABLE1_BETA_FRACTION, target_share

    share = target_share(anomaly_share, contamination)
    if beta_fraction is None:  # β = round(c·n) for a target share c, else Table 1's β/n
        given = (anomaly_share, contamination) != (None, None)
        beta_fraction = share if given else TABLE1_BETA_FRACTION
    choice = choose_parameters(
        dataset.X,
        beta_fraction=beta_fraction,
        share=share,
        beta=beta,
        metric=metric,
        contamination=contamination,
        private=private,
        selection_epsilon=selection_epsilon,
        ledger=ledger,
        scope=scope or dataset.name,
        budget=budget,
        rng=rng,
        step=step,
    )
    return ParameterReport(
        choice,
        data,
        dataset,
        scaling,
        metric,
        beta_fraction,
        share,
        contamination,
        beta is not None,
        tuple((option, value) for option, value in options if value),
    )
