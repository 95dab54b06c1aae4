"""Table shaping behind the pages: groupings, filters and the store summary."""
from __future__ import annotations

import pandas as pd

from audit.store import Store
from pages.shared import views


def test_group_codes_marginalise_to_race_or_gender():
    assert [views.regroup_code("B_F", g) for g in views.GROUPINGS] == ["B_F", "B", "F"]
    assert views.regroup_code("essay_low", "race × gender") == "essay_low"
    assert views.groupable(["W_F", "B_M"]) == list(views.GROUPINGS)
    assert views.groupable(["low", "high"]) == ["race × gender"]


def test_regroup_maps_every_group_column_and_keeps_the_input():
    pairs = pd.DataFrame({"group_a": ["W_F", "B_M"], "group_b": ["A_M", "W_M"]})
    out = views.regroup(pairs, "gender", ("group_a", "group_b"))
    assert out.to_dict("list") == {"group_a": ["F", "M"], "group_b": ["M", "M"]}
    assert pairs["group_a"].tolist() == ["W_F", "B_M"]
    assert views.regroup(pairs, "race × gender") is pairs


def test_shown_filters_models_subtasks_and_groups():
    view = views.View(store="s.db", version=(), mode="pointwise", grouping="race × gender", reference="W_M",
                      models=("m1",), subtasks=("retail",), groups=("B_F",), ci=0.95, n_boot=100)
    table = pd.DataFrame({"model": ["m1", "m1", "m2", "m1"], "subtask": ["retail"] * 3 + ["hr"],
                          "group": ["B_F", "W_M", "B_F", "B_F"]})
    assert views.shown(table, view).index.tolist() == [0]
    assert len(views.shown(table, view, with_reference=True)) == 2
    assert view.settings()["pool"] == "per-group" and "version" not in view.settings()


def test_empty_store_summary(tmp_path):
    with Store(tmp_path / "empty.db") as store:
        summary = views.store_summary(store)
        assert summary.empty and "last scored" in summary.columns
        assert views.model_table(store.models()).empty
