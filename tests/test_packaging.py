"""The installable package: the ``audit`` console script, dependencies in step, bench scripts without PYTHONPATH."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = sorted((ROOT / "bench").glob("*.py"))
CONSOLE_SCRIPT = Path(sys.executable).parent / "audit"


def bare_env() -> dict[str, str]:
    """This environment without PYTHONPATH (what a user's shell has)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HF_HUB_OFFLINE": "1"}


def requirement_lines(name: str) -> list[str]:
    """The requirements of one pinned requirements file, comments and blank lines left out."""
    lines = (ROOT / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_pyproject_dependencies_mirror_the_requirements_files():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == requirement_lines("requirements.txt")
    assert project["optional-dependencies"]["models"] == requirement_lines("requirements-models.txt")
    assert project["optional-dependencies"]["dev"] == requirement_lines("requirements-dev.txt")
    assert project["scripts"] == {"audit": "audit.__main__:run"}


@pytest.mark.parametrize("script", BENCH, ids=[p.name for p in BENCH])
def test_bench_script_help_runs_without_pythonpath(script: Path):
    done = subprocess.run([sys.executable, str(script.relative_to(ROOT)), "--help"], cwd=ROOT, env=bare_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(),
                    reason=f"the project is not installed here (no {CONSOLE_SCRIPT}): `make test` installs it")
def test_console_script_runs_the_command_line(tmp_path):
    helped = subprocess.run([str(CONSOLE_SCRIPT), "--help"], cwd=tmp_path, env=bare_env(), capture_output=True,
                            text=True, timeout=300)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: audit ") and "verdict" in helped.stdout and "score" in helped.stdout
    bad = subprocess.run([str(CONSOLE_SCRIPT), "verdict", "--db", str(tmp_path / "missing.db")], cwd=tmp_path,
                         env=bare_env(), capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and len(bad.stderr.splitlines()) == 1, bad.stderr
