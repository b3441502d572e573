"""``--bounds FILE`` and ``--bound COL=LO:HI``: features scaled from public bounds, the
warning when one column dominates the distances, one-line errors; end to end on Wine
(scikit-learn's bundled copy) and through ``privad rmp``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privad.cli import rmp, sp
from privad.datasets import scale_to_bounds

OPERATOR = "operator-secret-0123456789abcdef"
USER = "end-user-secret-0123456789abcdef"


@pytest.fixture
def run(privad_cli, in_tmp_home):
    return privad_cli(sp, rmp)


@pytest.fixture
def files(wine, tmp_path: Path) -> tuple[Path, Path]:
    frame, bounds = wine
    frame.to_csv(tmp_path / "wine.csv", index=False)
    with open(tmp_path / "bounds.csv", "w") as handle:
        handle.write("column,lower,upper\n")
        handle.writelines(f"{c},{lo:g},{hi:g}\n" for c, (lo, hi) in bounds.items())
    return tmp_path / "wine.csv", tmp_path / "bounds.csv"


def warnings_in(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("privad: warning: ")]


def test_params_warns_on_proline_and_scales_from_the_bounds_file(run, files, wine) -> None:
    data, bounds = files
    code, out, err = run("sp", "params", str(data), "--json")
    assert code == 0, err
    (line,) = warnings_in(err)
    assert "column 'proline' carries 99.8% of the variance" in line and "not released" in line
    assert json.loads(out)["scaling"] is None

    code, out, err = run("sp", "params", str(data), "--bounds", str(bounds), "--json")
    assert code == 0, err
    assert warnings_in(err) == []
    doc = json.loads(out)
    frame, wine_bounds = wine
    assert doc["scaling"]["scaled"] == list(frame.columns) and doc["scaling"]["unscaled"] == []
    assert doc["scaling"]["clipped"] == 1  # flavanoids 5.08 > 5
    assert doc["scaling"]["clipped_by_column"]["flavanoids"] == {"below": 0, "above": 1}
    assert doc["r"] < 1.5 < 60  # in the scaled units now, not proline's
    assert doc["next"].endswith(f"--bounds {bounds}")

    # proline bounded alone: magnesium takes over, and the warning says so
    code, out, err = run("sp", "params", str(data), "--bound", "proline=0:2000", "--json")
    assert code == 0, err
    (line,) = warnings_in(err)
    assert "column 'magnesium' carries" in line
    assert json.loads(out)["scaling"]["unscaled"] == [c for c in frame.columns if c != "proline"]


def test_identify_scales_with_the_public_map(run, files, wine, tmp_path) -> None:
    data, bounds = files
    frame, wine_bounds = wine
    scaled, _ = scale_to_bounds(frame.to_numpy(), wine_bounds, list(frame.columns))
    pd.DataFrame(scaled, columns=frame.columns).to_csv(tmp_path / "scaled.csv", index=False)
    common = ("--beta", "3", "--r", "0.3", "--epsilon", "0.5", "--budget", "100", "--seed", "4")
    code, out, err = run(
        "sp",
        "identify",
        str(data),
        "--bounds",
        str(bounds),
        "--scope",
        "w",
        "--out",
        "a.csv",
        *common,
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["scaling"]["clipped"] == 1 and warnings_in(err) == []
    code, out, err = run(
        "sp", "identify", str(tmp_path / "scaled.csv"), "--scope", "w", "--out", "b.csv", *common
    )
    assert code == 0, err
    assert "feature scaling" in out and "none (the features in their own units)" in out
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bound", "proline=5:1"], "--bound: column 'proline' needs finite bounds with lower"),
        (["--bound", "proline"], "--bound must be COL=LO:HI"),
        (["--bound", "proline=a:b"], "--bound must be COL=LO:HI with finite numbers"),
        (["--bound", "nope=0:1"], "bounds given for 'nope', which is not a feature column"),
        (["--bound", "hue=0:2", "--bound", "hue=0:3"], "column 'hue' has bounds twice"),
        (["--bounds", "missing.csv"], "bounds file 'missing.csv' not found"),
    ],
)
def test_bound_mistakes_are_one_line(run, files, error_line, args, message) -> None:
    code, out, err = run(
        "sp",
        "identify",
        str(files[0]),
        "--beta",
        "3",
        "--r",
        "0.3",
        "--epsilon",
        "0.5",
        "--budget",
        "100",
        "--out",
        "never.csv",
        *args,
    )
    assert code == 2 and out == "" and message in error_line(err)
    assert not Path("never.csv").exists()


def test_rmp_records_scaled_from_shared_bounds(run, rmp_server, tmp_path) -> None:
    url = rmp_server(2, operator=OPERATOR, user=USER)
    frame = pd.DataFrame({"temp": np.linspace(10.0, 30.0, 40), "hum": np.linspace(80.0, 20.0, 40)})
    frame.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "p").mkdir()
    base = [
        "rmp",
        "participate",
        str(tmp_path / "d.csv"),
        "--server",
        url,
        "--seed",
        "1",
        "--key-file",
        str(tmp_path / "p" / "k.npz"),
        "--token-file",
        str(tmp_path / "p" / "t.json"),
    ]
    code, out, err = run(*base, "--bound", "temp=-10:40", "--bound", "hum=0:100", "--json")
    assert code == 0, err
    assert warnings_in(err) == []  # in [0, 1]: no note about values outside [-1, 1]
    assert json.loads(out)["scaling"]["scaled"] == ["temp", "hum"]
    # the scaling's note is one of the run's notes, in the JSON document too
    assert json.loads(out)["notes"][-1].startswith("feature scaling: public bounds on 2 column")
    assert run("rmp", "train", "--server", url, "--token", OPERATOR, "--seed", "2")[0] == 0
    code, out, err = run("rmp", "score", str(tmp_path / "d.csv"), "--server", url, "--token", USER)
    assert code == 0 and "outside [-1, 1]" in warnings_in(err)[0]  # raw units: warned
    code, out, err = run(
        "rmp",
        "score",
        str(tmp_path / "d.csv"),
        "--server",
        url,
        "--token",
        USER,
        "--bound",
        "temp=-10:40",
        "--bound",
        "hum=0:100",
    )
    assert code == 0 and warnings_in(err) == [] and "feature scaling: public bounds" in out
