"""``python -m audit verdict``: the audit's answer per system × grouping × category at quota k, and overall."""
from __future__ import annotations

import argparse
import json

import pandas as pd

from audit.commands.io import emit, records, tables_from
from audit.engine.audit import Audit
from audit.commands.policy_options import add_policy, apply_policy
from audit.commands.options import add_bootstrap, add_output, add_selection, add_verdict_rule, selection_from
from audit.errors import AuditError
from audit.formatting import markdown_table, pvalue, ratio, subtask_name
from audit.engine.choices import FOUR_FIFTHS
from audit.engine.verdict import rollup, rule_text, store_line
from audit.present.readable import system_verdicts, verdict_words
from audit.store.output import csv_text
from audit.tasks.recorded import shown_modes
from audit.engine.selection import N_PERM
from audit.engine.tables import StoreTables


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``verdict`` sub-command."""
    parser = sub.add_parser("verdict", help="adverse impact / no evidence / inconclusive per system, grouping and "
                                            "category at quota k",
                            description=rule_text())
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", help="result store: its pointwise scores and each task's stored design")
    source.add_argument("--scores", help="a score table (.csv or .parquet) from `python -m audit scores`")
    add_selection(parser, k="one", k_help="quota k, below every grouping's pool size (default: the quota the task's "
                                          "design declares, e.g. 1 for the GPT hiring study)", groupings=True,
                  metrics=False)
    parser.add_argument("--threshold", type=float, default=FOUR_FIFTHS, help="impact-ratio threshold (default 0.8)")
    add_verdict_rule(parser)
    add_bootstrap(parser, ci_help="confidence level; α = 1 − ci", seed_help="bootstrap and permutation seed")
    parser.add_argument("--permutations", type=int, default=N_PERM, metavar="B",
                        help=f"label shuffles (default {N_PERM})")
    add_output(parser, ("json", "csv", "md"))
    add_policy(parser)
    parser.set_defaults(handler=run_verdict)


def _table(args: argparse.Namespace) -> pd.DataFrame:
    """The verdict rows of the store's task, or of a score file's task read with its group codes whole in per-group
    pools, at ``args.k`` (set here to the design's quota when not given, with ``args.quota_reason`` saying why)."""
    if args.mode != "pointwise":
        raise AuditError(f"--mode {args.mode}: verdicts are defined on pointwise scores")
    if args.scores:
        if args.grouping or args.models or args.subtasks or args.reference or args.policy:
            raise AuditError("--scores takes no --grouping, --reference, --models, --subtasks or --policy (use --db)")
        tables = tables_from(args, whole=True)
    else:
        tables = tables_from(args)
        apply_policy(args, tables)
    return verdict_rows(args, tables)


def verdict_rows(args: argparse.Namespace, tables: StoreTables) -> pd.DataFrame:
    """The verdict rows of ``tables`` under ``args``' selection, threshold and rule, at ``args.k`` (set here to the
    design's quota when not given, with ``args.quota_reason`` saying why): the one path ``verdict`` and ``check``
    share."""
    selection = selection_from(args, tables)
    args.k, args.quota_reason = tables.design(selection.task).audited_quota(args.k)
    return shown_modes(Audit(tables, selection).verdicts((args.k,), tuple(args.grouping or ()), args.threshold),
                       tables.designs)


def run_verdict(args: argparse.Namespace) -> int:
    """Handler of ``verdict``."""
    table = _table(args)
    if args.format == "csv":
        emit(csv_text(table), args.out)
        return 0
    overall = store_line(table)
    if args.format == "json":
        emit(json.dumps({"rule": rule_text(args.threshold, args.ci, args.family, args.rule), "k": args.k,
                         "quota_reason": args.quota_reason, "threshold": args.threshold, "ci": args.ci,
                         "family": args.family, "reading": args.rule, "overall": overall,
                         "systems": records(rollup(table)),
                         "categories": records(table)}, indent=1) + "\n", args.out)
    else:
        emit(_markdown(table, overall, args), args.out)
    return 0


def _markdown(table: pd.DataFrame, overall: dict[str, object], args: argparse.Namespace) -> str:
    """The Markdown page: the quota, the store-wide line, the rule, one table per system and one per category."""
    shown = pd.DataFrame({"System": table["model"], "Subtask": table["subtask"].map(subtask_name),
                          "Grouping": table["grouping"],
                          "Group": table["name"], "Candidates": table["candidates"],
                          "Impact ratio": [ratio(r, lo, hi, args.threshold) for r, lo, hi in
                                           zip(table["impact_ratio"], table["impact_ratio_lo"], table["impact_ratio_hi"])],
                          "p": table["p"].map(pvalue), "Adjusted p": table["p_adj"].map(pvalue),
                          "Verdict": table.apply(verdict_words, axis=1), "Why": table["evidence"]})
    return (f"# Verdict at k = {args.k}\n\nQuota: {args.quota_reason}.\n\n**Overall:** {overall['summary']}. "
            f"Reading: {args.rule}.\n\n"
            f"{rule_text(args.threshold, args.ci, args.family, args.rule)}\n\n## Per system\n\n"
            f"{markdown_table(system_verdicts(table))}\n## Per category\n\n{markdown_table(shown)}")
