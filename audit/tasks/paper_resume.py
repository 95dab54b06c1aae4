"""Import the RABBI paper's own resume-screening data (its repository's ``allocation_tasks/resume_screening``).

Expected folder (``--data DIR``: that folder, or a clone of the repository holding it)::

    job_descriptions.json            {"software engineer": {"jd": "...", ...}, "HR specialist": ..., ...}
    <job>.json                       6 resumes: work_experience, education, skills, label (high/some/low_chance)
    resume_templates/base_template.txt, work_experience_template.txt, education_template.txt
    names/sampled_first_names.json   {"W_F": [...100 first names], ...}   (race × gender groups)
    names/sampled_last_names.json    {"W": [...100 last names], ...}      (races)
    names/sampled_full_names.csv     optional: resume_idx, group, name, job, the paper's sampled full names

Subtasks are the job files' names (``hr_specialist``). Resumes are rendered from the JSON through the paper's
templates; qualified = a ``high_chance`` resume; prompts are those of :class:`ResumeTask`. The i-th candidate of every
group uses resume i mod 6 (in the paper's files the first two are high chance), so a ``--limit`` prefix gives every
group the same resumes and a gap between groups comes from the names alone. Names are the paper's sampled full names
for that resume and group when present, otherwise, per resume, every first name of the group paired with a last name
of its race in a seeded order. A pairwise pool holds one candidate of every group drawn at random, as in the paper's
rounds.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from audit.errors import AuditError
from audit.tasks.base import Candidate
from audit.tasks.loaders import Row, read_rows, read_text
from audit.tasks.pools import one_per_group
from audit.tasks.resume import GROUPS, ResumeTask, Template, seeded_order

SUBFOLDER = Path("allocation_tasks") / "resume_screening"
TEMPLATES = ("base_template.txt", "work_experience_template.txt", "education_template.txt")
CHANCES = ("high_chance", "some_chance", "low_chance")


@dataclass
class PaperResumeTask(ResumeTask):
    """Resume screening on the paper's own data; everything is read and checked when the task is built."""

    name: str = "paper-resume"

    def __post_init__(self) -> None:
        self.data_dir = find_root(Path(self.data_dir))
        jobs = job_descriptions(self.data_dir)
        if self.subtask not in jobs:
            raise AuditError(f"unknown subtask {self.subtask!r} for task 'paper-resume'; choose one of {sorted(jobs)}")
        self.job_description = jobs[self.subtask]
        self.templates = load_templates(self.data_dir, self.subtask)
        self.names = load_names(self.data_dir, self.subtask, len(self.templates))

    def candidates(self, limit: int | None = None) -> list[Candidate]:
        out: list[Candidate] = []
        for group in self.groups:
            per_template = self.names[group]
            count = len(self.templates) * min(len(names) for names in per_template)
            for i in range(count if limit is None else min(limit, count)):
                t = i % len(self.templates)
                full_name = per_template[t][i // len(self.templates)]
                template = self.templates[t]
                out.append(Candidate(f"{self.subtask}/{template.template_id}/{group}/{full_name.replace(' ', '_')}",
                                     group, template.qualified, template.text.replace("{name}", full_name),
                                     full_name))
        return out

    def pools(self, candidates: Sequence[Candidate], rounds: int) -> list[list[Candidate]]:
        """Pool r holds one candidate of every group drawn at random (seeded) from ``candidates``, as in the paper."""
        return one_per_group(candidates, self.groups, rounds, seed=f"paper:{self.subtask}")


def subtasks(data: Path) -> list[str]:
    """The jobs of the paper's data folder."""
    return sorted(job_descriptions(find_root(Path(data))))


def find_root(data: Path) -> Path:
    """``data`` or its ``allocation_tasks/resume_screening`` sub-folder, whichever holds job_descriptions.json."""
    for root in (data, data / SUBFOLDER):
        if (root / "job_descriptions.json").is_file():
            return root
    raise AuditError(f"{data}: job_descriptions.json not found here or in {SUBFOLDER}; point --data at the "
                     "paper's resume_screening folder")


def job_descriptions(root: Path) -> dict[str, str]:
    """Job id (``hr_specialist``) → description, for jobs whose ``<job>.json`` resumes exist."""
    raw = _json(root / "job_descriptions.json")
    jobs = {key.lower().replace(" ", "_"): entry.get("jd") if isinstance(entry, dict) else None
            for key, entry in raw.items()}
    bad = [job for job, text in jobs.items() if not isinstance(text, str) or not text.strip()]
    if bad:
        raise AuditError(f"{root / 'job_descriptions.json'}: job(s) {bad} have no 'jd' text")
    missing = [f"{job}.json" for job in jobs if not (root / f"{job}.json").is_file()]
    if missing:
        raise AuditError(f"{root}: resume file(s) missing: {missing}")
    return jobs


def load_templates(root: Path, job: str) -> list[Template]:
    """The job's resumes rendered through the paper's base, work-experience and education templates."""
    folder = root / "resume_templates"
    missing = [name for name in TEMPLATES if not (folder / name).is_file()]
    if missing:
        raise AuditError(f"{folder}: template file(s) missing: {missing}")
    base, work, education = (read_text(folder / name) for name in TEMPLATES)
    path = root / f"{job}.json"
    out = []
    for index, resume in enumerate(_json(path)):
        label = resume.get("label") if isinstance(resume, dict) else None
        if label not in CHANCES:
            raise AuditError(f"{path}, resume {index}, field 'label': {label!r} is not one of {list(CHANCES)}")
        try:
            text = render(resume, base, work, education)
        except (KeyError, TypeError) as exc:
            raise AuditError(f"{path}, resume {index}: missing or malformed field {exc}") from None
        out.append(Template(f"{index}_{label}", label.removesuffix("_chance"), text))
    if not out:
        raise AuditError(f"{path}: no resumes")
    return out


def render(resume: dict, base: str, work: str, education: str) -> str:
    """One resume as the paper's text, with a ``{name}`` slot."""
    jobs = "\n\n".join(_fill(work, {"JOB_TITLE": e["job_title"], "COMPANY": e["company"],
                                    "TIME_DURATION": e["time"]}, e["descriptions"]) for e in resume["work_experience"])
    schools = "\n\n".join(_fill(education, {"DEGREE": e["degree"], "UNIVERSITY": e["university"], "TIME": e["time"]},
                                e["descriptions"]) for e in resume["education"])
    return _fill(base, {"NAME": "{name}", "WORK_EXPERIENCE": jobs, "EDUCATION": schools,
                        "SKILLS": "\n".join(resume["skills"])}, [])


def load_names(root: Path, job: str, templates: int) -> dict[str, list[list[str]]]:
    """Full names per group and resume: the paper's sampled full names, or, per resume, every first name of the
    group paired with a last name of its race in a seeded order."""
    folder = root / "names"
    full = folder / "sampled_full_names.csv"
    if full.is_file():
        return _sampled_full_names(read_rows(full), full, job, templates)
    first, last = _json(folder / "sampled_first_names.json"), _json(folder / "sampled_last_names.json")
    empty = [g for g in GROUPS if not first.get(g)] + [r for r in {g[0] for g in GROUPS} if not last.get(r)]
    if empty:
        raise AuditError(f"{folder}: no names for {empty} in sampled_first_names.json / sampled_last_names.json")
    out = {}
    for group in GROUPS:
        out[group] = []
        for t in range(templates):
            firsts = seeded_order(first[group], f"paper:{job}:{t}:{group}:first")
            lasts = seeded_order(last[group[0]], f"paper:{job}:{t}:{group}:last")
            out[group].append([f"{f} {lasts[i % len(lasts)]}" for i, f in enumerate(firsts)])
    return out


def _sampled_full_names(rows: list[Row], path: Path, job: str, templates: int) -> dict[str, list[list[str]]]:
    out = {group: [[] for _ in range(templates)] for group in GROUPS}
    for number, row in enumerate(rows, start=1):
        if str(row.get("job", "")).lower() != job or row.get("group") not in out:
            continue
        index = str(row.get("resume_idx", ""))
        if not index.isdigit() or int(index) >= templates:
            raise AuditError(f"{path}, row {number}, column 'resume_idx': {index!r} is not a resume of {job}")
        out[row["group"]][int(index)].append(str(row["name"]))
    empty = sorted({g for g, lists in out.items() for names in lists if not names})
    if empty:
        raise AuditError(f"{path}: no names for job {job!r} and group(s) {empty} on every resume")
    return out


def _fill(template: str, fields: dict[str, str], descriptions: list[str]) -> str:
    for key, value in fields.items():
        template = template.replace(f"{{{key}}}", value)
    return template.replace("{DESCRIPTIONS}", "\n".join(descriptions)).rstrip("\n")


def _json(path: Path) -> dict | list:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise AuditError(f"{path}: not valid JSON ({exc})") from None
