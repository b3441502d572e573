"""The sensor's perturbation (steps 1a–1c) applied partition by partition, for large archives.

:func:`perturb_archive` is the release path of a perturbed archive (``privad sensor
perturb``): check and reserve each partition's guarantee, perturb on the workers, write the
parts into a staging folder, rename it into place, commit.

:func:`perturb_partitions` takes a configured :class:`~privad.relaxed.Sensor` and records
held as a Dask array (row chunks = partitions, e.g.
:attr:`privad.distributed.PartitionedTable.records`) and returns lazy Dask arrays:

* 𝒯' (step 1a then 1b): each partition is scaled by the public divisors and perturbed with
  :func:`~privad.relaxed.perturbation.laplace_columns` at the sensor's noise scales, on the
  worker that holds it;
* optionally d_diff (step 1c, :func:`~privad.relaxed.distances.distance_differences`), with
  the centres c and c' of the *whole* archive (column means computed by a Dask reduction,
  so they equal the single-machine centres up to the order of floating-point summation).

Independent noise per partition
    Each partition gets its own child stream, ``rng.spawn(npartitions)`` drawn on the
    driver and shipped with the partition's task: no seed is shared between partitions, two
    partitions never draw the same numbers (identical partitions get different noise), and
    a fixed seed reproduces the whole output for the same partitioning. The noise of a
    record therefore depends on how the archive is partitioned; its distribution does not.
    Noise of one record is drawn once, so the Theorem 2 guarantee of the sensor holds per
    record exactly as in the single-machine code (disjoint records: parallel composition),
    and the job is accounted once (``sensor.guarantee()``), not once per partition.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privad.accounting.guarantee import Guarantee
from privad.errors import DataError, ParameterError
from privad.noise import as_randomness
from privad.relaxed.distances import centre_distances
from privad.relaxed.parties import Sensor
from privad.relaxed.perturbation import laplace_columns
from privad.relaxed.scaling import scale_columns
from privad.relaxed.sensitivity import column_sensitivities
from privad.validation import check_array

__all__ = ["ArchiveRelease", "PartitionedPerturbation", "perturb_archive", "perturb_partitions"]


@dataclass(frozen=True, eq=False)
class PartitionedPerturbation:
    """What :func:`perturb_partitions` returns (lazy Dask arrays, chunked like the input rows).

    Attributes
    ----------
    perturbed
        𝒯' (n × d float64, scaled space), what the analyst receives.
    differences
        d_diff (n,), what the correction server receives, or None.
    divisors
        the step-1a divisors (public).
    noise_scale
        the Laplace scale per column in the scaled space (public).
    n_partitions
        number of row partitions (each drew from its own child stream).
    """

    perturbed: Any
    differences: Any
    divisors: np.ndarray
    noise_scale: np.ndarray
    n_partitions: int


def _perturb_block(
    block: np.ndarray, divisors: np.ndarray, scales: np.ndarray, rng: Any
) -> np.ndarray:
    """Steps 1a and 1b on one partition, with that partition's own stream.

    The stream is copied first, so a task that runs again (a retry, or a second
    ``compute`` of the same graph in this process) draws the same noise: 𝒯' and d_diff
    computed separately always belong together.
    """
    T = check_array(block, "data", min_rows=0)
    if T.shape[0] == 0:
        return np.empty((0, T.shape[1]), dtype=np.float64)
    return laplace_columns(scale_columns(T, divisors), scales, copy.deepcopy(rng))


def _scaled_block(block: np.ndarray, divisors: np.ndarray) -> np.ndarray:
    return scale_columns(np.asarray(block, dtype=np.float64), divisors)


def _difference_block(
    T: np.ndarray, Tp: np.ndarray, c: np.ndarray, c_prime: np.ndarray
) -> np.ndarray:
    """Step 1c on one partition, with the archive's centres."""
    if T.shape[0] == 0:
        return np.empty(0, dtype=np.float64)
    return centre_distances(Tp, c_prime) - centre_distances(T, c)


def perturb_partitions(
    sensor: Sensor, data: Any, *, rng: Any = None, differences: bool = False
) -> PartitionedPerturbation:
    """Steps 1a–1b (and 1c with ``differences``) of ``sensor`` on each partition of ``data``.

    Parameters
    ----------
    sensor:
        The configured :class:`~privad.relaxed.Sensor` (ε, relaxed sensitivities, scaling,
        d_diff centres). Its guarantee (:meth:`~privad.relaxed.Sensor.guarantee`) is the
        whole job's, to be charged once.
    data:
        (n × d) Dask array of measurements (row chunks are the partitions; empty ones are
        allowed), or any array, which is then treated as one partition.
    rng:
        A :class:`~privad.noise.Randomness` or a seed; None (default): the sensor's own
        stream. One child stream per partition is spawned from it on the driver (spawning
        again gives new children, so two jobs never share noise). **Never seed a real
        release.**
    differences:
        Also return d_diff (step 1c) with the archive-wide centres.

    Raises
    ------
    DataError
        ``data`` is not 2-D, has another number of columns than the sensor, or (on the
        workers) holds a NaN or infinite value.
    """
    import dask
    import dask.array as da

    if not isinstance(sensor, Sensor):
        raise ParameterError(f"sensor must be a privad.relaxed.Sensor, got {type(sensor).__name__}")
    X = (
        data
        if isinstance(data, da.Array)
        else da.from_array(check_array(data, "data"), chunks=(-1, -1))
    )
    if X.ndim != 2 or X.shape[1] != sensor.n_columns:
        raise DataError(
            f"data must be an n × {sensor.n_columns} array (one column per relaxed "
            f"sensitivity), got shape {X.shape}"
        )
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    X = X.astype(np.float64).rechunk({1: -1})
    d = sensor.n_columns
    blocks = X.to_delayed().ravel()
    parent = sensor._rng if rng is None else as_randomness(rng)
    streams = parent.spawn(len(blocks))
    divisors, scales = sensor.divisors, sensor.noise_scale
    perturbed = da.concatenate(
        [
            da.from_delayed(
                dask.delayed(_perturb_block, pure=False)(b, divisors, scales, s),
                shape=(n, d),
                dtype=np.float64,
            )
            for b, n, s in zip(blocks, X.chunks[0], streams, strict=True)
        ],
        axis=0,
    )
    if perturbed.chunks[0] != X.chunks[0]:  # concatenate drops empty partitions: put them back
        perturbed = perturbed.rechunk({0: X.chunks[0]})
    diff = None
    if differences:
        n = X.shape[0]
        if n == 0:
            raise DataError("data has no records: d_diff needs the centre of at least one")
        T = X.map_blocks(_scaled_block, divisors, dtype=np.float64)
        c = T.sum(axis=0) / n
        c_prime = perturbed.sum(axis=0) / n if sensor.d_diff_centres == "separate" else c
        diff = da.map_blocks(
            _difference_block,
            T,
            perturbed,
            c,
            c_prime,
            drop_axis=1,
            dtype=np.float64,
            chunks=(X.chunks[0],),
        )
    return PartitionedPerturbation(
        perturbed=perturbed,
        differences=diff,
        divisors=divisors,
        noise_scale=scales,
        n_partitions=len(blocks),
    )


@dataclass(frozen=True, eq=False)
class ArchiveRelease:
    """What :func:`perturb_archive` released (all of it public).

    Attributes
    ----------
    records, columns, partitions
        the archive's number of records, its perturbed columns and its partitions.
    divisors, noise_scale
        step 1a's divisors and the Laplace scale per column in the scaled space.
    guarantee
        what each partition's scope was charged (Theorem 2, :meth:`Sensor.guarantee`).
    scope, scopes
        the base name of the ledger scopes, and the scope of each partition
        (``SCOPE/rows-DIGEST``).
    ledger, output
        the ledger's path and the output folder.
    """

    records: int
    columns: tuple[str, ...]
    partitions: int
    divisors: np.ndarray
    noise_scale: np.ndarray
    guarantee: Guarantee
    scope: str
    scopes: tuple[str, ...]
    ledger: str
    output: Path

    def to_dict(self) -> dict[str, Any]:
        """The release as JSON-ready data (``privad sensor perturb --json``)."""
        return {
            "records": self.records,
            "columns": list(self.columns),
            "partitions": self.partitions,
            "divisors": self.divisors.tolist(),
            "noise_scale": self.noise_scale.tolist(),
            "guarantee": self.guarantee.to_dict(),
            "scopes": list(self.scopes),
            "ledger": self.ledger,
            "output": str(self.output),
        }

    def lines(self) -> tuple[str, ...]:
        """The release as text (``privad sensor perturb``): the records perturbed, step 1a's
        divisors and the Laplace scales, the charge and the output.

        Examples
        --------
        >>> import numpy as np
        >>> from privad.accounting import Guarantee
        >>> from privad.relaxed.distributed import ArchiveRelease
        >>> g = Guarantee("pure-dp", 2.0, "add or remove one record", description="perturbation")
        >>> r = ArchiveRelease(10, ("a", "b"), 2, np.array([2.0, 4.0]), np.array([0.5, 1 / 3]),
        ...     g, "s", ("s/rows-1", "s/rows-2"), "ledger.sqlite", Path("out"))
        >>> print(*r.lines()[:2], r.lines()[3], sep="\\n")
        perturbed 10 record(s) x 2 column(s) in 2 partition(s), each with its own noise stream
        divisors (step 1a): 2, 4; Laplace scale per column (scaled space): 0.5, 0.333333
        output: out
        """

        def listed(values: np.ndarray) -> str:
            return ", ".join(f"{v:.6g}" for v in values.tolist())

        return (
            f"perturbed {self.records} record(s) x {len(self.columns)} column(s) in "
            f"{self.partitions} partition(s), each with its own noise stream",
            f"divisors (step 1a): {listed(self.divisors)}; "
            f"Laplace scale per column (scaled space): {listed(self.noise_scale)}",
            f"charged once per partition: {self.guarantee.summary()} to scopes "
            f"{self.scope}/rows-DIGEST (the content digest of each partition's records) in "
            f"{self.ledger}",
            f"output: {self.output}",
        )


def perturb_archive(
    archive: str,
    out: str | os.PathLike[str],
    *,
    epsilon: float,
    relaxed_sensitivity: Any,
    global_sensitivity: Any,
    scaling: Any = "relaxed-sensitivity",
    guarantee_unit: str = "record",
    columns: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    ledger: str | os.PathLike[str] | None = None,
    scope: str = "relaxed-sensor",
    budget: float | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    worker_timeout: float | None = None,
    rng: Any = None,
    step: Callable[[str], Any] | None = None,
) -> ArchiveRelease:
    """Perturb an archive at the source on a Dask cluster: the archive's one release path.

    Steps 1a–1b of :class:`~privad.relaxed.Sensor` on every partition, each with its own
    noise stream (:func:`perturb_partitions`). The output is what the analyst receives, 𝒯'.
    The order is the release path's: the sensor is built and validated once; every
    partition's guarantee (Theorem 2, ``Sensor.guarantee()``: ε per non-outlier record,
    ε' = ε·GS/RS for outliers) is checked in scope ``f"{scope}/rows-{DIGEST}"`` (the
    content digest of the partition's records, :func:`privad.io.rows_digest`) before any
    noise is drawn, then reserved; the workers perturb and write the parts into a staging
    folder, which is made durable and renamed to ``out``; then every reservation is
    committed. A failure before the rename cancels them all and leaves no folder.

    Parameters
    ----------
    archive:
        A Parquet folder or file, or CSV files (a glob); each file is a partition.
    out:
        A new folder for the perturbed archive (one Parquet part per input partition:
        ``index`` and the perturbed columns, in the scaled space of step 1a).
    epsilon, relaxed_sensitivity, global_sensitivity, scaling, guarantee_unit:
        The sensor's parameters (:class:`~privad.relaxed.Sensor`); ``relaxed_sensitivity``
        (RS_j of eq. 1, from past data, never from the archive it protects) and
        ``global_sensitivity`` (GS_j) are a number for every column or one per column.
    columns, exclude:
        The archive's columns to perturb (names or positions), or to leave out.
    ledger:
        The privacy ledger's path; default ``$PRIVAD_LEDGER`` or ``~/.privad/ledger.sqlite``.
    scope:
        The base name of the partitions' scopes.
    budget:
        The total ε of a partition's scope when it has none yet. Default: one release, so
        the same records (in a copy of the archive too) are never released twice; two
        identical partitions in one archive are then refused.
    scheduler, workers, worker_timeout:
        The Dask cluster (:func:`privad.distributed.dask_client`; default a local one).
    rng:
        A seed or :class:`~privad.noise.Randomness`; ``None``: OS entropy. **Never seed a
        real release.**
    step:
        ``step(text)`` returns a context manager around each stage (progress display).

    Returns
    -------
    ArchiveRelease

    Raises
    ------
    BudgetExceededError
        A partition's scope cannot pay (nothing drawn, nothing written).
    DataError
        RS or GS do not match the archive's columns, or two partitions hold identical
        records without ``budget``.

    Examples
    --------
    >>> import pandas as pd
    >>> from privad.relaxed import perturb_archive
    >>> pd.DataFrame({"t": [20.5, 21.0, 22.5]}).to_parquet("archive.parquet")
    >>> perturb_archive("archive.parquet", "perturbed", epsilon=1.0,
    ...     relaxed_sensitivity=[2.0, 3.0], global_sensitivity=10.0)  # checked first
    Traceback (most recent call last):
    ...
    privad.errors.DataError: archive.parquet has 1 column(s) but 2 relaxed sensitivities were given

    On a cluster (a local one here, which takes seconds to start):

    >>> r = perturb_archive("archive.parquet", "perturbed", epsilon=1.0,
    ...     relaxed_sensitivity=2.0, global_sensitivity=10.0, ledger="ledger.sqlite",
    ...     workers=1, rng=7)  # doctest: +SKIP
    >>> r.records, r.partitions, r.guarantee.epsilon  # doctest: +SKIP
    (3, 1, 1.0)
    """
    import dask

    from privad.accounting import Ledger, default_ledger_path
    from privad.distributed import (
        check_new_folder,
        dask_client,
        open_partitioned,
        release_folder,
        write_columns,
    )
    from privad.io import rows_digest

    stage = step or (lambda text: contextlib.nullcontext())
    source = open_partitioned(archive, columns=columns, exclude=exclude)
    target = check_new_folder(out, "out")
    rs = column_sensitivities(relaxed_sensitivity, len(source.feature_names), archive)
    sensor = Sensor(
        epsilon,
        rs,
        scaling=scaling,
        global_sensitivity=global_sensitivity,
        guarantee_unit=guarantee_unit,
        rng=rng,  # type: ignore[arg-type]
    )
    g = sensor.guarantee()
    book = Ledger(
        ledger if ledger is not None else default_ledger_path(),
        create=True,
        default_budget=budget if budget is not None else g.epsilon,
    )
    with book, contextlib.ExitStack() as stack:
        with stage("starting the Dask cluster"):
            stack.enter_context(
                dask_client(scheduler, workers=workers, worker_timeout=worker_timeout)
            )
        with stage(f"reading and digesting the partitions of {archive}"):
            table = source.load()
            blocks = table.records.to_delayed().ravel()
            digests = dask.compute(*[dask.delayed(rows_digest)(b) for b in blocks])
        scopes = tuple(f"{scope}/rows-{h[:32]}" for h in digests)
        for k, sc in enumerate(scopes):  # refused before any noise is drawn
            book.check(sc, g)
            if scopes.index(sc) != k and budget is None:
                raise DataError(
                    f"partitions {scopes.index(sc)} and {k} of {archive} hold identical "
                    "records: two noisy copies would release them twice (give a budget to "
                    "allow it, charged twice)"
                )
        job = perturb_partitions(sensor, table.records)
        with (
            stage(f"perturbing {table.n_partitions} partition(s) and writing {target}"),
            contextlib.ExitStack() as spends,
        ):
            for k, (sc, h) in enumerate(zip(scopes, digests, strict=True)):
                spends.enter_context(
                    book.reserve(
                        sc,
                        g,
                        f"relaxed-DP perturbation of partition {k} of {archive} "
                        f"({table.lengths[k]} records)",
                        {
                            "command": "privad sensor perturb",
                            "archive": archive,
                            "partition": k,
                            "n": table.lengths[k],
                            "digest": h,
                            "out": str(target),
                        },
                    )
                )
            perturbed = {name: job.perturbed[:, j] for j, name in enumerate(table.feature_names)}
            with release_folder(target) as tmp:  # durable and renamed on leaving
                write_columns(tmp, perturbed, table.lengths)
            # leaving the ExitStack commits every spend, after the folder is published
    return ArchiveRelease(
        records=table.n_records,
        columns=tuple(table.feature_names),
        partitions=table.n_partitions,
        divisors=sensor.divisors,
        noise_scale=sensor.noise_scale,
        guarantee=g,
        scope=scope,
        scopes=scopes,
        ledger=str(book.path),
        output=target,
    )
