"""Table shaping behind the pages (audit.views, free of Streamlit): groupings, filters and the store summary."""
from __future__ import annotations

import pandas as pd

from audit import views
from audit.design import regroup_code, split_groupings
from audit.store import Store


def test_group_codes_marginalise_to_their_parts():
    groupings = split_groupings(("race", "gender"))
    assert list(groupings) == ["race × gender", "race", "gender"]
    assert [regroup_code("B_F", part) for part in groupings.values()] == ["B_F", "B", "F"]
    assert regroup_code("ENS", 0) == "ENS" and split_groupings(["L1"]) == {"L1": None}


def test_regroup_maps_every_group_column_and_keeps_the_input():
    pairs = pd.DataFrame({"group_a": ["W_F", "B_M"], "group_b": ["A_M", "W_M"]})
    out = views.regroup(pairs, 1, ("group_a", "group_b"))
    assert out.to_dict("list") == {"group_a": ["F", "M"], "group_b": ["M", "M"]}
    assert pairs["group_a"].tolist() == ["W_F", "B_M"]
    assert views.regroup(pairs, None) is pairs


def test_shown_filters_task_models_subtasks_and_groups():
    view = views.View(store="s.db", version=(), task="resume", mode="pointwise", grouping="race × gender",
                      reference="W_M", pool="per-group", models=("m1",), subtasks=("retail",), groups=("B_F",),
                      ci=0.95, n_boot=100)
    table = pd.DataFrame({"task": ["resume"] * 4 + ["essay"], "model": ["m1", "m1", "m2", "m1", "m1"],
                          "subtask": ["retail"] * 3 + ["hr", "retail"], "group": ["B_F", "W_M", "B_F", "B_F", "B_F"]})
    assert views.shown(table, view).index.tolist() == [0]
    assert len(views.shown(table, view, with_reference=True)) == 2
    assert view.settings()["pool"] == "per-group" and "version" not in view.settings()


def test_label_mass_flags_models_below_the_threshold():
    scores = pd.DataFrame({"task": ["essay"] * 3 + ["resume"], "mode": "pointwise", "model": ["a", "a", "b", "b"],
                           "label_mass": [0.001, 0.003, 0.4, 0.001]})
    flags = views.label_mass(scores, "essay").set_index("model")
    assert flags.loc["a", "mean label mass"] == 0.002 and flags.loc["a", "low"] and not flags.loc["b", "low"]


def test_empty_store_summary(tmp_path):
    with Store(tmp_path / "empty.db") as store:
        tables = views.StoreTables.read(store)
        assert tables.summary.empty and "last scored" in tables.summary.columns
        assert tables.models.empty and tables.designs == {} and tables.tasks() == []
