"""privad.datasets.summary: a dataset described as data and as text."""

from __future__ import annotations

import numpy as np

from privad.datasets.summary import (
    MAX_FEATURES,
    catalogue_rows,
    data_fields,
    describe_source,
    entry_fields,
    scaling_text,
    statistics_rows,
)


def test_catalogue_rows_of_one_kind() -> None:
    rows = catalogue_rows("generated")
    assert rows and {r[1] for r in rows} == {"generated"}
    assert ("thyroid", "embedded", "3772 x 6", "93", "BSD-2-Clause") in catalogue_rows()


def test_entry_fields_of_embedded_data_carry_the_digests() -> None:
    fields = dict(entry_fields(describe_source("thyroid", stats=False)["entry"]))
    assert fields["shape"] == "3772 x 6" and fields["anomalies"] == "93"
    assert any(k.startswith("file ") and v.startswith("sha256 ") for k, v in fields.items())


def test_a_data_file_is_described_as_it_is(tmp_path) -> None:
    path = tmp_path / "x.npy"
    np.save(path, np.array([[0.0, 1.0], [2.0, 5.0]]))
    doc = describe_source(str(path))
    assert entry_fields(doc["entry"]) == [("name", str(path)), ("kind", "file")]
    assert data_fields(doc["data"]) == [("loaded", "2 x 2"), ("labelled anomalies", "unlabelled")]
    # column 1: min 1, mean 3, sd 2 (population), max 5
    assert statistics_rows(doc["data"]["statistics"])[1][1:] == ("1", "3", "2", "5")


def test_a_series_is_described_by_its_span_and_values() -> None:
    fields = dict(data_fields(describe_source("nab:ec2_request_latency_system_failure")["data"]))
    assert int(fields["points"]) > 0 and " .. " in fields["windows"]
    assert fields["values"].startswith("min ") and ", max " in fields["values"]


def test_generated_data_names_its_seed_and_share() -> None:
    fields = dict(data_fields(describe_source("sensor-ring", seed=3)["data"]))
    assert fields["seed"] == "3" and fields["anomaly share"].endswith("%")


def test_statistics_rows_stop_after_the_most_features() -> None:
    stats = [
        {"feature": f"f{i}", "min": 0.0, "mean": 1 / 3, "sd": 1.0, "max": 2.0}
        for i in range(MAX_FEATURES + 3)
    ]
    rows = statistics_rows(stats)
    assert len(rows) == MAX_FEATURES + 1
    assert rows[0] == ("f0", "0", "0.3333", "1", "2")
    assert rows[-1] == ("... 3 more", "", "", "", "")


def test_scaling_text_counts_columns_and_clipped_values() -> None:
    from privad.datasets.preprocessing import BoundsScaling

    both = BoundsScaling(
        {"a": (0.0, 1.0), "b": (0.0, 2.0)}, ["a", "b"], [], {"a": 1, "b": 0}, {"a": 0, "b": 4}
    )
    assert scaling_text(both).startswith(
        "public bounds on 2 column(s), (x − lo)/(hi − lo); 5 value(s)"
    )
    some = BoundsScaling({"a": (0.0, 1.0)}, ["a"], ["c", "d"], {"a": 0}, {"a": 0})
    assert "; 2 column(s) in their own units; 0 value(s) outside" in scaling_text(some)
