"""``privad rmp``: the participants, the operator and the end-users of the RMP mining server.

``participate DATA`` (perturb with the private T_i, upload only Z_i = T_i Y_i), ``train``
(the operator) and ``score DATA`` (an end-user, with the public T, locally) each parse their
options, make one call into :mod:`privad.services.rmp_jobs` and render the result.
``--exclude COL`` drops columns that are not attributes; ``--id COL`` names the records
(never sent, never an attribute). Every mistake (a bad option, an unknown file, the wrong
number of columns, an unreachable server, a refused request) is one line and exit status 2,
and no output file is left behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import typer

from privad.cli._data import (
    BOUND_OPTION,
    BOUNDS_OPTION,
    EXCLUDE_OPTION,
    ID_OPTION,
    load_table,
    scale_features,
)
from privad.cli._forward import forward
from privad.cli._options import (
    COUNT,
    SECONDS,
    TextType,
    ca_cert_option,
    check_output_path,
    columns_option,
    command_group,
    parse_int,
    public_bounds,
    required_secret,
    retries_option,
    seed_option,
    timeout_option,
)
from privad.cli._render import JSON_OPTION, emit, print_lines
from privad.cli._serve_options import secret_option
from privad.errors import ParameterError

__all__ = ["register", "rmp_app"]

rmp_app = command_group(
    "rmp",
    (
        "Random Multiparty Perturbation (Erfani et al., PAKDD 2014): collaborative anomaly "
        "detection on perturbed data, against a mining server ('privad serve rmp').\n\n"
        "Participants upload only Z_i = T_i Y_i (their private T_i never leaves them); the "
        "server trains an autoencoder; end-users score their own records with the public T. "
        "See docs/rmp_service.md."
    ),
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


def _file_option(name: str, help: str) -> Any:
    """An optional ``NAME PATH``: a file of this participant's or end-user's."""
    return typer.Option(None, name, metavar="PATH", help=help)


def _client(server: str, token: Any, timeout: float, retries: int, ca_cert: Any) -> Any:
    from privad.services.rmp_client import RMPClient

    return RMPClient(server, token, timeout=timeout, retries=retries, verify=ca_cert or True)


def _load(data: str, columns: Any, label: Any, exclude: Any, id_column: Any, bounds: Any) -> Any:
    """DATA's records with the column roles, scaled with the public bounds (if any)."""
    table = load_table(data, columns=columns, label=label, id_column=id_column, exclude=exclude)
    return scale_features(table, bounds, check=False)


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
    batch_size: int = COUNT.option(
        30,
        "--batch-size",
        "M",
        "Records per uploaded batch (default 30, as in the paper; at most the server's max batch).",
    ),
    key_file: str | None = _file_option(
        "--key-file",
        "This participant's private T_i (created with mode 0600 if missing, reused "
        "otherwise; never sent). Default: ~/.privad/rmp/HOST_PORT/key.npz.",
    ),
    token_file: str | None = _file_option(
        "--token-file",
        "This participant's token (saved with mode 0600 at registration, reused "
        "otherwise). Default: ~/.privad/rmp/HOST_PORT/token.json.",
    ),
    name: str | None = typer.Option(
        None,
        "--name",
        metavar="NAME",
        help="The participant name to register under (default: assigned by the server).",
    ),
    registration_token: str | None = secret_option(
        "--registration-token",
        "PRIVAD_RMP_REGISTRATION_TOKEN",
        "The server's registration token, if it has one. Default: $PRIVAD_RMP_REGISTRATION_TOKEN.",
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
    options = dict(locals())  # the parsed options, each named as rmp_jobs.participate names it
    from privad.services.auth import check_name
    from privad.services.rmp_jobs import participate as run_participation

    bounds = public_bounds(bound, bounds_file)
    if name is not None:
        check_name(name, "--name")
    for option, path in (("--key-file", key_file), ("--token-file", token_file)):
        if path:  # the default folder under ~/.privad is privad's own: created when missing
            check_output_path(path, option, "store")
    with _client(server, None, timeout, retries, ca_cert) as client:
        ds, scaling = _load(data, columns, label, exclude, id_column, bounds)
        from privad.cli._progress import StepProgress  # Rich's progress: only here

        with StepProgress(quiet=as_json) as progress:
            task = progress.add_task("uploading batches", total=np.shape(ds.X)[0])
            done = forward(
                run_participation,
                options,
                client,
                ds.X,
                names=ds.feature_names,
                scaling=scaling,
                on_batch=lambda _answer, m: progress.update(task, advance=m),
            )
    emit(done.to_dict(), as_json, lambda console: print_lines(console, done.lines()))


# --------------------------------------------------------------------------------------------
# privad rmp train
# --------------------------------------------------------------------------------------------


@rmp_app.command("train")
def train(
    server: str = SERVER_OPTION,
    token: str | None = secret_option(
        "--token",
        "PRIVAD_RMP_OPERATOR_TOKEN",
        "The operator's token (the server's --operator-token). Default: "
        "$PRIVAD_RMP_OPERATOR_TOKEN.",
    ),
    epochs: int | None = COUNT.option(
        None, "--epochs", "E", "Training epochs (default: the server's --epochs)."
    ),
    hidden: int | None = COUNT.option(
        None, "--hidden", "H", "Hidden units (default: the server's --hidden)."
    ),
    seed: int | None = seed_option("Seed of the training (default: OS entropy)."),
    wait: bool = typer.Option(
        True, "--wait/--no-wait", help="Wait for the model (default) or return once started."
    ),
    max_wait: float = SECONDS.option(
        3600.0, "--max-wait", "S", "Give up waiting after S seconds (3600)."
    ),
    timeout: float = TIMEOUT_OPTION,
    retries: int = RETRIES_OPTION,
    ca_cert: str | None = CA_CERT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train the model on every batch the server holds (operator)."""
    options = dict(locals())  # the parsed options, each named as rmp_jobs.train names it
    from privad.services.rmp_jobs import train as run_training

    secret = required_secret(token, "--token", "PRIVAD_RMP_OPERATOR_TOKEN")
    from privad.cli._progress import StepProgress  # Rich's progress: only here

    with (
        _client(server, secret, timeout, retries, ca_cert) as client,
        StepProgress(quiet=as_json) as progress,
    ):
        task: list[Any] = []

        def started(job: dict[str, Any]) -> None:
            if wait:
                task.append(progress.add_task("training", total=job["options"]["epochs"]))

        def show(state: dict[str, Any]) -> None:
            if (done := (state.get("progress") or {}).get("epoch")) is not None:
                progress.update(task[0], completed=done)

        limit = max_wait if wait else None
        done = forward(run_training, options, client, wait=limit, on_started=started, on_poll=show)
    emit(done.to_dict(), as_json, lambda console: print_lines(console, done.lines()))


# --------------------------------------------------------------------------------------------
# privad rmp score
# --------------------------------------------------------------------------------------------


@rmp_app.command("score")
def score(
    data: str = typer.Argument(..., metavar="DATA", help=DATA_HELP),
    server: str = SERVER_OPTION,
    token: str | None = secret_option(
        "--token",
        "PRIVAD_RMP_TOKEN",
        "An end-user, participant or operator token. Default: $PRIVAD_RMP_TOKEN.",
    ),
    token_file: str | None = _file_option(
        "--token-file",
        "Read the token from this file instead (a participant's token file works).",
    ),
    columns: list[str] | None = COLUMNS_OPTION,
    label: str | None = LABEL_OPTION,
    exclude: list[str] | None = EXCLUDE_OPTION,
    id_column: str | None = ID_OPTION,
    bounds_file: str | None = BOUNDS_OPTION,
    bound: list[Any] | None = BOUND_OPTION,
    model: str = MODEL.option("latest", "--model", "ID", "The model: its id, or latest (default)."),
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
    options = dict(locals())  # the parsed options, each named as rmp_jobs.score names it
    from privad.services.rmp_client import read_token_file
    from privad.services.rmp_jobs import score as run_scoring

    if output is not None and Path(output).suffix.lower() not in OUTPUT_SUFFIXES:
        raise ParameterError(f"--output must end in {', '.join(OUTPUT_SUFFIXES)}, got {output!r}")
    out = None if output is None else check_output_path(output, "--output")
    if token_file is not None:
        secret = read_token_file(token_file)["token"]
    else:
        secret = required_secret(token, "--token", "PRIVAD_RMP_TOKEN")
    ds, scaling = _load(data, columns, label, exclude, id_column, public_bounds(bound, bounds_file))
    with _client(server, secret, timeout, retries, ca_cert) as client:
        given = dict(names=ds.feature_names, y=getattr(ds, "y", None), ids=ds.ids, scaling=scaling)
        done = forward(run_scoring, options, client, ds.X, output=out, **given)
    emit(done.to_dict(), as_json, lambda console: print_lines(console, done.lines()))


def register(app: typer.Typer) -> None:
    """Add the ``rmp`` group to the ``privad`` command."""
    app.add_typer(rmp_app, name="rmp")
