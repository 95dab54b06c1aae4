"""A new store's first transaction is written in rollback-journal mode (its pages are new: written once, where
write-ahead logging writes them twice), then the store is in WAL like every other; an import killed midway through
that first write is rolled back for the next reader or writer (never read torn), and a later import works."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import ROOT, audit

from audit.store.database import Store

ROWS = 20_000
#: a child process: the import of ``log.csv`` into ``store.db``, killed (os._exit) after 15,000 of its decisions are
#: inserted, with a page cache of 5 pages so that most of them were already written into the store file
KILLED = """
import os
from audit.store import database
insert = database.insert_columns
def killed(db, system, columns):
    db.execute("PRAGMA cache_size = 5")
    insert(db, system, [column[:15000] for column in columns])
    os._exit(9)
database.insert_columns = killed
from audit.cli import main
main(["import", "--format", "decisions", "--data", "log.csv", "--spec", "log.yaml", "--task", "log", "--db", "store.db"])
"""


def _journal(db: sqlite3.Connection) -> str:
    return db.execute("PRAGMA journal_mode").fetchone()[0]


def _log(folder: Path) -> None:
    rng = np.random.default_rng(0)
    pd.DataFrame({"id": np.arange(ROWS), "sex": rng.choice(["F", "M"], ROWS), "pool": np.arange(ROWS) // 10,
                  "rank": np.arange(ROWS) % 10 + 1}).to_csv(folder / "log.csv", index=False)
    (folder / "log.yaml").write_text("applicant: id\ndemographics: [sex]\npool: pool\n")


def test_the_first_transaction_of_a_new_store_is_journalled_then_the_store_is_wal(tmp_path):
    path = tmp_path / "new.db"
    with Store(path) as store:
        with store.transaction() as db:
            modes = [_journal(db)]
            db.execute("INSERT INTO meta VALUES ('first', '1')")
        with store.transaction() as db:
            modes.append(_journal(db))
            db.execute("INSERT INTO meta VALUES ('second', '2')")
    with Store(path) as store, store.transaction() as db:  # an existing store: WAL from its first transaction
        modes.append(_journal(db))
    assert modes == ["delete", "wal", "wal"]
    assert not Path(f"{path}-journal").exists()
    with Store(path, create=False) as store:
        assert dict(store.db.execute("SELECT key, value FROM meta WHERE key IN ('first', 'second')")) == \
               {"first": "1", "second": "2"}


def test_a_failed_first_transaction_leaves_a_wal_store(tmp_path):
    path = tmp_path / "new.db"
    with Store(path) as store:
        with pytest.raises(RuntimeError), store.transaction() as db:
            db.execute("INSERT INTO meta VALUES ('first', '1')")
            raise RuntimeError("stopped")
        assert _journal(store.db) == "wal"
        assert store.db.execute("SELECT COUNT(*) FROM meta WHERE key = 'first'").fetchone() == (0,)


@pytest.mark.parametrize("first", ["reader", "writer"])
def test_an_import_killed_in_its_first_write_is_rolled_back_then_imported_again(tmp_path, first):
    _log(tmp_path)
    killed = subprocess.run([sys.executable, "-c", KILLED], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    assert killed.returncode == 9, killed.stderr
    path = tmp_path / "store.db"
    assert Path(f"{path}-journal").exists()  # the stopped write's journal: the store file holds its pages
    if first == "reader":
        with Store(path, create=False) as store:
            assert store.db.execute("SELECT (SELECT COUNT(*) FROM recorded_decisions), "
                                    "(SELECT COUNT(*) FROM models)").fetchone() == (0, 0)
        assert not Path(f"{path}-journal").exists()
    done = audit("import", "--format", "decisions", "--data", "log.csv", "--spec", "log.yaml", "--task", "log",
                 "--db", "store.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with Store(path, create=False) as store:
        assert store.db.execute("SELECT COUNT(*) FROM recorded_decisions").fetchone() == (ROWS,)
        assert store.db.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        assert _journal(store.db) == "wal"
