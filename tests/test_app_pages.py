"""Streamlit AppTest: every page renders on the shipped demo store; the quota slider moves the gaps."""
from __future__ import annotations

import os
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from audit.paths import DEMO_STORE
from audit.store.database import Store
from audit.store.tables import answer_table, pair_table

os.environ["HF_HUB_OFFLINE"] = "1"
APP = str(DEMO_STORE.parent.parent / "app.py")
PAGES = ["pages/overview.py", "pages/run_audit.py", "pages/allocation_gaps.py", "pages/group_correlations.py",
         "pages/model_rankings.py", "pages/cairo_explorer.py", "pages/compare.py", "pages/runs.py",
         "pages/monitor.py"]


def app(monkeypatch, store, task: str = "resume") -> AppTest:
    """The dashboard on ``store``, on ``task`` where the store holds it (else on the task the store opens on)."""
    monkeypatch.setenv("AUDIT_DB", str(store))
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["task"] = task
    at.run()
    assert not at.exception, at.exception
    return at


def gap_table(at: AppTest):
    return next(frame.value for frame in at.dataframe if "dp_gap" in frame.value.columns)


@pytest.fixture
def demo(monkeypatch) -> AppTest:
    assert DEMO_STORE.is_file(), "data/demo.db is missing: run scripts/build_demo_store.sh"
    return app(monkeypatch, DEMO_STORE)


def test_the_demo_store_opens_on_the_recorded_study(monkeypatch):
    """Issue 21: ``make app`` opens on a deployed system's audit (GPT-3.5/GPT-4's recorded rankings); the synthetic
    dated log, then the models' resume pilot, are the next tasks."""
    monkeypatch.setenv("AUDIT_DB", str(DEMO_STORE))
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/allocation_gaps.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.sidebar.selectbox(key="task").value == "study-gpt-hiring"
    assert at.sidebar.selectbox(key="task").options == ["study-gpt-hiring", "synthetic-dated-log", "resume"]
    assert set(at.sidebar.multiselect(key="models_study-gpt-hiring_pointwise").value) == {"gpt-3.5-turbo", "gpt-4"}


def test_every_page_renders_on_the_demo_store(demo):
    for page in PAGES:
        demo.switch_page(page).run()
        assert not demo.exception, (page, demo.exception)
        assert not demo.error, (page, [e.value for e in demo.error])
        expected = ["Only 3 models compared"] if page == "pages/cairo_explorer.py" else []  # 3 demo models
        assert [w.value[:22] for w in demo.warning] == expected, (page, [w.value for w in demo.warning])
        assert demo.title, page


def test_demo_store_has_two_models_all_jobs_and_pairwise(demo):
    summary = next(frame.value for frame in demo.dataframe if "candidates / pools" in frame.value.columns)
    assert summary["system"].nunique() >= 2
    assert summary.loc[summary["mode"] == "pointwise", "subtask"].nunique() == 4
    assert summary["mode"].str.startswith("pairwise").any()


def test_overview_opens_with_the_verdict_and_reads_without_codes_or_json(demo):
    demo.switch_page("pages/overview.py").run()
    assert not demo.exception and not demo.error
    assert demo.header[0].value.startswith("Verdict")
    systems = demo.dataframe[0].value
    assert list(systems.columns[:3]) == ["system", "subtask", "verdict"]
    assert set(systems["verdict"]) <= {"adverse impact", "inconclusive",
                                       "no evidence of adverse impact at this sample size"}
    assert any(m.value.startswith("**Overall at k = ") for m in demo.markdown)
    assert any("Holm" in c.value and "family" in c.value for c in demo.caption)
    assert any("**Compare**" in m.value for m in demo.markdown)
    models = next(frame.value for frame in demo.dataframe if "details" in frame.value.columns)
    assert not models["details"].str.contains("{", regex=False).any()
    assert any("**Reference group:** White men" in m.value for m in demo.markdown)


def test_overview_shows_the_pairwise_answer_shares_the_store_holds(demo):
    """Issue 41: the Overview's diagnostics are the audit's (Audit.diagnostics): in a pairwise mode, each model's
    irregular, tied and flipped shares, as counted from the store's answers and pairs."""
    demo.switch_page("pages/overview.py").run()
    assert not [s for s in demo.subheader if s.value == "Pairwise answers"]  # pointwise: label mass only
    demo.sidebar.selectbox(key="mode_resume").set_value("pairwise").run()
    assert not demo.exception and not demo.error, (demo.exception, [e.value for e in demo.error])
    assert [s for s in demo.subheader if s.value == "Pairwise answers"]
    shown = next(frame.value for frame in demo.dataframe if "flipped" in frame.value.columns)
    with Store(DEMO_STORE, create=False) as store:
        answers, pairs = answer_table(store), pair_table(store)
    answers, pairs = answers[answers["mode"] == "pairwise"], pairs[pairs["mode"] == "pairwise"]
    assert list(shown["system"]) == sorted(set(answers["model"]))
    for system, irregular, tied, flipped in shown.itertuples(index=False):
        choices = answers.loc[answers["model"] == system, "choice"].tolist()
        assert float(irregular) == pytest.approx(sum(c not in ("first", "second") for c in choices) / len(choices),
                                                 abs=5e-4)
        assert float(tied) == pytest.approx(choices.count("tie") / len(choices), abs=5e-4)
        assert float(flipped) == pytest.approx(pairs.loc[pairs["model"] == system, "flipped"].mean(), abs=5e-4)


def test_k_slider_changes_the_gaps_shown(demo):
    demo.switch_page("pages/allocation_gaps.py").run()
    before = gap_table(demo)
    assert set(before["k"]) == {2}
    demo.slider(key="k_gaps").set_value(4).run()
    after = gap_table(demo)
    assert not demo.exception
    assert set(after["k"]) == {4}
    assert len(after) == len(before)
    assert not before["dp_gap"].reset_index(drop=True).equals(after["dp_gap"].reset_index(drop=True))
    assert before["delta"].reset_index(drop=True).equals(after["delta"].reset_index(drop=True))


@pytest.mark.parametrize("grouping", ["race", "gender"])
def test_marginal_groupings(demo, grouping):
    demo.switch_page("pages/allocation_gaps.py").run()
    demo.sidebar.radio(key="grouping_resume").set_value(grouping).run()
    assert not demo.exception
    table = gap_table(demo)
    expected = {"race": {"A", "B", "H"}, "gender": {"F"}}[grouping]
    assert set(table["group"]) == expected


def test_quota_stops_below_the_pool_size(demo):
    demo.switch_page("pages/allocation_gaps.py").run()
    assert demo.slider(key="k_gaps").max == 7  # race × gender: pools of 8
    demo.sidebar.radio(key="grouping_resume").set_value("gender").run()  # pools of 2: only k = 1 means something
    assert not demo.exception and not demo.error
    assert not [s for s in demo.slider if s.key == "k_gaps"]
    assert any("only meaningful quota with pools of 2" in c.value for c in demo.caption)
    table = gap_table(demo)
    assert set(table["k"]) == {1} and table["dp_gap"].abs().max() > 1e-9


def test_pairwise_mode_and_filters(demo):
    demo.switch_page("pages/allocation_gaps.py").run()
    mode = next(m for m in demo.sidebar.selectbox(key="mode_resume").options if m.startswith("pairwise"))
    demo.sidebar.selectbox(key="mode_resume").set_value(mode).run()
    assert not demo.exception
    table = gap_table(demo)
    assert set(table["mode"]) == {mode} and table["delta"].notna().all()
    demo.sidebar.multiselect(key="groups_resume_race × gender_W_M").set_value(["B_F"]).run()
    assert set(gap_table(demo)["group"]) == {"B_F"}


def test_pages_explain_a_missing_store(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path / "absent.db")
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
    assert not (tmp_path / "absent.db").exists()


def test_compare_page_defaults_to_the_two_precisions(demo):
    demo.switch_page("pages/compare.py").run()
    assert not demo.exception, demo.exception
    assert [demo.selectbox(key=k).value for k in ("compare_a", "compare_b")] == ["smollm2-135m", "smollm2-135m@4bit"]
    flips = next(frame.value for frame in demo.dataframe if "selected_b" in frame.value.columns)
    assert flips["flipped"].all() and len(flips) > 0
    demo.selectbox(key="compare_b").set_value("smollm2-135m").run()
    assert not demo.exception, demo.exception
    flips = next(frame.value for frame in demo.dataframe if "selected_b" in frame.value.columns)
    assert flips.empty


def test_allocation_page_shows_impact_ratios(demo):
    demo.switch_page("pages/allocation_gaps.py").run()
    assert not any("impact_ratio" in frame.value.columns for frame in demo.dataframe)  # on demand only
    demo.toggle(key="impact_on").set_value(True).run()
    impact = next(frame.value for frame in demo.dataframe if "impact_ratio" in frame.value.columns)
    assert set(impact["grouping"]) == {"race", "race × gender"}  # gender pools hold 2: not defined at k = 2
    assert any(c.value.startswith("gender: not defined at k = pool size") for c in demo.caption)
    assert (impact["four_fifths"] == (impact["impact_ratio"] < 0.8)).all()


def test_the_allocation_page_calls_recorded_rankings_by_their_name(monkeypatch):
    """Issue 40: no text or table of the study's Allocation page calls its recorded rankings pointwise."""
    at = app(monkeypatch, DEMO_STORE, task="study-gpt-hiring")
    at.switch_page("pages/allocation_gaps.py").run()
    label = at.toggle(key="impact_on").label
    assert label == "impact ratios of the recorded rankings with their intervals, as exported"
    at.toggle(key="impact_on").set_value(True).run()
    assert not at.exception and not at.error
    impact = next(frame.value for frame in at.dataframe if "impact_ratio" in frame.value.columns)
    assert set(impact["mode"]) == {"recorded ranking"}
    texts = [e.value for e in [*at.markdown, *at.caption, *at.header, *at.subheader, *at.info]]
    cells = [str(v) for frame in at.dataframe for v in frame.value.astype(str).to_numpy().ravel()]
    assert not [t for t in texts + cells if "pointwise" in t]
    assert any("◆ marks a gap only where the test of no gap (exact test stratified by pool)" in t for t in texts)


def test_paper_settings_switch_the_jsd_estimator_and_leave_out_inconsistent_models(demo):
    demo.switch_page("pages/allocation_gaps.py").run()
    before = gap_table(demo)
    demo.sidebar.radio(key="preset").set_value("paper-exact").run()
    after = gap_table(demo)
    assert not demo.exception
    assert not after["jsd"].equals(before["jsd"]) and after["rabbi"].equals(before["rabbi"])
    demo.sidebar.selectbox(key="mode_resume").set_value("pairwise-likelihood").run()
    table = gap_table(demo)
    b_m = table[(table["group"] == "B_M") & (table["subtask"] == "software_engineer")]["delta"]
    assert b_m.tolist() == pytest.approx([-10 / 12])  # signed pairwise δ: W_M wins 11 of the 12 B_M–W_M prompts
    demo.sidebar.radio(key="max_inconsistent").set_value("50 % (paper Fig. 4)").run()
    assert not demo.exception
    assert gap_table(demo).equals(table)  # the demo's SmolLM2 run stays under 50 % inconsistent pairs


def test_models_above_the_inconsistency_threshold_are_listed():
    from audit.errors import AuditError
    from audit.store.files import store_version
    from pages.shared import common

    from audit.engine.selection import Selection

    path = str(DEMO_STORE)
    base = Selection("resume", "pairwise-likelihood", grouping="race × gender", reference="W_M", ci=0.9, n_boot=50)
    found = common.audit_of(path, store_version(path), replace(base, max_inconsistent=0.55)).rows
    assert len(found.table) and not found.skipped
    with pytest.raises(AuditError, match=r"smollm2-135m · resume: excluded, 16% of 168 pairs inconsistent \(> 10%\)"):
        common.audit_of(path, store_version(path), replace(base, max_inconsistent=0.10)).rows


def test_compare_page_compares_recorded_systems_unpaired(demo):
    """Issue 21: GPT-3.5 against GPT-4 of the shipped study (recorded pools, different candidates): gap differences
    with unpaired intervals, no flip or rank-correlation tables, k below the pool size of 8."""
    demo.switch_page("pages/compare.py").run()
    demo.sidebar.selectbox(key="task").set_value("study-gpt-hiring").run()
    assert not demo.exception and not demo.error, (demo.exception, [e.value for e in demo.error])
    assert [demo.selectbox(key=k).value for k in ("compare_a", "compare_b")] == ["gpt-3.5-turbo", "gpt-4"]
    assert any("unpaired" in c.value for c in demo.caption)
    assert demo.slider(key="compare_k").max == 7
    assert not any("selected_b" in frame.value.columns for frame in demo.dataframe)


def test_each_task_opens_at_its_own_quota_and_the_address_keeps_task_and_k(monkeypatch):
    """Issue 40: the Allocation page's k follows the task (the study's k = 1, the pilot's k = 2, a k chosen on a task
    comes back with it), and the task and k go into the page address, so a reload opens where the auditor was."""
    monkeypatch.setenv("AUDIT_DB", str(DEMO_STORE))
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/allocation_gaps.py").run()

    def shown() -> tuple[str, int, str, str]:
        assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
        return (at.sidebar.selectbox(key="task").value, at.slider(key="k_gaps").value, at.query_params["task"],
                at.query_params["k"])

    assert shown() == ("study-gpt-hiring", 1, "study-gpt-hiring", "1")
    at.sidebar.selectbox(key="task").set_value("resume").run()
    assert shown() == ("resume", 2, "resume", "2")  # the pilot's own quota, not the study's k = 1
    assert at.header[0].value == "Verdict and impact ratios at k = 2"
    at.slider(key="k_gaps").set_value(4).run()
    at.sidebar.selectbox(key="task").set_value("study-gpt-hiring").run()
    assert shown() == ("study-gpt-hiring", 1, "study-gpt-hiring", "1")
    at.sidebar.selectbox(key="task").set_value("resume").run()
    assert shown() == ("resume", 4, "resume", "4")

    at = AppTest.from_file(APP, default_timeout=300)  # a reload: a new session on the address above
    at.query_params.update(task="resume", k="4")
    at.switch_page("pages/allocation_gaps.py").run()
    assert shown() == ("resume", 4, "resume", "4")
    assert at.header[0].value == "Verdict and impact ratios at k = 4"


def test_overview_judges_the_study_at_its_own_quota_and_shows_every_k(monkeypatch):
    """Issue 29: the Overview's verdict has its own k, starting at the design's (the study's published top-1, said
    with its reason), one row per system across every valid k, and the recorded systems named as what they are."""
    at = app(monkeypatch, DEMO_STORE, task="study-gpt-hiring")
    at.switch_page("pages/overview.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.slider(key="overview_k_study-gpt-hiring").value == 1
    assert any("Judged at k = 1, the quota of the study's published result" in m.value for m in at.markdown)
    strip = next(frame.value for frame in at.dataframe if "adverse impact at" in frame.value.columns)
    assert list(strip["system"]) == ["gpt-3.5-turbo", "gpt-4"]
    assert [c for c in strip.columns if c.startswith("k = ")] == [f"k = {k}" for k in range(1, 8)]
    # family system (the default): GPT-4's two k = 1 findings do not survive the design-respecting test (issue 29)
    assert list(strip["k = 1"]) == ["adverse (8)", "inconclusive"] and strip["k = 7"].eq("no evidence").all()
    assert at.sidebar.selectbox(key="mode_study-gpt-hiring").value == "pointwise"
    assert "recorded ranking" in at.sidebar.selectbox(key="mode_study-gpt-hiring").options
    assert any("**mode:** recorded ranking" in m.value for m in at.markdown)
    assert not [s for s in at.subheader if s.value == "Label mass"]  # no model answered: nothing of the sort
    at.slider(key="overview_k_study-gpt-hiring").set_value(7).run()
    assert any("Judged at k = 7, chosen by the auditor" in m.value for m in at.markdown)


def test_overview_lets_the_auditor_choose_the_family_and_names_it(monkeypatch):
    """Issue 29: the verdict's multiple-testing family is chosen on the Overview and named next to the verdict;
    the whole audit as one family keeps fewer adverse cells than one family per grouping."""
    at = app(monkeypatch, DEMO_STORE, task="study-gpt-hiring")
    at.switch_page("pages/overview.py").run()
    assert at.selectbox(key="overview_family").value == "system"
    assert any("(family: system)" in c.value for c in at.caption)

    def adverse() -> int:
        strip = next(frame.value for frame in at.dataframe if "adverse impact at" in frame.value.columns)
        return int(strip["k = 1"].str.extract(r"adverse \((\d+)").fillna(0).astype(int).sum().iloc[0])

    counts = {}
    for family in ("grouping", "audit"):
        at.selectbox(key="overview_family").set_value(family).run()
        assert not at.exception, at.exception
        assert any(f"(family: {family})" in c.value for c in at.caption)
        counts[family] = adverse()
    assert counts["audit"] < counts["grouping"]
    assert at.session_state["view"].selection.family == "audit"  # the sidebar's one selection holds the choice
    at.switch_page("pages/allocation_gaps.py").run()  # the choice holds on the Allocation page's verdict
    assert not at.exception and any("(family: audit)" in c.value for c in at.caption)
    at.switch_page("pages/cairo_explorer.py").run()  # CAIRO says plainly it does not follow the sidebar's task
    assert any("study-gpt-hiring) is not used here" in i.value and "own prompt sets" in i.value for i in at.info)
