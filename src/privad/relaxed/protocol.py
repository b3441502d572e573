"""An in-process run of the correction protocol, with a transcript of every message.

:func:`run_protocol` plays the message sequence of sections 6.1–6.2 between a
:class:`~privad.relaxed.parties.Sensor`, an :class:`~privad.relaxed.parties.Analyst` and a
:class:`~privad.relaxed.parties.CorrectionServer`:

====  =====================  ===============================================================
step  message                what happens
====  =====================  ===============================================================
1–2   —                      S scales 𝒯 (1a), perturbs it (1b), computes d_diff (1c)
2     SensorToAnalyst        S → A: 𝒯'
2     SensorToCorrection     S → CS: indices and d_diff
2     AnalystToCorrection    A runs f_outlier on 𝒯' and sends O' to CS
3–4   CorrectionToAnalyst    CS splits O' into FP and TP and sends d_TP and w_O
4     AnalystToCorrection2   A sends I_L2 and I_L3 (thresholds per its reduction)
5     CorrectionToAnalyst2   CS computes FN_L1, FN_L2, FN_L3 and sends the output
====  =====================  ===============================================================

The transcript is the complete record of what crossed party boundaries, so the information
flow of section 6.2 can be checked on it (tests do).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from privad.relaxed.messages import Message
from privad.relaxed.parties import Analyst, CorrectionServer, Sensor

__all__ = ["PARTIES", "ProtocolRun", "Transcript", "TranscriptEntry", "run_protocol"]

M = TypeVar("M", bound=Message)

PARTIES: tuple[str, ...] = ("sensor", "analyst", "correction")
"""Party names as they appear in messages and transcripts."""


@dataclass(frozen=True)
class TranscriptEntry:
    """One message crossing a party boundary, in order."""

    seq: int
    sender: str
    receiver: str
    message: Message


@dataclass
class Transcript:
    """All messages of one protocol run, in the order they were sent."""

    entries: list[TranscriptEntry] = field(default_factory=list)

    def record(self, message: M) -> M:
        """Append ``message`` (sender and receiver come from its type) and return it."""
        self.entries.append(
            TranscriptEntry(len(self.entries), message.sender, message.receiver, message)
        )
        return message

    def received_by(self, party: str) -> list[Message]:
        """Every message ``party`` received, in order."""
        return [e.message for e in self.entries if e.receiver == party]

    def sent_by(self, party: str) -> list[Message]:
        """Every message ``party`` sent, in order."""
        return [e.message for e in self.entries if e.sender == party]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[TranscriptEntry]:
        return iter(self.entries)


@dataclass(frozen=True, eq=False)
class ProtocolRun:
    """The result of :func:`run_protocol`.

    Attributes
    ----------
    outliers
        the corrected outlier set the analyst received (sorted record indices).
    presumed_outliers
        O' = f_outlier(𝒯') (the uncorrected baseline).
    transcript
        every message, in order.
    timings
        seconds per stage: ``"perturbation"`` (S, steps 1a–1c),
        ``"detection"`` (A, f_outlier on 𝒯'), ``"split"`` (CS, step 3),
        ``"layers"`` (A, step 4), ``"false_negatives"`` (CS, step 5) and
        ``"correction"`` (the sum of the last three: the correction logic of section 7).
    """

    outliers: np.ndarray
    presumed_outliers: np.ndarray
    transcript: Transcript
    timings: dict[str, float]


def run_protocol(
    data: Any, sensor: Sensor, analyst: Analyst, correction_server: CorrectionServer
) -> ProtocolRun:
    """Run the whole protocol in-process on the sensor's data 𝒯 and record the transcript.

    Each party object must be fresh (one run per object).

    Examples
    --------
    >>> from privad.datasets import make_sensor_ring
    >>> from privad.relaxed import Analyst, CorrectionServer, Sensor, calibrate, run_protocol
    >>> from privad.relaxed import relaxed_sensitivity
    >>> H, T = make_sensor_ring(600, rng=1).X, make_sensor_ring(600, rng=0).X
    >>> rs = relaxed_sensitivity(H, 10)
    >>> cal = calibrate(H / rs, 10)
    >>> run = run_protocol(T, Sensor(1.0, rs, rng=2), Analyst(cal.detector),
    ...                    CorrectionServer(cal.w_o))
    >>> run.presumed_outliers.size, run.outliers.size  # |O'| on 𝒯', the corrected output
    (56, 188)
    """
    transcript = Transcript()
    clock = time.perf_counter
    timings: dict[str, float] = {}

    t0 = clock()
    to_analyst, to_correction = sensor.perturb(data)
    timings["perturbation"] = clock() - t0

    correction_server.receive_differences(transcript.record(to_correction))
    t0 = clock()
    presumed = analyst.receive_data(transcript.record(to_analyst))
    timings["detection"] = clock() - t0

    t0 = clock()
    thresholds = correction_server.receive_presumed_outliers(transcript.record(presumed))
    t1 = clock()
    layers = analyst.receive_thresholds(transcript.record(thresholds))
    t2 = clock()
    result = correction_server.receive_layers(transcript.record(layers))
    t3 = clock()
    outliers = analyst.receive_result(transcript.record(result))
    timings["split"] = t1 - t0
    timings["layers"] = t2 - t1
    timings["false_negatives"] = t3 - t2
    timings["correction"] = t3 - t0
    return ProtocolRun(
        outliers=outliers,
        presumed_outliers=presumed.presumed_outliers,
        transcript=transcript,
        timings=timings,
    )
