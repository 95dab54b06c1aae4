"""The SQLite result store: cache hits, atomic batches, resume after kill -9, concurrent writers, bad files.

The first test scores with the real bundled model; the others test the store's plumbing (resume, cancellation,
concurrent processes) and score with the deterministic fake backend (tests/fake_backend.py), in this process or in
``python tests/fake_backend.py score ...`` where a process of its own is the point (killed, or one of two writers)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_backend import FakeBackend, installed
from helpers import audit
from loan_spec import loan_task

from audit.run.scoring import run_scoring
from audit.errors import AuditError
from audit.store.tables import score_table
from audit.store.database import Store
from audit.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
SCORE_ARGS = ["score", "--task", "resume", "--subtask", "retail", "--limit", "3"]  # 24 candidates
FAKE_SCORE = [sys.executable, str(ROOT / "tests" / "fake_backend.py"), *SCORE_ARGS]  # python -m audit, fake model


def never_load():
    raise AssertionError("the model must not be loaded when everything is cached")


def test_second_run_is_all_cache_hits(db_path, tmp_path, smollm_ref, smollm):
    """Four one-line loan applications (a resume prompt is ten times longer; the cache is under test, not a task)."""
    task = loan_task(tmp_path)
    with Store(db_path) as store:
        first = run_scoring(store, task, smollm_ref, lambda: smollm)
        second = run_scoring(store, task, smollm_ref, never_load)
        table = score_table(store)
    assert (first.scored, first.cached) == (4, 0)
    assert (second.scored, second.cached) == (0, 4)
    assert len(table) == 4 and table["score"].between(0, 1).all()
    assert set(table["group"]) == set(task.groups) == {"Blue", "Green"}


def test_cancel_keeps_committed_batches(db_path, resume_task, smollm_ref):
    fake = FakeBackend(smollm_ref)
    with Store(db_path) as store:
        cancelled = run_scoring(store, resume_task, smollm_ref, lambda: fake, limit=1, batch_size=3,
                                progress=lambda done, total: done < 3)
        assert cancelled.cancelled and cancelled.scored == 3 and fake.calls == {"label_probabilities": 3}
        resumed = run_scoring(store, resume_task, smollm_ref, lambda: fake, limit=1, batch_size=3)
        assert (resumed.cached, resumed.scored) == (3, 5) and fake.calls == {"label_probabilities": 8}
        assert len(score_table(store)) == 8


def row_count(db: Path, table: str) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:  # table not created yet
        return 0


def assert_one_row_per_candidate(db: Path, expected: int) -> None:
    with sqlite3.connect(db) as conn:
        results = conn.execute("SELECT COUNT(*), COUNT(DISTINCT prompt) FROM label_results").fetchone()
        plan = conn.execute("SELECT COUNT(*), COUNT(DISTINCT candidate_id) FROM pointwise_plan").fetchone()
    assert results == (expected, expected)
    assert plan == (expected, expected)


def test_kill_9_then_resume(db_path, monkeypatch, smollm_ref):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUDIT_FAKE_DELAY": "0.25"}  # 12 batches, 3 s in all
    process = subprocess.Popen(FAKE_SCORE + ["--db", str(db_path), "--batch-size", "2"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while row_count(db_path, "label_results") < 4 and time.time() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = row_count(db_path, "label_results")
    assert 4 <= done_before < 24, "the kill must land in the middle of the run"
    loaded = installed(monkeypatch)
    resumed = audit(*SCORE_ARGS, "--db", str(db_path))  # the rerun: in this process
    assert resumed.returncode == 0, resumed.stderr
    assert f"{24 - done_before} scored, {done_before} cached" in resumed.stdout
    assert loaded[0].calls == {"label_probabilities": 24 - done_before}, "only what the killed run had not stored"
    assert_one_row_per_candidate(db_path, 24)
    task = get_task("resume", "retail")  # every row, the killed run's included, whole and for its own prompt
    prompts = [task.pointwise_prompt(c) for c in task.candidates(3)]
    expected = {p.key(): s.probs for p, s in zip(prompts, FakeBackend(smollm_ref).label_probabilities(
        prompts, task.label_set.labels))}
    with sqlite3.connect(db_path) as conn:
        stored = {key: tuple(json.loads(probs)) for key, probs in conn.execute("SELECT prompt, probs FROM label_results")}
    assert stored == expected  # JSON keeps a float exactly


def test_two_concurrent_writers(db_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUDIT_FAKE_DELAY": "0.1"}  # slow enough for the two to overlap
    command = FAKE_SCORE[:-1] + ["2", "--db", str(db_path), "--batch-size", "2"]
    runs = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-2000:] for _, err in outputs]
    assert_one_row_per_candidate(db_path, 16)


CREATE_AT = """
import sys, time
from pathlib import Path
from audit.store.database import Store
from audit.tasks import get_task
folder, me = Path(sys.argv[1]), sys.argv[2]
print("ready", flush=True)
start = float(sys.stdin.readline())  # the same instant for every process, sent once all have imported the store
for round in range(20):  # each round, every process opens the same new store at the same instant
    instant = start + 0.25 * round
    time.sleep(max(0.0, instant - time.time() - 0.005))  # asleep until 5 ms before (four spinning processes
    while time.time() < instant:                       # would hold two cores for the whole 5 s)
        pass
    Store(folder / f"{round}.db").register_model("fp-" + me, "model-" + me, {})
"""


def test_processes_creating_one_new_store_at_the_same_instant_all_write(tmp_path):
    """Several processes creating the same new store at once: none fails on SQLite's switch to write-ahead logging
    (which does not wait on the busy timeout), and every one's write is kept."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [subprocess.Popen([sys.executable, "-c", CREATE_AT, str(tmp_path), str(i)], cwd=ROOT, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(4)]
    assert [run.stdout.readline() for run in runs] == ["ready\n"] * 4, "every process has imported the store"
    start = f"{time.time() + 0.5}\n"
    for run in runs:  # to all of them before waiting on any
        run.stdin.write(start)
        run.stdin.close()
        run.stdin = None  # sent: communicate has nothing more to write
    errors = [run.communicate(timeout=120)[1] for run in runs]
    assert [run.returncode for run in runs] == [0] * 4, [e[-500:] for e in errors]
    for round in range(20):
        with sqlite3.connect(tmp_path / f"{round}.db") as conn:
            assert conn.execute("SELECT COUNT(*) FROM models").fetchone() == (4,)


def test_refuses_a_file_that_is_not_sqlite(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("just some text, not a database")
    with pytest.raises(AuditError, match="not a SQLite database"):
        Store(bad)
    assert bad.read_text() == "just some text, not a database"


def test_refuses_a_foreign_sqlite_database(tmp_path):
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    before = foreign.read_bytes()
    with pytest.raises(AuditError, match="another application"):
        Store(foreign)
    assert foreign.read_bytes() == before


def test_missing_store_is_not_created_for_reading(tmp_path):
    with pytest.raises(AuditError, match="does not exist"):
        Store(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def _plan(store: Store, task: str, texts: list[str], dataset: str) -> None:
    rows = [(task, "default", f"c{i}", "AB"[i % 2], 1, "", text) for i, text in enumerate(texts)]
    store.save_plan(candidates=rows, prompts=[], dataset=dataset)


def test_a_task_name_keeps_one_dataset(tmp_path):
    """Issue 22: a second custom file under a task name already planned from another is refused before any write;
    the same file (in any row order, any --limit) is welcome again; shipped data cannot join a custom task's name."""
    from audit.tasks.base import dataset_hash
    first = [("default", "c0", "A", True, "steady income"), ("default", "c1", "B", True, "two missed payments")]
    assert dataset_hash(first) == dataset_hash(first[::-1]) != dataset_hash([first[0]])
    with Store(tmp_path / "s.db") as store:
        _plan(store, "loan", ["steady income", "two missed payments"], dataset_hash(first))
        _plan(store, "loan", ["steady income"], dataset_hash(first[::-1]))  # same data, a smaller run
        store.check_dataset("loan", dataset_hash(first))
        with pytest.raises(AuditError, match=r"task 'loan' .* already holds the dataset with SHA-256"):
            _plan(store, "loan", ["other text"], dataset_hash([first[0]]))
        with pytest.raises(AuditError, match=r"this data \(shipped with the tool\)"):
            store.check_dataset("loan", "")
        _plan(store, "legacy", ["x", "y"], "")  # candidates planned before datasets were recorded
        with pytest.raises(AuditError, match=r"task 'legacy' .* already holds candidates from another source"):
            store.check_dataset("legacy", dataset_hash(first))
        store.check_dataset("legacy", "")
        assert store.query("SELECT task, subtask, candidate_id FROM candidates WHERE task = 'loan'").shape == (2, 3)


def test_a_read_leaves_no_wal_beside_a_store_that_had_none_and_never_touches_another_connections(tmp_path):
    """Issue 32: a read-only command left an empty -wal and a -shm; now the last reader removes them the way SQLite
    does (a closing connection that is the last), while a connection still open keeps its files and its reads."""
    import shutil

    from audit.paths import DEMO_STORE

    store = tmp_path / "copy.db"
    shutil.copy(DEMO_STORE, store)
    audit("verdict", "--db", str(store), "--task", "resume", "--format", "csv", check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.db"]
    assert store.read_bytes() == Path(DEMO_STORE).read_bytes()
    writer = Store(store)  # another process's writer, as far as the reader can tell
    try:
        with Store(store, create=False) as reader:
            assert reader.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
        assert {p.name for p in tmp_path.iterdir()} >= {"copy.db-wal", "copy.db-shm"}  # the writer's, kept
        assert writer.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    finally:
        writer.close()
