"""Store imported recorded decisions (ranking runs, decision logs) as a system, so every command and page audits
them like a model.

Each recorded candidate becomes one decision of the store's recorded tables (outcome ``rank``; read back with the
rank-derived score ``(n − rank) / (n − 1)`` within its pool of n, see :mod:`audit.store.recorded`): pool = its run
file number, position = its place in the order shown, so candidates read back as ``<run file number>.<position>``.
The model's fingerprint is the source: a SHA-256 over every file's path and hash, with the file count, row count,
partial replies and date range in its details. Everything is written in one transaction.

A decision log grows by appending (:func:`append_log`): its fingerprint (the first chunk's source and spec) stays,
and its details keep the chain ``chain_sha256`` = SHA-256(previous chain + chunk's source SHA-256), with the chunk
count, total rows, date range and each appended chunk's source.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import TYPE_CHECKING

from audit.errors import AuditError
from audit.design import AuditDesign, PoolDesign, split_groupings
from audit.recorded.decision_logs import DecisionLog
from audit.tasks.recorded import (LOG_QUALIFICATION, LOG_QUOTAS, RANKING_RUN_GROUPINGS, RANKING_RUN_NAMES,
                                   RANKING_RUN_QUALIFICATION, RANKING_RUN_QUOTA, RANKING_RUN_QUOTA_REASON,
                                   RANKING_RUN_REFERENCE)
from audit.store.database import Store, insert_decisions, save_design, save_recorded
from audit.store.logs import (add_system, next_pool, next_position, save_model, stored_applicants, stored_log,
                              update_details)

if TYPE_CHECKING:
    from audit.recorded.ranking_runs import RankingRuns

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
            save_model(db, fingerprint, str(model), details)
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
            save_design(db, design)
    return fingerprints


def chain_digest(previous: str, digest: str) -> str:
    """The log's identity after one more chunk: SHA-256 of the previous chain (empty for the first chunk) and the
    chunk's source SHA-256, as hex text."""
    return hashlib.sha256(f"{previous}{digest}".encode()).hexdigest()


def log_fingerprint(log: DecisionLog) -> str:
    """``rec-`` + SHA-256 of the log file and the spec that reads it."""
    return FINGERPRINT_PREFIX + hashlib.sha256(f"{log.digest}\0{log.spec.canonical()}".encode()).hexdigest()[:16]


def import_log(store: Store, log: DecisionLog, task: str, label: str) -> tuple[str, dict[tuple[str, str], bytes]]:
    """Write a checked decision log into ``store`` under ``task`` as the system ``label`` (one transaction, with
    its source as the fingerprint and one audit design per subtask); returns the fingerprint and the hashed text of
    each system written (:func:`audit.store.database.save_recorded`: the run record's ``known``)."""
    fingerprint = log_fingerprint(log)
    details = {"kind": "decision log", "source": log.path.name, "source_sha256": log.digest, "rows": log.rows,
               "first_date": log.first_date, "last_date": log.last_date, "outcome": log.outcome,
               "demographics": list(log.spec.demographics), "unknown": log.unknown, "comparison": log.comparison,
               "pools": "recorded" if log.spec.pool else "one pool per subtask",
               "spec": json.loads(log.spec.canonical()), "chain_sha256": chain_digest("", log.digest), "chunks": 1}
    with store.transaction() as db:
        store.check_importable(task)
        store.check_label(fingerprint, label)
        save_model(db, fingerprint, label, details)
        texts = save_recorded(db, fingerprint, task, log.outcome, log.decisions, log.parts)
        for subtask in log.references:
            _save_design(db, log, task, subtask)
    return fingerprint, texts


def _save_design(db: sqlite3.Connection, log: DecisionLog, task: str, subtask: str) -> None:
    quota, why = LOG_QUOTAS[log.outcome]
    design = AuditDesign(task, subtask, log.references[subtask], PoolDesign("observed"), (log.outcome,), (1.0,),
                         LOG_QUALIFICATION, split_groupings(log.spec.demographics), "", quota=quota, quota_reason=why)
    save_design(db, design)


def append_log(store: Store, log: DecisionLog, task: str, label: str) -> dict:
    """Add the decisions of ``log`` (a new chunk) to the log system ``label`` of ``task``, in one transaction, without
    reading the stored decisions: the same spec, applicant ids never stored before (looked up by index), pools
    numbered after the stored ones (a log without a pool column continues its subtask's one pool), a new subtask
    with its own design. The system keeps its fingerprint; its details gain the chunk (rows, dates, chain). Returns
    the new details."""
    with store.transaction() as db:
        fingerprint, details, systems = stored_log(db, label, task)
        if not systems or details.get("kind") != "decision log":
            raise AuditError(f"--append: task {task!r} of {store.path} holds no decision log named {label!r}; "
                             "import its first part without --append")
        if details.get("spec") != json.loads(log.spec.canonical()):
            raise AuditError(f"--append: {log.path} is read with another spec than the stored log {label!r} "
                             f"(stored: {json.dumps(details.get('spec'), sort_keys=True)}); append with the same spec")
        if not log.spec.pool and log.outcome == "rank":
            raise AuditError(f"--append: {label!r} ranks each subtask as one pool (its spec names no pool column); "
                             "a ranked log is appended pool by pool: give the spec a pool column")
        _check_new_ids(db, list(systems.values()), log, label)
        for subtask, part in log.decisions.groupby("subtask", sort=True):
            system = systems.get(str(subtask))
            if system is None:
                system = add_system(db, fingerprint, task, str(subtask), log.outcome)
                _save_design(db, log, task, str(subtask))
            part = part.sort_values(["pool", "position"])
            if log.spec.pool:  # new pools after the stored ones
                part = part.assign(pool=part["pool"] + next_pool(db, system))
            else:  # the subtask's one pool goes on
                part = part.assign(position=part["position"] + next_position(db, system))
            insert_decisions(db, system, part)
        dates = [d for d in (details.get("first_date"), details.get("last_date"), log.first_date, log.last_date) if d]
        chain = chain_digest(details.get("chain_sha256") or chain_digest("", details["source_sha256"]), log.digest)
        details.update(rows=details["rows"] + log.rows, chain_sha256=chain, chunks=details.get("chunks", 1) + 1,
                       first_date=min(dates, default=""), last_date=max(dates, default=""),
                       unknown={c: details["unknown"].get(c, 0) + n for c, n in log.unknown.items()},
                       appended=[*details.get("appended", []),
                                 {"source": log.path.name, "sha256": log.digest, "rows": log.rows,
                                  "first_date": log.first_date, "last_date": log.last_date}])
        update_details(db, fingerprint, details)
    return details


def _check_new_ids(db: sqlite3.Connection, systems: list[int], log: DecisionLog, label: str) -> None:
    """Refuse a chunk holding an applicant id already stored for the system (named with its row of the chunk)."""
    ids = log.decisions["applicant"].tolist()
    stored = stored_applicants(db, systems, ids)
    if stored:
        row = next(i for i, applicant in enumerate(ids) if applicant in stored)
        raise AuditError(f"{log.path}, row {row + 1}, column {log.spec.applicant!r}: applicant {ids[row]!r} is "
                         f"already stored in the log {label!r} (ids are never reused); nothing was appended")
