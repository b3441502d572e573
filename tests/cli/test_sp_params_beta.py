"""``privad sp params --contamination c`` without ``--beta``: β = round(c·n) (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privad.cli import sp


@pytest.fixture
def run(privad_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    return privad_cli(sp)


@pytest.mark.parametrize(
    ("options", "beta"),
    [
        (("--contamination", "0.025"), 94),  # round(0.025 · 3,772) = round(94.3)
        (("--anomaly-share", "0.05"), 189),  # round(188.6)
        (("--contamination", "0.025", "--beta-fraction", "0.01"), 38),  # the fraction wins
        ((), 19),  # no target: Table 1's β/n = 0.005
    ],
)
def test_params_take_beta_from_the_contamination(run, options: tuple, beta: int) -> None:
    code, out, err = run("sp", "params", "thyroid", *options, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["beta"] == beta and doc["next"].startswith(
        f"privad sp identify thyroid --beta {beta}"
    )
