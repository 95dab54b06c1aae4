"""The multi-row insert of recorded decisions (audit.store.database.insert_decisions) writes exactly the rows, values
and SQLite types that one ``executemany`` row by row wrote: dated and undated, with missing applicant ids, a last
statement shorter than the others, the applicant index dropped and made again for a big part, and appended parts."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from audit.store import database
from audit.store.database import ROWS_PER_INSERT, Store, insert_decisions

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


def _stored(path, parts: list[pd.DataFrame], insert) -> tuple[list[tuple], list[tuple]]:
    with Store(path) as store:
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
    made, _ = _stored(tmp_path / "new.db", [part], insert_decisions)
    assert made == _stored(tmp_path / "old.db", [part], _executemany)[0]
    assert len(made) == count
    if count > ROWS_PER_INSERT:  # both kinds of each column written
        assert {row[-2] for row in made} == {"text", "null"}
        assert {row[-1] for row in made} == ({"text", "null"} if dated else {"null"})


def test_appended_parts_and_the_rebuilt_index(tmp_path, monkeypatch):
    monkeypatch.setattr(database, "BULK_ROWS", 1000)  # the first part rebuilds the applicant index, the next do not
    parts = [_part(1500, dated=False), _part(600, first_pool=1000, dated=True, seed=1),
             _part(3, first_pool=2000, dated=False, seed=2)]
    made, indexes = _stored(tmp_path / "new.db", parts, insert_decisions)
    assert made == _stored(tmp_path / "old.db", parts, _executemany)[0]
    assert len(made) == 2103 and indexes == [("recorded_applicants",)]
