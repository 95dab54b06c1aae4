"""The child processes this process started, and ending them with everything they started in turn."""
from __future__ import annotations

import os
import signal
from pathlib import Path


def children() -> set[int]:
    """Process ids whose parent is this process (read from ``/proc``; empty where there is none)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if int(fields[1]) == os.getpid():
            found.add(int(stat.parent.name))
    return found


def kill_groups(pids: set[int]) -> None:
    """SIGKILL each of ``pids`` with its whole process group when it leads its own group (a browser started with
    ``start_new_session=True`` and its helpers), else the process alone; processes already gone are skipped."""
    for pid in pids:
        try:
            group = os.getpgid(pid)
            if group == pid and group != os.getpgrp():
                os.killpg(group, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
