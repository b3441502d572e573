"""``privad.relaxed.distributed.perturb_partitions``: the sensor's steps 1a–1c per partition.

Each partition draws from its own child stream (``Randomness(seed).spawn(npartitions)``):
identical partitions get different noise, a fixed seed reproduces the output, and the noise
has the sensor's Laplace scale, tested two-sidedly at α = 1e-6 with a fixed seed
(Kolmogorov–Smirnov, as tests/relaxed/test_perturbation.py does for one machine).
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from scipy import stats

from privad.errors import DataError, ParameterError
from privad.noise import Randomness
from privad.relaxed import Sensor
from privad.relaxed.distances import distance_differences
from privad.relaxed.distributed import perturb_partitions

ALPHA = 1e-6


def _noise(sensor: Sensor, X: np.ndarray, chunks, seed) -> tuple[np.ndarray, object]:
    job = perturb_partitions(sensor, da.from_array(X, chunks=(chunks, -1)), rng=seed)
    return job.perturbed.compute() - X / sensor.divisors, job


def test_identical_partitions_get_independent_noise(client) -> None:
    sensor = Sensor(1.0, [1.0, 2.0])
    block = np.linspace(0.0, 5.0, 2000).reshape(1000, 2)
    X = np.concatenate([block] * 4)  # four identical partitions
    noise, job = _noise(sensor, X, (1000,) * 4, 20260803)
    assert job.n_partitions == 4
    parts = noise.reshape(4, 1000, 2)
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.any(parts[i] == parts[j])  # no shared draws
            assert abs(np.corrcoef(parts[i][:, 0], parts[j][:, 0])[0, 1]) < 0.2
    # the same seed and partitioning reproduce the output; another seed does not
    again, _ = _noise(sensor, X, (1000,) * 4, 20260803)
    np.testing.assert_array_equal(noise, again)
    other, _ = _noise(sensor, X, (1000,) * 4, 20260804)
    assert not np.any(noise == other)
    # without a seed: the sensor's own stream; two jobs never share noise
    seeded = Sensor(1.0, [1.0, 2.0], rng=Randomness(5))
    first = perturb_partitions(seeded, da.from_array(X, chunks=(1000, 2))).perturbed.compute()
    second = perturb_partitions(seeded, da.from_array(X, chunks=(1000, 2))).perturbed.compute()
    assert not np.any(first == second)


@pytest.mark.parametrize("epsilon", [0.2, 1.0])
def test_noise_has_the_laplace_scale_two_sided(client, epsilon: float) -> None:
    rs = np.array([3.0, 0.5])
    sensor = Sensor(epsilon, rs)
    n = 200_000
    X = np.column_stack([np.linspace(-9.0, 9.0, n), np.linspace(0.0, 1.0, n)])
    chunks = (1, 0, 80_000, 19_999, 0, 100_000)  # uneven, empty partitions
    noise, _ = _noise(sensor, X, chunks, 20260805 + int(10 * epsilon))
    scale = float(sensor.noise_scale[0])
    assert scale == pytest.approx(1.0 / epsilon, rel=1e-6)
    for j in range(2):
        for factor, passes in ((1.0, True), (1.1, False), (0.9, False)):
            p = stats.kstest(noise[:, j], stats.laplace(scale=factor * scale).cdf).pvalue
            assert (p > ALPHA) == passes, (j, factor, p)


def test_differences_use_the_archive_centres(client) -> None:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 3)) * [1.0, 10.0, 0.1]
    for centres in ("separate", "original"):
        sensor = Sensor(0.5, [2.0, 20.0, 0.2], d_diff_centres=centres)
        job = perturb_partitions(
            sensor, da.from_array(X, chunks=((100, 0, 350, 150), 3)), rng=3, differences=True
        )
        perturbed, diff = dask.compute(job.perturbed, job.differences)
        want = distance_differences(X / sensor.divisors, perturbed, centres=centres)
        np.testing.assert_allclose(diff, want, rtol=1e-9, atol=1e-12)
        # computed separately, the perturbation is the same draw (tasks copy their stream)
        np.testing.assert_array_equal(job.perturbed.compute(), perturbed)


def test_in_memory_input_and_errors(client) -> None:
    sensor = Sensor(1.0, [1.0, 1.0])
    job = perturb_partitions(sensor, np.zeros((10, 2)), rng=1)
    assert job.n_partitions == 1 and job.perturbed.shape == (10, 2)
    with pytest.raises(DataError, match="n × 2"):
        perturb_partitions(sensor, np.zeros((10, 3)))
    with pytest.raises(ParameterError, match="Sensor"):
        perturb_partitions("sensor", np.zeros((10, 2)))  # type: ignore[arg-type]
    bad = da.from_array(np.array([[0.0, 1.0], [np.nan, 1.0]]), chunks=(1, 2))
    with pytest.raises(DataError, match="NaN"):
        perturb_partitions(sensor, bad, rng=1).perturbed.compute()
