"""Add a small synthetic dated decision log to the demo store, so monitoring has something to show at once.

The log is SYNTHETIC (audit/recorded/synthetic.py, seeded): 3 jobs × 52 weeks × 150 decisions a job-week (23,400
decisions, 0/1 outcome, sex F/M, selection rate 0.3) from 2025-01-06, decided in requisitions of 10 applicants (the
pool column ``req``: a job's applicants of one week, in arrival order); job-03's women's rate falls to 0.6 of men's
from the 27th week on. It is imported with ``python -m audit import`` (its run recorded in the store's trail) as the
system ``synthetic-screener`` of task ``synthetic-dated-log`` (sorted after the GPT hiring study, which the
dashboard opens on); the source file is named ``synthetic-dated-log.csv``, so the provenance says what it is.
Run it once on a store (again, it replaces the log with the same one and records one more run).

    python scripts/add_demo_dated_log.py [--db data/demo.db]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from audit.cli import main  # noqa: E402
from audit.recorded.synthetic import POOLED_SPEC, dated_log  # noqa: E402

TASK, LABEL = "synthetic-dated-log", "synthetic-screener"


def add(db: str) -> int:
    """Import the synthetic log into ``db`` (a path from the project root); the import's exit status. The log and
    its spec are written under data/ for the import (so the trail names them as the project's files) and removed."""
    os.chdir(ROOT)
    data, spec = Path("data") / f"{TASK}.csv", Path("data") / f"{TASK}.yaml"
    try:
        spec.write_text(POOLED_SPEC)
        dated_log(3, 52, 150, drifts={2: (26, 0.6)}, seed=42, pool=10).to_csv(data, index=False)
        return main(["import", "--format", "decisions", "--data", str(data), "--spec", str(spec), "--task", TASK,
                     "--label", LABEL, "--db", db])
    finally:
        data.unlink(missing_ok=True)
        spec.unlink(missing_ok=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="data/demo.db", help="the store, from the project root (default data/demo.db)")
    raise SystemExit(add(parser.parse_args().db))
