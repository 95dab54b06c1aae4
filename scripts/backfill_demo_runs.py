"""Backfill the audit trail of a demo store built before runs were recorded: one run per step of its build
(scripts/build_demo_store.sh, scripts/build_demo_cairo.sh, scripts/build_demo_recorded.py), each dated by the first
result it stored, with the build script's options, what it read (fingerprints as the store computes them now) and the
rows it left, its note saying it was backfilled. A store that already records runs is left alone; a rebuilt demo
store needs none of this (every command of the build records its own run).

    python scripts/backfill_demo_runs.py [--db data/demo.db]
"""
from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from audit.store.database import Store
from audit.store.runs import Run, append, data_reads

ROOT = Path(__file__).resolve().parent.parent
NOTE = ("backfilled by scripts/backfill_demo_runs.py from the store's rows and the build scripts: at = its first "
        "stored result, version = the last commit before it")
RESUME = {"task": "resume", "subtask": "all", "mode": "pointwise", "db": "data/demo.db"}
SMOLLM, QWEN, GEMMA, SMOLLM_4BIT = "da7365f946a75623", "c09c5c429a1d05f6", "df179c1f5a89c630", "ba708e547cca7c53"


def pointwise(fingerprint: str) -> tuple[str, dict[str, str]]:
    where = f"model = '{fingerprint}'"
    return f"SELECT MIN(created) FROM label_results WHERE {where}", {"label_results": where, "pointwise_plan": where}


def pairwise(method: str) -> tuple[str, dict[str, str]]:
    where = f"model = '{SMOLLM}' AND method = '{method}'"
    return f"SELECT MIN(created) FROM choice_results WHERE {where}", {"choice_results": where, "pairwise_plan": where}


#: (action, options, (task, label[, subtask]) it read or None for CAIRO, (SQL of its first result's time,
#: table → WHERE of the rows it wrote))
STEPS = [
    ("score", {**RESUME, "model": "smollm2-135m", "limit": 12}, ("resume", "smollm2-135m"), pointwise(SMOLLM)),
    ("score", {**RESUME, "model": "qwen2.5-coder-0.5b", "limit": 12}, ("resume", "qwen2.5-coder-0.5b"),
     pointwise(QWEN)),
    ("score", {**RESUME, "model": "gemma3-270m", "limit": 12}, ("resume", "gemma3-270m"), pointwise(GEMMA)),
    ("score", {**RESUME, "model": "smollm2-135m", "quant": "4bit", "limit": 8}, ("resume", "smollm2-135m@4bit"),
     pointwise(SMOLLM_4BIT)),
    ("score", {**RESUME, "model": "smollm2-135m", "subtask": "software_engineer", "mode": "pairwise",
               "pairwise_mode": "likelihood", "rounds": 6}, ("resume", "smollm2-135m", "software_engineer"),
     pairwise("likelihood")),
    ("score", {**RESUME, "model": "smollm2-135m", "subtask": "software_engineer", "mode": "pairwise",
               "pairwise_mode": "generate", "rounds": 5}, ("resume", "smollm2-135m", "software_engineer"),
     pairwise("generate")),
    ("cairo run", {"prompts": "data/cairo", "models": "smollm2-135m,qwen2.5-coder-0.5b,gemma3-270m",
                   "db": "data/demo.db", "max_new_tokens": 16, "min_new_tokens": 5, "temperature": 1.0, "top_p": 1.0,
                   "seed": 0, "samples": 1}, None,
     ("SELECT MIN(created) FROM cairo_continuations", {"cairo_plan": "1", "cairo_continuations": "1",
                                                       "cairo_toxicity": "1"})),
    ("import", {"format": "ranking-runs", "data": "bloomberg-gpt-hiring/data/intermediary/resume_ranking",
                "task": "study-gpt-hiring", "db": "data/demo.db"}, ("study-gpt-hiring", ""),
     ("SELECT MIN(created) FROM models WHERE fingerprint LIKE 'rec-%'",
      {"recorded_systems": "1", "recorded_decisions": "1"})),
]


def commit_before(seconds: float) -> str:
    """The project's last commit before ``seconds`` (its 12 first hex digits), or ``unknown``."""
    when = datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")
    done = subprocess.run(["git", "rev-list", "-1", f"--before={when}", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    return f"git {done.stdout.strip()[:12]}" if done.returncode == 0 and done.stdout.strip() else "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default=str(ROOT / "data" / "demo.db"), help="the demo store (default data/demo.db)")
    args = parser.parse_args(argv)
    with Store(args.db) as store:
        if store.row_counts()["runs"]:
            print(f"{args.db} already records its runs; nothing backfilled")
            return 0
        runs = []
        for action, options, reads, (first_sql, wrote) in STEPS:
            first = store.db.execute(first_sql).fetchone()[0]
            rows = {name: store.db.execute(f"SELECT COUNT(*) FROM {name} WHERE {where}").fetchone()[0]
                    for name, where in wrote.items()}
            run = Run(action, options)
            if reads is None:
                run.reads = {"systems": dict(store.db.execute(
                    "SELECT label, fingerprint FROM models WHERE fingerprint IN (SELECT model FROM "
                    "cairo_continuations) ORDER BY label").fetchall()), "prompts": "data/cairo",
                    "toxicity": store.db.execute("SELECT MIN(scorer) FROM cairo_toxicity").fetchone()[0]}
            else:
                task, label, *subtasks = reads
                run.reads = data_reads(store, task, subtasks, [label] if label else [])
            runs.append((first, run, rows))
        for first, run, rows in sorted(runs, key=lambda item: item[0]):
            append(store, run, rows, note=NOTE, version=commit_before(first),
                   at=datetime.fromtimestamp(first, timezone.utc).isoformat(timespec="seconds"))
    with sqlite3.connect(args.db) as connection:  # fold the WAL in: the file that ships is the whole store
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    print(f"{args.db}: {len(runs)} backfilled runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
