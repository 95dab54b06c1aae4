"""The data hash of recorded decisions (audit.store.database.data_hash), made column by column (audit.store.digest), equals
the SHA-256 of the rows JSON-encoded one by one, on every path: whole-number outcomes with and without applicant ids
and dates (column by column), texts that JSON escapes and fractional or huge values (row by row), two systems; and
the text made at import from the decisions just written (save_recorded's, data_hash's ``known``) equals it."""
from __future__ import annotations

import hashlib
import json
import sqlite3

import pandas as pd
import pytest

from audit.store.database import Store, data_hash, save_recorded
from audit.store.digest import rows_text


def _decisions(values, applicants, groups=None, dates=None) -> pd.DataFrame:
    count = len(values)
    return pd.DataFrame({"subtask": "job", "pool": [i // 3 for i in range(count)],
                         "position": [i % 3 for i in range(count)],
                         "group": groups or ["F", "M", "Ünï"] * (count // 3),
                         "value": values, "applicant": applicants, "date": dates or [None] * count})


def _reference(db: sqlite3.Connection, subtasks=("job", "other")) -> tuple[str, int]:
    """The hash as defined: every decision of the task as one JSON array a line, sorted, dates only where given."""
    found = db.execute("SELECT s.model, s.subtask, d.pool, d.position, d.grp, d.value, d.applicant, d.decided FROM "
                       "recorded_decisions d JOIN recorded_systems s ON s.id = d.system WHERE s.task = 'log' AND "
                       f"s.subtask IN ({','.join('?' * len(subtasks))}) ORDER BY s.model, s.subtask, d.pool, "
                       "d.position", tuple(subtasks)).fetchall()
    text = "".join(json.dumps(list(row if row[-1] is not None else row[:-1]), ensure_ascii=False) + "\n"
                   for row in found)
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), len(found)


LOGS = [
    (_decisions([1, 2, 3, 3, 1, 2], ["a", None, "c", "d", None, ""]), "rank", True),
    (_decisions([1, 0, 1, 0, 0, 1], ["a", "b", "c", "d", "e", "f"],
                dates=["2025-01-06", None, "2025-01-07", "2025-02-01", None, "2025-12-31"]), "selected", True),
    (_decisions([-3, 0, 1e15, 2, 1, 0], [None] * 6), "score", True),
    (_decisions([0.1, 1 / 3, -2.5, 1e300, 0.0, 7.0], ["a", "b", "c", "d", "e", "f"]), "score", False),
    (_decisions([1, 2, 3, 1, 2, 3], ['say "hi"', "b", "c\\d", "e", "f\n", "g\x1f"]), "rank", False),
    (_decisions([1, 2, 3, 1, 2, 3], list("abcdef"), ["F", "M", "A\tB"] * 2), "rank", False),
    (_decisions([1, 0, 1, 0, 0, 1], list("abcdef"), dates=['2025-01-0"'] + [None] * 5), "selected", False),
]


@pytest.mark.parametrize("decisions, outcome, columns", LOGS)
def test_column_hash_equals_the_row_by_row_hash(tmp_path, decisions, outcome, columns):
    with Store(tmp_path / "s.db") as store:
        with store.transaction() as db:
            save_recorded(db, "rec-two", "log", outcome, decisions)
            save_recorded(db, "rec-one", "log", outcome, decisions.assign(subtask="other"))
        digest, rows, _ = data_hash(store, "log", ["job", "other"])
        assert (digest, rows) == _reference(store.db)
        systems = store.db.execute("SELECT id, model, subtask FROM recorded_systems").fetchall()
        made = [rows_text(store.db, system, model, subtask, "decided") for system, model, subtask in systems]
        assert all(text is not None for text in made) == columns  # the column path where it applies


def test_no_decisions_hash_as_empty_text(tmp_path):
    with Store(tmp_path / "s.db") as store:
        store.db.execute("INSERT INTO recorded_systems (model, task, subtask, outcome) VALUES ('m', 'log', 'job', "
                         "'rank')")
        assert data_hash(store, "log", ["job"])[:2] == (hashlib.sha256(b"").hexdigest(), 0)


@pytest.mark.parametrize("decisions, outcome", [(decisions, outcome) for decisions, outcome, _ in LOGS] + [
    (_decisions([-0.0, 1e16, -1e16, 2 ** 53 + 1.0, float("inf"), -7.0], ["a", None, "c\x00", "é", "e", "f"]), "score"),
    (_decisions([3, 1, 2, 2, 3, 1], ["a", "b", "c", "d", "e", "f"], ["X", 'Y"', "Z"] * 2,
                dates=[None, "2025-02-0\\", None, "2025-03-01", None, None]).assign(subtask='j\\ob "1"'), "rank"),
])
def test_the_text_made_at_import_equals_the_stored_rows(tmp_path, decisions, outcome):
    with Store(tmp_path / "s.db") as store:
        with store.transaction() as db:
            save_recorded(db, "rec-0", "log", outcome, decisions.sample(frac=1, random_state=0).assign(subtask="z"))
            texts = save_recorded(db, "rec-two", "log", outcome, decisions.sample(frac=1, random_state=1))
            texts |= save_recorded(db, "rec-one", "log", outcome, decisions.assign(subtask="other"))
        subtasks = sorted({"z", "other", *decisions["subtask"]})
        assert data_hash(store, "log", subtasks, known=texts) == data_hash(store, "log", subtasks)
        assert data_hash(store, "log", subtasks)[:2] == _reference(store.db, subtasks)
        assert set(texts) == {("rec-two", str(decisions["subtask"].iloc[0])), ("rec-one", "other")}
