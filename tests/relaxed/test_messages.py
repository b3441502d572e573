"""The typed protocol messages: validation, immutability, JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privad.errors import DataError, ParameterError
from privad.relaxed.messages import (
    MESSAGE_TYPES,
    AnalystToCorrection,
    AnalystToCorrection2,
    CorrectionToAnalyst,
    CorrectionToAnalyst2,
    Message,
    SensorToAnalyst,
    SensorToCorrection,
)

EXAMPLES: list[Message] = [
    SensorToAnalyst(
        perturbed=np.array([[0.5, -1.25], [2.0, 3.0]]),
        divisors=np.array([2.0, 4.0]),
        noise_scale=np.array([1.0, 1.0]),
        epsilon=1.0,
    ),
    SensorToCorrection(indices=np.array([1, 0, 2]), d_diff=np.array([0.5, -0.25, 3.0])),
    AnalystToCorrection(presumed_outliers=np.array([0, 2])),
    AnalystToCorrection(presumed_outliers=np.zeros(0, dtype=np.int64)),
    CorrectionToAnalyst(d_tp=0.5, w_o=1.5),
    CorrectionToAnalyst(d_tp=None, w_o=0.0),
    AnalystToCorrection2(i_l2=np.array([0, 1, 2]), i_l3=np.array([2])),
    CorrectionToAnalyst2(outliers=np.array([0, 2])),
]


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_json_round_trip(message: Message) -> None:
    data = json.loads(json.dumps(message.to_dict()))
    assert data["type"] == type(message).__name__
    back = Message.from_dict(data)
    assert type(back) is type(message)
    for name, value in vars(message).items():
        other = getattr(back, name)
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, other) and value.dtype == other.dtype
        else:
            assert value == other
    assert type(message).from_dict(data).to_dict() == message.to_dict()


def test_parties_and_types() -> None:
    assert {(t.sender, t.receiver) for t in MESSAGE_TYPES.values()} == {
        ("sensor", "analyst"),
        ("sensor", "correction"),
        ("analyst", "correction"),
        ("correction", "analyst"),
    }


def test_messages_are_immutable_private_copies() -> None:
    idx = np.array([0, 2])
    msg = AnalystToCorrection(presumed_outliers=idx)
    idx[0] = 1  # the sender's array changes; the message does not
    assert msg.presumed_outliers.tolist() == [0, 2]
    with pytest.raises(ValueError):
        msg.presumed_outliers[0] = 5
    with pytest.raises(AttributeError):
        msg.presumed_outliers = np.array([1])  # type: ignore[misc]


@pytest.mark.parametrize(
    "build",
    [
        lambda: SensorToCorrection(indices=np.array([0, 0]), d_diff=np.array([1.0, 2.0])),
        lambda: SensorToCorrection(indices=np.array([0, 2]), d_diff=np.array([1.0, 2.0])),
        lambda: SensorToCorrection(indices=np.array([0, 1]), d_diff=np.array([1.0])),
        lambda: SensorToCorrection(indices=np.array([0, 1]), d_diff=np.array([1.0, np.nan])),
        lambda: SensorToCorrection(indices=np.array([0.0, 1.0]), d_diff=np.array([1.0, 2.0])),
        lambda: AnalystToCorrection(presumed_outliers=np.array([-1])),
        lambda: AnalystToCorrection(presumed_outliers=np.array([[0, 1]])),
        lambda: AnalystToCorrection2(i_l2=np.array([0.5]), i_l3=np.array([0])),
        lambda: SensorToAnalyst(
            perturbed=np.zeros(3), divisors=[1.0], noise_scale=[1.0], epsilon=1.0
        ),
        lambda: SensorToAnalyst(
            perturbed=np.zeros((3, 2)), divisors=[1.0], noise_scale=[1.0, 1.0], epsilon=1.0
        ),
        lambda: SensorToAnalyst(
            perturbed=np.full((3, 2), np.inf),
            divisors=[1.0, 1.0],
            noise_scale=[1.0, 1.0],
            epsilon=1.0,
        ),
    ],
)
def test_malformed_messages_are_refused(build) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DataError):
        build()


@pytest.mark.parametrize(
    "build",
    [
        lambda: CorrectionToAnalyst(d_tp=float("nan"), w_o=1.0),
        lambda: CorrectionToAnalyst(d_tp=0.5, w_o=-1.0),
        lambda: SensorToAnalyst(
            perturbed=np.zeros((3, 2)), divisors=[1.0, 1.0], noise_scale=[1.0, 1.0], epsilon=0.0
        ),
    ],
)
def test_bad_parameters_in_messages_are_refused(build) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError):
        build()


def test_from_dict_refuses_unknown_or_missing_fields() -> None:
    with pytest.raises(DataError, match="unknown"):
        Message.from_dict({"type": "Nope"})
    with pytest.raises(DataError, match="unknown field"):
        CorrectionToAnalyst.from_dict(
            {"type": "CorrectionToAnalyst", "d_tp": 1.0, "w_o": 1.0, "noise": [1.0]}
        )
    with pytest.raises(DataError, match="missing"):
        CorrectionToAnalyst.from_dict({"type": "CorrectionToAnalyst", "d_tp": 1.0})
    with pytest.raises(DataError, match="unexpected"):
        CorrectionToAnalyst.from_dict({"type": "CorrectionToAnalyst2", "outliers": [1]})
