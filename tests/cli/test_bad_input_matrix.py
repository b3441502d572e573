"""Bad command lines across every command group: one line on stderr, exit 2, no file.

Each case runs ``privad ARGS`` in-process in an empty working folder holding a small CSV
(``d.csv``), a regular file (``afile.txt``), an ODDS ``.mat`` file (``d.mat``, X and y), an
archive whose labels ``y`` are not 0/1 (``badlabels.npz``) and nothing else; afterwards the
folder must hold exactly those files (no partial output, no new ledger, no created folder).
Servers named in the cases are never reached: every mistake is caught before any request.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from privad.cli import budget, datasets, demo, reproduce, rmp, search, sensor, serve, sp

GROUPS = (budget, datasets, demo, reproduce, rmp, search, sensor, serve, sp)
TOKEN = "a-token-of-enough-length-0123"
NOWHERE = "http://127.0.0.1:9"
SERVE_RMP = f"serve rmp --token alice={TOKEN} --operator-token {TOKEN} --n 5 --w 4 --alpha 0.2"
IDENTIFY = "sp identify d.csv --beta 3 --r 0.1 --epsilon 1"
IDENTIFY_LEDGER = f"{IDENTIFY} --budget 5 --ledger"
SEARCH = "search run --oracle d.csv --column x1 --budget 5 --epsilon 1"
RMP_SCORE = f"rmp score d.csv --server {NOWHERE} --token {TOKEN}"
PARTICIPATE = f"rmp participate d.csv --server {NOWHERE}"
RESULT = f"sensor result --analyst {NOWHERE} --token {TOKEN}"
PERTURB = "--epsilon 1 --relaxed-sensitivity 1 --global-sensitivity 4"

# Commands that write a file; {OUT} is replaced by the output path under test.
FILE_OUTPUTS = {
    name: args.split()
    for name, args in {
        "sp identify --out": f"{IDENTIFY_LEDGER} l.sqlite --out {{OUT}}",
        "sp ask --out": f"sp ask --server {NOWHERE} --token {TOKEN} --ids 1 --out {{OUT}}",
        "search run --out": f"{SEARCH} --out {{OUT}}",
        "sensor result --out": f"{RESULT} --out {{OUT}}",
        "rmp score --output": f"{RMP_SCORE} --output {{OUT}}",
        "sp identify --ledger": f"{IDENTIFY_LEDGER} {{OUT}}",
        "search run --ledger": f"{SEARCH} --ledger {{OUT}}",
        "budget set --ledger": "budget set s1 --epsilon 1 --notion sensitive --ledger {OUT}",
        "demo --ledger": "demo --ledger {OUT}",
        "sensor send --journal": f"sensor send d.csv --analyst {NOWHERE} --correction {NOWHERE} "
        f"--token {TOKEN} --epsilon 1 --window 10 --global-sensitivity 5 --ledger l.sqlite "
        "--journal {OUT}",
        "rmp participate --key-file": f"{PARTICIPATE} --key-file {{OUT}} --token-file t.json",
        "rmp participate --token-file": f"{PARTICIPATE} --key-file k.npz --token-file {{OUT}}",
    }.items()
}

PATH_FAULTS = {
    "missing folder": ("nodir/out.csv", "does not exist; create the folder first"),
    "under a regular file": ("afile.txt/out.csv", "is not a folder"),
    "empty path": (" ", None),  # the message names the option
}

OTHER_CASES = [
    (shlex.split(args), words)
    for args, words in [
        # missing, unreadable or wrong-format input files
        (
            "sp identify missing.csv --beta 3 --r 0.1 --epsilon 1 --budget 5 --ledger l.sqlite",
            "missing.csv",
        ),
        ("sp params missing.csv", "missing.csv"),
        ("sp params afile.txt", "afile.txt"),
        ("search run --oracle missing.csv --column x1 --budget 5 --epsilon 1", "missing.csv"),
        (f"rmp score missing.csv --server {NOWHERE} --token {TOKEN}", "missing.csv"),
        ("datasets describe no-such-dataset", "no-such-dataset"),
        (
            f"serve analyst --db a.sqlite --tokens missing-tokens.txt --correction-url {NOWHERE} "
            f"--correction-token {TOKEN} --eps 1 --min-samples 3",
            "missing-tokens.txt",
        ),
        # bad columns
        (f"{IDENTIFY_LEDGER} l.sqlite --columns x9", "x9"),
        ("search run --oracle d.csv --column x9 --budget 5 --epsilon 1", "x9"),
        ("sp params d.csv --columns x1,,x2", "empty column"),
        # labels: one rule for every format (docs/data.md)
        ("sp params d.csv --label x9", "unknown label column 'x9'"),
        ("sp params d.csv --label 7", "label column index 7 is out of range"),
        ("sp params d.csv --label x1 --columns x1", "also selected"),
        ("sp params d.mat --label z", "neither an array of 'd.mat'"),
        ("sp params badlabels.npz", "labels 'y' in 'badlabels.npz' must hold 0/1"),
        (f"rmp score badlabels.npz --server {NOWHERE} --token {TOKEN}", "must hold 0/1 labels"),
        (
            "search run --oracle d.csv --column x1 --labels-column x2 --budget 5 --epsilon 1",
            "label column 'x2' of d.csv must hold 0/1",
        ),
        # bad numbers
        ("sp identify d.csv --beta 0 --r 0.1 --epsilon 1", "--beta"),
        (f"sp identify d.csv --beta {10**30} --r 0.1 --epsilon 1", "--beta"),
        ("sp identify d.csv --beta 3 --r -1 --epsilon 1", "--r"),
        ("sp identify d.csv --beta 3 --r 0.1 --epsilon nan", "--epsilon"),
        ("sp identify d.csv --beta 3 --r 0.1 --epsilon 1e400", "--epsilon"),
        (f"{IDENTIFY} --seed -4", "--seed"),
        (f"{IDENTIFY} --k {10**30}", "--k"),
        ("search run --oracle d.csv --column x1 --budget -5 --epsilon 1", "--budget"),
        (f"{SEARCH} --top 0", "--top"),
        ("budget set s1 --epsilon 0 --notion sensitive --ledger l.sqlite", "epsilon"),
        ("budget cancel x --yes", "ID must be a spend id"),
        ("budget cancel 0 --yes", "ID must be a spend id"),
        ("budget cancel 3 --ledger missing.sqlite --yes", "missing.sqlite"),
        (f"{RMP_SCORE} --model {10**30}", "--model"),
        (f"{RMP_SCORE} --model x", "--model"),
        (f"{PARTICIPATE} --batch-size 0 --key-file k.npz --token-file t.json", "--batch-size"),
        (f"{PARTICIPATE} --name 'alice\n' --key-file k.npz --token-file t.json", "--name"),
        (f"{RESULT} --window -1", "--window"),
        (f"{RESULT} --format xml", "--format"),
        (f"{SERVE_RMP} --db r.sqlite --port 70000", "--port"),
        (f"{SERVE_RMP} --db nodir/r.sqlite", "does not exist"),
        (f"{SERVE_RMP} --db afile.txt/r.sqlite", "is not a folder"),
        ("reproduce sp --out nodir/sub", "does not exist"),
        ("reproduce sp --out afile.txt", "not a folder"),
        (f"sensor perturb d.csv --out nodir/p {PERTURB}", "does not exist"),
        (f"{IDENTIFY_LEDGER} l.sqlite --engine dask --out nodir/labels", "does not exist"),
        # Dask: the lost-worker timeout
        (f"{IDENTIFY} --engine dask --worker-timeout 0", "--worker-timeout must be seconds > 0"),
        (f"{IDENTIFY} --worker-timeout 30", "apply only with --engine dask"),
        (f"sensor perturb d.csv --out p {PERTURB} --worker-timeout nan", "--worker-timeout"),
    ]
]


def _cases() -> list:
    out = []
    for name, args in FILE_OUTPUTS.items():
        option = args[args.index("{OUT}") - 1]
        for fault, (path, words) in PATH_FAULTS.items():
            out.append(
                pytest.param(
                    [a.replace("{OUT}", path) for a in args], words or option, id=f"{name} {fault}"
                )
            )
    out += [
        pytest.param(args, words, id=" ".join(args[:2]) + f" {i}")
        for i, (args, words) in enumerate(OTHER_CASES)
    ]
    return out


CASES = _cases()


def test_the_matrix_has_at_least_60_cases() -> None:
    assert len(CASES) >= 60
    assert {args[0] for args, _ in (c.values for c in CASES)} >= {
        "sp",
        "search",
        "sensor",
        "rmp",
        "budget",
        "demo",
        "serve",
        "reproduce",
        "datasets",
    }


@pytest.mark.parametrize(("args", "words"), CASES)
def test_bad_input_is_one_line_exit_2_and_no_file(
    privad_cli, error_line, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args, words
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PRIVAD_LEDGER", raising=False)
    (tmp_path / "d.csv").write_text(
        "x1,x2\n" + "".join(f"0.{i},0.{(7 * i) % 40}\n" for i in range(1, 41))
    )
    (tmp_path / "afile.txt").write_text("not a table\n")
    X = np.arange(80.0).reshape(40, 2) / 80
    scipy.io.savemat(tmp_path / "d.mat", {"X": X, "y": np.zeros((40, 1))})
    np.savez(tmp_path / "badlabels.npz", X=X, y=np.arange(40) % 3)
    before = sorted(os.listdir(tmp_path))
    code, out, err = privad_cli(*GROUPS)(*args)
    line = error_line(err)
    assert code == 2, (args, out, err)
    assert words in line, (words, line)
    assert sorted(os.listdir(tmp_path)) == before  # no output, ledger, folder or temp file
