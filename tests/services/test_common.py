"""Shared plumbing: tokens, strict JSON, arrays, the SQLite store, CSV windows."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from privad.accounting import Ledger
from privad.errors import DataError, DatasetNotFoundError, ParameterError
from privad.relaxed import SplitRule
from privad.services.analyst import AnalystStore
from privad.services.auth import TokenRegistry, load_token_file, parse_token_spec
from privad.services.bodies import float_matrix, index_vector, parse_json
from privad.services.correction import CorrectionStore, create_correction_app
from privad.services.errors import ServiceError
from privad.services.store import pack, unpack
from privad.services.streams import iter_windows, read_csv_rows

SECRET = "a-secret-of-enough-length"


def test_token_specs_and_files(tmp_path: Path) -> None:
    assert parse_token_spec(f"s1={SECRET}") == ("s1", SECRET)
    for bad, words in [
        ("s1", "NAME=SECRET"),
        ("s1=short", "at least 16"),
        ("bad name=" + SECRET, "token name"),
        ("=" + SECRET, "token name"),
        ("s1=with space in secret", "without spaces"),
    ]:
        with pytest.raises(ParameterError, match=words):
            parse_token_spec(bad)
    f = tmp_path / "tokens.txt"
    f.write_text(f"# comment\n\ns1={SECRET}\n  s2 = {SECRET}-2  \n")
    assert load_token_file(f) == [("s1", SECRET), ("s2", SECRET + "-2")]
    f.write_text("# only comments\n")
    with pytest.raises(ParameterError, match="holds no"):
        load_token_file(f)
    f.write_text(f"s1={SECRET}\ns2=short\n")
    with pytest.raises(ParameterError, match="line 2"):
        load_token_file(f)
    with pytest.raises(ParameterError, match="cannot read"):
        load_token_file(tmp_path / "missing.txt")


def test_registry_lookup_and_uniqueness() -> None:
    reg = TokenRegistry([("s1", SECRET), ("s2", SECRET + "x")], {"analyst": SECRET + "y"})
    assert reg.lookup(SECRET).name == "s1" and reg.lookup(SECRET).role == "sensor"
    assert reg.lookup(SECRET + "y").role == "analyst"
    assert reg.lookup("nope") is None
    assert reg.sensors == ["s1", "s2"]
    with pytest.raises(ParameterError, match="given twice"):
        TokenRegistry([("s1", SECRET), ("s1", SECRET + "x")])
    with pytest.raises(ParameterError, match="same secret"):
        TokenRegistry([("s1", SECRET)], {"analyst": SECRET})


def test_strict_json_and_arrays() -> None:
    assert parse_json(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    for raw in (b'{"a": NaN}', b'{"a": Infinity}', b'{"a": -Infinity}'):
        with pytest.raises(DataError, match="not a JSON number"):
            parse_json(raw)
    with pytest.raises(ServiceError, match="not valid JSON") as info:
        parse_json(b"{")
    assert info.value.status_code == 400
    X = float_matrix([[1, 2.5], [3, -4]], "X")
    assert X.dtype == np.float64 and X.shape == (2, 2)
    with pytest.raises(DataError, match="different lengths"):
        float_matrix([[1.0], [1.0, 2.0]], "X")
    with pytest.raises(DataError, match="non-numbers"):
        float_matrix([[False, 1.0]], "X")
    with pytest.raises(DataError, match="infinite"):
        float_matrix([[1e308 * 10, 1.0]], "X")
    assert index_vector([], "i").shape == (0,)
    with pytest.raises(DataError):
        index_vector([1, 2**64], "i")
    with pytest.raises(DataError):
        index_vector([True], "i")
    a = np.array([[1.5, -2.0], [0.1, 3.0]])
    assert np.array_equal(unpack(pack(a), shape=(2, 2)), a)
    i = np.array([3, 1, 4], dtype=np.int64)
    assert np.array_equal(unpack(pack(i, "<i8"), "<i8"), i)


def test_store_is_durable_and_bound_to_its_role(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="does not exist; create the folder first"):
        AnalystStore(tmp_path / "sub" / "a.sqlite")  # no folder is created for a path
    assert not (tmp_path / "sub").exists()
    db = tmp_path / "a.sqlite"
    store = AnalystStore(db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.write(lambda c: c.execute("PRAGMA synchronous").fetchone()[0]) == 2  # FULL
    store.close()
    with pytest.raises(ParameterError, match="privad analyst database, not a correction one"):
        CorrectionStore(db)
    AnalystStore(db).close()  # reopens fine
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(ParameterError, match="not a usable SQLite database"):
        AnalystStore(tmp_path / "junk.sqlite")
    with pytest.raises(ParameterError, match="file path"):
        AnalystStore(":memory:")


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_store_files_are_private_and_a_ledger_or_foreign_database_is_refused(
    tmp_path: Path,
) -> None:
    db = tmp_path / "a.sqlite"
    store = AnalystStore(db)
    store.write(lambda c: c.execute("SELECT 1"))
    wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
    assert wal.exists() and shm.exists()
    assert [_mode(p) for p in (db, wal, shm)] == [0o600, 0o600, 0o600]
    store.close()
    Ledger(tmp_path / "ledger.sqlite", create=True).close()
    before = (tmp_path / "ledger.sqlite").read_bytes()
    with pytest.raises(ParameterError, match="is a privad ledger .*apart from the ledger"):
        AnalystStore(tmp_path / "ledger.sqlite")
    assert (tmp_path / "ledger.sqlite").read_bytes() == before  # nothing written into it
    with sqlite3.connect(tmp_path / "other.sqlite") as conn:
        conn.execute("CREATE TABLE customers (name TEXT)")
    with pytest.raises(ParameterError, match="another database \\(it holds customers\\)"):
        AnalystStore(tmp_path / "other.sqlite")
    with sqlite3.connect(tmp_path / "other.sqlite") as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"customers"}


def test_correction_app_refuses_a_split_rule_it_cannot_store(tmp_path: Path) -> None:
    # each window's row holds min_gap and max_fp_share only; other step-3 choices are refused
    # before the database is opened
    tokens = TokenRegistry([("s1", SECRET)], {"analyst": SECRET + "-analyst"})
    for rule in (SplitRule(d_tp_floor=0.0), SplitRule(d_fp_rule="none")):
        with pytest.raises(ParameterError, match="stores only min_gap and max_fp_share"):
            create_correction_app(
                tmp_path / "cs.sqlite", tokens, outlier_layer_width=1.0, rule=rule
            )
    with pytest.raises(ParameterError, match="rule must be a SplitRule"):
        create_correction_app(tmp_path / "cs.sqlite", tokens, outlier_layer_width=1.0, rule=0.5)
    assert not (tmp_path / "cs.sqlite").exists()


def test_csv_rows_and_windows() -> None:
    text = "x1,x2,label\n1,2,0\n3,4,1\n\n5,6,0\n7,8,0\n9,10,1\n"
    rows = list(read_csv_rows(io.StringIO(text), columns=["x1", "1"]))
    assert rows == [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]
    assert list(read_csv_rows(io.StringIO("1,2\n3,4\n"))) == [[1, 2], [3, 4]]
    wins = list(iter_windows(rows, 2, first=5))
    assert [w for w, _ in wins] == [5, 6, 7] and wins[-1][1].shape == (1, 2)
    assert [w for w, _ in iter_windows(rows, 2, partial=False)] == [0, 1]
    with pytest.raises(DataError, match="line 3 has 2 field"):
        list(read_csv_rows(io.StringIO("a,b,c\n1,2,3\n4,5\n")))
    with pytest.raises(DataError, match="line 2 holds NaN"):
        list(read_csv_rows(io.StringIO("1,2\n3,nan\n")))
    with pytest.raises(DataError, match="line 2 holds a value that is not a number"):
        list(read_csv_rows(io.StringIO("1,2\n3,x\n")))
    with pytest.raises(DatasetNotFoundError, match="unknown column 'z'"):
        list(read_csv_rows(io.StringIO("x,y\n1,2\n"), columns=["z"]))
    with pytest.raises(ParameterError):
        list(iter_windows(rows, 0))


def test_group_commit_isolates_failing_writes(tmp_path: Path) -> None:
    import threading

    from privad.services.errors import Conflict
    from privad.services.store import SQLiteStore

    store = SQLiteStore(
        tmp_path / "g.sqlite",
        role="test",
        schema="CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY)",
    )
    errors: list[int] = []

    def put(k: int) -> None:
        def tx(conn: sqlite3.Connection) -> int:
            conn.execute("INSERT INTO t VALUES (?)", (k,))
            if k % 3 == 0:
                raise Conflict(f"refused {k}")  # after writing: must be rolled back alone
            return k

        try:
            assert store.write(tx) == k
        except Conflict:
            errors.append(k)

    threads = [threading.Thread(target=put, args=(k,)) for k in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    with store.reading() as conn:
        keys = sorted(r[0] for r in conn.execute("SELECT k FROM t"))
    assert sorted(errors) == list(range(0, 60, 3))
    assert keys == [k for k in range(60) if k % 3]
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.write(lambda c: None)
