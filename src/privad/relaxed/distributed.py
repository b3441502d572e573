"""The sensor's perturbation (steps 1a–1c) applied partition by partition, for large archives.

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

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from privad.errors import DataError, ParameterError
from privad.noise import as_randomness
from privad.relaxed.distances import centre_distances
from privad.relaxed.parties import Sensor
from privad.relaxed.perturbation import laplace_columns
from privad.relaxed.scaling import scale_columns
from privad.validation import check_array

__all__ = ["PartitionedPerturbation", "perturb_partitions"]


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
