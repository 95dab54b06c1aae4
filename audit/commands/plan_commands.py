"""``python -m audit plan``: candidates per group needed for a target CI half-width of ΔDP at k, from a pilot run."""
from __future__ import annotations

import argparse
import json


from audit.engine.audit import Audit
from audit.errors import AuditError
from audit.store.output import csv_text
from audit.commands.io import emit, records, tables_from
from audit.commands.options import add_bootstrap, add_output, add_selection, selection_from
from audit.engine.choices import SIZES


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``plan`` sub-command."""
    parser = sub.add_parser("plan", help="CI half-width of ΔDP at k against candidates per group, from a pilot run",
                            description="Resamples each group's pilot candidates to n per group and computes ΔDP at "
                                        "k exactly for every draw: the CI half-width for each n, and the n needed "
                                        "per group for the widest group to reach --target.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--scores", help="pilot score table (.csv or .parquet) from `python -m audit scores`")
    source.add_argument("--db", help="pilot result store (SQLite)")
    add_selection(parser, k="one", k_help="quota k (default: the quota the task's design declares)", metrics=False)
    parser.add_argument("--target", type=float, default=0.05, help="target CI half-width of ΔDP (default 0.05)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="candidates per group to evaluate")
    add_bootstrap(parser, replicates=200, replicates_help="resampled pilots per size", seed_help="seed")
    add_output(parser, ("json", "csv"), format_help="json: summary and curve; csv: the summary table only")
    parser.set_defaults(handler=run_plan)


def _sizes(text: str) -> list[int]:
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise AuditError(f"--sizes: {text!r} must be positive whole numbers separated by commas, e.g. 8,16,32")
    return [int(p) for p in parts]


def run_plan(args: argparse.Namespace) -> int:
    """Handler of ``plan``: the selection's audit plans from its pilot rows under the stored (or declared) pool
    design unless ``--pool``."""
    sizes = _sizes(args.sizes)
    tables = tables_from(args, pools=None)  # the pilot's declared pools
    selection = selection_from(args, tables)
    modes = sorted(set(tables.scores.loc[tables.scores["task"] == selection.task, "mode"].astype(str)))
    if selection.mode not in modes:
        raise AuditError(f"no pilot rows in mode {str(selection.mode)!r}; the scores hold "
                         f"{', '.join(modes) or 'nothing'}")
    audit = Audit(tables, selection)
    k = tables.design(selection.task).audited_quota(selection.ks[0] if selection.ks else None)[0]
    curve, summary = audit.plan(k, target=args.target, sizes=sizes, n_boot=selection.n_boot, level=selection.ci)
    if args.format == "csv":
        emit(csv_text(summary), args.out)
    else:
        result = {"k": k, "target": args.target, "level": selection.ci, "pool": audit.pool,
                  "summary": records(summary), "curve": records(curve)}
        emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0
