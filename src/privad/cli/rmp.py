"""``privad rmp``: the participants, the operator and the end-users of the RMP mining server.

* ``privad rmp participate DATA --server URL``: read DATA (a file or a catalogue name, the
  loaders of ``privad sp``), check that it has the server's n attributes, register (or reuse
  the saved token), create or load the participant's private T_i (the key file, mode 0600,
  never sent anywhere), perturb locally (double logistic, then T_i) and upload the batches
  with a progress bar. Only Z_i = T_i Y_i leaves the machine.
* ``privad rmp train --server URL --token SECRET``: the operator starts training on every
  stored batch and waits for the model.
* ``privad rmp score DATA --server URL --token SECRET``: an end-user (or participant)
  downloads the latest model, applies the double logistic and the public T locally and
  scores DATA: a summary, and with ``--output FILE`` one row per record (``index, score,
  label``, with ``--id COL`` also the record's ``id``; CSV, or Parquet for
  ``.parquet``/``.pq``), written atomically.

``--exclude COL`` drops columns that are not attributes; ``--id COL`` names the records
(never sent, never an attribute).

Every mistake (a bad option, an unknown file, the wrong number of columns, an unreachable
server, a refused request) is a :class:`~privad.errors.PrivadError`: ``privad.cli.main``
prints it on one line and exits 2, and no output file is left behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import typer

from privad.cli._data import (
    BOUND_OPTION,
    BOUNDS_OPTION,
    EXCLUDE_OPTION,
    ID_OPTION,
    load_table,
    scale_features,
    scaling_text,
)
from privad.cli._options import (
    COUNT,
    SECONDS,
    TextType,
    ca_cert_option,
    check_output_path,
    columns_option,
    parse_int,
    public_bounds,
    required_secret,
    retries_option,
    seed_option,
    timeout_option,
)
from privad.cli._render import JSON_OPTION, StepProgress, emit, print_lines, warn
from privad.errors import DataError, ParameterError, PrivadError

__all__ = ["register", "rmp_app"]

rmp_app = typer.Typer(
    name="rmp",
    help=(
        "Random Multiparty Perturbation (Erfani et al., PAKDD 2014): collaborative anomaly "
        "detection on perturbed data, against a mining server ('privad serve rmp').\n\n"
        "Participants upload only Z_i = T_i Y_i (their private T_i never leaves them); the "
        "server trains an autoencoder; end-users score their own records with the public T. "
        "See docs/rmp_service.md."
    ),
    no_args_is_help=True,
    add_completion=False,
)

OUTPUT_SUFFIXES = (".csv", ".parquet", ".pq")

SERVER_OPTION: Any = typer.Option(
    ..., "--server", metavar="URL", help="The mining server, e.g. http://127.0.0.1:8704."
)
COLUMNS_OPTION: Any = columns_option(
    help="Attribute columns, by name or 0-based position; repeat or separate with commas. "
    "Default: every column except --label. Their number must be the server's n.",
)
LABEL_OPTION: Any = typer.Option(
    None,
    "--label",
    metavar="COL",
    help="Where the 0/1 labels are (never sent; score reports the ROC AUC against them), "
    "the rule of every command: a column by name or 0-based position, left out of the "
    "attributes; in a .npz or .mat file first an array stored beside the data. Default: "
    "the array y of a .npz or .mat file, a catalogue dataset's own labels; none for CSV "
    "and Parquet. See docs/data.md.",
)
DATA_HELP = (
    "A data file (.csv, .parquet, .npy, .npz, .mat) or a dataset name from 'privad datasets "
    "list'; one record per row."
)
TIMEOUT_OPTION: Any = timeout_option()
RETRIES_OPTION: Any = retries_option(
    "Extra attempts after a connection failure or 502/503/504 (uploads are safe to "
    "retry: the server never stores an identical batch twice)."
)
CA_CERT_OPTION: Any = ca_cert_option("server")


class _Model(TextType):
    """``--model``: latest, or a model id >= 1 (as text, the path of the request)."""

    name = "model"

    def parse(self, text: str, option: str) -> str:
        ref = text.strip().lower()
        if ref == "latest":
            return ref
        return str(parse_int(ref, option, minimum=1, what="a model id >= 1 or latest"))


MODEL = _Model()


def _client(
    server: str, token: str | None, timeout: float, retries: int, ca_cert: str | None
) -> Any:
    from privad.services.rmp_client import RMPClient

    return RMPClient(
        server,
        token,
        timeout=timeout,
        retries=retries,
        verify=ca_cert or True,
    )


def _load(
    data: str,
    columns: list[str] | None,
    label: str | None,
    exclude: list[str] | None,
    id_column: str | None,
    bounds: dict[str, tuple[float, float]] | None,
) -> tuple[Any, Any]:
    """DATA's records with the column roles, scaled with the public bounds (if any)."""
    return scale_features(
        load_table(
            data,
            columns=columns,
            label=label,
            id_column=id_column,
            exclude=exclude,
        ),
        bounds,
        check=False,
    )


def _check_width(ds: Any, n: int, data: str) -> np.ndarray:
    X = np.asarray(ds.X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise DataError(f"{data}: no records")
    if X.shape[1] != n:
        names = ", ".join(str(c) for c in list(ds.feature_names)[:12])
        raise DataError(
            f"{data} has {X.shape[1]} attribute column(s) ({names}) but the server's records "
            f"have n = {n}; choose the columns with --columns (and leave a label out with "
            "--label)"
        )
    outside = int(np.count_nonzero(np.abs(X) > 1.0))
    if outside:
        warn(
            f"{outside} value(s) of {data} lie outside [-1, 1]; RMP expects records scaled "
            "to [0, 1] with bounds all parties share (the double logistic saturates beyond): "
            "give them with --bounds FILE or --bound COL=LO:HI"
        )
    return X


def _default_dir(server: str) -> Path:
    netloc = urlsplit(server.strip()).netloc or "server"
    safe = "".join(c if c.isalnum() or c in ".-" else "_" for c in netloc)
    return Path.home() / ".privad" / "rmp" / safe


def _save_token(
    path: Path, server: str, t_sha256: str, secret: str, name: str | None, participant: str | None
) -> dict[str, Any]:
    """Write a participant's token file (mode 0600); ``participant`` None: not registered
    yet (the next run repeats the registration with the same secret)."""
    from privad.services.rmp_client import write_private

    record = {
        "server": server,
        "participant": participant,
        "name": name,
        "token": secret,
        "t_sha256": t_sha256,
    }
    write_private(path, (json.dumps(record, indent=2) + "\n").encode())
    return record


def _register(client: Any, name: str | None, registration_token: str | None, secret: str) -> str:
    """Register ``secret``'s digest (idempotent); the participant name."""
    from privad.services.errors import ServiceError

    token_v = None if registration_token is None else registration_token.strip() or None
    try:
        return client.register(name, registration_token=token_v, secret=secret)[0]
    except ServiceError as exc:
        if exc.status_code not in (401, 403):
            raise
        raise ParameterError(
            f"{client.base_url} refused the registration ({exc.status_code}: "
            f"{getattr(exc, 'detail', exc)}): it needs its registration token, give "
            "--registration-token (or set $PRIVAD_RMP_REGISTRATION_TOKEN)"
        ) from None


# --------------------------------------------------------------------------------------------
# privad rmp participate
# --------------------------------------------------------------------------------------------


@rmp_app.command("participate")
def participate(
    data: str = typer.Argument(..., metavar="DATA", help=DATA_HELP),
    server: str = SERVER_OPTION,
    columns: list[str] | None = COLUMNS_OPTION,
    label: str | None = LABEL_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    id_column: str | None = typer.Option(
        None,
        "--id",
        metavar="COL",
        help="The column that identifies records (numbers or text): not an attribute, never sent.",
    ),
    bounds_file: str | None = BOUNDS_OPTION,
    bound: list[Any] | None = BOUND_OPTION,
    batch_size: int = typer.Option(
        30,
        "--batch-size",
        metavar="M",
        help="Records per uploaded batch (default 30, as in the paper; at most the server's "
        "max batch).",
        parser=COUNT.bind("--batch-size"),
    ),
    key_file: str | None = typer.Option(
        None,
        "--key-file",
        metavar="PATH",
        help="This participant's private T_i (created with mode 0600 if missing, reused "
        "otherwise; never sent). Default: ~/.privad/rmp/HOST_PORT/key.npz.",
    ),
    token_file: str | None = typer.Option(
        None,
        "--token-file",
        metavar="PATH",
        help="This participant's token (saved with mode 0600 at registration, reused "
        "otherwise). Default: ~/.privad/rmp/HOST_PORT/token.json.",
    ),
    name: str | None = typer.Option(
        None,
        "--name",
        metavar="NAME",
        help="The participant name to register under (default: assigned by the server).",
    ),
    registration_token: str | None = typer.Option(
        None,
        "--registration-token",
        metavar="SECRET",
        envvar="PRIVAD_RMP_REGISTRATION_TOKEN",
        help="The server's registration token, if it has one. Default: "
        "$PRIVAD_RMP_REGISTRATION_TOKEN.",
    ),
    seed: int | None = seed_option(
        "Seed of a new T_i, FOR TESTS ONLY: whoever knows it can rebuild T_i. Default: OS entropy."
    ),
    timeout: float = TIMEOUT_OPTION,
    retries: int = RETRIES_OPTION,
    ca_cert: str | None = CA_CERT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Perturb DATA with this participant's private T_i and upload it to the mining server."""
    from privad.rmp.roles import Participant
    from privad.services.auth import check_name
    from privad.services.errors import ServiceError
    from privad.services.rmp_client import (
        new_participant_secret,
        read_token_file,
        upload_records,
        write_private,
    )

    size, seed_v = batch_size, seed
    bounds = public_bounds(bound, bounds_file)
    if name is not None:
        check_name(name, "--name")
    for option, path in (("--key-file", key_file), ("--token-file", token_file)):
        if path:  # the default folder under ~/.privad is privad's own: created when missing
            check_output_path(path, option, "store")
    client = _client(server, None, timeout, retries, ca_cert)
    with client:
        ds, scaling = _load(data, columns, label, exclude, id_column, bounds)
        remote = client.config()
        X = _check_width(ds, remote.n, data)
        if size > remote.max_batch:
            raise ParameterError(
                f"--batch-size {size} is more than the server accepts per "
                f"batch ({remote.max_batch})"
            )
        folder = _default_dir(client.base_url)
        key_path = Path(key_file).expanduser() if key_file else folder / "key.npz"
        token_path = Path(token_file).expanduser() if token_file else folder / "token.json"
        notes: list[str] = []
        who, mine = "", {"batches": []}
        saved = read_token_file(token_path) if token_path.exists() else None
        if saved is not None and "participant" in saved and saved["participant"] is None:
            # a registration whose answer never came: repeat it with the same secret
            who = _register(client, saved.get("name"), registration_token, saved["token"])
            saved = _save_token(
                token_path, client.base_url, remote.t_sha256, saved["token"], saved.get("name"), who
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
        if key_path.exists():
            participant = Participant.load_key(key_path, remote.T)
            if (participant.alpha, participant.beta) != (remote.config.alpha, remote.config.beta):
                raise DataError(
                    f"key file {str(key_path)!r} has alpha {participant.alpha:g}, beta "
                    f"{participant.beta:g}; the server uses alpha {remote.config.alpha:g}, "
                    f"beta {remote.config.beta:g}"
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
            participant = Participant(
                remote.T, remote.config.alpha, seed_v, beta=remote.config.beta
            )
            write_private(key_path, participant.to_key_bytes())
            notes.append(f"new private T_i saved to {key_path} (mode 0600; never sent)")
        if saved is None:
            # the secret is saved before it is registered: a lost answer is retried by
            # running the command again (the server knows only the secret's digest)
            secret = new_participant_secret()
            _save_token(token_path, client.base_url, remote.t_sha256, secret, name, None)
            who = _register(client, name, registration_token, secret)
            _save_token(token_path, client.base_url, remote.t_sha256, secret, name, who)
            notes.append(
                f"registered as participant {who}; token saved to {token_path} (mode 0600)"
            )
        with StepProgress(quiet=as_json) as progress:
            task = progress.add_task("uploading batches", total=X.shape[0])
            report = upload_records(
                client,
                participant,
                X,
                batch_size=size,
                on_batch=lambda _answer, m: progress.update(task, advance=m),
            )
    again = f", {report.duplicates} already stored" if report.duplicates else ""
    payload = {
        "server": client.base_url,
        "participant": who,
        "records": report.records,
        "attributes": remote.n,
        "batches": report.batches,
        "stored": report.stored,
        "duplicates": report.duplicates,
        "notes": notes,
        "scaling": None if scaling is None else scaling.to_dict(),
    }
    if scaling is not None:
        notes.append(f"feature scaling: {scaling_text(scaling)}")
    emit(
        payload,
        as_json,
        lambda console: print_lines(
            console,
            [
                *notes,
                f"uploaded {report.records} record(s) of {remote.n} attributes in "
                f"{report.batches} batch(es) to {client.base_url}: {report.stored} new{again}",
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# privad rmp train
# --------------------------------------------------------------------------------------------


@rmp_app.command("train")
def train(
    server: str = SERVER_OPTION,
    token: str | None = typer.Option(
        None,
        "--token",
        metavar="SECRET",
        envvar="PRIVAD_RMP_OPERATOR_TOKEN",
        help="The operator's token (the server's --operator-token). Default: "
        "$PRIVAD_RMP_OPERATOR_TOKEN.",
    ),
    epochs: int | None = typer.Option(
        None,
        "--epochs",
        metavar="E",
        help="Training epochs (default: the server's --epochs).",
        parser=COUNT.bind("--epochs"),
    ),
    hidden: int | None = typer.Option(
        None,
        "--hidden",
        metavar="H",
        help="Hidden units (default: the server's --hidden).",
        parser=COUNT.bind("--hidden"),
    ),
    seed: int | None = seed_option("Seed of the training (default: OS entropy)."),
    wait: bool = typer.Option(
        True, "--wait/--no-wait", help="Wait for the model (default) or return once started."
    ),
    max_wait: float = typer.Option(
        3600.0,
        "--max-wait",
        metavar="S",
        help="Give up waiting after S seconds (3600).",
        parser=SECONDS.bind("--max-wait"),
    ),
    timeout: float = TIMEOUT_OPTION,
    retries: int = RETRIES_OPTION,
    ca_cert: str | None = CA_CERT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train the model on every batch the server holds (operator)."""
    epochs_v, hidden_v, seed_v, limit = epochs, hidden, seed, max_wait
    secret = required_secret(token, "--token", "PRIVAD_RMP_OPERATOR_TOKEN")
    meta = final = None
    with (
        _client(server, secret, timeout, retries, ca_cert) as client,
        StepProgress(quiet=as_json) as progress,
    ):
        job = client.train(epochs=epochs_v, hidden=hidden_v, seed=seed_v)
        started = (
            f"training job {job['job']} started on {job['n_records']} record(s) from "
            f"{job['n_batches']} batch(es) of {job['n_participants']} participant(s), "
            f"{job['options']['epochs']} epochs"
        )
        if wait:
            task = progress.add_task("training", total=job["options"]["epochs"])

            def show(state: dict[str, Any]) -> None:
                done = (state.get("progress") or {}).get("epoch")
                if done is not None:
                    progress.update(task, completed=done)

            final = client.wait(int(job["job"]), timeout=limit, on_poll=show)
            if final["status"] != "done":
                raise PrivadError(
                    f"training job {final['job']} {final['status']}: "
                    f"{final.get('error') or 'no reason given'}"
                )
            meta = next((m for m in client.models() if m["id"] == final["model"]), None)
    lines = [started]
    if final is not None and meta is None:
        lines.append(f"model {final['model']} stored")
    elif meta is not None:
        threshold = "n/a" if meta["threshold"] is None else f"{meta['threshold']:.6g}"
        lines.append(
            f"model {meta['id']}: {meta['n_records']} record(s), {meta['n_batches']} "
            f"batch(es), {meta['n_participants']} participant(s); threshold "
            f"{threshold}; trained in {meta['train_seconds']:.2f} s"
        )
    payload = {"job": job, "result": final, "model": meta}
    emit(payload, as_json, lambda console: print_lines(console, lines))


# --------------------------------------------------------------------------------------------
# privad rmp score
# --------------------------------------------------------------------------------------------


def _write_scores(
    out: Path, scores: np.ndarray, labels: np.ndarray, ids: np.ndarray | None
) -> None:
    import pandas as pd

    from privad.io import atomic_write

    frame = pd.DataFrame(
        {
            "index": np.arange(scores.size, dtype=np.int64),
            **({} if ids is None else {"id": ids}),
            "score": scores,
            "label": labels.astype(np.int64),
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


@rmp_app.command("score")
def score(
    data: str = typer.Argument(..., metavar="DATA", help=DATA_HELP),
    server: str = SERVER_OPTION,
    token: str | None = typer.Option(
        None,
        "--token",
        metavar="SECRET",
        envvar="PRIVAD_RMP_TOKEN",
        help="An end-user, participant or operator token. Default: $PRIVAD_RMP_TOKEN.",
    ),
    token_file: str | None = typer.Option(
        None,
        "--token-file",
        metavar="PATH",
        help="Read the token from this file instead (a participant's token file works).",
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    label: str | None = LABEL_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    id_column: str | None = ID_OPTION,
    bounds_file: str | None = BOUNDS_OPTION,
    bound: list[Any] | None = BOUND_OPTION,
    model: str = typer.Option(
        "latest",
        "--model",
        metavar="ID",
        parser=MODEL.bind("--model"),
        help="The model: its id, or latest (default).",
    ),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE",
        help="Write index,score,label per record (label 1 = anomaly; index,id,score,label with "
        "--id): .csv, or .parquet/.pq.",
    ),
    timeout: float = TIMEOUT_OPTION,
    retries: int = RETRIES_OPTION,
    ca_cert: str | None = CA_CERT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Score DATA locally with the server's latest model and the public T (end-user)."""
    from privad.services.rmp_client import read_token_file

    if output is not None and Path(output).suffix.lower() not in OUTPUT_SUFFIXES:
        raise ParameterError(f"--output must end in {', '.join(OUTPUT_SUFFIXES)}, got {output!r}")
    out = None if output is None else check_output_path(output, "--output")
    ref = model
    if token_file is not None:
        secret = read_token_file(token_file)["token"]
    else:
        secret = required_secret(token, "--token", "PRIVAD_RMP_TOKEN")
    ds, scaling = _load(data, columns, label, exclude, id_column, public_bounds(bound, bounds_file))
    with _client(server, secret, timeout, retries, ca_cert) as client:
        public = client.config()
        meta, fitted = client.model(ref)
    if fitted.T.shape != public.T.shape or not np.array_equal(fitted.T, public.T):
        raise ParameterError(
            f"model {meta['id']} was trained for another public T than the server's "
            f"(sha256 {public.t_sha256[:16]} in /v1/config): its scores would be meaningless; "
            "ask the operator to train a model on this server's T"
        )
    X = _check_width(ds, fitted.n_features, data)
    scores = fitted.decision_function(X)
    labels = (scores > fitted.threshold).astype(np.int64)
    if out is not None:
        _write_scores(out, scores, labels, ds.ids)
    flagged = int(labels.sum())
    lines = [
        f"model {meta['id']} ({meta['n_records']} training record(s), created "
        f"{meta['created_at']}): threshold {fitted.threshold:.6g}",
        f"records {X.shape[0]}, flagged {flagged} ({100.0 * flagged / X.shape[0]:.1f} %)",
    ]
    y = getattr(ds, "y", None)
    auc = None
    if y is not None and np.unique(np.asarray(y)).size == 2:
        from sklearn.metrics import roc_auc_score

        auc = float(roc_auc_score(np.asarray(y), scores))
        lines.append(f"ROC AUC against the labels: {auc:.4f}")
    if scaling is not None:
        lines.append(f"feature scaling: {scaling_text(scaling)}")
    if out is not None:
        lines.append(f"wrote {out}")
    payload = {
        "model": meta,
        "threshold": fitted.threshold,
        "records": X.shape[0],
        "flagged": flagged,
        "roc_auc": auc,
        "output": out,
        "scaling": None if scaling is None else scaling.to_dict(),
    }
    emit(payload, as_json, lambda console: print_lines(console, lines))


def register(app: typer.Typer) -> None:
    """Add the ``rmp`` group to the ``privad`` command."""
    app.add_typer(rmp_app, name="rmp")
