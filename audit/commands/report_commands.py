"""``impact`` (impact ratios), ``compare`` (two systems on the same candidates) and ``report`` (the audit report)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from audit.errors import AuditError
from audit.commands.io import emit, parse_quotas, read_table_file, records
from audit.output import check_target, write_atomic
from audit.metrics.compare import compare_gaps, rank_correlation, selection_flips
from audit.metrics.impact import GROUPINGS, impact_ratios
from audit.reporting import ReportSettings, build_report
from audit.reporting.content import load_scores


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``impact``, ``compare`` and ``report``."""
    impact = sub.add_parser("impact", help="impact ratios per category (LL144 / four-fifths rule) at quota k",
                            description="Per (model, subtask, grouping, category, k): candidates, selection rate, "
                                        "impact ratio against the most-selected category, four-fifths flag, CIs.")
    _source(impact)
    impact.add_argument("--k", required=True, help="quota(s): 2, 1-8 or 1,3,5")
    impact.add_argument("--grouping", action="append", choices=list(GROUPINGS),
                        help="grouping(s) to report (default: every one the groups offer)")
    _bootstrap(impact)
    impact.add_argument("--format", choices=("csv", "json", "md"), default="csv")
    impact.set_defaults(handler=run_impact)

    compare = sub.add_parser("compare", help="compare two models (or one model at two precisions) on the same "
                                             "candidates: gap differences with paired bootstrap CIs, flips, rank r")
    _source(compare)
    compare.add_argument("--a", required=True, help="model A (label as in the store, e.g. smollm2-135m)")
    compare.add_argument("--b", required=True, help="model B (e.g. smollm2-135m@4bit)")
    compare.add_argument("--reference", default="W_M", help="reference group (default W_M)")
    compare.add_argument("--k", required=True, help="quota(s): 2, 1-8 or 1,3,5 (flips use the smallest)")
    _bootstrap(compare)
    compare.add_argument("--format", choices=("json",), default="json")
    compare.set_defaults(handler=run_compare)

    report = sub.add_parser("report", help="the audit report as one self-contained HTML or PDF document")
    report.add_argument("--db", required=True, help="result store")
    report.add_argument("--task", help="task to report on (needed when the store holds several)")
    report.add_argument("--models", nargs="+", default=(), help="models to include (default: all)")
    report.add_argument("--mode", default="pointwise", help="scoring mode (default pointwise)")
    report.add_argument("--reference", default="W_M", help="reference group (default W_M)")
    report.add_argument("--k", type=int, default=2, help="quota k (default 2)")
    report.add_argument("--pool", help="pool design (default: per-group for pointwise, observed for pairwise)")
    report.add_argument("--compare", nargs=2, metavar=("A", "B"), help="add a comparison of models A and B")
    _bootstrap(report)
    report.add_argument("--out", required=True, help="report.html or report.pdf")
    report.set_defaults(handler=run_report)


def _source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="result store (or --scores)")
    parser.add_argument("--scores", help="score table (.csv or .parquet) from `python -m audit scores`")
    parser.add_argument("--task", help="task (needed when the scores hold several)")
    parser.add_argument("--mode", default="pointwise", help="scoring mode (default pointwise)")
    parser.add_argument("--models", nargs="+", default=(), help="models to include (default: all)")
    parser.add_argument("--pool", help="pool design (default: per-group for pointwise, observed for pairwise)")
    parser.add_argument("--out", help="write here instead of stdout")


def _bootstrap(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap replicates (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def _scores(args: argparse.Namespace) -> tuple[pd.DataFrame, ReportSettings]:
    if (args.db is None) == (args.scores is None):
        raise AuditError("give exactly one of --db and --scores")
    settings = ReportSettings(store=args.db or "", task=args.task, models=tuple(args.models), mode=args.mode,
                              pool=args.pool, ci=args.ci, n_boot=args.bootstrap, seed=args.seed)
    table = read_table_file(args.scores, "score table") if args.scores else None
    return load_scores(settings, table), settings


def markdown(table: pd.DataFrame) -> str:
    """A DataFrame as a GitHub-flavoured Markdown table (floats to 4 decimals, ``|`` escaped)."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v).replace("|", "\\|") for v in row]
             for row in table.itertuples(index=False)]
    lines = [list(table.columns), ["---"] * len(table.columns), *cells]
    return "".join("| " + " | ".join(line) + " |\n" for line in lines)


def run_impact(args: argparse.Namespace) -> int:
    """Handler of ``impact``."""
    scores, settings = _scores(args)
    table = impact_ratios(scores, ks=parse_quotas(args.k), pool=settings.design, groupings=args.grouping,
                          ci=args.ci, n_boot=args.bootstrap, seed=args.seed)
    text = {"csv": lambda: table.to_csv(index=False), "md": lambda: markdown(table),
            "json": lambda: json.dumps(records(table), indent=1) + "\n"}[args.format]()
    emit(text, args.out)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    """Handler of ``compare``: gap differences, flips at the smallest k, and rank correlations, as one JSON object."""
    scores, settings = _scores(args)
    quotas = parse_quotas(args.k)
    options = {"a": args.a, "b": args.b, "pool": settings.design}
    result = {"a": args.a, "b": args.b, "reference": args.reference, "k": quotas,
              "gaps": records(compare_gaps(scores, reference=args.reference, ks=quotas, ci=args.ci,
                                            n_boot=args.bootstrap, seed=args.seed, **options)),
              "flips": records(selection_flips(scores, k=quotas[0], **options).query("flipped")),
              "rank_correlation": records(rank_correlation(scores, a=args.a, b=args.b))}
    emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0


def run_report(args: argparse.Namespace) -> int:
    """Handler of ``report``: the format follows the suffix of ``--out``."""
    check_target(args.out, args.db)  # before the work: a report never replaces the store
    fmt = Path(args.out).suffix.lower().lstrip(".")
    if fmt not in ("html", "pdf"):
        raise AuditError(f"--out {args.out}: the report is written as .html or .pdf")
    settings = ReportSettings(store=args.db, task=args.task, models=tuple(args.models), mode=args.mode,
                              reference=args.reference, k=args.k, pool=args.pool, ci=args.ci, n_boot=args.bootstrap,
                              seed=args.seed, compare=tuple(args.compare) if args.compare else None)
    write_atomic(args.out, build_report(settings, fmt), args.db)
    return 0
