"""Hardening round 2 (issue 22): nothing hangs when the browser cannot start, and a failed report keeps the last one."""
from __future__ import annotations

import os
import re
import sqlite3
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.paths import DEMO_STORE

ROOT = Path(__file__).resolve().parent.parent


def dead_browser(folder: Path) -> str:
    script = folder / "chrome"
    script.write_text("#!/bin/sh\nexit 1\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("browser", ["missing", "exits at once"])
def test_report_without_a_working_browser_fails_in_seconds_and_keeps_the_previous_report(tmp_path, browser):
    store = tmp_path / "store.db"
    shutil.copyfile(DEMO_STORE, store)
    report = tmp_path / "report.html"
    report.write_text("previous report")
    path = str(tmp_path / "no-chrome") if browser == "missing" else dead_browser(tmp_path)
    env = {**os.environ, "BROWSER_PATH": path, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "audit", "report", "--db", str(store), "--task", "resume",
                           "--out", str(report)], capture_output=True, text=True, env=env, timeout=120)
    assert time.monotonic() - started < 60
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: static export needs"), done.stderr
    assert report.read_text() == "previous report"


@pytest.mark.parametrize("logprob, error", [
    ("inf", r"non-finite label probabilities"),
    ("5", r"impossible label probabilities .* a log-probability above 0"),
    ("abc", r"malformed log-probabilities"),
])
def test_garbage_log_probabilities_stop_the_run_and_nothing_is_cached(tmp_path, logprob, error):
    from served import served

    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    db = tmp_path / "store.db"
    with served("builtin", env, extra=("--logprob", logprob)) as (url, _):
        done = subprocess.run([sys.executable, "-m", "audit", "score", "--subtask", "retail", "--limit", "1",
                               "--model", "openai:smollm2-135m", "--base-url", url, "--db", str(db)],
                              capture_output=True, text=True, env=env, timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and len(lines) == 1 and re.search(error, lines[0]), done.stderr
    if db.exists():  # nothing scored was cached
        with sqlite3.connect(db) as connection:
            assert connection.execute("SELECT COUNT(*) FROM label_results").fetchone()[0] == 0
