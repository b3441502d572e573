"""privad.services.servers: what each server's composition adds to its app factory.

The factories themselves are tested with their services; here each ``*_server`` call is
checked for what it decides: the default scopes, the bounds by feature position, the
seed as the noise, the split rule, the training settings, the operator's notes.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from privad.datasets import Dataset
from privad.sensitive.mechanisms import aiq_mechanism
from privad.services import analyst, console, correction, curator, oracle, rmp, servers

TOKENS = [("u1", "user-secret-0123456789")]
PEER = "peer-secret-0123456789"


def _capture(monkeypatch, module, factory: str) -> dict:
    """Replace ``module.factory`` by a recorder of its arguments; return what it records."""
    made: dict = {}

    def record(*args, **kwargs):
        made.update(args=args, **kwargs)
        return "app"

    monkeypatch.setattr(module, factory, record)
    return made


def test_oracle_server_defaults_its_scope_to_the_series_and_notes_what_it_holds(
    monkeypatch, tmp_path: Path
) -> None:
    made = _capture(monkeypatch, oracle, "create_oracle_app")
    np.save(tmp_path / "toy.npy", np.arange(5.0))
    server = servers.oracle_server(
        tmp_path / "o.sqlite", TOKENS, tmp_path / "toy.npy", 0.25, t_low=1.5, t_high=3.25,
        budget=10, kind="exponential", seed=7,
    )  # fmt: skip
    assert server.app == "app"
    assert made["scope"] == "oracle/toy" and made["rng"] == 7 and made["notes"] is server.notes
    assert made["values"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert (made["t_low"], made["t_high"]) == (1.5, 3.25)
    assert server.notes == [
        "toy: 5 values, t_l = 1.5, t_h = 3.25 (given (--t-low/--t-high)); exponential oracle, "
        "ε = 0.25 per answer"
    ]
    servers.oracle_server(
        tmp_path / "o.sqlite", TOKENS, str(tmp_path / "toy.npy"), t_low=0.0, t_high=2.0,
        epsilon=1, budget=2, scope="mine",
    )  # fmt: skip
    assert made["scope"] == "mine" and made["rng"] is None


def test_oracle_server_derives_the_thresholds_from_the_labels(monkeypatch, tmp_path: Path) -> None:
    """``derive_thresholds``: section 6.1's reduction, as a local search reads the data."""
    made = _capture(monkeypatch, oracle, "create_oracle_app")
    (tmp_path / "s.csv").write_text("v,label\n0.1,0\n0.2,0\n3.0,1\n0.9,1\n")
    server = servers.oracle_server(
        tmp_path / "o.sqlite", TOKENS, str(tmp_path / "s.csv"), column="v",
        labels_column="label", derive_thresholds=True, epsilon=1, budget=2,
    )  # fmt: skip
    assert made["values"].tolist() == [0.1, 0.2, 3.0]
    assert (round(made["t_low"], 3), round(made["t_high"], 3)) == (0.48, 2.72)
    assert "derived from the labels" in server.notes[0]


def test_curator_server_maps_bounds_to_feature_positions(monkeypatch, tmp_path: Path) -> None:
    made = _capture(monkeypatch, curator, "create_curator_app")
    data = Dataset(name="toy", X=np.zeros((4, 3)), y=None, feature_names=("a", "b", "c"))
    mech = aiq_mechanism("sp", beta=1, r=0.5, epsilon=1.0)
    server = servers.curator_server(
        tmp_path / "c.sqlite", TOKENS, data, mech, ledger=tmp_path / "l.sqlite", budget=5,
        delta=1e-6, bounds={"c": (0.0, 2.0), "a": (-1.0, 1.0)}, seed=3,
    )  # fmt: skip
    assert made["bounds"] == {2: (0.0, 2.0), 0: (-1.0, 1.0)}
    assert made["scope"] == "curator/toy" and made["rng"] == 3 and made["delta"] == 1e-6
    assert server.notes == [
        f"toy: 4 records x 3 features; {mech.guarantee.summary()} per answer; 5, δ 1e-06 "
        "per querier; 1 querier token(s)",
        "feature scaling: public bounds on 2 column(s), (x − lo)/(hi − lo); 1 column(s) in "
        "their own units; 0 value(s) outside the bounds clipped (clipping uses only the "
        "bounds, so the guarantee holds; this count is for you, not released)",
    ]
    server = servers.curator_server(
        tmp_path / "c.sqlite", TOKENS, data, mech, ledger=tmp_path / "l.sqlite", budget=5,
        bounds={}, scope="q",
    )  # fmt: skip
    assert made["bounds"] is None and made["scope"] == "q"
    assert server.notes[1:] == ["feature scaling: none (the features in their own units)"]


def test_correction_server_takes_the_analyst_token_and_the_split_rule(
    monkeypatch, tmp_path: Path
) -> None:
    made = _capture(monkeypatch, correction, "create_correction_app")
    servers.correction_server(
        tmp_path / "cs.sqlite", TOKENS, outlier_layer_width=0.5, analyst_token=PEER,
        min_gap=0.125, max_fp_share=0.25,
    )  # fmt: skip
    registry = made["args"][1]
    assert registry.lookup(PEER).role == correction.ANALYST_ROLE
    assert registry.lookup(TOKENS[0][1]).name == "u1"
    assert (made["rule"].min_gap, made["rule"].max_fp_share) == (0.125, 0.25)


def test_analyst_server_builds_its_detector_on_one_thread_unless_told(
    monkeypatch, tmp_path: Path
) -> None:
    made = _capture(monkeypatch, analyst, "create_analyst_app")
    monkeypatch.delenv("PARLAY_NUM_THREADS", raising=False)
    servers.analyst_server(
        tmp_path / "a.sqlite", TOKENS, correction_url="http://127.0.0.1:1",
        correction_token=PEER, eps=0.5, min_samples=3,
    )  # fmt: skip
    assert os.environ["PARLAY_NUM_THREADS"] == "1" and made["verify"] is True
    assert (made["detector"].eps, made["detector"].min_samples) == (0.5, 3)
    monkeypatch.setenv("PARLAY_NUM_THREADS", "4")
    servers.analyst_server(
        tmp_path / "a.sqlite", TOKENS, correction_url="https://cs", correction_token=PEER,
        eps=0.5, min_samples=3, ca_cert="ca.pem",
    )  # fmt: skip
    assert os.environ["PARLAY_NUM_THREADS"] == "4" and made["verify"] == "ca.pem"


@pytest.mark.parametrize(("given", "kept"), [(None, None), ("  ", None), (" reg ", "reg")])
def test_rmp_server_opens_registration_without_a_token(
    monkeypatch, tmp_path: Path, given, kept
) -> None:
    made = _capture(monkeypatch, rmp, "create_rmp_app")
    server = servers.rmp_server(
        tmp_path / "r.sqlite", TOKENS, operator_token=PEER, registration_token=given,
        n=4, r=1, seed=9, hidden=2, epochs=7,
    )  # fmt: skip
    assert made["registration_token"] == kept and made["rng"] == 9
    assert (made["training"].epochs, made["training"].hidden) == (7, 2)
    assert made["notes"] is server.notes


def test_console_server_is_read_only_without_an_operator_token(monkeypatch) -> None:
    made = _capture(monkeypatch, console, "create_console_app")
    assert servers.console_server("l.sqlite").notes == ["ledger l.sqlite; read-only"]
    assert made["operator_token"] is None
    server = servers.console_server("l.sqlite", operator_token=f" {PEER} ", store="s.sqlite")
    assert server.notes == ["ledger l.sqlite; operator actions need the token"]
    assert made["operator_token"] == PEER and made["store"] == "s.sqlite"
