"""``privad datasets list`` and ``privad datasets describe`` through ``privad.cli.main``.

Each test runs ``main`` on a fresh Typer app holding only the ``datasets`` group, so the
tests neither depend on nor disturb how the other groups are wired.
"""

from __future__ import annotations

import pytest

from privad.cli import datasets as datasets_cli


@pytest.fixture
def run(privad_cli):
    return privad_cli(datasets_cli, columns=160)


def test_list_shows_every_entry_with_kind_shape_anomalies_licence(run):
    code, out, err = run("datasets", "list")
    assert code == 0, err
    for text in (
        "thyroid",
        "3772 x 6",
        "93",
        "BSD-2-Clause",
        "nab:speed_7578",
        "abalone",
        "unlabelled",
        "gas",
        "external",
        "sensor-ring",
        "generated",
        "MIT",
        "creditcard",
        "284807 x 30",
    ):
        assert text in out


def test_list_filters_by_kind(run):
    code, out, _ = run("datasets", "list", "--kind", "generated")
    assert code == 0
    assert "sensor-ring" in out and "thyroid" not in out
    code, _, err = run("datasets", "list", "--kind", "nonsense")
    assert code == 2
    assert err.strip().startswith("privad: error:") and len(err.strip().splitlines()) == 1


def test_describe_embedded_prints_fields_licence_and_statistics(run):
    code, out, err = run("datasets", "describe", "thyroid")
    assert code == 0, err
    for text in (
        "thyroid",
        "embedded",
        "BSD-2-Clause",
        "ODDS",
        "sha256",
        "summary statistics",
        "mean",
        "x5",
        "2.4655%",
    ):
        assert text in out


def test_describe_series_and_generated(run):
    code, out, _ = run("datasets", "describe", "nab:speed_7578")
    assert code == 0
    assert "2015-09-11 15:34:00" in out and "anomalous points" in out and "MIT" in out
    code, out, _ = run("datasets", "describe", "banana-8d", "--seed", "3")
    assert code == 0
    assert "1053 x 8" in out and "seed" in out
    code, out, _ = run("datasets", "describe", "mammography", "--no-stats")
    assert code == 0 and "summary statistics" not in out


def test_describe_external_without_file_says_where_to_put_it(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PRIVAD_DATA", raising=False)
    code, out, _ = run("datasets", "describe", "creditcard")
    assert code == 0
    assert "not available here" in out and "PRIVAD_DATA" in out
    code, _, err = run("datasets", "describe", "creditcard", "--path", str(tmp_path / "x.csv"))
    assert code == 2 and "no such file" in err


def test_describe_external_with_path(run, tmp_path):
    path = tmp_path / "real_1.csv"
    path.write_text("timestamp,value,is_anomaly\n1,1.0,0\n2,5.0,1\n")
    code, out, err = run("datasets", "describe", "yahoo", "--path", str(path))
    assert code == 0, err
    assert "anomalous points" in out


def test_unknown_name_is_one_line_and_exit_2(run):
    code, out, err = run("datasets", "describe", "thyriod")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("privad: error: unknown dataset 'thyriod'")
    assert "Traceback" not in err and out == ""


def test_path_is_refused_for_embedded_data(run, tmp_path):
    code, _, err = run("datasets", "describe", "thyroid", "--path", str(tmp_path))
    assert code == 2 and "--path does not apply" in err


def test_every_option_has_help(run):
    for command in (["datasets", "list", "--help"], ["datasets", "describe", "--help"]):
        code, out, _ = run(*command)
        assert code == 0
    for command in (datasets_cli.list_command, datasets_cli.describe_command):
        import inspect

        for parameter in inspect.signature(command).parameters.values():
            assert getattr(parameter.default, "help", None), (command.__name__, parameter.name)


def test_describe_takes_the_path_of_a_data_file(run, tmp_path, monkeypatch, error_line):
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tx.csv").write_text("a,b\n1,2\n3,4\n5,9\n")
    code, out, err = run("datasets", "describe", "tx.csv")
    assert code == 0, err
    assert "kind" in out and "file" in out and "3 x 2" in out
    code, out, err = run("datasets", "describe", "tx.csv", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["entry"] == {"name": "tx.csv", "kind": "file"}
    assert data["data"]["records"] == 3 and data["data"]["features"] == 2
    assert [s["max"] for s in data["data"]["statistics"]] == [5, 9]
    code, _, err = run("datasets", "describe", "tx.csv", "--path", "x")
    assert code == 2 and "--path applies to the external datasets" in error_line(err)
    code, _, err = run("datasets", "describe", "missing.csv")
    assert code == 2 and "unknown dataset 'missing.csv'" in error_line(err)
