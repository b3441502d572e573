"""``privad demo`` runs end to end on embedded data and leaves no file behind."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # the whole tour, every scheme


def test_demo_runs_every_section_and_writes_nothing(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", "from privad.cli import main; main()", "demo", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={
            "PRIVAD_LEDGER": str(tmp_path / "never.sqlite"),
            "PATH": "/usr/bin:/bin",
            "COLUMNS": "120",
        },
    )
    assert result.returncode == 0, result.stderr
    for section in (
        "Embedded datasets",
        "privad.noise",
        "privad.sensitive on Thyroid",
        "privad.relaxed",
        "privad.search",
        "privad.rmp on Abalone",
        "what was spent on what",
    ):
        assert section in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_search_section_plans_then_finds_the_anomaly_and_states_its_cost():
    from privad.experiments.tour import search_section
    from privad.noise import Randomness

    text = search_section(Randomness(0)).text
    assert "nab:ambient_temperature_system_failure: threshold ratio 0.047" in text
    assert "not searched, nothing spent" in text
    assert "threshold ratio 0.667" in text
    assert "the anomaly is in its top 4" in text
    assert "Total privacy cost, as the oracle's ledger recorded it: ε = " in text
