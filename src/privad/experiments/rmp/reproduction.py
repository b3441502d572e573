"""The whole reproduction of RMP's section 6, one page.

:func:`reproduce` fills the skeleton of :class:`~privad.experiments.report.Reproduction`
with one section function per part of the page (data, Table 1 and its held-out check, the
effect of r, timing, the attacks of section 5), each with its prose beside its tables.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privad.errors import DatasetNotFoundError, ParameterError
from privad.experiments.report import Progress, Reproduction, Section, Step
from privad.experiments.rmp.data import (
    _NA,
    ALPHAS,
    DATASETS,
    N_FIRST,
    R_FRACTIONS,
    DataCache,
    _check_alphas,
    _check_datasets,
)
from privad.experiments.rmp.fits import FitSpec, auc_table, evaluate, roc_curves
from privad.experiments.rmp.tables import (
    dimension_specs,
    dimension_summary,
    draw_dimension,
    draw_roc,
    draw_table1,
    table1_display,
    table1_specs,
    table1_summary,
    timing_table,
)
from privad.rmp.estimator import DEFAULT_EPOCHS
from privad.validation import check_int


def privacy_available() -> bool:
    """Whether :mod:`privad.experiments.rmp_privacy` (the attack evaluation) is installed."""
    return importlib.util.find_spec("privad.experiments.rmp_privacy") is not None


@dataclass
class _Run:
    """What the sections of one run share: the choices, the data and the fits so far."""

    names: list[str]
    present: list[str]
    skipped: dict[str, str]
    cache: DataCache
    seed: int
    seed_list: list[int]
    epochs: int
    options: dict[str, Any]
    quick: bool
    dimension_alpha: float
    fractions: tuple[float, ...]
    t1_specs: list[FitSpec]
    dim_specs: list[FitSpec]
    ho_specs: list[FitSpec]
    auc: pd.DataFrame = field(default_factory=pd.DataFrame)
    dim_scores: pd.DataFrame = field(default_factory=pd.DataFrame)

    def fit(self, r: Reproduction, specs: list[FitSpec], protocol: str = "same") -> pd.DataFrame:
        """Every fit of ``specs``, one progress unit each."""
        df = evaluate(
            specs,
            epochs=self.epochs,
            protocol=protocol,
            cache=self.cache,
            progress=r.progress,
            progress_offset=r.done,
            progress_total=r.total,
            **self.options,
        )
        r.done += len(specs)
        return df


def _data_section(r: Reproduction, run: _Run) -> Section:
    rows = []
    for name in run.names:
        spec = DATASETS[name]
        row: dict[str, Any] = {
            "dataset": name,
            "title": spec.title,
            "paper_row": spec.paper_row or "—",
            "relation": spec.relation,
        }
        if name in run.skipped:
            row.update({"status": "skipped", "note": run.skipped[name]})
        else:
            d = run.cache.get(name, run.seed_list[0])
            y = np.asarray(d.y)
            row.update(
                {
                    "status": "used",
                    "records": int(y.size),
                    "normal": int((y == 0).sum()),
                    "anomalies": int(y.sum()),
                    "n": int(d.X.shape[1]),
                    "w (r = 1)": int(d.X.shape[1]) - 1,
                    "note": spec.note,
                }
            )
        rows.append(row)
    data_table = r.keep("datasets", pd.DataFrame(rows))
    return Section.of_kept(
        "datasets",
        "Data",
        text=[
            f"The first {run.cache.n_first} records of each dataset, every feature min-max "
            "scaled to [0, 1], then 5 % U(0, 1) anomalies appended (label 1), as section 6 says "
            "(privad.datasets.inject_uniform_anomalies). The anomalies are drawn anew for "
            "every seed. HARS and Opportunity are not available offline: scikit-learn's "
            "digits (64-D) and breast cancer (30-D) stand in for them; the 8-D Banana is our "
            "reconstruction of the paper's generator; the Gas file holds 128 of the paper's "
            "168 features.",
            *(f"Skipped {k}: {v}" for k, v in run.skipped.items()),
        ],
        tables=[("Datasets", data_table)],
        data="the table",
    )


def _table1_sections(r: Reproduction, run: _Run) -> list[Section]:
    scores = run.fit(r, run.t1_specs)
    run.auc = auc = auc_table(scores)
    run.dim_scores = run.fit(r, run.dim_specs) if run.dim_specs else scores.iloc[0:0]
    ho_auc = auc_table(run.fit(r, run.ho_specs, "holdout")) if run.ho_specs else auc.iloc[0:0]
    r.keep("table1", auc)
    summary = r.keep("table1_summary", table1_summary(pd.concat([auc, ho_auc], ignore_index=True)))
    r.report.save_figure("table1.png", draw_table1(summary))
    roc = r.keep("roc", roc_curves(scores))
    figures = []
    for name in run.present:
        file = f"roc_{name}.png"
        r.report.save_figure(file, draw_roc(roc, name))
        figures.append(
            (
                file,
                f"{DATASETS[name].title}: ROC of Raw and RMP at each α "
                f"(r = 1, seed {run.seed_list[0]})",
            )
        )
    sections = [
        Section(
            "Table 1: AUC of Raw and RMP (r = 1)",
            text=[
                "Protocol: every detector is trained on all records of the dataset (anomalies "
                "included, in random batches of 30 records per participant, each participant "
                "with its own T_i) and scores the same records, as the paper's unsupervised "
                f"setup implies. AANN: hidden units ≈ half the inputs, {run.epochs} epochs, "
                "learning rate 0.25, momentum 0.85, weights in [−0.1, 0.1], squared error "
                "averaged over the outputs, SGD mini-batches of 32 (privad.rmp defaults"
                + (f"; changed: {run.options}" if run.options else "")
                + "). AUC: ROC AUC "
                f"of the reconstruction error; mean ± sd over {len(run.seed_list)} seed(s) (new "
                "anomalies, T, Δ_i and initial weights per seed).",
                "The paper's rows for HARS and Opportunity are compared with stand-ins (digits, "
                "breast cancer): only the trend can be compared, not the values.",
            ],
            tables=[("Ours beside the paper", table1_display(summary))],
            figures=[
                (
                    "table1.png",
                    "AUC against α; crosses: the paper's value for the corresponding row",
                ),
                *figures,
            ],
            files=[
                (
                    "table1.csv",
                    "one row per fit (AUC, detection and false-alarm rate of the "
                    "μ + 3σ threshold, timings)",
                ),
                ("table1_summary.csv", "mean and sd over seeds, paper's value beside"),
                ("roc.csv", "the ROC points of the figures"),
            ],
        )
    ]
    if run.ho_specs:
        sections.append(_holdout_section(r, run, summary))
    return sections


def _holdout_section(r: Reproduction, run: _Run, summary: pd.DataFrame) -> Section:
    same = summary[summary["protocol"] == "same"].set_index(["dataset", "method", "alpha"])
    ho = summary[summary["protocol"] == "holdout"].copy()
    ho["auc_same"] = [
        same.loc[(d, m, a), "auc_mean"] if (d, m, a) in same.index else _NA
        for d, m, a in zip(ho["dataset"], ho["method"], ho["alpha"], strict=True)
    ]
    ho = ho[["dataset", "method", "alpha", "n", "w", "auc_mean", "auc_same"]].rename(
        columns={"auc_mean": "auc_holdout"}
    )
    r.keep("holdout", ho)
    return Section.of_kept(
        "holdout",
        "Check: a held-out half",
        text=[
            f"Seed {run.seed_list[0]} only: each detector is trained on a stratified random "
            "half of the records and scores the other half; auc_same is Table 1's "
            "value (trained and scored on all records, mean over seeds)."
        ],
        tables=[("Held-out AUC beside Table 1's", ho)],
        data="the table",
    )


def _dimension_section(r: Reproduction, run: _Run) -> Section:
    parts = [run.auc, auc_table(run.dim_scores)] if len(run.dim_scores) else [run.auc]
    dim = r.keep(
        "dimension",
        dimension_summary(pd.concat(parts, ignore_index=True), run.dimension_alpha),
        draw_dimension,
    )
    shares = ", ".join("1 attribute" if f == 0 else f"{100 * f:g} %" for f in run.fractions)
    return Section.of_kept(
        "dimension",
        "The effect of r = n − w",
        text=[
            f"RMP at α = {run.dimension_alpha:g} with r/n ∈ {{{shares}}}"
            " (r = max(1, round(f·n)), at most n − 1; for the 2-D Banana only r = 1 exists). "
            "The paper: for large n, 'reducing n by 40 % only decreases accuracy by about "
            "1 %'; for Abalone and Banana 'reducing the data dimensionality by half might "
            "result in a 10 % reduction'. It does not say which α; we use "
            f"{run.dimension_alpha:g}.",
        ],
        tables=[("AUC against r", dim)],
        figure="AUC against r/n per dataset",
        data="the table",
    )


def _timing_section(r: Reproduction, run: _Run) -> Section:
    timing = r.keep("timing", timing_table(run.auc))
    return Section.of_kept(
        "timing",
        "Timing",
        text=[
            "Mean training time per fit and the end-user's scoring throughput (double "
            "logistic, public T, the AANN's reconstruction error) on this machine. "
            "benchmarks/bench_rmp.py compares with other detectors on larger inputs."
        ],
        tables=[("Per dataset and method (r = 1)", timing)],
        data="the table",
    )


def _privacy_sections(r: Reproduction, run: _Run) -> list[Section]:
    """The attack evaluation, run into the same folder; its sections join our page.

    :func:`privad.experiments.rmp_privacy.reproduce_privacy` writes ``privacy_*.csv``,
    ``privacy_*.png`` and its own ``privacy.html`` beside our files; its sections' links are
    relative to that folder, so they are added to our page as they are.
    """
    from privad.experiments import rmp_privacy  # type: ignore[attr-defined]

    sub = None if r.progress is None else (lambda step, _d, _t: r.say(f"privacy: {step}"))
    result = rmp_privacy.reproduce_privacy(
        r.directory, seed=run.seed, quick=run.quick, progress=sub
    )
    r.report.written.extend(Path(p) for p in result.get("files", []))
    return list(result.get("sections", []))


def _privacy_skipped(privacy: bool) -> Section:
    why = (
        "skipped on request (--skip-privacy)"
        if not privacy
        else "privad.experiments.rmp_privacy is not installed in this version"
    )
    return Section("Privacy: attacks of section 5", text=[f"Not run: {why}."])


def reproduce(
    out_dir: str | Path,
    *,
    datasets: Iterable[str] = tuple(DATASETS),
    alphas: Iterable[float] = ALPHAS,
    seeds: int = 5,
    seed: int = 0,
    epochs: int | None = None,
    gas_path: str | Path | None = None,
    quick: bool = False,
    privacy: bool = True,
    holdout: bool = True,
    dimension_alpha: float = 0.1,
    progress: Progress = None,
    command: str = "",
    detector_options: dict[str, Any] | None = None,
) -> list[Path]:
    """Run section 6 and write CSVs, PNGs and ``index.html`` into ``out_dir``; the files.

    Parameters
    ----------
    out_dir
        the output folder (created if missing; files in it are replaced).
    datasets
        names of :data:`DATASETS`; ``gas`` is skipped with a note when its file is
        not found (``gas_path`` given and missing is an error).
    alphas
        Table 1's α values.
    seeds
        repetitions (seeds ``seed .. seed + seeds − 1``); mean ± sd over them.
    seed
        the first seed.
    epochs
        AANN epochs (default the estimators' :data:`~privad.rmp.estimator.
        DEFAULT_EPOCHS`, 300, the low end of the paper's 300–1000, which ``docs/rmp.md``
        measured as the better choice; 15 with ``quick``).
    quick
        a small run for tests (1 seed, 15 epochs, 300 records per dataset, r study
        on two fractions, no held-out check).
    privacy
        also run the attack evaluation (:mod:`privad.experiments.rmp_privacy`,
        files ``privacy_*`` and ``privacy.html`` in ``out_dir``, its sections on our page)
        when it is installed.
    holdout
        also run Table 1 with the held-out protocol (first seed only).
    dimension_alpha
        α of the r study.
    progress
        ``progress(step, done, total)`` before each fit and at the end.
    command
        the command line, shown on the page.
    detector_options
        passed to both detectors (:class:`~privad.rmp.estimator.
        RMPDetector`, :class:`~privad.rmp.estimator.AANNDetector`), for example
        ``{"input_scaling": "zscore"}``; default: their defaults.

    Raises
    ------
    ParameterError
        bad arguments (before anything is written).
    DatasetNotFoundError
        ``gas_path`` given but not found.
    """
    from privad.rmp.perturbation import check_alpha

    names = _check_datasets(datasets)
    alpha_list = _check_alphas(alphas)
    if not alpha_list:
        raise ParameterError("alphas must hold at least one α with 0 < α < 1")
    seeds = check_int(seeds, "seeds", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    epochs = (
        (15 if quick else DEFAULT_EPOCHS)
        if epochs is None
        else check_int(epochs, "epochs", minimum=1)
    )
    dimension_alpha = check_alpha(dimension_alpha)
    seed_list = [seed] if quick else list(range(seed, seed + seeds))
    fractions = (0.0, 0.5) if quick else R_FRACTIONS
    cache = DataCache(gas_path=gas_path, n_first=300 if quick else N_FIRST)
    if gas_path is not None and "gas" in names:
        cache.get("gas", seed_list[0])  # an explicit path that does not load is an error
    present, skipped = cache.available(names, seed_list[0])
    if not present:
        raise DatasetNotFoundError(
            "none of the datasets could be loaded: "
            + "; ".join(f"{k}: {v}" for k, v in skipped.items())
        )
    run = _Run(
        names=names,
        present=present,
        skipped=skipped,
        cache=cache,
        seed=seed,
        seed_list=seed_list,
        epochs=epochs,
        options=dict(detector_options or {}),
        quick=quick,
        dimension_alpha=dimension_alpha,
        fractions=tuple(fractions),
        t1_specs=table1_specs(present, alpha_list, seed_list),
        dim_specs=dimension_specs(
            cache,
            present,
            seed_list,
            alpha=dimension_alpha,
            fractions=fractions,
            skip_r1=any(np.isclose(alpha_list, dimension_alpha)),
        ),
        ho_specs=(
            table1_specs(present, alpha_list, seed_list[:1]) if holdout and not quick else []
        ),
    )
    do_privacy = privacy and privacy_available()
    r = Reproduction(
        out_dir, "RMP (Erfani et al., PAKDD 2014): section 6 reproduction", progress=progress
    )
    fits = len(run.t1_specs) + len(run.dim_specs) + len(run.ho_specs)
    r.run(
        [
            Step("data", lambda r: _data_section(r, run), 0),
            Step("Table 1", lambda r: _table1_sections(r, run), fits),
            Step("the effect of r", lambda r: _dimension_section(r, run), 0),
            Step("timing", lambda r: _timing_section(r, run), 0),
            Step("privacy: attacks (section 5)", lambda r: _privacy_sections(r, run), 1)
            if do_privacy
            else Step("privacy: not run", lambda r: _privacy_skipped(privacy), 0),
        ]
    )
    return r.finish(
        [
            r.provenance(
                "quick" if quick else "full",
                f"seeds {seed_list[0]}..{seed_list[-1]}; {epochs} epochs",
                command=command,
            ),
            "Paper: Erfani, Law, Karunasekera, Leckie, Palaniswami, 'Privacy-preserving "
            "collaborative anomaly detection for participatory sensing' (PAKDD 2014), section 6. "
            "Discussion of the differences: docs/rmp_reproduction.md.",
        ]
    )
