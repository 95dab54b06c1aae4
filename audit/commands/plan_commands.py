"""``python -m audit plan``: candidates per group needed for a target CI half-width of ΔDP at k, from a pilot run."""
from __future__ import annotations

import argparse
import json

import pandas as pd

from audit.errors import AuditError
from audit.output import csv_text
from audit.commands.io import emit, read_table_file, records
from audit.commands.options import add_bootstrap, add_output
from audit.metrics.planner import SIZES, plan
from audit.store_tables import score_table
from audit.store import Store
from audit.views import one_task


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``plan`` sub-command."""
    parser = sub.add_parser("plan", help="CI half-width of ΔDP at k against candidates per group, from a pilot run",
                            description="Resamples each group's pilot candidates to n per group and computes ΔDP at "
                                        "k exactly for every draw: the CI half-width for each n, and the n needed "
                                        "per group for the widest group to reach --target.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--scores", help="pilot score table (.csv or .parquet) from `python -m audit scores`")
    source.add_argument("--db", help="pilot result store (SQLite)")
    parser.add_argument("--task", help="the task to plan for (required when the store holds several)")
    parser.add_argument("--reference", required=True, help="reference group (a group code of the scores)")
    parser.add_argument("--k", type=int, default=2, help="quota k (default 2)")
    parser.add_argument("--target", type=float, default=0.05, help="target CI half-width of ΔDP (default 0.05)")
    parser.add_argument("--mode", default="pointwise", help="scoring mode of the pilot rows (default pointwise)")
    parser.add_argument("--pool", default="per-group", help="per-group (default) or random:N")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="candidates per group to evaluate")
    add_bootstrap(parser, replicates=200, replicates_help="resampled pilots per size", seed_help="seed")
    add_output(parser, ("json", "csv"), format_help="json: summary and curve; csv: the summary table only")
    parser.set_defaults(handler=run_plan)


def _sizes(text: str) -> list[int]:
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise AuditError(f"--sizes: {text!r} must be positive whole numbers separated by commas, e.g. 8,16,32")
    return [int(p) for p in parts]


def _pilot(args: argparse.Namespace) -> pd.DataFrame:
    if args.scores:
        scores = read_table_file(args.scores, "score table")
    else:
        with Store(args.db, create=False) as store:
            scores = score_table(store)
        task = one_task(sorted(scores["task"].unique()), args.task)
        scores = scores[scores["task"] == task]
    if "mode" not in scores:
        raise AuditError("score table is missing column(s): mode")
    rows = scores[scores["mode"].astype(str) == args.mode]
    if rows.empty:
        modes = sorted(scores["mode"].astype(str).unique())
        raise AuditError(f"no pilot rows in mode {args.mode!r}; the scores hold {', '.join(modes) or 'nothing'}")
    return rows


def run_plan(args: argparse.Namespace) -> int:
    """Handler of ``plan``."""
    sizes = _sizes(args.sizes)
    curve, summary = plan(_pilot(args), reference=args.reference, k=args.k, target=args.target, pool=args.pool,
                          sizes=sizes, n_boot=args.bootstrap, level=args.ci, seed=args.seed)
    if args.format == "csv":
        emit(csv_text(summary), args.out)
    else:
        result = {"k": args.k, "target": args.target, "level": args.ci, "pool": args.pool,
                  "summary": records(summary), "curve": records(curve)}
        emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0
