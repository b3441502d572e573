"""The reports of the sensor's and RMP's jobs (issue 30): the lines and JSON-ready data the
CLI prints, owned by the library's result objects, checked against hand-written text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privad.accounting import Guarantee
from privad.datasets import BoundsScaling
from privad.errors import DataError
from privad.relaxed.distributed import ArchiveRelease
from privad.relaxed.pipeline import server_parameters
from privad.services.calibration import Deployment, calibrate_file
from privad.services.rmp_client import UploadReport
from privad.services.rmp_jobs import Participation, Scoring, Training
from privad.services.sensor_client import (
    SendResult,
    SkippedRows,
    WindowReport,
    closed_outliers,
    closed_window_line,
    outliers_csv,
    outliers_text,
)


def test_window_and_skipped_lines() -> None:
    closed = WindowReport(2, 400, np.array([1, 5, 9]), 4, (True, True), status="forced")
    assert closed.lines() == (
        "window 2: 400 record(s) sent (forced re-release, charged again); 4 presumed "
        "outlier(s) before correction, 3 corrected outlier(s)",
    )
    uploaded = WindowReport(3, 10, None, None, (True, True), status="resumed")
    assert uploaded.lines() == (
        "window 3: 10 record(s) uploaded (completed from the journal: an identical copy)",
    )
    skipped = SkippedRows(400, 300, (1, 2, 4))
    assert skipped.lines() == (
        "rows 400..699: already released (window(s) 1..4); skipped (--force-rerelease to "
        "release them again, charged)",
    )
    result = SendResult((closed, uploaded), (skipped,))
    assert result.summary() == (
        "sent 2 window(s), 410 record(s) (windows 2..3); 300 record(s) already released, skipped"
    )
    gone = WindowReport(7, 5, np.array([], dtype=np.int64), 0, (False, False), status="closed")
    assert SendResult((gone,), ()).summary() == (
        "sent 0 window(s), 0 record(s); 0 record(s) already released, skipped"
    )


class _Analyst:
    def windows(self) -> list[dict[str, object]]:
        return [
            {"window": 0, "status": "closed"},
            {"window": 1, "status": "uploaded"},
            {"window": 2, "status": "closed"},
        ]

    def outliers(self, window: int) -> dict[str, object]:
        return {"window": window, "outliers": [window, 10 + window]}


def test_closed_outliers_asks_for_the_closed_windows_only() -> None:
    results = closed_outliers(_Analyst())  # type: ignore[arg-type]
    assert [r["window"] for r in results] == [0, 2]
    assert outliers_csv(results) == "window,index\n0,0\n0,10\n2,2\n2,12\n"
    assert closed_outliers(_Analyst(), 1) == [{"window": 1, "outliers": [1, 11]}]  # type: ignore[arg-type]
    assert outliers_csv([]) == "window,index\n"


def test_closed_window_line() -> None:
    """``privad sensor close``'s line, from the analyst's answer."""
    answer = {"n": 60, "n_presumed_outliers": 4, "outliers": [1, 2, 3]}
    assert closed_window_line(9, answer) == (
        "window 9: 60 record(s); 4 presumed outlier(s) before correction, 3 corrected outlier(s)"
    )


def test_outliers_text_is_csv_or_the_results_as_json() -> None:
    """``privad sensor result``'s text: CSV, or the JSON list (one window: its result)."""
    results = closed_outliers(_Analyst())  # type: ignore[arg-type]
    assert outliers_text(results) == outliers_csv(results)
    assert json.loads(outliers_text(results, "json")) == results
    one = outliers_text(results[1:], "json", one=True)
    assert one == '{\n "window": 2,\n "outliers": [\n  2,\n  12\n ]\n}\n'


def test_calibrate_file_is_server_parameters_of_the_file(tmp_path) -> None:
    H = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 2.0], [3.0, 0.0], [40.0, 50.0]] * 8)
    path = tmp_path / "history.csv"
    path.write_text("a,b\n" + "".join(f"{a!r},{b!r}\n" for a, b in H.tolist()))
    d = calibrate_file(str(path), p_o=20, scaling="none", min_samples=3)
    assert d.to_dict() == server_parameters(H, 20, scaling="none", min_samples=3)
    assert json.loads(json.dumps(d.to_dict()))["n"] == 40
    assert calibrate_file(str(path), p_o=20, columns=["b"]).n == 40  # one column
    with pytest.raises(DataError, match="no-such.csv"):
        calibrate_file(str(tmp_path / "no-such.csv"))


def test_deployment_lines_and_env() -> None:
    d = Deployment(600, 10.0, "isotropic", [0.5, 12.25], [2.0, 2.0], 0.125, 4, 0.75, 60)
    assert d.lines() == (
        "history: 600 record(s), p_o = 10%, scaling isotropic",
        "relaxed sensitivity RS (sensor --relaxed-sensitivity): 0.5, 12.25",
        "DBSCAN eps, minPts (analyst --eps, --min-samples): 0.125, 4 (60 historical outliers)",
        "w_O (correction --outlier-layer-width): 0.75",
    )
    assert d.env() == (
        "PRIVAD_RELAXED_SENSITIVITY=0.5,12.25",
        "PRIVAD_EPS=0.125",
        "PRIVAD_MIN_SAMPLES=4",
        "PRIVAD_W_O=0.75",
    )


def test_rmp_reports() -> None:
    done = Participation("http://h:1", "p1", UploadReport(3, 3, 0, 70, (1, 2, 3)), 5, ())
    assert done.lines() == (
        "uploaded 70 record(s) of 5 attributes in 3 batch(es) to http://h:1: 3 new",
    )
    assert done.to_dict() == {
        "server": "http://h:1",
        "participant": "p1",
        "records": 70,
        "attributes": 5,
        "batches": 3,
        "stored": 3,
        "duplicates": 0,
        "notes": [],
        "scaling": None,
    }
    job = {"job": 2, "n_records": 90, "n_batches": 3, "n_participants": 2, "options": {"epochs": 8}}
    meta = {
        "id": 4,
        "n_records": 90,
        "n_batches": 3,
        "n_participants": 2,
        "threshold": 0.123456789,
        "train_seconds": 1.5,
    }
    assert Training(job, {"model": 4}, meta).lines()[1] == (
        "model 4: 90 record(s), 3 batch(es), 2 participant(s); threshold 0.123457; "
        "trained in 1.50 s"
    )
    assert Training(job, None, None).lines() == (
        "training job 2 started on 90 record(s) from 3 batch(es) of 2 participant(s), 8 epochs",
    )
    assert list(Training(job, None, None).to_dict()) == ["job", "result", "model"]
    scored = Scoring(
        {"id": 4, "n_records": 90, "created_at": "t"},
        0.5,
        np.array([0.1, 0.7, 0.9, 0.2]),
        np.array([0, 1, 1, 0]),
        None,
    )
    assert scored.lines() == (
        "model 4 (90 training record(s), created t): threshold 0.5",
        "records 4, flagged 2 (50.0 %)",
    )
    assert scored.to_dict() == {
        "model": {"id": 4, "n_records": 90, "created_at": "t"},
        "threshold": 0.5,
        "records": 4,
        "flagged": 2,
        "roc_auc": None,
        "output": None,
        "scaling": None,
    }


def test_rmp_reports_name_the_feature_scaling_and_the_output() -> None:
    """A run with public bounds reports their scaling (in the notes of a participation, after
    the model's lines of a scoring), and a scoring the file it wrote."""
    scaling = BoundsScaling({"x": (0.0, 1.0)}, ["x"], ["y"], {"x": 2}, {"x": 1})
    note = (
        "feature scaling: public bounds on 1 column(s), (x − lo)/(hi − lo); 1 column(s) in "
        "their own units; 3 value(s) outside the bounds clipped (clipping uses only the "
        "bounds, so the guarantee holds; this count is for you, not released)"
    )
    upload = UploadReport(1, 1, 0, 4, (1,))
    done = Participation("http://h:1", "p1", upload, 2, ("key",), scaling)
    assert done.lines() == (
        "key",
        note,
        "uploaded 4 record(s) of 2 attributes in 1 batch(es) to http://h:1: 1 new",
    )
    assert done.to_dict()["notes"] == ["key", note]
    assert done.to_dict()["scaling"] == scaling.to_dict()
    meta = {"id": 1, "n_records": 4, "created_at": "t"}
    scored = Scoring(meta, 0.5, np.array([0.2, 0.9]), np.array([0, 1]), None, "s.csv", scaling)
    assert scored.lines()[2:] == (note, "wrote s.csv")
    assert scored.to_dict()["output"] == "s.csv"
    assert scored.to_dict()["scaling"] == scaling.to_dict()


def test_archive_release_lines() -> None:
    """``privad sensor perturb``'s summary, from the release alone (scales in 6 digits)."""
    g = Guarantee("pure-dp", 2.0, "add or remove one record", description="perturbation")
    r = ArchiveRelease(
        7,
        ("a", "b"),
        3,
        np.array([2.0, 0.125]),
        np.array([1 / 3, 4.0]),
        g,
        "base",
        ("base/rows-1", "base/rows-2", "base/rows-3"),
        "l.sqlite",
        Path("o"),
    )
    assert r.lines() == (
        "perturbed 7 record(s) x 2 column(s) in 3 partition(s), each with its own noise stream",
        "divisors (step 1a): 2, 0.125; Laplace scale per column (scaled space): 0.333333, 4",
        f"charged once per partition: {g.summary()} to scopes base/rows-DIGEST (the content "
        "digest of each partition's records) in l.sqlite",
        "output: o",
    )
    assert "scope" not in r.to_dict()  # the JSON document is unchanged: its scopes in full
