"""Eight sensors upload and close windows concurrently: every result is that sensor's own."""

from __future__ import annotations

import threading

import numpy as np

from privad.datasets import make_sensor_ring
from privad.noise import Randomness
from privad.relaxed import Analyst, CorrectionServer, Sensor, run_protocol
from privad.services.clients import AnalystClient, CorrectionClient
from privad.services.sensor_client import SensorUploader

N_SENSORS = 8
WINDOWS = 3
SIZE = 500


def test_eight_concurrent_sensors(servers, ring, secrets) -> None:
    analyst, cs = servers.pair()
    data = {
        i: make_sensor_ring(WINDOWS * SIZE, separation=120, rng=100 + i).X for i in range(N_SENSORS)
    }
    results: dict[int, list] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(N_SENSORS)

    def sensor_thread(i: int) -> None:
        try:
            name = f"s{i}"
            up = SensorUploader(
                Sensor(1.0, ring.rs, rng=Randomness(i)),
                AnalystClient(analyst.url, secrets[name]),
                CorrectionClient(cs.url, secrets[name]),
            )
            start.wait(timeout=30)
            results[i] = up.send((w, data[i][w * SIZE : (w + 1) * SIZE]) for w in range(WINDOWS))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=sensor_thread, args=(i,)) for i in range(N_SENSORS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []

    for i in range(N_SENSORS):
        sensor = Sensor(1.0, ring.rs, rng=Randomness(i))
        client = AnalystClient(analyst.url, secrets[f"s{i}"])
        listed = client.windows()
        assert [(w["window"], w["status"], w["n"]) for w in listed] == [
            (w, "closed", SIZE) for w in range(WINDOWS)
        ]
        for w in range(WINDOWS):
            run = run_protocol(
                data[i][w * SIZE : (w + 1) * SIZE],
                sensor,
                Analyst(ring.detector()),
                CorrectionServer(ring.w_o),
            )
            assert np.array_equal(results[i][w].outliers, run.outliers)
            assert client.outliers(w)["outliers"] == run.outliers.tolist()
        client.close()
