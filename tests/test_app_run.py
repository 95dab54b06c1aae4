"""Streamlit AppTest: a run with the real bundled model on the Run page writes to a fresh store, which pages show; a
run on the demo store goes to the user's own store (wiring only: the deterministic fake backend scores it)."""
from __future__ import annotations

import hashlib
import os

import pytest
from streamlit.testing.v1 import AppTest

from audit.backend import DEFAULT_MODEL, installed_models
from audit.paths import DEMO_STORE
from audit.store.tables import score_table
from audit.store.database import Store
from fake_backend import installed

os.environ["HF_HUB_OFFLINE"] = "1"
APP = str(DEMO_STORE.parent.parent / "app.py")


@pytest.mark.skipif(DEFAULT_MODEL not in installed_models(), reason="bundled default model not installed")
def test_run_page_scores_into_a_temporary_store_and_overview_shows_it(monkeypatch, tmp_path):
    store = tmp_path / "run.db"
    monkeypatch.setenv("AUDIT_DB", str(store))
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.switch_page("pages/run_audit.py").run()
    assert at.selectbox(key="run_model").value == DEFAULT_MODEL
    at.selectbox(key="run_subtask").set_value("retail")
    at.number_input(key=f"run_limit_{at.selectbox(key='run_task').value}").set_value(1)
    at.button(key="run_start").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    summary = next(d.value for d in at.dataframe if "mode" in d.value.columns)  # the run summary, not the preview
    assert summary.loc[0, "scored"] == 8 and summary.loc[0, "cached"] == 0
    assert 0 < summary.loc[0, "mean label mass"] <= 1

    with Store(store, create=False) as opened:
        scores = score_table(opened)
    assert len(scores) == 8 and set(scores["subtask"]) == {"retail"}

    at.button(key="run_start").click().run()
    assert next(d.value for d in at.dataframe if "cached" in d.value.columns).loc[0, "cached"] == 8, "a second click must reuse the store"

    at.switch_page("pages/overview.py").run()
    assert not at.exception
    shown = next(frame.value for frame in at.dataframe if "results" in frame.value)
    assert list(shown["system"]) == [DEFAULT_MODEL] and list(shown["subtask"]) == ["retail"]
    assert int(shown["results"].iloc[0]) == 8


@pytest.mark.skipif(DEFAULT_MODEL not in installed_models(), reason="bundled default model not installed")
def test_a_run_on_the_demo_store_goes_to_the_users_own_store(monkeypatch, tmp_path):
    loaded = installed(monkeypatch)
    monkeypatch.delenv("AUDIT_DB", raising=False)
    monkeypatch.setenv("AUDIT_CACHE_DIR", str(tmp_path))
    digest = hashlib.sha256(DEMO_STORE.read_bytes()).hexdigest()
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    assert at.sidebar.text_input(key="store_path").value == str(DEMO_STORE) and at.query_params["store"]
    at.switch_page("pages/run_audit.py").run()
    at.selectbox(key="run_task").set_value("essay").run()
    at.selectbox(key="run_subtask").set_value("smk")
    at.number_input(key=f"run_limit_{at.selectbox(key='run_task').value}").set_value(1)
    at.button(key="run_start").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    own = tmp_path / "my-results.db"
    assert hashlib.sha256(DEMO_STORE.read_bytes()).hexdigest() == digest, "the demo store must never be written"
    assert at.sidebar.text_input(key="store_path").value == str(own) and at.query_params["store"] == str(own)
    assert at.sidebar.selectbox(key="task").value == "essay"
    with Store(own, create=False) as opened, Store(DEMO_STORE, create=False) as demo:
        tasks, demo_tasks = set(score_table(opened)["task"]), set(score_table(demo)["task"])
    assert "essay" not in demo_tasks and tasks == demo_tasks | {"essay"}, \
        "the user's store holds the demo's results and the new run"
    assert at.get("page_link") and "Allocation gaps" in at.get("page_link")[0].proto.label
    assert [f.calls for f in loaded] == [{"label_probabilities": len(opened_rows(own, "essay"))}]


def opened_rows(store, task: str):
    with Store(store, create=False) as opened:
        table = score_table(opened)
    return table[table["task"] == task]
