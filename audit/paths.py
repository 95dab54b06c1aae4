"""Where the project's shipped data and the user's caches live."""
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
