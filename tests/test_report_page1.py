"""Issue 40: page 1 of the report is a summary an auditor signs as it stands. Read from the printed PDF (pdftotext) of
the default study report on a copy of the demo store: the verdict first, with every system's verdict and every adverse
finding of ``verdict`` at the design's quota (compared with that command's own output), then what was audited, then
the sign-off block; A4 by default, Letter on request; sign-off fields printed as text and escaped; a bad date refused
in one line; the same fields on the dashboard."""
from __future__ import annotations

import re
import shutil
import subprocess
from datetime import date
from html import unescape

import pytest
from streamlit.testing.v1 import AppTest

from audit.formatting import ratio, subtask_name
from audit.paths import DEMO_STORE
from audit.reporting import print_pdf
from helpers import audit, audit_json

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None or shutil.which("pdftotext") is None,
                                reason="needs Chromium and poppler-utils (make chromium)")
STUDY = "study-gpt-hiring"
AUDITOR, FIRM = "Jane <script>alert(1)</script> Roe", "Roe & Partners"
SHORT = {"adverse impact": "adverse impact", "inconclusive": "inconclusive",
         "no evidence of adverse impact at this sample size": "no evidence"}


def pdf_text(pdf, page: int, layout: bool = True) -> str:
    """Page ``page`` of ``pdf`` as text, laid out as printed (or in reading order: a wrapped cell's lines together)."""
    return subprocess.run(["pdftotext", *(["-layout"] if layout else []), "-f", str(page), "-l", str(page), str(pdf),
                           "-"], capture_output=True, text=True, check=True).stdout


def page_size(pdf) -> tuple[int, int]:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    width, height = re.search(r"Page size:\s+([\d.]+) x ([\d.]+) pts", info).groups()
    return round(float(width)), round(float(height))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    copy = tmp_path_factory.mktemp("page1") / "demo.db"
    shutil.copyfile(DEMO_STORE, copy)
    return copy


@pytest.fixture(scope="module")
def plain(store):
    """The study's report as the issue runs it: defaults, PDF."""
    out = store.parent / "r.pdf"
    done = audit("report", "--db", store, "--task", STUDY, "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def test_page_one_opens_with_every_verdict_of_the_verdict_command(store, plain):
    judged = audit_json("verdict", "--db", str(store), "--task", STUDY, "--format", "json")
    assert judged["k"] == 1 and judged["family"] == "system"
    one = pdf_text(plain, 1)
    lines = [line.strip() for line in one.splitlines() if line.strip()]
    order = [next(i for i, line in enumerate(lines) if line.startswith(head))
             for head in ("Verdict at k = 1", "What was audited", "Sign-off", "Signature")]
    assert order == sorted(order) and order[0] <= 1  # the verdict first (after the title), the signature last
    assert "the quota of the study's published result" in one
    assert f"Overall: {judged['overall']['summary'].split(';')[0]}" in " ".join(one.split())

    # every system (model × subtask): its verdict and its counts, on its model's row
    for model in {s["model"] for s in judged["systems"]}:
        row = next(line for line in lines if line.startswith(model + " ") and "(" in line)
        shown = sorted(re.findall(r"(adverse impact|inconclusive|no evidence) \((\d+) · (\d+) · (\d+)\)", row))
        want = sorted((SHORT[s["verdict"]], str(s["n_adverse"]), str(s["n_inconclusive"]), str(s["n_no_evidence"]))
                      for s in judged["systems"] if s["model"] == model)
        assert shown == want, (model, row)
    assert any(s["model"] == "gpt-4" and s["verdict"] == "inconclusive" for s in judged["systems"])

    # every adverse finding, each on its own line with its ratio and interval, lowest ratio first
    adverse = sorted((r for r in judged["categories"] if r["verdict"] == "adverse impact"),
                     key=lambda r: r["impact_ratio"])
    assert len(adverse) == 8
    found = []
    for r in adverse:
        shown = ratio(r["impact_ratio"], r["impact_ratio_lo"], r["impact_ratio_hi"])
        hits = [i for i, line in enumerate(lines) if all(
            part in line for part in (r["model"], subtask_name(r["subtask"]), f" {r['name']} ", shown))]
        assert len(hits) == 1, (r["name"], r["subtask"], shown)
        found.append(hits[0])
    assert found == sorted(found) and len(set(found)) == len(adverse)
    assert f"Adverse impact in {len(adverse)} of {len(judged['categories'])} system × category cells" in one
    assert "more" not in " ".join(lines[order[0]:order[1]])  # never "and 3 more"


def test_a4_by_default_and_the_sign_off_left_blank(plain):
    assert page_size(plain) == (595, 842)
    one = pdf_text(plain, 1)
    for field in ("Auditor", "Firm", "Audit date", "Distribution date", "Signature", "Date"):
        assert re.search(rf"^\s*{field}\b|\s{field}\b", one, re.M), field
    assert re.search(r"Audit date\s+\d{4}-\d{2}-\d{2}", one)
    assert re.search(r"Distribution date\s*$", one, re.M)  # a line to fill in, nothing printed on it
    assert "Scope. This report covers gpt-3.5-turbo, gpt-4 on task study-gpt-hiring" in " ".join(one.split())
    assert pdf_text(plain, 2).lstrip().startswith("Verdict per grouping at k = 1")  # the details after page 1


def test_sign_off_fields_printed_as_text_and_escaped_on_letter(store):
    out = store.parent / "signed.html"
    done = audit("report", "--db", store, "--task", STUDY, "--auditor", AUDITOR, "--firm", FIRM,
                 "--distribution-date", "2026-12-01", "--paper", "letter", "--bootstrap", "100", "--out", out)
    assert done.returncode == 0, done.stderr
    html = out.read_text("utf-8")
    assert "<script>alert" not in html and "Jane &lt;script&gt;alert(1)&lt;/script&gt; Roe" in html
    assert "Roe &amp; Partners" in html and "@page{size:letter}" in html
    ll144 = unescape(html[html.index("Bias audit summary (NYC Local Law 144)"):])
    assert re.search(r"distribution date</th><td>2026-12-01<", ll144)  # the LL144 section reads the same option
    assert "--auditor 'Jane <script>alert(1)</script> Roe'" in unescape(html)  # the reproduce command keeps them
    pdf = store.parent / "signed.pdf"
    pdf.write_bytes(print_pdf(out.read_bytes()))
    assert page_size(pdf) == (612, 792)
    one = " ".join(pdf_text(pdf, 1, layout=False).split())
    assert f"Auditor {AUDITOR}" in one and FIRM in one and "Distribution date 2026-12-01" in one
    assert one.index("Sign-off") < one.index("Signature")


@pytest.mark.parametrize("bad", ["2026-13-01", "01/12/2026", "2026-2-1", "20261201", "tomorrow"])
def test_a_bad_distribution_date_is_one_error_line(store, bad):
    out = store.parent / "bad.pdf"
    for command in (["report", "--task", STUDY, "--out", out], ["ll144"]):
        done = audit(*command, "--db", store, "--distribution-date", bad)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.splitlines() == [f"error: --distribution-date {bad}: give a date as YYYY-MM-DD, "
                                            "e.g. 2026-12-01"]
    assert not out.exists()


def test_dashboard_report_takes_the_same_fields(monkeypatch, store):
    monkeypatch.setenv("AUDIT_DB", str(store))
    at = AppTest.from_file(str(DEMO_STORE.parent.parent / "app.py"), default_timeout=180)
    at.session_state["n_boot"] = 100
    at.run()
    at.switch_page("pages/allocation_gaps.py").run()
    assert not at.exception and at.radio(key="report_paper").value == "a4"
    at.text_input(key="report_auditor").set_value(AUDITOR)
    at.text_input(key="report_firm").set_value(FIRM)
    at.date_input(key="report_distribution_date").set_value(date(2026, 12, 1))
    at.radio(key="report_paper").set_value("letter").run()
    at.button(key="build_report_html").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    settings, report = at.session_state["report_html"]
    assert (settings.auditor, settings.firm, settings.distribution_date, settings.paper) == (
        AUDITOR, FIRM, "2026-12-01", "letter")
    html = report.decode("utf-8")
    assert "<script>alert" not in html and "Jane &lt;script&gt;alert(1)&lt;/script&gt; Roe" in html
    assert "@page{size:letter}" in html and "2026-12-01" in html
