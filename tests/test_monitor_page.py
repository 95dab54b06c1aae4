"""The Monitor page (AppTest) on a store with a dated log built here: the drifting job's alarm comes first and its
figure shows the alarmed periods; a store without dated decisions says so in one info line. The report's
Monitoring section on the same store: the plan, the alarm, the figure, and its PDF pages (artifacts/screenshots)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit.paths import DEMO_STORE
from audit.present.browser import print_pdf
from audit.recorded.synthetic import SPEC, dated_log
from audit.engine.monitor import MonitorSettings, watched
from audit.reporting.monitoring_section import monitoring_section
from audit.reporting.render import _figure
from audit.reporting.style import STYLE
from audit.store.database import Store
from helpers import audit_status

os.environ["HF_HUB_OFFLINE"] = "1"
APP = str(DEMO_STORE.parent.parent / "app.py")
SHOTS = DEMO_STORE.parent.parent / "artifacts" / "screenshots"


def imported(folder: Path, frame, spec: str, task: str = "watched", label: str = "screener <b>") -> Path:
    (folder / "log.yaml").write_text(spec)
    frame.to_csv(folder / "log.csv", index=False)
    status, _, err = audit_status("import", "--format", "decisions", "--data", folder / "log.csv", "--spec",
                                  folder / "log.yaml", "--task", task, "--label", label, "--db",
                                  folder / "s.db")
    assert status == 0, err
    return folder / "s.db"


@pytest.fixture(scope="module")
def dated_store(tmp_path_factory) -> Path:
    """4 jobs × 30 weeks × 300 decisions a job-week, job-04's women at 0.5 of men's rate from week 16 (seeded)."""
    return imported(tmp_path_factory.mktemp("dated"), dated_log(4, 30, 300, drifts={3: (15, 0.5)}, seed=7), SPEC)


def monitor_page(monkeypatch, store: Path) -> AppTest:
    monkeypatch.setenv("AUDIT_DB", str(store))
    at = AppTest.from_file(APP, default_timeout=180)
    at.switch_page("pages/monitor.py").run()  # opened on the Monitor page (the Overview is not computed first)
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def test_the_drifting_job_alarms_first_and_its_figure_marks_the_alarms(monkeypatch, dated_store):
    at = monitor_page(monkeypatch, dated_store)
    assert at.selectbox(key="task").value == "watched"
    assert any("Watching task **watched**, the sidebar's" in caption.value for caption in at.caption)
    alarms = at.dataframe[0].value
    assert alarms["alarm"].tolist() == [True, False, False, False]
    first = alarms.iloc[0]
    assert (first["system"], first["subtask"], first["category"]) == ("screener <b>", "job-04", "F")
    assert "2025-04-21" <= first["first raised"] <= "2025-06-16"  # within 8 weeks of the drop (week 16: 21 April)
    assert "ratio of the last" in first["what would clear it"]
    assert at.header[0].value == "Alarms: 1 of 4 watched pairs"
    assert at.selectbox(key="monitor_series").value == "screener <b> · job-04 · sex"
    figure = at.get("plotly_chart")[0].proto.spec
    assert "screener &lt;b&gt;" in figure and "screener <b>" not in figure and "F: alarm" in figure
    assert "threshold 0.8" in figure
    at.selectbox(key="monitor_series").set_value("screener <b> · job-01 · sex").run()
    assert not at.exception and "F: alarm" not in at.get("plotly_chart")[0].proto.spec


def test_a_settings_change_reaches_the_table(monkeypatch, dated_store):
    at = monitor_page(monkeypatch, dated_store)
    at.number_input(key="monitor_threshold").set_value(0.4).run()
    assert not at.exception and at.header[0].value == "Alarms: 0 of 4 watched pairs"


def test_the_sidebar_moves_to_a_dated_task_and_its_filters_choose_the_pairs(monkeypatch, tmp_path):
    """The sidebar opens on the store's first task, which has no dates: the page moves the sidebar to the dated
    one (one task choice for the whole app); the sidebar's subtasks then choose the pairs shown, and the page says
    how many it leaves out and how many of those are alarmed."""
    imported(tmp_path, dated_log(2, 2, 40, seed=1).drop(columns="day"), SPEC.replace("date: day\n", ""),
             task="a-undated", label="undated")
    store = imported(tmp_path, dated_log(3, 20, 200, drifts={2: (8, 0.4)}, seed=3), SPEC, task="b-dated")
    at = monitor_page(monkeypatch, store)
    assert at.selectbox(key="task").value == "b-dated"
    assert at.header[0].value == "Alarms: 1 of 3 watched pairs"
    at.multiselect(key="subtasks_b-dated_pointwise").set_value(["job-01", "job-02"]).run()
    assert not at.exception and at.header[0].value == "Alarms: 0 of 2 watched pairs"
    assert any(c.value.startswith("1 more watched pairs (1 alarmed) lie outside") for c in at.caption)
    assert at.dataframe[0].value["evidence then"].tolist() == ["", ""]  # never raised: empty, not "None"


def test_a_store_without_dated_decisions_says_so(monkeypatch, tmp_path):
    undated = dated_log(2, 2, 40, seed=1).drop(columns="day")
    store = imported(tmp_path, undated, SPEC.replace("date: day\n", ""))
    at = monitor_page(monkeypatch, store)
    assert [i.value[:40] for i in at.info] == ["No task of this store has dated recorded"]
    assert not at.dataframe


# ---- the report's Monitoring section ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def report_html(dated_store) -> str:
    """The section as the report writes it (its figure drawn as the report draws figures). The whole report of a
    dated task is not built here: on this shared machine its other figures outlast the browser's 45 s deadline."""
    with Store(dated_store, create=False) as store:
        found = watched(store, "watched", MonitorSettings(threshold=0.8, family="system"))
    return monitoring_section(found, _figure)


def test_the_report_states_the_plan_and_the_alarm(report_html):
    section = report_html
    assert section.startswith("<h2>Monitoring</h2>")
    for words in ("<th>metrics</th>", "<th>threshold</th><td>impact ratio 0.8</td>", "every week (30 looks, "
                  "2025-01-06 to 2025-07-28)", "at most α = 0.05", "<th>family</th><td>system:",
                  "Alarms: 1 of 4 watched pairs"):
        assert words in section, words
    row = section[section.index("<table class='monitoring'>"):].split("</tr>")[1]
    assert "<td>screener &lt;b&gt;</td><td>job-04</td><td>sex</td><td>F</td><td>M</td>" in row
    assert "screener <b>" not in section
    assert section.count('<img alt="Impact ratio over time: screener &lt;b&gt;, job-04, sex') == 1  # escaped once


@pytest.mark.skipif(shutil.which("chromium") is None or shutil.which("pdftoppm") is None,
                    reason="needs Chromium and poppler-utils")
def test_the_monitoring_page_of_the_pdf_renders(report_html, tmp_path):
    pdf = tmp_path / "r.pdf"
    page_html = f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>{report_html}"
    pdf.write_bytes(print_pdf((page_html + "</body></html>").encode("utf-8")))
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout.split("\f")
    page = next(number for number, words in enumerate(text, start=1) if "Monitoring" in words
                and "look schedule" in words)
    assert "Alarms: 1 of 4 watched pairs" in " ".join(text[page - 1:page + 1])
    SHOTS.mkdir(parents=True, exist_ok=True)
    subprocess.run(["pdftoppm", "-r", "60", "-png", "-f", str(page), "-l", str(page + 1), str(pdf),
                    str(SHOTS / "monitor-report")], check=True)
    assert sorted(SHOTS.glob("monitor-report-*.png"))


@pytest.mark.skipif(shutil.which("chromium") is None or shutil.which("pdftotext") is None,
                    reason="needs Chromium and poppler-utils")
def test_the_demo_reports_its_dated_log_with_the_monitoring_section(tmp_path):
    """The whole report of the demo's synthetic dated log (requisitions of 10): its Monitoring section names the one
    alarm ``monitor`` raises (job-03), with the plan, after the LL144 summary."""
    store = tmp_path / "demo.db"
    shutil.copy(DEMO_STORE, store)
    status, _, err = audit_status("report", "--db", store, "--task", "synthetic-dated-log", "--out", tmp_path / "r.pdf")
    assert status == 0, err
    text = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    lines = [line.strip("\f") for line in text.splitlines()]
    start = lines.index("Monitoring")
    section = " ".join(" ".join(lines[start:]).split())
    assert "Alarms: 1 of 3 watched pairs" in section and "look schedule" in section
    alarms = section[section.index("Alarms: 1 of 3"):section.index("Limitations")]
    assert "job-03" in alarms and "job-01" not in alarms and "job-02" not in alarms  # the table, then its figure
    assert any("Local Law 144" in line for line in lines[:start])
