"""``python -m audit verdict``: the audit's answer per system × grouping × category at quota k, and overall."""
from __future__ import annotations

import argparse
import json

import pandas as pd

from audit.commands.io import emit, read_table_file, records
from audit.commands.options import add_bootstrap, add_filters, add_output, add_verdict_rule
from audit.errors import AuditError
from audit.formatting import markdown_table, pvalue, ratio
from audit.metrics.impact import FOUR_FIFTHS
from audit.audit_verdict import verdict_table
from audit.design import WHOLE
from audit.metrics.verdict import rollup, rule_text, verdicts
from audit.readable import system_verdicts, verdict_words
from audit.output import csv_text
from audit.store import Store
from audit.tasks.designs import declared_design
from audit.selection import N_PERM, Selection
from audit.views import StoreTables


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``verdict`` sub-command."""
    parser = sub.add_parser("verdict", help="adverse impact / no evidence / inconclusive per system, grouping and "
                                            "category at quota k",
                            description=rule_text())
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", help="result store: its pointwise scores and each task's stored design")
    source.add_argument("--scores", help="a score table (.csv or .parquet) from `python -m audit scores`")
    parser.add_argument("--task", help="with --db: the task to audit (default: the store's only task)")
    add_filters(parser, scope="with --db: ")
    parser.add_argument("--k", type=int, help="quota k, below every grouping's pool size (default: the quota the "
                                              "task's design declares, e.g. 1 for the GPT hiring study)")
    parser.add_argument("--pool", help="per-group, random:N (with --db: overrides the stored design)")
    parser.add_argument("--grouping", action="append", help="with --db: a grouping the task declares, e.g. race "
                        "(repeatable; default: every one whose pools exceed k)")
    parser.add_argument("--threshold", type=float, default=FOUR_FIFTHS, help="impact-ratio threshold (default 0.8)")
    add_verdict_rule(parser)
    add_bootstrap(parser, ci_help="confidence level; α = 1 − ci", seed_help="bootstrap and permutation seed")
    parser.add_argument("--permutations", type=int, default=N_PERM, metavar="B",
                        help=f"label shuffles (default {N_PERM})")
    add_output(parser, ("json", "csv", "md"))
    parser.set_defaults(handler=run_verdict)


def _table(args: argparse.Namespace) -> pd.DataFrame:
    """The verdict rows of the store's task, or of a score file read with its group codes whole, at ``args.k``
    (set here to the design's quota when not given, with ``args.quota_reason`` saying why)."""
    if args.scores:
        if args.task or args.grouping or args.models or args.subtasks:
            raise AuditError("--scores takes no --task, --grouping, --models or --subtasks (use --db)")
        scores = read_table_file(args.scores, "score table")
        scores = scores[scores["mode"].astype(str) == "pointwise"] if "mode" in scores else scores
        if scores.empty:
            raise AuditError(f"score table {args.scores} has no pointwise scores")
        args.k, args.quota_reason = declared_design(scores).audited_quota(args.k)
        table = verdicts(scores, grouping=WHOLE, k=args.k, pool=args.pool or "per-group", threshold=args.threshold,
                         ci=args.ci, n_boot=args.bootstrap, n_perm=args.permutations, seed=args.seed,
                         family=args.family, rule=args.rule)
        return table.assign(name=table["category"])
    with Store(args.db, create=False) as store:
        tables = StoreTables.read(store)
    task = tables.task(args.task)
    pointwise = tables.scores[(tables.scores["task"] == task) & (tables.scores["mode"] == "pointwise")]
    for column, chosen in (("model", args.models), ("subtask", args.subtasks)):
        known = set(pointwise[column].astype(str))
        missing = [c for c in chosen if c not in known]
        if missing:
            raise AuditError(f"{column} {missing[0]!r} has no pointwise scores for task {task!r}; {column}s are: "
                             f"{', '.join(sorted(known))}")
    selection = Selection(task, models=tuple(args.models), subtasks=tuple(args.subtasks), pool=args.pool, ci=args.ci,
                          n_boot=args.bootstrap, n_perm=args.permutations, seed=args.seed, family=args.family,
                          rule=args.rule)
    args.k, args.quota_reason = tables.design(task).audited_quota(args.k)
    return verdict_table(tables, selection, k=args.k, groupings=args.grouping or (), threshold=args.threshold)


def run_verdict(args: argparse.Namespace) -> int:
    """Handler of ``verdict``."""
    table = _table(args)
    systems, overall = rollup(table), rollup(table, by=[])
    if args.format == "csv":
        emit(csv_text(table), args.out)
    elif args.format == "json":
        emit(json.dumps({"rule": rule_text(args.threshold, args.ci, args.family, args.rule), "k": args.k,
                         "quota_reason": args.quota_reason, "threshold": args.threshold, "ci": args.ci,
                         "family": args.family, "reading": args.rule, "overall": records(overall)[0],
                         "systems": records(systems),
                         "categories": records(table)}, indent=1) + "\n", args.out)
    else:
        emit(_markdown(table, overall, args), args.out)
    return 0


def _markdown(table: pd.DataFrame, overall: pd.DataFrame, args: argparse.Namespace) -> str:
    shown = pd.DataFrame({"System": table["model"], "Subtask": table["subtask"], "Grouping": table["grouping"],
                          "Group": table["name"], "Candidates": table["candidates"],
                          "Impact ratio": [ratio(r, lo, hi) for r, lo, hi in
                                           zip(table["impact_ratio"], table["impact_ratio_lo"], table["impact_ratio_hi"])],
                          "p": table["p"].map(pvalue), "Adjusted p": table["p_adj"].map(pvalue),
                          "Verdict": table.apply(verdict_words, axis=1), "Why": table["evidence"]})
    return (f"# Verdict at k = {args.k}\n\nQuota: {args.quota_reason}.\n\n**Overall: {overall['verdict'].iloc[0]}** "
            f"(family: {args.family}, reading: {args.rule})\n\n"
            f"{rule_text(args.threshold, args.ci, args.family, args.rule)}\n\n## Per system\n\n"
            f"{markdown_table(system_verdicts(table))}\n## Per category\n\n{markdown_table(shown)}")
