"""Store imported recorded decisions (ranking runs, decision logs) as a system, so every command and page audits
them like a model.

Each recorded candidate becomes one decision of the store's recorded tables (outcome ``rank``; read back with the
rank-derived score ``(n − rank) / (n − 1)`` within its pool of n, see :mod:`audit.store_recorded`): pool = its run
file number, position = its place in the order shown, so candidates read back as ``<run file number>.<position>``.
The model's fingerprint is the source: a SHA-256 over every file's path and hash, with the file count, row count,
partial replies and date range in its details. Everything is written in one transaction.
"""
from __future__ import annotations

import hashlib
import json
import time

from audit.errors import AuditError
from audit.design import AuditDesign, PoolDesign, split_groupings
from audit.recorded.decision_logs import DecisionLog
from audit.recorded.ranking_runs import RankingRuns
from audit.tasks.recorded import (LOG_QUALIFICATION, LOG_QUOTAS, RANKING_RUN_GROUPINGS, RANKING_RUN_NAMES,
                                   RANKING_RUN_QUALIFICATION, RANKING_RUN_QUOTA, RANKING_RUN_QUOTA_REASON,
                                   RANKING_RUN_REFERENCE)
from audit.store import SAVE_DESIGN, Store, save_recorded

FINGERPRINT_PREFIX = "rec-"
LABEL = "rank"
LABELS = json.dumps([LABEL])


def import_runs(store: Store, runs: RankingRuns, task: str, reference: str | None = None,
                source: str = "") -> dict[str, str]:
    """Write ``runs`` into ``store`` under ``task`` (one transaction); returns model name → fingerprint. A given
    ``reference`` must be a group code of every job; without one, each job compares against
    :data:`RANKING_RUN_REFERENCE` where it has that code, else its first code."""
    rows = runs.rows
    fingerprints: dict[str, str] = {}
    now = time.time()
    with store.transaction() as db:
        store.check_importable(task)
        for model, part in rows.groupby("model", sort=True):
            files = part["run"].unique()
            partial = [p for p in runs.partial if p.startswith(f"{model}/")]
            fingerprint = FINGERPRINT_PREFIX + hashlib.sha256(f"{runs.digest}\0{model}".encode()).hexdigest()[:16]
            fingerprints[model] = fingerprint
            store.check_label(fingerprint, str(model), f"name this system's folder <model>/ apart (it is read as "
                              f"the model {model!r}), or import the whole source again as it was")
            details = {"kind": "recorded rankings", "source": source, "source_sha256": runs.digest,
                       "runs": int(len(files)), "rows": int(len(part)), "partial_replies": len(partial),
                       "first_date": runs.first_date, "last_date": runs.last_date,
                       "outcome": "rank", "score": "(n - rank) / (n - 1) within its pool"}
            db.execute("INSERT OR REPLACE INTO models VALUES (?, ?, ?, ?)",
                       (fingerprint, model, json.dumps(details, sort_keys=True), now))
            decisions = part.rename(columns={"job": "subtask", "rank": "value"}).assign(applicant=None)
            save_recorded(db, fingerprint, task, "rank", decisions)
        for job, part in rows.groupby("job", sort=True):
            groups = sorted(part["group"].unique())
            if reference is not None and reference not in groups:
                raise AuditError(f"--reference {reference!r} is not a group code of job {job!r}; its codes: "
                                 f"{', '.join(groups)}")
            chosen = reference or (RANKING_RUN_REFERENCE if RANKING_RUN_REFERENCE in groups else groups[0])
            design = AuditDesign(task, job, chosen, PoolDesign("observed"), (LABEL,), (1.0,), RANKING_RUN_QUALIFICATION,
                                 split_groupings(RANKING_RUN_GROUPINGS), "", names=dict(RANKING_RUN_NAMES),
                                 counterfactual=True, quota=RANKING_RUN_QUOTA, quota_reason=RANKING_RUN_QUOTA_REASON)
            db.execute(SAVE_DESIGN, design.row())
    return fingerprints


def log_fingerprint(log: DecisionLog) -> str:
    """``rec-`` + SHA-256 of the log file and the spec that reads it."""
    return FINGERPRINT_PREFIX + hashlib.sha256(f"{log.digest}\0{log.spec.canonical()}".encode()).hexdigest()[:16]


def import_log(store: Store, log: DecisionLog, task: str, label: str) -> str:
    """Write a checked decision log into ``store`` under ``task`` as the system ``label`` (one transaction, with
    its source as the fingerprint and one audit design per subtask); returns the fingerprint."""
    fingerprint = log_fingerprint(log)
    details = {"kind": "decision log", "source": log.path.name, "source_sha256": log.digest, "rows": log.rows,
               "first_date": log.first_date, "last_date": log.last_date, "outcome": log.outcome,
               "demographics": list(log.spec.demographics), "unknown": log.unknown, "comparison": log.comparison,
               "pools": "recorded" if log.spec.pool else "one pool per subtask",
               "spec": json.loads(log.spec.canonical())}
    groupings = split_groupings(log.spec.demographics)
    with store.transaction() as db:
        store.check_importable(task)
        store.check_label(fingerprint, label)
        db.execute("INSERT OR REPLACE INTO models VALUES (?, ?, ?, ?)",
                   (fingerprint, label, json.dumps(details, sort_keys=True), time.time()))
        save_recorded(db, fingerprint, task, log.outcome, log.decisions)
        for subtask, reference in log.references.items():
            quota, why = LOG_QUOTAS[log.outcome]
            design = AuditDesign(task, subtask, reference, PoolDesign("observed"), (log.outcome,), (1.0,),
                                 LOG_QUALIFICATION, groupings, "", quota=quota, quota_reason=why)
            db.execute(SAVE_DESIGN, design.row())
    return fingerprint
