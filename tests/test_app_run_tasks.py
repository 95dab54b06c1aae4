"""Run page with the auditor's own data (Streamlit AppTest, real SQLite): an uploaded CSV with a spec written in the
form or uploaded as YAML is scored into the store; bad uploads are named and write nothing. The page's wiring is
under test, not the model's numbers: its runs score with the deterministic fake backend (tests/fake_backend.py);
test_app_run.py runs the page with the real bundled model."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit.backend import DEFAULT_MODEL, installed_models
from audit.store.tables import score_table
from audit.store.database import Store
from fake_backend import installed
from loan_spec import loan_spec

os.environ["HF_HUB_OFFLINE"] = "1"
ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT.parent / "shared" / "anchors" / "allocational-harm-eval"
CSV = (b"text,group,qualified\n"
       b"\"Ana earns 80,000 a year and has no debt.\",Blue,1\n"
       b"\"Bo earns 80,000 a year and has no debt.\",Green,1\n"
       b"\"Cy earns 20,000 a year and missed two payments.\",Blue,0\n"
       b"\"Di earns 20,000 a year and missed two payments.\",Green,0\n")
SPEC = loan_spec("Blue", pools=None).encode()
pytestmark = pytest.mark.skipif(DEFAULT_MODEL not in installed_models(), reason="bundled default model not installed")  # resolved


@pytest.fixture
def run_page(monkeypatch, tmp_path) -> tuple[AppTest, Path]:
    installed(monkeypatch)
    store = tmp_path / "run.db"
    monkeypatch.setenv("AUDIT_DB", str(store))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("pages/run_audit.py").run()
    return at, store


def scored(store: Path) -> list[tuple[str, str, str]]:
    with Store(store, create=False) as opened:
        table = score_table(opened)
    return sorted(zip(table["task"], table["subtask"], table["group"]))


def test_uploaded_candidates_with_a_form_spec_are_scored(run_page):
    at, store = run_page
    at.selectbox(key="run_task").set_value("custom").run()
    assert at.button(key="run_start").disabled, "no run before the data is given"
    at.file_uploader(key="run_candidates").set_value(("loans.csv", CSV, "text/csv")).run()
    at.text_input(key="spec_reference").set_value("Blue").run()
    assert not at.error, [e.value for e in at.error]
    at.button(key="run_start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    summary = next(f.value for f in at.dataframe if "scored" in f.value)
    assert summary.loc[0, "task"] == "custom" and summary.loc[0, "scored"] == 4
    assert scored(store) == [("custom", "default", g) for g in ("Blue", "Blue", "Green", "Green")]


def test_uploaded_yaml_spec_names_the_task(run_page):
    at, store = run_page
    at.selectbox(key="run_task").set_value("custom").run()
    at.radio(key="run_spec_source").set_value("upload a YAML / JSON spec").run()
    at.file_uploader(key="run_spec_file").set_value(("loan.yaml", SPEC, "application/yaml")).run()
    at.file_uploader(key="run_candidates").set_value(("loans.csv", CSV, "text/csv")).run()
    at.button(key="run_start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert {task for task, _, _ in scored(store)} == {"loan"}


@pytest.mark.parametrize(("content", "message"), [
    (b"words,group\nhello,Blue\n", "missing column(s) ['text']"),
    (b"text,group\nhello,Blue\nhi,Green\n", "reference group 'Red' is not a group"),
    (b"text,group\n\xff\xfe,Blue\n", "not UTF-8"),
    (b"text,group\nhello,Bl\x00ue\nhi,Red\n", "line 2: a NUL byte (offset 19)"),
    (b"text,group\nhello,Bl\x1bue\nhi,Red\n", "row 1, column 'group': group name 'Bl\\x1bue' holds a control "
                                               "character (U+001B)"),
    (",".join(f"c{i}" for i in range(200_000)).encode() + b"\n" + b"x," * 199_999 + b"x\n",
     "header row: 200,000 columns; the limit is 10,000"),
])
def test_bad_upload_is_named_and_nothing_is_written(run_page, content, message, monkeypatch, tmp_path):
    monkeypatch.setenv("AUDIT_CACHE_DIR", str(tmp_path / "cache"))  # the uploads folder of this test alone
    at, store = run_page
    at.selectbox(key="run_task").set_value("custom").run()
    at.text_input(key="spec_reference").set_value("Red").run()
    at.file_uploader(key="run_candidates").set_value(("bad.csv", content, "text/csv")).run()
    assert not at.exception
    shown = " ".join(c.value for c in at.code)
    assert message in shown, shown
    assert "bad.csv" in shown and "default" not in shown, shown  # the upload's name, never its cache path
    assert at.button(key="run_start").disabled
    assert not store.exists()
    assert not any((tmp_path / "cache" / "uploads").glob("*")), "a refused upload is not kept"


def test_a_typed_reference_group_with_a_control_character_is_one_message(run_page):
    at, store = run_page
    at.selectbox(key="run_task").set_value("custom").run()
    at.file_uploader(key="run_candidates").set_value(("loans.csv", CSV, "text/csv")).run()
    at.text_input(key="spec_reference").set_value("Blue\x00").run()
    assert not at.exception
    shown = " ".join(c.value for c in (*at.code, *at.error))
    assert "key 'reference_group': group name 'Blue\\x00' holds a control character (U+0000)" in shown, shown
    assert at.button(key="run_start").disabled and not store.exists()


def test_every_uploaded_row_is_scored_unless_told_and_the_count_is_said(run_page):
    at, _ = run_page
    at.selectbox(key="run_task").set_value("custom").run()
    at.file_uploader(key="run_candidates").set_value(("loans.csv", CSV * 1, "text/csv")).run()
    at.text_input(key="spec_reference").set_value("Blue").run()
    assert at.number_input(key="run_limit_custom").value == 2  # every candidate of the largest group
    assert "4 of 4 candidates will be scored" in " ".join(c.value for c in at.caption)
    at.number_input(key="run_limit_custom").set_value(1).run()
    assert "2 of 4 candidates will be scored" in " ".join(c.value for c in at.caption)
    labels = [w.label for w in (*at.text_input, *at.number_input)]
    assert len(labels) == len(set(labels)), labels  # no two fields share a label


def test_form_labels_must_be_label_equals_number(run_page):
    at, _ = run_page
    at.selectbox(key="run_task").set_value("custom").run()
    at.text_input(key="spec_labels").set_value("Yes=1, No").run()
    assert "'No' is not LABEL=NUMBER" in " ".join(c.value for c in at.code)


@pytest.mark.skipif(not PAPER.is_dir(), reason="the paper's data (../shared/anchors) is not present")
def test_paper_folder_lists_its_jobs(run_page):
    at, _ = run_page
    at.selectbox(key="run_task").set_value("paper-resume").run()
    at.text_input(key="run_data_paper-resume").set_value(str(PAPER)).run()
    assert not at.error, [e.value for e in at.error]
    assert {"retail", "software_engineer"} <= set(at.selectbox(key="run_subtask").options)


def test_nothing_is_flagged_before_anything_is_typed_and_the_upload_is_previewed(run_page):
    at, store = run_page
    at.selectbox(key="run_task").set_value("custom").run()
    assert not at.exception and not at.error and not at.code, [e.value for e in at.error]
    at.file_uploader(key="run_candidates").set_value(("loans.csv", CSV, "text/csv")).run()
    assert not at.error and not at.code
    rows, groups = (next(f.value for f in at.dataframe if column in f.value) for column in ("text", "candidates"))
    assert len(rows) == 4 and rows["group"].tolist() == ["Blue", "Green", "Blue", "Green"]
    assert groups.to_dict("list") == {"subtask": ["default"] * 2, "group": ["Blue", "Green"], "candidates": [2, 2],
                                      "qualified": [1, 1]}
    assert any("reference group" in i.value for i in at.info) and at.button(key="run_start").disabled
    at.text_input(key="spec_reference").set_value("Blue").run()
    spec = next(f.value for f in at.dataframe if "setting" in f.value).set_index("setting")["value"]
    assert (spec["task name"], spec["reference group"], spec["labels and relevance"]) == ("custom", "Blue",
                                                                                         "Yes = 1, No = 0")
    assert not at.button(key="run_start").disabled and not store.exists()  # previewed, nothing written


def test_a_task_name_holding_other_data_is_refused_visibly(run_page):
    at, store = run_page
    at.selectbox(key="run_task").set_value("custom").run()
    at.file_uploader(key="run_candidates").set_value(("loans.csv", CSV, "text/csv")).run()
    at.text_input(key="spec_reference").set_value("Blue").run()
    at.button(key="run_start").click().run()
    assert not at.error, [e.value for e in at.error]
    other = CSV.replace(b"Ana earns", b"Eve earns")
    at.file_uploader(key="run_candidates").set_value(("loans2.csv", other, "text/csv")).run()
    at.button(key="run_start").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == ["The run stopped with an error:"]
    assert "task 'custom'" in " ".join(c.value for c in at.code) and "already holds" in " ".join(c.value for c in at.code)
    assert len(scored(store)) == 4  # the first run's scores only
