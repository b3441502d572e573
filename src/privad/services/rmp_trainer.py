"""The RMP mining server's trainer: one training job at a time in a worker thread.

A job trains :class:`privad.rmp.roles.MiningServer` (hence
:func:`privad.rmp.model.fit_model`) on a snapshot of the stored batches pooled into Z_all;
the server keeps answering meanwhile. The model is stored with its metadata before the job
is marked done; a shutdown stops the job at its next progress report and marks it
``interrupted``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any, Final

import numpy as np

from privad.errors import DataError, PrivadError
from privad.rmp.aann import AANNTraining, check_training
from privad.services.errors import Conflict, ServiceError
from privad.services.rmp_store import RMPConfig, RMPStore
from privad.validation import check_int

__all__ = ["DEFAULT_EPOCHS", "DEFAULT_TRAINING", "Trainer"]

log = logging.getLogger("privad.services.rmp")

DEFAULT_EPOCHS: Final[int] = 500
"""The server's default training epochs (the paper: 300 to 1000)."""

DEFAULT_TRAINING: Final[AANNTraining] = AANNTraining(epochs=DEFAULT_EPOCHS)
"""The server's default training: :class:`~privad.rmp.aann.AANNTraining`'s defaults with
:data:`DEFAULT_EPOCHS` epochs."""


class _Stopped(Exception):
    """Raised from the progress callback when the server shuts down."""


class Trainer:
    """Runs :func:`privad.rmp.model.fit_model` in a worker thread, one job at a time.

    Parameters
    ----------
    store, config:
        The server's store and configuration.
    training:
        How every job trains the AANN (:class:`~privad.rmp.aann.AANNTraining`); a request
        may override its ``epochs`` and ``hidden``.

    Training is :class:`privad.rmp.roles.MiningServer` (hence
    :func:`privad.rmp.model.fit_model`) on Z_all.
    """

    def __init__(
        self, store: RMPStore, config: RMPConfig, *, training: AANNTraining = DEFAULT_TRAINING
    ) -> None:
        self.store = store
        self.config = config
        self.training = check_training(training)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._job: int | None = None
        self._progress: dict[str, Any] = {}
        self._stop = threading.Event()

    def options(self, body: Any) -> dict[str, Any]:
        """The options of a training request (validated; 422 on a bad one)."""
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise DataError(
                "the body must be a JSON object with optional 'epochs', 'hidden' and 'seed'"
            )
        unknown = sorted(set(body) - {"epochs", "hidden", "seed"})
        if unknown:
            raise DataError(f"unknown field(s) {unknown}; allowed: epochs, hidden, seed")
        for key in ("epochs", "hidden", "seed"):
            if key in body and body[key] is not None and type(body[key]) is not int:
                raise DataError(f"{key} must be an integer, got {body[key]!r}")
        epochs = self.training.epochs if body.get("epochs") is None else body["epochs"]
        hidden = self.training.hidden if body.get("hidden") is None else body["hidden"]
        seed = body.get("seed")
        return {
            "epochs": check_int(epochs, "epochs", minimum=1, maximum=1_000_000),
            "hidden": None
            if hidden is None
            else check_int(hidden, "hidden", minimum=1, maximum=100_000),
            "seed": None if seed is None else check_int(seed, "seed", minimum=0),
        }

    @property
    def running(self) -> int | None:
        """The id of the job in progress, or None."""
        with self._lock:
            alive = self._thread is not None and self._thread.is_alive()
            return self._job if alive else None

    def progress(self) -> dict[str, Any]:
        """What the running job reported last (empty when idle)."""
        return dict(self._progress) if self.running is not None else {}

    def start(self, requested_by: str, body: Any) -> int:
        """Start a job on the batches stored now; its id. :class:`Conflict` when a job is
        running or no batch is stored."""
        options = self.options(body)
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                raise Conflict(
                    f"training job {self._job} is still running; wait for it "
                    f"(GET /v1/jobs/{self._job})"
                )
            if self._stop.is_set():
                raise ServiceError("the server is shutting down", status_code=503)
            Z_all, stats = self.store.pooled(self.config.w)
            if stats["n_records"] < 2:
                raise Conflict(
                    "only 1 record is stored: training needs at least 2 (the "
                    "threshold is mean + 3 std of their reconstruction errors)"
                )
            job = self.store.start_job(requested_by, options, stats)
            self._job = job
            self._progress = {}
            self._thread = threading.Thread(
                target=self._run,
                args=(job, Z_all, stats, options),
                daemon=True,
                name=f"privad-rmp-train-{job}",
            )
            self._thread.start()
        return job

    def _report(self, epoch: int, epochs: int) -> None:
        """``progress(epoch, epochs)`` of :func:`~privad.rmp.aann.train_aann`."""
        if self._stop.is_set():
            raise _Stopped
        self._progress = {"epoch": int(epoch), "epochs": int(epochs)}

    def _run(
        self, job: int, Z_all: np.ndarray, stats: dict[str, int], options: dict[str, Any]
    ) -> None:
        from privad.rmp.roles import MiningServer

        cfg = self.config
        started = time.perf_counter()
        try:
            training = dataclasses.replace(
                self.training, epochs=options["epochs"], hidden=options["hidden"]
            )
            party = MiningServer(
                cfg.T, cfg.alpha, training=training, rng=options["seed"], beta=cfg.beta
            )
            party.receive(Z_all)
            model = party.train(progress=self._report)
            self.store.add_model(
                job,
                model.to_bytes(),
                stats,
                options,
                float(model.threshold),
                time.perf_counter() - started,
            )
        except _Stopped:
            self._finish(
                job, "interrupted", "the server stopped during training; nothing was stored"
            )
        except PrivadError as exc:
            self._finish(job, "failed", str(exc))
        except Exception as exc:  # reported in the job, logged with the traceback
            log.exception("training job %s failed", job)
            self._finish(job, "failed", f"internal error ({type(exc).__name__}: {exc})")

    def _finish(self, job: int, status: str, error: str) -> None:
        try:
            self.store.fail_job(job, status, error)
        except PrivadError:  # the store closed under us: the next start marks it interrupted
            pass

    def stop(self, timeout: float = 10.0) -> None:
        """Stop a running job at its next progress report and wait for it."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
