"""``privad.services.sensor_client.send_file``: sensor send's whole job as one library call
(issue 30), against threaded servers: the same windows and outliers as the in-process
protocol, the events in order, one ledger spend per window, and the refusals before any
spend."""

from __future__ import annotations

import io
import json

import pytest

from privad.accounting import Ledger
from privad.errors import DataError, ParameterError
from privad.noise import Randomness
from privad.relaxed import Analyst, CorrectionServer, Sensor, run_protocol
from privad.services.sensor_client import SendStarted, SkippedRows, WindowReport, send_file


def _csv(X) -> io.StringIO:  # type: ignore[no-untyped-def]
    return io.StringIO("x1,x2\n" + "".join(f"{a!r},{b!r}\n" for a, b in X.tolist()))


def test_send_file_is_the_protocol_window_by_window(servers, ring, secrets, tmp_path) -> None:
    analyst, cs = servers.pair()
    X = ring.data[:700]
    events: list[object] = []
    args = {
        "analyst": analyst.url,
        "correction": cs.url,
        "token": secrets["s1"],
        "epsilon": 0.5,
        "window": 400,
        "relaxed_sensitivity": ring.rs,
        "global_sensitivity": 400,
        "ledger": tmp_path / "l.sqlite",
        "journal": tmp_path / "j.sqlite",
    }
    result = send_file(_csv(X), **args, rng=21, on_event=events.append)
    assert isinstance(events[0], SendStarted) and events[0].scope == "relaxed-sensor"
    assert [type(e) for e in events[1:]] == [WindowReport, WindowReport]
    assert [(w.window, w.n, w.status) for w in result.windows] == [
        (0, 400, "sent"),
        (1, 300, "sent"),
    ]
    assert result.records == 700 and result.skipped_records == 0
    sensor = Sensor(0.5, ring.rs, rng=Randomness(21))  # the same draws, window after window
    for w, lo in zip(result.windows, (0, 400), strict=True):
        run = run_protocol(
            X[lo : lo + 400], sensor, Analyst(ring.detector()), CorrectionServer(ring.w_o)
        )
        assert w.outliers.tolist() == run.outliers.tolist()
    doc = json.loads(json.dumps(result.to_dict()))  # JSON-ready as it is
    assert doc["counts"] == {"sent": 2, "forced": 0, "resumed": 0, "closed": 0}
    with Ledger(tmp_path / "l.sqlite") as book:
        spends = book.history()
    assert sorted(s.id for s in spends) == sorted(w.spend_id for w in result.windows)
    assert {s.epsilon for s in spends} == {events[0].views.release.epsilon}
    # a rerun with the same journal releases nothing again: the rows are skipped
    again = send_file(_csv(X), **args, on_event=events.append)
    assert again.windows == () and again.skipped_records == 700
    assert isinstance(events[-1], SkippedRows) and events[-1].windows == (0, 1)


def test_send_file_refuses_before_any_spend(servers, ring, secrets, tmp_path) -> None:
    analyst, cs = servers.pair()
    base = {
        "analyst": analyst.url,
        "correction": cs.url,
        "token": secrets["s1"],
        "epsilon": 0.5,
        "window": 10,
        "global_sensitivity": 400,
        "ledger": tmp_path / "l.sqlite",
        "journal": tmp_path / "j.sqlite",
    }
    with pytest.raises(DataError, match="2 column.s. but 3 relaxed sensitivities"):
        send_file(_csv(ring.data[:20]), **base, relaxed_sensitivity=[1, 1, 1])
    with pytest.raises(DataError, match="no records to send"):
        send_file(io.StringIO("x1,x2\n"), **base)
    with pytest.raises(ParameterError, match="window must be"):
        send_file(_csv(ring.data[:20]), **{**base, "window": 0})
    assert not (tmp_path / "l.sqlite").exists()


def test_a_meaningless_epsilon_is_warned_about_once(servers, ring, secrets, tmp_path) -> None:
    """The sensor is built and validated once per run: ε = 25 over three windows is one
    PrivacyWarning."""
    import warnings

    from privad.errors import PrivacyWarning

    analyst, cs = servers.pair()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = send_file(
            _csv(ring.data[:30]),
            analyst=analyst.url,
            correction=cs.url,
            token=secrets["s2"],
            epsilon=25,
            window=10,
            relaxed_sensitivity=ring.rs,
            global_sensitivity=400,
            budget=1000,
            ledger=tmp_path / "l.sqlite",
            journal=tmp_path / "j.sqlite",
            close=False,
        )
    assert len(result.windows) == 3
    privacy = [w for w in caught if issubclass(w.category, PrivacyWarning)]
    assert [str(w.message)[:12] for w in privacy] == ["epsilon = 25"]
