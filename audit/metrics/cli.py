"""``python -m audit metrics`` and ``python -m audit validity``: read score (and pair) tables, print metric tables."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from audit.design import PoolDesign
from audit.errors import AuditError
from audit.metrics.engine import MetricEngine
from audit.metrics.schema import is_pairwise
from audit.metrics.validity import model_rankings, ndcg_table, validity
from audit.store import Store
from audit.views import StoreTables, metric_parts

_TEXT = ("model", "task", "subtask", "mode", "candidate_id", "group", "candidate_a", "candidate_b", "group_a",
         "group_b", "outcome")


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``metrics`` and ``validity`` sub-commands."""
    metrics = sub.add_parser("metrics", help="bias metrics and allocation gaps per model, subtask, mode, group and k",
                             description="One row per (model, subtask, mode, group, k): delta, jsd, emd, rabbi, "
                                         "rabbi_pvalue, delta_qualified, rabbi_qualified, dp_gap, eo_gap.")
    _common(metrics)
    metrics.add_argument("--ci", type=float, help="confidence level of bootstrap bounds, e.g. 0.95 (adds *_lo/*_hi)")
    metrics.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap replicates (default 1000)")
    metrics.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    metrics.add_argument("--format", choices=("json", "csv"), default="json")
    metrics.set_defaults(handler=run_metrics)
    check = sub.add_parser("validity", help="Pearson r of bias metrics with allocation gaps, model rankings, NDCG@N",
                           description="Correlations overall and per group (paper Table 1, Figure 6) and model-"
                                       "ranking NDCG@N averaged over subtasks (Figure 4), per task, mode and k.")
    _common(check)
    check.add_argument("--format", choices=("json",), default="json")
    check.set_defaults(handler=run_validity)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="result store: its scores, pairs and each task's stored design")
    parser.add_argument("--task", help="with --db: the task to audit (default: the store's only task)")
    parser.add_argument("--scores", help="instead of --db: a score table (.csv or .parquet) from `python -m audit "
                                         "scores` (needs --reference)")
    parser.add_argument("--reference", help="reference group, e.g. W_M (with --db: overrides the stored one)")
    parser.add_argument("--k", required=True, help="quota(s): 2, 1-8 or 1,3,5")
    parser.add_argument("--pool", help="per-group, random:N or observed (with --db: overrides the stored design; "
                                       "with --scores: default per-group)")
    parser.add_argument("--pairs", help="with --scores: pair outcomes (.csv or .parquet) from `python -m audit pairs`, "
                                        "for pairwise δ")
    parser.add_argument("--out", help="write here instead of stdout")


def parse_quotas(text: str) -> list[int]:
    """``2`` → [2], ``1-8`` → [1..8], ``1,3,5`` → [1, 3, 5] (parts may mix)."""
    quotas: set[int] = set()
    for part in str(text).split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise AuditError(f"--k: {text!r} is not a quota; use 2, 1-8 or 1,3,5")
        quotas.update(range(int(low), int(high if dash else low) + 1))
    if not quotas or min(quotas) < 1:
        raise AuditError(f"--k: {text!r} must name quotas of at least 1")
    return sorted(quotas)


def read_table(path: str, what: str) -> pd.DataFrame:
    """A CSV or Parquet file as a DataFrame (id and group columns as text); an AuditError if it cannot be read."""
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".csv":
            return pd.read_csv(path, dtype={column: str for column in _TEXT})
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
    except (ImportError, OSError, ValueError) as exc:
        raise AuditError(f"cannot read {what} {path}: {exc}") from exc
    raise AuditError(f"{what} {path}: unsupported file type {suffix or '(none)'!r}; use .csv or .parquet")


Part = tuple[pd.DataFrame, str, "str | PoolDesign"]  # score rows, reference, pool design


def _inputs(args: argparse.Namespace) -> tuple[list[Part], pd.DataFrame | None, list[int]]:
    """Score rows split by the (reference, pool design) they are read under, the pair table and the quotas."""
    quotas = parse_quotas(args.k)
    if (args.db is None) == (args.scores is None):
        raise AuditError("give either --db (a result store) or --scores (a score table)")
    if args.scores is not None:
        if args.reference is None or args.task is not None:
            raise AuditError("--scores needs --reference and takes no --task (use --db for stored designs)")
        scores = read_table(args.scores, "score table")
        pairs = read_table(args.pairs, "pair table") if args.pairs else None
        return [(scores, args.reference, args.pool or "per-group")], pairs, quotas
    if args.pairs is not None:
        raise AuditError("--pairs only goes with --scores; --db reads the store's pairs")
    with Store(args.db, create=False) as store:
        tables = StoreTables.read(store)
    task = args.task or _only_task(tables)
    if task not in tables.tasks():
        raise AuditError(f"task {task!r} has no results in {args.db}; tasks: {tables.tasks()}")
    scores = tables.scores[tables.scores["task"] == task].drop(columns=["label_mass", "fingerprint"])
    pairs = tables.pairs[tables.pairs["task"] == task]
    parts = metric_parts(scores, tables.designs, reference=args.reference, pool=args.pool)
    return parts, pairs if len(pairs) else None, quotas


def _only_task(tables: StoreTables) -> str:
    if len(tables.tasks()) != 1:
        raise AuditError(f"the store holds tasks {tables.tasks()}; choose one with --task")
    return tables.tasks()[0]


def _note_missing_pairs(parts: list[Part], pairs: pd.DataFrame | None) -> None:
    if pairs is None and any(scores["mode"].astype(str).map(is_pairwise).any() for scores, _, _ in parts):
        print("note: no --pairs file; delta and delta_qualified are null for pairwise rows", file=sys.stderr)


def _plain(value):
    if value is pd.NA:
        return None
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return int(value) if isinstance(value, np.integer) else value


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{key: _plain(value) for key, value in row.items()} for row in frame.to_dict("records")]


def _emit(text: str, out: str | None) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    try:
        Path(out).write_text(text)
    except OSError as exc:
        raise AuditError(f"cannot write {out}: {exc}") from exc


def run_metrics(args: argparse.Namespace) -> int:
    """Handler of ``metrics``."""
    parts, pairs, quotas = _inputs(args)
    table = pd.concat([MetricEngine(scores, reference=reference, pool=pool, pairs=pairs, ci=args.ci,
                                    n_boot=args.bootstrap, seed=args.seed).table(quotas)
                       for scores, reference, pool in parts], ignore_index=True)
    if args.db is not None:
        table.insert(0, "task", parts[0][0]["task"].iloc[0])
    _note_missing_pairs(parts, pairs)
    _emit(table.to_csv(index=False) if args.format == "csv" else json.dumps(_records(table), indent=1) + "\n", args.out)
    return 0


def run_validity(args: argparse.Namespace) -> int:
    """Handler of ``validity``: one block of results per task in the score table."""
    parts, pairs, quotas = _inputs(args)
    blocks: dict[str, list[pd.DataFrame]] = {"correlations": [], "ndcg": [], "rankings": []}
    for scores, reference, pool in parts:
        tasks = scores["task"].astype(str) if "task" in scores else pd.Series("", index=scores.index)
        for task in sorted(tasks.unique()):
            table = MetricEngine(scores[tasks == task], reference=reference, pool=pool, pairs=pairs).table(quotas)
            for name, frame in (("correlations", validity(table)), ("ndcg", ndcg_table(table)),
                                ("rankings", model_rankings(table))):
                extra = {"reference": reference, "pool": str(pool)} if args.db else {}
                blocks[name].append(frame.assign(task=task, **extra)[["task", *extra, *frame.columns]])
    _note_missing_pairs(parts, pairs)
    stored = "per-group" if args.scores else "stored"
    result = {"reference": args.reference or "stored", "pool": args.pool or stored, "k": quotas,
              **{name: _records(pd.concat(frames, ignore_index=True)) for name, frames in blocks.items()}}
    _emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0
