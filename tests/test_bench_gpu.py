"""bench/gpu.py runs end to end on CPU with its tiny shape: a random-init model saved locally, scored in both
precisions with and without the shared-prefix cache."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="bitsandbytes is not installed")
def test_tiny_shape_runs_on_cpu():
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # (bench/gpu.py puts the project on its path itself)
    result = subprocess.run([sys.executable, "bench/gpu.py", "--tiny", "--prompts", "3"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("tiny ")]
    assert len(rows) == 4
    assert {(r[1], r[-4]) for r in rows} == {("fp32", "on"), ("fp32", "off"), ("4-bit", "on"), ("4-bit", "off")}
    assert all(float(r[-3]) > 0 and float(r[-2]) > 0 for r in rows)
