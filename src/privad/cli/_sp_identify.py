"""What ``privad sp identify`` (:mod:`privad.cli.sp`) reads and prints around its one
library call, :func:`privad.sensitive.identify`: DATA and ``--queries`` opened for the
engine (in memory, or partitioned for ``--engine dask``), and the summary of the
:class:`~privad.sensitive.Identification`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privad.cli._data import align_queries, load_table, scale_features, scaling_text
from privad.cli._options import check_output_path
from privad.cli._render import emit, summary_table, warn
from privad.errors import DataError, ParameterError


@dataclass(frozen=True)
class Inputs:
    """The records and queries handed to :func:`privad.sensitive.identify`, and how the
    summary names them (``source``, ``queries_source``: DATA and ``--queries`` as given)."""

    source: str
    queries_source: str | None
    id_column: str | None
    data: Any
    queries: Any
    ids: Any
    name: str
    scaling: Any
    out: Path
    queries_text: str


def in_memory(
    data: str,
    queries: str | None,
    out: str | None,
    scope: str | None,
    mechanism: str,
    bounds: Any,
    table_options: dict[str, Any],
) -> Inputs:
    """``--engine numba``: DATA (and the queries, with DATA's features and public bounds)
    loaded in this process, and the output file checked (never one of the inputs)."""
    from privad.datasets import scale_to_bounds

    id_column = table_options["id_column"]
    ds, scaling = scale_features(load_table(data, **table_options), bounds)
    out_path = check_output_path(
        out if out is not None else f"{scope or ds.name}-{mechanism}-labels.csv", "--out"
    )
    for source in (data, queries):
        if (
            source is not None
            and Path(source).expanduser().exists()
            and out_path.resolve() == Path(source).expanduser().resolve()
        ):
            raise ParameterError(f"--out {str(out_path)!r} would overwrite the input {source!r}")
    if queries is None:
        text = f"the {ds.X.shape[0]} record(s) of the data"
        return Inputs(data, None, id_column, ds.X, None, ds.ids, ds.name, scaling, out_path, text)
    # the id column, if any, must be in the queries too
    q_table = load_table(queries, id_column=id_column)
    Q = align_queries(q_table, ds)
    if bounds:  # the same public map as the data (clip counts: the data's only)
        Q = scale_to_bounds(Q, bounds, ds.feature_names)[0]
    text = f"{Q.shape[0]} record(s) of {queries}"
    return Inputs(data, queries, id_column, ds.X, Q, q_table.ids, ds.name, scaling, out_path, text)


def partitioned(
    data: str,
    queries: str | None,
    out: str | None,
    scope: str | None,
    mechanism: str,
    **columns: Any,
) -> Inputs:
    """``--engine dask``: DATA and the queries opened as partitioned files (column names
    only; the workers read them), and the output folder checked."""
    from privad.distributed import open_partitioned

    for source, option in ((data, "DATA"), (queries, "--queries")):
        if source is not None and (
            Path(source).suffix.lower() in (".npy", ".npz", ".mat")
            or not (any(ch in source for ch in "*?[") or Path(source).expanduser().exists())
        ):
            raise DataError(
                f"--engine dask reads partitioned files: give {option} as a Parquet "
                f"folder or file, or CSV files (a file or a glob like 'data/*.csv'), "
                f"got {source!r}"
            )
    source = open_partitioned(data, **columns)
    q_source = None if queries is None else open_partitioned(queries)
    out_path = check_output_path(
        out if out is not None else f"{scope or source.name}-{mechanism}-labels", "--out", "folder"
    )
    return Inputs(data, queries, None, source, q_source, None, source.name, None, out_path, "")


NOT_FOR_PUBLICATION = (
    "Claim 5's m, the composed ε = min(n, m)·ε and the remaining ε are computed from the "
    "queried records (the most of them within 2r of one; without --queries they are the "
    "data's own records), so they are a function of the data and NOT private: they are for "
    "the data owner's accounting. Publish the labels, the parameters and the per-query ε, "
    "not these numbers."
)
"""What the summary says of its data-dependent numbers (``--json``: the
``not_for_publication`` object)."""


def print_summary(
    res: Any, inputs: Inputs, add: bool, errors: bool, scheduler: str | None, as_json: bool
) -> None:
    """The result: the released answers and public parameters, and, marked as not for
    publication (:data:`NOT_FOR_PUBLICATION`), the numbers computed from the queried records
    (Claim 5's m, the composed and the remaining ε)."""
    m, bound, n_q = res.mechanism, res.bound, int(res.answers.size)
    data, queries = inputs.source, inputs.queries_source
    data_text = f"{inputs.name}: {res.n_records} records x {res.n_features} features"
    queries_text, engine_text = inputs.queries_text, None
    if res.partitions is not None:
        where = f"scheduler {scheduler}" if scheduler else "a local cluster"
        engine_text = (
            f"dask on {where} ({res.workers} worker(s)); answers sampled on this "
            "machine from the gathered counts (identical to --engine numba)"
        )
        data_text += f" in {res.partitions[0]} partition(s)"
        queries_text = (
            f"the {n_q} record(s) of the data"
            if queries is None
            else f"{n_q} record(s) of {queries} in {res.partitions[1]} partition(s)"
        )
    if add:
        queries_text += " (each added to the data, footnote 1)"
    per_query = "ε-DP" if m.name == "dp" else f"(ε, k = {m.k})-sensitive privacy"
    warning = (
        "the error-probability columns are NOT PRIVATE (computed from the exact "
        "counts); use them for evaluation only, never release them."
        if errors
        else None
    )
    payload = {
        "command": "sp identify",
        "data": data,
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
            "m": min(bound.m, n_q),
            "m_exact": bool(bound.exact),
            "remaining_epsilon": res.remaining,
        },
        "scope": res.scope,
        "ledger": res.ledger,
        "output": res.output,
        "id_column": inputs.id_column,
        "scaling": None if inputs.scaling is None else inputs.scaling.to_dict(),
        "note": res.note,
        "warning": warning,
    }

    def render(console: Any) -> None:
        k_text = f"k = {m.k}" + (" (unused by dp)" if m.name == "dp" else "")
        cap_note = "" if m.count_cap is None else f", count cap {m.count_cap}"
        exact = "exact" if bound.exact else f"between {bound.lower} and {bound.upper}"
        console.print(
            summary_table(
                "privad sp identify",
                [
                    ("data", data_text),
                    ("queries", queries_text),
                    *([("engine", engine_text)] if engine_text else []),
                    (
                        "parameters",
                        f"β = {m.beta}, r = {m.r:g}, {k_text}, metric {m.metric}{cap_note}",
                    ),
                    ("(β, r) from", res.parameters["how"]),
                    ("feature scaling", scaling_text(inputs.scaling)),
                    ("mechanism", m.guarantee.description),
                    ("flagged as anomalies", f"{res.flagged} of {n_q} (noisy labels)"),
                    ("guarantee", f"{per_query}: ε = {m.epsilon:g} per query"),
                    (
                        "composed (not for publication)",
                        f"ε = {res.guarantee.epsilon:g} = min(n = {n_q}, m = "
                        f"{min(bound.m, n_q)}) × ε (Claim 5: at most m queries in any ball "
                        f"of radius r; m {exact})",
                    ),
                    (
                        "ledger (not for publication)",
                        f"scope {res.scope!r} ({res.guarantee.notion}) in {res.ledger}: "
                        f"remaining ε {res.remaining:g}",
                    ),
                    ("output", str(res.output)),
                ],
            )
        )
        console.print(f"Not for publication: {NOT_FOR_PUBLICATION}", markup=False)
        if res.note:
            console.print(res.note, markup=False)
        if warning:
            console.print(f"WARNING: {warning}", markup=False)

    if as_json and warning:
        warn(warning)
    emit(payload, as_json, render)
