"""The jobs of RMP's participants, operator and end-users against a mining server.

One call per job, used by ``privad rmp participate|train|score`` and by Python users alike
(Erfani et al., PAKDD 2014, section 3: participants release only Z_i = T_i Y_i, eq. 3; the
end-user applies the double logistic, eq. 1, and the public T to its own records):

* :func:`participate`: register (or reuse the saved token), create or load the private
  T_i (a key file, mode 0600, never sent), perturb locally and upload the batches.
* :func:`train`: start training on every stored batch and wait for the model (operator).
* :func:`score`: download a model, check it was trained for the server's public T, and
  score the records locally, labels from the model's threshold.

Each takes an open :class:`~privad.services.rmp_client.RMPClient`; nothing here prints.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from privad.datasets import BoundsScaling
from privad.datasets.summary import scaling_text
from privad.errors import DataError, FeatureScaleWarning, ParameterError, PrivadError
from privad.services.errors import ServiceError
from privad.services.rmp_client import (
    RMPClient,
    UploadReport,
    new_participant_secret,
    read_token_file,
    upload_records,
    write_private,
)

__all__ = [
    "Participation",
    "Scoring",
    "Training",
    "check_records",
    "participate",
    "score",
    "train",
]


def check_records(X: Any, n: int, data: str, names: Any = ()) -> np.ndarray:
    """The records of ``data`` as an m × n float array, refused unless they have the
    server's n attributes; a :class:`~privad.errors.FeatureScaleWarning` when values lie
    outside [-1, 1] (RMP expects records scaled to [0, 1] with shared bounds).

    Examples
    --------
    >>> from privad.services.rmp_jobs import check_records
    >>> check_records([[0.1, 0.2, 0.3]], 3, "records.csv").shape
    (1, 3)
    >>> check_records([[0.1, 0.2]], 3, "records.csv", ["a", "b"])
    Traceback (most recent call last):
    ...
    privad.errors.DataError: records.csv has 2 attribute column(s) (a, b) but the server's ...
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise DataError(f"{data}: no records")
    if X.shape[1] != n:
        names = ", ".join(str(c) for c in list(names)[:12])
        raise DataError(
            f"{data} has {X.shape[1]} attribute column(s) ({names}) but the server's records "
            f"have n = {n}; choose the columns with --columns (and leave a label out with "
            "--label)"
        )
    outside = int(np.count_nonzero(np.abs(X) > 1.0))
    if outside:
        warnings.warn(
            f"{outside} value(s) of {data} lie outside [-1, 1]; RMP expects records scaled "
            "to [0, 1] with bounds all parties share (the double logistic saturates beyond): "
            "give them with --bounds FILE or --bound COL=LO:HI",
            FeatureScaleWarning,
            stacklevel=2,
        )
    return X


def _scaling_note(scaling: BoundsScaling | None) -> tuple[str, ...]:
    """The line on the public bounds' feature scaling of the records (none without them)."""
    return () if scaling is None else (f"feature scaling: {scaling_text(scaling)}",)


@dataclass(frozen=True)
class Participation:
    """What :func:`participate` did: the server, the participant name, the upload, the
    records' number of attributes, the notes (where the key and token came from or went)
    and the public bounds' feature scaling of the records (None: none).

    Examples
    --------
    >>> from privad.services.rmp_client import UploadReport
    >>> from privad.services.rmp_jobs import Participation
    >>> done = Participation("http://h:1", "p1", UploadReport(2, 1, 1, 60, (1, 2)), 4, ("note",))
    >>> print(*done.lines(), sep="\\n")
    note
    uploaded 60 record(s) of 4 attributes in 2 batch(es) to http://h:1: 1 new, 1 already stored
    >>> done.to_dict()["stored"]
    1
    """

    server: str
    participant: str
    report: UploadReport
    attributes: int
    notes: tuple[str, ...]
    scaling: BoundsScaling | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (``privad rmp participate --json``)."""
        return {
            "server": self.server,
            "participant": self.participant,
            "records": self.report.records,
            "attributes": self.attributes,
            "batches": self.report.batches,
            "stored": self.report.stored,
            "duplicates": self.report.duplicates,
            "notes": [*self.notes, *_scaling_note(self.scaling)],
            "scaling": None if self.scaling is None else self.scaling.to_dict(),
        }

    def lines(self) -> tuple[str, ...]:
        """The notes, the feature scaling (where any), then a line on the upload."""
        r = self.report
        again = f", {r.duplicates} already stored" if r.duplicates else ""
        return (
            *self.notes,
            *_scaling_note(self.scaling),
            f"uploaded {r.records} record(s) of {self.attributes} attributes in "
            f"{r.batches} batch(es) to {self.server}: {r.stored} new{again}",
        )


def _save_token(
    path: Path, client: RMPClient, t_sha256: str, secret: str, name: Any, who: str | None
) -> dict[str, Any]:
    """Write a participant's token file (mode 0600); ``who`` None: not registered yet (the
    next run repeats the registration with the same secret)."""
    record = {
        "server": client.base_url,
        "participant": who,
        "name": name,
        "token": secret,
        "t_sha256": t_sha256,
    }
    write_private(path, (json.dumps(record, indent=2) + "\n").encode())
    return record


def _register(client: RMPClient, name: Any, registration_token: str | None, secret: str) -> str:
    """Register ``secret``'s digest (idempotent); the participant name."""
    token = None if registration_token is None else registration_token.strip() or None
    try:
        return client.register(name, registration_token=token, secret=secret)[0]
    except ServiceError as exc:
        if exc.status_code not in (401, 403):
            raise
        raise ParameterError(
            f"{client.base_url} refused the registration ({exc.status_code}: "
            f"{getattr(exc, 'detail', exc)}): it needs its registration token, give "
            "--registration-token (or set $PRIVAD_RMP_REGISTRATION_TOKEN)"
        ) from None


def participate(
    client: RMPClient,
    X: Any,
    *,
    data: str = "the records",
    names: Any = (),
    key_file: str | None = None,
    token_file: str | None = None,
    name: str | None = None,
    registration_token: str | None = None,
    batch_size: int = 30,
    seed: int | None = None,
    scaling: BoundsScaling | None = None,
    on_batch: Callable[[dict[str, Any], int], None] | None = None,
) -> Participation:
    """Perturb the records ``X`` with this participant's private T_i and upload them.

    The key file (T_i) and the token file default to ``~/.privad/rmp/HOST_PORT/``. A saved
    token is reused (a registration whose answer never came is repeated with the same
    secret); the secret is saved before it is registered, so a lost answer is retried by
    running the job again. A participant that has uploaded batches never gets a new T_i (a
    second perturbation of the same records would give the server a second view).
    ``scaling``: the public bounds' feature scaling ``X`` went through
    (:func:`privad.datasets.scale_to_bounds`), reported with the notes.

    Raises
    ------
    ParameterError
        A batch size above the server's, an unknown token, a registration refused for want
        of the registration token, or a missing key after uploads.
    DataError
        Records without the server's n attributes, or a key with another α or β.
    """
    from privad.rmp.roles import Participant

    remote = client.config()
    X = check_records(X, remote.n, data, names)
    if batch_size > remote.max_batch:
        raise ParameterError(
            f"--batch-size {batch_size} is more than the server accepts per "
            f"batch ({remote.max_batch})"
        )
    netloc = urlsplit(client.base_url.strip()).netloc or "server"
    folder = (
        Path.home()
        / ".privad"
        / "rmp"
        / "".join(c if c.isalnum() or c in ".-" else "_" for c in netloc)
    )
    key_path = Path(key_file).expanduser() if key_file else folder / "key.npz"
    token_path = Path(token_file).expanduser() if token_file else folder / "token.json"
    notes: list[str] = []
    who, mine = "", {"batches": []}
    saved = read_token_file(token_path) if token_path.exists() else None
    if saved is not None and "participant" in saved and saved["participant"] is None:
        who = _register(client, saved.get("name"), registration_token, saved["token"])
        saved = _save_token(
            token_path, client, remote.t_sha256, saved["token"], saved.get("name"), who
        )
        notes.append(f"registration of {who} completed (token from {token_path})")
    if saved is not None:
        client.set_token(saved["token"])
        try:
            mine = client.batches()
        except ServiceError as exc:
            if exc.status_code == 401:
                raise ParameterError(
                    f"the token in {str(token_path)!r} is not known to {client.base_url}; "
                    "give this server's token file with --token-file"
                ) from None
            raise
        who = str(mine["participant"])
        notes.append(f"participant {who} (token from {token_path})")
    alpha, beta = remote.config.alpha, remote.config.beta
    if key_path.exists():
        participant = Participant.load_key(key_path, remote.T)
        if (participant.alpha, participant.beta) != (alpha, beta):
            raise DataError(
                f"key file {str(key_path)!r} has alpha {participant.alpha:g}, beta "
                f"{participant.beta:g}; the server uses alpha {alpha:g}, beta {beta:g}"
            )
        notes.append(f"private T_i from {key_path}")
    else:
        if saved is not None and mine["batches"]:
            raise ParameterError(
                f"participant {who} already uploaded {len(mine['batches'])} batch(es) "
                f"with a private T_i that is not at {str(key_path)!r}; give its --key-file "
                "(perturbing the same records again with a new T_i would give the server "
                "a second view of them)"
            )
        participant = Participant(remote.T, alpha, seed, beta=beta)
        write_private(key_path, participant.to_key_bytes())
        notes.append(f"new private T_i saved to {key_path} (mode 0600; never sent)")
    if saved is None:
        secret = new_participant_secret()
        _save_token(token_path, client, remote.t_sha256, secret, name, None)
        who = _register(client, name, registration_token, secret)
        _save_token(token_path, client, remote.t_sha256, secret, name, who)
        notes.append(f"registered as participant {who}; token saved to {token_path} (mode 0600)")
    report = upload_records(client, participant, X, batch_size=batch_size, on_batch=on_batch)
    return Participation(client.base_url, who, report, X.shape[1], tuple(notes), scaling)


@dataclass(frozen=True)
class Training:
    """What :func:`train` did: the started job, its final state and the stored model's
    metadata (None where not waited for).

    Examples
    --------
    >>> from privad.services.rmp_jobs import Training
    >>> job = {"job": 7, "n_records": 60, "n_batches": 2, "n_participants": 1,
    ...        "options": {"epochs": 5}}
    >>> print(*Training(job, {"model": 3}, None).lines(), sep="\\n")
    training job 7 started on 60 record(s) from 2 batch(es) of 1 participant(s), 5 epochs
    model 3 stored
    """

    job: dict[str, Any]
    result: dict[str, Any] | None
    model: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (``privad rmp train --json``)."""
        return {"job": self.job, "result": self.result, "model": self.model}

    def lines(self) -> tuple[str, ...]:
        """A line on the started job, then one on the model (where waited for)."""
        job, meta = self.job, self.model
        lines = [
            f"training job {job['job']} started on {job['n_records']} record(s) from "
            f"{job['n_batches']} batch(es) of {job['n_participants']} participant(s), "
            f"{job['options']['epochs']} epochs"
        ]
        if self.result is not None and meta is None:
            lines.append(f"model {self.result['model']} stored")
        elif meta is not None:
            threshold = "n/a" if meta["threshold"] is None else f"{meta['threshold']:.6g}"
            lines.append(
                f"model {meta['id']}: {meta['n_records']} record(s), {meta['n_batches']} "
                f"batch(es), {meta['n_participants']} participant(s); threshold "
                f"{threshold}; trained in {meta['train_seconds']:.2f} s"
            )
        return tuple(lines)


def train(
    client: RMPClient,
    *,
    epochs: int | None = None,
    hidden: int | None = None,
    seed: int | None = None,
    wait: float | None = 3600.0,
    on_started: Callable[[dict[str, Any]], None] | None = None,
    on_poll: Callable[[dict[str, Any]], None] | None = None,
) -> Training:
    """Start training on every stored batch (operator) and wait for it up to ``wait``
    seconds (None: return once started).

    Returns
    -------
    Training

    Raises
    ------
    PrivadError
        The job failed, or did not finish within ``wait`` seconds.
    """
    job = client.train(epochs=epochs, hidden=hidden, seed=seed)
    final = meta = None
    if on_started is not None:
        on_started(job)
    if wait is not None:
        final = client.wait(int(job["job"]), timeout=wait, on_poll=on_poll)
        if final["status"] != "done":
            raise PrivadError(
                f"training job {final['job']} {final['status']}: "
                f"{final.get('error') or 'no reason given'}"
            )
        meta = next((m for m in client.models() if m["id"] == final["model"]), None)
    return Training(job, final, meta)


@dataclass(frozen=True)
class Scoring:
    """What :func:`score` computed: the model's metadata and threshold, each record's
    score and 0/1 label (1 = anomaly: score above the threshold), where the records
    carry two classes of labels the ROC AUC against them, the file the scores were written
    to (or None) and the public bounds' feature scaling of the records (or None).

    Examples
    --------
    >>> import numpy as np
    >>> from privad.services.rmp_jobs import Scoring
    >>> done = Scoring({"id": 1}, 0.5, np.array([0.2, 0.9]), np.array([0, 1]), None)
    >>> done.write("scores.csv", ids=["a", "b"])
    >>> open("scores.csv").read().splitlines()
    ['index,id,score,label', '0,a,0.2,0', '1,b,0.9,1']
    >>> done = Scoring({"id": 1, "n_records": 60, "created_at": "2026-01-02"}, 0.5,
    ...     np.array([0.2, 0.9]), np.array([0, 1]), 0.75)
    >>> print(*done.lines(), sep="\\n")
    model 1 (60 training record(s), created 2026-01-02): threshold 0.5
    records 2, flagged 1 (50.0 %)
    ROC AUC against the labels: 0.7500
    """

    model: dict[str, Any]
    threshold: float
    scores: np.ndarray
    labels: np.ndarray
    roc_auc: float | None
    output: str | Path | None = None
    scaling: BoundsScaling | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (``privad rmp score --json``): the model, its threshold, the
        records and those flagged, the ROC AUC, the file written and the feature scaling."""
        return {
            "model": self.model,
            "threshold": self.threshold,
            "records": self.scores.size,
            "flagged": int(self.labels.sum()),
            "roc_auc": self.roc_auc,
            "output": None if self.output is None else str(self.output),
            "scaling": None if self.scaling is None else self.scaling.to_dict(),
        }

    def lines(self) -> tuple[str, ...]:
        """Lines on the model, the records flagged, the ROC AUC (where known), the feature
        scaling (where any) and the file written (where any)."""
        meta, flagged, m = self.model, int(self.labels.sum()), self.scores.size
        auc = () if self.roc_auc is None else (f"ROC AUC against the labels: {self.roc_auc:.4f}",)
        wrote = () if self.output is None else (f"wrote {self.output}",)
        return (
            f"model {meta['id']} ({meta['n_records']} training record(s), created "
            f"{meta['created_at']}): threshold {self.threshold:.6g}",
            f"records {m}, flagged {flagged} ({100.0 * flagged / m:.1f} %)",
            *auc,
            *_scaling_note(self.scaling),
            *wrote,
        )

    def write(self, path: str | Path, ids: Any = None) -> None:
        """Write ``index[,id],score,label`` per record, atomically: CSV, or Parquet for a
        ``.parquet``/``.pq`` path."""
        import pandas as pd

        from privad.io import atomic_write

        out = Path(path)
        frame = pd.DataFrame(
            {
                "index": np.arange(self.scores.size, dtype=np.int64),
                **({} if ids is None else {"id": ids}),
                "score": self.scores,
                "label": self.labels.astype(np.int64),
            }
        )
        try:
            if out.suffix.lower() == ".csv":
                with atomic_write(out, "w", newline="", encoding="utf-8") as handle:
                    frame.to_csv(handle, index=False)
            else:
                with atomic_write(out, "wb") as handle:
                    frame.to_parquet(handle, index=False)
        except OSError as exc:
            raise ParameterError(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None


def score(
    client: RMPClient,
    X: Any,
    *,
    model: str | int = "latest",
    data: str = "the records",
    names: Any = (),
    y: Any = None,
    output: str | Path | None = None,
    ids: Any = None,
    scaling: BoundsScaling | None = None,
) -> Scoring:
    """Score the records ``X`` locally with a model of the server (end-user).

    ``y``: the records' 0/1 labels, if known (never sent): the ROC AUC is computed against
    them when they hold both classes. ``output``: a file to write the scores to
    (:meth:`Scoring.write`, with the records' ``ids``, if any); ``scaling``: the public
    bounds' feature scaling ``X`` went through (:func:`privad.datasets.scale_to_bounds`),
    reported.

    Raises
    ------
    ParameterError
        The model was trained for another public T than the server's.
    DataError
        Records without the model's n attributes.
    """
    public = client.config()
    meta, fitted = client.model(model)
    if fitted.T.shape != public.T.shape or not np.array_equal(fitted.T, public.T):
        raise ParameterError(
            f"model {meta['id']} was trained for another public T than the server's "
            f"(sha256 {public.t_sha256[:16]} in /v1/config): its scores would be meaningless; "
            "ask the operator to train a model on this server's T"
        )
    X = check_records(X, fitted.n_features, data, names)
    scores = fitted.decision_function(X)
    auc = None
    if y is not None and np.unique(np.asarray(y)).size == 2:
        from sklearn.metrics import roc_auc_score

        auc = float(roc_auc_score(np.asarray(y), scores))
    labels = (scores > fitted.threshold).astype(np.int64)
    done = Scoring(meta, fitted.threshold, scores, labels, auc, output, scaling)
    if output is not None:
        done.write(output, ids)
    return done
