"""Benchmark: what privacy costs in finding anomalies on public labelled data.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_utility.py                # all; writes docs/utility.md
    .venv/bin/python benchmarks/bench_utility.py --only relaxed # redo one, reuse the rest
    .venv/bin/python benchmarks/bench_utility.py --fresh        # recompute every result
    .venv/bin/python benchmarks/bench_utility.py --quick        # smoke run: wbc, ε 1, α 0.1

Every private detector of privad that takes a table of records (sensitive privacy's SP
labels and the paper's ε-DP baseline with r read off the data, SP with r chosen by the
ε-DP selection, the relaxed-DP pipeline, RMP) and RMP's non-private anchor, the same
autoencoder on the raw records, against PyOD's KNN, IForest, ECOD and LOF on the eleven
ODDS sets (``--odds``, default ``../shared/datasets/odds``) and scikit-learn's breast
cancer set (malignant = anomaly), at ε ∈ {0.1, 0.5, 1, 2} (RMP, which has no ε:
α ∈ {0.01, 0.1, 0.2}). Per row: ROC AUC of the released scores, F1 and the share flagged by
the labels at the true contamination c, the same for the detector's own (paper) rule, the
privacy statement its ledger (or guarantee) gives, and where its parameters came from. The
noisy binary search does not apply: it finds the one anomaly of a series against public
thresholds, not anomalies among records.

Labels at the contamination: every estimator is given PyOD's ``contamination=c`` and its
own ``predict`` is used (the top c share of its released scores,
:func:`privad.base.contamination_threshold`: post-processing, no privacy cost). The
detector's own rule is measured beside it on the same release: SP's released answers (the
paper's labels), the relaxed pipeline's corrected superset ``candidates_``, RMP's and the
raw AANN's θ = μ + 3σ. Each row charges a ledger scope of its own (estimators fitted on the
same records in one process share one in-memory ledger), so its statement is its own.

Features are min-max scaled from the data (not private: see docs/scaling.md) unless
``--bounds DIR`` holds ``<set>.csv`` or ``<set>.json`` with public bounds of the columns
``x0, x1, ...`` (:func:`privad.datasets.read_bounds`, :func:`privad.datasets.scale_to_bounds`).
Sets above ``--max-records`` rows are subsampled (stratified, fixed seed) so that the whole
run fits in well under 30 minutes on two shared cores; one seeded run per row.

Each result is saved as JSON under ``--cache`` (one file per set, detector and ε or α) as
soon as it is computed; a rerun reuses every saved result made with the same settings and
recomputes only the detectors named by ``--only`` (or everything with ``--fresh``). The page
(``--out``) and its figures (``utility.png``: F1 at c against ε per set, ``utility_auc.png``:
ROC AUC) are written from the saved results of the whole configuration.

A benchmark, never a test: its numbers depend on seeds and on the code of the day.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ODDS = ROOT.parent / "shared" / "datasets" / "odds"
CACHE = ROOT / "benchmarks" / "results" / "utility"
READING = ROOT / "benchmarks" / "utility_reading.md"
ODDS_SETS = (
    "annthyroid",
    "breastw",
    "cardio",
    "letter",
    "mammography",
    "pendigits",
    "pima",
    "satimage-2",
    "shuttle",
    "thyroid",
    "wbc",
)
SETS = (*ODDS_SETS, "breast-cancer")
EPSILONS = (0.1, 0.5, 1.0, 2.0)
ALPHAS = (0.01, 0.1, 0.2)
SEED = 20270027
COMMAND = ".venv/bin/python benchmarks/bench_utility.py"


# -- data ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # hashed by identity: load() makes one per set
class Data:
    """One labelled set as the detectors see it."""

    name: str
    X: np.ndarray
    y: np.ndarray
    n_full: int
    scaling: str

    @property
    def contamination(self) -> float:
        return float(self.y.mean())


def _raw(name: str, odds: Path) -> tuple[np.ndarray, np.ndarray]:
    if name == "breast-cancer":
        from sklearn.datasets import load_breast_cancer

        bc = load_breast_cancer()
        return bc.data.astype(np.float64), (bc.target == 0).astype(np.int64)  # malignant
    from privad.datasets import load_odds

    ds = load_odds(odds / f"{name}.mat")
    return np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y, dtype=np.int64)


def _subsample(y: np.ndarray, size: int, seed: int) -> np.ndarray:
    """Row indices of a stratified sample of ``size`` rows (the anomaly share kept)."""
    from privad.noise import as_randomness

    rng = as_randomness(seed)
    out = np.flatnonzero(y == 1)
    keep = max(1, round(size * out.size / y.size))
    inl = np.flatnonzero(y == 0)
    rows = np.concatenate([rng.permutation(out)[:keep], rng.permutation(inl)[: size - keep]])
    return np.sort(rows)


def _scale(name: str, X: np.ndarray, bounds: Path | None) -> tuple[np.ndarray, str]:
    """Public bounds from ``bounds/<name>.csv|json`` when there, else min-max from the data."""
    from privad.datasets import read_bounds, scale_to_bounds
    from privad.datasets.preprocessing import minmax_scale

    for suffix in (".csv", ".json"):
        path = None if bounds is None else bounds / f"{name}{suffix}"
        if path is not None and path.exists():
            names = [f"x{j}" for j in range(X.shape[1])]
            scaled, report = scale_to_bounds(X, read_bounds(path), names)
            left = len(names) - len(report.scaled)
            return scaled, (
                f"public bounds ({path.name}; {report.clipped} value(s) clipped"
                + (f"; {left} column(s) unbounded, in their own units" if left else "")
                + ")"
            )
    return minmax_scale(X), "min-max from the data (not private)"


@cache
def load(name: str, odds: Path, bounds: Path | None, max_records: int, seed: int) -> Data:
    X, y = _raw(name, odds)
    n_full = int(y.size)
    if n_full > max_records:
        rows = _subsample(y, max_records, seed)
        X, y = X[rows], y[rows]
    X, scaling = _scale(name, X, bounds)
    return Data(name, X, y, n_full, scaling)


# -- results ---------------------------------------------------------------------------------


def _metrics(y: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import f1_score, roc_auc_score

    labels = np.asarray(labels).astype(np.int64)
    return {
        "auc": float(roc_auc_score(y, scores)) if np.ptp(scores) > 0 else 0.5,
        "f1": float(f1_score(y, labels, zero_division=0.0)),
        "flagged": float(labels.mean()),
    }


def _own(y: np.ndarray, labels: np.ndarray | None) -> dict[str, float | None]:
    """F1 and share flagged of the detector's own decision rule (None when not measured)."""
    if labels is None:
        return {"own_f1": None, "own_flagged": None}
    from sklearn.metrics import f1_score

    labels = np.asarray(labels).astype(np.int64)
    return {
        "own_f1": float(f1_score(y, labels, zero_division=0.0)),
        "own_flagged": float(labels.mean()),
    }


def _takes(Est: type, parameter: str) -> bool:
    """Whether the estimator class has this constructor parameter."""
    import inspect

    return parameter in inspect.signature(Est.__init__).parameters


def _ledger_statement(est: Any) -> str:
    """The guarantee of every spend of the estimator's scope in its ledger, as one line."""
    return "; ".join(f"{s.guarantee.summary()} charged" for s in est.ledger_.history(est.scope_))


def _scope(data: Data, what: str, epsilon: float) -> str:
    """A scope of its own per row: estimators fitted on the same records in this process
    share one in-memory ledger (privad.base), so each row reads only its own spends."""
    return f"bench-utility/{data.name}/{what}/eps{epsilon:g}"


def _c(data: Data) -> float:
    """The set's contamination as the estimators take it (PyOD's range (0, 0.5])."""
    return min(data.contamination, 0.5)


def _at_contamination(
    est: Any,
    query: Any,
    data: Data,
    own: Callable[[np.ndarray], np.ndarray] | None = None,
) -> dict[str, Any]:
    """Fit has run with ``contamination=c``; release the scores and labels of the fitted
    records and measure them. ``own(scores)``: the detector's own decision rule (None when
    it has none besides the contamination)."""
    scores = np.asarray(est.decision_function(query), dtype=np.float64)
    labels = np.asarray(est.predict(query))
    return {
        **_metrics(data.y, scores, labels),
        **_own(data.y, None if own is None else own(scores)),
        "labels_at_c": "the estimator's contamination",
    }


# -- the detectors ---------------------------------------------------------------------------


def _sensitive(mechanism: str, r: str) -> Callable[[Data, float, int, int], dict[str, Any]]:
    """SP (or its DP baseline) with r read off the data (``"data"``) or chosen privately;
    β = round(c·n) from the public c and n (:func:`privad.sensitive.parameters.default_beta`)."""

    def run(data: Data, epsilon: float, seed: int, _epochs: int) -> dict[str, Any]:
        from privad.sensitive import SensitiveAnomalyIdentifier as Est
        from privad.sensitive.parameters import default_beta

        scope = _scope(data, f"{mechanism}-{r}", epsilon)
        beta = default_beta(_c(data), data.y.size)
        est = Est(
            beta,
            r,
            epsilon,
            mechanism=mechanism,
            contamination=_c(data),
            count_cap="auto",
            rng=seed,
            scope=scope,
        ).fit(data.X)
        # the paper's rule: the released answers themselves (score ±1 + tie-break > 0)
        out = _at_contamination(est, None, data, own=lambda scores: scores > 0.0)
        p = est.parameters_
        return {
            **out,
            "statement": _ledger_statement(est),
            "parameters": f"β = {beta} (round(c·n), public), r = {p['r']:.4g} ({p['source']}: "
            + (
                "read off the data by propose_parameters, not private"
                if p["source"] == "data"
                else "ε-DP selection on the public grid for [0, 1] features, charged"
            )
            + f"), aimed at c = {_c(data):.3f} (public input)",
        }

    return run


def _relaxed(data: Data, epsilon: float, seed: int, _epochs: int) -> dict[str, Any]:
    from privad.errors import PrivacyWarning
    from privad.relaxed import RelaxedDPDetector as Est

    with warnings.catch_warnings():  # no history: said in the row's parameters
        warnings.simplefilter("ignore", PrivacyWarning)
        est = Est(
            epsilon=epsilon,
            global_sensitivity=1.0,
            contamination=_c(data),
            scores="projection",
            rng=seed,
            scope=_scope(data, "relaxed", epsilon),
        ).fit(data.X)
    out = _at_contamination(est, data.X, data, own=lambda _scores: est.candidates_)
    return {
        **out,
        "statement": _ledger_statement(est),
        "parameters": "global sensitivity 1 (the [0, 1] domain), projection scores (p_o = "
        "10); relaxed sensitivities, DBSCAN's calibration, w_O and ρ from the data (no "
        "history: not private); own rule: the paper's corrected superset (candidates_)",
    }


def _aann_rule(est: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The paper's θ = μ + 3σ of the training errors as the own rule."""
    from privad.rmp.aann import threshold as paper_threshold

    if hasattr(est, "model_"):  # RMP: θ of the server's errors on the perturbed records
        theta = est.model_.threshold
    else:  # the raw autoencoder: θ of its own training errors
        theta = paper_threshold(est.decision_scores_)
    return lambda scores: scores > theta


def _rmp(data: Data, alpha: float, seed: int, epochs: int) -> dict[str, Any]:
    from privad.rmp import RMPDetector as Est

    est = Est(alpha=alpha, epochs=epochs, random_state=seed, contamination=_c(data))
    est.fit(data.X)
    return {
        **_at_contamination(est, data.X, data, own=_aann_rule(est)),
        "statement": est.guarantee.summary(),
        "parameters": f"AANN, {epochs} epochs; records in [0, 1] as RMP requires; own rule μ + 3σ",
    }


def _aann(data: Data, _param: float, seed: int, epochs: int) -> dict[str, Any]:
    from privad.rmp import AANNDetector as Est

    est = Est(epochs=epochs, random_state=seed, contamination=_c(data)).fit(data.X)
    return {
        **_at_contamination(est, data.X, data, own=_aann_rule(est)),
        "statement": "none (not private)",
        "parameters": f"the same AANN on the raw records, {epochs} epochs (RMP's anchor); "
        "own rule μ + 3σ",
    }


def _pyod(cls_path: str) -> Callable[[Data, float, int, int], dict[str, Any]]:
    def run(data: Data, _param: float, seed: int, _epochs: int) -> dict[str, Any]:
        import importlib

        module, _, name = cls_path.rpartition(".")
        Est = getattr(importlib.import_module(module), name)
        kw = {"random_state": seed} if _takes(Est, "random_state") else {}
        est = Est(contamination=_c(data), **kw).fit(data.X)
        return {
            **_metrics(data.y, est.decision_scores_, est.labels_),
            **_own(data.y, None),
            "labels_at_c": "PyOD's contamination",
            "statement": "none (not private)",
            "parameters": "PyOD defaults",
        }

    return run


@dataclass(frozen=True)
class Detector:
    name: str
    title: str
    param: str  # "ε", "α" or "" (one run per set)
    run: Callable[[Data, float, int, int], dict[str, Any]]


DETECTORS = (
    Detector("sp", "SP (sensitive privacy), r from the data", "ε", _sensitive("sp", "data")),
    Detector("dp", "DP baseline of the SP paper, r from the data", "ε", _sensitive("dp", "data")),
    Detector("sp-private", "SP, r chosen privately", "ε", _sensitive("sp", "private")),
    Detector("relaxed", "relaxed-DP pipeline (DBSCAN, projection scores)", "ε", _relaxed),
    Detector("rmp", "RMP (AANN on perturbed records)", "α", _rmp),
    Detector("aann", "raw AANN (not private)", "", _aann),
    Detector("knn", "PyOD KNN", "", _pyod("pyod.models.knn.KNN")),
    Detector("iforest", "PyOD IForest", "", _pyod("pyod.models.iforest.IForest")),
    Detector("ecod", "PyOD ECOD", "", _pyod("pyod.models.ecod.ECOD")),
    Detector("lof", "PyOD LOF", "", _pyod("pyod.models.lof.LOF")),
)
GROUPS = {
    "sensitive": ("sp", "dp", "sp-private"),
    "autoencoder": ("rmp", "aann"),
    "pyod": ("knn", "iforest", "ecod", "lof"),
}
PRIVATE = ("sp", "dp", "sp-private", "relaxed", "rmp")


@dataclass(frozen=True)
class Settings:
    sets: tuple[str, ...]
    epsilons: tuple[float, ...]
    alphas: tuple[float, ...]
    max_records: int
    rmp_epochs: int
    seed: int
    odds: Path
    bounds: Path | None

    def key(self) -> dict[str, Any]:
        """What a saved result must have been computed with to be reused."""
        return {
            "max_records": self.max_records,
            "rmp_epochs": self.rmp_epochs,
            "seed": self.seed,
            "bounds": None if self.bounds is None else str(self.bounds),
        }

    def params(self, det: Detector) -> tuple[float, ...]:
        return {"ε": self.epsilons, "α": self.alphas}.get(det.param, (math.nan,))


def _path(cache_dir: Path, set_name: str, det: Detector, p: float) -> Path:
    tag = "" if math.isnan(p) else f"-{det.param.replace('ε', 'eps').replace('α', 'alpha')}{p:g}"
    return cache_dir / set_name / f"{det.name}{tag}.json"


def _saved(path: Path, settings: Settings) -> dict[str, Any] | None:
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return row if row.get("settings") == settings.key() else None


def _compute(data: Data, det: Detector, p: float, settings: Settings) -> tuple[dict, bool]:
    """One row, and whether to save it (a refusal of privad is a result; a crash is not)."""
    from privad.errors import PrivadError

    t0, cpu0 = time.perf_counter(), time.process_time()
    keep = True
    try:
        out = det.run(data, p, settings.seed, settings.rmp_epochs)
    except PrivadError as exc:
        out = {"error": f"refused: {exc}"}
    except Exception as exc:  # noqa: BLE001 - shown on the page and retried on the next run
        out, keep = {"error": f"FAILED: {type(exc).__name__}: {exc}"}, False
    row = {
        "set": data.name,
        "detector": det.name,
        "param": None if math.isnan(p) else p,
        "records": int(data.y.size),
        "records_full": data.n_full,
        "contamination": data.contamination,
        "scaling": data.scaling,
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - cpu0,  # every thread of this process
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "settings": settings.key(),
        "commit": _commit(),
        **out,
    }
    return row, keep


def run(settings: Settings, only: Sequence[str], fresh: bool, cache_dir: Path) -> list[dict]:
    """Every row of the configuration: saved ones reused, the others computed and saved."""
    tasks = [
        (s, det, p)
        for s in settings.sets
        for det in DETECTORS
        for p in settings.params(det)
        if det.name in only or not only
    ]
    rows = []
    t_start = time.perf_counter()
    for i, (s, det, p) in enumerate(tasks, 1):
        path = _path(cache_dir, s, det, p)
        redo = fresh or det.name in only
        row = None if redo else _saved(path, settings)
        label = f"[{i}/{len(tasks)}] {s} {det.name}" + (
            "" if math.isnan(p) else f" {det.param}={p:g}"
        )
        if row is None:
            data = load(s, settings.odds, settings.bounds, settings.max_records, settings.seed)
            row, keep = _compute(data, det, p, settings)
            if keep:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_text(json.dumps(row, indent=1))
                os.replace(tmp, path)
            what = row.get("error") or f"AUC {row['auc']:.3f}, F1 {row['f1']:.3f}"
            print(f"{label}: {what} ({row['seconds']:.1f} s)", file=sys.stderr, flush=True)
        else:
            print(f"{label}: saved result reused", file=sys.stderr, flush=True)
        rows.append(row)
    print(f"done in {time.perf_counter() - t_start:.0f} s", file=sys.stderr, flush=True)
    return rows


def collect(settings: Settings, cache_dir: Path) -> list[dict]:
    """The saved rows of the whole configuration (missing ones are left out)."""
    rows = []
    for s in settings.sets:
        for det in DETECTORS:
            for p in settings.params(det):
                row = _saved(_path(cache_dir, s, det, p), settings)
                if row is not None:
                    rows.append(row)
    return rows


# -- the page and the figures ----------------------------------------------------------------


def _f(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _by(rows: list[dict]) -> dict[tuple[str, str, float | None], dict]:
    return {(r["set"], r["detector"], r["param"]): r for r in rows}


def _best_pyod(table: dict, s: str, metric: str) -> tuple[float | None, str]:
    found = [
        (table[(s, d, None)][metric], d)
        for d in GROUPS["pyod"]
        if (s, d, None) in table and "error" not in table[(s, d, None)]
    ]
    return max(found) if found else (None, "")


def draw(rows: list[dict], settings: Settings, metric: str, path: Path) -> None:
    """Panels of ``metric`` against ε per set: SP, DP, SP with private r, relaxed; RMP, the
    raw AANN and the best PyOD detector as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = _by(rows)
    sets = [s for s in settings.sets if any(r["set"] == s for r in rows)]
    cols = min(4, len(sets)) or 1
    nrows = -(-len(sets) // cols) or 1
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.6 * nrows), squeeze=False)
    eps = list(settings.epsilons)
    alpha = 0.1 if 0.1 in settings.alphas else settings.alphas[0]
    for ax, s in zip(axes.flat, sets, strict=False):
        for name, style in (("sp", "o-"), ("dp", "s-"), ("sp-private", "D-"), ("relaxed", "^-")):
            ys = [table.get((s, name, e), {}).get(metric, math.nan) for e in eps]
            if not all(math.isnan(v) for v in ys):
                ax.plot(eps, ys, style, label=name, ms=4)
        rmp = table.get((s, "rmp", alpha), {}).get(metric)
        if rmp is not None:
            ax.axhline(rmp, color="tab:red", ls=":", label=f"RMP α={alpha:g} (no ε)")
        raw = table.get((s, "aann", None), {}).get(metric)
        if raw is not None:
            ax.axhline(raw, color="tab:gray", ls="-.", label="raw AANN (not private)")
        best, which = _best_pyod(table, s, metric)
        if best is not None:
            ax.axhline(best, color="black", ls="--", label="best PyOD (not private)")
        ax.set_xscale("log")
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.set_ylim(0.0, 1.02)
        ax.set_title(s, fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(sets) :]:
        ax.axis("off")
    handles = {h.get_label(): h for ax in axes.flat for h in ax.get_lines()}
    fig.legend(handles.values(), handles.keys(), fontsize=7, loc="lower right")
    fig.supxlabel("ε")
    fig.supylabel({"f1": "F1 at the true contamination", "auc": "ROC AUC"}[metric])
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


METHOD = """\
## How it is measured

- **Sets.** The eleven ODDS sets and scikit-learn's breast cancer set (569 × 30, malignant =
  anomaly). The anomaly share c of each set is its true contamination. Sets above
  {max_records:,} records are subsampled, stratified (c kept), with a fixed seed, so that the
  whole run stays well under 30 minutes on two shared cores; the tables give both sizes.
  One seeded run per row: small sets (wbc has 21 anomalies) move by several hundredths
  between seeds.
- **Scores and AUC.** ROC AUC of the scores each detector *releases* for the records it was
  fitted on (`decision_function`): for SP and DP the released answer (±1) plus the
  estimator's tie-break in [0, 0.5), a keyed hash of the question that knows nothing about
  the data, so their AUC is that of the released answers with ties broken at random (there
  is deliberately no continuous private score; docs/sensitive.md says why); for the relaxed
  pipeline `projection_scores` on the perturbed records 𝒯' (`scores="projection"`: the
  mean rank of the Laplace distance to the medians and of a skew-oriented projection on
  the components above the noise, docs/relaxed.md); for RMP the reconstruction error
  as an end-user computes it; for the raw AANN and PyOD their `decision_scores_`.
- **Labels at the contamination.** Every detector is given the set's true contamination c
  (PyOD's `contamination`) and "F1 at c" and "flagged at c" score its own `predict`: the
  top c share of its released scores (`privad.base.contamination_threshold`,
  post-processing, no privacy cost). "Own rule" is the detector's paper rule measured on
  the same release: for SP and DP the released answers themselves (the paper's labels,
  with r aimed at c), for the relaxed pipeline the paper's corrected superset
  (`candidates_`), for RMP and the raw AANN θ = μ + 3σ of the training errors.
- **ε is the detector's parameter, not the job's cost.** The ε of the tables and figures
  is what each mechanism is configured with: per answer for SP and DP, per value of the
  perturbation for the relaxed pipeline. What the whole job costs is in the "privacy
  statement" column: every spend the estimator's ledger recorded for the row (each row is
  charged to a scope of its own, since estimators fitted on the same records in one process
  share one in-memory ledger), with its guarantee. For SP and DP answering all n records
  that is Claim 5's min(n, m)·ε (hundreds to thousands), plus the selection's ε for the
  private r; for the relaxed pipeline the record-level ε of its ledger entry (the d
  columns' noise and the protected exchange together) and the larger ε' for outliers.
  RMP has no ε (its guarantee is resistance to reconstruction); the raw AANN and PyOD
  rows say "none".
- **Where the parameters come from.** The lines under each table say it per detector.
  β = round(c·n) for every SP and DP row (`privad.sensitive.parameters.default_beta`:
  Knorr and Ng's DB(p, D) with 1 − p = c; it reads only c and the set's size n, both
  public inputs here). "r from the data" (`r="data"`) is read off the records by
  `propose_parameters`, aimed at c: **not private** and not counted in any ledger; the
  exact labels it gives are PyOD's KNN labels with `n_neighbors` = β. "SP, r chosen
  privately" (`r="private"`) is the fully private route: r chosen by the ε-DP selection
  on the public grid for [0, 1] features, charged to the same ledger as the labels (both
  spends in its statement), c and n public inputs. The relaxed pipeline's
  sensitivities and calibration are read off the data (no history): not private.
- **Not included.** The noisy binary search (`privad.search`) finds the single anomaly of a
  one-column series against public thresholds t_ℓ < t_h; these sets are tables of records
  with many anomalies, so it does not apply (docs/search.md has its own measurements).

## Feature scaling and what it costs

{scaling}

Min-max scaling from the data is **not private**: the minimum and maximum of each column
are functions of every record, so changing one record can move every scaled value and
the guarantees above, which are about neighbouring datasets, no longer hold as stated
for the raw records (docs/scaling.md explains why). It is used here because these are
public benchmark sets with no published domain bounds, and it is what the non-private
baselines see too. For private data, scale from public bounds (a measuring range, a
questionnaire's scale, an older public data set): `--bounds DIR` takes
`DIR/<set>.csv` (`column,lower,upper`, columns `x0, x1, ...`) or `.json`, scales with
`privad.datasets.scale_to_bounds` (each record on its own, clipped to the bounds: free in
privacy) and the tables then say "public bounds". Loose bounds cost utility, not privacy:
a bound twice as wide as the data halves that column's spread.
"""


def _scaling_line(rows: list[dict]) -> str:
    seen: dict[str, list[str]] = {}
    for r in rows:
        if r["set"] not in seen.get(r["scaling"], []):
            seen.setdefault(r["scaling"], []).append(r["set"])
    return "\n".join(f"- {how}: {', '.join(sets)}." for how, sets in seen.items())


def _cell(row: dict | None) -> str:
    if row is None:
        return "not run"
    if "error" in row:
        return row["error"].split(":")[0]
    return f"{row['auc']:.2f} / {row['f1']:.2f}"


SUMMARY_COLUMNS = (*PRIVATE, "aann")


def _summary(rows: list[dict], settings: Settings) -> str:
    table = _by(rows)
    eps, alpha = _headline(settings)
    head = (
        f"## Summary at ε = {eps:g} (RMP: α = {alpha:g})\n\n"
        "Each cell is ROC AUC / F1 at the true contamination; best PyOD: the highest AUC and "
        "the highest F1 of the four (the detector named has the highest F1); raw AANN: the "
        "same autoencoder as RMP on the unperturbed records (not private).\n\n"
        "| set | records | c | best PyOD | SP, r from data | DP, r from data | SP, private r "
        "| relaxed | RMP | raw AANN |\n"
        "|---|---:|---:|---|---|---|---|---|---|---|\n"
    )
    lines: list[str] = []
    ratios: dict[str, list[float]] = {d: [] for d in SUMMARY_COLUMNS}
    gaps: dict[str, list[float]] = {d: [] for d in SUMMARY_COLUMNS}
    aucs: dict[str, list[float]] = {d: [] for d in SUMMARY_COLUMNS}
    for s in settings.sets:
        any_row = next((r for r in rows if r["set"] == s), None)
        if any_row is None:
            continue
        f1, which = _best_pyod(table, s, "f1")
        auc, _ = _best_pyod(table, s, "auc")
        cells = {d: _cell_row(table, s, d, eps, alpha) for d in SUMMARY_COLUMNS}
        for d, row in cells.items():
            if row is not None and "error" not in row and f1:
                ratios[d].append(row["f1"] / f1)
                gaps[d].append(row["auc"] - auc)
                aucs[d].append(row["auc"])
        size = f"{any_row['records']:,}" + (
            f" of {any_row['records_full']:,}"
            if any_row["records_full"] != any_row["records"]
            else ""
        )
        lines.append(
            f"| {s} | {size} | {any_row['contamination']:.3f} | {_f(auc, 2)} / {_f(f1, 2)} "
            f"({which}) | " + " | ".join(_cell(cells[d]) for d in SUMMARY_COLUMNS) + " |"
        )
    cost = [
        f"- {d}: median F1 / best PyOD F1 = {np.median(v):.2f} over {len(v)} set(s) "
        f"(range {min(v):.2f}–{max(v):.2f}); median AUC − best PyOD AUC = "
        f"{np.median(gaps[d]):+.2f}; AUC ≥ 0.7 on {sum(a >= 0.7 for a in aucs[d])} of {len(v)}"
        for d, v in ratios.items()
        if v
    ]
    return (
        head
        + "\n".join(lines)
        + "\n\nF1 and AUC against the best PyOD detector at these settings:\n\n"
        + "\n".join(cost)
        + "\n\n"
        + _targets(rows, settings)
        + "\n\n"
        + _collapse(rows)
        + "\n"
    )


def _headline(settings: Settings) -> tuple[float, float]:
    """The ε and the RMP α of the summary: 1 and 0.1 where measured."""
    eps = 1.0 if 1.0 in settings.epsilons else settings.epsilons[-1]
    alpha = 0.1 if 0.1 in settings.alphas else settings.alphas[0]
    return eps, alpha


def _cell_row(table: dict, s: str, d: str, eps: float, alpha: float) -> dict | None:
    """The row of detector ``d`` on set ``s`` at the summary's ε (α for RMP)."""
    det = next(x for x in DETECTORS if x.name == d)
    return table.get((s, d, {"ε": eps, "α": alpha}.get(det.param)))


def _ok(row: dict | None) -> bool:
    return row is not None and "error" not in row


def _verdict(met: bool) -> str:
    return "**met**" if met else "**not met**"


def _targets(rows: list[dict], settings: Settings) -> str:
    """Issue 27's utility targets, checked against the rows (computed, not written)."""
    table = _by(rows)
    eps, alpha = _headline(settings)
    sets = [s for s in settings.sets if any(r["set"] == s for r in rows)]
    out = [f"Issue 27's targets, checked on these rows (ε = {eps:g}, RMP α = {alpha:g}):", ""]
    rel = {s: _cell_row(table, s, "relaxed", eps, alpha) for s in sets}
    good = [s for s, r in rel.items() if _ok(r) and r["auc"] >= 0.7]
    out.append(
        f"- relaxed AUC ≥ 0.7 on ≥ 6 of 12 sets: {len(good)} of {len(sets)} "
        f"({', '.join(good) or 'none'}): {_verdict(len(good) >= 6)}"
    )
    close, not_worse = [], []
    for s in sets:
        rmp, raw = _cell_row(table, s, "rmp", eps, alpha), table.get((s, "aann", None))
        if _ok(rmp) and _ok(raw):
            da, df = rmp["auc"] - raw["auc"], rmp["f1"] - raw["f1"]
            close += [s] * (abs(da) <= 0.05 and abs(df) <= 0.1)
            not_worse += [s] * (da >= -0.05 and df >= -0.1)
    missed = [s for s in sets if s not in not_worse]
    out.append(
        f"- RMP AUC within 0.05 and F1 within 0.1 of the raw AANN on ≥ 10 of 12 sets: no "
        f"worse by more than that on {len(not_worse)} of {len(sets)} (not: "
        f"{', '.join(missed) or 'none'}); within in both directions on {len(close)}: "
        f"{_verdict(len(not_worse) >= 10)}"
    )
    for det, route in (("sp", "r from the data"), ("sp-private", "r chosen privately")):
        for key, what in (("f1", "labels at c"), ("own_f1", "the paper's labels")):
            pairs = [
                (r[key], _best_pyod(table, s, "f1")[0])
                for s in sets
                if _ok(r := table.get((s, det, eps))) and r.get(key) is not None
            ]
            ratio = float(np.median([a / b for a, b in pairs if b])) if pairs else math.nan
            out.append(
                f"- SP ({route}), {what}: median F1 / best PyOD F1 = {ratio:.2f} over "
                f"{len(pairs)} sets (target ≥ 0.90): {_verdict(ratio >= 0.9)}"
            )
    private = [r for r in rows if r["detector"] in SUMMARY_COLUMNS and _ok(r)]
    bad = _outside(private, "flagged")
    out.append(
        f"- no detector given contamination c flags outside [c/2, 2c]: {len(bad)} of "
        f"{len(private)} rows outside: {_verdict(not bad)} (the paper's own rules are "
        "counted separately below)"
    )
    return "\n".join(out)


def _outside(rows: list[dict], key: str) -> list[dict]:
    """The rows whose share ``key`` lies outside [c/2, 2c]."""
    return [
        r
        for r in rows
        if r.get(key) is not None and not r["contamination"] / 2 <= r[key] <= 2 * r["contamination"]
    ]


def _collapse(rows: list[dict]) -> str:
    """Per private detector: rows whose labels flag outside [c/2, 2c], at c and by own rule."""
    out = ["How many rows flag outside [c/2, 2c] (the no-collapse rule of issue 27):", ""]
    for d in SUMMARY_COLUMNS:
        ok = [r for r in rows if r["detector"] == d and "error" not in r]
        if not ok:
            continue
        text = f"- {d}: labels at c {len(_outside(ok, 'flagged'))} of {len(ok)} rows"
        own_rows = [r for r in ok if r.get("own_flagged") is not None]
        if own_rows:
            shares = [r["own_flagged"] / r["contamination"] for r in own_rows]
            text += (
                f"; own rule {len(_outside(own_rows, 'own_flagged'))} of {len(own_rows)} rows "
                f"(it flags {min(shares):.2f}c–{max(shares):.2f}c)"
            )
        refused = sorted(
            {
                r["set"]
                for r in rows
                if r["detector"] == d and r.get("error", "x").split(":")[0] in ("refused", "FAILED")
            }
        )
        if refused:
            text += f"; no result on {', '.join(refused)} (see below)"
        out.append(text)
    return "\n".join(out)


def _set_section(s: str, rows: list[dict], settings: Settings) -> str:
    mine = [r for r in rows if r["set"] == s]
    if not mine:
        return ""
    r0 = mine[0]
    size = f"{r0['records']:,} records" + (
        f" (stratified sample of {r0['records_full']:,})"
        if r0["records_full"] != r0["records"]
        else ""
    )
    out = [
        f"### {s}\n",
        f"{size}, c = {r0['contamination']:.3f}, {r0['scaling']}.\n",
        "| detector | ε / α | AUC | F1 at c | flagged at c | labels at c | own rule: flagged "
        "| own rule: F1 | privacy statement | s |",
        "|---|---:|---:|---:|---:|---|---:|---:|---|---:|",
    ]
    titles = {d.name: d for d in DETECTORS}
    params: dict[str, str] = {}
    for r in mine:
        det = titles[r["detector"]]
        p = "—" if r["param"] is None else f"{det.param} = {r['param']:g}"
        if "error" in r:
            out.append(f"| {det.title} | {p} | {r['error']} | | | | | | | {r['seconds']:.1f} |")
            continue
        params.setdefault(det.title, r["parameters"])
        out.append(
            f"| {det.title} | {p} | {r['auc']:.3f} | {r['f1']:.3f} | {100 * r['flagged']:.1f} % "
            f"| {r['labels_at_c']} | "
            + ("—" if r["own_flagged"] is None else f"{100 * r['own_flagged']:.1f} %")
            + f" | {_f(r['own_f1'])} | {r['statement']} | {r['seconds']:.1f} |"
        )
    out.append("")
    out += [f"- {t}: {text}" for t, text in params.items()]
    return "\n".join(out) + "\n"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = [f"Python {sys.version.split()[0]}"]
    for dist in ("numpy", "scikit-learn", "numba", "pyod", "privad"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} not installed")
    return ", ".join(out)


@cache
def _commit() -> str:
    """The commit of the privad being benchmarked (the checkout its package is in)."""
    import subprocess

    import privad

    where = Path(privad.__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True).stdout

    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    return head + (" with uncommitted changes" if git("status", "--porcelain", ".").strip() else "")


def _shown(path: Path) -> str:
    """A path as the page shows it: relative to the repository where it is inside."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def write_page(
    rows: list[dict], settings: Settings, out: Path, command: str, reading: Path | None = None
) -> list[Path]:
    """The page and its two figures (beside the page), each written atomically;
    ``reading``: a hand-written reading of the results, placed after the summary."""
    figures = [out.with_name(f"{out.stem}.png"), out.with_name(f"{out.stem}_auc.png")]
    draw(rows, settings, "f1", figures[0])
    draw(rows, settings, "auc", figures[1])
    whens = sorted(r["when"] for r in rows)
    total = sum(r["seconds"] for r in rows)
    head = (
        "# Utility: what privacy costs in finding anomalies\n\n"
        "Regenerate this page and its figures (from the repository root):\n\n"
        f"```bash\n{COMMAND}                 # reuses saved results, computes the rest\n"
        f"{COMMAND} --only relaxed   # after a change to one detector: redo it only\n"
        f"{COMMAND} --fresh          # recompute everything\n```\n\n"
        f"Written by `benchmarks/bench_utility.py` (this page: `{command}`); nothing below is "
        "edited by hand"
        + (
            f' except the section "Reading the results", kept in `{_shown(reading)}` and '
            "written by hand from the results below: reread it after a rerun"
            if reading is not None
            else ""
        )
        + ". Saved results live in `benchmarks/results/utility/` (not in git).\n\n"
        f"- results computed: {whens[0][:16]} to {whens[-1][:16]} UTC, privad at commit "
        f"{', '.join(sorted({r.get('commit', 'not recorded') for r in rows}))}\n"
        f"- compute time of the rows: {total / 60:.1f} min wall clock"
        + (
            f", {sum(r['cpu_seconds'] for r in rows) / 60:.1f} min CPU"
            if all("cpu_seconds" in r for r in rows)
            else ""
        )
        + f" on {os.cpu_count()} logical CPUs shared with other jobs (load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} when the page was written)\n"
        f"- software: {_versions()}\n"
        f"- settings: ε ∈ {{{', '.join(f'{e:g}' for e in settings.epsilons)}}}, "
        f"RMP α ∈ {{{', '.join(f'{a:g}' for a in settings.alphas)}}}, "
        f"RMP epochs {settings.rmp_epochs}, at most {settings.max_records:,} records per set, "
        f"seed {settings.seed}\n\n"
    )
    body = [
        head,
        _summary(rows, settings),
        "" if reading is None else reading.read_text(),
        "## Figures\n\n"
        "F1 at the true contamination against ε, per set (RMP at α = 0.1, the raw AANN and "
        f"the best PyOD detector as horizontal lines):\n\n![F1 against ε]({figures[0].name})\n\n"
        f"ROC AUC of the released scores:\n\n![ROC AUC against ε]({figures[1].name})\n",
        METHOD.format(max_records=settings.max_records, scaling=_scaling_line(rows)),
        "## Per set\n",
        *(_set_section(s, rows, settings) for s in settings.sets),
    ]
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("\n".join(body))
    os.replace(tmp, out)
    return [out, *figures]


# -- command line ----------------------------------------------------------------------------


def _numbers(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(","))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [d.name for d in DETECTORS]
    ap.add_argument(
        "--only",
        help="recompute only these detectors (comma-separated: "
        + ",".join(names)
        + ", or the groups sensitive, pyod); the others' saved results are reused",
    )
    ap.add_argument("--fresh", action="store_true", help="recompute every result")
    ap.add_argument("--sets", help="comma-separated sets (default: all " + f"{len(SETS)})")
    ap.add_argument("--epsilons", type=_numbers, default=EPSILONS)
    ap.add_argument("--alphas", type=_numbers, default=ALPHAS)
    ap.add_argument("--max-records", type=int, default=2000)
    ap.add_argument("--rmp-epochs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--odds", type=Path, default=ODDS, help="folder of the ODDS .mat files")
    ap.add_argument("--bounds", type=Path, help="folder of public bounds, <set>.csv or .json")
    ap.add_argument("--cache", type=Path, help="folder of saved results")
    ap.add_argument("--out", type=Path, help="the page (figures beside it)")
    ap.add_argument(
        "--reading",
        type=Path,
        help=f"hand-written reading of the results to include (default: {READING.name} "
        "beside this script; none with --quick)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: wbc, ε = 1, α = 0.1, 20 RMP epochs; page and results under "
        "benchmarks/results/utility-quick/ unless --out/--cache say otherwise",
    )
    args = ap.parse_args(argv)
    only: list[str] = []
    for name in args.only.split(",") if args.only else []:
        if name not in names and name not in GROUPS:
            ap.error(f"unknown detector {name!r}; allowed: {', '.join(names + list(GROUPS))}")
        only += GROUPS.get(name, [name])
    sets = tuple(args.sets.split(",")) if args.sets else (("wbc",) if args.quick else SETS)
    unknown = sorted(set(sets) - set(SETS))
    if unknown:
        ap.error(f"unknown set(s) {', '.join(unknown)}; allowed: {', '.join(SETS)}")
    quick_dir = ROOT / "benchmarks" / "results" / "utility-quick"
    settings = Settings(
        sets=sets,
        epsilons=(1.0,) if args.quick else args.epsilons,
        alphas=(0.1,) if args.quick else args.alphas,
        max_records=args.max_records,
        rmp_epochs=20 if args.quick else args.rmp_epochs,
        seed=args.seed,
        odds=args.odds.resolve(),
        bounds=None if args.bounds is None else args.bounds.resolve(),
    )
    cache_dir = args.cache or (quick_dir if args.quick else CACHE)
    out = args.out or (quick_dir / "utility.md" if args.quick else ROOT / "docs" / "utility.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    ran = run(settings, only, args.fresh, cache_dir)
    rows = _by(collect(settings, cache_dir))
    rows.update({(r["set"], r["detector"], r["param"]): r for r in ran if "error" in r})
    shown = " ".join(["bench_utility.py", *(sys.argv[1:] if argv is None else argv)])
    reading = args.reading or (None if args.quick else READING)
    for path in write_page(list(rows.values()), settings, out, shown, reading):
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
