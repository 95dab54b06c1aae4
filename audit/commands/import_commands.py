"""``python -m audit import``: bring a deployed system's recorded decisions into the result store."""
from __future__ import annotations

import argparse
from pathlib import Path

from audit.errors import AuditError
from audit.recorded.naming import RANKING_RUN_NAMES, declare_names
from audit.recorded.ranking_runs import read_runs
from audit.recorded.storing import import_runs
from audit.store import Store

DEFAULT_TASK = "recorded"


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``import`` sub-command."""
    parser = sub.add_parser("import", help="import recorded rankings into the result store",
                            description="ranking-runs: <model>/<job>/<date>/*.json chat-completion responses with "
                                        "context.default_order and context.demo_order (the 2024 GPT hiring study's "
                                        "layout); each response is one pool, its job the subtask, its model the model.")
    parser.add_argument("--format", required=True, choices=("ranking-runs",))
    parser.add_argument("--data", required=True, help="folder of ranking runs")
    parser.add_argument("--task", default=DEFAULT_TASK, help=f"task name to store under (default {DEFAULT_TASK})")
    parser.add_argument("--reference", default="W_M", help="reference group (default W_M)")
    parser.add_argument("--db", default="results.db", help="result store (default results.db)")
    parser.set_defaults(handler=run_import)


def run_import(args: argparse.Namespace) -> int:
    """Read everything first (bad input writes nothing), then store it in one transaction and summarise."""
    if not args.task.strip():
        raise AuditError("--task: give a task name")
    runs = read_runs(args.data)
    with Store(args.db) as store:
        fingerprints = import_runs(store, runs, args.task, args.reference, source=Path(args.data).name)
        declare_names(store, args.task, RANKING_RUN_NAMES)
    print(f"imported {runs.files} ranking runs ({len(runs.rows)} ranked candidates) of "
          f"{', '.join(fingerprints)} into task {args.task!r} of {args.db}; dates {runs.first_date} to "
          f"{runs.last_date}; source sha256 {runs.digest}")
    print(f"partial replies (some name never mentioned; ranked last in the order shown, as the study reads them): "
          f"{len(runs.partial)} of {runs.files}")
    for path in runs.partial:
        print(f"  partial: {path}")
    return 0
