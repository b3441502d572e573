"""The one call per job of ``privad search run``: a DP noisy binary search against an
oracle server or a local oracle over a data file, charged and summarised.

:func:`run_search` checks the options that depend on where the oracle is, opens a
:class:`~privad.services.remote_oracle.RemoteOracle` (a server) or reads the data and its
thresholds (:func:`resolve_thresholds`: given, or section 6.1's reduction of a labelled
series), searches with :func:`privad.search.ledger_search` (Algorithm 1, every answer
charged before it is released), writes the posterior if asked and returns a
:class:`SearchRun`: the summary as data (:meth:`SearchRun.to_dict`) and as rows of text.
``privad serve oracle`` reads its data with :func:`resolve_thresholds` too.

Examples
--------
>>> import numpy as np
>>> from privad.search import halting_rule
>>> np.save("v.npy", np.r_[np.linspace(0.0, 1.0, 63), 10.0])
>>> local = LocalData(t_low=1.0, t_high=5.0)
>>> rule = halting_rule(None, 20)
>>> run = run_search("v.npy", epsilon=1.0, local=local, seed=0, budget=20, halting=rule)
>>> run.to_dict()["top"][0]["item"], run.to_dict()["top"][0]["above_t_high"]
(63, True)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privad.datasets.sources import SeriesData, load_series
from privad.errors import ParameterError

__all__ = ["LocalData", "OracleValues", "SearchRun", "resolve_thresholds", "run_search"]


@dataclass(frozen=True)
class OracleValues:
    """What a local oracle or ``privad serve oracle`` holds: the values, t_ℓ < t_h, where
    the thresholds came from, and ``source_index`` (the position in DATA of each value;
    ``None``: every value of DATA, in order).

    Examples
    --------
    >>> OracleValues(np.zeros(3), 1.0, 2.0, "given").source_index is None
    True
    """

    values: np.ndarray
    t_low: float
    t_high: float
    how: str
    source_index: np.ndarray | None = None


def resolve_thresholds(
    data: SeriesData,
    t_low: float | None,
    t_high: float | None,
    derive: bool,
    labels_column: str | None,
) -> OracleValues:
    """The oracle's values and (t_ℓ, t_h): from ``--t-low/--t-high`` over all of DATA, or
    section 6.1's single-anomaly reduction of the labelled series
    (:func:`privad.experiments.search_problems.problem_from_labels`: the largest labelled
    point and the unlabelled ones, thresholds at 0.1 of the gap), as the library's
    reproduction does.

    Examples
    --------
    >>> data = SeriesData("s", np.array([0.1, 0.2, 3.0, 0.9]), np.array([0, 0, 1, 1]))
    >>> held = resolve_thresholds(data, None, None, True, None)
    >>> held.values.tolist(), round(held.t_low, 3), round(held.t_high, 3)
    ([0.1, 0.2, 3.0], 0.48, 2.72)
    """
    given = (t_low is not None, t_high is not None)
    if any(given):
        if not all(given):
            raise ParameterError("--t-low and --t-high go together")
        if derive:
            raise ParameterError("give either --t-low/--t-high or --derive-thresholds, not both")
        lo, hi = float(t_low), float(t_high)  # type: ignore[arg-type]
        if not hi > lo:
            raise ParameterError(f"--t-high must be > --t-low (eq. 1), got {t_high} <= {t_low}")
        return OracleValues(data.values, lo, hi, "given (--t-low/--t-high)")
    if not (derive or labels_column is not None):
        raise ParameterError(
            "the thresholds are needed: give --t-low L --t-high H (public knowledge), or "
            "--derive-thresholds to compute them from the labels (section 6.1; not private)"
        )
    if data.labels is None:
        raise ParameterError(
            f"--derive-thresholds needs labels, and {data.name!r} has none: give "
            "--labels-column COL, or --t-low/--t-high"
        )
    from privad.experiments.search_problems import problem_from_labels

    problem = problem_from_labels(data.values, data.labels, name=data.name)
    dropped = data.values.size - problem.n_items
    where = int(problem.source_index[problem.anomaly_index])  # type: ignore[index]
    how = (
        f"derived from the labels (section 6.1; reads the data, not private): the largest "
        f"labelled value at position {where}, {dropped} other labelled value(s) dropped, "
        f"threshold ratio {problem.threshold_ratio:.4g}"
    )
    return OracleValues(problem.values, problem.t_low, problem.t_high, how, problem.source_index)


@dataclass(frozen=True)
class SearchRun:
    """A finished search: where the oracle was, what it held, its thresholds, the search's
    summary (:meth:`privad.search.LedgerSearch.summary`, each top item marked whether the
    local data puts it at or above t_h) and the posterior file written (or None).

    Examples
    --------
    >>> run = SearchRun("server s", "10 items", "t", {"top": [], "notes": []}, None)
    >>> run.top_rows()
    []
    """

    oracle: str
    data: str
    thresholds: str
    summary: dict[str, Any]
    posterior_file: Path | None

    def to_dict(self) -> dict[str, Any]:
        """The run as data: what ``privad search run --json`` prints."""
        head = {"oracle": self.oracle, "data": self.data, "thresholds": self.thresholds}
        return {**head, **self.summary, "posterior_file": self.posterior_file}

    def rows(self) -> list[tuple[str, str]]:
        """The summary as (what, value) rows of text: the oracle, data, thresholds, queries
        and privacy spent (sequential composition of the answers), why it halted, the
        largest posterior, the budgets charged and the posterior file."""
        p, account = self.summary, self.summary["ledger_account"]
        rows = [
            ("oracle", f"{self.oracle}: {p['kind']}, ε = {p['epsilon_per_query']:g} per query"),
            ("data", self.data),
            ("thresholds", self.thresholds),
            ("queries T", str(p["queries"])),
            (
                "privacy spent Tε",
                f"{p['epsilon_spent']:g} (anomaly-restricted DP: ε-DP for every "
                f"non-anomalous record, sequential composition of {p['queries']} answers)",
            ),
            ("halted by", ", ".join(p["halted_by"]) or "—"),
            ("max posterior", f"{p['max_posterior']:.4g}"),
        ]
        if server := p["oracle_budget"]:
            rows.append(
                (
                    "oracle budget",
                    f"scope {server.get('scope')!r}: remaining ε "
                    f"{server.get('remaining'):g} of {server.get('total'):g}",
                )
            )
        if account is not None:
            text = f"scope {p['scope']!r} in {account['ledger'] or 'an in-memory ledger'}: "
            if account["delta"] is None:
                text += f"remaining ε {account['remaining']:g}"
            else:
                text += (
                    f"spent (ε {account['spent']:g}, δ {account['delta_spent']:g}) of "
                    f"(ε {account['total']:g}, δ {account['delta']:g}), composed tightly"
                )
            rows.append(("ledger", text))
        if p["recorded_epsilon"] is not None:
            rows.append(
                (
                    "ledger",
                    f"the oracle's own in-memory ledger, scope {p['scope']!r}: "
                    f"{p['queries']} answers recorded, ε {p['recorded_epsilon']:g}",
                )
            )
        if self.posterior_file is not None:
            rows.append(("posterior", str(self.posterior_file)))
        return rows

    def top_rows(self) -> list[tuple[str, str, str]]:
        """The most probable items as (rank, item, posterior) rows of text."""
        return [
            (
                str(row["rank"]),
                f"{row['item']}" + (" (x >= t_h in the local data)" if row["above_t_high"] else ""),
                f"{row['posterior']:.4g}",
            )
            for row in self.summary["top"]
        ]


@dataclass(frozen=True)
class LocalData:
    """How a local oracle reads its data: the value and label columns
    (:func:`privad.datasets.sources.load_series`) and the thresholds, given or derived from
    the labels (:func:`resolve_thresholds`). None of them applies to an oracle server.

    Examples
    --------
    >>> LocalData(t_low=1.0, t_high=5.0).given()
    ['--t-low', '--t-high']
    """

    column: str | None = None
    labels_column: str | None = None
    derive_thresholds: bool = False
    t_low: float | None = None
    t_high: float | None = None

    def given(self) -> list[str]:
        """The options given, by their command-line names."""
        values = {
            "--column": self.column,
            "--labels-column": self.labels_column,
            "--t-low": self.t_low,
            "--t-high": self.t_high,
            "--derive-thresholds": self.derive_thresholds or None,
        }
        return [flag for flag, value in values.items() if value is not None]

    def read(self, source: str) -> tuple[SeriesData, OracleValues]:
        """The series ``source`` and what its oracle holds."""
        data = load_series(source, column=self.column, labels_column=self.labels_column)
        t_low, t_high, labels = self.t_low, self.t_high, self.labels_column
        return data, resolve_thresholds(data, t_low, t_high, self.derive_thresholds, labels)


def _check_target(
    oracle: str,
    remote: bool,
    out: Path | None,
    token: str | None,
    eps: float | None,
    local: LocalData,
) -> None:
    """The options that depend on the oracle being a server or local data."""
    source = Path(oracle).expanduser()
    if out is not None and not remote and source.exists():
        if out.resolve() == source.resolve():
            raise ParameterError(f"--out {str(out)!r} would overwrite the input {oracle!r}")
    if not remote:
        if eps is None:
            raise ParameterError("--epsilon is required with local data: ε per query (e.g. 1)")
        return
    if given := local.given():
        raise ParameterError(f"{given[0]} applies to local data; the server holds the data")
    if token is None or not token.strip():
        raise ParameterError(
            "--token is required for an oracle server (or set $PRIVAD_ORACLE_TOKEN)"
        )


def run_search(
    oracle: str,
    *,
    epsilon: float | None = None,
    kind: str | None = None,
    local: LocalData = LocalData(),
    token: str | None = None,
    timeout: float = 30.0,
    ca_cert: str | None = None,
    seed: int | None = None,
    scope: str | None = None,
    out: str | Path | None = None,
    **search: Any,
) -> SearchRun:
    """Search for the anomaly with noisy group queries (Algorithm 1) and summarise.

    Parameters
    ----------
    oracle:
        An oracle server (``http://host:port``, ``privad serve oracle``) or local data (a
        file or series name, read as ``local`` says).
    epsilon:
        ε per query: required with local data; a server fixes its own (if given, it must
        match).
    kind:
        The oracle (:func:`privad.search.make_oracle`; default laplace); a server fixes its
        own (if given, it must match).
    local:
        How local data is read; nothing of it applies to a server.
    token, timeout, ca_cert:
        The server's token, seconds per request and the CA certificate that signed its TLS
        certificate.
    seed:
        Seed of the searcher's random order and, with local data, of the oracle's noise
        (tests only). None: OS entropy.
    scope:
        The ledger scope (default ``search/<data name>`` or ``search/<host:port>``).
    out:
        Where to write the posterior f_T as CSV (item,posterior), atomically; None: nowhere.
    **search:
        The search's options, as :func:`privad.search.ledger_search` takes them:
        ``budget`` and ``halting`` (required), ``delta``, ``ledger``, ``top_k``,
        ``selection``, ``progress``.

    Returns
    -------
    SearchRun
        The released answers' summary and the public parameters, nothing more.
    """
    from privad.noise import as_randomness
    from privad.search import ledger_search, make_oracle

    remote = oracle.strip().lower().startswith(("http://", "https://"))
    out = None if out is None else Path(out)
    _check_target(oracle, remote, out, token, epsilon, local)
    search_rng, oracle_rng = as_randomness(seed).spawn(2) if seed is not None else (None, None)
    with contextlib.ExitStack() as stack:
        items, above, make, orc = None, np.zeros(0, dtype=bool), None, None
        if remote:
            from privad.services.remote_oracle import RemoteOracle

            orc = stack.enter_context(
                RemoteOracle(oracle, token.strip(), timeout=timeout, verify=ca_cert or True)  # type: ignore[union-attr]
            )
            where, info = f"server {orc.base_url}", orc.description
            default_scope = f"search/{orc.base_url.split('://', 1)[-1]}"
            data_text = f"{orc.n_items} items held by the server"
            thresholds = (
                f"t_l = {float(info.get('t_low', 'nan')):.6g}, "
                f"t_h = {float(info.get('t_high', 'nan')):.6g} (the server's)"
            )
        else:
            data, held = local.read(oracle)
            where, default_scope = f"local data {oracle}", f"search/{data.name}"
            data_text = f"{data.name}: {data.values.size} values" + (
                "" if held.source_index is None else f", {held.values.size} held by the oracle"
            )
            thresholds = f"t_l = {held.t_low:.6g}, t_h = {held.t_high:.6g}, {held.how}"
            items, above = held.source_index, held.values >= held.t_high

            def make(book: Any, scope: str) -> Any:
                return make_oracle(
                    kind or "laplace",
                    held.values,
                    held.t_low,
                    held.t_high,
                    epsilon,
                    rng=oracle_rng,
                    ledger=book,
                    scope=scope,
                )

        done = ledger_search(
            orc,
            make_oracle=make,
            scope=scope if scope is not None else default_scope,
            epsilon=epsilon,
            kind=kind,
            label=f"privad search run against {where}",
            rng=search_rng,
            **search,
        )
        if out is not None:
            done.write_posterior(out, items)
        summary = done.summary(items)
    for row, i in zip(summary["top"], done.result.top, strict=True):
        row["above_t_high"] = bool(i < above.size and above[i])
    return SearchRun(where, data_text, thresholds, summary, out)
