"""`audit report`: HTML and PDF of the demo store (pages rendered with pdftoppm), every number quoted in the findings
equal to the metrics and impact CLIs', and a custom task whose group name is an HTML payload, escaped."""
from __future__ import annotations

import json
from html import unescape
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pandas as pd
import pytest

from audit.cli import main
from audit.paths import DEMO_STORE

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BOOT = "100"
PAYLOAD = "<img src=x onerror=alert(1)>"


class Findings(HTMLParser):
    """Collects the text and data attributes of every ``<li class="finding">``."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[dict] = []
        self._open = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "li" and attrs.get("class") == "finding":
            self.items.append({**attrs, "text": ""})
            self._open = True

    def handle_endtag(self, tag):
        self._open = self._open and tag != "li"

    def handle_data(self, data):
        if self._open:
            self.items[-1]["text"] += data


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    assert main(["report", "--db", str(DEMO_STORE), "--k", "2", "--bootstrap", BOOT, "--permutations", BOOT,
                 "--compare", "smollm2-135m", "qwen2.5-coder-0.5b", "--out", str(folder / "report.html")]) == 0
    return folder


def cli_frame(capsys, *argv) -> pd.DataFrame:
    assert main(list(argv)) == 0
    return pd.DataFrame(json.loads(capsys.readouterr().out))


def test_findings_quote_the_metrics_cli_numbers(report, capsys):
    parser = Findings()
    parser.feed((report / "report.html").read_text("utf-8"))
    gaps = [f for f in parser.items if f["data-kind"] == "gap"]
    flags = [f for f in parser.items if f["data-kind"] == "impact"]
    assert gaps and flags
    assert main(["scores", "--db", str(DEMO_STORE), "--out", str(report / "all.csv")]) == 0
    scores = pd.read_csv(report / "all.csv")
    scores[scores["mode"] == "pointwise"].to_csv(report / "pointwise.csv", index=False)
    metrics = cli_frame(capsys, "metrics", "--scores", str(report / "pointwise.csv"), "--reference", "W_M", "--k", "2",
                        "--ci", "0.95", "--bootstrap", BOOT, "--permutations", BOOT, "--adjust", "holm"
                        ).set_index(["model", "subtask", "group"])
    sizes = []
    for finding in gaps:
        row = metrics.loc[(finding["data-model"], finding["data-subtask"], finding["data-group"])]
        value, direction, low, high, p = re.search(
            r"selected (\S+) points (more|less) often .* CI (\S+) to ([^;\s]+); adjusted p = ([^)\s]+)\)",
            finding["text"]).groups()
        assert float(p) == float(f"{row['dp_gap_padj']:.3g}")
        sign = 1 if direction == "more" else -1
        assert sign * row["dp_gap"] > 0 and float(value) == round(sign * row["dp_gap"] * 100, 1)
        assert sorted([float(low), float(high)]) == sorted(round(sign * row[c] * 100, 1) for c in ("dp_gap_lo",
                                                                                                     "dp_gap_hi"))
        sizes.append(abs(row["dp_gap"]))
    clear = ((metrics["dp_gap_lo"] > 0) | (metrics["dp_gap_hi"] < 0)).sum()
    assert len(gaps) == min(12, clear) and sizes == sorted(sizes, reverse=True)
    impact = cli_frame(capsys, "impact", "--db", str(DEMO_STORE), "--k", "2", "--bootstrap", BOOT, "--format", "json")
    for finding in flags:
        grouping = re.search(r"\((race|gender|race × gender)\)", finding["text"]).group(1)
        row = impact[(impact["model"] == finding["data-model"]) & (impact["subtask"] == finding["data-subtask"])
                     & (impact["category"] == finding["data-group"]) & (impact["grouping"] == grouping)].iloc[0]
        quoted = re.search(r"impact ratio of (\S+) .* CI (\S+) to (\S+?)\)", finding["text"]).groups()
        assert row["four_fifths"]
        assert [float(q) for q in quoted] == [round(row[c], 2) for c in ("impact_ratio", "impact_ratio_lo",
                                                                         "impact_ratio_hi")]


def test_report_sections(report):
    html = (report / "report.html").read_text("utf-8")
    for heading in ("Findings", "Scope", "Impact ratios at k = 2", "Allocation gaps against k", "Model rankings",
                    "Comparison: A = smollm2-135m, B = qwen2.5-coder-0.5b", "Diagnostics", "Limitations", "Reproduce"):
        assert f"<h2>{heading}" in html
    assert html.count('<img alt="') >= 5 and "src=\"http" not in html  # figures inline, nothing fetched
    assert (f"python -m audit metrics --db {DEMO_STORE} --task resume --mode pointwise --grouping 'race × gender' "
            "--pool per-group --reference W_M --k 1-7 --preset default") in unescape(html)
    data = json.loads(re.search(r"id='report-data'>(.*?)</script>", html, re.S).group(1))
    assert data["settings"]["k"] == 2 and data["impact"]


@pytest.mark.skipif(CHROMIUM is None or shutil.which("pdftoppm") is None,
                    reason="needs Chromium and poppler-utils (make chromium)")
def test_pdf_pages_render(report):
    pdf = report / "report.pdf"
    assert main(["report", "--db", str(DEMO_STORE), "--k", "2", "--bootstrap", BOOT, "--out", str(pdf)]) == 0
    assert pdf.read_bytes().startswith(b"%PDF")
    pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True,
                                                              text=True, check=True).stdout).group(1))
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(pdf), str(report / "page")], check=True)
    images = sorted(report.glob("page-*.png"))
    assert pages >= 4 and len(images) == pages and all(i.read_bytes().startswith(b"\x89PNG") for i in images)


def test_custom_task_with_two_groups_escapes_names(tmp_path, capsys):
    rows = [{"text": f"Applicant {i} earns {20 + 10 * i},000 a year.", "grp": group, "qualified": i % 2}
            for group in ("plain", PAYLOAD) for i in range(3)]
    pd.DataFrame(rows).to_csv(tmp_path / "candidates.csv", index=False)
    (tmp_path / "spec.yaml").write_text(
        "name: loan<b>x</b>\ninstruction: Respond with only \"Yes\" or \"No\".\n"
        "user: \"Application: {text}\\nQuestion: Approve?\"\nlabels: {\"Yes\": 1, \"No\": 0}\n"
        "pairwise:\n  question: Which one?\n  item: Application\nreference_group: plain\ngroup_columns: [grp]\n")
    db, out = tmp_path / "custom.db", tmp_path / "custom.html"
    assert main(["score", "--task", "custom", "--data", str(tmp_path / "candidates.csv"), "--spec",
                 str(tmp_path / "spec.yaml"), "--subtask", "all", "--db", str(db)]) == 0
    assert main(["report", "--db", str(db), "--reference", "plain", "--k", "1", "--bootstrap", "20",
                 "--out", str(out)]) == 0
    html = out.read_text("utf-8")
    assert PAYLOAD not in html and "<b>x</b>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "Observational design" in html
    assert main(["report", "--db", str(db), "--reference", "nobody", "--out", str(out)]) == 2
    assert "reference group 'nobody' not found" in capsys.readouterr().err
