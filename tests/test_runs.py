"""The audit trail (issue 40): every command and page action that writes results or a report appends exactly one row
to the store's append-only ``runs`` table (commands that only print add none); ``python -m audit runs`` lists it in
md, csv and json; the table stays out of every fingerprint of the store's content; the report names its own run and
holds the trail in its appendix; the Runs page shows it, escaped. Real SQLite files throughout; scoring runs use the
deterministic fake backend (this is plumbing)."""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from fake_backend import installed
from helpers import audit
from streamlit.testing.v1 import AppTest

from audit.paths import DEMO_STORE
from audit.present.trail import readable
from audit.engine import records
from audit.paths import portable_path
from audit.store.database import MIGRATIONS, SCHEMA_VERSION, Store, data_hash
from audit.store.runs import COLUMNS, NOT_STORED, Run, append, clean_options, trail
from audit.engine.tables import StoreTables

APP = str(DEMO_STORE.parent.parent / "app.py")
DEMO_RUNS = 9  # the runs that built the shipped demo store: 8 backfilled, then scripts/add_demo_dated_log.py's import
BACKFILLED = 8
LOG_SPEC = "applicant: id\ndemographics: [sex]\npool: req\nsubtask: job\n"


@pytest.fixture(scope="module")
def fake():
    with pytest.MonkeyPatch.context() as patch:
        yield installed(patch)


@pytest.fixture
def demo_copy(tmp_path) -> Path:
    copy = tmp_path / "copy.db"
    shutil.copyfile(DEMO_STORE, copy)
    return copy


def runs_of(db: Path) -> pd.DataFrame:
    with Store(db, create=False) as store:
        return trail(store)


def decision_log(folder: Path) -> tuple[Path, Path]:
    rows = [{"id": f"a{i}", "sex": "FM"[i % 2], "req": f"r{i // 4}", "job": "eng", "rank": i % 4 + 1}
            for i in range(40)]
    pd.DataFrame(rows).to_csv(folder / "log.csv", index=False)
    (folder / "log.yaml").write_text(LOG_SPEC)
    return folder / "log.csv", folder / "log.yaml"


def test_writing_commands_add_one_run_each_and_printing_commands_none(tmp_path, fake):
    db = tmp_path / "results.db"
    score = ["score", "--task", "resume", "--subtask", "hr_specialist", "--limit", "1", "--db", db]
    audit(*score, check=True).check_returncode()
    runs = runs_of(db)
    assert len(runs) == 1 and runs.loc[0, "action"] == "score" and runs.loc[0, "note"] == ""
    options, reads, wrote = (json.loads(runs.loc[0, name]) for name in ("options", "reads", "wrote"))
    assert options["limit"] == 1 and options["subtask"] == "hr_specialist" and "handler" not in options
    with Store(db, create=False) as store:
        digest, rows, _ = data_hash(store, "resume", ["hr_specialist"])
        fingerprint = store.models().set_index("label").loc["smollm2-135m", "fingerprint"]
    assert reads["systems"] == {"smollm2-135m": fingerprint} and (reads["data_sha256"], reads["data_rows"]) == (
        digest, rows)
    assert wrote["rows"]["label_results"] == 8 and wrote["rows"]["candidates"] == 8
    assert runs.loc[0, "version"].startswith(("git ", "audit "))

    audit(*score).check_returncode()  # every result cached: still one run, that wrote no result
    runs = runs_of(db)
    assert len(runs) == 2 and "label_results" not in json.loads(runs.loc[1, "wrote"]).get("rows", {})

    log, spec = decision_log(tmp_path)
    audit("import", "--format", "decisions", "--data", log, "--spec", spec, "--task", "hiring", "--label", "ats",
          "--db", db).check_returncode()
    runs = runs_of(db)
    assert len(runs) == 3 and runs.loc[2, "action"] == "import"
    reads = json.loads(runs.loc[2, "reads"])
    assert reads["source_sha256"] == hashlib.sha256(log.read_bytes()).hexdigest() and reads["data_rows"] == 40
    assert json.loads(runs.loc[2, "wrote"])["rows"]["recorded_decisions"] == 40

    for argv in (["scores"], ["designs"], ["runs"], ["runs", "--format", "json"], ["ll144", "--task", "hiring"],
                 ["impact", "--task", "hiring", "--k", "1"], ["verdict", "--task", "hiring", "--k", "1"]):
        done = audit(*argv, "--db", db)
        assert done.returncode == 0, (argv, done.stderr)
    assert audit(*score[:-2], "--model", "no-such-model", "--db", db).returncode == 2  # bad input: nothing ran
    assert len(runs_of(db)) == 3


def test_the_page_run_is_one_run_of_the_trail(monkeypatch, tmp_path):
    installed(monkeypatch)
    store = tmp_path / "page.db"
    monkeypatch.setenv("AUDIT_DB", str(store))
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/run_audit.py").run()
    at.selectbox(key="run_task").set_value("essay").run()
    at.selectbox(key="run_subtask").set_value("smk")
    at.number_input(key="run_limit_essay").set_value(1)
    at.button(key="run_start").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    runs = runs_of(store)
    assert runs["action"].tolist() == ["page: Run audit"]
    options, reads = json.loads(runs.loc[0, "options"]), json.loads(runs.loc[0, "reads"])
    assert options["task"] == "essay" and options["subtasks"] == ["smk"] and options["limit"] == 1
    assert reads["task"] == "essay" and list(reads["systems"]) == [options["model"]]


def test_secrets_are_never_stored(tmp_path):
    options = {"api_key": "sk-secret", "auth_token": "t0k", "api_key_env": "OPENAI_KEY", "password": None,
               "base_url": "https://user:pw@api.example.com:8443/v1?key=sk-secret#x", "handler": print}
    clean = clean_options(options)
    assert clean == {"api_key": NOT_STORED, "auth_token": NOT_STORED, "api_key_env": "OPENAI_KEY", "password": None,
                     "base_url": "https://api.example.com:8443/v1"}
    with Store(tmp_path / "s.db") as store:
        append(store, Run("score", clean), {})
        stored = store.db.execute("SELECT options FROM runs").fetchone()[0]
    assert "sk-secret" not in stored and "pw" not in stored and "t0k" not in stored


def test_the_runs_table_is_append_only_and_comes_through_the_one_migration_path(demo_copy):
    assert sorted(MIGRATIONS) == list(range(2, SCHEMA_VERSION + 1))
    with sqlite3.connect(demo_copy) as db:  # the store as schema 3 left it
        db.execute("DROP TABLE runs")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    with Store(demo_copy, create=False) as store:  # read without migrating: an empty trail
        assert trail(store).empty and list(trail(store).columns) == COLUMNS
    with Store(demo_copy) as store:  # opened for writing: migrated
        assert store.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),)
        number = append(store, Run("score", {}), {"label_results": 1})
        for statement in ("UPDATE runs SET action = 'x'", "DELETE FROM runs"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                store.db.execute(statement)
        assert trail(store)["run"].tolist() == [number] == [1]


def fingerprints(db: Path) -> dict:
    """Every fingerprint of the store's content: data hashes per task, systems, designs, prompts, the tables."""
    with Store(db, create=False) as store:
        tables = StoreTables.read(store)
        found = {"models": store.models().to_dict("records"),
                 "designs": {key: design.row() for key, design in store.designs().items()}}
        for task in tables.tasks():
            scores = tables.scores[tables.scores["task"] == task]
            subtasks = sorted(scores["subtask"].unique())
            found[task] = (data_hash(store, task, subtasks), records.systems(store, scores, task, "pointwise")
                           .drop(columns=["registered", "first scored", "last scored"]).to_dict("records"),
                           records.prompts(store, task, scores, "pointwise").to_dict("records"))
        found["scores"] = tables.scores.to_dict("records")
    return found


def test_fingerprints_do_not_change_when_runs_are_added(demo_copy):
    before = fingerprints(demo_copy)
    with Store(demo_copy) as store:
        for action in ("score", "report", "page: audit report (PDF)"):
            append(store, Run(action, {"k": 1}, {"task": "resume"}), {"label_results": 3})
    assert len(runs_of(demo_copy)) == DEMO_RUNS + 3
    assert fingerprints(demo_copy) == before


def test_runs_lists_the_trail_in_md_csv_and_json(demo_copy, tmp_path):
    with Store(demo_copy) as store:
        append(store, Run("<b>bold</b> | piped", {"note": "*x*"}), {})
    md = audit("runs", "--db", demo_copy)
    assert md.returncode == 0, md.stderr
    lines = md.stdout.splitlines()
    assert lines[0] == "| run | at | action | version | options | read | wrote | note |" and len(lines) == DEMO_RUNS + 3
    assert sum("backfilled by scripts/backfill_demo_runs.py" in line for line in lines) == BACKFILLED
    assert "&lt;b&gt;bold&lt;/b&gt; \\| piped" in lines[-1] and "<b>" not in md.stdout
    table = pd.read_csv(io.StringIO(audit("runs", "--db", demo_copy, "--format", "csv").stdout))
    assert list(table.columns) == COLUMNS and table["run"].tolist() == list(range(1, DEMO_RUNS + 2))
    rows = json.loads(audit("runs", "--db", demo_copy, "--format", "json").stdout)
    assert rows[6]["action"] == "import" and rows[6]["wrote"]["rows"]["recorded_decisions"] == 64_000
    assert rows[6]["reads"]["systems"] == {"gpt-3.5-turbo": "rec-36b7e53c460d6f14", "gpt-4": "rec-7bcebe3fe0f576b3"}

    empty = tmp_path / "empty.db"
    with Store(empty) as store:
        store.register_model("fp", "m", {})
    assert "No run is recorded in" in audit("runs", "--db", empty).stdout
    for store, message in ((tmp_path / "absent.db", "does not exist"), (Path(APP), "is not a result store")):
        done = audit("runs", "--db", store)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_the_report_names_its_run_and_holds_the_trail(demo_copy, tmp_path):
    fast = ["--task", "study-gpt-hiring", "--bootstrap", "20", "--permutations", "20"]
    first = tmp_path / "first.html"
    audit("report", "--db", demo_copy, *fast, "--out", first).check_returncode()
    runs = runs_of(demo_copy)
    assert len(runs) == DEMO_RUNS + 1 and runs["action"].iloc[-1] == "report"
    wrote = json.loads(runs["wrote"].iloc[-1])
    assert wrote["files"] == [{"path": str(first.resolve()), "sha256": hashlib.sha256(first.read_bytes()).hexdigest(),
                               "bytes": first.stat().st_size}]
    html = first.read_text("utf-8")
    trail_part = html[html.index("D. Audit trail"):]
    assert f"This report: run #{DEMO_RUNS + 1} of the store" in trail_part
    of_task = [json.loads(options).get("task") == "study-gpt-hiring" for options in runs["options"].iloc[:DEMO_RUNS]]
    assert 0 < sum(of_task) < DEMO_RUNS  # the demo's trail holds runs of both tasks; the appendix the report's task's
    assert trail_part.count("backfilled by scripts/backfill_demo_runs.py") == sum(of_task)
    assert "task=resume" not in trail_part and "task=study-gpt-hiring" in trail_part
    assert json.loads(html[html.index("id='report-data'>") + 17:html.index("</script>", html.index(
        "id='report-data'>"))])["settings"]["run"] == DEMO_RUNS + 1

    second = tmp_path / "second.pdf"
    audit("report", "--db", demo_copy, *fast, "--out", second).check_returncode()
    text = subprocess.run(["pdftotext", "-layout", str(second), "-"], capture_output=True, text=True).stdout
    assert f"This report: run #{DEMO_RUNS + 2}" in text and "out=first.html" in text
    runs = runs_of(demo_copy)
    assert len(runs) == DEMO_RUNS + 2
    options = readable(runs, portable_path)["options"].iloc[DEMO_RUNS]  # as the appendix prints them
    assert "db=copy.db" in options and "out=first.html" in options and str(tmp_path) not in options

    digest = hashlib.sha256(DEMO_STORE.read_bytes()).hexdigest()
    shipped = tmp_path / "shipped.html"
    audit("report", "--db", DEMO_STORE, *fast, "--out", shipped).check_returncode()
    assert "This report is not recorded in the store" in shipped.read_text("utf-8")
    assert hashlib.sha256(DEMO_STORE.read_bytes()).hexdigest() == digest


def test_the_runs_page_shows_the_trail_escaped(monkeypatch, demo_copy, tmp_path):
    with Store(demo_copy) as store:
        append(store, Run("<script>alert(1)</script>", {"subtask": "<i>x</i>"}), {})
    monkeypatch.setenv("AUDIT_DB", str(demo_copy))
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    shown = at.dataframe[0].value
    assert len(shown) == DEMO_RUNS + 1 and shown["action"].iloc[-1] == "<script>alert(1)</script>"
    assert shown["options"].iloc[-1] == "subtask=<i>x</i>" and shown["read"].iloc[6].startswith("task study-gpt")
    assert not any("<script>" in m.value for m in at.markdown)
    assert at.selectbox(key="runs_chosen").value == DEMO_RUNS + 1 and at.json

    monkeypatch.setenv("AUDIT_DB", str(tmp_path / "empty.db"))
    with Store(tmp_path / "empty.db") as store:
        store.register_model("fp", "m", {})
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception and any(i.value.startswith("No run is recorded in this store yet") for i in at.info)
