"""Table shaping behind the pages (audit.engine and pages/view_models, free of Streamlit): groupings, filters and the store summary."""
from __future__ import annotations

import pandas as pd

from audit.engine.tables import StoreTables
from pages.view_models.view import View, shown
from audit.engine.metric_pass import regroup
from audit.engine.shape import label_mass
from audit.design import regroup_code, split_groupings
from audit.engine.selection import Selection
from audit.store.database import Store


def test_group_codes_marginalise_to_their_parts():
    groupings = split_groupings(("race", "gender"))
    assert list(groupings) == ["race × gender", "race", "gender"]
    assert [regroup_code("B_F", part) for part in groupings.values()] == ["B_F", "B", "F"]
    assert regroup_code("ENS", 0) == "ENS" and split_groupings(["L1"]) == {"L1": None}


def test_regroup_maps_every_group_column_and_keeps_the_input():
    pairs = pd.DataFrame({"group_a": ["W_F", "B_M"], "group_b": ["A_M", "W_M"]})
    out = regroup(pairs, 1, ("group_a", "group_b"))
    assert out.to_dict("list") == {"group_a": ["F", "M"], "group_b": ["M", "M"]}
    assert pairs["group_a"].tolist() == ["W_F", "B_M"]
    assert regroup(pairs, None) is pairs


def test_shown_filters_task_models_subtasks_and_groups():
    view = View(store="s.db", version=(), selection=Selection(
        "resume", grouping="race × gender", reference="W_M", models=("m1",), subtasks=("retail",), groups=("B_F",),
        n_boot=100))
    table = pd.DataFrame({"task": ["resume"] * 4 + ["essay"], "model": ["m1", "m1", "m2", "m1", "m1"],
                          "subtask": ["retail"] * 3 + ["hr", "retail"], "group": ["B_F", "W_M", "B_F", "B_F", "B_F"]})
    assert shown(table, view).index.tolist() == [0]
    assert len(shown(table, view, with_reference=True)) == 2
    assert view.settings()["grouping"] == "race × gender" and "version" not in view.settings()


def test_label_mass_flags_models_below_the_threshold():
    scores = pd.DataFrame({"task": ["essay"] * 3 + ["resume"], "mode": "pointwise", "model": ["a", "a", "b", "b"],
                           "label_mass": [0.001, 0.003, 0.4, 0.001]})
    flags = label_mass(scores, "essay").set_index("model")
    assert flags.loc["a", "mean label mass"] == 0.002 and flags.loc["a", "low"] and not flags.loc["b", "low"]


def test_empty_store_summary(tmp_path):
    with Store(tmp_path / "empty.db") as store:
        tables = StoreTables.read(store)
        assert tables.summary.empty and "last scored / recorded" in tables.summary.columns
        assert tables.models.empty and tables.designs == {} and tables.tasks() == []


def test_readable_tables_name_groups_and_say_not_defined_at_the_pool_size():
    from audit.design import AuditDesign, PoolDesign
    from audit.present.readable import category_verdicts, deciding, group_names, impact_by_grouping, system_verdicts

    design = AuditDesign("t", "s", "W_M", PoolDesign.parse("per-group"), ("Yes", "No"), (1.0, 0.0), "everyone",
                         groupings=split_groupings(("race", "gender")),
                         names={"W": "White", "B": "Black", "F": "women", "M": "men"})
    assert group_names(design, ["B_F", "W_M"]) == {"B_F": "Black women", "W_M": "White men", "B": "Black",
                                                   "W": "White", "F": "women", "M": "men"}
    table = pd.DataFrame({"model": "m", "task": "t", "subtask": "s", "mode": "pointwise", "grouping": "race",
                          "category": ["B", "W"], "name": ["Black", "White"], "k": 1, "candidates": [4, 4],
                          "selection_rate": [0.25, 0.75], "impact_ratio": [1 / 3, 1.0], "impact_ratio_lo": [0.0, 1.0],
                          "impact_ratio_hi": [0.9, 1.0], "p_adj": [0.0004, float("nan")],
                          "verdict": ["adverse impact", "inconclusive"], "needed_per_group": [None, 1240.0],
                          "more_per_group": [None, 1236.0], "plan": ["", "more data"],
                          "plan_note": ["", "about 1,236 more candidates per group needed"]})
    rows = category_verdicts(table)
    assert rows["verdict"].tolist() == ["adverse impact", "inconclusive"]
    assert rows["plan"].tolist() == ["", "about 1,236 more candidates per group needed"]
    assert list(deciding(rows).columns) == ["system", "subtask", "grouping", "group", "verdict",
                                            "impact ratio [interval]", "plan"]
    assert rows["adjusted p"].tolist() == ["4.0e-04", "most selected"]
    assert rows["impact ratio [interval]"].tolist() == ["0.333 [0.000, 0.900]", "1.000 [1.000, 1.000]"]
    assert system_verdicts(table).loc[0, "groups carrying the verdict"] == "race: Black"
    shown = impact_by_grouping(table, {"race × gender": 2, "race": 4, "gender": 2}, k=2)
    assert shown["race"]["group"].tolist() == ["Black", "White"]
    assert shown["gender"].startswith("gender: not defined at k = pool size — its pools hold 2 candidates")


def test_upload_preview_counts_groups_as_a_run_joins_them(tmp_path):
    from audit.tasks.preview import preview

    data = tmp_path / "c.csv"
    data.write_text("text,race,gender,qualified\na,W,M,1\nb,B,F,0\nc,B,F,yes\n", "utf-8")
    rows, groups, count = preview(data, ["race", "gender"])
    assert count == 3 and rows.columns.tolist() == ["text", "race", "gender", "qualified"]
    assert groups.to_dict("list") == {"subtask": ["default"] * 2, "group": ["B_F", "W_M"], "candidates": [2, 1],
                                      "qualified": [1, 1]}
    assert preview(data, ["group"])[1] is None


def test_page_glue_stays_small_and_the_library_never_imports_streamlit():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    # glue every page shares (caches, quota slider, boxes, exports); the sidebar is the app's frame (pages/frame/),
    # a page's own panels live beside it, and the view-models they show live in pages/view_models/ and audit/
    assert sum(len(p.read_text("utf-8").splitlines()) for p in (root / "pages" / "shared").glob("*.py")) <= 300
    for path in (root / "audit").rglob("*.py"):
        assert "import streamlit" not in path.read_text("utf-8"), path


def test_each_task_keeps_its_own_quota_and_the_opening_address_names_one():
    from pages.view_models.address import OPENED, keep_quota, opened_task, start_quota

    state: dict = {OPENED: {"task": "pilot", "k": "9"}}
    params: dict = {}
    assert opened_task(state, ["study", "pilot"]) == "pilot" and opened_task(state, ["study"]) is None
    start_quota(state, "k_gaps", "pilot", default=2, top=7)
    assert state["k_gaps"] == 7  # the address's k, kept below the pool size
    keep_quota(state, params, "pilot", 4)
    start_quota(state, "k_gaps", "study", default=1, top=7)
    assert state["k_gaps"] == 1 and params == {"k": "4"}  # a task switch: the study's own quota, not the pilot's k
    keep_quota(state, params, "study", 1)
    start_quota(state, "k_gaps", "pilot", default=2, top=7)
    assert state["k_gaps"] == 4  # back on the pilot: the k chosen there
    state["k_gaps"] = 5  # the slider moved: a rerun on the same task keeps it
    start_quota(state, "k_gaps", "pilot", default=2, top=7)
    assert state["k_gaps"] == 5
