"""``python -m audit verdict``: the audit's answer per system × grouping × category at quota k, and overall."""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace

import pandas as pd

from audit.commands.io import emit, records, tables_from
from audit.engine.audit import Audit
from audit.commands.policy_options import add_policy, apply_policy, policy_of
from audit.commands.options import add_bootstrap, add_output, add_selection, add_verdict_rule, selection_from
from audit.enums import Mode
from audit.errors import AuditError
from audit.formatting import at_quota, markdown_table, pvalue, ratio, subtask_name
from audit.engine.choices import FOUR_FIFTHS
from audit.engine.verdict import rollup, rule_text, store_line
from audit.present.readable import system_verdicts, verdict_words
from audit.store.output import csv_text
from audit.tasks.recorded import shown_modes
from audit.engine.selection import N_PERM, Selection
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


def _judged(args: argparse.Namespace) -> Judged:
    """The verdict of the store's task, or of a score file's task read with its group codes whole in per-group
    pools."""
    if args.scores:
        if args.grouping or args.models or args.subtasks or args.reference or args.policy:
            raise AuditError("--scores takes no --grouping, --reference, --models, --subtasks or --policy (use --db)")
        tables = tables_from(args, whole=True)
    else:
        policy = policy_of(args)
        tables = tables_from(args)
        apply_policy(args, policy, tables)
    return verdict_rows(tables, selection_from(args, tables), args.threshold, tuple(args.grouping or ()))


@dataclass(frozen=True)
class Judged:
    """A verdict as the commands print it: the selection judged (its one quota in ``ks``), why that quota, the
    threshold, the verdict rows and whether no quota moves its selections
    (:attr:`audit.engine.audit.Audit.quota_free`)."""

    selection: Selection
    quota_reason: str
    threshold: float
    table: pd.DataFrame
    quota_free: bool = False

    @property
    def where(self) -> str:
        """``at k = 1``, or ``on the recorded decisions``."""
        return at_quota(self.k, self.quota_free)

    @property
    def k(self) -> int:
        return self.selection.ks[0]


def verdict_rows(tables: StoreTables, selection: Selection, threshold: float = FOUR_FIFTHS,
                 groupings: tuple[str, ...] = ()) -> Judged:
    """The verdict of ``selection`` on ``tables`` under ``threshold`` (``groupings``: those judged, default every one
    whose pools exceed k) at the selection's quota, or the design's when it names none: the one path ``verdict``
    and ``check`` share."""
    if selection.mode != Mode.POINTWISE:
        raise AuditError(f"--mode {selection.mode}: verdicts are defined on pointwise scores")
    audit = Audit(tables, replace(selection, ks=()))
    k, reason = audit.audited_quota(selection.ks[0] if selection.ks else None)
    selection = replace(selection, ks=(k,))
    table = shown_modes(audit.verdicts((k,), groupings, threshold), tables.designs)
    return Judged(selection, reason, threshold, table, audit.quota_free)


def run_verdict(args: argparse.Namespace) -> int:
    """Handler of ``verdict``."""
    judged = _judged(args)
    table, s = judged.table, judged.selection
    if args.format == "csv":
        emit(csv_text(table), args.out)
        return 0
    overall = store_line(table)
    if args.format == "json":
        emit(json.dumps({"rule": rule_text(judged.threshold, s.ci, s.family, s.rule), "k": judged.k,
                         "quota_free": judged.quota_free, "quota_reason": judged.quota_reason,
                         "threshold": judged.threshold, "ci": s.ci,
                         "family": s.family, "reading": s.rule, "overall": overall,
                         "systems": records(rollup(table)),
                         "categories": records(table)}, indent=1) + "\n", args.out)
    else:
        emit(_markdown(judged, overall), args.out)
    return 0


def _markdown(judged: Judged, overall: dict[str, object]) -> str:
    """The Markdown page: the quota, the store-wide line, the rule, one table per system and one per category."""
    table, s, threshold = judged.table, judged.selection, judged.threshold
    shown = pd.DataFrame({"System": table["model"], "Subtask": table["subtask"].map(subtask_name),
                          "Grouping": table["grouping"],
                          "Group": table["name"], "Candidates": table["candidates"],
                          "Impact ratio": [ratio(r, lo, hi, threshold) for r, lo, hi in
                                           zip(table["impact_ratio"], table["impact_ratio_lo"], table["impact_ratio_hi"])],
                          "p": table["p"].map(pvalue), "Adjusted p": table["p_adj"].map(pvalue),
                          "Verdict": table.apply(verdict_words, axis=1), "Why": table["evidence"]})
    return (f"# Verdict {judged.where}\n\nQuota: {judged.quota_reason}.\n\n**Overall:** {overall['summary']}. "
            f"Reading: {s.rule}.\n\n"
            f"{rule_text(threshold, s.ci, s.family, s.rule)}\n\n## Per system\n\n"
            f"{markdown_table(system_verdicts(table))}\n## Per category\n\n{markdown_table(shown)}")
