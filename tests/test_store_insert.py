"""The multi-row insert of recorded decisions (audit.store.database.insert_decisions) writes exactly the rows, values
and SQLite types that one ``executemany`` row by row wrote: dated and undated, with missing applicant ids, a last
statement shorter than the others, values made block by block, the applicant index (made by the first append, not
at import) dropped and made again for a big part, and appended parts."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest
from helpers import audit

from audit.store import database
from audit.store.database import APPLICANT_INDEX, ROWS_PER_INSERT, Store, insert_decisions

ROWS = "SELECT *, typeof(pool), typeof(position), typeof(grp), typeof(value), typeof(applicant), typeof(decided) " \
       "FROM recorded_decisions ORDER BY system, pool, position"


def _part(count: int, *, first_pool: int = 0, dated: bool, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    applicants = pd.Series([f"a{first_pool}-{i}" for i in range(count)], dtype=object)
    applicants[rng.random(count) < 0.3] = None
    dates = pd.Series([f"2025-01-{1 + i % 28:02d}" for i in range(count)], dtype=object)
    dates[rng.random(count) < (0.4 if dated else 1.0)] = None
    return pd.DataFrame({"subtask": "job", "pool": first_pool + np.arange(count) // 7,
                         "position": np.arange(count) % 7, "group": rng.choice(["F_A", "M_B", "Ünï"], count),
                         "value": rng.choice([1.0, 2.5, -0.0, 1e300, 7.0], count), "applicant": applicants,
                         "date": dates})


def _executemany(db: sqlite3.Connection, system: int, part: pd.DataFrame) -> None:
    """The row-by-row insert the multi-row one replaced."""
    applicants = part["applicant"].astype(object).where(part["applicant"].notna(), None)
    columns = [part["pool"].astype(int).tolist(), part["position"].astype(int).tolist(),
               part["group"].astype(str).tolist(), part["value"].astype(float).tolist(), applicants.tolist()]
    dated = "date" in part and bool(part["date"].notna().any())
    if dated:
        columns.append(part["date"].astype(object).where(part["date"].notna(), None).tolist())
    db.executemany(f"INSERT INTO recorded_decisions VALUES ({system}, ?, ?, ?, ?, ?, {'?' if dated else 'NULL'})",
                   zip(*columns))


def _stored(path, parts: list[pd.DataFrame], insert, *, indexed: bool = False) -> tuple[list[tuple], list[tuple]]:
    with Store(path) as store:
        if indexed:
            with store.transaction() as db:
                db.execute(APPLICANT_INDEX)
        for part in parts:
            with store.transaction() as db:
                system = db.execute("INSERT OR IGNORE INTO recorded_systems (model, task, subtask, outcome) VALUES "
                                    "('rec-x', 'log', 'job', 'rank')").lastrowid or 1
                insert(db, system, part)
        indexes = store.db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = "
                                   "'recorded_decisions' AND sql IS NOT NULL").fetchall()
        return store.db.execute(ROWS).fetchall(), indexes


@pytest.mark.parametrize("count", [0, 1, ROWS_PER_INSERT, 2 * ROWS_PER_INSERT + 37])
@pytest.mark.parametrize("dated", [False, True])
def test_writes_what_executemany_wrote(tmp_path, count, dated):
    part = _part(count, dated=dated)
    made, indexes = _stored(tmp_path / "new.db", [part], insert_decisions)
    assert made == _stored(tmp_path / "old.db", [part], _executemany)[0]
    assert len(made) == count and indexes == []  # no applicant index until a first append looks ids up
    if count > ROWS_PER_INSERT:  # both kinds of each column written
        assert {row[-2] for row in made} == {"text", "null"}
        assert {row[-1] for row in made} == ({"text", "null"} if dated else {"null"})


@pytest.mark.parametrize("indexed", [False, True])
def test_appended_parts_and_the_rebuilt_index(tmp_path, monkeypatch, indexed):
    monkeypatch.setattr(database, "BULK_ROWS", 1000)  # the first part rebuilds an applicant index, the next do not
    monkeypatch.setattr(database, "BLOCK_ROWS", 700)  # blocks of values that end inside a statement's rows
    parts = [_part(1500, dated=False), _part(600, first_pool=1000, dated=True, seed=1),
             _part(3, first_pool=2000, dated=False, seed=2)]
    made, indexes = _stored(tmp_path / "new.db", parts, insert_decisions, indexed=indexed)
    assert made == _stored(tmp_path / "old.db", parts, _executemany)[0]
    assert len(made) == 2103 and indexes == ([("recorded_applicants",)] if indexed else [])


def test_the_first_append_makes_the_applicant_index_and_finds_a_reused_id(tmp_path):
    db, spec = tmp_path / "s.db", tmp_path / "log.yaml"
    spec.write_text("applicant: id\ndemographics: [sex]\npool: req\n")
    for name, first in (("one", 0), ("two", 8), ("three", 7)):  # "three" reuses id a7 of "one"
        pd.DataFrame({"id": [f"a{first + i}" for i in range(8)], "sex": list("FM") * 4,
                      "req": [f"r{first + i // 4}" for i in range(8)], "rank": [1, 2, 3, 4] * 2}).to_csv(
            tmp_path / f"{name}.csv", index=False)
    argv = ["import", "--format", "decisions", "--spec", spec, "--task", "t", "--label", "ats", "--db", db]
    assert audit(*argv, "--data", tmp_path / "one.csv").returncode == 0
    with Store(db, create=False) as store:  # imported: no index
        assert not store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'recorded_applicants'").fetchall()
    assert audit(*argv, "--data", tmp_path / "two.csv", "--append").returncode == 0
    with Store(db, create=False) as store:
        assert store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'recorded_applicants'").fetchall()
    done = audit(*argv, "--data", tmp_path / "three.csv", "--append")
    assert done.returncode == 2
    assert "row 1, column 'id': applicant 'a7' is already stored in the log 'ats'" in done.stderr
    with Store(db, create=False) as store:
        assert store.db.execute("SELECT COUNT(*) FROM recorded_decisions").fetchone()[0] == 16
