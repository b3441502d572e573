"""Typed options (privad.cli._options): a good value parses, a bad one is one line naming
the option and what it allows, exit 2, before the command runs; Typer's own usage errors
are one line too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privad.cli import budget, search, serve, sp
from privad.cli._options import (
    BOUND,
    DELTA,
    SCOPE,
    SEED,
    Choice,
    Integer,
    Integers,
    Number,
    Numbers,
    OptionError,
    public_bounds,
)
from privad.errors import ParameterError


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        (Number("a finite number > 0", strict=True), "0.5", 0.5),
        (Number("a number >= 0"), "0", 0.0),
        (Number("a share in [0, 1)", maximum=1.0, below=True), "0.999", 0.999),
        (Integer("an integer >= 1", minimum=1), " 7 ", 7),
        (Integer("an integer"), str(2**62), 2**62),
        (Choice(("sp", "dp")), "DP", "dp"),
        (Choice(lambda: ("fixed", "fresh")), "fresh", "fresh"),
        (Numbers("widths > 0"), "1,2.5", [1.0, 2.5]),
        (Integers("ids >= 0", minimum=0), "3, 5", [3, 5]),
        (SEED, "0", 0),
        (SCOPE, "  a b ", "a b"),
        (DELTA, "1e-6", 1e-6),
        (BOUND, "proline=0:2000", ("proline", (0.0, 2000.0))),
    ],
)
def test_a_good_value_parses(kind, text, value):
    assert kind.bind("--x")(text) == value


def test_a_default_of_the_type_passes_through():
    assert Number("a number").bind("--x")(60.0) == 60.0
    assert SEED.bind("--seed")(None) is None


@pytest.mark.parametrize(
    ("kind", "text", "words"),
    [
        (Number("a finite number > 0", strict=True), "0", "--x must be a finite number > 0"),
        (Number("a finite number > 0", strict=True), "nan", "got 'nan'"),
        (Number("a finite number > 0", strict=True), "inf", "got 'inf'"),
        (Number("a share in [0, 1)", maximum=1.0, below=True), "1", "in [0, 1)"),
        (Integer("an integer >= 1", minimum=1), "0", "--x must be an integer >= 1"),
        (Integer("an integer >= 1", minimum=1), "1.5", "got '1.5'"),
        (Integer("an integer"), str(2**62 + 1), "at most 4611686018427387904"),
        (Choice(("sp", "dp")), "xx", "--x must be one of sp, dp, got 'xx'"),
        (Numbers("widths > 0"), "1,,2", "--x must be widths > 0"),
        (Integers("ids >= 0", minimum=0), "3,-1", "--x must be ids >= 0"),
        (SCOPE, "  ", "--x must be a non-empty name"),
        (DELTA, "1", "--x must be a number in (0, 1)"),
        (BOUND, "proline=0", "--x must be COL=LO:HI"),
        (BOUND, "p=a:1", "finite numbers"),
    ],
)
def test_a_bad_value_is_an_option_error_naming_the_option(kind, text, words):
    with pytest.raises(OptionError, match=None) as info:
        kind.bind("--x")(text)
    assert words in str(info.value)
    assert not isinstance(info.value, ValueError)  # Typer would wrap a ValueError


def test_public_bounds_merge_the_file_and_refuse_a_column_twice(tmp_path: Path):
    path = tmp_path / "b.csv"
    path.write_text("column,lower,upper\na,0,1\n")
    assert public_bounds(None, None) is None
    assert public_bounds([("b", (0.0, 2.0))], str(path)) == {"a": (0.0, 1.0), "b": (0.0, 2.0)}
    with pytest.raises(ParameterError, match="bounds twice"):
        public_bounds([("a", (0.0, 2.0))], str(path))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["sp", "plan", "--beta", "3", "--epsilon", "1", "--queries", "0"], "--queries must be"),
        (["sp", "plan", "--beta", "3", "--epsilon", "-1"], "--epsilon must be a finite number"),
        (["sp", "plan", "--beta", "3", "--epsilon", "1", "--delta", "2"], "--delta must be"),
        (["sp", "plan", "--beta", "3", "--epsilon", "1", "--k", "x"], "--k must be an integer"),
        (["sp", "plan", "--epsilon", "1"], "--beta is required"),
        (["sp", "plan", "--beta", "3", "--epsilon", "1", "--bogus"], "No such option: --bogus"),
        (["sp", "plan", "--beta"], "--beta"),
        (["budget", "show", "--last", "-1"], "--last must be an integer >= 0"),
        (
            ["search", "run", "--oracle", "x.csv", "--budget", "1", "--selection", "z"],
            "--selection",
        ),
        (["search", "run", "--oracle", "x.csv", "--budget", "1", "--kind", "z"], "--kind must be"),
        (
            [
                "serve",
                "oracle",
                "x.csv",
                "--db",
                "o.sqlite",
                "--epsilon",
                "1",
                "--budget",
                "1",
                "--port",
                "70000",
            ],
            "--port must be a TCP port 0..65535",
        ),
        (
            [
                "sp",
                "identify",
                "x.csv",
                "--beta",
                "3",
                "--r",
                "1",
                "--epsilon",
                "1",
                "--count-cap",
                "many",
            ],
            "--count-cap must be none, auto or an integer",
        ),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(
    privad_cli, error_line, in_tmp_home, args, words
):
    code, out, err = privad_cli(sp, budget, search, serve)(*args)
    assert code == 2, (out, err)
    assert out == ""
    assert words in error_line(err)
    assert list(in_tmp_home.iterdir()) == []  # nothing written, no ledger


def test_usage_errors_say_where_to_look(privad_cli, error_line, in_tmp_home):
    _, _, err = privad_cli(sp)("sp", "plan", "--epsilon", "1")
    assert error_line(err).endswith("(see 'privad sp plan --help')")


def test_typed_values_reach_the_command(privad_cli, in_tmp_home):
    code, out, _ = privad_cli(sp)(
        "sp",
        "plan",
        "--beta",
        "3",
        "--epsilon",
        "0.5",
        "--k",
        "2",
        "--queries",
        "4",
        "--delta",
        "1e-6",
        "--max-ball",
        "8",
        "--json",
    )
    assert code == 0
    doc = json.loads(out)
    assert (doc["beta"], doc["epsilon"], doc["k"]) == (3, 0.5, 2)
    assert len(doc["flag_probability"]) == 8


def test_help_shows_each_option_s_metavar(privad_cli, in_tmp_home):
    code, out, _ = privad_cli(sp, columns=300)("sp", "plan", "--help")
    assert code == 0
    for option, metavar in (("--beta", "B"), ("--epsilon", "E"), ("--delta", "D")):
        line = next(line for line in out.splitlines() if f" {option} " in line)
        assert f" {metavar} " in line
