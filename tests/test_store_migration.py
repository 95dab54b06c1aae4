"""Schema 1 → 2: the demo store as committed before designs were stored migrates in place, keeps every row and gives
the same resume metrics; a store whose designs are missing still reads them (derived in memory). Schema 2 → 3:
recorded rankings stored as one-label results move into the compact recorded tables and read back the same."""
from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from audit.cli import main
from audit.metrics import MetricSuite
from audit.paths import DEMO_STORE
from audit.store.tables import score_table
from audit.store.database import SCHEMA_VERSION, Store, data_hash

ROOT = Path(__file__).resolve().parent.parent
V1_COMMIT = "3f5a29e"  # the last commit whose data/demo.db has schema version 1


@pytest.fixture
def v1_store(tmp_path) -> Path:
    shown = subprocess.run(["git", "show", f"{V1_COMMIT}:data/demo.db"], cwd=ROOT, capture_output=True)
    if shown.returncode != 0:
        pytest.skip("the schema-1 demo store is not in this checkout's git history")
    path = tmp_path / "v1.db"
    path.write_bytes(shown.stdout)
    return path


def tables(path: Path) -> dict[str, pd.DataFrame]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {name: pd.read_sql_query(f"SELECT * FROM {name}", db) for name in names}


def test_v1_demo_store_migrates_in_place_keeping_every_row(v1_store):
    before = tables(v1_store)
    assert before["meta"].set_index("key").loc["schema_version", "value"] == "1" and "designs" not in before
    with Store(v1_store) as store:
        scores = score_table(store)
    after = tables(v1_store)
    added = ("designs", "recorded_systems", "recorded_decisions", "runs")  # schemas 2–4: empty but designs
    assert {name: len(frame) for name, frame in after.items() if name not in added} == {
        name: len(frame) for name, frame in before.items()}
    for name, frame in before.items():
        if name != "meta":
            pd.testing.assert_frame_equal(after[name], frame, obj=name)
    assert after["meta"].set_index("key").loc["schema_version", "value"] == str(SCHEMA_VERSION)
    assert set(zip(after["designs"]["task"], after["designs"]["reference"], after["designs"]["pools"])) == {
        ("resume", "W_M", "per-group")}

    point = scores[scores["mode"] == "pointwise"]
    expected = MetricSuite(point, reference="W_M", pool="per-group").table(range(1, 8))  # k below the pool of 8
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["metrics", "--db", str(v1_store), "--task", "resume", "--k", "1-7", "--format", "json"]) == 0
    stored = pd.DataFrame(json.loads(out.getvalue()))
    stored = stored[stored["mode"] == "pointwise"].reset_index(drop=True)
    pd.testing.assert_frame_equal(stored, expected.astype({"k": "int64"}), check_dtype=False, atol=1e-12)


def test_shipped_demo_store_is_current_and_designs_are_derived_when_missing(tmp_path):
    with sqlite3.connect(f"file:{DEMO_STORE}?mode=ro", uri=True) as db:
        assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    copy = tmp_path / "copy.db"
    copy.write_bytes(DEMO_STORE.read_bytes())
    with Store(copy) as store:
        shipped = store.designs()
        store.db.execute("DELETE FROM designs WHERE task = 'resume'")  # scored tasks' designs can be derived
        assert store.designs() == shipped and sum(task == "resume" for task, _ in shipped) == 4


def test_reading_the_demo_store_leaves_it_byte_identical():
    digest = hashlib.sha256(DEMO_STORE.read_bytes()).hexdigest()
    with Store(DEMO_STORE, create=False) as store:
        assert len(score_table(store)) and store.designs()
    assert hashlib.sha256(DEMO_STORE.read_bytes()).hexdigest() == digest


def v2_recorded_store(path: Path) -> None:
    """A schema-2 store holding recorded rankings as the import wrote them before schema 3: two pools of three
    (candidates ``<pool>.<position>``, one-label results of score (n − rank)/(n − 1)) and one scored model."""
    with Store(path) as store:
        store.register_model("rec-0123456789abcdef", "gpt-x", {"kind": "recorded rankings"})
        store.register_model("fp-scored", "scored", {})
        db = store.db
        db.execute("DROP TABLE recorded_decisions")
        db.execute("DROP TABLE recorded_systems")
        db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
        ranks = {"0.0": 2, "0.1": 1, "0.2": 3, "1.0": 3, "1.1": 2, "1.2": 1}
        groups = {"0": "A_W", "1": "B_M", "2": "W_M"}
        for cid, rank in ranks.items():
            db.execute("INSERT INTO candidates VALUES ('rec', 'job', ?, ?, 1, 'name', '')", (cid, groups[cid[-1]]))
            db.execute("INSERT INTO pointwise_plan VALUES ('rec-0123456789abcdef', 'rec', 'job', ?, ?, '[\"rank\"]', "
                       "'[1.0]')", (cid, cid))
            db.execute("INSERT INTO label_results VALUES ('rec-0123456789abcdef', ?, '[\"rank\"]', ?, 1.0, 0)",
                       (cid, f"[{(3 - rank) / 2:.6g}]"))
        db.execute("INSERT INTO candidates VALUES ('loan', 'x', 'c1', 'A', 1, 'n', 't')")
        db.execute("INSERT INTO pointwise_plan VALUES ('fp-scored', 'loan', 'x', 'c1', 'k1', '[\"Yes\"]', '[1.0]')")
        db.execute("INSERT INTO label_results VALUES ('fp-scored', 'k1', '[\"Yes\"]', '[0.25]', 0.5, 0)")


def test_v2_recorded_rankings_move_to_the_recorded_tables(tmp_path):
    path = tmp_path / "v2.db"
    v2_recorded_store(path)
    columns = ["model", "task", "subtask", "candidate_id", "group", "score", "pool"]
    with Store(path, create=False) as store:  # read without migrating: pools read off the old candidate ids
        legacy = store.pointwise_table()[columns].sort_values(columns[:4], ignore_index=True)
    with Store(path) as store:  # opened for writing: migrated in place
        moved = store.pointwise_table()[columns].sort_values(columns[:4], ignore_index=True)
        counts = store.row_counts()
        systems = store.recorded_systems()
    # the same values (a store holding a recorded log reads its text columns as categoricals once migrated: the
    # decisions' own table)
    pd.testing.assert_frame_equal(moved.astype(object), legacy.astype(object))
    recorded = moved[moved["task"] == "rec"].set_index("candidate_id")
    assert recorded["score"].to_dict() == {"0.0": 0.5, "0.1": 1.0, "0.2": 0.0, "1.0": 0.0, "1.1": 0.5, "1.2": 1.0}
    assert recorded["pool"].tolist() == [0, 0, 0, 1, 1, 1]
    assert moved.loc[moved["task"] == "loan", "score"].tolist() == [0.25]
    assert (counts["recorded_decisions"], counts["label_results"], counts["pointwise_plan"], counts["candidates"]) == (
        6, 1, 1, 1)
    assert systems[["model", "task", "subtask", "outcome", "decisions", "pools"]].values.tolist() == [
        ["gpt-x", "rec", "job", "rank", 6, 2]]


def test_v4_recorded_decisions_gain_a_null_date_and_read_the_same(tmp_path):
    """Schema 4 → 5: a store whose recorded decisions have no date column reads read-only (dates missing), then
    migrates in place keeping every decision (dates NULL) and the hash of the data the numbers come from."""
    path = tmp_path / "v4.db"
    v2_recorded_store(path)
    with Store(path):
        pass  # migrated to the current schema, then taken back to schema 4
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE recorded_decisions DROP COLUMN decided")
        db.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    columns = ["model", "task", "subtask", "candidate_id", "group", "score", "pool", "date"]
    with Store(path, create=False) as store:
        legacy = store.pointwise_table()[columns].sort_values(columns[:4], ignore_index=True)
        legacy_hash = data_hash(store, "rec", ["job"])
    with Store(path) as store:
        migrated = store.pointwise_table()[columns].sort_values(columns[:4], ignore_index=True)
        assert data_hash(store, "rec", ["job"]) == legacy_hash
    pd.testing.assert_frame_equal(migrated, legacy, check_dtype=False)
    assert len(migrated[migrated["task"] == "rec"]) == 6 and migrated["date"].isna().all()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        assert db.execute("SELECT COUNT(*) FROM recorded_decisions WHERE decided IS NULL").fetchone() == (6,)
