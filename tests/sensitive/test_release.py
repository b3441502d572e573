"""The one release path of sensitive-privacy labels (privad.sensitive.release)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from privad.accounting import Ledger
from privad.datasets import load
from privad.errors import BudgetExceededError, ParameterError
from privad.geometry import ball_counts
from privad.sensitive import SensitiveAnomalyIdentifier, SPMechanism, is_sensitive
from privad.sensitive.accounting import RecordExposure, claim5_bound
from privad.sensitive.contamination import GIVEN_TEXT
from privad.sensitive.release import AnswerRecord, CsvLabels, question_keys, release_labels


@pytest.fixture(scope="module")
def thyroid() -> np.ndarray:
    return load("thyroid").X


def test_the_averaging_attack_gains_nothing(thyroid) -> None:
    """51 predict calls on the same records are one release (issue: a majority vote of 51
    fresh releases matched the exact labels on 99.5 % of Thyroid, one release on 95 %)."""
    est = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=0.1, rng=0).fit(thyroid)
    first = est.predict()
    votes = sum(est.predict() for _ in range(50)) + first
    np.testing.assert_array_equal(votes, 51 * first)  # every call returned the same answers
    (spend,) = est.ledger_.history()
    assert spend.epsilon == pytest.approx(claim5_bound(thyroid, 0.1).m * 0.1)  # charged once
    np.testing.assert_array_equal(est.decision_function() > 0, first == 1)  # not a release
    assert len(est.ledger_.history()) == 1


def test_fresh_releases_are_charged_each_time(thyroid) -> None:
    est = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=0.1, rng=0).fit(thyroid[:300])
    answers = [est.predict(fresh=True) for _ in range(51)]
    spends = est.ledger_.history()
    assert len(spends) == 51 and len({s.epsilon for s in spends}) == 1
    assert any((a != answers[0]).any() for a in answers[1:])  # new noise each time
    np.testing.assert_array_equal(est.predict(), answers[-1])  # the latest is recorded


def test_query_records_are_recorded_by_value(thyroid) -> None:
    est = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=0.1, rng=3).fit(thyroid)
    Q = thyroid[:20] + 0.01
    a = est.predict(Q)
    b = est.predict(np.vstack([Q[5:], Q[:5]]))  # the same questions, reordered: no release
    np.testing.assert_array_equal(b, np.concatenate([a[5:], a[:5]]))
    assert len(est.ledger_.history()) == 1
    c = est.predict(np.vstack([Q[:3], thyroid[30:32] + 0.02]))  # 2 new questions
    np.testing.assert_array_equal(c[:3], a[:3])
    spends = est.ledger_.history()
    assert len(spends) == 2 and spends[1].metadata["n_queries"] == 2
    negzero = np.zeros((1, thyroid.shape[1]))
    assert question_keys(negzero) == question_keys(-negzero)  # −0.0 is 0.0
    est.set_params(add_query_to_data=True)  # footnote 1: different questions
    est.predict(Q)
    assert len(est.ledger_.history()) == 3


def test_a_budget_on_the_estimator_caps_its_own_ledger(thyroid) -> None:
    est = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=0.1, budget=50.0).fit(thyroid)
    with pytest.raises(BudgetExceededError, match="Claim 5"):
        est.predict()  # m ≥ 549 (the lower bound): at least 54.9 > 50
    assert est.ledger_.history() == [] and len(est.answers_) == 0
    assert est.predict(thyroid[:10]).shape == (10,)
    assert est.ledger_.remaining("fitted-data", "sensitive") < 50.0
    with pytest.raises(ParameterError, match="epsilon|budget"):
        SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=0.1, budget=-1.0).fit(thyroid)


def test_a_failed_write_cancels_the_spend_and_records_nothing(tmp_path, thyroid) -> None:
    class Broken(CsvLabels):
        def write(self, handle, answers, log_error):  # noqa: ANN001
            raise OSError("disk full")

    est = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=0.1, rng=1).fit(thyroid[:200])
    book = Ledger(":memory:")
    book.set_budget("s", "sensitive", 1000)
    with pytest.raises(OSError, match="disk full"):
        est.release(ledger=book, scope="s", output=Broken(tmp_path / "out.csv"))
    assert book.spent("s", "sensitive") == 0 and list(tmp_path.iterdir()) == []
    assert [s.status for s in book.history("s")] == ["cancelled"]
    assert len(est.answers_) == 0  # nothing was released, so nothing is recorded


def test_release_labels_validates_its_inputs(thyroid) -> None:
    mech = SPMechanism(18, 0.1, 0.1)
    with pytest.raises(ParameterError, match="AIQMechanism"):
        release_labels(
            "sp",
            statistics=None,
            charge=None,  # type: ignore[arg-type]
            ledger=Ledger(":memory:"),
            scope="s",
            rng=0,
        )
    with pytest.raises(ParameterError, match="Ledger"):
        release_labels(
            mech,
            statistics=None,
            charge=None,  # type: ignore[arg-type]
            ledger=None,
            scope="s",
            rng=0,
        )  # type: ignore[arg-type]


def test_the_spend_row_is_built_by_the_release_path(thyroid) -> None:
    est = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=0.1, k=2, rng=0).fit(thyroid)
    est.predict()
    (spend,) = est.ledger_.history()
    bound = claim5_bound(thyroid, 0.1)
    assert spend.label == "sp (β=18, r=0.1)-anomaly labels for 3772 record(s)"
    assert spend.metadata == {
        "mechanism": "sp",
        "beta": 18,
        "r": 0.1,
        "epsilon": 0.1,
        "k": 2,
        "metric": "euclidean",
        "count_cap": None,
        "n_queries": 3772,
        "m": bound.m,
        "m_lower": bound.lower,
        "m_upper": bound.upper,
        "add_query_to_data": False,
        "context": {"parameters": {"source": "given", "beta": 18, "r": 0.1, "how": GIVEN_TEXT}},
        "per_record": RecordExposure(ball_counts(thyroid, 0.1), 0.1, bound.m).summary(),
    }
    assert spend.guarantee == SPMechanism(18, 0.1, 0.1, k=2).batch_guarantee(3772, bound.m)


def test_answer_record_keeps_the_first_answer() -> None:
    rec = AnswerRecord()
    keys = question_keys(np.array([[1.0], [1.0], [2.0]]))
    assert keys[0] == keys[1] != keys[2]
    rec.store_vectors(False, keys, np.array([1, 0, 0]))
    np.testing.assert_array_equal(rec.vectors(False, keys), [1, 1, 0])
    np.testing.assert_array_equal(rec.vectors(True, keys), [-1, -1, -1])
    assert len(rec) == 2
    rec.store_vectors(False, keys[2:], np.array([1]))  # a fresh release replaces
    np.testing.assert_array_equal(rec.vectors(False, keys), [1, 1, 1])


@pytest.mark.parametrize("mechanism", ["sp", "dp", "compiled"])
def test_black_box_neighbours_through_predict(mechanism) -> None:
    """Two neighbouring databases (one 1-sensitive record added), many independent answers
    to one question through the estimator's release path, every output event's likelihood
    ratio against e^ε, with z = 5.5 slack on both sides."""
    eps, runs = 0.7, 40_000
    x = np.array([[0.0], [0.1], [0.2], [3.0]])
    y = np.vstack([x, [[0.15]]])  # a 1-sensitive record (B_y = 4 ≥ β + 1 − k) added
    assert is_sensitive(4, 3, 1)
    q = np.repeat([[0.1]], runs, axis=0)  # repeated rows: independent answers, one release
    outs = []
    for seed, data in ((1, x), (2, y)):
        est = SensitiveAnomalyIdentifier(
            beta=3, r=0.2, epsilon=eps, k=1, mechanism=mechanism, rng=seed
        ).fit(data)
        outs.append(int(est.predict(q).sum()))
    assert outs[0] != outs[1]  # the query's truth differs: anomaly in x, normal in y
    for o in (0, 1):
        p = [(h if o else runs - h) / runs for h in outs]
        sd = [math.sqrt(max(pi * (1 - pi), 1e-12) / runs) for pi in p]
        for a, b in ((0, 1), (1, 0)):
            assert p[a] - 5.5 * sd[a] <= math.exp(eps) * (p[b] + 5.5 * sd[b]), (o, p)


def test_dp_then_sp_is_charged_together(thyroid) -> None:
    """ε-DP implies (ε, k)-SP: a dp answer counts against the scope's sensitive budget."""
    record = thyroid[:1]
    dp = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=1.0, mechanism="dp").fit(thyroid)
    sp = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=1.0).fit(thyroid)
    with Ledger(":memory:") as book:
        book.set_budget("s", "pure-dp", 1.0)
        book.set_budget("s", "sensitive", 1.0)
        dp.predict(record, ledger=book, scope="s")
        with pytest.raises(BudgetExceededError, match="sensitive"):
            sp.predict(record, ledger=book, scope="s")
        assert len(book.history("s")) == 1
        book.set_budget("s", "sensitive", 2.0)
        sp.predict(record, ledger=book, scope="s")
        assert book.spent("s", "sensitive") == 2.0
        assert "spent 2.0 (1.0 own + 1.0 implied by pure-dp)" in book.statement("s")


def test_the_output_is_published_before_the_spend_is_committed(
    tmp_path, thyroid, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26, item 4: the spend is still only reserved (counted, not final) when the
    labels are renamed into place, and committed right after."""
    est = SensitiveAnomalyIdentifier(beta=18, r=0.1, epsilon=0.1, rng=1).fit(thyroid[:200])
    book = Ledger(":memory:")
    book.set_budget("s", "sensitive", 1000)
    seen = []
    real = os.replace

    def replace(src, dst):  # noqa: ANN001
        seen.append([s.status for s in book.history("s")])
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    rel = est.release(ledger=book, scope="s", output=CsvLabels(tmp_path / "out.csv"))
    assert seen == [["reserved"]] and rel.spend.status == "committed"
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 201


KILLED_BEFORE_THE_RENAME = """
import os, signal, sys
import numpy as np
from privad.accounting import Ledger
from privad.sensitive import SensitiveAnomalyIdentifier
from privad.sensitive.release import CsvLabels

X = np.arange(120.0).reshape(60, 2)
book = Ledger(sys.argv[1])
book.set_budget("s", "sensitive", 1000)
est = SensitiveAnomalyIdentifier(beta=3, r=2.0, epsilon=0.1, rng=1).fit(X)
os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
est.release(ledger=book, scope="s", output=CsvLabels(sys.argv[2]))
"""


def test_a_release_killed_before_the_rename_is_never_committed(tmp_path) -> None:
    """SIGKILL at the rename: no output, and the spend left reserved (counted, and
    cancellable with 'privad budget cancel' since nothing was published), not committed."""
    ledger, out = tmp_path / "l.sqlite", tmp_path / "labels.csv"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_THE_RENAME, str(ledger), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not out.exists()
    with Ledger(ledger) as book:
        (spend,) = book.history("s")
        assert spend.status == "reserved" and book.spent("s", "sensitive") > 0
        book.cancel(spend.id)
        assert book.spent("s", "sensitive") == 0
