"""Streamlit AppTest: a run with the real bundled model on the Run page writes to a fresh store, which pages show."""
from __future__ import annotations

import os

import pytest
from streamlit.testing.v1 import AppTest

from audit.backend import DEFAULT_MODEL, installed_models
from audit.paths import DEMO_STORE
from audit.results import score_table
from audit.store import Store

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
    at.number_input(key="run_limit").set_value(1)
    at.button(key="run_start").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    summary = at.dataframe[0].value
    assert summary.loc[0, "scored"] == 8 and summary.loc[0, "cached"] == 0
    assert 0 < summary.loc[0, "mean label mass"] <= 1

    with Store(store, create=False) as opened:
        scores = score_table(opened)
    assert len(scores) == 8 and set(scores["subtask"]) == {"retail"}

    at.button(key="run_start").click().run()
    assert at.dataframe[0].value.loc[0, "cached"] == 8, "a second click must reuse the store"

    at.switch_page("pages/overview.py").run()
    assert not at.exception
    shown = at.dataframe[0].value
    assert list(shown["model"]) == [DEFAULT_MODEL] and list(shown["subtask"]) == ["retail"]
    assert int(shown["results"].iloc[0]) == 8
