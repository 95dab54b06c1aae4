"""``python -m audit check``: enforce an audit policy on a store — exit 0 when every system passes, 1 when any
fails (each failure one line with its evidence), 2 on an error — with JUnit XML for CI servers."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from audit.commands.io import emit, records
from audit.commands.verdict_commands import Judged, verdict_rows
from audit.errors import AuditError
from audit.formatting import markdown_table, md_text, pvalue, subtask_name
from audit.engine.verdict import ADVERSE, INCONCLUSIVE, rollup
from audit.engine.monitor import MonitorSettings, monitor_table
from audit.store.output import check_target, write_atomic
from audit.engine.policy import Policy, load_policy
from audit.present.junit import Case, junit_xml
from audit.store.database import Store
from audit.engine.tables import StoreTables

FAILED = 1
"""Exit status when a system fails the policy (2 stays the status of an error)."""


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``check`` sub-command."""
    parser = sub.add_parser("check", help="enforce an audit policy (exit 0: every system passes, 1: a system fails, "
                                          "2: an error), with JUnit XML for CI",
                            description="Runs the verdict of every task and system the policy names under its "
                                        "threshold, reading, family, confidence and quota; a system fails when a "
                                        "category is adverse, below the minimum sample or (if the policy says so) "
                                        "inconclusive. See docs/policy.md.")
    parser.add_argument("--db", required=True, help="result store")
    parser.add_argument("--policy", required=True, metavar="FILE", help="the audit policy (YAML)")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML here (one testsuite per task, one "
                                                        "testcase per system × subtask)")
    parser.add_argument("--format", choices=("md", "json"), default="md")
    parser.add_argument("--out", help="write here instead of stdout")
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    """Handler of ``check``."""
    for target in (args.junit, args.out):  # before the work: no output replaces the store
        if target is not None:
            check_target(target, args.db)
    policy = load_policy(args.policy)
    with Store(args.db, create=False) as store:
        tables = StoreTables.read(store)
        judged = _verdicts(policy, tables)
        alarms = _alarms(policy, store, list(judged))
    systems, failures = _results(judged, policy, tables, alarms)
    if args.junit is not None:
        cases = [Case(row.task, f"{row.model} · {subtask_name(row.subtask)}", tuple(
            failures.loc[(failures["task"] == row.task) & (failures["model"] == row.model)
                         & (failures["subtask"] == row.subtask), "line"]))
                 for row in systems.itertuples(index=False)]
        write_atomic(args.junit, junit_xml(cases, name="audit check", properties={
            "policy": policy.path, "policy_sha256": policy.sha256, "rule": policy.describe()}), args.db)
    if args.format == "json":
        emit(json.dumps({"passed": failures.empty, "policy": {**asdict(policy), "quotas": dict(policy.quotas)},
                         "judged_at": {task: {"k": j.k, "quota_free": j.quota_free, "quota_reason": j.quota_reason}
                                       for task, j in judged.items()},
                         "systems": records(systems), "failures": records(failures)}, indent=1) + "\n", args.out)
    else:
        emit(_markdown(policy, judged, systems, failures), args.out)
    return FAILED if len(failures) else 0


def _verdicts(policy: Policy, tables: StoreTables) -> dict[str, Judged]:
    """Per task the policy names (default: every task of the store): the verdict of the systems it names there,
    through :func:`audit.commands.verdict_commands.verdict_rows`, as ``verdict`` runs."""
    stored = tables.tasks()
    policy.check_tasks(stored)
    tasks = list(policy.tasks) or stored
    held = {task: set(tables.scores.loc[tables.scores["task"] == task, "model"].astype(str)) for task in tasks}
    missing = [s for s in policy.systems if not any(s in models for models in held.values())]
    if missing:
        raise AuditError(f"policy {policy.path}: system {missing[0]!r} is in none of the tasks "
                         f"{', '.join(tasks)}; their systems are {', '.join(sorted(set().union(*held.values())))}")
    out = {}
    for task in tasks:
        models = tuple(s for s in policy.systems if s in held[task])
        if policy.systems and not models:
            if policy.tasks:
                raise AuditError(f"policy {policy.path}: task {task!r} holds none of the systems "
                                 f"{', '.join(policy.systems)}")
            continue  # every task by default: only those that hold a named system
        out[task] = verdict_rows(tables, policy.selection(task, models), policy.threshold)
    return out


def _alarms(policy: Policy, store: Store, tasks: list[str]) -> list[dict]:
    """One failure row per monitoring alarm raised at the last look on the dated decisions of ``tasks`` (none when
    the policy's monitoring is off), as ``monitor`` raises it under the policy's threshold, family and quota."""
    if not policy.monitoring.enabled:
        return []
    watch, dated, rows = policy.monitoring, set(store.dated_tasks()), []
    for task in (t for t in tasks if t in dated):
        settings = MonitorSettings(watch.period, k=policy.quota_for(task), threshold=policy.threshold,
                                   alpha=watch.alpha, family=policy.family, horizon=watch.horizon)
        summary = monitor_table(store, task, settings).summary
        named = summary["model"].isin(policy.systems) if policy.systems else True
        for row in summary[summary["alarm"] & named].itertuples():
            line = (f"FAIL {task} · {row.model} · {subtask_name(row.subtask)} · {row.grouping} {row.name}: "
                    f"monitoring alarm since the {watch.period} of {row.first_alarm} — impact ratio of the last "
                    f"{settings.window} {watch.period}s {row.recent_ratio:.3g} against {row.comparator}, detector "
                    f"{row.detector:.4g} at its level {row.level:.4g} (a fair system alarms within {watch.horizon} "
                    f"looks with a chance of at most {watch.alpha:g})")
            rows.append({"task": task, "model": row.model, "subtask": row.subtask, "grouping": row.grouping,
                         "category": row.category, "reason": "monitoring alarm", "line": " ".join(line.split())})
    return rows


def _results(judged: dict[str, Judged], policy: Policy, tables: StoreTables,
             alarms: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per task × system × subtask: its verdict and whether it passes; one row per failure, the monitoring
    ``alarms`` included: task, model, subtask, grouping, category, reason and its one-line ``line``)."""
    systems, failures = [], list(alarms)
    for task, found in judged.items():
        k, table, design = found.k, found.table, tables.design(task)
        for row in table.itertuples(index=False):
            for reason in _reasons(row, policy):
                failures.append({"task": task, "model": row.model, "subtask": row.subtask, "grouping": row.grouping,
                                 "category": row.category, "reason": reason,
                                 "line": _line(task, found.where, row, reason,
                                               design.display_name(row.comparator, row.grouping))})
        for row in rollup(table).sort_values(["model", "subtask"], kind="stable").itertuples(index=False):
            systems.append({"task": task, "k": k, "model": row.model, "subtask": row.subtask, "verdict": row.verdict,
                            "categories": row.categories})
    failures = pd.DataFrame(failures, columns=["task", "model", "subtask", "grouping", "category", "reason", "line"]
                            )
    order = {task: i for i, task in enumerate(judged)}  # the tasks in the policy's (or the store's) order
    failures = failures.sort_values(["task", "model", "subtask"], key=lambda c: c.map(order) if c.name == "task" else c,
                                    kind="stable").reset_index(drop=True)
    systems = pd.DataFrame(systems, columns=["task", "k", "model", "subtask", "verdict", "categories"])
    failed = set(zip(failures["task"], failures["model"], failures["subtask"]))
    systems["passed"] = [(t, m, s) not in failed for t, m, s in zip(systems["task"], systems["model"],
                                                                     systems["subtask"])]
    systems["failures"] = [int(((failures["task"] == t) & (failures["model"] == m) & (failures["subtask"] == s)).sum())
                           for t, m, s in zip(systems["task"], systems["model"], systems["subtask"])]
    return systems, failures


def _reasons(row, policy: Policy) -> list[str]:
    """Why one verdict row fails the policy (empty: it passes)."""
    reasons = []
    if row.candidates < policy.minimum_sample:
        reasons.append(f"below the minimum sample ({row.candidates} < {policy.minimum_sample})")
    if row.verdict == ADVERSE:
        reasons.append(ADVERSE)
    elif row.verdict == INCONCLUSIVE and policy.inconclusive_fails:
        reasons.append("inconclusive (the policy fails inconclusive)")
    return reasons


def _line(task: str, where: str, row, reason: str, comparator: str) -> str:
    """One failure as one line: where, why, and the evidence behind it."""
    interval = ("" if pd.isna(row.impact_ratio_lo) else f" [{row.impact_ratio_lo:.3g}, {row.impact_ratio_hi:.3g}]")
    evidence = f"; {row.evidence}" if row.evidence else ""
    text = (f"FAIL {task} · {row.model} · {subtask_name(row.subtask)} · {row.grouping} {row.name}: {reason} "
            f"{where} — impact ratio {row.impact_ratio:.3g}{interval} against {comparator}, adjusted p "
            f"{pvalue(row.p_adj)}, {row.candidates} candidates{evidence}")
    return " ".join(text.split())


def _markdown(policy: Policy, judged: dict, systems: pd.DataFrame, failures: pd.DataFrame) -> str:
    """The page: the result, the policy (file, SHA-256, rule), one table of systems per task, the failure lines."""
    failed = int((~systems["passed"]).sum())
    head = (f"# Policy check: {'FAIL' if failed else 'PASS'} — {failed} of {len(systems)} systems fail\n\n"
            f"Policy: {md_text(Path(policy.path).name)} (SHA-256 {policy.sha256}): {md_text(policy.describe())}.\n")
    parts = [head]
    for task, found in judged.items():
        rows = systems[systems["task"] == task]
        shown = pd.DataFrame({"System": rows["model"], "Subtask": rows["subtask"].map(subtask_name),
                              "Result": rows["passed"].map({True: "pass", False: "FAIL"}), "Verdict": rows["verdict"],
                              "Failures": rows["failures"]})
        parts.append(f"\n## {md_text(task)} {found.where}\n\nQuota: {md_text(found.quota_reason)}.\n\n"
                     f"{markdown_table(shown)}")
    if len(failures):
        parts.append("\n## Failures\n\n" + "".join(f"- {md_text(line)}\n" for line in failures["line"]))
    return "".join(parts)
