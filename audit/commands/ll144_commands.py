"""``python -m audit ll144``: the NYC Local Law 144 bias-audit summary of a recorded system in the store.

What counts as selected follows the system's outcome kind: ``rank`` (recorded rankings, ranked decision logs) the top
k of each recorded pool; ``selected`` the recorded selection, with no quota; ``score`` LL144's scoring rate, the share
scoring above the median score of the (model, task, subtask) sample, with no quota."""
from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import date

import pandas as pd

from audit.commands.io import emit, emit_table
from audit.commands.options import add_output, add_verdict_rule, check_date, selection_from
from audit.enums import Mode
from audit.errors import AuditError
from audit.formatting import md_text, ratio, subtask_name
from audit.engine.audit import Audit
from audit.store.database import Store
from audit.engine.tables import StoreTables

#: what "selected" means for each outcome kind (see :func:`audit.recorded.decision_logs.selected_flags`)
MEANINGS = {"rank": "selected = top {k} of each pool", "selected": "selected = the recorded selection (no quota)",
            "score": "scoring rate = share scoring above the median score of the sample (no quota)"}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``ll144`` sub-command."""
    parser = sub.add_parser("ll144", help="LL144 bias-audit summary of imported recorded decisions",
                            description="Per model and subtask, for each demographic column and their intersection: "
                                        "applicants, selection rate (rank outcome: top k of each recorded pool; "
                                        "selected: the recorded selection; score: scoring rate above the sample "
                                        "median), impact ratio against the most-selected category with its CI, "
                                        "the exact test stratified by the recorded pools (Fisher's for an "
                                        "unpooled log), adjusted over --family as `verdict` adjusts it (the "
                                        "numbers are the verdict's), the unknown category, categories under 2 %.")
    parser.add_argument("--db", required=True, help="result store with imported recorded decisions")
    parser.add_argument("--task", help="task (default: every recorded task)")
    parser.add_argument("--k", type=int, help="rank outcomes: selected = the top k of each recorded pool (default: "
                                              "the quota the task's design declares, 1 for the GPT hiring study)")
    parser.add_argument("--ci", type=float, default=0.95, help="confidence level of the impact-ratio CI")
    parser.add_argument("--exclude-small", metavar="JUSTIFICATION",
                        help="exclude categories under 2 %% from the impact ratios, with this justification")
    parser.add_argument("--distribution-date", default="", metavar="YYYY-MM-DD",
                        help="the date the tool was distributed (printed)")
    add_verdict_rule(parser)
    add_output(parser, ("md", "csv", "json"))
    parser.set_defaults(handler=run_ll144)


def run_ll144(args: argparse.Namespace) -> int:
    check_date(args.distribution_date, "--distribution-date")
    if args.exclude_small is not None and not args.exclude_small.strip():
        raise AuditError("--exclude-small: give the justification for excluding categories under 2 % (it is printed "
                         "with the table)")
    with Store(args.db, create=False) as store:
        tables = StoreTables.read(store)
    outcomes = tables.outcomes
    tasks = sorted(set(outcomes["task"])) if len(outcomes) else []
    if args.task:
        tasks = [task for task in tasks if task == args.task]
    if not tasks:
        raise AuditError(f"{args.db}: no recorded decisions{' in task ' + repr(args.task) if args.task else ''}; "
                         "import some with `python -m audit import`")
    models = tables.models.set_index("model")
    frames = []
    for task in tasks:
        chosen = selection_from(args, tables, task=task)
        audit = Audit(tables, replace(chosen, ks=()))
        k, why = audit.audited_quota(chosen.ks[0] if chosen.ks else None)
        selection = replace(chosen, ks=(k,))
        table = audit.ll144(k, args.exclude_small)
        kinds = outcomes[outcomes["task"] == task].set_index(["model", "subtask"])["outcome"]
        for (model, subtask), part in table.groupby(["model", "subtask"], sort=True):
            kind = str(kinds.get((model, subtask), "rank"))
            details = json.loads(models.loc[model, "details"]) if model in models.index else {}
            frames.append(part.assign(task=task, outcome=kind, k=k if kind == "rank" else None,
                                      quota_reason=why if kind == "rank" else "", family=selection.family,
                                      score_median=_median(tables, model, task, subtask) if kind == "score" else None,
                                      source=details.get("source", ""), source_sha256=details.get("source_sha256", ""),
                                      first_date=details.get("first_date", ""), last_date=details.get("last_date", ""),
                                      audit_date=date.today().isoformat(), distribution_date=args.distribution_date))
    table = pd.concat(frames, ignore_index=True)
    front = ["model", "task", "subtask", "outcome", "k"]
    table = table[front + [c for c in table.columns if c not in front]]
    if args.format != "md":
        emit_table(table, args.format, args.out)
        return 0
    emit(markdown(table), args.out)
    return 0


def _median(tables: StoreTables, model: str, task: str, subtask: str) -> float:
    """The median score of a score log's sample (its scoring-rate threshold)."""
    scores = tables.scores
    return float(scores.loc[(scores["model"] == model) & (scores["task"] == task) & (scores["subtask"] == subtask)
                            & (scores["mode"] == Mode.POINTWISE), "score"].median())


def markdown(table: pd.DataFrame) -> str:
    """One section per (model, subtask): data source and dates, then one table per grouping."""
    lines: list[str] = []
    for (model, task, subtask), part in table.groupby(["model", "task", "subtask"], sort=True):
        first = part.iloc[0]
        meaning = MEANINGS[first["outcome"]].format(k=first["k"])
        if first["quota_reason"]:
            meaning += f": {first['quota_reason']}"
        if first["outcome"] == "score":
            meaning += f", {first['score_median']:.4g}"
        dates = (f"recorded {first['first_date']} to {first['last_date']}" if first["first_date"]
                 else "decision dates not recorded")
        lines += [f"## {md_text(model)}: {md_text(task)} / {md_text(subtask_name(subtask))} ({meaning})", "",
                  f"Data: {md_text(first['source'])} (sha256 {first['source_sha256'][:12]}…), {dates}; audit date "
                  f"{first['audit_date']}; distribution date "
                  f"{md_text(first['distribution_date']) or '(not given)'}.", ""]
        for grouping, rows in part.groupby("grouping", sort=False):
            lines += [f"### {md_text(grouping)}", "", "| category | applicants | selection rate | impact ratio [CI] | "
                      "p (Holm) | note |", "|---|---:|---:|---:|---:|---|"]
            for _, r in rows.iterrows():
                rate = "" if pd.isna(r["selection_rate"]) else f"{r['selection_rate']:.3f}"
                shown = "" if pd.isna(r["impact_ratio"]) else md_text(ratio(r["impact_ratio"], r["impact_ratio_lo"],
                                                                            r["impact_ratio_hi"]))
                p = "" if pd.isna(r["p_holm"]) else f"{r['p_holm']:.3g}"
                lines.append(f"| {md_text(r['category'])} | {r['applicants']} | {rate} | {shown} | {p} | "
                             f"{md_text(r['note'])} |")
            lines.append("")
    return "\n".join(lines)
