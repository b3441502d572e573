"""Named real datasets: the ones the four papers evaluate on, embedded or external.

Embedded (shipped in ``privad/datasets/data``, licences in ``data/NOTICE.md``):

* ODDS Thyroid, Mammography and Breast Cancer Wisconsin: sensitive-privacy paper, Table 1
  (``sensitive-privacy-anomaly-identification.txt``, section 5);
* UCI Abalone and the 2-D Banana set: RMP paper, Table 1
  (``rmp-collaborative-anomaly-detection.txt``, section 5).

External (privad cannot ship them; the loaders read the user's copy in its original layout):

* Gas Sensor Array Drift, 128-feature two-class subset (RMP, Table 1): too large to embed;
* Kaggle Credit Card Fraud (sensitive privacy, Table 1): not redistributable here.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Literal

import numpy as np

from privad.datasets.containers import Dataset
from privad.datasets.embedded import embedded_path, find_external
from privad.datasets.formats import existing_file, load_odds
from privad.datasets.tables import frame_to_dataset
from privad.errors import DataError
from privad.validation import check_choice

__all__ = [
    "ODDS_SOURCE",
    "ODDS_LICENCE",
    "load_thyroid",
    "load_mammography",
    "load_breastw",
    "load_abalone",
    "load_banana",
    "load_gas",
    "load_creditcard",
    "CREDITCARD_COLUMNS",
]

PathLike = str | os.PathLike[str]

ODDS_SOURCE = (
    "ODDS Outlier Detection DataSets (S. Rayana, 2016, odds.cs.stonybrook.edu), copy from the"
    " PyOD repository"
)
ODDS_LICENCE = "BSD-2-Clause (PyOD repository); original data from the UCI repository"
ABALONE_SOURCE = (
    "UCI Machine Learning Repository: Abalone (Nash, Sellers, Talbot, Cawthorn & Ford, 1994),"
    " doi:10.24432/C55C7W"
)
ABALONE_LICENCE = "CC BY 4.0"
BANANA_SOURCE = (
    "classic 2-D Banana benchmark (Ratsch et al.), banana.zip from the river package"
    " (online-ml/river)"
)
BANANA_LICENCE = "BSD-3-Clause (river)"
GAS_SOURCE = (
    "UCI Gas Sensor Array Drift (Vergara et al., 2012), 128-feature two-class subset from the"
    " yanodata repository"
)
GAS_LICENCE = "CC BY 4.0 (UCI original); the subset's repository has no licence file"
CREDITCARD_SOURCE = (
    "Kaggle Credit Card Fraud Detection (ULB Machine Learning Group; Dal Pozzolo et al., 2015)"
)
CREDITCARD_LICENCE = "Open Database License 1.0 (Kaggle); not shipped with privad"

#: Kaggle's column layout: Time, the 28 PCA components V1..V28, Amount, and the label Class.
CREDITCARD_COLUMNS: tuple[str, ...] = ("Time", *(f"V{i}" for i in range(1, 29)), "Amount", "Class")

_ODDS_DESCRIPTIONS = {
    "thyroid": (
        "ODDS Thyroid (UCI thyroid disease, ann-thyroid): 6 continuous features in [0, 1];"
        " the hyperfunction class is the outlier class. Sensitive privacy, Table 1."
    ),
    "mammography": (
        "ODDS Mammography: 6 standardised features of mammogram micro-calcification"
        " candidates; the malignant class is the outlier class. Sensitive privacy, Table 1."
    ),
    "breastw": (
        "ODDS Breast Cancer Wisconsin (original): 9 integer cytology features in 1..10;"
        " malignant cases are labelled outliers."
    ),
}


def _load_embedded_odds(key: str) -> Dataset:
    return load_odds(
        embedded_path(f"odds/{key}.mat"),
        name=key,
        description=_ODDS_DESCRIPTIONS[key],
        source=ODDS_SOURCE,
        licence=ODDS_LICENCE,
    )


def load_thyroid() -> Dataset:
    """ODDS Thyroid, embedded: 3772 x 6, 93 outliers (sensitive privacy, Table 1)."""
    return _load_embedded_odds("thyroid")


def load_mammography() -> Dataset:
    """ODDS Mammography, embedded: 11183 x 6, 260 outliers (sensitive privacy, Table 1)."""
    return _load_embedded_odds("mammography")


def load_breastw() -> Dataset:
    """ODDS Breast Cancer Wisconsin (original), embedded: 683 x 9, 239 outliers."""
    return _load_embedded_odds("breastw")


# --------------------------------------------------------------------------------------------
# Abalone
# --------------------------------------------------------------------------------------------

_ABALONE_NUMERIC = (
    "length",
    "diameter",
    "height",
    "whole_weight",
    "shucked_weight",
    "viscera_weight",
    "shell_weight",
    "rings",
)


def load_abalone(path: PathLike | None = None, sex: Literal["drop", "onehot"] = "drop") -> Dataset:
    """UCI Abalone (RMP paper, Table 1, where it has n = 8 attributes).

    The UCI layout is a header-less CSV: sex (``M``, ``F`` or ``I`` for infant), then seven
    measurements and the ring count (8 numbers).

    Parameters
    ----------
    path
        a file in the UCI layout; default the embedded copy (4177 records).
    sex
        ``"drop"`` (default) keeps the 8 numeric columns, rings included, which matches
        the 8 attributes of the RMP paper's Table 1 (our reading: the paper does not say
        how it encoded sex). ``"onehot"`` prepends three 0/1 columns ``sex_M``, ``sex_F``,
        ``sex_I`` (11 columns).

    The data has no anomaly labels (``y`` is ``None``); the RMP experiment appends uniform
    anomalies, see :func:`privad.datasets.inject_uniform_anomalies`.
    """
    import pandas as pd  # imported lazily: keeps 'import privad' fast

    sex = check_choice(sex, "sex", ("drop", "onehot"))
    if path is None:
        p = embedded_path("abalone/abalone.data")
    else:
        p = existing_file(path, "Abalone file")
    try:
        frame = pd.read_csv(p, header=None, skipinitialspace=True, dtype={0: str})
    except pd.errors.EmptyDataError:
        raise DataError(f"{str(p)!r} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{str(p)!r} is not a readable CSV file: {exc}") from None
    if frame.shape[1] != 9:
        raise DataError(
            f"{str(p)!r} has {frame.shape[1]} columns; the UCI Abalone layout has 9 (sex then"
            " 8 numbers)"
        )
    frame.columns = ["sex", *_ABALONE_NUMERIC]
    sexes = frame["sex"].astype(str).str.strip().str.upper()
    bad = ~sexes.isin(["M", "F", "I"])
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"column 'sex' of {str(p)!r} must be M, F or I; data row {row + 1} holds"
            f" {frame['sex'].iloc[row]!r}"
        )
    columns: list[str] = list(_ABALONE_NUMERIC)
    if sex == "onehot":
        for code in ("M", "F", "I"):
            frame[f"sex_{code}"] = (sexes == code).astype(np.float64)
        columns = ["sex_M", "sex_F", "sex_I", *columns]
    return frame_to_dataset(
        frame,
        columns=columns,
        name="abalone",
        source=ABALONE_SOURCE if path is None else str(p),
        licence=ABALONE_LICENCE,
        description=(
            "UCI Abalone: physical measurements of abalone and their ring count (age);"
            f" sex {'one-hot encoded' if sex == 'onehot' else 'dropped'}. No anomaly labels."
            " RMP paper, Table 1."
        ),
        metadata={"sex": sex, "sex_codes": sexes.to_numpy()},
    )


# --------------------------------------------------------------------------------------------
# Banana
# --------------------------------------------------------------------------------------------


def _parse_libsvm(text: str, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Parse ``label index:value ...`` lines (indices from 1, absent entries are 0)."""
    labels: list[float] = []
    rows: list[dict[int, float]] = []
    width = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tokens = line.split()
        try:
            labels.append(float(tokens[0]))
            entries: dict[int, float] = {}
            for token in tokens[1:]:
                index, _, value = token.partition(":")
                col = int(index)
                if col < 1:
                    raise ValueError(f"feature index {col} < 1")
                entries[col] = float(value)
        except ValueError as exc:
            raise DataError(
                f"line {lineno} of {source} is not in 'label index:value ...' form: {line!r}"
                f" ({exc})"
            ) from None
        width = max(width, max(entries, default=0))
        rows.append(entries)
    if not rows:
        raise DataError(f"{source} holds no records")
    X = np.zeros((len(rows), width))
    for i, entries in enumerate(rows):
        for col, value in entries.items():
            X[i, col - 1] = value
    return X, np.asarray(labels)


def load_banana(path: PathLike | None = None) -> Dataset:
    """The classic 2-D Banana set: 5300 records, two banana-shaped classes.

    The file (``banana.all.txt``, alone or inside ``banana.zip``) is libsvm-like text, one
    record per line: ``-1 1:1.617466 2:-0.919233``. The ±1 labels are *classes*, not
    anomalies, so they go to ``classes`` and ``y`` is ``None``. The RMP paper (Table 1)
    uses an 8-attribute banana; see :func:`privad.datasets.make_banana_8d` for that.

    Parameters
    ----------
    path
        ``banana.zip`` or ``banana.all.txt``; default the embedded copy.
    """
    p = embedded_path("banana/banana.zip") if path is None else existing_file(path, "Banana file")
    if zipfile.is_zipfile(p):
        with zipfile.ZipFile(p) as archive:
            members = [
                m
                for m in archive.namelist()
                if m.endswith(".txt") and not m.startswith("__MACOSX") and "/._" not in m
            ]
            preferred = [m for m in members if Path(m).name == "banana.all.txt"]
            if not (preferred or len(members) == 1):
                raise DataError(
                    f"{str(p)!r} should hold banana.all.txt; it holds {archive.namelist()}"
                )
            member = (preferred or members)[0]
            raw = archive.read(member)
        source_name = f"{p.name}:{member}"
    else:
        raw = p.read_bytes()
        source_name = p.name
    try:
        text = io.TextIOWrapper(io.BytesIO(raw), encoding="ascii").read()
    except UnicodeDecodeError:
        raise DataError(f"{source_name} is not a text file") from None
    X, labels = _parse_libsvm(text, source_name)
    if not np.isin(labels, (-1.0, 1.0)).all():
        raise DataError(f"{source_name}: the Banana labels must be -1 or +1")
    if not np.isfinite(X).all():
        raise DataError(f"{source_name} holds NaN or infinite values")
    return Dataset(
        X=X,
        y=None,
        feature_names=[f"x{j + 1}" for j in range(X.shape[1])],
        name="banana",
        description=(
            "Classic 2-D Banana benchmark: two overlapping banana-shaped classes (labels in"
            " `classes`, +1/-1). No anomaly labels."
        ),
        source=BANANA_SOURCE if path is None else str(p),
        licence=BANANA_LICENCE,
        classes=labels.astype(np.int64),
    )


# --------------------------------------------------------------------------------------------
# External: Gas Sensor Array Drift, Kaggle credit card
# --------------------------------------------------------------------------------------------


def load_gas(path: PathLike | None = None) -> Dataset:
    """Gas Sensor Array Drift, two-class 128-feature subset (RMP paper, Table 1).

    The file ``gas-drift.npz`` (keys ``x``: 5574 x 128, ``y``: the gas, 0/1) is 2.7 MB and is
    not shipped. ``path`` may be the file or its folder; otherwise it is looked for in
    ``$PRIVAD_DATA/gas/``, ``$PRIVAD_DATA/`` and, as a convenience,
    ``[../]shared/datasets/gas/`` below the working directory. ``y`` of the file is the gas
    class, not an anomaly label: it goes to ``classes`` and ``y`` is ``None``.
    """
    p = find_external(
        "gas-drift.npz",
        subfolder="gas",
        path=path,
        what="the Gas Sensor Array Drift subset (gas-drift.npz)",
        how_to_get="It is the two-class 128-feature subset with keys x and y.",
    )
    try:
        with np.load(p, allow_pickle=False) as archive:
            keys = list(archive.files)
            if "x" not in keys or "y" not in keys:
                raise DataError(f"{str(p)!r} must hold arrays 'x' and 'y'; it holds {keys}")
            x = np.asarray(archive["x"])
            classes = np.asarray(archive["y"])
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{str(p)!r} is not a readable .npz file: {exc}") from None
    except ValueError as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{str(p)!r}: {exc}") from None
    if x.ndim != 2 or classes.shape != (x.shape[0],):
        raise DataError(
            f"{str(p)!r}: x must be 2-D and y one label per row, got {x.shape}, {classes.shape}"
        )
    if not np.isfinite(x).all():
        raise DataError(f"{str(p)!r}: x holds NaN or infinite values")
    return Dataset(
        X=x.astype(np.float64),
        y=None,
        feature_names=[f"s{j}" for j in range(x.shape[1])],
        name="gas",
        description=(
            "UCI Gas Sensor Array Drift, two gases (class in `classes`), 128 sensor features."
            " No anomaly labels. RMP paper, Table 1."
        ),
        source=GAS_SOURCE,
        licence=GAS_LICENCE,
        classes=classes.astype(np.int64) if np.all(classes == np.round(classes)) else classes,
        metadata={"path": str(p)},
    )


def load_creditcard(path: PathLike | None = None, *, include_time: bool = True) -> Dataset:
    """Kaggle Credit Card Fraud (sensitive privacy, Table 1): 284,807 x 30, 492 frauds.

    The layout is Kaggle's ``creditcard.csv``: header ``Time,V1,...,V28,Amount,Class``,
    ``Class`` = 1 for fraud (the anomaly label). Column order does not matter; extra columns
    are ignored. The file is not shipped: pass ``path`` (the file or its folder), or put it in
    ``$PRIVAD_DATA/creditcard/``. :func:`privad.datasets.make_fraud_standin` generates a
    stand-in of the same size.

    Parameters
    ----------
    include_time
        keep the ``Time`` column (seconds since the first transaction) as a
        feature; the paper applies PCA to 6 components afterwards either way.
    """
    import pandas as pd  # imported lazily: keeps 'import privad' fast

    p = find_external(
        "creditcard.csv",
        subfolder="creditcard",
        path=path,
        what="the Kaggle credit-card fraud file (creditcard.csv)",
        how_to_get="Download it from Kaggle ('Credit Card Fraud Detection', mlg-ulb).",
    )
    try:
        frame = pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise DataError(f"{str(p)!r} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{str(p)!r} is not a readable CSV file: {exc}") from None
    missing = [c for c in CREDITCARD_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(
            f"{str(p)!r} is not in the Kaggle credit-card layout: missing column(s) {missing};"
            " expected Time, V1..V28, Amount, Class"
        )
    features = [c for c in CREDITCARD_COLUMNS[:-1] if include_time or c != "Time"]
    return frame_to_dataset(
        frame,
        columns=features,
        label="Class",
        name="creditcard",
        source=str(p),
        licence=CREDITCARD_LICENCE,
        description=(
            "Kaggle credit-card transactions (Sept. 2013, European cardholders): PCA"
            " components V1..V28, Time and Amount; Class = 1 for fraud."
        ),
    )
