"""``python -m audit metrics``, ``validity`` and ``shape``: read score (and pair) tables, print metric tables."""
from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from audit.engine.audit import Audit
from audit.commands.io import emit, emit_table, read_table_file, records, tables_from
from audit.commands.options import add_adjust, add_bootstrap, add_output, add_selection, selection_from
from audit.enums import SCORED
from audit.errors import AuditError
from audit.engine.choices import is_pairwise
from audit.tasks.recorded import shown_modes
from audit.engine.shape import KEYS
from audit.engine.selection import Selection
from audit.engine.tables import StoreTables


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
    parser.add_argument("--scores", help="instead of --db: a score table (.csv or .parquet) from `python -m audit "
                                         "scores` (needs --reference)")
    add_selection(parser, mode=None)
    parser.add_argument("--pairs", help="with --scores: pair outcomes (.csv or .parquet) from `python -m audit pairs`, "
                                        "for pairwise δ")


def _tables(args: argparse.Namespace) -> StoreTables:
    """The store's tables (``--db``), or the score file's (``--scores``, with ``--pairs``): every (task, subtask) read
    under its declared design (:func:`audit.commands.io.tables_from`), once the flags a file takes are checked."""
    if args.scores is not None and args.db is None:
        if args.reference is None or args.task is not None:
            raise AuditError("--scores needs --reference and takes no --task (use --db for stored designs)")
        db_only = [flag for flag, value in (("--mode", args.mode), ("--grouping", args.grouping),
                                            ("--models", args.models), ("--subtasks", args.subtasks)) if value]
        if db_only:
            raise AuditError(f"{db_only[0]} goes with --db (a score table is read whole)")
        if args.max_inconsistent is not None and not args.pairs:
            raise AuditError("--max-inconsistent needs --pairs with --scores (the inconsistent-pair rates come from "
                             "the pair table)")
    return tables_from(args, pools=None)


def audits(args: argparse.Namespace, *, keep_draws: bool = False, **options) -> list[Audit]:
    """The audit of every chosen mode of the store's task (``--db``), or of every task and mode of the score file
    (``--scores``: the given reference, per-group pools unless ``--pool``), quotas checked and keys left out noted
    on stderr. ``options``: selection fields of the command (n_perm, ...)."""
    tables = _tables(args)
    if args.scores is not None:
        options.setdefault("pool", args.pool or "per-group")
    tasks = [tables.task(args.task)] if args.db is not None else sorted(tables.scores["task"].astype(str).unique())
    results = []
    for task in tasks:
        stored = set(tables.scores.loc[tables.scores["task"] == task, "mode"])
        for mode in [args.mode] if args.mode else [m for m in SCORED if m in stored]:
            selection = selection_from(args, tables, task=task, mode=mode, **options)
            audit = Audit(tables, selection, draws=keep_draws)
            audit.table  # the quota check and the metric pass, before anything is printed
            for line in audit.skipped:
                print(f"note: left out {line}", file=sys.stderr)
            results.append(audit)
    if args.scores is not None and not args.pairs and any(is_pairwise(a.selection.mode) for a in results):
        print("note: no --pairs file; delta and delta_qualified are null for pairwise rows", file=sys.stderr)
    return results


def run_metrics(args: argparse.Namespace) -> int:
    """Handler of ``metrics``."""
    results = audits(args)
    table = pd.concat([result.table for result in results], ignore_index=True)
    if args.scores is not None:  # a file's rows in key order, as one table
        table = table.sort_values(["model", "task", "subtask", "mode"], kind="stable", ignore_index=True)
    emit_table(shown_modes(table, results[0].tables.designs) if results else table, args.format, args.out)
    return 0


def run_validity(args: argparse.Namespace) -> int:
    """Handler of ``validity``: one block of results per audited task and mode."""
    blocks: dict[str, list[pd.DataFrame]] = {"correlations": [], "ndcg": [], "rankings": []}
    if args.ci is not None and not 0 < args.ci < 1:
        raise AuditError(f"confidence level {args.ci} must lie strictly between 0 and 1")
    results = audits(args, keep_draws=args.ci is not None, n_perm=None)
    for result in results:
        extra = {"reference": result.reference, "pool": result.pool}
        for k in result.selection.ks:
            rankings, ndcg = result.rankings(k)
            for name, frame in (("correlations", result.correlations(k)), ("ndcg", ndcg), ("rankings", rankings)):
                blocks[name].append(frame.assign(task=result.selection.task, **extra)[["task", *extra, *frame.columns]])
    return _emit_validity(args, blocks, results[0].selection)


def _emit_validity(args: argparse.Namespace, blocks: dict[str, list[pd.DataFrame]], selection: Selection) -> int:
    """The validity blocks as JSON, headed by what the selection chose (its reference and pool as given)."""
    result = {"reference": selection.reference or "stored", "pool": selection.pool or "stored", "k": list(selection.ks),
              "preset": selection.preset,
              **{name: records(pd.concat(frames, ignore_index=True)) for name, frames in blocks.items()}}
    emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0


def run_shape(args: argparse.Namespace) -> int:
    """Handler of ``shape``: :attr:`audit.engine.audit.Audit.shape` of every task and mode of the score file, group
    codes kept whole, in key order."""
    scores = read_table_file(args.scores, "score table")
    if "mode" not in scores:
        raise AuditError("score table is missing column(s): mode")
    if scores.empty:
        raise AuditError("score table has no rows")
    tables = StoreTables.from_scores(scores)
    keys = tables.scores[["task", "mode"]].dropna().drop_duplicates().astype(str).itertuples(index=False)
    table = pd.concat([Audit(tables, selection_from(args, tables, task=task, mode=mode)).shape.moments
                       for task, mode in sorted(keys)],
                      ignore_index=True)
    emit_table(table.sort_values(list(KEYS), kind="stable", ignore_index=True), args.format, args.out)
    return 0
