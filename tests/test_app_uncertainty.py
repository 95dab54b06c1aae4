"""Streamlit AppTest on the demo store: the Allocation page shows CIs, adjusted p-values and marks; the planner answers."""
from __future__ import annotations

import json
import os
import re

import pytest
from streamlit.testing.v1 import AppTest

from audit.paths import DEMO_STORE

os.environ["HF_HUB_OFFLINE"] = "1"
APP = str(DEMO_STORE.parent.parent / "app.py")


@pytest.fixture
def gaps(monkeypatch) -> AppTest:
    monkeypatch.setenv("AUDIT_DB", str(DEMO_STORE))
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["task"] = "resume"  # the store opens on the recorded study
    at.switch_page("pages/allocation_gaps.py").run()
    assert not at.exception, at.exception
    return at


def gap_table(at: AppTest):
    return next(frame.value for frame in at.dataframe if "dp_gap" in frame.value.columns)


def scatter(at: AppTest) -> dict:
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    return next(s for s in specs if "allocation gaps at k" in s["layout"]["title"]["text"])


def test_allocation_page_shows_cis_adjusted_p_and_marks(gaps):
    table = gap_table(gaps)
    for column in ("dp_gap_lo", "dp_gap_hi", "dp_gap_p", "dp_gap_padj", "eo_gap_padj", "dp_gap_ci_excludes_0"):
        assert column in table.columns, column
    assert ((table["dp_gap_lo"] <= table["dp_gap"]) & (table["dp_gap"] <= table["dp_gap_hi"])).all()
    assert (table["dp_gap_padj"] >= table["dp_gap_p"]).all() and table["dp_gap_p"].between(0, 1).all()
    excludes = (table["dp_gap_lo"] > 0) | (table["dp_gap_hi"] < 0)
    assert (table["dp_gap_ci_excludes_0"] == excludes).all()
    assert any("Holm" in c.value and "permutation" in c.value and "adjusted p ≤ α" in c.value for c in gaps.caption)
    figure = scatter(gaps)
    first = figure["data"][0]
    # ◆ marks only what the adjusted test rejects at α = 0.05, on the ΔDP row and on the ΔEO row alike
    assert [s == "diamond" for s in first["marker"]["symbol"]] == (table["dp_gap_padj"] <= 0.05).tolist()
    eo_marks = [s == "diamond" for t in figure["data"] if t.get("marker", {}).get("symbol") is not None
                and isinstance(t["marker"]["symbol"], list) for s in t["marker"]["symbol"]]
    assert sum(eo_marks) == 4 * int((table["dp_gap_padj"] <= 0.05).sum() + (table["eo_gap_padj"] <= 0.05).sum())
    # the unadjusted intervals alone would have marked points the adjusted test does not reject
    assert (excludes & (table["dp_gap_padj"] > 0.05)).any()
    assert "adjusted p" in first["hovertemplate"] and "CI [" in first["hovertemplate"]
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    subtitle = rf"r = [+-]\d\.\d\d \[[+-]\d\.\d\d, [+-]\d\.\d\d\] \(n = {len(table)}\)"
    assert any(re.search(subtitle, t) for t in titles), titles


def test_benjamini_hochberg_is_never_stricter_than_holm(gaps):
    holm = gap_table(gaps)["dp_gap_padj"].to_numpy()
    gaps.radio(key="p_adjust").set_value("bh").run()
    assert not gaps.exception
    bh = gap_table(gaps)["dp_gap_padj"].to_numpy()
    assert (bh <= holm + 1e-12).all() and (bh < holm).any()
    assert any("Benjamini" in c.value for c in gaps.caption)


def test_planner_answers_for_the_demo_store(gaps):
    assert not any("candidates per group" in m.value for m in gaps.markdown)  # on demand only
    gaps.toggle(key="plan_on").set_value(True).run()
    answer = next(m.value for m in gaps.markdown if "candidates per group" in m.value)
    needed = int(re.search(r"about \*\*(\d+) candidates per group", answer).group(1))
    assert needed > 12  # the demo's 12 per group are far from ± 0.05
    gaps.number_input(key="plan_target").set_value(0.2).run()
    assert not gaps.exception
    looser = next(m.value for m in gaps.markdown if "candidates per group" in m.value)
    assert int(re.search(r"about \*\*(\d+) candidates", looser).group(1)) < needed


def test_group_correlations_carry_bootstrap_bands(gaps):
    gaps.switch_page("pages/group_correlations.py").run()
    assert not gaps.exception and not gaps.warning
    table = next(frame.value for frame in gaps.dataframe if "r [interval]" in frame.value.columns)
    banded = table["r [interval]"].str.fullmatch(r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]")
    assert banded.sum() > len(table) / 2
    assert (table["p"].isin([""]).sum() + table["p"].str.fullmatch(r"[01]\.\d{3}|\d\.\de-\d\d").sum()
            == len(table))
    assert ((table["note"] != "") == (table["r [interval]"] == "")).all()
    assert "Asian women" in set(table["scope"])
    bounds = table.loc[banded, "r [interval]"].str.extract(r"\[(-?[\d.]+), (-?[\d.]+)\]").astype(float)
    assert ((bounds[0] <= bounds[1]) & bounds[0].between(-1, 1)).all()
    bars = json.loads(gaps.get("plotly_chart")[0].proto.spec)["data"]
    assert all(bar["error_y"]["arrayminus"] for bar in bars)


def test_model_rankings_show_ndcg_bands(gaps):
    gaps.switch_page("pages/model_rankings.py").run()
    assert not gaps.exception and not gaps.warning
    specs = [json.loads(chart.proto.spec) for chart in gaps.get("plotly_chart")]
    curves = next(s for s in specs if "true-gap ranking" in s["layout"]["title"]["text"])
    bands = [trace for trace in curves["data"] if trace.get("fill") == "toself"]
    assert len(bands) == 8  # one per metric and gap
    heights = [y for band in bands for y in band["y"] if y is not None]
    assert heights and all(-1e-9 <= y <= 1 + 1e-9 for y in heights)
