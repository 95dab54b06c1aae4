"""Allocation tasks: raw task data → candidates → prompts. Tasks know nothing of models.

The names below are imported from their modules on first use (PEP 562; the registry of tasks is
:mod:`audit.tasks.registry`), so a module of the package (``audit.tasks.specs``, ``audit.tasks.loaders``, …) loads
without every task module.
"""
from __future__ import annotations

import importlib
from typing import Any

_HOMES = {**dict.fromkeys(("Candidate", "ChatPrompt", "LabelSet", "Task"), "audit.tasks.base"),
          "ResumeTask": "audit.tasks.resume",
          **dict.fromkeys(("TaskEntry", "get_task", "list_subtasks", "TASKS", "DATA_TASKS", "GROUP_COLOURS",
                           "GROUP_NAME_COLOURS"), "audit.tasks.registry")}
__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
