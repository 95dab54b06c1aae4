"""Streamlit AppTest on the demo store: the Allocation page opens with the verdict of ``python -m audit verdict`` and
the impact tables per grouping (not defined where k reaches a grouping's pool size), states the replicates it drew,
and every page reads group names, not codes."""
from __future__ import annotations

import io
import json
import os
import re
from contextlib import redirect_stderr, redirect_stdout

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from audit.cli import main
from audit.formatting import ratio
from audit.engine.verdict import NO_EVIDENCE
from audit.paths import DEMO_STORE

os.environ["HF_HUB_OFFLINE"] = "1"
APP = str(DEMO_STORE.parent.parent / "app.py")
N_BOOT = 100
NAMES = {"A_F": "Asian women", "A_M": "Asian men", "B_F": "Black women", "B_M": "Black men", "H_F": "Hispanic women",
         "H_M": "Hispanic men", "W_F": "White women", "W_M": "White men"}


@pytest.fixture
def demo(monkeypatch) -> AppTest:
    monkeypatch.setenv("AUDIT_DB", str(DEMO_STORE))
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["n_boot"] = N_BOOT  # the sidebar's smallest choice keeps the test quick
    at.session_state["task"] = "resume"  # the store opens on the recorded study
    at.run()
    assert not at.exception, at.exception
    return at


def impact_tables(at: AppTest) -> dict[str, pd.DataFrame]:
    """The verdict's impact table of each grouping, told apart by the group names it holds."""
    grouping = {"White men": "race × gender", "White": "race", "men": "gender"}
    return {grouping[next(g for g in grouping if g in set(frame.value["group"]))]: frame.value
            for frame in at.dataframe if "impact ratio [interval]" in frame.value and "grouping" not in frame.value}


def verdict_cli(k: int) -> pd.DataFrame:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["verdict", "--db", str(DEMO_STORE), "--task", "resume", "--k", str(k), "--bootstrap",
                     str(N_BOOT)]) == 0, err.getvalue()
    return pd.DataFrame(json.loads(out.getvalue())["categories"])


def test_allocation_page_opens_with_the_verdict_of_the_command_line(demo):
    demo.switch_page("pages/allocation_gaps.py").run()
    assert not demo.exception and not demo.error
    assert demo.header[0].value == "Verdict and impact ratios at k = 2"
    assert demo.markdown[0].value.startswith("**Overall at k = 2:** ")
    cli = verdict_cli(2)
    tables = impact_tables(demo)
    assert set(tables) == {"race × gender", "race"}  # gender pools hold 2
    for grouping in ("race × gender", "race"):
        shown, expected = tables[grouping], cli[cli["grouping"] == grouping]
        assert shown["group"].tolist() == expected["name"].tolist()
        assert list(shown.columns) == ["system", "subtask", "group", "verdict", "impact ratio [interval]", "plan"]
        assert shown["verdict"].tolist() == expected["verdict"].replace({NO_EVIDENCE: "no evidence"}).tolist()
        more = [int(m.group(1).replace(",", "")) if (m := re.search(r"about ([\d,]+) more", v)) else None
                for v in shown["plan"]]
        assert more == [None if pd.isna(m) else int(m) for m in expected["more_per_group"]]
        assert shown["impact ratio [interval]"].tolist() == [  # three decimals, more where 0.8 needs them
            ratio(r, lo, hi) for r, lo, hi in expected[["impact_ratio", "impact_ratio_lo",
                                                        "impact_ratio_hi"]].itertuples(index=False)]
    assert any(c.value.startswith("gender: not defined at k = pool size") for c in demo.caption)
    assert any(f"({N_BOOT:,} replicates" in c.value for c in demo.caption)


def test_the_largest_k_shows_nothing_constant_by_construction(demo):
    demo.switch_page("pages/allocation_gaps.py").run()
    demo.slider(key="k_gaps").set_value(7).run()  # race × gender pools hold 8; race 4, gender 2
    assert not demo.exception and not demo.error
    assert set(impact_tables(demo)) == {"race × gender"}
    notes = [c.value for c in demo.caption if "not defined at k = pool size" in c.value]
    assert [n.split(":")[0] for n in notes] == ["race", "gender"]
    demo.toggle(key="impact_on").set_value(True).run()
    impact = next(frame.value for frame in demo.dataframe if "impact_ratio" in frame.value.columns)
    assert set(impact["grouping"]) == {"race × gender"} and (impact["impact_ratio"] < 1).any()
    assert sum("not defined at k = pool size" in c.value for c in demo.caption) == 4  # verdict and exported tables
    demo.sidebar.radio(key="grouping_resume").set_value("gender").run()  # k = 1 is the largest below pools of 2
    assert set(impact_tables(demo)) == {"race × gender", "race", "gender"}
    assert demo.header[0].value == "Verdict and impact ratios at k = 1"


def test_group_names_replace_codes_on_the_pages(demo):
    reference = demo.sidebar.selectbox(key="ref_resume_race × gender")
    assert reference.options == list(NAMES.values()) and reference.value == "W_M"
    assert demo.sidebar.multiselect(key="groups_resume_race × gender_W_M").options == list(NAMES.values())[:-1]
    overview = [frame.value for frame in demo.dataframe]
    assert all("_" not in column for frame in overview for column in frame.columns)
    assert not any(frame[c].astype(str).str.startswith("{").any() for frame in overview for c in frame.columns)
    assert [m.label for m in demo.metric] == ["systems", "subtasks", "candidates", "scores stored"]
    legend = json.loads(demo.get("plotly_chart")[0].proto.spec)["data"]
    assert {trace["name"] for trace in legend} == set(NAMES.values())

    demo.switch_page("pages/allocation_gaps.py").run()
    table = next(frame.value for frame in demo.dataframe if "ΔDP adjusted p" in frame.value)
    assert set(table["group"]) == set(NAMES.values()) - {"White men"}
    assert table["ΔDP adjusted p"].str.fullmatch(r"< 0\.001|[01]\.\d{3}").all()
    scatter = json.loads(next(c for c in demo.get("plotly_chart")).proto.spec)
    assert {t["name"] for t in scatter["data"] if t.get("name")} == set(NAMES.values()) - {"White men"}
    assert "reference White men" in scatter["layout"]["title"]["text"]

    demo.switch_page("pages/group_correlations.py").run()
    bars = json.loads(demo.get("plotly_chart")[0].proto.spec)["data"]
    assert {bar["name"] for bar in bars} == set(NAMES.values()) - {"White men"}

    demo.switch_page("pages/compare.py").run()
    dots = json.loads(demo.get("plotly_chart")[0].proto.spec)["data"]
    assert set(x for trace in dots for x in trace["x"]) <= set(NAMES.values())
    assert demo.slider(key="compare_k").max == 7  # below the pool of 8
