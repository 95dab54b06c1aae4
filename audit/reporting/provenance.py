"""What was audited, read from the result store: each system's identity (label, fingerprint, content hash, source,
precision) and when it was scored, the candidate data and its hash, and the prompts exactly as scored."""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from audit.store.database import Store

#: the result table whose ``created`` column dates a mode's scoring
#: what each of a system's two hashes covers, said wherever both are printed (Appendix C, the LL144 sources)
RECORDED_HASHES = ("The content SHA-256 covers the whole imported source (every system recorded in it), so systems "
                   "imported from one source share it; the fingerprint hashes it with the system's own name, so each "
                   "system has its own.")
SCORED_HASHES = ("The content SHA-256 covers a model's weights; the fingerprint hashes it with the precision and "
                 "backend, so one model at two precisions has two fingerprints.")


def _date(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def portable_path(path: str) -> str:
    """A path as a report may print it, naming nothing of the machine that built the store: relative paths as they
    are, a file under the working directory relative to it, an installed package's file from ``site-packages/``, any
    other absolute path by its file name."""
    if not path or not Path(path).is_absolute():
        return path
    try:
        return Path(path).relative_to(Path.cwd()).as_posix()
    except ValueError:
        pass
    marker = "site-packages/"
    return path[path.index(marker):] if marker in path else Path(path).name


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
