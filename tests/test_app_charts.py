"""Figure builders of the dashboard, on metric tables computed from the shipped demo store."""
from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from audit.present import charts
from audit.metrics import MetricSuite, model_rankings, ndcg_table, validity
from audit.paths import DEMO_STORE
from audit.store.tables import score_table
from audit.store.database import Store
from audit.engine.tables import StoreTables


#: the demo's tasks whose groups are race × gender codes (its synthetic dated log is coded by sex alone)
RACE_GENDER = ("resume", "study-gpt-hiring")


def pointwise(scores: pd.DataFrame) -> pd.DataFrame:
    return scores[(scores["mode"] == "pointwise") & scores["task"].isin(RACE_GENDER)]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    with Store(DEMO_STORE, create=False) as store:
        scores = pointwise(score_table(store))
    return MetricSuite(scores, reference="W_M", ci=0.9, n_boot=50).table(range(1, 9))


def test_every_group_keeps_one_distinct_colour():
    codes = ["W_F", "W_M", "B_F", "B_M", "A_F", "A_M", "H_F", "H_M"]
    colours = charts.group_colours(codes)
    assert len(set(colours.values())) == len(codes)
    assert charts.group_colours(["B_M"]) == {"B_M": colours["B_M"]}
    assert len(set(charts.group_colours(["W", "B", "A", "H"]).values())) == 4
    assert set(charts.group_colours(["x", "y"]).values()) <= set(charts.OKABE_ITO)


def test_gap_scatter_has_every_panel_group_and_correlation(table):
    at_k = table[table["k"] == 2]
    overall = validity(at_k).query("scope == 'overall'")
    fig = charts.gap_scatter(at_k, k=2, correlations=overall, reference="W_M")
    panels = [t for t in fig.data if t.showlegend is False]
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert len(panels) == 8 and all(len(t.x) == len(at_k) for t in panels)
    assert sorted(legend) == sorted(at_k["group"].unique())
    titles = [a.text for a in fig.layout.annotations]
    assert sum("r = " in t for t in titles) == 8
    dp_delta = overall.query("gap == 'dp' and metric == 'delta'")["r"].iloc[0]
    assert f"r = {dp_delta:+.2f}" in titles[0]


def test_gap_curves_draw_a_band_and_a_line_per_group(table):
    rows = table[(table["model"] == table["model"].iloc[0]) & (table["subtask"] == table["subtask"].iloc[0])]
    fig = charts.gap_curves(rows, gap="dp")
    groups = rows["group"].nunique()
    assert len(fig.data) == 2 * groups
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [len(t.x) for t in lines] == [8] * groups


def test_a_correlation_over_too_few_systems_gets_no_bar(table):
    """As the tables say "too few systems (n < 5)", the bars do not draw those r: the demo's pilot gives r over
    enough systems, so one group is given n = 3 here; its bars are empty and the panels say why."""
    by_group = validity(table[table["k"] == 2]).query("scope != 'overall'").reset_index(drop=True)
    few = by_group["scope"] == by_group["scope"].iloc[0]
    fig = charts.group_correlation_bars(by_group.assign(n=by_group["n"].where(~few, 3)), k=2)
    drawn = {trace.name: [y for y in trace.y if y == y] for trace in fig.data}  # NaN != NaN: no bar
    assert drawn[str(by_group["scope"].iloc[0])] == [] and all(drawn[g] for g in drawn if g != by_group["scope"][0])
    assert [a.text.count("too few systems (n < 5)") for a in fig.layout.annotations[:2]] == [1, 1]
    plain = charts.group_correlation_bars(by_group, k=2)
    assert not any("too few" in a.text for a in plain.layout.annotations)


def test_rankings_correlations_and_distributions_build(table):
    at_k = table[table["k"] == 2]
    by_group = validity(at_k).query("scope != 'overall'")
    assert len(charts.group_correlation_bars(by_group, k=2).data) == 2 * by_group["scope"].nunique()
    rankings = model_rankings(at_k)
    bump = charts.bump_chart(rankings, gap="dp")
    assert {t.name for t in bump.data} == set(at_k["model"])
    assert len(charts.ndcg_curves(ndcg_table(at_k)).data) == 8
    with Store(DEMO_STORE, create=False) as store:
        scores = score_table(store)
    assert len(charts.score_distributions(pointwise(scores)).data) > 0


def test_audit_never_imports_streamlit():
    code = "import sys, audit.present.charts, audit.present.exports; assert 'streamlit' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_names_from_data_are_escaped(table):
    at_k = table[table["k"] == 2].assign(model="<img src=x onerror=alert(1)>", group="<b>G</b>")
    text = charts.gap_scatter(at_k, k=2).to_json() + charts.gap_curves(at_k.assign(k=range(len(at_k))),
                                                                       title="<i>m</i>").to_json()
    assert "<img" not in text and "<b>G" not in text and "<i>m" not in text
    assert "&lt;img" in text and "&lt;b&gt;G" in text


def test_score_shape_scatter_has_one_trace_per_model():
    from audit.metrics import score_shape

    with Store(DEMO_STORE, create=False) as store:
        scores = score_table(store)
    shape = score_shape(pointwise(scores))
    fig = charts.score_shape_scatter(shape)
    assert sorted(t.name for t in fig.data) == sorted(shape["model"].unique())
    assert sum(len(t.x) for t in fig.data) == len(shape) == shape["model"].nunique() * 4 * 8  # models × jobs × groups
    assert fig.layout.xaxis.title.text == "skewness" and fig.layout.yaxis.title.text == "excess kurtosis"


def test_correlations_over_too_few_systems_or_constant_values_are_not_printed_as_numbers():
    import pandas as pd
    from audit.present import charts
    few = pd.DataFrame({"gap": ["dp"], "metric": ["delta"], "r": [1.0], "n": [3], "r_lo": [0.9], "r_hi": [1.0]})
    assert charts._r_text(few, "dp", "delta") == "r not shown: too few systems (n = 3 < 5)"
    constant = few.assign(r=float("nan"), n=16)
    assert charts._r_text(constant, "dp", "delta").startswith("r not defined: constant values")
    table = pd.DataFrame({"dp_gap_padj": [0.01, 0.2, None, 0.05]})
    assert charts.significant(table, "dp_gap").tolist() == [True, False, False, True]
    assert not charts.significant(table, "eo_gap").any()


def test_a_group_keeps_one_distinct_colour_across_tasks():
    """Issue 29: the study's codes (women written W: A_W) get eight distinct colours, each the colour the resume
    pilot gives the same group (Hispanic women no longer share Hispanic men's green), by code or by display name."""
    with Store(DEMO_STORE, create=False) as store:
        tables = StoreTables.read(store)
    study, pilot = tables.design("study-gpt-hiring"), tables.design("resume")
    study_codes = ["A_M", "A_W", "B_M", "B_W", "H_M", "H_W", "W_M", "W_W"]
    pilot_codes = ["A_M", "A_F", "B_M", "B_F", "H_M", "H_F", "W_M", "W_F"]
    by_study = charts.group_colours(study_codes, {c: study.display_name(c) for c in study_codes})
    by_pilot = charts.group_colours(pilot_codes, {c: pilot.display_name(c) for c in pilot_codes})
    assert len(set(by_study.values())) == 8 and by_study["H_W"] != by_study["H_M"]
    assert [by_study[s] for s in study_codes] == [by_pilot[p] for p in pilot_codes]
    names = [study.display_name(c) for c in study_codes]  # charts drawn on display names (the report's)
    assert charts.group_colours(names) == {study.display_name(c): by_study[c] for c in study_codes}
