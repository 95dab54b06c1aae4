"""Issue 40: what the command line and the report print for the demo study is labelled as what it is — recorded
rankings never "pointwise", one spelling of each subtask, the test each gap finding used, the design's quota named
as such — and the interval bounds that decide a verdict print with the decimals that show their side of 0.8."""
from __future__ import annotations

import io
import json
import re
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd

from audit.cli import main
from audit.paths import DEMO_STORE

STUDY = ["--db", str(DEMO_STORE), "--task", "study-gpt-hiring"]
FAST = ["--bootstrap", "200"]
# the demo's cases of issue 40: bounds a hair above 0.8 that three decimals would print as 0.800
HISPANIC_MEN_K3 = "0.8952 \\[0.8001, 1.0444\\]"  # GPT-3.5, HR specialist, k = 3: lower bound 0.80011
ASIAN_WOMEN_K2 = "0.9324 \\[0.8003, 1.1499\\]"  # GPT-3.5, software engineer, k = 2: lower bound 0.800269


def cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(list(argv)) == 0, err.getvalue()
    return out.getvalue()


def row(markdown: str, subtask: str, group: str) -> str:
    """The per-category line of GPT-3.5's ``subtask`` and race × gender ``group`` in ``verdict``'s Markdown."""
    return next(line for line in markdown.splitlines()
                if line.startswith(f"| gpt-3.5-turbo | {subtask} | race × gender | {group} |"))


def test_impact_calls_recorded_rankings_by_their_name_and_prints_bounds_that_separate_them_from_0_8():
    table = pd.read_csv(io.StringIO(cli("impact", *STUDY, "--k", "3", *FAST)))
    assert set(table["mode"]) == {"recorded ranking"}
    assert set(pd.read_csv(io.StringIO(cli("impact", "--db", str(DEMO_STORE), "--task", "resume", "--k", "2",
                                           *FAST)))["mode"]) == {"pointwise"}  # a scored pilot is pointwise
    text = cli("impact", *STUDY, "--k", "3", "--format", "md", *FAST)
    assert "pointwise" not in text
    row = next(line for line in text.splitlines() if "| HR specialist |" in line and "| H_M |" in line
               and "gpt-3.5" in line and "race × gender" in line)
    assert row.split(" | ")[-2:] == ["0.8001", "1.044 |"]  # lower bound 0.80011: never 0.800


def test_verdict_prints_the_deciding_bounds_and_one_spelling_of_each_subtask():
    k3 = cli("verdict", *STUDY, "--k", "3", "--format", "md")
    assert HISPANIC_MEN_K3 in row(k3, "HR specialist", "Hispanic men") and "[0.800," not in k3.replace("\\", "")
    assert "| no evidence of adverse impact" in row(k3, "HR specialist", "Hispanic men")
    k2 = cli("verdict", *STUDY, "--k", "2", "--format", "md")
    assert ASIAN_WOMEN_K2 in row(k2, "software engineer", "Asian women")
    subtasks = {cell.strip() for line in k2.splitlines() if line.startswith("| gpt-")
                for cell in line.split("|")[2:3]}
    assert subtasks == {"HR specialist", "financial analyst", "retail", "software engineer"}


def test_verdict_at_the_designs_own_quota_says_it_is_the_designs():
    chosen = cli("verdict", *STUDY, "--k", "1", "--format", "md")
    assert "Quota: the quota of the study's published result" in chosen and "chosen by the auditor" not in chosen
    assert json.loads(cli("verdict", *STUDY, "--k", "1", "--format", "json"))["quota_reason"] == json.loads(
        cli("verdict", *STUDY, "--format", "json"))["quota_reason"]
    assert "Quota: chosen by the auditor; the design's own is k = 1" in cli("verdict", *STUDY, "--k", "2",
                                                                            "--format", "md")


def test_ll144_prints_the_deciding_bounds():
    text = cli("ll144", *STUDY, "--k", "3")
    assert "0.8952 \\[0.8001, 1.0444\\]" in text and "0.800," not in text
    assert "## gpt-3.5-turbo: study-gpt-hiring / financial analyst (" in text


def test_report_on_the_study_never_says_pointwise_and_names_each_gap_test(tmp_path):
    store = Path(shutil.copy(DEMO_STORE, tmp_path / "demo.db"))
    out = tmp_path / "r.html"
    cli("report", "--db", str(store), "--task", "study-gpt-hiring", "--k", "3", *FAST, "--out", str(out))
    html = out.read_text("utf-8")
    assert "pointwise" not in html  # the commands, the facts, the embedded data
    assert "python -m audit impact" in html and "--mode" not in html  # the default mode reads a recorded ranking
    gaps = re.findall(r'<li class="finding" data-kind="gap"[^>]*>([^<]*)</li>', html)
    assert gaps and all(g.endswith("exact test stratified by pool).") for g in gaps)
    assert "permutation p-value" not in html
    assert "0.8952 [0.8001, 1.0444]" in html
    assert "The content SHA-256 covers the whole imported source" in html
    assert "Financial analyst" not in html and "financial_analyst" not in html


def test_a_scored_pilot_keeps_its_mode_flag_and_its_permutation_test(tmp_path):
    store = Path(shutil.copy(DEMO_STORE, tmp_path / "demo.db"))
    out = tmp_path / "r.html"
    cli("report", "--db", str(store), "--task", "resume", "--k", "2", *FAST, "--out", str(out))
    html = out.read_text("utf-8")
    assert "--mode pointwise" in html and "when the p-value of their permutation test" in html
