"""``position-bias``: top-1 share by shown position of a task's recorded rankings (imported or listwise runs), and
whether each system's position effect is larger than its group effect."""
from __future__ import annotations

import argparse

import pandas as pd

from audit.commands.io import emit, emit_table
from audit.commands.options import selection_from
from audit.errors import AuditError
from audit.formatting import markdown_table, md_text
from audit.engine.choices import LARGER, UNBIASED_NOTE
from audit.engine.audit import Audit
from audit.engine.tables import StoreTables
from audit.store.database import Store


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``position-bias`` sub-command."""
    parser = sub.add_parser("position-bias", help="share of top-1 picks by shown position (1 = first), with exact "
                                                  "intervals and tests against 1/n, per system and subtask, and whether "
                                                  "the position effect is larger than the group effect")
    parser.add_argument("--db", required=True, help="result store")
    parser.add_argument("--task", required=True, help="task whose ranked pools to read (e.g. study-gpt-hiring)")
    parser.add_argument("--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument("--format", choices=("json", "csv", "md"), default="md")
    parser.add_argument("--out", help="file to write (default: standard output)")
    parser.set_defaults(handler=run_position_bias)


def run_position_bias(args: argparse.Namespace) -> int:
    """Handler of ``position-bias``."""
    if not 0 < args.ci < 1:
        raise AuditError(f"--ci must lie between 0 and 1, got {args.ci}")
    with Store(args.db, create=False) as store:
        tables = StoreTables.read(store)
    found = Audit(tables, selection_from(args, tables, task=args.task)).positions
    if found is None:
        raise AuditError(f"task {args.task!r} in {args.db} holds no ranked pools (imported ranking runs or listwise "
                         "runs)")
    effects = found.effects
    table = found.shares.merge(
        effects[["model", "subtask", "position_spread", "group_spread", "position_over_group"]], on=["model", "subtask"])
    if args.format == "md":
        emit(_markdown(table, effects), args.out)
    else:
        emit_table(table, args.format, args.out)
    return 0


def _markdown(table: pd.DataFrame, effects: pd.DataFrame) -> str:
    """The position table, the note on the shuffle, and the systems whose position effect exceeds their group's."""
    shown = table.drop(columns=["position_spread", "group_spread", "position_over_group"]).round(
        {"top1_share": 3, "ci_low": 3, "ci_high": 3, "expected": 3})
    shown[["p_value", "uniform_p"]] = shown[["p_value", "uniform_p"]].map(lambda p: f"{p:.2g}")
    versus = pd.DataFrame({"model": effects["model"], "subtask": effects["subtask"],
                           "position spread": effects["position_spread"].round(3),
                           "group spread": effects["group_spread"].round(3),
                           "position χ²": effects["position_chi2"].round(1), "group χ²": effects["group_chi2"].round(1),
                           LARGER: effects["position_over_group"].map({True: "yes", False: "no"})})
    flagged = effects[effects["position_over_group"]]
    lines = [f"- {md_text(m)}, {md_text(s)}: {LARGER}" for m, s in zip(flagged["model"], flagged["subtask"])]
    return (f"{markdown_table(shown)}\n{UNBIASED_NOTE}\n\n## Position against group (spread: max − min top-1 share)\n\n"
            f"{markdown_table(versus)}" + ("\n" + "\n".join(lines) + "\n" if lines else ""))
