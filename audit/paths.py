"""Where the project's shipped data and the user's caches live, and how a report prints a path."""
from __future__ import annotations

import os
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
DEMO_STORE = DATA_DIR / "demo.db"


def cache_dir() -> Path:
    """Root of converted-model caches: ``$AUDIT_CACHE_DIR`` or ``~/.cache/allocation-audit``."""
    root = os.environ.get("AUDIT_CACHE_DIR") or Path.home() / ".cache" / "allocation-audit"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def portable_path(path: str) -> str:
    """A path as a report may print it, naming nothing of the machine that built the store: relative paths as they
    are, a file under the working directory relative to it, an installed package's file from ``site-packages/``, any
    other absolute path by its file name."""
    if not path or not Path(path).is_absolute():
        return path
    try:
        return Path(path).relative_to(Path.cwd()).as_posix()
    except ValueError:
        pass
    marker = "site-packages/"
    return path[path.index(marker):] if marker in path else Path(path).name
