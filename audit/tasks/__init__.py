"""Allocation tasks: raw task data → candidates → prompts. Tasks know nothing of models."""
from __future__ import annotations

from audit.errors import AuditError
from audit.tasks.base import Candidate, ChatPrompt, LabelSet, Task
from audit.tasks.resume import ResumeTask, subtasks as resume_subtasks

TASKS = {"resume": (ResumeTask, resume_subtasks)}


def get_task(name: str, subtask: str) -> Task:
    """The task ``name`` for ``subtask``; an :class:`AuditError` names the valid choices otherwise."""
    if name not in TASKS:
        raise AuditError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    return TASKS[name][0](subtask=subtask)


def list_subtasks(name: str) -> list[str]:
    """The subtasks a task ships with."""
    if name not in TASKS:
        raise AuditError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    return TASKS[name][1]()


__all__ = ["Candidate", "ChatPrompt", "LabelSet", "Task", "ResumeTask", "get_task", "list_subtasks", "TASKS"]
