"""The :class:`~audit.design.AuditDesign` of a task: read off a built task, or, for results stored before designs
were recorded, the design its task module defines today (derived from the stored groups and labels otherwise)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Sequence

import pandas as pd

from audit.design import WHOLE, AuditDesign, PoolDesign, PoolKind
from audit.errors import AuditError
from audit.tasks import TASKS, custom, essay, get_task, recorded, resume
from audit.tasks.base import Candidate, Task

_RESUME = AuditDesign("resume", "", "W_M", PoolDesign(PoolKind.PER_GROUP), ("Yes", "No"), (1.0, 0.0), resume.QUALIFICATION,
                      resume.GROUPINGS, names=resume.NAMES, counterfactual=True, quota=resume.QUOTA,
                      quota_reason=resume.QUOTA_REASON)
_ESSAY = AuditDesign("essay", "", essay.REFERENCE_GROUP, essay.POOLS, ("1", "2", "3", "4", "5"),
                     (1.0, 2.0, 3.0, 4.0, 5.0), essay.QUALIFICATION, essay.GROUPINGS, quota=essay.QUOTA,
                     quota_reason=essay.QUOTA_REASON)
#: the design each task module defines, for results stored without one (prompt hash unknown)
MODULE_DESIGNS = {"resume": _RESUME, "paper-resume": _RESUME, "essay": _ESSAY, "icnale": _ESSAY}


def design_of(task: Task) -> AuditDesign:
    """The design a run of ``task`` records with its plan."""
    return AuditDesign(task.name, task.subtask, task.reference_group, task.pool_design, tuple(task.label_set.labels),
                       tuple(float(v) for v in task.label_set.relevance), task.qualification, dict(task.groupings),
                       prompt_hash(task), dict(task.group_names), task.counterfactual, quota=task.quota,
                       quota_reason=task.quota_reason)


def prompt_hash(task: Task) -> str:
    """SHA-256 of the task's pointwise and pairwise prompts for placeholder candidates: its prompt templates."""
    first, second = (Candidate(f"{{id_{n}}}", f"{{group_{n}}}", True, f"{{text_{n}}}", f"{{name_{n}}}") for n in "ab")
    keys = [task.pointwise_prompt(first).key(), task.pairwise_prompt(first, second).key()]
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()


def completed(design: AuditDesign) -> AuditDesign:
    """``design`` with what its task module (or the importer that stored it) declares and it was stored without:
    display names, the counterfactual flag (a shipped task's design stored before names were recorded) and the
    audited quota (stored before quotas were)."""
    if design.quota is None and not design.quota_reason:
        design = replace(design, **recorded.declared_quota(design.qualification, design.labels),
                         **recorded.declared_kind(design.qualification))
    template = MODULE_DESIGNS.get(design.task)
    if template is None or template.groupings != design.groupings:
        return design
    if design.quota is None and not design.quota_reason:
        design = replace(design, quota=template.quota, quota_reason=template.quota_reason)
    if design.names:
        return design
    return replace(design, names=dict(template.names), counterfactual=template.counterfactual)


def declared_design(scores: pd.DataFrame) -> AuditDesign:
    """The design the task of a score table's first row declares (derived from its groups for a custom task)."""
    task, subtask = str(scores["task"].iloc[0]), str(scores["subtask"].iloc[0])
    return completed(derived_design(task, subtask, sorted(scores["group"].astype(str).unique()), None))


def derived_design(task: str, subtask: str, groups: Sequence[str], labels: str | None) -> AuditDesign:
    """The design of results stored without one: the shipped task's own when ``task`` and ``subtask`` are known, else
    its module's, else (a custom task) the stored labels (``labels``: JSON ``{label: relevance}``, None for pairwise
    results only) and per-group pools, with no groupings beyond whole codes (none was declared, so none is guessed
    from the codes) and the first group as reference, both said in ``undeclared``."""
    if task in TASKS:
        try:
            return design_of(get_task(task, subtask))
        except AuditError:
            pass  # a subtask the shipped data no longer has: the module's design below
    if task in MODULE_DESIGNS:
        template = MODULE_DESIGNS[task]
        return replace(template, task=task, subtask=subtask, groupings=dict(template.groupings))
    stored = json.loads(labels) if labels else {"Yes": 1.0, "No": 0.0}
    reference = sorted(groups)[0]
    undeclared = (f"task {task!r} was stored without a declared design, so its groups are compared as whole codes "
                  f"against the first, {reference!r}; score it again from its task spec to declare its groupings")
    return AuditDesign(task, subtask, reference, PoolDesign(PoolKind.PER_GROUP), tuple(stored),
                       tuple(float(v) for v in stored.values()), custom.QUALIFICATION, {WHOLE: None},
                       undeclared=undeclared)
