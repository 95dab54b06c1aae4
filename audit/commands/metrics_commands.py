"""``python -m audit metrics``, ``validity`` and ``shape``: read score (and pair) tables, print metric tables."""
from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from audit.commands.io import emit, emit_table, parse_quotas, read_table_file, records
from audit.commands.options import add_adjust, add_bootstrap, add_filters, add_output
from audit.errors import AuditError
from audit.metrics.bands import draws_table, ndcg_bands, validity_bands
from audit.metrics.suite import MetricSuite
from audit.metrics.inference import adjusted
from audit.metrics.pairwise import drop_unreliable
from audit.metrics.presets import PRESETS
from audit.metrics.schema import is_pairwise
from audit.views import MODES
from audit.metrics.shape import score_shape
from audit.metrics.validity import model_rankings, ndcg_table, validity
from audit.store import Store
from audit.audit_result import AuditResult, base_rows, compute
from audit.selection import Selection
from audit.views import StoreTables



def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``metrics``, ``validity`` and ``shape`` sub-commands."""
    metrics = sub.add_parser("metrics", help="bias metrics and allocation gaps per model, task, subtask, mode, group, k",
                             description="One row per (model, task, subtask, mode, group, k): delta, jsd, emd, rabbi, "
                                         "rabbi_pvalue, delta_qualified, jsd_qualified, emd_qualified, "
                                         "rabbi_qualified, dp_gap, eo_gap.")
    _common(metrics)
    add_bootstrap(metrics, ci=None, ci_help="confidence level of bootstrap bounds, e.g. 0.95 (adds *_lo/*_hi)",
                  seed_help="bootstrap and permutation seed")
    metrics.add_argument("--permutations", type=int, metavar="B",
                         help="permutation test of no gap with B label shuffles (adds dp_gap_p, eo_gap_p and, "
                              "adjusted per model, mode and k, dp_gap_padj, eo_gap_padj)")
    add_adjust(metrics)
    add_output(metrics, ("json", "csv"))
    metrics.set_defaults(handler=run_metrics)
    check = sub.add_parser("validity", help="Pearson r of bias metrics with allocation gaps, model rankings, NDCG@N",
                           description="Correlations overall and per group (paper Table 1, Figure 6) and model-"
                                       "ranking NDCG@N averaged over subtasks (Figure 4), per task, mode and k.")
    _common(check)
    add_bootstrap(check, ci=None, replicates=200, seed_help=None,
                  ci_help="confidence level of bootstrap bands on r and NDCG (adds r_lo/r_hi, ndcg_lo/ndcg_hi; "
                          "candidates resampled within groups)")
    add_output(check, ("json",))
    check.set_defaults(handler=run_validity)
    shape = sub.add_parser("shape", help="skewness and kurtosis of each group's scores (paper Figure 13)",
                           description="One row per (model, task, subtask, mode, group): n, skewness, kurtosis.")
    shape.add_argument("--scores", required=True, help="score table (.csv or .parquet) from `python -m audit scores`")
    add_output(shape, ("json", "csv"))
    shape.set_defaults(handler=run_shape)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="result store: its scores, pairs and each task's stored design")
    parser.add_argument("--task", help="with --db: the task to audit (default: the store's only task)")
    parser.add_argument("--scores", help="instead of --db: a score table (.csv or .parquet) from `python -m audit "
                                         "scores` (needs --reference)")
    parser.add_argument("--reference", help="reference group (with --db: overrides the stored design's, in the "
                                            "chosen grouping)")
    parser.add_argument("--mode", help="with --db: the scoring mode (default: every mode of the task)")
    parser.add_argument("--grouping", help="with --db: a grouping the task declares, e.g. race (default: whole codes)")
    add_filters(parser, scope="with --db: ")
    parser.add_argument("--k", required=True, help="quota(s): 2, 1-8 or 1,3,5")
    parser.add_argument("--pool", help="per-group, random:N or observed (with --db: overrides the stored design; "
                                       "with --scores: default per-group)")
    parser.add_argument("--pairs", help="with --scores: pair outcomes (.csv or .parquet) from `python -m audit pairs`, "
                                        "for pairwise δ")
    parser.add_argument("--preset", choices=tuple(PRESETS), default="default",
                        help="estimators: default, or paper-exact (the RABBI paper's code: JSD on 10 bins over A's "
                             "range in nats, asymptotic p-values)")
    parser.add_argument("--max-inconsistent", type=float, metavar="RATE",
                        help="leave out pairwise models whose share of inconsistent pairs exceeds RATE (the paper "
                             "uses 0.55 and 0.50); default: keep all")


Part = tuple[pd.DataFrame, str, str]  # score rows, reference, pool design


def _inputs(args: argparse.Namespace) -> tuple[list[Part], pd.DataFrame | None, list[int]]:
    """For ``--scores``: the score rows with their reference and pool design, the pair table and the quotas."""
    quotas = parse_quotas(args.k)
    if args.scores is None:
        raise AuditError("give either --db (a result store) or --scores (a score table)")
    if args.reference is None or args.task is not None:
        raise AuditError("--scores needs --reference and takes no --task (use --db for stored designs)")
    db_only = [flag for flag, value in (("--mode", args.mode), ("--grouping", args.grouping),
                                        ("--models", args.models), ("--subtasks", args.subtasks)) if value]
    if db_only:
        raise AuditError(f"{db_only[0]} goes with --db (a score table is read whole)")
    if args.max_inconsistent is not None and not args.pairs:
        raise AuditError("--max-inconsistent needs --pairs with --scores (the inconsistent-pair rates come from "
                         "the pair table)")
    scores = read_table_file(args.scores, "score table")
    pairs = read_table_file(args.pairs, "pair table") if args.pairs else None
    return [(_reliable(scores, pairs, args.max_inconsistent), args.reference, args.pool or "per-group")], pairs, quotas


def audits(args: argparse.Namespace, *, keep_draws: bool = False, **options) -> list[AuditResult]:
    """For ``--db``: the audit of every chosen mode of the task (:func:`audit.audit_result.compute`), keys left out
    noted on stderr. ``options``: selection fields of the command (ci, n_boot, n_perm, ...)."""
    if (args.db is None) == (args.scores is None):
        raise AuditError("give either --db (a result store) or --scores (a score table)")
    if args.pairs is not None:
        raise AuditError("--pairs only goes with --scores; --db reads the store's pairs")
    with Store(args.db, create=False) as store:
        tables = StoreTables.read(store)
    task = tables.task(args.task)
    if task not in tables.tasks():
        raise AuditError(f"task {task!r} has no results in {args.db}; tasks: {tables.tasks()}")
    stored = set(tables.scores.loc[tables.scores["task"] == task, "mode"])
    modes = [args.mode] if args.mode else [m for m in MODES if m in stored]
    results = []
    for mode in modes:
        selection = Selection(task, mode, models=tuple(args.models), subtasks=tuple(args.subtasks),
                              grouping=args.grouping, reference=args.reference, pool=args.pool, preset=args.preset,
                              max_inconsistent=args.max_inconsistent, ks=tuple(parse_quotas(args.k)), **options)
        rows = base_rows(tables, selection, keep_draws=keep_draws)
        pool = int(rows.table.groupby(["model", "subtask"], observed=True)["k"].max().min())
        if max(selection.ks) >= pool:
            raise AuditError(f"quota k={max(selection.ks)} is not below the pool size {pool} ({mode}): at k = pool "
                             "size everyone is selected and every gap is 0 by construction; choose a smaller k")
        result = compute(tables, selection, rows=rows, with_impact=False)
        for line in result.skipped:
            print(f"note: left out {line}", file=sys.stderr)
        results.append(result)
    return results


def _reliable(scores: pd.DataFrame, pairs: pd.DataFrame | None, max_inconsistent: float | None) -> pd.DataFrame:
    """``scores`` without the pairwise models whose share of inconsistent pairs exceeds ``max_inconsistent``."""
    if max_inconsistent is None or pairs is None:
        return scores
    scores, dropped = drop_unreliable(scores, pairs, max_inconsistent=max_inconsistent)
    for row in dropped.itertuples(index=False):
        print(f"note: left out {row.model} ({row.task}, {row.mode}): {row.inconsistent:.1%} of {row.pairs} pairs "
              f"inconsistent > {max_inconsistent:.1%}", file=sys.stderr)
    if scores.empty:
        raise AuditError(f"every model has more than {max_inconsistent:.1%} inconsistent pairs")
    return scores


def _note_missing_pairs(parts: list[Part], pairs: pd.DataFrame | None) -> None:
    if pairs is None and any(scores["mode"].astype(str).map(is_pairwise).any() for scores, _, _ in parts):
        print("note: no --pairs file; delta and delta_qualified are null for pairwise rows", file=sys.stderr)


def run_metrics(args: argparse.Namespace) -> int:
    """Handler of ``metrics``."""
    if args.db is not None:
        table = pd.concat([result.table for result in audits(
            args, ci=args.ci, n_boot=args.bootstrap, seed=args.seed, n_perm=args.permutations, adjust=args.adjust)],
            ignore_index=True)
        emit_table(table, args.format, args.out)
        return 0
    parts, pairs, quotas = _inputs(args)
    suites = [MetricSuite(scores, reference=reference, pool=pool, pairs=pairs, ci=args.ci, n_boot=args.bootstrap,
                            seed=args.seed, preset=args.preset, n_perm=args.permutations)
               for scores, reference, pool in parts]
    smallest = min(size for suite in suites for size in suite.pool_sizes.values())
    if max(quotas) >= smallest:
        raise AuditError(f"quota k={max(quotas)} is not below the pool size {smallest}: at k = pool size everyone "
                         "is selected and every gap is 0 by construction; choose a smaller k")
    table = pd.concat([suite.table(quotas) for suite in suites], ignore_index=True)
    if args.permutations is not None:
        table = adjusted(table, args.adjust)
    _note_missing_pairs(parts, pairs)
    emit_table(table, args.format, args.out)
    return 0


def run_validity(args: argparse.Namespace) -> int:
    """Handler of ``validity``: one block of results per task in the score table."""
    blocks: dict[str, list[pd.DataFrame]] = {"correlations": [], "ndcg": [], "rankings": []}
    if args.ci is not None and not 0 < args.ci < 1:
        raise AuditError(f"confidence level {args.ci} must lie strictly between 0 and 1")
    if args.db is not None:
        results = audits(args, keep_draws=args.ci is not None, ci=args.ci, n_boot=args.bootstrap, n_perm=None)
        for result in results:
            table = result.table
            correlations, ndcg = validity(table), ndcg_table(table)
            if args.ci is not None:
                correlations = validity_bands(table, *result.draws, level=args.ci)
                ndcg = ndcg_bands(table, *result.draws, level=args.ci)
            extra = {"reference": result.reference, "pool": result.pool}
            for name, frame in (("correlations", correlations), ("ndcg", ndcg), ("rankings", model_rankings(table))):
                blocks[name].append(frame.assign(task=result.selection.task, **extra)[["task", *extra, *frame.columns]])
        return _emit_validity(args, blocks)
    parts, pairs, quotas = _inputs(args)
    for scores, reference, pool in parts:
        tasks = scores["task"].astype(str) if "task" in scores else pd.Series("", index=scores.index)
        for task in sorted(tasks.unique()):
            rows = scores[tasks == task]
            table = MetricSuite(rows, reference=reference, pool=pool, pairs=pairs, preset=args.preset).table(quotas)
            correlations, ndcg = validity(table), ndcg_table(table)
            if args.ci is not None:
                index, draws = draws_table(rows, reference=reference, pool=pool, n_boot=args.bootstrap,
                                           preset=args.preset)
                correlations = validity_bands(table, index, draws, level=args.ci)
                ndcg = ndcg_bands(table, index, draws, level=args.ci)
            for name, frame in (("correlations", correlations), ("ndcg", ndcg), ("rankings", model_rankings(table))):
                blocks[name].append(frame.assign(task=task)[["task", *frame.columns]])
    _note_missing_pairs(parts, pairs)
    return _emit_validity(args, blocks)


def _emit_validity(args: argparse.Namespace, blocks: dict[str, list[pd.DataFrame]]) -> int:
    stored = "stored" if args.db else "per-group"
    result = {"reference": args.reference or "stored", "pool": args.pool or stored, "k": parse_quotas(args.k),
              "preset": args.preset,
              **{name: records(pd.concat(frames, ignore_index=True)) for name, frames in blocks.items()}}
    emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0


def run_shape(args: argparse.Namespace) -> int:
    """Handler of ``shape``."""
    table = score_shape(read_table_file(args.scores, "score table"))
    emit_table(table, args.format, args.out)
    return 0
