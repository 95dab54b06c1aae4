"""Store imported recorded rankings as a scored system, so every command and page audits them like a model.

Each recorded candidate becomes one pointwise result whose score is rank-derived: ``(n − rank) / (n − 1)`` within
its pool of n (1 for the first, 0 for the last), stored as a one-label result (label ``rank``, relevance 1,
probability = the score). Candidates are keyed ``<run file number>.<position shown>``, so every pool keeps its own
candidates. The model's fingerprint is the source: a SHA-256 over every file's path and hash, with the file count,
row count, partial replies and date range in its details. Everything is written in one transaction.
"""
from __future__ import annotations

import hashlib
import json
import time

import pandas as pd

from audit.design import AuditDesign, PoolDesign, split_groupings
from audit.recorded.ranking_runs import RankingRuns
from audit.store import SAVE_DESIGN, Store

FINGERPRINT_PREFIX = "rec-"
LABEL = "rank"
LABELS = json.dumps([LABEL])
QUALIFICATION = "every candidate of a pool equally qualified (the study's design)"


def recorded_pools(pointwise: pd.DataFrame) -> pd.Series:
    """The pool of each pointwise row: its run file number for recorded candidates (fingerprint ``rec-…``,
    candidate ``<file number>.<position>``), missing for scored models."""
    recorded = pointwise["fingerprint"].astype(str).str.startswith(FINGERPRINT_PREFIX)
    pools = pointwise["candidate_id"].astype(str).str.partition(".")[0]
    return pd.to_numeric(pools.where(recorded), errors="coerce").astype("Int64")


def rank_score(rank: int, size: int) -> float:
    """(n − rank) / (n − 1): 1 for the top of a pool of n, 0 for its bottom."""
    return (size - rank) / (size - 1)


def import_runs(store: Store, runs: RankingRuns, task: str, reference: str = "W_M",
                source: str = "") -> dict[str, str]:
    """Write ``runs`` into ``store`` under ``task`` (one transaction); returns model name → fingerprint."""
    rows = runs.rows
    fingerprints: dict[str, str] = {}
    now = time.time()
    with store.transaction() as db:
        for model, part in rows.groupby("model", sort=True):
            files = part["run"].unique()
            partial = [p for p in runs.partial if p.startswith(f"{model}/")]
            fingerprint = FINGERPRINT_PREFIX + hashlib.sha256(f"{runs.digest}\0{model}".encode()).hexdigest()[:16]
            fingerprints[model] = fingerprint
            details = {"kind": "recorded rankings", "source": source, "source_sha256": runs.digest,
                       "runs": int(len(files)), "rows": int(len(part)), "partial_replies": len(partial),
                       "first_date": runs.first_date, "last_date": runs.last_date,
                       "score": "(n - rank) / (n - 1) within its pool"}
            db.execute("INSERT OR REPLACE INTO models VALUES (?, ?, ?, ?)",
                       (fingerprint, model, json.dumps(details, sort_keys=True), now))
            prompts = list(part["candidate_id"])
            scores = [rank_score(r, n) for r, n in zip(part["rank"], part["pool_size"])]
            db.executemany("INSERT OR IGNORE INTO candidates VALUES (?, ?, ?, ?, 1, ?, '')",
                           zip([task] * len(part), part["job"], part["candidate_id"], part["group"], part["name"]))
            db.executemany("INSERT OR REPLACE INTO pointwise_plan VALUES (?, ?, ?, ?, ?, ?, '[1.0]')",
                           zip([fingerprint] * len(part), [task] * len(part), part["job"], part["candidate_id"],
                               prompts, [LABELS] * len(part)))
            db.executemany("INSERT OR REPLACE INTO label_results VALUES (?, ?, ?, ?, 1.0, ?)",
                           [(fingerprint, key, LABELS, f"[{s:.6g}]", now) for key, s in zip(prompts, scores)])
        for job, part in rows.groupby("job", sort=True):
            groups = sorted(part["group"].unique())
            design = AuditDesign(task, job, reference if reference in groups else groups[0], PoolDesign("observed"),
                                 (LABEL,), (1.0,), QUALIFICATION, split_groupings(("race", "gender")), "")
            db.execute(SAVE_DESIGN, design.row())
    return fingerprints
