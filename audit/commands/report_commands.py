"""``impact`` (impact ratios), ``compare`` (two systems on the same candidates) and ``report`` (the audit report)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from audit.audit_result import comparison, impact_table
from audit.audit_verdict import pool_sizes, refuse_full_pools
from audit.design import AuditDesign
from audit.errors import AuditError
from audit.formatting import md_text
from audit.commands.io import emit, parse_quotas, read_table_file, records
from audit.commands.options import add_adjust, add_bootstrap, add_filters, add_verdict_rule
from audit.recorded.outcomes import UNQUOTED, observed_impact
from audit.output import check_target, csv_text, write_atomic
from audit.metrics.compare import compare_gaps, rank_correlation, selection_flips
from audit.metrics.impact import FOUR_FIFTHS, impact_ratios
from audit.reporting import Progress, ReportSettings, build_report
from audit.reporting.content import load_scores
from audit.selection import N_PERM, Selection
from audit.store import Store
from audit.tasks import study
from audit.tasks.designs import declared_design
from audit.views import StoreTables, regroup


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``impact``, ``compare`` and ``report``."""
    impact = sub.add_parser("impact", help="impact ratios per category (LL144 / four-fifths rule) at quota k",
                            description="Per (model, subtask, grouping, category, k): candidates, selection rate, "
                                        "impact ratio against the most-selected category, four-fifths flag, CIs.")
    _source(impact)
    impact.add_argument("--k", required=True, help="quota(s): 2, 1-8 or 1,3,5")
    impact.add_argument("--max-inconsistent", type=float, metavar="RATE",
                        help="with --db: leave out pairwise models above RATE inconsistent pairs")
    impact.add_argument("--grouping", action="append",
                        help="grouping(s) the task declares, e.g. race (default: every one it declares)")
    add_bootstrap(impact)
    impact.add_argument("--format", choices=("csv", "json", "md"), default="csv")
    impact.set_defaults(handler=run_impact)

    compare = sub.add_parser("compare", help="compare two models (or one model at two precisions) on the same "
                                             "candidates: gap differences with paired bootstrap CIs, flips, rank r")
    _source(compare)
    compare.add_argument("--a", required=True, help="model A (label as in the store, e.g. smollm2-135m)")
    compare.add_argument("--b", required=True, help="model B (e.g. smollm2-135m@4bit)")
    compare.add_argument("--grouping", help="a grouping the task declares (default: whole group codes)")
    compare.add_argument("--reference", help="reference group (default: the stored design's, in the grouping)")
    compare.add_argument("--k", required=True, help="quota(s): 2, 1-8 or 1,3,5 (flips use the smallest)")
    add_bootstrap(compare)
    compare.add_argument("--format", choices=("json",), default="json")
    compare.set_defaults(handler=run_compare)

    report = sub.add_parser("report", help="the audit report as one self-contained HTML or PDF document")
    report.add_argument("--db", required=True, help="result store")
    report.add_argument("--task", help="task to report on (needed when the store holds several)")
    add_filters(report)
    report.add_argument("--mode", default="pointwise", help="scoring mode (default pointwise)")
    report.add_argument("--grouping", help="a grouping the task declares, e.g. race (default: whole group codes)")
    report.add_argument("--reference", help="reference group (default: the stored design's, in the grouping)")
    report.add_argument("--groups", nargs="+", default=(), help="groups of the grouping to show (default: all)")
    report.add_argument("--threshold", type=float, default=FOUR_FIFTHS,
                        help="impact-ratio threshold of the verdicts (default 0.8)")
    add_verdict_rule(report)
    report.add_argument("--preset", default="default", help="metric estimators: default or paper-exact")
    report.add_argument("--max-inconsistent", type=float, metavar="RATE",
                        help="leave out pairwise models above RATE inconsistent pairs")
    report.add_argument("--permutations", type=int, default=N_PERM, metavar="B",
                        help=f"label shuffles behind the p-values (default {N_PERM})")
    add_adjust(report)
    report.add_argument("--k", type=int, help="quota k (default: the quota the task's design declares, e.g. 1 for the "
                                              "GPT hiring study, said on page 1)")
    report.add_argument("--pool", help="pool design (default: the stored design's)")
    report.add_argument("--compare", nargs=2, metavar=("A", "B"), help="add a comparison of models A and B")
    add_bootstrap(report)
    report.add_argument("--out", required=True, help="report.html or report.pdf")
    report.set_defaults(handler=run_report)


def _source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="result store (or --scores)")
    parser.add_argument("--scores", help="score table (.csv or .parquet) from `python -m audit scores`")
    parser.add_argument("--task", help="task (needed when the scores hold several)")
    parser.add_argument("--mode", default="pointwise", help="scoring mode (default pointwise)")
    add_filters(parser)
    parser.add_argument("--pool", help="pool design (default: the stored design's; per-group for --scores)")
    parser.add_argument("--out", help="write here instead of stdout")


def _scores(args: argparse.Namespace) -> tuple[pd.DataFrame, ReportSettings]:
    """For ``--scores``: the file's rows of the mode, task, models and subtasks, and their settings."""
    if (args.db is None) == (args.scores is None):
        raise AuditError("give exactly one of --db and --scores")
    settings = ReportSettings(store=args.db or "", task=args.task, models=tuple(args.models), mode=args.mode,
                              pool=args.pool, ci=args.ci, n_boot=args.bootstrap, seed=args.seed)
    scores = load_scores(settings, read_table_file(args.scores, "score table") if args.scores else None)
    return scores[scores["subtask"].isin(args.subtasks)] if args.subtasks else scores, settings


def _tables(args: argparse.Namespace) -> StoreTables:
    with Store(args.db, create=False) as store:
        return StoreTables.read(store)


def _selection(args: argparse.Namespace, tables: StoreTables, **fields) -> Selection:
    """The ``--db`` selection of a command's flags (the store's only task unless ``--task``)."""
    return Selection(tables.task(args.task), args.mode, models=tuple(args.models), subtasks=tuple(args.subtasks), pool=args.pool,
                     ci=args.ci, n_boot=args.bootstrap, seed=args.seed, **fields)


def markdown(table: pd.DataFrame) -> str:
    """A DataFrame as a GitHub-flavoured Markdown table (floats to 4 decimals, text through :func:`md_text`)."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else md_text(v) for v in row] for row in table.itertuples(index=False)]
    lines = [[md_text(c) for c in table.columns], ["---"] * len(table.columns), *cells]
    return "".join("| " + " | ".join(line) + " |\n" for line in lines)


def _store_impact(args: argparse.Namespace, tables: StoreTables, selection: Selection) -> pd.DataFrame:
    """``impact --db``: recorded systems whose outcome has no quota (selected, score) at their observed rates
    (:func:`audit.commands.ll144_commands.observed_impact`, k empty), every other system through the audit
    computation at the selection's quotas."""
    with Store(args.db, create=False) as store:
        recorded = store.recorded_systems()
    unquoted = recorded[(recorded["task"] == selection.task) & recorded["outcome"].isin(UNQUOTED)]
    scores = tables.scores[tables.scores["task"] == selection.task]
    if selection.models:
        scores = scores[scores["model"].isin(selection.models)]
    if selection.subtasks:
        scores = scores[scores["subtask"].isin(selection.subtasks)]
    observed = scores["model"].isin(set(unquoted["model"]))
    frames = []
    if observed.any():
        frames.append(observed_impact(scores[observed], unquoted, tables.designs, args.grouping or (),
                                      level=args.ci or 0.95))
    others = tuple(sorted(scores.loc[~observed, "model"].unique()))
    if others:
        chosen = replace(selection, models=others)
        refuse_full_pools(max(selection.ks), pool_sizes(tables, chosen), args.grouping)
        frames.append(impact_table(tables, chosen, args.grouping or ()))
    if not frames:
        raise AuditError(f"no systems of task {selection.task!r} match the selected models and subtasks")
    table = pd.concat(frames[::-1], ignore_index=True).astype({"k": "Int64"})
    return table[[c for c in table.columns if c != "note"] + (["note"] if "note" in table else [])]


def run_impact(args: argparse.Namespace) -> int:
    """Handler of ``impact``: per grouping, the impact ratios of :func:`audit.audit_result.compute` (``--db``) or
    of the score file's groups coarsened by the task's declared groupings (``--scores``)."""
    quotas = tuple(parse_quotas(args.k))
    if args.db is not None and args.scores is None:
        tables = _tables(args)
        selection = _selection(args, tables, ks=quotas, max_inconsistent=args.max_inconsistent)
        table = _store_impact(args, tables, selection)
        design = tables.design(selection.task)
    else:
        if args.max_inconsistent is not None:
            raise AuditError("--max-inconsistent goes with --db (the store's pair outcomes)")
        scores, settings = _scores(args)
        design = declared_design(scores)
        frames = [impact_ratios(regroup(scores, design.part(grouping)), ks=quotas, pool=settings.design,
                                grouping=grouping, ci=args.ci, n_boot=args.bootstrap, seed=args.seed)
                  for grouping in args.grouping or design.groupings]
        table = pd.concat(frames, ignore_index=True)
    text = {"csv": lambda: csv_text(table), "md": lambda: markdown(named(table, design)),
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
    quotas = tuple(parse_quotas(args.k))
    if args.db is not None and args.scores is None:
        tables = _tables(args)
        found = comparison(tables, _selection(args, tables, ks=quotas, grouping=args.grouping,
                                              reference=args.reference), args.a, args.b)
        grouping, reference, gaps, flips, correlation = (found.grouping, found.reference, found.gaps, found.flips,
                                                         found.correlation)
    else:
        scores, settings = _scores(args)
        design = declared_design(scores)
        grouping = args.grouping or design.finest()
        scores = regroup(scores, design.part(grouping))
        reference = args.reference or design.category(design.reference, grouping)
        options = {"a": args.a, "b": args.b, "pool": args.pool or settings.design}
        gaps = compare_gaps(scores, reference=reference, ks=quotas, ci=args.ci, n_boot=args.bootstrap,
                            seed=args.seed, **options)
        flips = selection_flips(scores, k=min(quotas), **options)
        correlation = rank_correlation(scores, a=args.a, b=args.b)
    result = {"a": args.a, "b": args.b, "grouping": grouping, "reference": reference, "k": list(quotas),
              "gaps": records(gaps), "flips": records(flips.query("flipped")),
              "rank_correlation": records(correlation)}
    heading = study.versus_records(args.a, args.b)
    if heading:
        result.update(heading=heading, note=study.UNPAIRED_NOTE)
    emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0


def run_report(args: argparse.Namespace) -> int:
    """Handler of ``report``: the format follows the suffix of ``--out``."""
    check_target(args.out, args.db)  # before the work: a report never replaces the store
    fmt = Path(args.out).suffix.lower().lstrip(".")
    if fmt not in ("html", "pdf"):
        raise AuditError(f"--out {args.out}: the report is written as .html or .pdf")
    settings = ReportSettings(store=args.db, task=args.task, models=tuple(args.models), mode=args.mode,
                              reference=args.reference, grouping=args.grouping, subtasks=tuple(args.subtasks),
                              groups=tuple(args.groups), threshold=args.threshold, family=args.family,
                              rule=args.rule,
                              preset=args.preset, max_inconsistent=args.max_inconsistent, k=args.k, pool=args.pool,
                              ci=args.ci, n_boot=args.bootstrap, n_perm=args.permutations, adjust=args.adjust,
                              seed=args.seed,
                              compare=tuple(args.compare) if args.compare else None)
    write_atomic(args.out, build_report(settings, fmt, _terminal_progress() if sys.stderr.isatty() else None), args.db)
    return 0


def _terminal_progress() -> Progress:
    """Prints each report step to stderr with the seconds since the first (for a terminal only)."""
    start = time.perf_counter()

    def tell(step: str, done: float) -> None:
        print(f"report: {step}… ({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)

    return tell
