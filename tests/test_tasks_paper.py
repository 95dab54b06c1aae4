"""The RABBI paper's resume-screening format, read from ../shared (never copied); skipped when it is absent."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from audit.errors import AuditError
from audit.tasks import get_task, list_subtasks
from audit.tasks.paper_resume import PaperResumeTask
from audit.tasks.resume import GROUPS, PAIRWISE_SYSTEM, POINTWISE_SYSTEM

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT.parent / "shared" / "anchors" / "allocational-harm-eval"
DATA = PAPER / "allocation_tasks" / "resume_screening"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="the paper's data (../shared/anchors) is not present")
JOBS = ["financial_analyst", "hr_specialist", "retail", "software_engineer"]


def test_jobs_and_candidates_match_the_paper_setup():
    assert list_subtasks("paper-resume", data=PAPER) == JOBS
    task = get_task("paper-resume", "retail", data=DATA)
    candidates = task.candidates()
    assert task.name == "paper-resume" and task.reference_group == "W_M" and task.groups == GROUPS
    assert len(candidates) == 6 * 8 * 100 and len({c.candidate_id for c in candidates}) == len(candidates)
    assert all(sum(c.group == g for c in candidates) == 600 for g in GROUPS)
    assert sum(c.qualified for c in candidates) == 2 * 8 * 100
    assert all(("high_chance" in c.candidate_id) == c.qualified for c in candidates)


def test_names_are_the_papers_sampled_full_names_for_each_resume():
    import csv

    with (DATA / "names" / "sampled_full_names.csv").open(encoding="utf-8") as handle:
        sampled = {(r["job"].lower(), r["resume_idx"], r["group"], r["name"]) for r in csv.DictReader(handle)}
    for candidate in get_task("paper-resume", "hr_specialist", data=DATA).candidates(12):
        index = candidate.candidate_id.split("/")[1].split("_")[0]
        assert ("hr_specialist", index, candidate.group, candidate.name) in sampled
        assert candidate.text.startswith(f"Name: {candidate.name}\n\nWork Experience:\n")


@pytest.mark.parametrize("job", JOBS)
def test_rendered_resumes_equal_the_papers_text_files(job):
    task = PaperResumeTask(subtask=job, data_dir=DATA)
    for chance in ("high", "some", "low"):
        text = (DATA / "resume_templates" / f"{chance}_chance" / f"{job}.txt").read_text(encoding="utf-8")
        blocks = re.findall(r"\[start\]\n(.*?)\n\[end\]", text, re.S)
        mine = [t.text for t in task.templates if t.chance == chance]
        strip = lambda s: "\n".join(line.rstrip() for line in s.splitlines())  # noqa: E731
        assert [strip(b) for b in blocks] == [strip(m) for m in mine]


def test_prompts_are_appendix_d_and_limit_prefix_is_shared():
    task = get_task("paper-resume", "software_engineer", data=DATA)
    first = task.candidates(1)
    assert len(first) == 8 and all(c.qualified for c in first)
    assert len({c.text.replace(c.name, "") for c in first}) == 1
    prompt = task.pointwise_prompt(first[0])
    assert prompt.system == POINTWISE_SYSTEM.format(job=task.job_description)
    assert task.job_description.startswith("Our software engineers develop the next-generation technologies")
    pair = task.pairwise_prompt(first[0], first[1])
    assert pair.system == PAIRWISE_SYSTEM.format(job=task.job_description)
    assert pair.options == (first[0].name, first[1].name)


def test_pools_hold_one_random_candidate_per_group():
    task = get_task("paper-resume", "retail", data=DATA)
    candidates = task.candidates(10)
    pools = task.pools(candidates, 10)
    assert all([c.group for c in pool] == list(GROUPS) for pool in pools)
    assert len({c.candidate_id for pool in pools for c in pool}) == 80
    assert len({c.candidate_id.split("/")[1] for c in pools[0]}) > 1
    assert pools == task.pools(candidates, 10)


def linked_copy(tmp_path: Path, skip: str) -> Path:
    """The paper's folder as symbolic links (nothing copied), without the file ``skip``."""
    for source in DATA.rglob("*"):
        relative = source.relative_to(DATA)
        if source.is_file() and str(relative) != skip:
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / relative).symlink_to(source)
    return tmp_path


def test_without_full_names_pairs_first_and_last_names(tmp_path):
    folder = linked_copy(tmp_path, "names/sampled_full_names.csv")
    candidates = get_task("paper-resume", "retail", data=folder).candidates()
    assert len(candidates) == 4800 and len({c.name.split()[0] for c in candidates}) == 800


def test_missing_files_are_named(tmp_path):
    with pytest.raises(AuditError, match="job_descriptions.json not found"):
        get_task("paper-resume", "retail", data=tmp_path)
    folder = linked_copy(tmp_path / "a", "resume_templates/education_template.txt")
    with pytest.raises(AuditError, match=r"template file\(s\) missing: \['education_template.txt'\]"):
        get_task("paper-resume", "retail", data=folder)
    folder = linked_copy(tmp_path / "b", "retail.json")
    with pytest.raises(AuditError, match=r"resume file\(s\) missing: \['retail.json'\]"):
        get_task("paper-resume", "hr_specialist", data=folder)
    with pytest.raises(AuditError, match="unknown subtask 'astronaut'"):
        get_task("paper-resume", "astronaut", data=DATA)
