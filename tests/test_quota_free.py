"""Systems judged on the decisions their logs record (0/1 and score logs) have no quota: ``verdict``, ``check``, the
report and the pages say "on the recorded decisions" and never "at k = 1" or "the k best of each pool", the Overview
has no quota slider and no every-k row, the Allocation page no gap-against-k curve; a rank log keeps its quota."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from audit.engine.audit import Audit
from audit.engine.selection import Selection
from audit.engine.tables import StoreTables
from audit.paths import DEMO_STORE
from audit.reporting.content import ReportSettings, collect
from audit.reporting.page_one import headline, sign_off
from audit.reporting.render import audited, findings_section, method, render_html, verdict
from helpers import audit, audit_json

APP = str(DEMO_STORE.parent.parent / "app.py")
#: the demo store's 0/1 decision log (scripts/add_demo_dated_log.py)
LOG = "synthetic-dated-log"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """One task, three systems over the same 30 pools of 4 (2 F + 2 M), imported in this order: a rank log (women
    first), a 0/1 log and a score log that select the same 2 of each pool (a woman and a man in one pool of three,
    else both men)."""
    folder = tmp_path_factory.mktemp("quota_free")
    rows = []
    for pool in range(30):
        for place, sex in enumerate(("F", "F", "M", "M")):
            chosen = sex == "M" if pool % 3 else place in (0, 2)
            rows.append(dict(id=f"p{pool}-{place}", sex=sex, req=f"r{pool}", job="eng", rank=place + 1,
                             selected=int(chosen), points=float(chosen) + place / 10))
    frame = pd.DataFrame(rows)
    spec = "applicant: id\ndemographics: [sex]\npool: req\nsubtask: job\n"
    for label, drop, outcome in (("ranked", ["selected", "points"], ""), ("picked", ["rank", "points"], ""),
                                 ("scored", ["rank", "selected"], "outcome: {score: points}\n")):
        frame.drop(columns=drop).to_csv(folder / f"{label}.csv", index=False)
        (folder / f"{label}.yaml").write_text(spec + outcome)
        done = audit("import", "--format", "decisions", "--data", folder / f"{label}.csv", "--spec",
                     folder / f"{label}.yaml", "--task", "hiring", "--label", label, "--db", folder / "s.db")
        assert done.returncode == 0, done.stderr
    return folder / "s.db"


@pytest.mark.parametrize("models, free", [(["picked"], True), (["scored"], True), (["picked", "scored"], True),
                                          (["ranked"], False), (["ranked", "picked"], False)])
def test_the_audit_is_quota_free_exactly_when_every_system_records_its_decisions(store, models, free):
    tables = StoreTables.open(store)
    assert Audit(tables, Selection("hiring", "pointwise", models=tuple(models))).quota_free is free


def test_verdict_and_check_say_where_they_judged(store, tmp_path):
    free = audit_json("verdict", "--db", str(store), "--models", "picked", "--format", "json")
    ranked = audit_json("verdict", "--db", str(store), "--models", "ranked", "--format", "json")
    assert (free["quota_free"], ranked["quota_free"]) == (True, False)
    text = audit("verdict", "--db", store, "--models", "picked", "scored", "--format", "md").stdout
    assert text.startswith("# Verdict on the recorded decisions\n") and "k = " not in text.split("## Per")[0]
    for models, why in ((["picked"], "the selection the log records (no quota)."),
                        (["scored"], "scoring above the sample's median score (no quota)."),
                        (["picked", "scored"], "each score log's scores above its sample's median (no quota).")):
        said = audit("verdict", "--db", store, "--models", *models, "--format", "md").stdout.split("\n")[2]
        assert said.startswith("Quota: the decision") and said.endswith(why), said
    chosen = audit("verdict", "--db", store, "--models", "picked", "--k", "2", "--format", "md").stdout
    assert "(no quota); the quota k = 2 asked for changes none of them." in chosen
    # the task's design was stored with the last log imported (a score log): a rank log reads at its own quota
    ranked_text = audit("verdict", "--db", store, "--models", "ranked", "--format", "md").stdout
    assert ranked_text.startswith("# Verdict at k = 1\n\nQuota: the decision the log records: the first place of "
                                  "each recorded pool.\n")
    every = audit("verdict", "--db", store, "--format", "md").stdout
    assert every.startswith("# Verdict at k = 1\n") and "the 0/1 and score logs beside it are judged on their " \
        "recorded decisions, whatever k." in every.split("\n")[2]
    policy = tmp_path / "policy.yaml"
    policy.write_text("systems: [picked]\n")
    checked = audit("check", "--db", store, "--policy", policy)
    assert "## hiring on the recorded decisions" in checked.stdout, checked.stdout + checked.stderr
    assert "FAIL hiring · picked · eng · sex F: adverse impact on the recorded decisions — " in checked.stdout


def test_compare_reads_recorded_decisions_as_their_selections(store):
    """The 0/1 and the score log select the same 60 applicants (F 10 of 60, M 50 of 60): ΔDP = 1/6 − 5/6 for both,
    so their difference is 0 at every k; the rank log's first places are women (ΔDP = +1/2 at k = 1)."""
    for k in (1, 3):
        found = audit_json("compare", "--db", str(store), "--task", "hiring", "--a", "picked", "--b", "scored",
                           "--k", str(k))
        (gap,) = found["gaps"]
        assert gap["dp_a"] == gap["dp_b"] == pytest.approx(10 / 60 - 50 / 60, abs=1e-12) and gap["dp_diff"] == 0
    versus = audit_json("compare", "--db", str(store), "--task", "hiring", "--a", "picked", "--b", "ranked", "--k", "1")
    assert versus["gaps"][0]["dp_b"] == pytest.approx(0.5, abs=1e-12)


def report_text(store: Path, models: tuple[str, ...]) -> str:
    """The report's parts without figures (no browser needed): page 1, the verdict, findings and method."""
    data = collect(ReportSettings(str(store), Selection("hiring", "pointwise", models=models)))
    return render_html(data, [headline, audited, sign_off, verdict, findings_section, method])


def test_the_report_of_a_decision_log_has_no_quota(store):
    html = report_text(store, ("picked",))
    for words in ("<h2>Verdict</h2>", "Judged on the recorded decisions — the decision itself",
                  "<td>none (the recorded decisions)</td>", "judged on the recorded decisions against",
                  "Verdict per grouping on the recorded decisions", "Adverse impact: on the recorded decisions, ",
                  "the decisions the log records are the selection", "No quota: each system",
                  "candidates the system selected (its recorded decisions)"):
        assert words in html, words
    for words in ("k = 1", "Quota k", "the k best of each recorded pool", "top k"):
        assert words not in html, words
    ranked = report_text(store, ("ranked",))
    for words in ("<h2>Verdict at k = 1</h2>", "Quota k = 1:", "the k best of each recorded pool"):
        assert words in ranked, words


def test_the_pages_of_a_decision_log_have_no_quota(monkeypatch):
    monkeypatch.setenv("AUDIT_DB", str(DEMO_STORE))
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["task"] = LOG
    at.run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert not at.slider and not [f for f in at.dataframe if "adverse impact at" in f.value.columns]
    assert any(m.value.startswith("**Judged on the recorded decisions** — the decision itself") for m in at.markdown)
    assert any(m.value.startswith("**Overall on the recorded decisions:**") for m in at.markdown)
    assert any("No quota: each system is judged on the decisions its log records" in c.value for c in at.caption)
    at.switch_page("pages/allocation_gaps.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    headers = [h.value for h in at.header]
    assert headers[:2] == ["Verdict and impact ratios on the recorded decisions",
                           "Bias metrics against allocation gaps on the recorded decisions"]
    assert "Gaps against the quota k" not in headers and not at.slider
    assert any(c.value.startswith("No quota: these systems are judged") for c in at.caption)
    assert "allocation gaps on the recorded decisions" in at.get("plotly_chart")[0].proto.spec
