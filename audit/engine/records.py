"""What the store file says of an audit's systems beyond their scores (:meth:`audit.engine.audit.Audit.records`):
each system's identity (label, fingerprint, content hash, source, precision) and when it was scored, the prompts
exactly as scored, the hash of the candidate data, the task's audit trail and the weekly monitoring of its dated
decisions. Read on a thread of its own, on its own connection (SQLite releases the GIL while it steps), so a caller
computes the audit's numbers meanwhile."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from audit.engine.monitor import MonitorSettings, Monitoring, watched
from audit.paths import portable_path
from audit.store.database import Store, data_hash
from audit.store.runs import trail

#: the one thread the records are read on (a report reads one audit's records at a time)
_READER = ThreadPoolExecutor(1, thread_name_prefix="audit-records")


@dataclass(frozen=True)
class Records:
    """``systems`` (:func:`systems`), ``prompts`` (:func:`prompts`), ``data`` (SHA-256 of the data behind the results,
    number of rows, what they are: :func:`audit.store.database.data_hash`), ``trail`` (the task's audit trail as it
    stood: :func:`audit.store.runs.trail`) and ``monitoring`` (None without dated decisions)."""

    systems: pd.DataFrame
    prompts: pd.DataFrame
    data: tuple[str, int, str]
    trail: pd.DataFrame
    monitoring: Monitoring | None


def read_records(path: Path, task: str, mode: str, audited: pd.DataFrame, subtasks: Collection[str],
                 watch: MonitorSettings) -> Future[Records]:
    """The :class:`Records` of ``task``'s ``audited`` rows (model, fingerprint, subtask) in ``mode``, the data hash
    over ``subtasks``, the monitoring under ``watch``, read from the store file at ``path`` on the reader thread."""
    def read() -> Records:
        with Store(path, create=False) as store:
            return Records(systems(store, audited, task, mode), prompts(store, task, audited, mode),
                           data_hash(store, task, sorted(subtasks)), trail(store, task), watched(store, task, watch))
    return _READER.submit(read)


def _date(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def systems(store: Store, scores: pd.DataFrame, task: str, mode: str) -> pd.DataFrame:
    """One row per audited system: label, fingerprint, content hash, source, kind, precision, device, backend and
    the first / last time one of its answers for this task and mode was stored (the ``created`` columns)."""
    rows, audited = [], set(scores["fingerprint"].unique())
    for label, fingerprint, details, created in store.models()[["label", "fingerprint", "details", "created"]
                                                                 ].itertuples(index=False, name=None):
        if fingerprint not in audited:
            continue
        info = json.loads(details)
        first, last = store.answer_times(mode, fingerprint, task)
        recorded = "source_sha256" in info  # imported decisions: dated by the decisions, hashed by their source
        precision = "n/a (recorded)" if recorded else "/".join(
            str(v) for v in (info.get("quant", ""), info.get("dtype", "")) if v)
        appended = len(info.get("appended", ()))  # an appended log: hashed by its chain of chunks
        source = portable_path(str(info.get("source" if recorded else "location", "")))
        rows.append({"model": label, "fingerprint": fingerprint,
                     "content hash": info["chain_sha256"] if appended else info.get(
                         "source_sha256" if recorded else "content_id", ""),
                     "source": f"{source} + {appended} appended (chain of {appended + 1})" if appended else source,
                     "kind": info.get("kind", ""), "registered": _date(created),
                     "precision": precision, "device": info.get("device", ""),
                     "backend": "imported" if recorded else info.get("runtime", info.get("engine", "transformers")),
                     "recorded": recorded,
                     "first scored": info.get("first_date", "") if recorded else _date(first),
                     "last scored": info.get("last_date", "") if recorded else _date(last)})
    return pd.DataFrame(rows).sort_values("model", ignore_index=True)


def prompts(store: Store, task: str, scores: pd.DataFrame, mode: str) -> pd.DataFrame:
    """Per subtask, the first stored prompt as scored: system message, one candidate's user message, answer
    prefix, and the SHA-256 of the system message (the part every candidate of the subtask shares)."""
    fingerprints = sorted(set(scores["fingerprint"]))
    rows = []
    for subtask in sorted(scores["subtask"].unique()):
        body = store.first_prompt(mode, task, subtask, fingerprints)
        system = body.get("system", "")
        rows.append({"subtask": subtask, "template": system, "user": body.get("user", ""),
                     "answer_prefix": body.get("answer_prefix", ""),
                     "sha256": hashlib.sha256(system.encode("utf-8")).hexdigest()[:16]})
    return pd.DataFrame(rows, columns=["subtask", "template", "user", "answer_prefix", "sha256"])
