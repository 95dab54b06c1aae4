"""Issue 41: every view a page, a command or the report shows comes from the Audit object: position bias
(``Audit.positions``) and score shape with label mass (``Audit.shape``) are read from the tables the audit holds, with
no second trip to the store."""
from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from audit.engine.audit import Audit
from audit.engine.positions import PositionAudit, task_positions
from audit.engine.selection import Selection
from audit.engine.tables import StoreTables
from audit.paths import DEMO_STORE
from audit.store.database import Store

STUDY = "study-gpt-hiring"


@pytest.fixture(scope="module")
def tables() -> StoreTables:
    with Store(DEMO_STORE, create=False) as store:
        return StoreTables.read(store)


def _study_decisions() -> pd.DataFrame:
    """The study's ranked decisions read straight from SQLite, as the position view needs them."""
    with sqlite3.connect(f"file:{DEMO_STORE}?mode=ro", uri=True) as db:
        return pd.read_sql_query(
            "SELECT m.label AS model, s.subtask, d.pool, d.position, d.grp, d.value FROM recorded_decisions d "
            "JOIN recorded_systems s ON s.id = d.system JOIN models m ON m.fingerprint = s.model "
            "WHERE s.task = ? AND s.outcome = 'rank'", db, params=(STUDY,))


def test_positions_come_from_the_tables_without_the_store(tables, monkeypatch):
    monkeypatch.setattr(Store, "query", lambda *a, **k: pytest.fail("the store was read again"))
    found = Audit(tables, Selection(STUDY, ci=0.9)).positions
    expected = PositionAudit.of(_study_decisions(), 0.9)
    pd.testing.assert_frame_equal(found.shares, expected.shares)
    pd.testing.assert_frame_equal(found.effects, expected.effects)
    assert len(found.shares) and len(found.effects)


def test_positions_read_only_the_audits_task(tables):
    other = tables.ranked.assign(task="other", value=tables.ranked["value"].iloc[::-1].to_numpy())
    found = task_positions(pd.concat([other, tables.ranked], ignore_index=True), STUDY, 0.95)
    pd.testing.assert_frame_equal(found.shares, Audit(tables, Selection(STUDY)).positions.shares)


def test_no_positions_without_ranked_pools(tables):
    assert Audit(tables, Selection("resume")).positions is None
    assert Audit(tables, Selection("synthetic-dated-log")).positions is None
    assert Audit(StoreTables.from_scores(tables.scores), Selection(STUDY)).positions is None
