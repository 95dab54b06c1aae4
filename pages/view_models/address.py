"""The page address (query parameters) and each task's quota k as a session keeps them: pure functions of the
session state (any mutable mapping), so the pages stay glue and the rules are tested without a browser."""
from __future__ import annotations

from collections.abc import Mapping, MutableMapping

#: session keys: each task's k; the task the k slider last showed; the address's parameters when the session opened
QUOTAS, QUOTA_TASK, OPENED = "_quotas", "_quota_task", "_opened_address"


def opened_task(state: Mapping, tasks: list[str]) -> str | None:
    """The task the session's opening address names, when the store holds it."""
    task = state.get(OPENED, {}).get("task")
    return task if task in tasks else None


def start_quota(state: MutableMapping, key: str, task: str, default: int, top: int) -> None:
    """Before the k slider ``key`` is drawn: on a task switch or the page's first draw, start it at the task's own k
    (the last chosen, else the opening address's when it names ``task``, else ``default``), within 1 … ``top``."""
    if state.get(QUOTA_TASK) != task or key not in state:
        opened = state.get(OPENED, {})
        k = str(opened.get("k", ""))
        from_address = int(k) if opened.get("task") == task and k.isascii() and k.isdigit() else None
        state[key] = max(1, min(state.setdefault(QUOTAS, {}).get(task) or from_address or default, top))
    state[QUOTA_TASK] = task


def keep_quota(state: MutableMapping, params: MutableMapping, task: str, k: int) -> None:
    """Remember ``k`` as ``task``'s own, and put it into the page address (``params``: its query parameters)."""
    state.setdefault(QUOTAS, {})[task] = k
    params["k"] = str(k)
