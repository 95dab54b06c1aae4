"""``import --append`` against a full re-import (seeded synthetic dated 0/1 log, audit/recorded/synthetic.py).

A log of about 1,000,000 decisions (25 jobs × 100 weeks × 400 a job-week) is imported into a fresh store; then one
more week (25 jobs × 400 = 10,000 decisions) is (a) appended to it and (b) imported again whole with the stored
weeks, into another fresh store, as a nightly job without ``--append`` would. Both through the CLI in-process;
the times printed are wall-clock.

Usage (from the project root): python bench/append.py [--jobs 25] [--weeks 100] [--per-week 400]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from audit.cli import main  # noqa: E402
from audit.recorded.synthetic import SPEC, dated_log  # noqa: E402


def timed_import(folder: Path, data: Path, db: Path, *append: str) -> float:
    argv = ["import", "--format", "decisions", "--data", str(data), "--spec", str(folder / "spec.yaml"), "--task",
            "monitored", "--label", "screener", "--db", str(db), *append]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        if main(argv) != 0:
            raise SystemExit(f"import failed: {' '.join(argv)}")
    return time.perf_counter() - start


def run(jobs: int, weeks: int, per_week: int) -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "spec.yaml").write_text(SPEC)
        stored = dated_log(jobs, weeks, per_week, seed=1)
        week = dated_log(jobs, 1, per_week, seed=2, first_id=len(stored), first_week=weeks)
        stored.to_csv(folder / "stored.csv", index=False)
        week.to_csv(folder / "week.csv", index=False)
        pd.concat([stored, week]).to_csv(folder / "whole.csv", index=False)
        first = timed_import(folder, folder / "stored.csv", folder / "appended.db")
        append = timed_import(folder, folder / "week.csv", folder / "appended.db", "--append")
        whole = timed_import(folder, folder / "whole.csv", folder / "whole.db")
        print(f"log: {len(stored):,} decisions stored ({jobs} jobs × {weeks} weeks × {per_week}), one week appended: "
              f"{len(week):,} decisions")
        print(f"first import of the stored log:          {first:7.2f} s")
        print(f"full re-import with the new week:        {whole:7.2f} s")
        print(f"import --append of the new week:         {append:7.2f} s")
        print(f"ratio (full re-import / append):         {whole / append:7.1f}×")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=25)
    parser.add_argument("--weeks", type=int, default=100)
    parser.add_argument("--per-week", type=int, default=400)
    options = parser.parse_args()
    run(options.jobs, options.weeks, options.per_week)
