"""The registry of allocation tasks (read through :mod:`audit.tasks`).

``TASKS`` are the tasks that ship with their data (resume screening, the demo essays); ``DATA_TASKS`` read the
auditor's files: ``icnale`` (``data`` = folder), ``paper-resume`` (``data`` = folder) and ``custom`` (``data`` =
candidates file, ``spec`` = task spec). :func:`get_task` reads and validates everything before it returns.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, NamedTuple

from audit.errors import AuditError
from audit.tasks import custom, essay, icnale, paper_resume, resume
from audit.tasks.base import Task
from audit.tasks.resume import ResumeTask


class TaskEntry(NamedTuple):
    """How to build a task's subtasks and list them, and which inputs (``data``, ``spec``) it needs."""

    build: Callable[..., Task]
    subtasks: Callable[..., list[str]]
    needs: tuple[str, ...] = ()


TASKS = {
    "resume": TaskEntry(lambda subtask: ResumeTask(subtask=subtask), resume.subtasks),
    "essay": TaskEntry(essay.demo_task, essay.subtasks),
}
#: the colours task definitions fix for their group codes (others get the palette in order)
GROUP_COLOURS = dict(resume.COLOURS)
#: those colours by the groups' display names (the same group in another task's codes gets the same colour)
GROUP_NAME_COLOURS = dict(resume.NAMED_COLOURS)
DATA_TASKS = {
    "icnale": TaskEntry(icnale.icnale_task, icnale.subtasks, ("data",)),
    "paper-resume": TaskEntry(lambda subtask, data: paper_resume.PaperResumeTask(subtask=subtask, data_dir=data),
                              paper_resume.subtasks, ("data",)),
    "custom": TaskEntry(custom.custom_task, custom.subtasks, ("data", "spec")),
}


def get_task(name: str, subtask: str, *, data: str | Path | None = None, spec: str | Path | None = None) -> Task:
    """The task ``name`` for ``subtask``; an :class:`AuditError` names the valid choices otherwise."""
    entry, inputs = _entry(name, data, spec)
    return entry.build(subtask, **inputs)


def list_subtasks(name: str, *, data: str | Path | None = None, spec: str | Path | None = None) -> list[str]:
    """The subtasks of a task (for data tasks: those found in ``data``)."""
    entry, inputs = _entry(name, data, spec)
    return entry.subtasks(**inputs)


def _entry(name: str, data: str | Path | None, spec: str | Path | None) -> tuple[TaskEntry, dict[str, Path]]:
    entries = {**TASKS, **DATA_TASKS}
    if name not in entries:
        raise AuditError(f"unknown task {name!r}; choose one of {sorted(entries)}")
    entry = entries[name]
    given = {key: Path(value) for key, value in (("data", data), ("spec", spec)) if value is not None}
    problems = [f"missing --{key}" for key in entry.needs if key not in given]
    problems += [f"unexpected --{key}" for key in given if key not in entry.needs]
    if problems:
        wanted = " and ".join(f"--{key}" for key in entry.needs) or "no --data or --spec"
        raise AuditError(f"task {name!r} takes {wanted}: {', '.join(problems)}")
    return entry, given
