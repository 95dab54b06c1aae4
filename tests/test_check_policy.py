"""``check --policy``, and ``verdict`` / ``report`` reading the same policy file: exit 0 / 1 / 2, one evidence line
per failure (matched against ``verdict``'s own rows), JUnit XML read back with xml.etree, ``verdict --policy``
byte-identical to ``verdict`` with the same flags, and every bad policy one error line. Stores: copies of
data/demo.db and a small 0/1 decision log imported here (a fair system, a biased one, one with markup in its name)."""
from __future__ import annotations

import csv
import hashlib
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from audit.engine.policy import MAX_POLICY_BYTES, Monitoring, load_policy
from helpers import FEW_DRAWS, ROOT, audit, audit_json

STUDY = "study-gpt-hiring"
ODD = 'odd<&>"]]>'


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    shutil.copy(ROOT / "data" / "demo.db", path)
    return path


def _log(path: Path, women_rate: float, job: str) -> None:
    """400 decisions, 200 women and 200 men; men selected at 0.5, women at ``women_rate``."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "sex", "job", "selected"])
        for i in range(400):
            rate = women_rate if i % 2 == 0 else 0.5
            writer.writerow([f"a{i}", "F" if i % 2 == 0 else "M", job, int((i // 2) % 10 < rate * 10)])


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> Path:
    """A store of task ``hiring``: ``fair`` (equal rates), ``biased`` (women 0.2 against men 0.5) and ``ODD`` (women
    0.3), each 200 women and 200 men, subtask ``eng``."""
    folder = tmp_path_factory.mktemp("log")
    (folder / "spec.yaml").write_text("applicant: id\ndemographics: [sex]\nsubtask: job\n")
    for label, rate in (("fair", 0.5), ("biased", 0.2), (ODD, 0.3)):
        _log(folder / f"{rate}.csv", rate, "eng")
        audit("import", "--format", "decisions", "--data", folder / f"{rate}.csv", "--spec", folder / "spec.yaml",
              "--task", "hiring", "--label", label, "--db", folder / "store.db", check=True)
    return folder / "store.db"


def policy(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def one_error(done, *words: str) -> None:
    """Exit 2 with one ``error:`` line holding every one of ``words``."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_adverse_systems_fail_with_the_verdicts_own_evidence(demo, tmp_path):
    """Exit 1; each failure line is one adverse row of ``verdict`` with the same flags, and nothing else."""
    path = policy(tmp_path, f"tasks: [{STUDY}]\nquota: 1\n")
    done = audit("check", "--db", demo, "--policy", path, "--format", "json")
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)
    verdict = audit_json("verdict", "--db", demo, "--task", STUDY, "--k", "1", "--format", "json")
    adverse = {(r["model"], r["subtask"], r["grouping"], r["category"]) for r in verdict["categories"]
               if r["verdict"] == "adverse impact"}
    assert adverse and {(f["model"], f["subtask"], f["grouping"], f["category"]) for f in found["failures"]} == adverse
    assert not found["passed"] and all(f["reason"] == "adverse impact" for f in found["failures"])
    systems = {(s["model"], s["subtask"]): s["passed"] for s in found["systems"]}
    assert len(systems) == len(verdict["systems"]) == 8
    assert {key for key, passed in systems.items() if not passed} == {(m, s) for m, s, _, _ in adverse}
    row = next(r for r in verdict["categories"] if (r["model"], r["subtask"], r["grouping"], r["category"]) ==
               ("gpt-3.5-turbo", "financial analyst", "race", "B"))
    line = next(f["line"] for f in found["failures"] if (f["grouping"], f["category"]) == ("race", "B"))
    assert line.startswith(f"FAIL {STUDY} · gpt-3.5-turbo · financial analyst · race Black: adverse impact at k = 1")
    assert f"impact ratio {row['impact_ratio']:.3g} [{row['impact_ratio_lo']:.3g}, {row['impact_ratio_hi']:.3g}]" \
        in line and f"{row['candidates']} candidates" in line and "\n" not in line
    page = audit("check", "--db", demo, "--policy", path)
    assert page.returncode == 1 and page.stdout.startswith("# Policy check: FAIL — 2 of 8 systems fail")
    assert page.stdout.count("\n- FAIL ") == len(adverse)


def test_passing_systems_exit_0_and_inconclusive_fails_only_when_the_policy_says_so(demo, tmp_path):
    passing = policy(tmp_path, f"tasks: [{STUDY}]\nsystems: [gpt-4]\n")
    done = audit("check", "--db", demo, "--policy", passing)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Policy check: PASS — 0 of 4 systems fail") and "FAIL" not in done.stdout
    strict = policy(tmp_path, f"tasks: [{STUDY}]\nsystems: [gpt-4]\ninconclusive_fails: true\n", "strict.yaml")
    found = json.loads(audit("check", "--db", demo, "--policy", strict, "--format", "json").stdout)
    verdict = audit_json("verdict", "--db", demo, "--task", STUDY, "--models", "gpt-4", "--format", "json")
    inconclusive = [r for r in verdict["categories"] if r["verdict"] == "inconclusive"]
    assert len(found["failures"]) == len(inconclusive) > 0 and not found["passed"]
    assert all("inconclusive (the policy fails inconclusive)" in f["line"] for f in found["failures"])


def test_a_decision_log_fails_its_biased_system_and_the_minimum_sample(logged, tmp_path):
    """On the 0/1 log: ``biased`` and ``ODD`` are adverse, ``fair`` passes; a minimum sample of 200 holds, 201 fails
    every category (200 each) of every system, one line each."""
    done = audit("check", "--db", logged, "--policy", policy(tmp_path, "minimum_sample: 200\n"), "--format", "json")
    assert done.returncode == 1
    found = json.loads(done.stdout)
    assert {(f["model"], f["category"]) for f in found["failures"]} == {("biased", "F"), (ODD, "F")}
    assert {s["model"]: s["passed"] for s in found["systems"]} == {"fair": True, "biased": False, ODD: False}
    fair = audit("check", "--db", logged, "--policy", policy(tmp_path, "systems: fair\n", "fair.yaml"))
    assert fair.returncode == 0, fair.stdout
    small = audit("check", "--db", logged, "--policy", policy(tmp_path, "systems: [fair]\nminimum_sample: 201\n",
                                                               "small.yaml"), "--format", "json")
    assert small.returncode == 1
    lines = [f["line"] for f in json.loads(small.stdout)["failures"]]
    assert sorted(lines) == sorted(f"FAIL hiring · fair · eng · sex {c}: below the minimum sample (200 < 201) on "
                                   f"the recorded decisions — impact ratio 1 "
                                   f"{'[0.822, 1.22] ' if c == 'M' else ''}against F, adjusted "
                                   f"p {'1.000' if c == 'M' else 'n/a'}, 200 candidates" +
                                   ("" if c == "M" else "; the comparator (most-selected category): ratio 1 by "
                                                        "construction") for c in ("F", "M"))


def test_junit_parses_and_counts_match(logged, demo, tmp_path):
    """One testsuite per task, one testcase per system × subtask, a failure per failing one carrying its lines;
    markup in a system's name is escaped by the XML writer."""
    junit = tmp_path / "check.xml"
    done = audit("check", "--db", logged, "--policy", policy(tmp_path, "{}\n"), "--junit", junit, "--format", "json")
    assert done.returncode == 1
    found = json.loads(done.stdout)
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and (root.get("tests"), root.get("failures")) == ("3", "2")
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "hiring" and suite.get("tests") == "3" and suite.get("failures") == "2"
    cases = {case.get("name"): case.find("failure") for case in suite.findall("testcase")}
    assert set(cases) == {"fair · eng", "biased · eng", f"{ODD} · eng"} and cases["fair · eng"] is None
    assert cases[f"{ODD} · eng"].text.splitlines() == [f["line"] for f in found["failures"] if f["model"] == ODD]
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["policy_sha256"] == hashlib.sha256(b"{}\n").hexdigest()
    study = tmp_path / "study.xml"
    assert audit("check", "--db", demo, "--policy", policy(tmp_path, "quota: {study-gpt-hiring: 1, resume: 2}\n",
                                                          "all.yaml"), "--junit", study).returncode == 1
    suites = ET.parse(study).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [STUDY, "synthetic-dated-log", "resume"]  # the store's order
    assert [len(s.findall("testcase")) for s in suites] == [8, 3, 16]
    assert sum(len(s.findall("testcase/failure")) for s in suites) == int(ET.parse(study).getroot().get("failures"))


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_verdict_with_a_policy_equals_verdict_with_its_flags(demo, tmp_path, fmt):
    path = policy(tmp_path, f"tasks: [{STUDY}]\nsystems: [gpt-4, gpt-3.5-turbo]\nquota: 2\nthreshold: 0.75\n"
                            "reading: strict\nfamily: audit\nconfidence: 0.9\nmonitoring: on\n")
    by_policy = audit("verdict", "--db", demo, "--policy", path, "--format", fmt, check=True).stdout
    by_flags = audit("verdict", "--db", demo, "--task", STUDY, "--models", "gpt-4", "gpt-3.5-turbo", "--k", "2",
                     "--threshold", "0.75", "--rule", "strict", "--family", "audit", "--ci", "0.9", "--format", fmt,
                     check=True).stdout
    assert by_policy == by_flags and "0.75" in by_policy
    agreeing = audit("verdict", "--db", demo, "--policy", path, "--threshold", "0.75", "--format", fmt, check=True)
    assert agreeing.stdout == by_flags


@pytest.mark.parametrize(("flags", "words"), [
    (["--threshold", "0.8"], ["--threshold 0.8", "threshold 0.75"]),
    (["--rule", "practice"], ["--rule practice", "reading strict"]),
    (["--models", "gpt-4"], ["--models gpt-4", "systems gpt-4, gpt-3.5-turbo"]),
    (["--k", "1"], ["--k 1", "quota 2"]),
    (["--task", "resume"], ["--task resume", f"tasks {STUDY}"]),
])
def test_a_flag_against_the_policy_is_one_error_naming_both(demo, tmp_path, flags, words):
    path = policy(tmp_path, f"tasks: [{STUDY}]\nsystems: [gpt-4, gpt-3.5-turbo]\nquota: 2\nthreshold: 0.75\n"
                            "reading: strict\n")
    one_error(audit("verdict", "--db", demo, "--policy", path, *flags), *words, str(path))


@pytest.mark.parametrize(("text", "words"), [
    ("threshold: 0.8\nthreshhold: 0.7\n", ["unknown key(s) threshhold", "the keys are threshold, reading"]),
    ("threshold: 1.5\n", ["key 'threshold' is 1.5"]),
    ("threshold: high\n", ["key 'threshold' is 'high'"]),
    ("threshold: .nan\n", ["key 'threshold' is nan"]),
    ("- threshold: 0.8\n", ["give a mapping of keys", "not a list"]),
    ("just text\n", ["not a str"]),
    ("threshold: [0.8\n", ["cannot be parsed"]),
    ("reading: lenient\n", ["key 'reading' is 'lenient'", "practice, strict"]),
    ("quota: 0\n", ["key 'quota' is 0"]),
    ("quota: {resume: two}\n", ["key 'quota.resume' is 'two'"]),
    ("minimum_sample: -1\n", ["key 'minimum_sample' is -1"]),
    ("inconclusive_fails: maybe\n", ["key 'inconclusive_fails' is 'maybe'"]),
    ("systems: [gpt-4, gpt-4]\n", ["key 'systems' names 'gpt-4' twice"]),
    ("monitoring: {period: fortnight}\n", ["key 'monitoring.period' is 'fortnight'"]),
    ("monitoring: {alarm: on}\n", ["unknown key(s) monitoring.alarm", "monitoring.enabled"]),
    ("monitoring: {alpha: 2}\n", ["key 'monitoring.alpha' is 2"]),
    ("confidence: 1\n", ["key 'confidence' is 1"]),
])
def test_a_bad_policy_is_one_error_line(demo, tmp_path, text, words):
    path = policy(tmp_path, text)
    for command in ("check", "verdict"):
        one_error(audit(command, "--db", demo, "--policy", path), str(path), *words)


def test_a_bad_policy_is_refused_before_the_store_is_read(tmp_path):
    """The policy is checked first: a store that is not one (or a big log that takes seconds to read) is never
    opened for a policy that would be refused anyway."""
    notes = tmp_path / "notes.db"
    notes.write_text("not a store")
    path = policy(tmp_path, "threshold: 1.5\n")
    for command in (["check"], ["verdict"], ["report", "--out", tmp_path / "report.html"]):
        one_error(audit(*command, "--db", notes, "--policy", path), str(path), "key 'threshold' is 1.5")
    assert not (tmp_path / "report.html").exists()


def test_a_missing_huge_or_binary_policy_is_one_error_line(demo, tmp_path):
    one_error(audit("check", "--db", demo, "--policy", tmp_path / "none.yaml"), "none.yaml", "no such file")
    huge = policy(tmp_path, "# padding\n" * (MAX_POLICY_BYTES // 10 + 1) + "threshold: 0.8\n", "huge.yaml")
    one_error(audit("check", "--db", demo, "--policy", huge), "huge.yaml", "the limit is")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"threshold: \xff\xfe\n")
    one_error(audit("check", "--db", demo, "--policy", binary), "binary.yaml", "not UTF-8")
    one_error(audit("check", "--db", demo, "--policy", tmp_path), str(tmp_path), "folder")


def test_unknown_tasks_systems_and_stores_are_one_error_line(demo, logged, tmp_path):
    for command in ("check", "verdict"):
        one_error(audit(command, "--db", demo, "--policy", policy(tmp_path, "tasks: [hiring]\n")),
                  "key 'tasks' names task 'hiring', not in the store", STUDY)
        one_error(audit(command, "--db", demo, "--policy", policy(tmp_path, "quota: {resume: 2, hirng: 1}\n", "q.yaml")),
                  "key 'quota' names task 'hirng', not in the store", STUDY)
    one_error(audit("check", "--db", demo, "--policy", policy(tmp_path, "systems: [gpt-5]\n", "s.yaml")),
              "system 'gpt-5' is in none of the tasks", "gpt-4")
    one_error(audit("check", "--db", demo, "--policy", policy(tmp_path, "tasks: [resume]\nsystems: [gpt-4]\n",
                                                               "r.yaml")), "system 'gpt-4' is in none of the tasks resume")
    one_error(audit("check", "--db", demo, "--policy", policy(tmp_path, f"tasks: [resume, {STUDY}]\nsystems: [gpt-4]\n",
                                                               "r2.yaml")), "task 'resume' holds none of the systems gpt-4")
    fine = policy(tmp_path, "{}\n", "fine.yaml")
    one_error(audit("check", "--db", tmp_path / "none.db", "--policy", fine), "none.db", "does not exist")
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database\n" * 100)
    done = audit("check", "--db", garbage, "--policy", fine)
    one_error(done, "garbage.db")
    one_error(audit("check", "--db", logged, "--policy", fine, "--junit", logged), "result store")


def test_monitoring_is_parsed_and_passed_through(tmp_path):
    assert load_policy(policy(tmp_path, "monitoring: on\n")).monitoring == Monitoring(enabled=True)
    assert load_policy(policy(tmp_path, "")).monitoring == Monitoring(enabled=False)
    found = load_policy(policy(tmp_path, "monitoring: {alpha: 0.01, period: month, horizon: 12}\n"))
    assert found.monitoring == Monitoring(enabled=True, alpha=0.01, period="month", horizon=12)


def test_the_report_names_the_policy_and_its_sha256(demo, tmp_path):
    path = policy(tmp_path, f"tasks: [{STUDY}]\nsystems: [gpt-4]\nthreshold: 0.75\n")
    out = tmp_path / "report.html"
    audit("report", "--db", demo, "--policy", path, *FEW_DRAWS, "--out", out, check=True)
    html = out.read_text()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert f"read from the policy file policy.yaml (SHA-256 {digest})" in html
    data = json.loads(html.split("id='report-data'>")[1].split("</script>")[0])
    assert data["settings"]["policy"] == ["policy.yaml", digest] and data["settings"]["threshold"] == 0.75
    assert data["settings"]["models"] == ["gpt-4"]
    assert "python -m audit check --db demo.db --policy policy.yaml" in html
    one_error(audit("report", "--db", demo, "--policy", path, "--threshold", "0.8", "--out", out),
              "--threshold 0.8 conflicts", "threshold 0.75")


def test_the_documented_example_policy_reads_as_documented(tmp_path):
    text = (ROOT / "docs" / "policy.md").read_text().split("```yaml\n")[1].split("```")[0]
    found = load_policy(policy(tmp_path, text))
    assert (found.threshold, found.reading, found.family, found.confidence, found.quota, found.minimum_sample,
            found.tasks, found.systems, found.inconclusive_fails, found.monitoring.enabled) == (
        0.8, "practice", "system", 0.95, 1, 100, (STUDY,), ("gpt-4", "gpt-3.5-turbo"), False, False)


def test_monitoring_alarms_fail_the_drifting_job_only_when_the_policy_watches(demo, tmp_path):
    """The demo's synthetic dated log: job-03's women fall to 0.6 of men's rate at week 27. Its cumulative verdict is
    inconclusive, so it passes without monitoring; with monitoring on, ``check`` fails it (and only it) on the alarm
    ``monitor`` raises, with the same period and detector."""
    task = "synthetic-dated-log"
    quiet = audit("check", "--db", demo, "--policy", policy(tmp_path, f"tasks: [{task}]\nmonitoring: off\n"))
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    watched = policy(tmp_path, f"tasks: [{task}]\nmonitoring: {{alpha: 0.05, period: week}}\n", "watched.yaml")
    done = audit("check", "--db", demo, "--policy", watched, "--junit", tmp_path / "j.xml")
    assert done.returncode == 1, done.stderr
    failures = [line for line in done.stdout.splitlines() if line.startswith("- FAIL")]
    monitored = audit_json("monitor", "--db", demo, "--task", task, "--format", "json")["summary"]
    alarmed = [row for row in monitored if row["alarm"]]
    assert [row["subtask"] for row in alarmed] == ["job-03"] and len(failures) == 1
    assert f"job-03 · sex F: monitoring alarm since the week of {alarmed[0]['first_alarm']}" in failures[0]
    assert f"detector {alarmed[0]['detector']:.4g} at its level {alarmed[0]['level']:.4g}" in failures[0]
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite.get("failures") == "1" and suite.get("tests") == "3"
