"""Which result store the dashboard reads and writes: the default store, the version that keys its caches, and the
auditor's own copy of the shipped demo store (the demo itself is only ever read)."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from audit.paths import DEMO_STORE, cache_dir


def default_store() -> str:
    """``$AUDIT_DB`` if set, else the shipped demo store."""
    return os.environ.get("AUDIT_DB") or str(DEMO_STORE)


def store_version(path: str) -> tuple:
    """(mtime, size) of the store file and its WAL: changes whenever results are written."""
    stats = []
    for name in (path, path + "-wal"):
        try:
            stat = os.stat(name)
            stats.append((stat.st_mtime_ns, stat.st_size))
        except OSError:
            stats.append(None)
    return tuple(stats)


def user_store() -> Path:
    """The auditor's own store, where runs started on the shipped demo store go: a copy of the demo (made on first
    use, so the user's results sit beside the demo's) under the cache folder."""
    return cache_dir() / "my-results.db"


def is_demo(path: str) -> bool:
    """Whether ``path`` is the shipped demo store (never written)."""
    return Path(path).resolve() == DEMO_STORE.resolve()


def run_store(path: str) -> str:
    """The store a run started with ``path`` selected writes to: ``path`` itself, or for the demo store the user's
    own store, copied from the demo first (SQLite's backup, so the demo is only read)."""
    if not is_demo(path):
        return path
    target = user_store()
    if not target.exists():
        with sqlite3.connect(f"file:{DEMO_STORE}?mode=ro", uri=True) as source, sqlite3.connect(target) as copy:
            source.backup(copy)
    return str(target)
