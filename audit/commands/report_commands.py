"""``impact`` (impact ratios), ``compare`` (two systems on the same candidates) and ``report`` (the audit report)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from audit.engine.audit import Audit
from audit.design import AuditDesign
from audit.errors import AuditError
from audit.formatting import bound, md_text
from audit.commands.io import cli_options, emit, records, tables_from
from audit.commands.policy_options import add_policy, apply_policy, policy_of
from audit.commands.options import (add_adjust, add_bootstrap, add_selection, add_verdict_rule, check_date,
                                    selection_from)
from audit.engine.choices import FOUR_FIFTHS, UNQUOTED
from audit.store.output import check_target, csv_text
from audit.engine.selection import N_PERM, Selection
from audit.tasks import study
from audit.tasks.recorded import shown_modes
from audit.engine.tables import StoreTables

if TYPE_CHECKING:
    from audit.reporting import Progress


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``impact``, ``compare`` and ``report``."""
    impact = sub.add_parser("impact", help="impact ratios per category (LL144 / four-fifths rule) at quota k",
                            description="Per (model, subtask, grouping, category, k): candidates, selection rate, "
                                        "impact ratio against the most-selected category, four-fifths flag, CIs.")
    _source(impact)
    add_selection(impact, groupings=True)
    add_bootstrap(impact)
    impact.add_argument("--format", choices=("csv", "json", "md"), default="csv")
    impact.set_defaults(handler=run_impact)

    compare = sub.add_parser("compare", help="compare two models (or one model at two precisions) on the same "
                                             "candidates: gap differences with paired bootstrap CIs, flips, rank r")
    _source(compare)
    add_selection(compare, k_help="quota(s): 2, 1-8 or 1,3,5 (flips use the smallest)", metrics=False)
    compare.add_argument("--a", required=True, help="model A (label as in the store, e.g. smollm2-135m)")
    compare.add_argument("--b", required=True, help="model B (e.g. smollm2-135m@4bit)")
    add_bootstrap(compare)
    compare.add_argument("--format", choices=("json",), default="json")
    compare.set_defaults(handler=run_compare)

    report = sub.add_parser("report", help="the audit report as one self-contained HTML or PDF document")
    report.add_argument("--db", required=True, help="result store")
    add_selection(report, k="one", k_help="quota k (default: the quota the task's design declares, e.g. 1 for the GPT "
                                          "hiring study, said on page 1)", groups=True)
    report.add_argument("--threshold", type=float, default=FOUR_FIFTHS,
                        help="impact-ratio threshold of the verdicts (default 0.8)")
    add_verdict_rule(report)
    report.add_argument("--permutations", type=int, default=N_PERM, metavar="B",
                        help=f"label shuffles behind the p-values (default {N_PERM})")
    add_adjust(report)
    report.add_argument("--compare", nargs=2, metavar=("A", "B"), help="add a comparison of models A and B")
    add_bootstrap(report)
    report.add_argument("--paper", choices=("a4", "letter"), default="a4",  # audit.reporting.style.PAPERS
                        help="paper size of the PDF (default a4)")
    report.add_argument("--auditor", default="", help="the auditor's name, printed in page 1's sign-off block "
                                                      "(default: a blank line to fill in)")
    report.add_argument("--firm", default="", help="the auditing firm, printed in the sign-off block (default: blank)")
    report.add_argument("--distribution-date", default="", metavar="YYYY-MM-DD",
                        help="the date the report is distributed, printed in the sign-off block and the LL144 "
                             "section (default: blank)")
    report.add_argument("--out", required=True, help="report.html or report.pdf")
    add_policy(report)
    report.set_defaults(handler=run_report)


def _source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="result store (or --scores)")
    parser.add_argument("--scores", help="score table (.csv or .parquet) from `python -m audit scores` (read under "
                                         "its task's declared design, per-group pools unless --pool)")
    parser.add_argument("--out", help="write here instead of stdout")


#: columns read against the four-fifths threshold: printed with the decimals that show their side of it
_RATIOS = ("impact_ratio", "impact_ratio_lo", "impact_ratio_hi")


def markdown(table: pd.DataFrame) -> str:
    """A DataFrame as a GitHub-flavoured Markdown table (impact ratios and their bounds by
    :func:`audit.formatting.bound`, other floats to 4 decimals, text through :func:`md_text`)."""
    ratios = {table.columns.get_loc(c) for c in _RATIOS if c in table}
    cells = [[bound(v) if i in ratios else f"{v:.4f}" if isinstance(v, float) else md_text(v)
              for i, v in enumerate(row)] for row in table.itertuples(index=False)]
    lines = [[md_text(c) for c in table.columns], ["---"] * len(table.columns), *cells]
    return "".join("| " + " | ".join(line) + " |\n" for line in lines)


def _store_impact(args: argparse.Namespace, tables: StoreTables, selection: Selection) -> pd.DataFrame:
    """The impact ratios of the selection's :class:`audit.engine.audit.Audit` at its quotas; quota-free recorded systems
    (0/1 and score logs) at their recorded decisions, with k empty."""
    table = Audit(tables, selection).impact(selection.ks, tuple(args.grouping or ())).astype({"k": "Int64"})
    outcomes = tables.outcomes
    free = {(str(m), str(s)) for m, t, s, o in outcomes[["model", "task", "subtask", "outcome"]].itertuples(index=False)
            if t == selection.task and o in UNQUOTED}
    return table.assign(k=table["k"].mask([(str(m), str(s)) in free for m, s in zip(table["model"], table["subtask"])]))


def run_impact(args: argparse.Namespace) -> int:
    """Handler of ``impact``: per grouping, the impact ratios of the selection's :class:`audit.engine.audit.Audit`."""
    tables = tables_from(args)
    selection = selection_from(args, tables)
    table = shown_modes(_store_impact(args, tables, selection), tables.designs)
    text = {"csv": lambda: csv_text(table), "md": lambda: markdown(named(table, tables.design(selection.task))),
            "json": lambda: json.dumps(records(table), indent=1) + "\n"}[args.format]()
    emit(text, args.out)
    return 0


def named(table: pd.DataFrame, design: AuditDesign) -> pd.DataFrame:
    """``table`` with each category's display name beside its code (markdown reads names; csv and json keep the
    codes only)."""
    names = [design.display_name(c, g) for c, g in zip(table["category"].astype(str), table["grouping"])]
    return table.assign(name=names)[[*table.columns[:table.columns.get_loc("category") + 1], "name",
                                     *table.columns[table.columns.get_loc("category") + 1:]]]


def run_compare(args: argparse.Namespace) -> int:
    """Handler of ``compare``: gap differences, flips at the smallest k, and rank correlations, as one JSON object,
    on the groups of the chosen grouping against the chosen (or stored) reference."""
    tables = tables_from(args)
    selection = selection_from(args, tables)
    found = Audit(tables, selection).comparison(args.a, args.b, selection.ks)
    result = {"a": args.a, "b": args.b, "grouping": found.grouping, "reference": found.reference,
              "k": list(selection.ks), "gaps": records(found.gaps), "flips": records(found.flips.query("flipped")),
              "rank_correlation": records(found.correlation)}
    heading = study.versus_records(args.a, args.b)
    if heading:
        result.update(heading=heading, note=study.UNPAIRED_NOTE)
    emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0


def run_report(args: argparse.Namespace) -> int:
    """Handler of ``report``: the format follows the suffix of ``--out``."""
    from audit.reporting import ReportSettings, recorded_report  # imported on use: its figures load plotly

    check_target(args.out, args.db)  # before the work: a report never replaces the store
    check_date(args.distribution_date, "--distribution-date")
    fmt = Path(args.out).suffix.lower().lstrip(".")
    if fmt not in ("html", "pdf"):
        raise AuditError(f"--out {args.out}: the report is written as .html or .pdf")
    if not Path(args.db).is_file():
        raise AuditError(f"result store {args.db} does not exist")
    policy = policy_of(args)
    tables = tables_from(args)
    apply_policy(args, policy, tables)
    settings = ReportSettings(args.db, selection_from(args, tables), threshold=args.threshold,
                              compare=tuple(args.compare) if args.compare else None,
                              paper=args.paper, auditor=args.auditor.strip(), firm=args.firm.strip(),
                              distribution_date=args.distribution_date,
                              policy=None if policy is None else (policy.path, policy.sha256))
    _, run = recorded_report(settings, fmt, "report", cli_options(args),
                             _terminal_progress() if sys.stderr.isatty() else None, tables, out=args.out)
    print(f"wrote {args.out}: " + (f"run #{run} of the store's audit trail" if run else
                                   "not recorded (the store is only read: the shipped demo store, or not writable)"),
          file=sys.stderr)
    return 0


def _terminal_progress() -> Progress:
    """Prints each report step to stderr with the seconds since the first (for a terminal only)."""
    start = time.perf_counter()

    def tell(step: str, done: float) -> None:
        print(f"report: {step}… ({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)

    return tell
