"""The audit design stored with the results: a mixed store (resume pointwise + pairwise from the demo store, essays
and a custom task scored here with the real bundled model) is audited with each task's own design by the dashboard
(Streamlit AppTest) and by ``audit metrics --db``, and both agree."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from audit.backend import DEFAULT_MODEL, installed_models
from fake_backend import installed
from helpers import audit_status
from audit.paths import DEMO_STORE
from loan_spec import loan_spec

os.environ["HF_HUB_OFFLINE"] = "1"
APP = str(DEMO_STORE.parent.parent / "app.py")
PAGES = ["pages/overview.py", "pages/run_audit.py", "pages/allocation_gaps.py", "pages/group_correlations.py",
         "pages/model_rankings.py", "pages/cairo_explorer.py"]
CSV = ("text,group,qualified\n"
       "\"Ana earns 80,000 a year and has no debt.\",Blue,1\n\"Bo earns 80,000 a year and has no debt.\",Green,1\n"
       "\"Cy earns 20,000 a year and missed two payments.\",Blue,0\n"
       "\"Di earns 20,000 a year and missed two payments.\",Green,0\n")
SPEC = loan_spec("Green", pools=None)
NUMBERS = ["delta", "jsd", "emd", "rabbi", "rabbi_pvalue", "delta_qualified", "rabbi_qualified", "dp_gap", "eo_gap"]
pytestmark = pytest.mark.skipif(DEFAULT_MODEL not in installed_models(), reason="bundled default model not installed")


cli = audit_status  # (exit status, stdout, stderr) of python -m audit, in this process


@pytest.fixture(scope="session")
def mixed_store(tmp_path_factory) -> str:
    """The demo store (resume pointwise + pairwise, the study's recorded rankings) plus 16 essays and a 4-row custom
    task, scored by the deterministic fake backend (the pages' wiring is under test, not the numbers) with SmolLM2's
    trait on essays: little probability on the labels (under 0.05 on average), which the pages must flag."""
    folder = tmp_path_factory.mktemp("mixed")
    store = folder / "mixed.db"
    shutil.copy(DEMO_STORE, store)
    (folder / "loans.csv").write_text(CSV)
    (folder / "loan.yaml").write_text(SPEC)
    for mass, argv in (((0.01, 0.04), ["--task", "essay", "--subtask", "ptj", "--limit", "2"]),
                       ((0.2, 0.9), ["--task", "custom", "--subtask", "all", "--data", str(folder / "loans.csv"),
                                     "--spec", str(folder / "loan.yaml")])):
        with pytest.MonkeyPatch.context() as patch:
            installed(patch, mass=mass)
            status, _, err = cli("score", *argv, "--db", str(store))
        assert status == 0, err
    return str(store)


@pytest.fixture
def dashboard(monkeypatch, mixed_store) -> AppTest:
    monkeypatch.setenv("AUDIT_DB", mixed_store)
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    assert not at.exception, at.exception
    return at


def choose(at: AppTest, task: str, page: str = "pages/allocation_gaps.py") -> AppTest:
    at.switch_page(page).run()
    at.sidebar.selectbox(key="task").set_value(task).run()
    assert not at.exception, at.exception
    return at


def test_every_page_renders_every_task_of_a_mixed_store(dashboard):
    tasks = ["study-gpt-hiring", "synthetic-dated-log", "essay", "loan", "resume"]  # the demo's recorded systems first
    assert dashboard.sidebar.selectbox(key="task").options == tasks
    for task in tasks:
        for page in PAGES:
            choose(dashboard, task, page)
            assert not dashboard.error, (task, page, [e.value for e in dashboard.error])
            assert dashboard.title, (task, page)


def test_switching_task_changes_groups_groupings_and_subtasks(dashboard):
    seen = {}
    for task in ("resume", "essay", "loan"):
        at = choose(dashboard, task)
        mode = at.sidebar.selectbox(key=f"mode_{task}").value
        reference = at.sidebar.selectbox(key=f"ref_{task}_{at.sidebar.radio(key=f'grouping_{task}').value}")
        seen[task] = (at.sidebar.radio(key=f"grouping_{task}").options, reference.value, sorted(reference.options),
                      at.sidebar.multiselect(key=f"subtasks_{task}_{mode}").options)
    assert seen["resume"][:2] == (["race × gender", "race", "gender"], "W_M")
    assert seen["essay"][:2] == (["L1"], "ENS") and "CHN" in seen["essay"][2] and "W_M" not in seen["essay"][2]
    assert seen["essay"][3] == ["ptj"] and "software engineer" in seen["resume"][3]  # shown by subtask_name
    assert seen["loan"][:3] == (["group"], "Green", ["Blue", "Green"])


def test_essay_page_uses_the_stored_design_and_equals_the_cli(dashboard, mixed_store):
    at = choose(dashboard, "essay")
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "pool design: random:10" in captions and "median rating" in captions
    assert any("renormalised noise" in i.value for i in at.info), "the essays' low label mass must be flagged"
    page = next(f.value for f in at.dataframe if "dp_gap" in f.value.columns)
    k = int(page["k"].iloc[0])
    status, out, err = cli("metrics", "--db", mixed_store, "--task", "essay", "--k", str(k))
    assert status == 0, err
    expected = pd.DataFrame(json.loads(out))
    assert set(expected["task"]) == {"essay"} and len(expected) == len(page) == 7
    key = ["model", "subtask", "mode", "group", "k"]
    merged = page.merge(expected, on=key, suffixes=("", "_cli"))
    assert len(merged) == len(page) and page["low_label_mass"].all()
    for column in NUMBERS:
        np.testing.assert_allclose(merged[column], merged[f"{column}_cli"], rtol=0, atol=1e-12, err_msg=column)


def test_cli_reads_the_stored_design_and_flags_override_it(mixed_store):
    status, _, err = cli("metrics", "--db", mixed_store, "--k", "2")
    assert status == 2 and "choose one with --task" in err
    status, out, _ = cli("validity", "--db", mixed_store, "--task", "resume", "--k", "2")
    pools = {(row["mode"], row["reference"], row["pool"]) for row in json.loads(out)["correlations"]}
    assert pools == {("pointwise", "W_M", "per-group"), ("pairwise-likelihood", "W_M", "observed"),
                     ("pairwise", "W_M", "observed")}
    status, out, _ = cli("metrics", "--db", mixed_store, "--task", "essay", "--k", "1", "--reference", "JPN",
                         "--pool", "random:4")
    assert status == 0 and "ENS" in {row["group"] for row in json.loads(out)}
    status, out, _ = cli("designs", "--db", mixed_store, "--task", "loan", "--format", "json")
    assert [(d["reference"], d["pools"], d["labels"]) for d in json.loads(out)] == [("Green", "per-group", "Yes=1 No=0")]
    assert cli("metrics", "--scores", "x.csv", "--k", "2")[2].startswith("error: --scores needs --reference")


def test_names_groupings_and_the_design_flag_come_from_the_task_definitions():
    from audit.design import AuditDesign
    from audit.errors import AuditError
    from audit.tasks import get_task
    from audit.tasks.designs import completed, design_of

    design = design_of(get_task("resume", "retail"))
    assert design.counterfactual and design_of(get_task("essay", "ptj")).counterfactual is False
    assert [design.display_name("A_F"), design.display_name("W_F", "race"), design.display_name("W_M", "gender")] == [
        "Asian women", "White", "men"]
    assert design.category("B_F", "race") == "B" and design.category("B_F", "race × gender") == "B_F"
    assert design.display_name("Z_Q") == "Z_Q"  # no declared name: the code
    with pytest.raises(AuditError, match="grouping 'L1' not declared by task 'resume'"):
        design.category("B_F", "L1")
    restored = AuditDesign.from_row(design.row())
    assert (restored, restored.names, restored.counterfactual) == (design, design.names, True)
    old = list(design.row())
    old[7] = json.dumps(design.groupings)  # a row written before names were recorded still loads
    older = AuditDesign.from_row(tuple(old))
    assert (older.names, older.counterfactual) == ({}, False) and completed(older).display_name("H_M") == "Hispanic men"
